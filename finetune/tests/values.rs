//! The loss on action values (`finetune --targets values`): soft targets over the candidates
//! of a step state, by their regrets. When one candidate holds all the mass the loss is the
//! label's cross-entropy; spread mass changes it; a short run on values trains.

mod common;

use candle_core::Device;
use schedlm_dataset::record::{step_records_with, AnswerOrder, RecordOptions};
use schedlm_dataset::testing::{quick_solve, solved_records};
use schedlm_dataset::{Record, SplitSpec, Template};
use schedlm_finetune::data::{soft_targets, value_shares, Example};
use schedlm_finetune::{TrainOptions, Trainer};
use schedlm_generator::{Config, Family};
use schedlm_model::{Objective, Problem, Variant};

/// Step-v2 records with values of `uniform` snapshots of 4 to 6 queued jobs.
fn value_records(count: usize, seed: u64) -> Vec<Record> {
    let mut config = Config::new(Family::Uniform, seed);
    (config.queue_min, config.queue_max) = (4, 6);
    let options = RecordOptions {
        answer: AnswerOrder::Canonical,
        template: Template::StepV2,
        objective: Objective::Bsld,
        variant: Variant::Serial,
        plan: false,
        split: SplitSpec::default(),
    };
    solved_records(&config, count, &quick_solve(), &options)
        .unwrap()
        .iter()
        .flat_map(|r| {
            step_records_with(r, &Problem::new(&r.instance).unwrap(), Some(20_000)).unwrap()
        })
        .collect()
}

#[test]
fn soft_targets_follow_the_answers_that_share_the_label_so_far() {
    // The label [5, 7, 9]; another answer branches at its second token, a third at its third.
    let answers = vec![vec![5, 7, 9], vec![5, 8, 9], vec![5, 7, 3, 9]];
    let soft = soft_targets(&[5, 7, 9], &answers, &[0.5, 0.25, 0.25]);
    assert_eq!(soft[0], vec![(5, 1.0)]);
    assert_eq!(soft[1], vec![(7, 0.75), (8, 0.25)]);
    let third = &soft[2];
    assert_eq!((third[0].0, third[1].0), (9, 3));
    assert!((third[0].1 - 2.0 / 3.0).abs() < 1e-6 && (third[1].1 - 1.0 / 3.0).abs() < 1e-6);
    // All the mass on the label: its own tokens, each with share 1.
    let one_hot = soft_targets(&[5, 7, 9], &answers, &[1.0, 0.0, 0.0]);
    assert_eq!(
        one_hot,
        vec![vec![(5, 1.0)], vec![(7, 1.0)], vec![(9, 1.0)]]
    );
    // No mass where the label goes: its own token.
    assert_eq!(
        soft_targets(&[5, 7, 9], &answers, &[0.0, 1.0, 0.0])[2],
        vec![(9, 1.0)]
    );
}

#[test]
fn the_values_loss_is_the_label_loss_when_one_candidate_has_all_the_mass() {
    let records = value_records(8, 3);
    let loaded = common::tiny_model(&records, 1, 32, 1);
    let tok = loaded.tokenizer.clone();
    let trainer = Trainer::new(loaded, TrainOptions::default(), &Device::Cpu).unwrap();
    // States with a choice: more than one candidate.
    let chosen: Vec<&Record> = records
        .iter()
        .filter(|r| r.values.as_ref().is_some_and(|v| v.candidates.len() > 2))
        .take(6)
        .collect();
    assert!(chosen.len() >= 4, "{} states with a choice", chosen.len());
    let loss = |examples: &[Example]| -> f32 {
        let batch: Vec<&Example> = examples.iter().collect();
        trainer.loss(&batch).unwrap().to_scalar::<f32>().unwrap()
    };
    let label: Vec<Example> = chosen
        .iter()
        .map(|r| Example::new(r, &tok).unwrap())
        .collect();
    // Every other candidate far behind the label's: all the mass on the label.
    let one_hot: Vec<Example> = chosen
        .iter()
        .map(|r| {
            let mut r = (*r).clone();
            let v = r.values.as_mut().unwrap();
            for c in &mut v.candidates {
                c.regret = if c.id == r.completion { 0.0 } else { 1e6 };
                c.value = v.best + c.regret;
            }
            let shares = value_shares(v, 0.01);
            assert_eq!(shares.iter().filter(|&&s| s > 0.0).count(), 1);
            Example::with_values(&r, &tok, 0.01).unwrap()
        })
        .collect();
    assert!(one_hot.iter().all(|e| !e.soft.is_empty()));
    assert_eq!(loss(&one_hot), loss(&label));
    // Every candidate a best one: the mass spreads and the loss moves.
    let spread: Vec<Example> = chosen
        .iter()
        .map(|r| {
            let mut r = (*r).clone();
            let v = r.values.as_mut().unwrap();
            for c in &mut v.candidates {
                (c.regret, c.value) = (0.0, v.best);
            }
            Example::with_values(&r, &tok, 0.01).unwrap()
        })
        .collect();
    let (a, b) = (loss(&spread), loss(&label));
    assert!(
        a.is_finite() && (a - b).abs() > 1e-4,
        "spread {a}, label {b}"
    );
}

#[test]
fn training_on_values_lowers_the_values_loss() {
    let records = value_records(12, 5);
    let loaded = common::tiny_model(&records, 2, 32, 1);
    let tok = loaded.tokenizer.clone();
    let examples: Vec<Example> = records
        .iter()
        .map(|r| Example::with_values(r, &tok, 0.02).unwrap())
        .collect();
    assert!(examples.iter().any(|e| e.soft.iter().any(|s| s.len() > 1)));
    let options = TrainOptions {
        lr: 3e-3,
        warmup: 2,
        value_temperature: Some(0.02),
        ..TrainOptions::default()
    };
    let mut trainer = Trainer::new(loaded, options, &Device::Cpu).unwrap();
    let first = trainer.evaluate(&examples).unwrap();
    trainer.state.total_steps = 30;
    for step in 0..30 {
        let batch: Vec<&Example> = examples
            .iter()
            .skip((step * 8) % examples.len())
            .take(8)
            .collect();
        let l = trainer.step(&batch).unwrap();
        assert!(l.is_finite());
    }
    let last = trainer.evaluate(&examples).unwrap();
    assert!(last < first, "values loss {first} -> {last}");
}
