//! Language models for schedlm: a small GPT trained from scratch and LoRA fine-tuning of a
//! pretrained Llama-architecture model (SmolLM2 from a GGUF file, or a Hugging Face
//! directory), with candle on the CPU (the `cuda` feature for NVIDIA GPUs); decoding with a
//! key/value cache and a constraint that makes every answer a valid queue order.
//!
//! - [`tokenizer`]: byte-level BPE trained on the data, or a pretrained model's tokenizer.
//! - [`gpt`], [`llama`]: the models; [`pretrained`]: GGUF and Hugging Face loading.
//! - [`train`]: the training loop with checkpoints and resume; [`data`]: records to batches
//!   (shuffled, or a curriculum by queue length).
//! - [`curve`]: learning curves (`curve.csv`, `curve.svg`); [`heldout`]: the held-out gap of
//!   the model being trained.
//! - [`constrain`], [`decode`], [`predict`]: answering snapshots.
//! - [`scorer`]: step scorers, small networks over each candidate's numbers, rolled out by
//!   [`Predictor`] like a step model.
//!
//! # The interface for evaluation
//!
//! A run directory written by training (`schedlm finetune --out DIR`) loads with
//! [`Predictor::load`]; [`Predictor::predict`] renders a snapshot with an objective and a
//! template and returns a [`Prediction`]: `text`, the raw greedy output, and `best_of`, the
//! best valid order of `best_of` samples (never mixed with `text`).
//!
//! ```no_run
//! use schedlm_finetune::{DecodeOptions, Predictor};
//! # fn demo(instance: &schedlm_model::Instance) -> Result<(), schedlm_finetune::FinetuneError> {
//! let mut predictor = Predictor::load(std::path::Path::new("runs/tiny"))?;
//! let options = DecodeOptions { constrained: true, best_of: 8, ..DecodeOptions::default() };
//! let p = predictor.predict(
//!     instance,
//!     schedlm_model::Objective::Bsld,
//!     schedlm_dataset::Template::Compact,
//!     &options,
//! )?;
//! println!("greedy: {}  best of 8: {:?}", p.text, p.best_of);
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod adamw;
pub mod bench;
pub mod constrain;
pub mod curve;
pub mod data;
pub mod decode;
pub mod device;
pub mod error;
pub mod gpt;
pub mod heldout;
mod io;
pub mod kernels;
pub mod llama;
pub mod model;
pub mod nn;
pub mod predict;
pub mod pretrained;
pub mod rl;
pub mod rollout;
pub mod scorer;
pub mod session;
pub mod tokenizer;
pub mod train;

pub use candle_core::Device;
pub use decode::DecodeOptions;
pub use error::FinetuneError;
pub use gpt::GptConfig;
pub use llama::LoraConfig;
pub use model::{Base, ModelSpec};
pub use predict::{Prediction, Predictor, RecordAnswer};
pub use tokenizer::TextTokenizer;
pub use train::{TrainOptions, Trainer};
