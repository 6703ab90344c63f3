//! The loss on the decisions that matter, and reinforcement learning with the dispatcher as
//! the reward: weights land on the answer positions that leave the prompt's listing, a weight
//! of 1 is the plain loss, and an RL run takes seeded steps that a resume repeats bit for bit.

mod common;

use candle_core::Device;
use schedlm_dataset::difficulty::answer_deviations;
use schedlm_dataset::record::{step_records, AnswerOrder, RecordOptions};
use schedlm_dataset::testing::{quick_solve, solved_records};
use schedlm_dataset::{Record, SplitSpec, Template};
use schedlm_finetune::data::Example;
use schedlm_finetune::model::{save, Task};
use schedlm_finetune::rl::{questions, Reinforce, RlOptions, RL_CURVE};
use schedlm_finetune::{TrainOptions, Trainer};
use schedlm_generator::{Config, Family};
use schedlm_model::{Objective, Problem, Variant};

/// Canonical records of `uniform` snapshots with `jobs` queued jobs, rendered with `template`.
fn uniform(count: usize, seed: u64, jobs: (usize, usize), template: Template) -> Vec<Record> {
    let mut config = Config::new(Family::Uniform, seed);
    (config.queue_min, config.queue_max) = jobs;
    let options = RecordOptions {
        answer: AnswerOrder::Canonical,
        template,
        objective: Objective::Bsld,
        variant: Variant::Serial,
        plan: false,
        split: SplitSpec::default(),
    };
    solved_records(&config, count, &quick_solve(), &options).unwrap()
}

/// The step-v2 records of order records rendered with step-v2.
fn steps(records: &[Record]) -> Vec<Record> {
    records
        .iter()
        .flat_map(|r| step_records(r, &Problem::new(&r.instance).unwrap()).unwrap())
        .collect()
}

#[test]
fn deviation_weights_land_on_the_positions_that_leave_the_listing() {
    let orders = uniform(30, 3, (5, 8), Template::CompactV2);
    let step_v2 = steps(&uniform(20, 4, (5, 8), Template::StepV2));
    let all: Vec<Record> = orders.iter().chain(&step_v2).cloned().collect();
    let loaded = common::tiny_model(&all, 1, 32, 1);
    let tok = &loaded.tokenizer;
    let (mut weighted_positions, mut leaving) = (0, 0);
    for r in &all {
        let plain = Example::new(r, tok).unwrap();
        // Weight 1 is the plain loss.
        assert_eq!(Example::weighted(r, tok, 1.0).unwrap(), plain);
        let flags = answer_deviations(r).unwrap();
        let e = Example::weighted(r, tok, 5.0).unwrap();
        let heavy = e.weights.iter().filter(|&&w| w == 5.0).count();
        assert_eq!(heavy > 0, flags.contains(&true), "{}: {flags:?}", r.id);
        // The end token always weighs 1.
        assert_eq!(e.weights.last(), Some(&1.0));
        if r.step.is_none() {
            // Each leaving position has at least its digits weighted.
            assert!(heavy >= flags.iter().filter(|&&f| f).count(), "{}", r.id);
        }
        weighted_positions += heavy;
        leaving += flags.iter().filter(|&&f| f).count();
    }
    assert!(leaving > 0 && weighted_positions >= leaving);
}

/// A tiny step-v2 model trained for a few steps, saved as a run directory.
fn supervised(dir: &std::path::Path, records: &[Record]) {
    let mut loaded = common::tiny_model(records, 2, 32, 1);
    loaded.task = Task {
        records: schedlm_dataset::RecordKind::Steps,
        step_template: Some(Template::StepV2),
    };
    let examples = common::tokenized(records, &loaded);
    let options = TrainOptions {
        lr: 3e-3,
        batch: 8,
        warmup: 2,
        steps: Some(20),
        ..TrainOptions::default()
    };
    let mut trainer = Trainer::new(loaded, options, &Device::Cpu).unwrap();
    trainer.state.total_steps = 20;
    for k in 0..20 {
        let batch: Vec<&Example> = examples.iter().skip((k * 8) % 40).take(8).collect();
        trainer.step(&batch).unwrap();
    }
    save(&trainer.loaded, dir).unwrap();
}

#[test]
fn an_rl_run_is_seeded_resumable_and_scored_by_the_dispatcher() {
    let tmp = tempfile::tempdir().unwrap();
    let orders = uniform(24, 5, (4, 6), Template::StepV2);
    let records = steps(&orders);
    let init = tmp.path().join("sft");
    supervised(&init, &records);
    let options = RlOptions {
        steps: 4,
        prompts: 2,
        group: 3,
        eval_every: 2,
        eval_records: 6,
        lr: 1e-3,
        ..RlOptions::default()
    };
    let train = || questions(records.clone()).unwrap();
    let val = || questions(orders[18..].to_vec()).unwrap();
    let device = Device::Cpu;
    // Whole: 4 steps in one go.
    let whole = tmp.path().join("whole");
    let mut run = Reinforce::start(&init, options.clone(), &device).unwrap();
    let mut points = Vec::new();
    run.run(&train(), &val(), &whole, &mut |p| points.push(p.clone()))
        .unwrap();
    assert_eq!(points.len(), 2);
    assert!(points
        .iter()
        .all(|p| p.val_wins + p.val_ties + p.val_losses == 6));
    assert!(points
        .iter()
        .all(|p| p.sampled_reward.is_finite() && p.kl >= 0.0));
    // Split: 2 steps, then a resume for the other 2.
    let split = tmp.path().join("split");
    let mut first = Reinforce::start(&init, RlOptions { ..options }, &device).unwrap();
    first.state.options.steps = 2;
    first.run(&train(), &val(), &split, &mut |_| {}).unwrap();
    let mut second = Reinforce::resume(&split, &device).unwrap();
    second.state.options.steps = 4;
    second.run(&train(), &val(), &split, &mut |_| {}).unwrap();
    let weights = |d: &std::path::Path| std::fs::read(d.join("model.safetensors")).unwrap();
    assert!(weights(&whole) == weights(&split), "a resumed run differs");
    assert!(weights(&whole) != weights(&init), "RL changed nothing");
    let curve = std::fs::read_to_string(split.join(RL_CURVE)).unwrap();
    assert_eq!(curve.lines().count(), 3, "{curve}");
    // A resume with no step left changes nothing and still draws the curve.
    let svg = split.join("rl_curve.svg");
    std::fs::remove_file(&svg).unwrap();
    let mut done = Reinforce::resume(&split, &device).unwrap();
    done.run(&train(), &val(), &split, &mut |_| {}).unwrap();
    assert!(svg.exists(), "no curve drawn");
    assert!(weights(&whole) == weights(&split), "a finished run moved");
    // The result is a run directory `predict` loads like any other.
    let predictor = schedlm_finetune::Predictor::load(&whole).unwrap();
    assert_eq!(
        predictor.loaded().unwrap().task.step_template,
        Some(Template::StepV2)
    );
}
