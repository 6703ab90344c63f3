//! Training: loss on answer tokens only, AdamW with warmup then cosine decay, gradient
//! clipping, batches of similar length, validation loss each epoch, checkpoints and resume.
//!
//! A checkpoint is the run directory of [`crate::model`] plus `optimizer.safetensors` (AdamW
//! moments) and `train_state.json` ([`TrainState`]: options, epochs done, steps, history).
//! Batches of epoch `e` depend only on `(seed, e)`, so resuming after epoch `e` takes the
//! same steps as a run that never stopped.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use candle_core::{Device, Tensor, Var};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::data::{batches, Example};
use crate::error::{FinetuneError, Result};
use crate::model::{self, sorted_vars, Loaded};
use crate::nn::nll;

pub const STATE_FILE: &str = "train_state.json";
pub const OPTIMIZER_FILE: &str = "optimizer.safetensors";

/// How to train.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainOptions {
    pub epochs: usize,
    /// Peak learning rate.
    pub lr: f64,
    /// The cosine decays to `lr * min_lr_ratio`.
    pub min_lr_ratio: f64,
    /// Records per batch.
    pub batch: usize,
    /// Steps of linear warmup.
    pub warmup: usize,
    pub weight_decay: f64,
    /// Largest global gradient norm (0: no clipping).
    pub clip: f64,
    pub seed: u64,
    /// Show a progress bar.
    #[serde(skip)]
    pub progress: bool,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            epochs: 10,
            lr: 1e-3,
            min_lr_ratio: 0.1,
            batch: 8,
            warmup: 20,
            weight_decay: 0.01,
            clip: 1.0,
            seed: 1,
            progress: false,
        }
    }
}

/// What one epoch did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochLog {
    pub epoch: usize,
    pub steps: usize,
    /// Mean answer-token loss of the epoch's batches.
    pub train_loss: f64,
    /// Answer-token loss on the validation examples (none given: `None`).
    pub val_loss: Option<f64>,
    /// Training tokens (prompt and answer) per second.
    pub tokens_per_s: f64,
}

/// Where training stands; saved with every checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainState {
    pub options: TrainOptions,
    /// Epochs finished.
    pub epoch: usize,
    /// Optimizer steps taken.
    pub step: usize,
    /// Steps of the whole schedule.
    pub total_steps: usize,
    pub history: Vec<EpochLog>,
}

/// AdamW with decoupled weight decay on matrices (not on vectors), moments kept as tensors.
struct AdamW {
    m: Vec<Tensor>,
    v: Vec<Tensor>,
}

const BETA1: f64 = 0.9;
const BETA2: f64 = 0.95;
const EPS: f64 = 1e-8;

impl AdamW {
    fn new(params: &[(String, Var)]) -> Result<AdamW> {
        let zeros = |v: &Var| v.zeros_like();
        Ok(AdamW {
            m: params
                .iter()
                .map(|(_, v)| zeros(v))
                .collect::<candle_core::Result<_>>()?,
            v: params
                .iter()
                .map(|(_, v)| zeros(v))
                .collect::<candle_core::Result<_>>()?,
        })
    }

    fn step(
        &mut self,
        params: &[(String, Var)],
        grads: &[Tensor],
        lr: f64,
        t: usize,
        wd: f64,
    ) -> Result<()> {
        let c1 = 1.0 - BETA1.powi(t as i32);
        let c2 = 1.0 - BETA2.powi(t as i32);
        for (i, ((_, var), g)) in params.iter().zip(grads).enumerate() {
            self.m[i] = ((&self.m[i] * BETA1)? + (g * (1.0 - BETA1))?)?;
            self.v[i] = ((&self.v[i] * BETA2)? + (g.sqr()? * (1.0 - BETA2))?)?;
            let update = ((&self.m[i] / c1)? / ((&self.v[i] / c2)?.sqrt()? + EPS)?)?;
            let theta = var.as_tensor().detach();
            let decay = if var.rank() >= 2 { 1.0 - lr * wd } else { 1.0 };
            var.set(&((theta * decay)? - (update * lr)?)?)?;
        }
        Ok(())
    }

    fn save(&self, params: &[(String, Var)], path: &Path) -> Result<()> {
        let mut map = HashMap::new();
        for (i, (name, _)) in params.iter().enumerate() {
            map.insert(format!("m.{name}"), self.m[i].clone());
            map.insert(format!("v.{name}"), self.v[i].clone());
        }
        Ok(candle_core::safetensors::save(&map, path)?)
    }

