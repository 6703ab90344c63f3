//! Training: loss on answer tokens only, AdamW with warmup then cosine decay, gradient
//! clipping, batches of similar length, evaluation points with learning curves, checkpoints
//! and resume.
//!
//! A run is counted in optimizer steps: `steps` in all when given, else `epochs` times the
//! batches of an epoch; the cosine schedule spans them. Batches are drawn epoch after epoch;
//! those of epoch `e` depend only on `(seed, e)` (and `curriculum`), so the n-th step of a run
//! trains on the same batch however often the run was stopped and resumed.
//!
//! Evaluation points come every `eval_every` steps (0: at each epoch end) and at the last
//! step: validation loss, the held-out gap ([`crate::heldout`]) and a row of `curve.csv` with
//! `curve.svg` redrawn ([`crate::curve`]). A checkpoint is written at every point and every
//! epoch end: the run directory of [`crate::model`] plus `optimizer.safetensors` (AdamW
//! moments) and `train_state.json` ([`TrainState`]: options, position as epochs done and steps
//! into the current one, running counters, history). Resuming continues from that position,
//! mid-epoch included, after dropping the curve rows past it: the weights and the curve come
//! out as those of a run that never stopped (bit-identical weights, tested).

use std::path::Path;
use std::time::Instant;

use candle_core::{Device, Tensor, Var};
use indicatif::{ProgressBar, ProgressStyle};
use schedlm_dataset::Record;
use serde::{Deserialize, Serialize};

use crate::adamw::AdamW;
use crate::curve::{self, CurvePoint};
use crate::data::{batches, plan, Example};
use crate::error::{FinetuneError, Result};
use crate::heldout::{self, HeldOut};
use crate::kernels::weighted_cross_entropy;
use crate::model::{self, sorted_vars, Loaded};
use crate::nn::cross_entropy;
use crate::predict::AnswerTables;

/// File of a checkpoint with the [`TrainState`] (JSON).
pub const STATE_FILE: &str = "train_state.json";
/// File of a checkpoint with the AdamW moments (`m.NAME` and `v.NAME` per variable, safetensors).
pub const OPTIMIZER_FILE: &str = "optimizer.safetensors";

/// How to train.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainOptions {
    /// Epochs of the run (ignored when `steps` is set).
    pub epochs: usize,
    /// Peak learning rate.
    pub lr: f64,
    /// The cosine decays to `lr * min_lr_ratio`.
    pub min_lr_ratio: f64,
    /// Records per batch.
    pub batch: usize,
    /// Steps of linear warmup.
    pub warmup: usize,
    /// Decoupled weight decay: each step multiplies every matrix by `1 - lr * weight_decay`;
    /// vectors (biases, norm weights) are not decayed.
    pub weight_decay: f64,
    /// Largest global gradient norm (0: no clipping).
    pub clip: f64,
    /// Seed of the batch order: the batches of epoch `e` depend only on (`seed`, `e`).
    pub seed: u64,
    /// Optimizer steps of the run; replaces `epochs` when set.
    #[serde(default)]
    pub steps: Option<usize>,
    /// Steps between evaluation points (0: at each epoch end).
    #[serde(default)]
    pub eval_every: usize,
    /// Validation records decoded greedily at each point for the held-out gap.
    #[serde(default = "default_eval_records")]
    pub eval_records: usize,
    /// Order each epoch's batches by queue length, short queues first.
    #[serde(default)]
    pub curriculum: bool,
    /// Loss weight of the answer tokens whose position leaves the prompt's listing (1: the
    /// plain loss; see [`crate::data::Example::weighted`]).
    #[serde(default = "one")]
    pub deviation_weight: f32,
    /// With `--targets values`: the temperature of the soft targets over the candidates'
    /// relative regrets ([`crate::data::Example::with_values`]); `None`: the label loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_temperature: Option<f64>,
    /// Show a progress bar.
    #[serde(skip)]
    pub progress: bool,
}

