//! The flags of `schedlm history`: what `--help` prints for each subcommand.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use schedlm_history::history::{parse_instant, MatchBy, Outcome};

use crate::args::parse_seconds;

#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Add one finished job: its facts (the output of `schedlm extract`), how long it ran and
    /// how it ended. Prints the job's id.
    ///
    /// Example: `schedlm extract runs/42 | schedlm history add --db jobs.sqlite --job -
    /// --actual 2h15m --outcome completed`.
    Add(AddArgs),
    /// Print the past jobs most similar to a new one, nearest first, as JSON Lines: `id`,
    /// `name`, `distance`, `similarity` (text matching), `actual_s`, `requested_s`,
    /// `outcome`.
    ///
    /// By metadata (the default), the distance counts each differing kind (model, dataset,
    /// training script, precision) as 1 and each size (total GPUs, global batch size,
    /// sequence length, max steps, epochs) as |ln a - ln b|; a value known on one side only
    /// counts 1. By text, the similarity is the cosine of the sentence embeddings of the jobs'
    /// commands and files, made by `schedlm extract --embed` (docs/knowledge.md).
    Match(MatchArgs),
    /// Predict a new job's run time: the actual run time of the nearest completed job, capped
    /// at the job's requested time; the requested time when no completed job is known. Prints
    /// one JSON object: `seconds`, `basis`, `requested_s` and the `matches` it looked at.
    Predict(PredictArgs),
    /// Print every job of the history as JSON Lines, in the order added.
    List(ListArgs),
    Replay(super::replay::ReplayArgs),
    /// Write the accounting of a simulated cluster into a history: a `dl` workload (as `history
    /// replay` draws it) run first come, first served with EASY under its requests, each job
    /// with its facts (model, GPUs, global batch, sequence length, epochs), request, run time,
    /// outcome, submit and start times and GPUs. For trying `history replay --db` and the Slurm
    /// filter without a cluster's records. Prints the number of jobs written.
    ///
    /// Example: `schedlm history synth --db sim.sqlite --jobs 2000 --servers 4 --seed 1`.
    Synth(SynthArgs),
}

#[derive(Debug, Args)]
pub struct SynthArgs {
    /// The history (SQLite) to write, created if it does not exist; it must hold no job yet.
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,

    /// Jobs of the workload.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(2..=20000))]
    pub jobs: u32,

    /// 8-GPU nodes of the simulated cluster.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub servers: u32,

    /// Seed of the workload.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// The share of jobs that state no time limit (drawn from the seed): they ran under
    /// --max-time and are recorded without a request, as the jobs the Slurm filter fills.
    #[arg(long, default_value_t = 0.5)]
    pub unstated: f64,

    /// The partition's longest limit, which jobs without one ran under.
    #[arg(long, default_value = "7d", value_parser = humantime::parse_duration)]
    pub max_time: std::time::Duration,
}

/// The history file and the job to look up, shared by `match` and `predict`.
#[derive(Debug, Args)]
pub struct Lookup {
    /// The history (SQLite); created by the first `add`.
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,

    /// The job's facts: a file written by `schedlm extract`, or `-` for standard input.
    #[arg(long, value_name = "FILE")]
    pub job: PathBuf,

    /// How many past jobs to show.
    #[arg(short, long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..))]
    pub k: u16,

    /// What to match by: `meta` (the extracted metadata) or `text` (the cosine of the
    /// sentence embeddings; the job and the past jobs need `schedlm extract --embed`, and past
    /// jobs embedded by another model or not at all are left out).
    #[arg(long, default_value = "meta")]
    pub by: MatchBy,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The history (SQLite), created if it does not exist.
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,

    /// The job's facts: a file written by `schedlm extract`, or `-` for standard input.
    #[arg(long, value_name = "FILE")]
    pub job: PathBuf,

    /// A name for the job [default: the job directory `extract` read].
    #[arg(long)]
    pub name: Option<String>,

    /// Who submitted it.
    #[arg(long)]
    pub user: Option<String>,

    /// Its requested time limit, in seconds or as `4h`, `1h 30m`; by default the job's
    /// `requested_time_s` fact (from `#SBATCH --time` or `#PBS -l walltime`).
    #[arg(long, value_parser = parse_seconds)]
    pub requested: Option<i64>,

    /// How long it ran, in seconds or as `2h15m` (required for a completed job).
    #[arg(long, value_parser = parse_seconds)]
    pub actual: Option<i64>,

    /// How it ended: completed, failed, timeout or cancelled.
    #[arg(long)]
    pub outcome: Outcome,

    /// When it was submitted: Unix seconds, or a UTC time as `sacct` prints it
    /// (`2026-11-28T02:36:16`). With --start, --actual and --gpus it makes the job part of the
    /// workload `history replay --db` replays.
    #[arg(long, value_parser = parse_instant)]
    pub submit: Option<i64>,

    /// When it started (as --submit).
    #[arg(long, value_parser = parse_instant)]
    pub start: Option<i64>,

    /// The GPUs it held (`sacct -o AllocTRES`: `gres/gpu=N`); by default its facts' GPUs per
    /// node x nodes.
    #[arg(long)]
    pub gpus: Option<u32>,
}

#[derive(Debug, Args)]
pub struct MatchArgs {
    #[command(flatten)]
    pub lookup: Lookup,

    /// Match failed, timed-out and cancelled jobs too (only completed ones by default).
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct PredictArgs {
    #[command(flatten)]
    pub lookup: Lookup,

    /// The job's requested time limit; by default its `requested_time_s` fact.
    #[arg(long, value_parser = parse_seconds)]
    pub requested: Option<i64>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// The history (SQLite).
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,
}
