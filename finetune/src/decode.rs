//! Decoding: greedy or sampled (temperature, top-k), with or without the key/value cache, with
//! or without the order constraint.

use candle_core::{Device, Tensor};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use schedlm_model::Variant;
use serde::{Deserialize, Serialize};

use crate::constrain::{allowed, OrderConstraint};
use crate::error::{FinetuneError, Result};
use crate::model::Model;
use crate::nn::KvCache;

/// How to decode an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecodeOptions {
    /// Allow only tokens that continue a valid order (every answer is valid by construction).
    pub constrained: bool,
    /// Temperature of the best-of samples (the main answer is always greedy).
    pub temperature: f32,
    /// Sample only among the `k` most likely tokens.
    pub top_k: Option<usize>,
    /// Samples for best-of-N (`0` or `1`: none).
    pub best_of: usize,
    /// Seed of the random stream the best-of samples are drawn from (the greedy answer draws
    /// nothing).
    pub seed: u64,
    /// Most tokens generated for one answer, the end token not counted (a rollout sets its own
    /// per-step limit); decoding also stops when the sequence fills the context.
    pub max_new_tokens: usize,
    /// Reuse keys and values of earlier tokens (off only to measure what the cache saves).
    pub use_cache: bool,
    /// Dispatcher variant that scores best-of samples.
    pub variant: Variant,
    /// With `constrained`: also decode the greedy answer without the constraint (reusing the
    /// primed prompt), so that the validity of the model alone is measured beside the
    /// constrained answer ([`crate::predict::Prediction::unconstrained`]).
    pub check_unconstrained: bool,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            constrained: true,
            temperature: 1.0,
            top_k: None,
            best_of: 1,
            seed: 1,
            max_new_tokens: 512,
            use_cache: true,
            variant: Variant::Serial,
            check_unconstrained: false,
        }
    }
}

impl DecodeOptions {
    /// How many best-of samples to draw besides the greedy answer (`best_of` when it is 2 or
    /// more, else none).
    pub fn samples(&self) -> usize {
        if self.best_of >= 2 {
            self.best_of
        } else {
            0
        }
    }

    /// The greedy answer's decoding, in the words `eval` reports: `constrained greedy` or
    /// `unconstrained greedy`.
    pub fn greedy_label(&self) -> String {
        format!("{} greedy", self.how())
    }

    /// The best-of answer's decoding, with best-of sampling: `constrained, best of 8 samples
    /// at temperature 0.7, top 5`.
    pub fn best_of_label(&self) -> Option<String> {
        let n = self.samples();
        let top = self.top_k.map(|k| format!(", top {k}")).unwrap_or_default();
        let t = self.temperature;
        (n > 0).then(|| {
            format!(
                "{}, best of {n} samples at temperature {t}{top}",
                self.how()
            )
        })
    }

    /// Both in one line (`schedlm predict`'s `decoding`, eval's `answers.jsonl`):
    /// `constrained greedy`, or `constrained greedy; best-of: constrained, best of 8 ...`.
    pub fn describe(&self) -> String {
        match self.best_of_label() {
            Some(b) => format!("{}; best-of: {b}", self.greedy_label()),
            None => self.greedy_label(),
        }
    }

    fn how(&self) -> &'static str {
        if self.constrained {
            "constrained"
        } else {
            "unconstrained"
        }
    }
}

/// How to choose each token: greedy, or sampled.
pub enum Chooser<'a> {
    /// Always the most likely allowed token (ties go to the lowest id).
    Greedy,
    /// A token drawn from the softmax of the allowed tokens' logits divided by `temperature`.
    Sample {
        /// Divisor of the logits: below 1 sharpens the distribution, above 1 flattens it (floored
        /// at 1e-4).
        temperature: f32,
        /// Draw only among the `k` most likely allowed tokens (at least 1); `None`: among all of
        /// them.
        top_k: Option<usize>,
        /// The random stream drawn from, shared by successive samples so that they differ.
        rng: &'a mut ChaCha8Rng,
    },
}

/// What decoding needs to know about tokens.
pub struct Vocab<'a> {
    /// Decoded text of every token.
    pub pieces: &'a [String],
    /// Tokens made only of `J`, digits and spaces.
    pub candidates: &'a [u32],
    /// The end-of-answer token.
    pub end: u32,
    /// Tokens that stop unconstrained decoding.
    pub stop: &'a [u32],
}