fn default_eval_records() -> usize {
    64
}

fn one() -> f32 {
    1.0
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
            steps: None,
            eval_every: 0,
            eval_records: default_eval_records(),
            deviation_weight: 1.0,
            value_temperature: None,
            curriculum: false,
            progress: false,
        }
    }
}

/// What one epoch did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochLog {
    /// Epochs finished with this one (1 for the first).
    pub epoch: usize,
    /// Batches of the epoch, one optimizer step each.
    pub steps: usize,
    /// Mean answer-token loss of the epoch's batches.
    pub train_loss: f64,
    /// Answer-token loss on the validation examples, when the epoch ended on an evaluation
    /// point (always with `eval_every` 0) and there are validation examples.
    pub val_loss: Option<f64>,
    /// Training tokens (prompt and answer) per second of training steps.
    pub tokens_per_s: f64,
}

/// Running totals, saved with each checkpoint so that a resumed run continues them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counters {
    /// Training tokens (prompt and answer) seen.
    pub tokens_seen: u64,
    /// Answer tokens seen (those the loss is taken on).
    pub answer_tokens_seen: u64,
    /// Seconds of the run up to the last point or checkpoint.
    pub elapsed_s: f64,
    /// Sum of batch losses and steps since the last evaluation point.
    pub point_loss: f64,
    /// Steps since the last evaluation point; the point's `train_loss` is `point_loss` divided by
    /// this.
    pub point_steps: usize,
    /// Sum of batch losses, tokens and step seconds of the current epoch.
    pub epoch_loss: f64,
    /// Training tokens (prompt and answer) of the current epoch's steps.
    pub epoch_tokens: u64,
    /// Seconds spent in the current epoch's training steps (evaluation not counted).
    pub epoch_seconds: f64,
}

/// Where training stands; saved with every checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainState {
    /// The options of the run (on resume, `epochs` may be replaced).
    pub options: TrainOptions,
    /// Epochs finished.
    pub epoch: usize,
    /// Steps taken in the current, unfinished epoch.
    #[serde(default)]
    pub epoch_step: usize,
    /// Optimizer steps taken.
    pub step: usize,
    /// Steps of the whole schedule.
    pub total_steps: usize,
    /// One log per finished epoch, in order.
    pub history: Vec<EpochLog>,
    /// Running totals of the run and of its current point and epoch.
    #[serde(default)]
    pub counters: Counters,
}

/// Where a call to [`Trainer::fit`] and its variants stops early.
#[derive(Debug, Clone, Copy)]
enum Stop {
    Never,
    /// After this many epochs (with their checkpoints).
    Epochs(usize),
    /// Before the step after this one, writing nothing more (as if killed).
    Step(usize),
}

impl Stop {
    fn reached(self, state: &TrainState) -> bool {
        match self {
            Stop::Never => false,
            Stop::Epochs(e) => state.epoch >= e,
            Stop::Step(s) => state.step >= s,
        }
    }
}

/// Seconds of a run: those before this session and this session's.
struct Clock {
    started: Instant,
    before: f64,
}

impl Clock {
    fn new(before: f64) -> Clock {
        Clock {
            started: Instant::now(),
            before,
        }
    }

    fn elapsed(&self) -> f64 {
        self.before + self.started.elapsed().as_secs_f64()
    }
}

/// A model being trained.
pub struct Trainer {
    /// The model being trained, with its variables and tokenizer.
    pub loaded: Loaded,
    params: Vec<(String, Var)>,
    opt: AdamW,
    /// Options, position and counters, saved as `train_state.json` with each checkpoint.
    pub state: TrainState,
    /// The evaluation points of this session, in order.
    pub points: Vec<CurvePoint>,
    device: Device,
    held_out: Vec<HeldOut>,
    tables: Option<AnswerTables>,
    clock: Clock,
}