    fn load(params: &[(String, Var)], path: &Path, device: &Device) -> Result<AdamW> {
        let mut map = candle_core::safetensors::load(path, device)?;
        let mut get = |key: String| {
            map.remove(&key).ok_or_else(|| {
                FinetuneError::Model(format!("{}: no tensor `{key}`", path.display()))
            })
        };
        let mut opt = AdamW {
            m: Vec::new(),
            v: Vec::new(),
        };
        for (name, _) in params {
            opt.m.push(get(format!("m.{name}"))?);
            opt.v.push(get(format!("v.{name}"))?);
        }
        Ok(opt)
    }
}

/// A model being trained.
pub struct Trainer {
    pub loaded: Loaded,
    params: Vec<(String, Var)>,
    opt: AdamW,
    pub state: TrainState,
    device: Device,
}

/// Input ids [b, T], and for each answer token its target and flat position in [b * T].
fn batch_tensors(batch: &[&Example], device: &Device) -> Result<(Tensor, Tensor, Tensor)> {
    let t = batch
        .iter()
        .map(|e| e.tokens.len() - 1)
        .max()
        .unwrap_or(1)
        .max(1);
    let mut input = vec![0u32; batch.len() * t];
    let (mut targets, mut positions) = (Vec::new(), Vec::new());
    for (i, e) in batch.iter().enumerate() {
        let n = e.tokens.len() - 1;
        input[i * t..i * t + n].copy_from_slice(&e.tokens[..n]);
        for j in e.prompt_len.saturating_sub(1)..n {
            targets.push(e.tokens[j + 1]);
            positions.push((i * t + j) as u32);
        }
    }
    Ok((
        Tensor::from_vec(input, (batch.len(), t), device)?,
        Tensor::new(targets, device)?,
        Tensor::new(positions, device)?,
    ))
}

impl Trainer {
    /// Starts training a freshly built model.
    pub fn new(loaded: Loaded, options: TrainOptions, device: &Device) -> Result<Trainer> {
        let params = sorted_vars(&loaded.vars);
        let opt = AdamW::new(&params)?;
        let state = TrainState {
            options,
            epoch: 0,
            step: 0,
            total_steps: 0,
            history: Vec::new(),
        };
        Ok(Trainer {
            loaded,
            params,
            opt,
            state,
            device: device.clone(),
        })
    }

    /// Resumes from the checkpoint in `dir`; `epochs` (if given) replaces the planned count.
    pub fn resume(dir: &Path, epochs: Option<usize>, device: &Device) -> Result<Trainer> {
        let loaded = model::load(dir, device)?;
        let params = sorted_vars(&loaded.vars);
        let opt = AdamW::load(&params, &dir.join(OPTIMIZER_FILE), device)?;
        let mut state: TrainState = crate::io::read_json(&dir.join(STATE_FILE))?;
        if let Some(e) = epochs {
            state.options.epochs = e;
        }
        Ok(Trainer {
            loaded,
            params,
            opt,
            state,
            device: device.clone(),
        })
    }

    /// Mean loss over the answer tokens of a batch.
    pub fn loss(&self, batch: &[&Example]) -> Result<Tensor> {
        let (input, targets, positions) = batch_tensors(batch, &self.device)?;
        let hidden = self.loaded.model.hidden(&input, None)?;
        let (b, t, w) = hidden.dims3()?;
        let picked = hidden.reshape((b * t, w))?.index_select(&positions, 0)?;
        nll(&self.loaded.model.logits(&picked)?, &targets)
    }