/// A prompt already run through the model: its cache and the logits of its last token.
pub struct Primed {
    /// Keys and values of every prompt token; each [`generate`] call continues from a clone.
    pub cache: KvCache,
    /// Next-token logits after the last prompt token, one per token id (vocabulary size).
    pub logits: Vec<f32>,
    /// The prompt's token ids: they count toward the context, and decoding without the cache runs
    /// them through the model again at every token.
    pub prompt: Vec<u32>,
}

/// Logits of the last position of [1, t, vocab].
fn last_logits(logits: &Tensor) -> Result<Vec<f32>> {
    let t = logits.dim(1)?;
    Ok(logits
        .narrow(1, t - 1, 1)?
        .flatten_all()?
        .to_vec1::<f32>()?)
}

/// Runs the prompt through the model once.
pub fn prime(model: &Model, prompt: &[u32], device: &Device) -> Result<Primed> {
    if prompt.is_empty() {
        return Err(FinetuneError::Model("empty prompt".into()));
    }
    let mut cache = model.cache();
    let ids = Tensor::new(prompt, device)?.unsqueeze(0)?;
    // Only the last position's logits are needed: [1, 1, vocab], not [1, t, vocab].
    let hidden = model.hidden(&ids, Some(&mut cache))?;
    let last = hidden.narrow(1, prompt.len() - 1, 1)?;
    let logits = last_logits(&model.logits(&last)?)?;
    Ok(Primed {
        cache,
        logits,
        prompt: prompt.to_vec(),
    })
}

/// Picks a token among `allowed` (all when `None`).
fn choose(logits: &[f32], allowed: Option<&[u32]>, chooser: &mut Chooser) -> Option<u32> {
    let mut cand: Vec<(u32, f32)> = match allowed {
        Some(a) => a.iter().map(|&t| (t, logits[t as usize])).collect(),
        None => logits
            .iter()
            .enumerate()
            .map(|(i, &l)| (i as u32, l))
            .collect(),
    };
    cand.retain(|(_, l)| !l.is_nan());
    match chooser {
        Chooser::Greedy => cand
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|c| c.0),
        Chooser::Sample {
            temperature,
            top_k,
            rng,
        } => {
            cand.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            if let Some(k) = top_k {
                cand.truncate((*k).max(1));
            }
            let top = cand.first()?.1;
            let t = temperature.max(1e-4);
            let weights: Vec<f32> = cand.iter().map(|c| ((c.1 - top) / t).exp()).collect();
            let total: f32 = weights.iter().sum();
            let mut x = rng.random::<f32>() * total;
            for (c, w) in cand.iter().zip(&weights) {
                if x < *w {
                    return Some(c.0);
                }
                x -= w;
            }
            cand.last().map(|c| c.0)
        }
    }
}

/// Generates an answer after a primed prompt; returns its tokens (without the end token).
/// `constraint`: what the answer must be when constrained (a whole order, or one job).
pub fn generate(
    model: &Model,
    primed: &Primed,
    vocab: &Vocab,
    constraint: Option<OrderConstraint>,
    chooser: &mut Chooser,
    options: &DecodeOptions,
    device: &Device,
) -> Result<Vec<u32>> {
    let mut constraint = constraint;
    let mut cache = primed.cache.clone();
    let mut logits = primed.logits.clone();
    let mut seq = primed.prompt.clone();
    let mut out = Vec::new();
    while out.len() < options.max_new_tokens && seq.len() < model.context() {
        let mask = constraint
            .as_ref()
            .map(|c| allowed(c, vocab.candidates, vocab.pieces, vocab.end));
        let token = choose(&logits, mask.as_deref(), chooser)
            .ok_or_else(|| FinetuneError::Model("no token may follow".into()))?;
        if let Some(c) = constraint.as_mut() {
            c.advance(&vocab.pieces[token as usize], token == vocab.end);
        }
        if token == vocab.end || (constraint.is_none() && vocab.stop.contains(&token)) {
            break;
        }
        out.push(token);
        seq.push(token);
        logits = if options.use_cache {
            let ids = Tensor::new(&[token], device)?.unsqueeze(0)?;
            last_logits(&model.forward(&ids, Some(&mut cache))?)?
        } else {
            let ids = Tensor::new(seq.as_slice(), device)?.unsqueeze(0)?;
            last_logits(&model.forward(&ids, None)?)?
        };
    }
    Ok(out)
}
