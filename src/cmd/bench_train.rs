//! `schedlm bench train`: training tokens/s of the from-scratch GPT against PyTorch on the same
//! shapes, and decoding decisions/s with the key/value cache (docs/benchmarks.md).
//!
//! For every width, sequence length and thread count asked for, it trains the candle model for
//! a few warm-up steps and then `--steps` timed steps on one batch of random tokens with the
//! loss on every token ([`schedlm_finetune::bench::TrainBench`]), runs `benches/torch_gpt.py`
//! with the same shapes and thread count, and prints both figures and their ratio.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use rayon::prelude::*;
use schedlm_dataset::testing::{compact_options, quick_solve, solved_records};
use schedlm_dataset::{RecordOptions, Template};
use schedlm_finetune::bench::{TrainBench, TrainShape};
use schedlm_finetune::model::{build, ModelSpec};
use schedlm_finetune::{DecodeOptions, Device, GptConfig, Predictor, TextTokenizer};
use schedlm_generator::{Config, Family};
use schedlm_model::Objective;
use serde::Deserialize;

use schedlm_solver::bench::cpu_ms;

#[derive(Debug, Args)]
pub struct TrainBenchArgs {
    /// Embedding widths to measure, comma separated (4 heads each unless --heads).
    #[arg(long, value_delimiter = ',', default_value = "128")]
    pub width: Vec<usize>,

    /// Tokens per sequence, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "330,942")]
    pub seq: Vec<usize>,

    /// Thread counts, comma separated; each measurement runs on a pool of that many threads
    /// (rayon and the matrix products) [default: 1 and the machine's cores].
    #[arg(long, value_delimiter = ',')]
    pub threads: Vec<usize>,

    /// Sequences per step.
    #[arg(long, default_value_t = 8)]
    pub batch: usize,

    /// Attention heads.
    #[arg(long, default_value_t = 4)]
    pub heads: usize,

    /// Transformer blocks.
    #[arg(long, default_value_t = 4)]
    pub layers: usize,

    /// Vocabulary size (the tokens are random ids below it).
    #[arg(long, default_value_t = 1024)]
    pub vocab: usize,

    /// Timed optimizer steps per measurement (after 2 warm-up steps).
    #[arg(long, default_value_t = 10)]
    pub steps: usize,

    /// The Python interpreter that runs the PyTorch reference.
    #[arg(long, default_value = "python3")]
    pub python: PathBuf,

    /// The PyTorch reference script.
    #[arg(long, default_value = "benches/torch_gpt.py")]
    pub torch_script: PathBuf,

    /// Skip the PyTorch reference.
    #[arg(long)]
    pub no_torch: bool,

    /// Runs of each measurement, candle and PyTorch alternating; the tables show the median
    /// (by tokens per wall-clock second).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,

    /// Where the candle model runs: `cpu`, or `cuda` / `cuda:N` in a build with the `cuda`
    /// feature; the PyTorch reference then runs on the same GPU (`--device cuda`). On a GPU
    /// the thread counts do not apply and each shape is measured once per --repeat.
    #[arg(long, default_value = "cpu")]
    pub device: String,

    /// Snapshots decoded for the decisions/s figure (8-job `hpc` queues; 0 skips decoding).
    #[arg(long, default_value_t = 20)]
    pub decode: usize,
}

/// One timed run: tokens, wall and CPU seconds.
#[derive(Debug, Clone, Copy, Deserialize)]
struct Timing {
    tokens: usize,
    wall_s: f64,
    cpu_s: f64,
}

impl Timing {
    fn per_s(&self) -> f64 {
        self.tokens as f64 / self.wall_s
    }

    fn per_cpu_s(&self) -> f64 {
        self.tokens as f64 / self.cpu_s
    }
}

pub fn run(args: &TrainBenchArgs) -> Result<()> {
    let device = schedlm_finetune::device::parse(&args.device)?;
    let threads = if device.is_cuda() {
        vec![1]
    } else if args.threads.is_empty() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cores > 1 {
            vec![1, cores]
        } else {
            vec![1]
        }
    } else {
        args.threads.clone()
    };
    if threads.contains(&0) || args.width.contains(&0) || args.seq.contains(&0) {
        bail!("--threads, --width and --seq take positive numbers");
    }
    let torch = (!args.no_torch)
        .then(|| torch_available(args))
        .transpose()?
        .flatten();
    outln!(
        "| width | batch x tokens | threads | candle tokens/s | candle tokens/CPU-s | \
         PyTorch tokens/s | PyTorch tokens/CPU-s | candle / PyTorch |"
    )?;
    outln!("|---:|---|---:|---:|---:|---:|---:|---:|")?;
    for &width in &args.width {
        for &seq in &args.seq {
            for &n in &threads {
                let shape = TrainShape {
                    config: GptConfig {
                        vocab_size: args.vocab,
                        context: seq.max(1024),
                        layers: args.layers,
                        width,
                        heads: args.heads,
                    },
                    batch: args.batch,
                    seq,
                };
                // Candle and PyTorch alternate, so that a change in the machine's speed
                // during the run touches both; each figure is the median of its runs.
                let (mut candle, mut reference) = (Vec::new(), Vec::new());
                for _ in 0..args.repeat.max(1) {
                    candle.push(in_pool(n, || candle_train(shape, args.steps, &device))?);
                    if let Some(version) = &torch {
                        reference.push(torch_train(args, shape, n).with_context(|| {
                            format!("running the PyTorch reference ({version})")
                        })?);
                    }
                }
                let candle = median(candle);
                let reference = (!reference.is_empty()).then(|| median(reference));
                let threads = if device.is_cuda() {
                    args.device.clone()
                } else {
                    n.to_string()
                };
                print_row(shape, &threads, &candle, reference.as_ref())?;
            }
        }
    }
    if args.decode > 0 {
        for &n in &threads {
            let rate = in_pool(n, || decode_rate(args.decode, &device))?;
            outln!(
                "decoding, {n} thread(s): {:.1} decisions/s one snapshot at a time, {:.1} with \
                 all at once (gpt-tiny, untrained, constrained greedy with the KV cache, {} \
                 8-job hpc snapshots of ~{} prompt tokens)",
                rate.one,
                rate.all,
                args.decode,
                rate.prompt
            )?;
        }
    }
    Ok(())
}