/// The logits `model` gives at the flat `positions` of `input` [b, T] (the answer tokens'
/// predecessors of [`batch_tensors`]).
fn answer_logits(model: &model::Model, input: &Tensor, positions: &Tensor) -> Result<Tensor> {
    let hidden = model.hidden(input, None)?;
    let (b, t, w) = hidden.dims3()?;
    let picked = hidden.reshape((b * t, w))?.index_select(positions, 0)?;
    model.logits(&picked)
}

/// What [`batch_tensors`] gives.
type Batch = (Tensor, Tensor, Tensor, Vec<f32>);

/// Input ids [b, T], and for each answer token its target, flat position in [b * T] and loss
/// weight; an answer token with a soft target ([`Example::soft`]) gives one row per token of
/// it, at the same position, weighing its share.
fn batch_tensors(batch: &[&Example], device: &Device) -> Result<Batch> {
    let t = batch
        .iter()
        .map(|e| e.tokens.len() - 1)
        .max()
        .unwrap_or(1)
        .max(1);
    let mut input = vec![0u32; batch.len() * t];
    let (mut targets, mut positions, mut weights) = (Vec::new(), Vec::new(), Vec::new());
    for (i, e) in batch.iter().enumerate() {
        let n = e.tokens.len() - 1;
        input[i * t..i * t + n].copy_from_slice(&e.tokens[..n]);
        for j in e.prompt_len.saturating_sub(1)..n {
            // Token j + 1 is answer token j + 1 - prompt_len.
            let a = j + 1 - e.prompt_len;
            let weight = e.weights.get(a).copied().unwrap_or(1.0);
            match e.soft.get(a) {
                // A soft target: one row per token it holds, weighing its share.
                Some(soft) if !soft.is_empty() => {
                    for &(token, share) in soft {
                        targets.push(token);
                        positions.push((i * t + j) as u32);
                        weights.push(weight * share);
                    }
                }
                _ => {
                    targets.push(e.tokens[j + 1]);
                    positions.push((i * t + j) as u32);
                    weights.push(weight);
                }
            }
        }
    }
    Ok((
        Tensor::from_vec(input, (batch.len(), t), device)?,
        Tensor::new(targets, device)?,
        Tensor::new(positions, device)?,
        weights,
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
            epoch_step: 0,
            step: 0,
            total_steps: 0,
            history: Vec::new(),
            counters: Counters::default(),
        };
        Ok(Trainer::assemble(loaded, params, opt, state, device))
    }

    fn assemble(
        loaded: Loaded,
        params: Vec<(String, Var)>,
        opt: AdamW,
        state: TrainState,
        device: &Device,
    ) -> Trainer {
        let clock = Clock::new(state.counters.elapsed_s);
        Trainer {
            loaded,
            params,
            opt,
            state,
            points: Vec::new(),
            device: device.clone(),
            held_out: Vec::new(),
            tables: None,
            clock,
        }
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
        Ok(Trainer::assemble(loaded, params, opt, state, device))
    }

    /// Sets the records of the held-out gap: the first `eval_records` of `records` (in
    /// order) that fit the context. Returns how many were taken. Without any, the curve's
    /// gap columns stay empty.
    pub fn set_held_out(&mut self, records: &[Record]) -> Result<usize> {
        let (context, count) = (self.loaded.model.context(), self.state.options.eval_records);
        self.held_out = heldout::held_out(records, &self.loaded, context, count)?;
        if !self.held_out.is_empty() && self.tables.is_none() {
            self.tables = Some(AnswerTables::new(&self.loaded.tokenizer));
        }
        Ok(self.held_out.len())
    }

    /// Mean loss over the answer tokens of a batch; a weighted mean when examples weigh some
    /// tokens more ([`Example::weights`]).
    pub fn loss(&self, batch: &[&Example]) -> Result<Tensor> {
        let (input, targets, positions, weights) = batch_tensors(batch, &self.device)?;
        let logits = answer_logits(&self.loaded.model, &input, &positions)?;
        if weights.iter().all(|&w| w == 1.0) {
            return cross_entropy(&logits, &targets);
        }
        let norm: f64 = weights.iter().map(|&w| w as f64).sum();
        weighted_cross_entropy(&logits, &targets, &weights, norm.max(1e-9))
    }

    /// A policy-gradient loss on a batch whose answer tokens weigh their advantages
    /// ([`Example::weights`]): `sum(weight * nll) / norm`, plus `kl` times the KL divergence of
    /// the model's next-token distribution from `reference`'s at every answer token (summed, over
    /// the same `norm`). The reference model is only read; no gradient flows into it. Returns the
    /// loss and the divergence term alone (before the factor `kl`; 0 without a reference).
    pub fn policy_loss(
        &self,
        batch: &[&Example],
        reference: Option<&Loaded>,
        kl: f64,
        norm: f64,
    ) -> Result<(Tensor, f64)> {
        let (input, targets, positions, weights) = batch_tensors(batch, &self.device)?;
        let logits = answer_logits(&self.loaded.model, &input, &positions)?;
        let pg = weighted_cross_entropy(&logits, &targets, &weights, norm)?;
        let Some(reference) = reference.filter(|_| kl > 0.0) else {
            return Ok((pg, 0.0));
        };
        let reference = answer_logits(&reference.model, &input, &positions)?.detach();
        let logp = candle_nn::ops::log_softmax(&logits, candle_core::D::Minus1)?;
        let logq = candle_nn::ops::log_softmax(&reference, candle_core::D::Minus1)?;
        let divergence = ((logp.exp()? * (&logp - &logq)?)?.sum_all()? / norm)?;
        let value = divergence.to_scalar::<f32>()? as f64;
        Ok(((pg + (divergence * kl)?)?, value))
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
        self.step_accumulated(1, |t, _| t.loss(batch))
    }

    /// One optimizer step on the sum of `parts` losses, `loss_of(self, k)` for k in `0..parts`, each
    /// differentiated as soon as it is made (so only one part's activations are held at a
    /// time) and their gradients added; returns the summed loss. With one part, exactly
    /// [`Trainer::step`].
    pub fn step_accumulated(
        &mut self,
        parts: usize,
        mut loss_of: impl FnMut(&Trainer, usize) -> Result<Tensor>,
    ) -> Result<f64> {
        let mut list: Vec<Tensor> = Vec::with_capacity(self.params.len());
        let mut total = 0.0;
        for k in 0..parts.max(1) {
            let loss = loss_of(self, k)?;
            total += loss.to_scalar::<f32>()? as f64;
            let grads = loss.backward()?;
            for (i, (name, var)) in self.params.iter().enumerate() {
                let g = match grads.get(var.as_tensor()) {
                    Some(g) => g.clone(),
                    None => {
                        return Err(FinetuneError::Model(format!("no gradient for `{name}`")));
                    }
                };
                if k == 0 {
                    list.push(g);
                } else {
                    list[i] = (&list[i] + &g)?;
                }
            }
        }
        // Clipping scales every gradient by one factor, applied inside the optimizer's pass.
        let clip = self.state.options.clip;
        let mut grad_scale = 1.0;
        if clip > 0.0 {
            let mut sq = 0.0;
            for g in &list {
                sq += crate::kernels::sum_of_squares(g)?;
            }
            let norm = sq.sqrt();
            if norm > clip {
                grad_scale = clip / (norm + 1e-6);
            }
        }
        let lr = self.learning_rate(self.state.step);
        self.state.step += 1;
        let wd = self.state.options.weight_decay;
        self.opt
            .step(&self.params, &list, grad_scale, (lr, self.state.step, wd))?;
        Ok(total)
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

    /// Whether the run is done: `steps` steps taken, or else `epochs` epochs.
    pub fn finished(&self) -> bool {
        match self.state.options.steps {
            Some(s) => self.state.step >= s,
            None => self.state.epoch >= self.state.options.epochs,
        }
    }

    /// Trains the rest of the run, evaluating `val` (and the held-out records) at each point
    /// and checkpointing into `out`.
    pub fn fit(&mut self, train: &[Example], val: &[Example], out: Option<&Path>) -> Result<()> {
        self.fit_to(train, val, out, Stop::Never)
    }

    /// [`Trainer::fit`], stopping once `stop` epochs are done (the schedule still spans all).
    pub fn fit_until(
        &mut self,
        train: &[Example],
        val: &[Example],
        out: Option<&Path>,
        stop: usize,
    ) -> Result<()> {
        self.fit_to(train, val, out, Stop::Epochs(stop))
    }

    /// [`Trainer::fit`], stopping after step `stop` without writing anything more, as a
    /// run killed there would (a resume continues from the last checkpoint before it).
    pub fn fit_until_step(
        &mut self,
        train: &[Example],
        val: &[Example],
        out: Option<&Path>,
        stop: usize,
    ) -> Result<()> {
        self.fit_to(train, val, out, Stop::Step(stop))
    }

    fn fit_to(
        &mut self,
        train: &[Example],
        val: &[Example],
        out: Option<&Path>,
        stop: Stop,
    ) -> Result<()> {
        if train.is_empty() {
            return Err(FinetuneError::Config(
                "no training example fits the context".into(),
            ));
        }
        let o = self.state.options.clone();
        let per_epoch = train.len().div_ceil(o.batch.max(1));
        self.state.total_steps = o.steps.unwrap_or(per_epoch * o.epochs);
        if let Some(dir) = out {
            curve::truncate(dir, self.state.step)?;
        }
        self.clock = Clock::new(self.state.counters.elapsed_s);
        let bar = progress_bar(self.state.total_steps, self.state.step, o.progress);
        while !self.finished() && !stop.reached(&self.state) {
            let batches = plan(train, o.batch, o.seed, self.state.epoch, o.curriculum);
            self.run_epoch(&batches, train, val, out, stop, &bar)?;
        }
        bar.finish_and_clear();
        Ok(())
    }

    /// Takes the steps left in the current epoch (until the run is done or `stop`).
    fn run_epoch(
        &mut self,
        batches: &[Vec<usize>],
        train: &[Example],
        val: &[Example],
        out: Option<&Path>,
        stop: Stop,
        bar: &ProgressBar,
    ) -> Result<()> {
        let start = self.state.epoch_step.min(batches.len());
        for chunk in &batches[start..] {
            if self.finished() || stop.reached(&self.state) {
                break;
            }
            let batch: Vec<&Example> = chunk.iter().map(|&i| &train[i]).collect();
            let loss = self.train_step(&batch)?;
            let c = &self.state.counters;
            let rate = c.epoch_tokens as f64 / c.epoch_seconds.max(1e-9);
            bar.set_position(self.state.step as u64);
            bar.set_message(format!("loss {loss:.4}  {rate:.0} tok/s"));
            if let Some(p) = self.after_step(batches.len(), val, out)? {
                bar.println(p.line());
            }
        }
        Ok(())
    }

    /// [`Trainer::step`] with the run's counters.
    fn train_step(&mut self, batch: &[&Example]) -> Result<f64> {
        let started = Instant::now();
        let loss = self.step(batch)?;
        let tokens: u64 = batch.iter().map(|e| e.tokens.len() as u64).sum();
        let answer: u64 = batch.iter().map(|e| e.answer_len() as u64).sum();
        let c = &mut self.state.counters;
        c.tokens_seen += tokens;
        c.answer_tokens_seen += answer;
        c.point_loss += loss;
        c.point_steps += 1;
        c.epoch_loss += loss;
        c.epoch_tokens += tokens;
        c.epoch_seconds += started.elapsed().as_secs_f64();
        self.state.epoch_step += 1;
        Ok(loss)
    }

    /// After a step: the epoch's end, an evaluation point, a checkpoint, as due.
    fn after_step(
        &mut self,
        epoch_len: usize,
        val: &[Example],
        out: Option<&Path>,
    ) -> Result<Option<CurvePoint>> {
        let every = self.state.options.eval_every;
        let epoch_end = self.state.epoch_step >= epoch_len;
        let epochs = self.state.epoch as f64 + self.state.epoch_step as f64 / epoch_len as f64;
        if epoch_end {
            self.state.epoch += 1;
            self.state.epoch_step = 0;
        }
        let due = if every == 0 {
            epoch_end
        } else {
            self.state.step.is_multiple_of(every)
        };
        let point = if due || self.finished() {
            Some(self.point(epochs, val, out)?)
        } else {
            None
        };
        if epoch_end {
            self.close_epoch(epoch_len, point.as_ref().and_then(|p| p.val_loss));
        }
        if let (Some(dir), true) = (out, point.is_some() || epoch_end) {
            self.save(dir)?;
        }
        Ok(point)
    }

    /// Measures an evaluation point, appends it to the curve files in `out` and returns it.
    fn point(&mut self, epochs: f64, val: &[Example], out: Option<&Path>) -> Result<CurvePoint> {
        let elapsed_s = self.clock.elapsed();
        let val_loss = if val.is_empty() {
            None
        } else {
            Some(self.evaluate(val)?)
        };
        let gap = match &self.tables {
            Some(t) => heldout::evaluate(&self.loaded, t, &self.held_out, &self.device)?,
            None => None,
        };
        let c = &mut self.state.counters;
        let point = CurvePoint {
            step: self.state.step,
            epoch: epochs,
            tokens_seen: c.tokens_seen,
            answer_tokens_seen: c.answer_tokens_seen,
            elapsed_s,
            train_loss: c.point_loss / c.point_steps.max(1) as f64,
            val_loss,
            val_gap_mean: gap.and_then(|g| g.gap_mean),
            val_valid_share: gap.map(|g| g.valid_share),
            val_optimal_share: gap.map(|g| g.optimal_share),
        };
        (c.point_loss, c.point_steps) = (0.0, 0);
        if let Some(dir) = out {
            curve::append(dir, &point)?;
            curve::plot(dir, &run_title(dir), &curve::read(dir)?)?;
        }
        self.points.push(point.clone());
        Ok(point)
    }

    /// Logs the epoch that just ended and resets its counters.
    fn close_epoch(&mut self, steps: usize, val_loss: Option<f64>) {
        let c = &mut self.state.counters;
        self.state.history.push(EpochLog {
            epoch: self.state.epoch,
            steps,
            train_loss: c.epoch_loss / steps.max(1) as f64,
            val_loss,
            tokens_per_s: c.epoch_tokens as f64 / c.epoch_seconds.max(1e-9),
        });
        (c.epoch_loss, c.epoch_tokens, c.epoch_seconds) = (0.0, 0, 0.0);
    }

    /// Writes a checkpoint (model, tokenizer, optimizer, state) into `dir`.
    pub fn save(&self, dir: &Path) -> Result<()> {
        model::save(&self.loaded, dir)?;
        self.opt.save(&self.params, &dir.join(OPTIMIZER_FILE))?;
        let mut state = self.state.clone();
        state.counters.elapsed_s = self.clock.elapsed();
        crate::io::write_json(&dir.join(STATE_FILE), &state)
    }
}

/// The title of a run's curve: its directory.
fn run_title(dir: &Path) -> String {
    format!("schedlm finetune: {}", dir.display())
}

fn progress_bar(len: usize, position: usize, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar =
        ProgressBar::with_draw_target(Some(len as u64), schedlm_model::progress::draw_target());
    let style = ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style.progress_chars("=> "));
    bar.set_prefix("step");
    bar.set_position(position as u64);
    bar
}
