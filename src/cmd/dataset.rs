//! `schedlm dataset build | merge | stats`: fine-tuning records from solved snapshots.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

use schedlm_dataset::build::{self, BuildTuning};
use schedlm_dataset::manifest::{BuildArgs, Shard, Source};
use schedlm_dataset::{
    merge::merge, stats::stats, AnswerOrder, RecordFormat, RecordKind, SplitSpec, Targets, Template,
};
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

pub fn run(command: &DatasetCommand) -> Result<()> {
    match command {
        DatasetCommand::Build(a) => run_build(a),
        DatasetCommand::Merge(a) => run_merge(a),
        DatasetCommand::Stats(a) => run_stats(a),
    }
}

/// The build arguments that decide the output.
pub fn build_args(a: &BuildCmd) -> Result<BuildArgs> {
    let variant = a.dispatcher.variant();
    let (records, targets) = (a.records, a.targets);
    if targets == Targets::Label && a.value_work_limit.is_some() {
        bail!("--value-work-limit budgets the values of --targets values: add --targets values or drop it");
    }
    let source = match &a.from {
        Some(path) => {
            let mut given = a.shape.cluster.options_given();
            if a.shape.queue.is_some() {
                given.insert(0, "--queue");
            }
            if !a.family.is_empty() {
                given.insert(0, "--family");
            }
            if !given.is_empty() {
                bail!(
                    "--from reads its snapshots from {}: drop {} (they shape generated \
                     snapshots only)",
                    path.display(),
                    given.join(", ")
                );
            }
            if a.instances.allow_unknown_fields {
                crate::io::warn_unknown_fields_in(path)?;
            }
            Source::file(path, a.label.clone(), a.instances.unknown())
        }
        None => {
            let families = if a.family.is_empty() {
                vec![Family::Hpc]
            } else {
                a.family.clone()
            };
            let configs = families.iter().map(|&f| a.shape.config(f)).collect();
            Source::Generate {
                configs,
                count: a.count,
            }
        }
    };
    let args = BuildArgs {
        source,
        solver: a.solver,
        objective: a.objective,
        variant,
        work_limit: a.work_limit.0,
        time_limit_ms: a.time_limit.map(|t| t.as_millis() as u64),
        node_limit: a.node_limit,
        solver_seed: a.shape.seed,
        template: a.template,
        answer: a.answer,
        plan: a.plan,
        records,
        targets,
        value_work_limit: (targets == Targets::Values).then(|| {
            a.value_work_limit
                .unwrap_or(schedlm_solver::values::DEFAULT_VALUE_WORK)
        }),
        format: a.format,
        split: a.split,
        skip_invalid: a.skip_invalid,
        min_headroom: a.min_headroom,
    };
    args.check()?;
    Ok(args)
}

fn run_build(a: &BuildCmd) -> Result<()> {
    let args = build_args(a)?;
    let shard = a.shard.unwrap_or_default();
    let total = build::source_len(&args.source)?;
    let bar = a.progress.bar(
        total,
        "{bar:40} {pos}/{len} snapshots, {per_sec}, elapsed {elapsed}, ETA {eta}",
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.unwrap_or(0))
        .build()
        .context("cannot start worker threads")?;
    let started = Instant::now();
    let tuning = BuildTuning { chunk: a.chunk };
    let report = pool.install(|| build::build(&args, shard, &a.out, tuning, &|n| bar.inc(n)))?;
    bar.finish_and_clear();
    for line in report.summary(&args, &a.out, started.elapsed().as_secs_f64()) {
        a.progress.say(format_args!("{line}"));
    }
    for warning in report.warnings(&args) {
        eprintln!("{warning}");
    }
    match report.empty(&a.out) {
        Some(why) if !report.already_complete => bail!("{why}"),
        _ => Ok(()),
    }
}

fn run_merge(a: &MergeCmd) -> Result<()> {
    let m = merge(&a.parts, &a.out)?;
    a.progress.say(format_args!(
        "merged {} parts into {}: {} records, {} proven optimal",
        a.parts.len(),
        a.out.display(),
        m.total(),
        m.proven_optimal
    ));
    Ok(())
}

fn run_stats(a: &StatsCmd) -> Result<()> {
    let tokenizer = match &a.tokenizer {
        Some(path) => Some(
            tokenizers::Tokenizer::from_file(path)
                .map_err(|e| anyhow::anyhow!("cannot read tokenizer {}: {e}", path.display()))?,
        ),
        None => None,
    };
    let count = |text: &str| {
        tokenizer
            .as_ref()
            .and_then(|t| t.encode(text, false).ok())
            .map_or(0, |e| e.len())
    };
    let s = stats(&a.dir, tokenizer.as_ref().map(|_| &count as _))?;
    if s.records.values().sum::<u64>() == 0 {
        return Err(crate::io::empty_input(&a.dir, "record").into());
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&s)?)?;
    } else {
        out!("{}", s.to_text())?;
    }
    Ok(())
}
