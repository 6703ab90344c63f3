//! Step scorers: a small network that scores each job a step state offers from its row of
//! [`schedlm_dataset::features::FEATURES`] and places the best-scored one, one state at a
//! time (the `step-scorer` models, e.g. `models/b7-uniform`).
//!
//! A scorer directory holds `scorer.json` ([`ScorerConfig`]: the feature set, the
//! normalisation, the layer sizes) and `scorer.safetensors` (`layers.K.weight` of shape
//! `[out, in]` and `layers.K.bias`, ReLU between layers, one score out), as
//! `python/examples/train_scorer.py` exports them from PyTorch, and optionally
//! `training_data.json`. [`crate::Predictor::load`] loads such a directory like any run
//! directory, so `schedlm predict --model DIR` and `schedlm eval --policies model:DIR` roll it
//! out. Greedy decoding takes the best score (ties: the first listed, as the prompt lists
//! them); sampling draws from the softmax of the scores over the decoding temperature.

use std::path::Path;

use candle_core::Device;
use rand::Rng;
use schedlm_dataset::features::{Row, FEATURES, FEATURES_COMPATIBLE, FEATURES_VERSION};
use schedlm_dataset::step::StepState;
use schedlm_dataset::Template;
use schedlm_model::{Instance, Objective, Problem, Variant};
use serde::{Deserialize, Serialize};

use crate::error::{FinetuneError, Result};

/// The file that marks a scorer directory.
pub const SCORER_FILE: &str = "scorer.json";
/// Its weights.
pub const SCORER_WEIGHTS: &str = "scorer.safetensors";

/// `scorer.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScorerConfig {
    /// The feature set the scorer was trained on ([`FEATURES_VERSION`], or one of
    /// [`FEATURES_COMPATIBLE`]).
    pub features: String,
    /// The features it reads, in input order: names of [`FEATURES`].
    pub names: Vec<String>,
    /// Subtracted from each feature before the first layer.
    pub mean: Vec<f32>,
    /// Each feature is divided by this after the mean is taken off.
    pub std: Vec<f32>,
    /// The objective the scorer was trained for (the command line's name).
    pub objective: String,
    /// The dispatcher variant it was trained for.
    pub variant: String,
    /// Added to the score of the first listed job (the earliest-completion choice) at every
    /// state: the scorer leaves the listing only where another job scores higher by more than
    /// this. Chosen on held-out instances after training (0 when absent).
    #[serde(default)]
    pub first_bonus: f32,
    /// Whether the second layer also reads the mean of the first layer's outputs over the
    /// state's candidates (its input is `[own, mean]`): each score then sees the others.
    #[serde(default)]
    pub pooled: bool,
    /// How it was trained, in words (shown by `eval`).
    #[serde(default)]
    pub about: String,
}

struct Layer {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
}

impl Layer {
    fn apply(&self, x: &[f32], relu: bool) -> Vec<f32> {
        self.bias
            .iter()
            .enumerate()
            .map(|(o, b)| {
                let w = &self.weight[o * self.inputs..(o + 1) * self.inputs];
                let y = b + w.iter().zip(x).map(|(a, b)| a * b).sum::<f32>();
                if relu {
                    y.max(0.0)
                } else {
                    y
                }
            })
            .collect()
    }
}

/// A loaded step scorer.
pub struct StepScorer {
    config: ScorerConfig,
    /// Where each of its inputs is in a row of [`FEATURES`].
    columns: Vec<usize>,
    layers: Vec<Layer>,
}

/// Whether `dir` holds a step scorer.
pub fn is_scorer(dir: &Path) -> bool {
    dir.join(SCORER_FILE).is_file()
}

