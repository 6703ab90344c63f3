//! The flags of `schedlm dataset`: what `--help` prints for each subcommand.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use schedlm_dataset::manifest::Shard;
use schedlm_dataset::{AnswerOrder, RecordFormat, RecordKind, SplitSpec, Targets, Template};
use schedlm_generator::Family;
use schedlm_model::Objective;
use schedlm_solver::portfolio::Solver;

use crate::args::{parse_duration, DispatcherArgs, ShapeArgs};

#[derive(Debug, Subcommand)]
pub enum DatasetCommand {
    /// Generate (or read), solve and render snapshots into train/val/test JSON Lines files,
    /// in one streaming, parallel, resumable pipeline.
    ///
    /// Writes DIR/train.jsonl, DIR/val.jsonl, DIR/test.jsonl and DIR/manifest.json. Each line
    /// is one record: `id` (fingerprint of the instance content, the same under renamed ids,
    /// reordered lists or a shifted clock), `index` (source position), `split`, `family`,
    /// `template`, `objective`, `variant`, `prompt`, `completion`, `messages`
    /// (system/user/assistant), `order` (the label, as job ids), `value`, `lower_bound`,
    /// `proven_optimal`, `status`, `solver`, `nodes`, `baselines` (each rule's value) and
    /// `instance`. Hugging Face `datasets` loads the files with load_dataset("json", ...);
    /// TRL trains on prompt/completion or on messages as they are.
    ///
    /// Splits follow the fingerprint, so equal content never lands in two splits; exact
    /// duplicates are left out and counted in the manifest. Killed at any point and run again
    /// with the same arguments, the build continues where it stopped and ends with the same
    /// bytes as an uninterrupted run. See docs/dataset.md and, for clusters, docs/slurm.md.
    Build(Box<BuildCmd>),
    /// Join the parts of a sharded build (`build --shard K/N`, K = 1..N) into one dataset,
    /// checking that every shard is there once, that the parts agree on their arguments and
    /// do not overlap. The result equals an unsharded build byte for byte.
    Merge(MergeCmd),
    /// Print what a dataset directory holds: records per split and family, prompt and answer
    /// lengths (characters, and tokens with --tokenizer), the share of proven-optimal labels,
    /// the gap of the others, and how often each rule is already optimal.
    Stats(StatsCmd),
}

#[derive(Debug, Args)]
pub struct BuildCmd {
    /// Generator families, comma separated (item i uses the (i mod k)-th): `uniform`, `hpc`,
    /// `dl` (see `schedlm generate --help`) [default: hpc]. Refused with --from, like the
    /// other options of generated snapshots.
    #[arg(long, value_delimiter = ',')]
    pub family: Vec<Family>,

    /// Number of snapshots to generate (items 0..COUNT; with --shard, of the whole build).
    #[arg(long, short = 'n', default_value_t = 1000)]
    pub count: u64,

    /// Generated snapshots' shape, and the seed of the generator and the solvers.
    #[command(flatten)]
    pub shape: ShapeArgs,

    /// Read instances from this JSON Lines file instead of generating them (output of
    /// `generate`, `generate --from-trace`, `import psplib`). Records use the line number as
    /// `index`.
    #[arg(long, value_name = "FILE.jsonl")]
    pub from: Option<PathBuf>,

    /// With --from: the `family` written into the records [default: the file's stem].
    #[arg(long, requires = "from")]
    pub label: Option<String>,

    /// With --from: leave invalid lines out (they are listed in the manifest) instead of
    /// stopping at the first one.
    #[arg(long, requires = "from")]
    pub skip_invalid: bool,

    /// Solver of the labels (see `schedlm solve --help`).
    #[arg(long, value_enum, default_value = "auto")]
    pub solver: Solver,

    /// Objective of the labels: bsld, wait, flow or makespan.
    #[arg(long, value_enum, default_value = "bsld")]
    pub objective: Objective,

    /// The dispatcher of the labels.
    #[command(flatten)]
    pub dispatcher: DispatcherArgs,

