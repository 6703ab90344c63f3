//! Fixed-shape speed measurements of the from-scratch GPT, the library side of `schedlm bench
//! train`: a training step on random tokens with the loss on every token (the workload of
//! `benches/torch_gpt.py`, so that the two figures compare the same arithmetic), and
//! constrained greedy decoding of whole queue orders with the key/value cache.
//!
//! The timing itself (wall and CPU clocks, warm-up steps) is the caller's; these types only
//! do the work of one step or one decision.

use candle_core::Device;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::data::Example;
use crate::error::Result;
use crate::gpt::GptConfig;
use crate::model::{build, ModelSpec};
use crate::tokenizer::TextTokenizer;
use crate::train::{TrainOptions, Trainer};

/// The model and batch shape of a training measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrainShape {
    /// Shape of the GPT measured; its `vocab_size` bounds the random token ids.
    pub config: GptConfig,
    /// Sequences per step.
    pub batch: usize,
    /// Tokens each sequence feeds the model (it predicts the next `seq`).
    pub seq: usize,
}

impl TrainShape {
    /// Tokens of one step: `batch * seq`.
    pub fn tokens_per_step(&self) -> usize {
        self.batch * self.seq
    }
}

/// A GPT and one batch of random tokens, trained step after step on that batch.
pub struct TrainBench {
    trainer: Trainer,
    examples: Vec<Example>,
}

impl TrainBench {
    /// Builds the model (seeded) and a batch of `shape.batch` random sequences of
    /// `shape.seq + 1` tokens whose every position after the first is a target.
    pub fn new(shape: TrainShape, seed: u64, device: &Device) -> Result<TrainBench> {
        // The tokenizer is never used to encode: the tokens are random ids below the
        // configured vocabulary.
        let tokenizer = TextTokenizer::train_bpe(&["schedlm bench".to_string()], 300)?;
        let loaded = build(
            &ModelSpec::Gpt {
                config: shape.config,
            },
            Some(tokenizer),
            seed,
            device,
        )?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let vocab = shape.config.vocab_size as u32;
        let examples = (0..shape.batch)
            .map(|_| {
                let tokens = (0..=shape.seq)
                    .map(|_| rng.random_range(0..vocab))
                    .collect();
                Example::from_tokens(tokens, 1, 0)
            })
            .collect();
        let options = TrainOptions {
            batch: shape.batch,
            ..TrainOptions::default()
        };
        let trainer = Trainer::new(loaded, options, device)?;
        Ok(TrainBench { trainer, examples })
    }

    /// One optimizer step (forward, backward, clipping, AdamW); returns the loss.
    pub fn step(&mut self) -> Result<f64> {
        let batch: Vec<&Example> = self.examples.iter().collect();
        self.trainer.step(&batch)
    }
}
