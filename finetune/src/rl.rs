//! Reinforcement learning with the dispatcher as the reward (GRPO-style), from a supervised
//! run.
//!
//! Each step takes `prompts` training instances (in an order shuffled per pass by the seed) and
//! samples `group` answers to each at `temperature`, constrained to valid orders: a step
//! model ([`crate::rollout`]) samples every decision of a rollout, an order model its whole
//! answer. Each answer is dispatched and scored with the one reward of the project
//! ([`schedlm_dataset::reward`]: the best rule per instance's value over the answer's, less
//! one; 0 for the ranking itself). Within a group the advantage of an answer is its reward less
//! the group's mean, over the group's standard deviation (a group whose answers all score the
//! same teaches nothing and is left out). The loss is the policy gradient, every answer token
//! of an answer weighted by its advantage, plus `kl` times the KL divergence of the model's
//! next-token distribution from the frozen supervised model's at those tokens; both are summed
//! over the step's answer tokens and divided by their count. One optimizer step (AdamW, the
//! supervised run's clipping and decay) per RL step, gradients accumulated over micro-batches.
//!
//! Every `eval_every` steps (and at the last) the model answers the held-out instances
//! greedily; `rl_curve.csv` gets a row: the step, seconds, the sampled answers' mean reward and
//! its spread, the KL term, the held-out mean reward and wins, ties and losses against the best
//! rule per instance; `rl_curve.svg` draws the two rewards. A checkpoint (the run directory,
//! `optimizer.safetensors`, `train_state.json`, `rl_state.json`) is written at each point;
//! `resume` continues from it.
//! Sampling streams depend only on (seed, step, instance, answer), so a resumed run takes the
//! same steps as one that never stopped.

use std::cmp::Ordering::{Equal, Greater, Less};
use std::path::{Path, PathBuf};
use std::time::Instant;

use candle_core::Device;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use schedlm_dataset::reward::{score_order, score_text, Scored};
use schedlm_dataset::{prompt_ids, render, Record, RecordKind, Template};
use schedlm_model::Problem;
use serde::{Deserialize, Serialize};

use crate::constrain::OrderConstraint;
use crate::data::Example;
use crate::decode::{generate, prime, Chooser, DecodeOptions};
use crate::error::{FinetuneError, Result};
use crate::model::{self, Loaded};
use crate::predict::AnswerTables;
use crate::rollout::rollout;
use crate::train::{TrainOptions, Trainer, STATE_FILE};

/// The RL state file of a run directory.
pub const RL_STATE_FILE: &str = "rl_state.json";
/// The RL curve of a run directory.
pub const RL_CURVE: &str = "rl_curve.csv";
/// Its header.
pub const RL_HEADER: &str = "step,elapsed_s,sampled_reward,sampled_reward_std,kl,val_reward,\
val_wins,val_ties,val_losses";

/// How to reinforce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RlOptions {
    /// RL steps (one optimizer step each).
    pub steps: usize,
    /// Instances per step.
    pub prompts: usize,
    /// Sampled answers per instance.
    pub group: usize,
    /// Sampling temperature.
    pub temperature: f32,
    /// Weight of the KL divergence from the supervised model.
    pub kl: f64,
    /// Learning rate (constant after a warmup of a tenth of the steps, at most 20).
    pub lr: f64,
    /// Decisions (prompt and answer) per micro-batch of the gradient.
    pub micro: usize,
    /// Seed of the instance order and of every sample.
    pub seed: u64,
    /// Steps between held-out points (0: only at the end).
    pub eval_every: usize,
    /// Held-out instances answered greedily at each point.
    pub eval_records: usize,
}

impl Default for RlOptions {
    fn default() -> Self {
        RlOptions {
            steps: 100,
            prompts: 4,
            group: 8,
            temperature: 1.0,
            kl: 0.05,
            lr: 5e-5,
            micro: 64,
            seed: 1,
            eval_every: 10,
            eval_records: 64,
        }
    }
}

/// What a run has done, saved with each checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RlState {
    /// The options of the run.
    pub options: RlOptions,
    /// The supervised run it started from.
    pub init: PathBuf,
    /// RL steps taken.
    pub step: usize,
    /// Seconds of RL so far.
    pub elapsed_s: f64,
    /// Answers sampled so far.
    pub samples: u64,
}

/// One instance to answer: its record (instance, objective, variant, template) and problem.
pub struct Question {
    record: Record,
    problem: Problem,
}

