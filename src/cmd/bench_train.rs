//! `schedlm bench train`: training tokens/s of the from-scratch GPT against PyTorch on the same
//! shapes, and decoding decisions/s with the key/value cache (docs/benchmarks.md).
//!
//! For every width, sequence length and thread count asked for, it trains the candle model for
//! a few warm-up steps and then `--steps` timed steps on one batch of random tokens with the
//! loss on every token, runs `benches/torch_gpt.py` with the same shapes and thread count, and
//! prints both figures and their ratio; the measuring is [`schedlm_finetune::bench`]'s.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use schedlm_finetune::bench::{
    decode_rate, default_threads, in_pool, measure, table_header, table_row, TorchReference,
    TrainShape,
};
use schedlm_finetune::GptConfig;

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

pub fn run(args: &TrainBenchArgs) -> Result<()> {
    let device = schedlm_finetune::device::parse(&args.device)?;
    let threads = if device.is_cuda() || args.threads.is_empty() {
        default_threads(&device)
    } else {
        args.threads.clone()
    };
    if threads.contains(&0) || args.width.contains(&0) || args.seq.contains(&0) {
        bail!("--threads, --width and --seq take positive numbers");
    }
    let reference = TorchReference {
        python: args.python.clone(),
        script: args.torch_script.clone(),
        device: args.device.clone(),
    };
    let version = (!args.no_torch).then(|| reference.version());
    let torch = match version {
        Some(Ok(_)) => Some(&reference),
        Some(Err(why)) => {
            eprintln!("PyTorch reference skipped: {why}");
            None
        }
        None => None,
    };
    outln!("{}", table_header())?;
    for &width in &args.width {
        for &seq in &args.seq {
            for &n in &threads {
                let config = GptConfig {
                    vocab_size: args.vocab,
                    context: seq.max(1024),
                    layers: args.layers,
                    width,
                    heads: args.heads,
                };
                let shape = TrainShape {
                    config,
                    batch: args.batch,
                    seq,
                };
                let (candle, torch) = measure(shape, args.steps, n, args.repeat, &device, torch)?;
                let threads = if device.is_cuda() {
                    args.device.clone()
                } else {
                    n.to_string()
                };
                outln!("{}", table_row(shape, &threads, &candle, torch.as_ref()))?;
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
