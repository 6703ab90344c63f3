//! Fixed-shape speed measurements of the from-scratch GPT, the library side of `schedlm bench
//! train`: a training step on random tokens with the loss on every token (the workload of
//! `benches/torch_gpt.py`, so that the two figures compare the same arithmetic), and
//! constrained greedy decoding of whole queue orders with the key/value cache.
//!
//! [`TrainBench`] does the work of one step; [`candle_train`] times steps of it on wall and CPU
//! clocks after two warm-up steps, [`TorchReference`] runs the PyTorch script on the same
//! shape, [`decode_rate`] times decisions, and [`table_header`] and [`table_row`] print them.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use candle_core::Device;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use schedlm_dataset::testing::{compact_options, quick_solve, solved_records};
use schedlm_dataset::{RecordOptions, Template};
use schedlm_generator::{Config, Family};
use schedlm_model::cpu::cpu_ms;
use schedlm_model::Objective;
use serde::Deserialize;

use crate::data::Example;
use crate::decode::DecodeOptions;
use crate::error::{FinetuneError, Result};
use crate::gpt::GptConfig;
use crate::model::{build, ModelSpec};
use crate::predict::Predictor;
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

/// One timed run: tokens, wall and CPU seconds.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Timing {
    /// Tokens trained on.
    pub tokens: usize,
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// CPU seconds of the process.
    pub cpu_s: f64,
}

impl Timing {
    /// Tokens per wall-clock second.
    pub fn per_s(&self) -> f64 {
        self.tokens as f64 / self.wall_s
    }

    /// Tokens per CPU second.
    pub fn per_cpu_s(&self) -> f64 {
        self.tokens as f64 / self.cpu_s
    }
}

/// The run with the median tokens per wall-clock second (the upper one of an even count).
pub fn median(mut runs: Vec<Timing>) -> Timing {
    runs.sort_by(|a, b| a.per_s().total_cmp(&b.per_s()));
    runs[runs.len() / 2]
}

/// The header of the training table (two Markdown lines).
pub fn table_header() -> String {
    "| width | batch x tokens | threads | candle tokens/s | candle tokens/CPU-s | \
     PyTorch tokens/s | PyTorch tokens/CPU-s | candle / PyTorch |\n\
     |---:|---|---:|---:|---:|---:|---:|---:|"
        .to_string()
}

/// One row of the training table: candle's run and PyTorch's (if any) on `shape`.
pub fn table_row(
    shape: TrainShape,
    threads: &str,
    candle: &Timing,
    torch: Option<&Timing>,
) -> String {
    let (t_rate, t_cpu, ratio) = match torch {
        Some(t) => (
            format!("{:.0}", t.per_s()),
            format!("{:.0}", t.per_cpu_s()),
            format!("{:.2}", candle.per_s() / t.per_s()),
        ),
        None => ("-".into(), "-".into(), "-".into()),
    };
    format!(
        "| {} | {} x {} | {threads} | {:.0} | {:.0} | {t_rate} | {t_cpu} | {ratio} |",
        shape.config.width,
        shape.batch,
        shape.seq,
        candle.per_s(),
        candle.per_cpu_s()
    )
}

/// Runs `f` with `threads` threads for rayon and for candle's matrix products.
pub fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    // candle reads the thread count of its matrix products from this variable at every
    // product; nothing else runs while it is set.
    std::env::set_var("RAYON_NUM_THREADS", threads.to_string());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| FinetuneError::Config(format!("cannot start {threads} threads: {e}")))?;
    pool.install(f)
}

/// Times `steps` training steps of the candle GPT on `shape`, after two warm-up steps.
pub fn candle_train(shape: TrainShape, steps: usize, device: &Device) -> Result<Timing> {
    let mut bench = TrainBench::new(shape, 1, device)?;
    for _ in 0..2 {
        bench.step()?;
    }
    let (cpu0, started) = (cpu_ms(), Instant::now());
    for _ in 0..steps {
        bench.step()?;
    }
    let wall_s = started.elapsed().as_secs_f64();
    let cpu_s = cpu_ms().zip(cpu0).map_or(wall_s, |(b, a)| (b - a) / 1e3);
    Ok(Timing {
        tokens: steps * shape.tokens_per_step(),
        wall_s,
        cpu_s,
    })
}

/// The PyTorch reference: `python script --json ...` (`benches/torch_gpt.py`).
#[derive(Debug, Clone)]
pub struct TorchReference {
    /// The interpreter.
    pub python: PathBuf,
    /// The script.
    pub script: PathBuf,
    /// Its `--device` (`cpu`, `cuda`).
    pub device: String,
}