impl Question {
    /// The instance of `record` (the first step of a step record's instance).
    pub fn new(record: Record) -> Result<Question> {
        let problem = Problem::new(&record.instance)
            .map_err(|e| FinetuneError::Config(format!("record {}: {e}", record.id)))?;
        Ok(Question { record, problem })
    }
}

/// One row of `rl_curve.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct RlPoint {
    /// RL steps taken.
    pub step: usize,
    /// Seconds of RL so far.
    pub elapsed_s: f64,
    /// Mean reward of the answers sampled since the previous point.
    pub sampled_reward: f64,
    /// Their standard deviation.
    pub sampled_reward_std: f64,
    /// Mean KL term (divergence per answer token) since the previous point.
    pub kl: f64,
    /// Mean reward of the greedy answers to the held-out instances.
    pub val_reward: f64,
    /// Held-out instances where the greedy answer beats the best rule per instance.
    pub val_wins: usize,
    /// ... ties it (1e-9 relative).
    pub val_ties: usize,
    /// ... loses to it.
    pub val_losses: usize,
}

impl RlPoint {
    /// The CSV row.
    pub fn row(&self) -> String {
        format!(
            "{},{:.1},{:.6},{:.6},{:.6},{:.6},{},{},{}",
            self.step,
            self.elapsed_s,
            self.sampled_reward,
            self.sampled_reward_std,
            self.kl,
            self.val_reward,
            self.val_wins,
            self.val_ties,
            self.val_losses
        )
    }
}

/// A reinforcement-learning run: the policy (with its optimizer), the frozen reference.
pub struct Reinforce {
    trainer: Trainer,
    reference: Loaded,
    tables: AnswerTables,
    /// Options, position and counters.
    pub state: RlState,
    device: Device,
}

/// One sampled answer: its question, its decisions (prompt and answer tokens) and its score.
struct Sample {
    question: usize,
    decisions: Vec<(Vec<u32>, Vec<u32>)>,
    score: Scored,
}

impl Reinforce {
    /// Starts from the supervised run in `init`.
    pub fn start(init: &Path, options: RlOptions, device: &Device) -> Result<Reinforce> {
        let loaded = model::load(init, device)?;
        let reference = model::load(init, device)?;
        let train = TrainOptions {
            lr: options.lr,
            min_lr_ratio: 1.0,
            warmup: (options.steps / 10).clamp(1, 20),
            steps: Some(options.steps),
            eval_records: 0,
            ..TrainOptions::default()
        };
        let mut trainer = Trainer::new(loaded, train, device)?;
        trainer.state.total_steps = options.steps;
        let tables = AnswerTables::new(&trainer.loaded.tokenizer);
        Ok(Reinforce {
            trainer,
            reference,
            tables,
            state: RlState {
                options,
                init: init.to_path_buf(),
                step: 0,
                elapsed_s: 0.0,
                samples: 0,
            },
            device: device.clone(),
        })
    }

    /// Resumes the RL run checkpointed in `dir`.
    pub fn resume(dir: &Path, device: &Device) -> Result<Reinforce> {
        let state: RlState = crate::io::read_json(&dir.join(RL_STATE_FILE))?;
        let mut trainer = Trainer::resume(dir, None, device)?;
        trainer.state.total_steps = state.options.steps;
        let reference = model::load(&state.init, device)?;
        let tables = AnswerTables::new(&trainer.loaded.tokenizer);
        Ok(Reinforce {
            trainer,
            reference,
            tables,
            state,
            device: device.clone(),
        })
    }

    /// The policy being trained.
    pub fn loaded(&self) -> &Loaded {
        &self.trainer.loaded
    }

    /// Runs the remaining steps on `train`, with held-out points on `val`, checkpointing into
    /// `out`; `on_point` gets each point as it is made.
    pub fn run(
        &mut self,
        train: &[Question],
        val: &[Question],
        out: &Path,
        on_point: &mut dyn FnMut(&RlPoint),
    ) -> Result<()> {
        if train.is_empty() {
            return Err(FinetuneError::Config("no training instance for RL".into()));
        }
        crate::io::create_dir(out)?;
        truncate_curve(out, self.state.step)?;
        let (mut rewards, mut kls) = (Vec::new(), Vec::new());
        let started = Instant::now();
        let base = self.state.elapsed_s;
        while self.state.step < self.state.options.steps {
            let (step_rewards, kl) = self.step(train)?;
            rewards.extend(step_rewards);
            kls.push(kl);
            self.state.step += 1;
            self.state.elapsed_s = base + started.elapsed().as_secs_f64();
            let every = self.state.options.eval_every;
            let last = self.state.step == self.state.options.steps;
            if last || (every > 0 && self.state.step.is_multiple_of(every)) {
                let point = self.point(val, &rewards, &kls)?;
                append_curve(out, &point)?;
                plot_curve(out)?;
                on_point(&point);
                self.save(out)?;
                rewards.clear();
                kls.clear();
            }
        }
        // A resume with no step left still (re)draws the curve of the run it finds.
        plot_curve(out)
    }

