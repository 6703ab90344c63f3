//! Training the GPT from scratch: overfitting, checkpoints, resume.

mod common;

use candle_core::Device;
use schedlm_finetune::{TrainOptions, Trainer};

use common::{records, tiny_model, tokenized};

#[test]
fn tiny_gpt_overfits_32_records() {
    let records = records(32, 7, (3, 4));
    let loaded = tiny_model(&records, 1, 64, 2);
    let examples = tokenized(&records, &loaded);
    let lens: Vec<usize> = examples.iter().map(|e| e.tokens.len()).collect();
    eprintln!("tokens per example: {lens:?}");
    let options = TrainOptions {
        epochs: 1,
        lr: 3e-3,
        batch: 8,
        warmup: 10,
        weight_decay: 0.0,
        ..TrainOptions::default()
    };
    let mut trainer = Trainer::new(loaded, options, &Device::Cpu).unwrap();
    let started = std::time::Instant::now();
    let first = trainer.evaluate(&examples).unwrap();
    let mut last = first;
    let budget = 400;
    for step in 0..budget {
        trainer.state.total_steps = budget;
        let batch: Vec<_> = examples[(step % 4) * 8..][..8].iter().collect();
        last = trainer.step(&batch).unwrap();
        if step % 20 == 0 {
            eprintln!("step {step} loss {last:.4} at {:?}", started.elapsed());
        }
        if step % 4 == 3 && last < 0.05 {
            last = trainer.evaluate(&examples).unwrap();
            if last < 0.05 {
                break;
            }
        }
    }
    eprintln!(
        "answer loss {first:.3} -> {last:.4} in {} steps",
        trainer.state.step
    );
    assert!(
        last < 0.05,
        "answer loss {last} after {} steps",
        trainer.state.step
    );
}