impl TorchReference {
    /// PyTorch's version, or why the reference cannot run (the script is missing, `import
    /// torch` fails).
    pub fn version(&self) -> std::result::Result<String, String> {
        if !self.script.is_file() {
            return Err(format!(
                "{} not found (run from the repository root or pass --torch-script)",
                self.script.display()
            ));
        }
        let out = Command::new(&self.python)
            .args(["-c", "import torch; print(torch.__version__)"])
            .output();
        match out {
            Ok(o) if o.status.success() => {
                Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
            }
            Ok(_) => Err(format!(
                "`{} -c 'import torch'` failed (pip install torch, or pass --python)",
                self.python.display()
            )),
            Err(e) => Err(format!("cannot run {}: {e}", self.python.display())),
        }
    }

    /// Times `steps` steps of the PyTorch GPT on `shape` with `threads` threads.
    pub fn train(&self, shape: TrainShape, steps: usize, threads: usize) -> Result<Timing> {
        let c = shape.config;
        let failed = |why: String| FinetuneError::Model(format!("PyTorch reference: {why}"));
        let out = Command::new(&self.python)
            .arg(&self.script)
            .args(["--json", "--steps", &steps.to_string()])
            .args(["--batch", &shape.batch.to_string()])
            .args(["--seq", &shape.seq.to_string()])
            .args(["--threads", &threads.to_string()])
            .args(["--width", &c.width.to_string()])
            .args(["--heads", &c.heads.to_string()])
            .args(["--layers", &c.layers.to_string()])
            .args(["--vocab", &c.vocab_size.to_string()])
            .args(["--context", &c.context.to_string()])
            .args(["--device", self.device.trim()])
            .output()
            .map_err(|e| failed(format!("cannot start {}: {e}", self.python.display())))?;
        if !out.status.success() {
            return Err(failed(format!(
                "{} exited with {}: {}",
                self.script.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().last().unwrap_or_default();
        serde_json::from_str(line).map_err(|e| failed(format!("its output `{line}`: {e}")))
    }
}

/// The thread counts measured when none are given: 1 and every core (1 alone on a one-core
/// machine or a GPU).
pub fn default_threads(device: &Device) -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if device.is_cuda() || cores == 1 {
        vec![1]
    } else {
        vec![1, cores]
    }
}

/// The median of `repeat` candle runs of `steps` steps on `shape` with `threads` threads, and
/// of as many PyTorch runs when a reference is given. Candle and PyTorch alternate, so that a
/// change in the machine's speed during the run touches both.
pub fn measure(
    shape: TrainShape,
    steps: usize,
    threads: usize,
    repeat: usize,
    device: &Device,
    torch: Option<&TorchReference>,
) -> Result<(Timing, Option<Timing>)> {
    let (mut candle, mut torch_runs) = (Vec::new(), Vec::new());
    for _ in 0..repeat.max(1) {
        candle.push(in_pool(threads, || candle_train(shape, steps, device))?);
        if let Some(reference) = torch {
            torch_runs.push(reference.train(shape, steps, threads)?);
        }
    }
    Ok((
        median(candle),
        (!torch_runs.is_empty()).then(|| median(torch_runs)),
    ))
}

/// Decoding speed: decisions (answered snapshots) per second.
pub struct DecodeRate {
    /// One snapshot after the other.
    pub one: f64,
    /// All snapshots at once, as `schedlm predict` and `eval` answer them.
    pub all: f64,
    /// Mean prompt length in tokens (without the chat frame).
    pub prompt: usize,
}

/// Constrained greedy decisions/s of an untrained gpt-tiny on 8-job `hpc` snapshots.
pub fn decode_rate(count: usize, device: &Device) -> Result<DecodeRate> {
    let options = RecordOptions {
        template: Template::CompactV2,
        ..compact_options()
    };
    let mut config = Config::new(Family::Hpc, 1);
    (config.queue_min, config.queue_max) = (8, 8);
    let records = solved_records(&config, count, &quick_solve(), &options)
        .map_err(|e| FinetuneError::Config(format!("cannot make the benchmark's records: {e}")))?;
    let instances: Vec<_> = records.iter().map(|r| r.instance.clone()).collect();
    let texts: Vec<String> = records
        .into_iter()
        .flat_map(|r| [r.prompt, r.completion])
        .collect();
    let tokenizer = TextTokenizer::train_bpe(&texts, 1024)?;
    let config = GptConfig::tiny(tokenizer.vocab_size());
    let loaded = build(&ModelSpec::Gpt { config }, Some(tokenizer), 1, device)?;
    let tokens: usize = texts
        .iter()
        .step_by(2)
        .map(|t| loaded.tokenizer.encode(t).map(|ids| ids.len()))
        .sum::<Result<usize, _>>()?;
    let predictor = Predictor::from_loaded(loaded, device);
    let decode = DecodeOptions::default();
    let answer =
        |instance| predictor.predict(instance, Objective::Bsld, Template::CompactV2, &decode);
    let started = Instant::now();
    for instance in &instances {
        answer(instance)?;
    }
    let one = count as f64 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    instances
        .par_iter()
        .map(answer)
        .collect::<Result<Vec<_>, _>>()?;
    let all = count as f64 / started.elapsed().as_secs_f64();
    Ok(DecodeRate {
        one,
        all,
        prompt: tokens / count.max(1),
    })
}