    /// Writes the checkpoint: the run directory, optimizer, `train_state.json`, `rl_state.json`.
    pub fn save(&self, dir: &Path) -> Result<()> {
        self.trainer.save(dir)?;
        crate::io::write_json(&dir.join(RL_STATE_FILE), &self.state)
    }

    /// The instances of step `step`: a pass over `n` instances shuffled by (seed, pass).
    fn pick(&self, n: usize) -> Vec<usize> {
        let o = &self.state.options;
        (0..o.prompts)
            .map(|k| {
                let flat = self.state.step * o.prompts + k;
                let (pass, at) = (flat / n, flat % n);
                let mut order: Vec<usize> = (0..n).collect();
                let mut rng = ChaCha8Rng::seed_from_u64(o.seed ^ 0x5EED_0000 ^ pass as u64);
                order.shuffle(&mut rng);
                order[at]
            })
            .collect()
    }

    /// One RL step: sample, score, weigh, one optimizer step. Returns the sampled rewards and
    /// the mean KL term per answer token.
    fn step(&mut self, train: &[Question]) -> Result<(Vec<f64>, f64)> {
        let o = self.state.options.clone();
        let picked = self.pick(train.len());
        // Answer g to the k-th instance of the step, instance q; groups stay consecutive.
        let jobs: Vec<(usize, usize, usize)> = picked
            .iter()
            .enumerate()
            .flat_map(|(k, &q)| (0..o.group).map(move |g| (k, q, g)))
            .collect();
        let samples: Vec<Sample> = jobs
            .par_iter()
            .map(|&(k, q, g)| {
                let seed = stream(o.seed, self.state.step, k, g);
                sample(self, &train[q], q, o.temperature, seed)
            })
            .collect::<Result<_>>()?;
        self.state.samples += samples.len() as u64;
        let rewards: Vec<f64> = samples.iter().map(|s| s.score.reward).collect();
        let advantages = advantages(&rewards, o.group);
        let mut examples = Vec::new();
        for (s, &a) in samples.iter().zip(&advantages) {
            if a == 0.0 {
                continue;
            }
            let n = train[s.question].problem.jobs();
            for (prompt, answer) in &s.decisions {
                let mut tokens = prompt.clone();
                tokens.extend_from_slice(answer);
                let mut e = Example::from_tokens(tokens, prompt.len(), n);
                e.weights = vec![a as f32; answer.len()];
                examples.push(e);
            }
        }
        if examples.is_empty() {
            return Ok((rewards, 0.0));
        }
        let norm: f64 = examples.iter().map(|e| e.answer_len() as f64).sum();
        let micro = o.micro.max(1);
        let parts = examples.len().div_ceil(micro);
        let reference = &self.reference;
        let mut kl_sum = 0.0;
        self.trainer.step_accumulated(parts, |t, k| {
            let chunk: Vec<&Example> = examples[k * micro..((k + 1) * micro).min(examples.len())]
                .iter()
                .collect();
            let (loss, divergence) = t.policy_loss(&chunk, Some(reference), o.kl, norm)?;
            kl_sum += divergence;
            Ok(loss)
        })?;
        Ok((rewards, kl_sum))
    }

    /// Greedy answers to the held-out instances, scored.
    fn point(&self, val: &[Question], rewards: &[f64], kls: &[f64]) -> Result<RlPoint> {
        let (mean, std) = mean_std(rewards);
        let scores: Vec<Scored> = val
            .par_iter()
            .take(self.state.options.eval_records)
            .map(|q| greedy(self, q))
            .collect::<Result<_>>()?;
        let count = |o: std::cmp::Ordering| scores.iter().filter(|s| s.against_brpi() == o).count();
        let (wins, ties, losses) = (count(Less), count(Equal), count(Greater));
        let m = scores.len().max(1) as f64;
        Ok(RlPoint {
            step: self.state.step,
            elapsed_s: self.state.elapsed_s,
            sampled_reward: mean,
            sampled_reward_std: std,
            kl: kls.iter().sum::<f64>() / kls.len().max(1) as f64,
            val_reward: scores.iter().map(|s| s.reward).sum::<f64>() / m,
            val_wins: wins,
            val_ties: ties,
            val_losses: losses,
        })
    }
}