    /// Learning rate at step `step` (0-based) of `total`.
    pub fn learning_rate(&self, step: usize) -> f64 {
        let o = &self.state.options;
        if step < o.warmup {
            return o.lr * (step + 1) as f64 / o.warmup as f64;
        }
        let span = self.state.total_steps.saturating_sub(o.warmup).max(1) as f64;
        let progress = ((step - o.warmup) as f64 / span).min(1.0);
        let min = o.lr * o.min_lr_ratio;
        min + (o.lr - min) * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos())
    }

    /// One optimizer step on a batch; returns its loss.
    pub fn step(&mut self, batch: &[&Example]) -> Result<f64> {
        let loss = self.loss(batch)?;
        let grads = loss.backward()?;
        let mut list = Vec::with_capacity(self.params.len());
        for (name, var) in &self.params {
            let g = match grads.get(var.as_tensor()) {
                Some(g) => g.clone(),
                None => {
                    return Err(FinetuneError::Model(format!("no gradient for `{name}`")));
                }
            };
            list.push(g);
        }
        let clip = self.state.options.clip;
        if clip > 0.0 {
            let mut sq = 0.0;
            for g in &list {
                sq += g.sqr()?.sum_all()?.to_scalar::<f32>()? as f64;
            }
            let norm = sq.sqrt();
            if norm > clip {
                let scale = clip / (norm + 1e-6);
                list = list
                    .iter()
                    .map(|g| g * scale)
                    .collect::<candle_core::Result<_>>()?;
            }
        }
        let lr = self.learning_rate(self.state.step);
        self.state.step += 1;
        let wd = self.state.options.weight_decay;
        self.opt
            .step(&self.params, &list, lr, self.state.step, wd)?;
        Ok(loss.to_scalar::<f32>()? as f64)
    }

    /// Answer-token loss over `examples` (weighted by answer tokens), without training.
    pub fn evaluate(&self, examples: &[Example]) -> Result<f64> {
        let (mut total, mut count) = (0.0, 0usize);
        for chunk in batches(examples, self.state.options.batch, 0, 0) {
            let batch: Vec<&Example> = chunk.iter().map(|&i| &examples[i]).collect();
            let n: usize = batch.iter().map(|e| e.answer_len()).sum();
            total += self.loss(&batch)?.to_scalar::<f32>()? as f64 * n as f64;
            count += n;
        }
        Ok(if count == 0 {
            f64::NAN
        } else {
            total / count as f64
        })
    }

    /// Trains the remaining epochs; after each, evaluates `val` and checkpoints into `out`.
    pub fn fit(&mut self, train: &[Example], val: &[Example], out: Option<&Path>) -> Result<()> {
        self.fit_until(train, val, out, usize::MAX)
    }

    /// [`Trainer::fit`], stopping once `stop` epochs are done (the schedule still spans all).
    pub fn fit_until(
        &mut self,
        train: &[Example],
        val: &[Example],
        out: Option<&Path>,
        stop: usize,
    ) -> Result<()> {
        if train.is_empty() {
            return Err(FinetuneError::Config(
                "no training example fits the context".into(),
            ));
        }
        let per_epoch = train.len().div_ceil(self.state.options.batch.max(1));
        self.state.total_steps = per_epoch * self.state.options.epochs;
        while self.state.epoch < self.state.options.epochs.min(stop) {
            let log = self.epoch(train, val)?;
            self.state.history.push(log);
            if let Some(dir) = out {
                self.save(dir)?;
            }
        }
        Ok(())
    }

    fn epoch(&mut self, train: &[Example], val: &[Example]) -> Result<EpochLog> {
        let o = self.state.options.clone();
        let plan = batches(train, o.batch, o.seed, self.state.epoch);
        let bar = progress_bar(plan.len(), self.state.epoch + 1, o.epochs, o.progress);
        let started = Instant::now();
        let (mut tokens, mut loss_sum) = (0usize, 0.0);
        for chunk in &plan {
            let batch: Vec<&Example> = chunk.iter().map(|&i| &train[i]).collect();
            let loss = self.step(&batch)?;
            loss_sum += loss;
            tokens += batch.iter().map(|e| e.tokens.len()).sum::<usize>();
            let rate = tokens as f64 / started.elapsed().as_secs_f64().max(1e-9);
            bar.set_message(format!("loss {loss:.4}  {rate:.0} tok/s"));
            bar.inc(1);
        }
        let tokens_per_s = tokens as f64 / started.elapsed().as_secs_f64().max(1e-9);
        let val_loss = if val.is_empty() {
            None
        } else {
            Some(self.evaluate(val)?)
        };
        bar.finish_and_clear();
        self.state.epoch += 1;
        Ok(EpochLog {
            epoch: self.state.epoch,
            steps: plan.len(),
            train_loss: loss_sum / plan.len().max(1) as f64,
            val_loss,
            tokens_per_s,
        })
    }

    /// Writes a checkpoint (model, tokenizer, optimizer, state) into `dir`.
    pub fn save(&self, dir: &Path) -> Result<()> {
        model::save(&self.loaded, dir)?;
        self.opt.save(&self.params, &dir.join(OPTIMIZER_FILE))?;
        crate::io::write_json(&dir.join(STATE_FILE), &self.state)
    }
}

fn progress_bar(len: usize, epoch: usize, epochs: usize, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    let style = ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style.progress_chars("=> "));
    bar.set_prefix(format!("epoch {epoch}/{epochs}"));
    bar
}