impl StepScorer {
    /// Loads the scorer of `dir`: its config checked against this build's feature set, its
    /// layers' shapes against each other.
    pub fn load(dir: &Path) -> Result<StepScorer> {
        let config: ScorerConfig = crate::io::read_json(&dir.join(SCORER_FILE))?;
        let bad = |why: String| FinetuneError::Model(format!("{}: {why}", dir.display()));
        if config.features != FEATURES_VERSION
            && !FEATURES_COMPATIBLE.contains(&config.features.as_str())
        {
            return Err(bad(format!(
                "the scorer reads features `{}`; this build computes `{FEATURES_VERSION}` \
                 (and reads scorers of {FEATURES_COMPATIBLE:?})",
                config.features
            )));
        }
        let columns = config
            .names
            .iter()
            .map(|name| {
                FEATURES.iter().position(|f| f == name).ok_or_else(|| {
                    bad(format!(
                        "feature `{name}` is not one of `{FEATURES_VERSION}`'s"
                    ))
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        let n = columns.len();
        if config.mean.len() != n || config.std.len() != n {
            return Err(bad(format!("mean and std need {n} values each")));
        }
        if config.std.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
            return Err(bad("every std must be a positive number".into()));
        }
        let path = dir.join(SCORER_WEIGHTS);
        let tensors = candle_core::safetensors::load(&path, &Device::Cpu)
            .map_err(|e| bad(format!("{}: {e}", path.display())))?;
        let mut layers = Vec::new();
        let mut inputs = n;
        while let Some(w) = tensors.get(&format!("layers.{}.weight", layers.len())) {
            if layers.len() == 1 && config.pooled {
                inputs *= 2;
            }
            let k = layers.len();
            let b = tensors
                .get(&format!("layers.{k}.bias"))
                .ok_or_else(|| bad(format!("layers.{k}.bias is missing")))?;
            let as_f32 = |t: &candle_core::Tensor| {
                t.to_dtype(candle_core::DType::F32)
                    .and_then(|t| t.flatten_all())
                    .and_then(|t| t.to_vec1::<f32>())
                    .map_err(|e| bad(format!("layer {k}: {e}")))
            };
            let dims = w.dims().to_vec();
            if dims.len() != 2 || dims[1] != inputs || b.dims() != [dims[0]] {
                return Err(bad(format!(
                    "layer {k}: weight {dims:?} and bias {:?} do not take {inputs} inputs",
                    b.dims()
                )));
            }
            layers.push(Layer {
                weight: as_f32(w)?,
                bias: as_f32(b)?,
                inputs,
            });
            inputs = dims[0];
        }
        if layers.is_empty() || inputs != 1 {
            return Err(bad(format!(
                "{} layers ending in {inputs} outputs: a scorer ends in one score",
                layers.len()
            )));
        }
        Ok(StepScorer {
            config,
            columns,
            layers,
        })
    }

    /// The scorer's settings.
    pub fn config(&self) -> &ScorerConfig {
        &self.config
    }

    /// The scores of one state's candidates, one row of features each.
    pub fn scores(&self, rows: &[Row]) -> Vec<f32> {
        let mut xs: Vec<Vec<f32>> = rows
            .iter()
            .map(|row| {
                self.columns
                    .iter()
                    .map(|&c| row[c])
                    .zip(&self.config.mean)
                    .zip(&self.config.std)
                    .map(|((v, m), s)| (v - m) / s)
                    .collect()
            })
            .collect();
        let last = self.layers.len() - 1;
        for (k, layer) in self.layers.iter().enumerate() {
            if k == 1 && self.config.pooled {
                let width = xs.first().map_or(0, Vec::len);
                let mut mean = vec![0.0f32; width];
                for x in &xs {
                    mean.iter_mut().zip(x).for_each(|(m, v)| *m += v);
                }
                mean.iter_mut().for_each(|m| *m /= xs.len().max(1) as f32);
                xs.iter_mut().for_each(|x| x.extend_from_slice(&mean));
            }
            for x in xs.iter_mut() {
                *x = layer.apply(x, k < last);
            }
        }
        xs.iter().map(|x| x[0]).collect()
    }

    /// Rolls the scorer out on `instance`: at every state the job `choose` picks from the
    /// candidates' scores (listing order, the first listed given [`ScorerConfig::first_bonus`]).
    /// Returns the order (queue indices).
    pub fn rollout(
        &self,
        instance: &Instance,
        objective: Objective,
        variant: Variant,
        choose: &mut dyn FnMut(&[f32]) -> usize,
    ) -> Result<Vec<usize>> {
        let problem = Problem::new(instance).map_err(|e| FinetuneError::Config(e.to_string()))?;
        let mut state =
            StepState::new(instance, &problem, objective, variant).rendered_as(Template::StepV2);
        for _ in 0..problem.jobs() {
            let rows = state.features();
            let pick = match rows.len() {
                0 => break,
                1 => rows[0].0,
                _ => {
                    let features: Vec<Row> = rows.iter().map(|r| r.1).collect();
                    let mut scores = self.scores(&features);
                    scores[0] += self.config.first_bonus;
                    rows[choose(&scores).min(rows.len() - 1)].0
                }
            };
            state.place(pick);
        }
        Ok(state.placed())
    }
}

/// The greedy choice: the best score, ties to the first listed.
pub fn best(scores: &[f32]) -> usize {
    let mut at = 0;
    for (k, &s) in scores.iter().enumerate() {
        if s > scores[at] {
            at = k;
        }
    }
    at
}

/// A draw from the softmax of `scores / temperature`.
pub fn sample(scores: &[f32], temperature: f32, rng: &mut impl Rng) -> usize {
    let t = f64::from(temperature.max(1e-6));
    let top = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let weights: Vec<f64> = scores
        .iter()
        .map(|&s| ((s as f64 - top) / t).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let mut u = rng.random::<f64>() * total;
    for (k, w) in weights.iter().enumerate() {
        if u < *w {
            return k;
        }
        u -= w;
    }
    best(scores)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn greedy_takes_the_best_score_and_the_first_of_equals() {
        assert_eq!(best(&[0.1, 0.5, 0.5, -1.0]), 1);
        assert_eq!(best(&[2.0]), 0);
    }

    #[test]
    fn sampling_at_a_low_temperature_is_greedy() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        for _ in 0..50 {
            assert_eq!(sample(&[0.0, 3.0, 1.0], 0.01, &mut rng), 1);
        }
        let mut seen = [0; 3];
        for _ in 0..300 {
            seen[sample(&[0.0, 0.0, 0.0], 1.0, &mut rng)] += 1;
        }
        assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
    }
}