/// The sampling stream of answer `g` to the `k`-th instance of step `step`.
fn stream(seed: u64, step: usize, k: usize, g: usize) -> u64 {
    let mut h = seed ^ 0x9E37_79B9_7F4A_7C15;
    for x in [step as u64, k as u64, g as u64] {
        h = (h ^ x).wrapping_mul(0x100_0000_01B3).rotate_left(29);
    }
    h
}

/// Group-relative advantages: per consecutive group of `group` rewards, the reward less the
/// group's mean over the group's standard deviation (0 for a group whose rewards are all equal).
pub fn advantages(rewards: &[f64], group: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(rewards.len());
    for g in rewards.chunks(group.max(1)) {
        let (mean, std) = mean_std(g);
        out.extend(
            g.iter()
                .map(|r| if std > 1e-12 { (r - mean) / std } else { 0.0 }),
        );
    }
    out
}

/// Mean and (population) standard deviation of `values`; zeros when there are none.
fn mean_std(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// The decoding options of a question (its variant).
fn options_for(q: &Question, constrained: bool) -> DecodeOptions {
    DecodeOptions {
        constrained,
        variant: q.record.variant,
        ..DecodeOptions::default()
    }
}

/// One answer to `q`, chosen by `chooser`: its order, decisions and score.
fn answer(r: &Reinforce, q: &Question, index: usize, chooser: &mut Chooser) -> Result<Sample> {
    let loaded = &r.trainer.loaded;
    let rec = &q.record;
    let (objective, variant) = (rec.objective, rec.variant);
    if loaded.task.records == RecordKind::Steps {
        let roll = rollout(
            loaded,
            &r.tables,
            &rec.instance,
            objective,
            &options_for(q, true),
            chooser,
            &r.device,
        )?;
        let score = score_order(&q.problem, &roll.order, objective, variant);
        return Ok(Sample {
            question: index,
            decisions: roll.decisions,
            score,
        });
    }
    let template = rec.template().unwrap_or(Template::CompactV2);
    let rendered = render(&rec.instance, objective, variant, template);
    let tok = &loaded.tokenizer;
    let prompt = tok.encode_prompt(&rendered.system, &rendered.user)?;
    let primed = prime(&loaded.model, &prompt, &r.device)?;
    let constraint = Some(OrderConstraint::new(rec.instance.queue.len()));
    let tokens = generate(
        &loaded.model,
        &primed,
        &r.tables.vocab(),
        constraint,
        chooser,
        &options_for(q, true),
        &r.device,
    )?;
    let text = tok.decode_clean(&tokens)?;
    let ids = prompt_ids(&rec.instance, objective, variant, template);
    let score = score_text(&q.problem, &text, &ids, &rec.instance, objective, variant);
    let mut answer_tokens = tokens;
    answer_tokens.push(r.tables.end);
    Ok(Sample {
        question: index,
        decisions: vec![(prompt, answer_tokens)],
        score,
    })
}

fn sample(
    r: &Reinforce,
    q: &Question,
    index: usize,
    temperature: f32,
    seed: u64,
) -> Result<Sample> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut chooser = Chooser::Sample {
        temperature,
        top_k: None,
        rng: &mut rng,
    };
    answer(r, q, index, &mut chooser)
}

fn greedy(r: &Reinforce, q: &Question) -> Result<Scored> {
    Ok(answer(r, q, 0, &mut Chooser::Greedy)?.score)
}

/// Keeps the rows of `rl_curve.csv` up to step `step` (a resumed run rewrites the rest).
fn truncate_curve(dir: &Path, step: usize) -> Result<()> {
    let path = dir.join(RL_CURVE);
    if !path.exists() {
        return Ok(());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| FinetuneError::io(&path, e))?;
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.split(',')
                .next()
                .and_then(|s| s.parse::<usize>().ok())
                .is_none_or(|s| s <= step)
        })
        .collect();
    std::fs::write(&path, kept.join("\n") + "\n").map_err(|e| FinetuneError::io(&path, e))
}

