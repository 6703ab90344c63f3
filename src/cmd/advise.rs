//! `schedlm advise`: fill a training job's GPU count and batch size from past runs, and score
//! the throughput predictions on held-out runs.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use serde_json::json;

use schedlm_history::advice::{
    advise, parse_wait, read_runs, score, score_table, Knowledge, Request,
};
use schedlm_history::replay_table::advice_replay;

#[derive(Debug, Subcommand)]
pub enum AdviseCommand {
    /// Fill the GPU count and local batch size a job left out with the configuration
    /// predicted to finish first, queue wait included.
    ///
    /// Each candidate (a GPU count of `--wait`, a local batch size of the model's past runs
    /// that fitted) gets the throughput of the nearest past run of the same model (by GPUs,
    /// nodes and local batch) and the run time samples / throughput; the best has the least
    /// wait + run time. Prints one JSON object: `best` and every `candidates`, best first.
    /// The number of samples is held fixed: the advisor does not model how the global batch
    /// changes convergence, so fix `--batch` when that matters.
    Fill(FillArgs),
    /// Hold out a share of the past runs, predict their throughput from the others, and print
    /// the error per model and overall (docs/knowledge.md).
    Score(ScoreArgs),
    /// Replay `dl` training jobs online with a share of them leaving their GPU count and batch
    /// size out: run those with the user default (fewest GPUs, smallest per-GPU batch) or with
    /// the advised configuration, under FIFO and SJF; print mean JCT and bounded slowdown side
    /// by side.
    ///
    /// Two `dl` snapshots are generated from --seed: the first one's jobs, each seen once in its
    /// user's configuration, are the past runs the advisor learns from; the second one's queue
    /// is replayed on a pool of --servers x 8 GPUs (docs/knowledge.md lists the rules).
    Replay(ReplayArgs),
}

#[derive(Debug, Args)]
pub struct FillArgs {
    /// Past runs: CSV with the header `model,nodes,gpus,local_batch,step_time_s,outcome`
    /// (`outcome` ok or oom; e.g. tests/data/knowledge/runs/pollux-throughput.csv).
    #[arg(long, value_name = "FILE")]
    pub runs: PathBuf,

    /// The job's model (job type), as named in the runs.
    #[arg(long)]
    pub model: String,

    /// Samples the job processes in all (epochs x dataset size).
    #[arg(long)]
    pub samples: f64,

    /// A GPU count the job may get and its predicted queue wait in seconds, as GPUS=SECONDS
    /// (repeatable), e.g. `--wait 1=0 --wait 8=1800 --wait 16=7200`.
    #[arg(long = "wait", value_name = "GPUS=SECONDS", value_parser = parse_wait, required_unless_present = "gpus")]
    pub waits: Vec<(u32, f64)>,

    /// Fix the GPU count (only the batch size is filled).
    #[arg(long)]
    pub gpus: Option<u32>,

    /// Fix the local batch size per GPU (only the GPU count is filled).
    #[arg(long)]
    pub batch: Option<u32>,

    /// GPUs per node of the cluster (a job spans GPUs / this, rounded up, nodes).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub gpus_per_node: u32,
}

#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// Past runs (the CSV of `advise fill --runs`).
    #[arg(long, value_name = "FILE")]
    pub runs: PathBuf,

    /// Share of the runs held out, in (0, 1).
    #[arg(long, default_value_t = 0.2)]
    pub holdout: f64,

    /// Seed of the split (the same seed holds out the same runs on every machine).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Jobs replayed (and past runs learned from).
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u32).range(2..=5000))]
    pub jobs: u32,

    /// 8-GPU nodes of the cluster.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub servers: u32,

    /// Share of the jobs that leave their configuration out, in [0, 1].
    #[arg(long, default_value_t = 0.5)]
    pub share: f64,

    /// Seed of the two snapshots and of which jobs leave their configuration out.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Print JSON Lines instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(command: &AdviseCommand) -> Result<()> {
    match command {
        AdviseCommand::Fill(a) => fill(a),
        AdviseCommand::Score(a) => scores(a),
        AdviseCommand::Replay(a) => replay_dl(a),
    }
}

fn replay_dl(args: &ReplayArgs) -> Result<()> {
    if !(0.0..=1.0).contains(&args.share) {
        bail!("--share must lie in [0, 1], got {}", args.share);
    }
    let report = advice_replay(args.seed, args.jobs as usize, args.servers, args.share)?;
    if args.json {
        for r in &report.results {
            outln!("{}", serde_json::to_string(r)?)?;
        }
        return Ok(());
    }
    out!("{report}")
}

fn fill(args: &FillArgs) -> Result<()> {
    if !(args.samples.is_finite() && args.samples > 0.0) {
        bail!("--samples must be a positive number, got {}", args.samples);
    }
    let knowledge = Knowledge::new(read_runs(&args.runs)?);
    let request = Request {
        model: args.model.clone(),
        samples: args.samples,
        gpus: args.gpus,
        local_batch: args.batch,
        gpus_per_node: args.gpus_per_node,
        waits: args.waits.clone(),
    };
    let candidates = advise(&knowledge, &request)?;
    let value = json!({ "best": candidates[0], "candidates": candidates });
    outln!("{}", serde_json::to_string(&value)?)
}

fn scores(args: &ScoreArgs) -> Result<()> {
    if !(args.holdout > 0.0 && args.holdout < 1.0) {
        bail!("--holdout must lie in (0, 1), got {}", args.holdout);
    }
    let runs = read_runs(&args.runs)?;
    outln!("{}", score_table(&score(&runs, args.holdout, args.seed)))
}