    /// Counted search work per instance (units of `schedlm_solver::work`: branch-and-bound
    /// nodes, local-search placements and simplex iterations, weighed), e.g. 12M or 500k.
    /// The default, 12M, costs about 2 CPU seconds on an unproven `uniform` 16..20 snapshot
    /// (docs/benchmarks.md, "Work units"). Labels stopped by it keep their gap
    /// (`proven_optimal: false`, `status: work_limit`), and the build is the same, byte for
    /// byte, on any machine, at any load, with any -j, sharded or resumed. `none`: the clock
    /// decides (give --time-limit).
    #[arg(long, value_parser = crate::args::parse_work_limit,
          default_value_t = crate::args::WorkLimit(Some(schedlm_solver::work::DEFAULT_DATASET_WORK)))]
    pub work_limit: crate::args::WorkLimit,

    /// Wall-clock cap per instance, e.g. 10s [default: none]. With a work limit it only caps
    /// a slow solve; a label it stops says `status: time_limit`, the manifest counts such
    /// labels (`time_limited`) and the build warns that it is not reproducible.
    #[arg(long, value_parser = parse_duration)]
    pub time_limit: Option<Duration>,

    /// Most branch-and-bound nodes per instance (a deterministic budget).
    #[arg(long)]
    pub node_limit: Option<u64>,

    /// Prompt template: compact-v2 (the queue ranked by the instance's best priority rule,
    /// coarse time units: the template that teaches, see docs/learning.md), compact-v1 (few
    /// tokens, queue order, seconds) or verbose-v1 (sentences, for instruction-tuned models).
    /// With --records steps: compact-v2 renders each decision with step-v1 (the servers' free
    /// capacity over time and the queue in ranking order with starts), step-v2 with the compact
    /// listing of the jobs that may go next by when they would end, whose labels follow that
    /// listing wherever the optimum allows (docs/dataset.md).
    #[arg(long, default_value = "compact-v2")]
    pub template: Template,

    /// Which of the orders as good as the solver's becomes the label. `canonical`: the first
    /// in the ranking of the instance's best priority rule (so the label is that rule's order
    /// whenever the rule is optimal, and equal content always gets equal labels); `solver`:
    /// the order the solver returned, as builds before this option did (use it to reproduce
    /// them).
    #[arg(long, value_enum, default_value = "canonical")]
    pub answer: AnswerOrder,

    /// Add the dispatcher's plan (start and server of each job) as a second answer line.
    #[arg(long)]
    pub plan: bool,

    /// What each solved instance becomes. `orders`: one record answered by the whole queue
    /// order. `steps`: one record per dispatching decision, n - 1 for a queue of n jobs
    /// (template step-v1: the state after the first k jobs of the label are placed, each
    /// server's free capacity over time and each remaining job's earliest start, answered by
    /// the next job of the label). A model trained on steps is rolled out job by job by
    /// `predict` and `eval` (docs/learning.md). Steps use compact-v2's ranking and units and
    /// have no plan line.
    #[arg(long, value_enum, default_value = "orders")]
    pub records: RecordKind,

    /// What step records carry beyond their label. `label`: the next job of the label only.
    /// `values` (with --records steps): also, for every job the state offers, the best value
    /// reachable when it goes next, its regret against the best candidate and whether the
    /// value is proven (field `values`, docs/dataset.md), for `schedlm finetune --targets
    /// values`.
    #[arg(long, value_enum, default_value = "label")]
    pub targets: Targets,

    /// With --targets values: counted work per candidate (units of `schedlm_solver::work`),
    /// e.g. 100k. The default, 100k, costs about 15 ms of one core; on `uniform` 16..20 a
    /// snapshot has about 170 candidates (docs/learning.md, "Action values").
    #[arg(long, value_parser = schedlm_solver::work::parse_work)]
    pub value_work_limit: Option<u64>,

    /// Which form of the prompt and answer each record carries (the metadata columns are the
    /// same in all). One form per file, because fine-tuning tools pick a form by the columns
    /// they find: TRL's SFTTrainer, given both, picks by the order of a Python set, which
    /// changes with the hash seed (docs/dataset.md says what TRL does with each).
    #[arg(long, value_enum, default_value = "messages")]
    pub format: RecordFormat,

    /// Keep only instances with at least this headroom: the best rule per instance (the
    /// ranking a compact-v2 prompt lists) must be this much above the label's value, e.g. 1%
    /// or 0.01. Every candidate is solved; those below are left out and counted (manifest
    /// `filtered`), so --count is the number of candidates drawn and the build reports how
    /// many were drawn per record kept. With an unproven label the headroom is a lower bound,
    /// so every kept instance has at least this much. Deterministic, resumable and shardable
    /// like every build (docs/dataset.md, "Difficulty").
    #[arg(long, value_name = "SHARE", value_parser = crate::args::parse_share)]
    pub min_headroom: Option<f64>,

    /// Shares of train/val/test in percent.
    #[arg(long, default_value = "90/5/5")]
    pub split: SplitSpec,

    /// Build only shard K of N (1-based): the items whose fingerprint falls in it. Build every
    /// K into its own directory, then `schedlm dataset merge`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<Shard>,

    /// Items per chunk, the unit written at once and redone after a kill. Does not change the
    /// output, but a resumed build must use the same value.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub chunk: u64,

    /// Worker threads [default: all cores]. The output does not depend on it.
    #[arg(long, short = 'j')]
    pub threads: Option<usize>,

    #[command(flatten)]
    pub progress: crate::io::ProgressArgs,

    /// With --from: what is done with instance fields the schema does not know.
    #[command(flatten)]
    pub instances: crate::io::InstanceArgs,

    /// Output directory.
    #[arg(visible_alias = "output", long, short = 'o')]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct MergeCmd {
    /// The part directories, one per shard.
    #[arg(required = true)]
    pub parts: Vec<PathBuf>,

    /// Output directory (must not hold a dataset yet).
    #[arg(visible_alias = "output", long, short = 'o')]
    pub out: PathBuf,

    #[command(flatten)]
    pub progress: crate::io::ProgressArgs,
}

#[derive(Debug, Args)]
pub struct StatsCmd {
    /// Dataset directory (with train.jsonl, val.jsonl, test.jsonl).
    pub dir: PathBuf,

    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,

    /// Also count tokens with this Hugging Face tokenizer file (`tokenizer.json`, e.g. the one
    /// saved in a `schedlm finetune` run directory).
    #[arg(long, value_name = "tokenizer.json")]
    pub tokenizer: Option<PathBuf>,
}