/// The RL curve drawn from `rl_curve.csv`: the sampled answers' mean reward and the held-out
/// greedy reward against the step.
pub const RL_CURVE_SVG: &str = "rl_curve.svg";

/// Redraws `rl_curve.svg` from `rl_curve.csv`.
fn plot_curve(dir: &Path) -> Result<()> {
    use plotters::prelude::*;
    let path = dir.join(RL_CURVE);
    let text = std::fs::read_to_string(&path).map_err(|e| FinetuneError::io(&path, e))?;
    let rows: Vec<Vec<f64>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').filter_map(|c| c.parse().ok()).collect())
        .filter(|r: &Vec<f64>| r.len() >= 6)
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    let series = [
        (2usize, "sampled reward (mean)"),
        (5, "held-out reward (greedy)"),
    ];
    let all = || rows.iter().flat_map(|r| [r[2], r[5]]);
    let (lo, hi) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    let pad = ((hi - lo) * 0.1).max(1e-4);
    let steps = rows.last().map_or(1.0, |r| r[0]).max(1.0);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 380)).into_drawing_area();
        let draw = || -> std::result::Result<(), Box<dyn std::error::Error>> {
            root.fill(&WHITE)?;
            let mut c = ChartBuilder::on(&root)
                .caption(format!("schedlm rl: {}", dir.display()), ("sans-serif", 16))
                .margin(10)
                .x_label_area_size(36)
                .y_label_area_size(60)
                .build_cartesian_2d(0.0..steps, (lo - pad)..(hi + pad))?;
            c.configure_mesh()
                .x_desc("RL step")
                .y_desc("reward (best rule per instance = 0)")
                .draw()?;
            for (k, (column, name)) in series.iter().enumerate() {
                let color = [RGBColor(31, 119, 180), RGBColor(255, 127, 14)][k];
                c.draw_series(LineSeries::new(
                    rows.iter().map(|r| (r[0], r[*column])),
                    color.stroke_width(2),
                ))?
                .label(*name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
            }
            c.configure_series_labels().background_style(WHITE).draw()?;
            root.present()?;
            Ok(())
        };
        draw().map_err(|e| FinetuneError::Model(format!("{}: plot: {e}", path.display())))?;
    }
    let out = dir.join(RL_CURVE_SVG);
    std::fs::write(&out, svg).map_err(|e| FinetuneError::io(&out, e))
}

fn append_curve(dir: &Path, point: &RlPoint) -> Result<()> {
    crate::curve::append_row(&dir.join(RL_CURVE), RL_HEADER, &point.row())
}

/// Whether `dir` holds an RL checkpoint to resume.
pub fn can_resume(dir: &Path) -> bool {
    dir.join(RL_STATE_FILE).is_file() && dir.join(STATE_FILE).is_file()
}

/// The questions of the records file at `path`, one per instance: only the first step of a
/// step record's instance is kept as the file is read (a step file holds about 17 records per
/// instance).
pub fn read_questions(path: &Path) -> Result<Vec<Question>> {
    let bad = |e: schedlm_dataset::BuildError| FinetuneError::Records(e.to_string());
    let mut firsts = Vec::new();
    for item in schedlm_dataset::read_records(path).map_err(bad)? {
        let (_, record) = item.map_err(bad)?;
        if record.is_first_step() {
            firsts.push(record);
        }
    }
    questions(firsts)
}

/// The questions of a records file: one per instance (the first step of step records).
pub fn questions(records: Vec<Record>) -> Result<Vec<Question>> {
    records
        .into_iter()
        .filter(Record::is_first_step)
        .map(Question::new)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advantages_are_group_relative() {
        let a = advantages(&[1.0, 3.0, 2.0, 2.0], 2);
        assert_eq!(a, vec![-1.0, 1.0, 0.0, 0.0]);
        assert_eq!(advantages(&[0.5; 3], 3), vec![0.0; 3]);
    }

    #[test]
    fn streams_differ_by_every_coordinate() {
        let s = stream(1, 2, 3, 4);
        assert_ne!(s, stream(1, 2, 3, 5));
        assert_ne!(s, stream(1, 2, 4, 4));
        assert_ne!(s, stream(1, 3, 3, 4));
        assert_ne!(s, stream(2, 2, 3, 4));
        assert_eq!(s, stream(1, 2, 3, 4));
    }
}