/// The run with the median tokens per wall-clock second (the upper one of an even count).
fn median(mut runs: Vec<Timing>) -> Timing {
    runs.sort_by(|a, b| a.per_s().total_cmp(&b.per_s()));
    runs[runs.len() / 2]
}

fn print_row(
    shape: TrainShape,
    threads: &str,
    candle: &Timing,
    torch: Option<&Timing>,
) -> Result<()> {
    let (t_rate, t_cpu, ratio) = match torch {
        Some(t) => (
            format!("{:.0}", t.per_s()),
            format!("{:.0}", t.per_cpu_s()),
            format!("{:.2}", candle.per_s() / t.per_s()),
        ),
        None => ("-".into(), "-".into(), "-".into()),
    };
    outln!(
        "| {} | {} x {} | {threads} | {:.0} | {:.0} | {t_rate} | {t_cpu} | {ratio} |",
        shape.config.width,
        shape.batch,
        shape.seq,
        candle.per_s(),
        candle.per_cpu_s()
    )?;
    Ok(())
}

/// Runs `f` with `threads` threads for rayon and for candle's matrix products.
fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    // candle reads the thread count of its matrix products from this variable at every
    // product; nothing else runs while it is set.
    std::env::set_var("RAYON_NUM_THREADS", threads.to_string());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("starting a thread pool")?;
    pool.install(f)
}

fn candle_train(shape: TrainShape, steps: usize, device: &Device) -> Result<Timing> {
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

/// The PyTorch version, or `None` (with a message) when it cannot be imported.
fn torch_available(args: &TrainBenchArgs) -> Result<Option<String>> {
    if !args.torch_script.is_file() {
        eprintln!(
            "PyTorch reference skipped: {} not found (run from the repository root or pass \
             --torch-script)",
            args.torch_script.display()
        );
        return Ok(None);
    }
    let out = Command::new(&args.python)
        .args(["-c", "import torch; print(torch.__version__)"])
        .output();
    match out {
        Ok(o) if o.status.success() => {
            Ok(Some(String::from_utf8_lossy(&o.stdout).trim().to_string()))
        }
        Ok(_) => {
            eprintln!(
                "PyTorch reference skipped: `{} -c 'import torch'` failed (pip install torch, \
                 or pass --python)",
                args.python.display()
            );
            Ok(None)
        }
        Err(e) => {
            eprintln!(
                "PyTorch reference skipped: cannot run {}: {e}",
                args.python.display()
            );
            Ok(None)
        }
    }
}

fn torch_train(args: &TrainBenchArgs, shape: TrainShape, threads: usize) -> Result<Timing> {
    let c = shape.config;
    let out = Command::new(&args.python)
        .arg(&args.torch_script)
        .args(["--json", "--steps", &args.steps.to_string()])
        .args(["--batch", &shape.batch.to_string()])
        .args(["--seq", &shape.seq.to_string()])
        .args(["--threads", &threads.to_string()])
        .args(["--width", &c.width.to_string()])
        .args(["--heads", &c.heads.to_string()])
        .args(["--layers", &c.layers.to_string()])
        .args(["--vocab", &c.vocab_size.to_string()])
        .args(["--context", &c.context.to_string()])
        .args(["--device", args.device.trim()])
        .output()
        .with_context(|| format!("starting {}", args.python.display()))?;
    if !out.status.success() {
        bail!(
            "{} exited with {}: {}",
            args.torch_script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line).with_context(|| format!("reading its output `{line}`"))
}

/// Decoding speed: decisions (answered snapshots) per second.
struct DecodeRate {
    /// One snapshot after the other.
    one: f64,
    /// All snapshots at once, as `schedlm predict` and `eval` answer them.
    all: f64,
    /// Mean prompt length in tokens (without the chat frame).
    prompt: usize,
}

/// Constrained greedy decisions/s of an untrained gpt-tiny on 8-job `hpc` snapshots.
fn decode_rate(count: usize, device: &Device) -> Result<DecodeRate> {
    let options = RecordOptions {
        template: Template::CompactV2,
        ..compact_options()
    };
    let mut config = Config::new(Family::Hpc, 1);
    (config.queue_min, config.queue_max) = (8, 8);
    let records = solved_records(&config, count, &quick_solve(), &options)
        .map_err(|e| anyhow::anyhow!("cannot make the benchmark's records: {e}"))?;
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
