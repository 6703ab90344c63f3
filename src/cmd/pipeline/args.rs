//! The flags of `schedlm pipeline`: what `--help` prints.

use std::path::PathBuf;

use clap::Args;

use crate::args::QueueRange;

#[derive(Debug, Args)]
pub struct PipelineArgs {
    /// Snapshots per family (at least 1).
    #[arg(long, short = 'n', default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: u64,

    /// Queue length range of the snapshots (inclusive).
    #[arg(long, default_value = "8..12")]
    pub queue: QueueRange,

    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Counted work of the optimal solver per snapshot (units of `schedlm_solver::work`,
    /// about 2 CPU seconds at the default): the table is the same on every machine.
    #[arg(long, value_parser = crate::args::parse_work,
          default_value_t = schedlm_solver::work::DEFAULT_DATASET_WORK)]
    pub work_limit: u64,

    /// Directory that receives everything the pipeline makes: the snapshots of the table
    /// (`<family>.jsonl`), the dataset (`data/`), the trained model (`model/`) and the report
    /// (`report/report.html`, `report.md`, `summary.json`, `instances.csv`).
    #[arg(
        visible_alias = "output",
        long,
        short = 'o',
        default_value = "schedlm-out"
    )]
    pub out: PathBuf,

    /// Stop after the comparison table (nothing is written).
    #[arg(long)]
    pub table_only: bool,

    /// Snapshots of the dataset the tiny model is trained on and evaluated on: family
    /// `uniform`, queues of 10..12 jobs, where the best rule per instance leaves headroom (about
    /// 1.7% above the optimum on average, and the label is the prompt's ranking on about a fifth
    /// of the records; docs/learning.md); 75/5/20 split.
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u64).range(20..))]
    pub train_count: u64,

    /// Training epochs of the tiny GPT.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub epochs: u64,

    /// Snapshots the shipped step model is evaluated on: `uniform`, queues of 16..20 jobs (its
    /// training range), generator seed 99 (its training data is seed 11); 0 leaves it out.
    #[arg(long, default_value_t = 30)]
    pub shipped_count: u64,
}
