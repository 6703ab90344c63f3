//! Learning curves: `curve.csv` rows at each evaluation point count the tokens trained on,
//! and the held-out gap measured in memory during training equals what the saved model gives
//! through `Predictor` (the path evaluation takes).

mod common;

use candle_core::Device;
use schedlm_dataset::{IdMap, Template};
use schedlm_finetune::curve::{self, CURVE_SVG, HEADER};
use schedlm_finetune::data::{plan, Example};
use schedlm_finetune::heldout::{gap, OPTIMAL_TOLERANCE, UNCONSTRAINED_SLACK};
use schedlm_finetune::predict::order_value;
use schedlm_finetune::{DecodeOptions, Predictor, TrainOptions, Trainer};

use common::{records, tiny_model, tokenized};

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn curve_rows_count_tokens_and_gap_matches_the_saved_model() {
    let records = records(12, 3, (3, 5));
    let loaded = tiny_model(&records, 4, 32, 1);
    let examples = tokenized(&records, &loaded);
    let (train, held) = (&examples[..8], &records[8..]);
    let options = TrainOptions {
        steps: Some(5),
        eval_every: 2,
        eval_records: 4,
        batch: 4,
        warmup: 2,
        lr: 3e-3,
        ..TrainOptions::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let mut trainer = Trainer::new(loaded, options, &Device::Cpu).unwrap();
    assert_eq!(trainer.set_held_out(held).unwrap(), 4);
    trainer
        .fit(train, &examples[8..], Some(dir.path()))
        .unwrap();

    let text = std::fs::read_to_string(dir.path().join(curve::CURVE_CSV)).unwrap();
    eprintln!("{text}");
    assert_eq!(text.lines().next(), Some(HEADER));
    let points = curve::read(dir.path()).unwrap();
    let steps: Vec<usize> = points.iter().map(|p| p.step).collect();
    assert_eq!(steps, [2, 4, 5]);
    assert_eq!(points.len(), trainer.points.len());

    // Tokens: the batches of epochs 0, 1, 2 (2 steps each) in plan order, 5 of them.
    let taken: Vec<&Example> = (0..3)
        .flat_map(|e| plan(train, 4, 1, e, false))
        .take(5)
        .flat_map(|b| b.into_iter().map(|i| &train[i]))
        .collect();
    let last = &points[2];
    let tokens: usize = taken.iter().map(|e| e.tokens.len()).sum();
    let answer: usize = taken.iter().map(|e| e.answer_len()).sum();
    assert_eq!(last.tokens_seen as usize, tokens);
    assert_eq!(last.answer_tokens_seen as usize, answer);
    assert!((last.epoch - 2.5).abs() < 1e-9);
    assert!(last.val_loss.is_some_and(|v| v > 0.0));

    // The same numbers from the checkpoint (written at the last step) through Predictor.
    let predictor = Predictor::load(dir.path()).unwrap();
    let (mut gaps, mut valid, mut optimal) = (Vec::new(), 0, 0);
    for (record, example) in held.iter().zip(&examples[8..]) {
        let (objective, ids) = (record.objective, IdMap::new(&record.instance));
        let constrained = DecodeOptions::default();
        let p = predictor
            .predict(&record.instance, objective, Template::Compact, &constrained)
            .unwrap();
        let value = order_value(&p.text, &ids, &record.instance, objective, record.variant)
            .expect("constrained answers are valid");
        gaps.push(gap(value, record.lower_bound).unwrap());
        optimal += usize::from(value <= record.value * (1.0 + OPTIMAL_TOLERANCE));
        let free = DecodeOptions {
            constrained: false,
            max_new_tokens: example.answer_len() + UNCONSTRAINED_SLACK,
            ..DecodeOptions::default()
        };
        let p = predictor
            .predict(&record.instance, objective, Template::Compact, &free)
            .unwrap();
        valid += usize::from(
            order_value(&p.text, &ids, &record.instance, objective, record.variant).is_some(),
        );
    }
    let near = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-4);
    assert!(near(last.val_gap_mean, mean(&gaps)), "{last:?} vs {gaps:?}");
    assert!(near(last.val_valid_share, valid as f64 / 4.0), "{last:?}");
    assert!(
        near(last.val_optimal_share, optimal as f64 / 4.0),
        "{last:?}"
    );

    let svg = std::fs::read_to_string(dir.path().join(CURVE_SVG)).unwrap();
    assert!(svg.contains("answer loss") && svg.contains("held-out mean gap"));
}
