//! Command-line arguments. Each option is defined once here, with the long help that
//! `schedlm <command> --help` prints.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use std::time::Duration;

use schedlm_eval::replay::{
    Cluster, PlanEstimate, RandomWindows, Span, TraceOptions, WindowChoice,
};
use schedlm_generator::{Config, Family, Load};
use schedlm_model::sim::StartRule;
use schedlm_model::Objective;
use schedlm_solver::portfolio::Method;
use schedlm_solver::rules::Rule;

/// Teach language models to schedule jobs on compute clusters, and measure how well they do.
///
/// schedlm samples cluster snapshots (a data center's servers, running jobs and queue),
/// orders their queues with priority rules and solvers, and turns solved snapshots into
/// fine-tuning data. Instances are JSON Lines, one snapshot per line, in the format of
/// SPEC section 1 (see docs/design.md). All times are integer seconds.
#[derive(Debug, Parser)]
#[command(
    name = "schedlm",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the main job end to end on embedded defaults: generate snapshots of every family,
    /// schedule them with every priority rule and print a comparison table with the proven
    /// optimum; then build a small dataset, train a tiny GPT on it, and evaluate rules, local
    /// search, the optimum and the model on its test split, ending with a report.
    Pipeline(PipelineArgs),
    /// Sample seeded cluster snapshots and write them as JSON Lines.
    Generate(GenerateArgs),
    /// Check every instance of a JSON Lines file and report each invalid one with its line.
    Validate(ValidateArgs),
    /// Order each instance's queue with a priority rule and dispatch it into a schedule.
    Schedule(ScheduleArgs),
    /// Find the best queue order of each instance, with a proof of optimality or a bound.
    Solve(SolveArgs),
    /// Convert instances from other formats (PSPLIB) into schedlm instances.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Replay an SWF trace online with a priority rule and a start rule (SPEC section 5).
    Replay(crate::cmd::replay::ReplayArgs),
    /// Estimate job run times from history and report each estimator's error.
    Estimate(crate::cmd::estimate::EstimateArgs),
    /// Measure solver speed on generated instances and print a table (see docs/benchmarks.md).
    Bench(crate::cmd::bench::BenchArgs),
    /// Train a small GPT from scratch, or LoRA adapters on a pretrained model, on records.
    Finetune(crate::cmd::finetune::FinetuneArgs),
    /// Answer records with a trained model (greedy, constrained to valid orders by default).
    Predict(crate::cmd::predict::PredictArgs),
    /// Build fine-tuning datasets of solved snapshots, merge shards and print statistics.
    #[command(subcommand)]
    Dataset(crate::cmd::dataset::DatasetCommand),
    /// Evaluate schedulers (rules, local search, the exact solver, language models) against
    /// the optimum and each other, and write a report with plots.
    Eval(crate::cmd::eval::EvalArgs),
}

/// How a trace is replayed, shared by `replay` and `eval --trace`.
#[derive(Debug, Clone, Args)]
pub struct TraceReplayArgs {
    /// How jobs are started from the ordered queue: `strict` (in order, no overtaking),
    /// `easy` (backfilling behind the first job's reservation), `conservative` (every waiting
    /// job holds a reservation).
    #[arg(long, value_enum, default_value_t = StartRule::Easy, requires = "trace")]
    pub start_rule: StartRule,

    /// A window START:COUNT (COUNT jobs from index START of the cleaned trace, in submit
    /// order, 0-based); repeat for several. Without windows the whole trace is one window.
    #[arg(
        long = "window",
        value_name = "START:COUNT",
        conflicts_with = "windows",
        requires = "trace"
    )]
    pub window: Vec<Span>,

    /// N random windows of LEN jobs (NxLEN, e.g. 10x1024), starts drawn uniformly from
    /// 0..=jobs-LEN with ChaCha8 seeded by --seed.
    #[arg(long, value_name = "NxLEN", requires = "trace")]
    pub windows: Option<RandomWindows>,

    /// Machine layout: `pool` (one server with MaxProcs cores) or `nodes:N:K` (N servers of K
    /// cores; a job runs on one server).
    #[arg(
        long,
        value_name = "pool|nodes:N:K",
        default_value = "pool",
        requires = "trace"
    )]
    pub cluster: Cluster,

    /// Skip and count malformed trace lines instead of stopping at the first one.
    #[arg(long, requires = "trace")]
    pub skip_bad_lines: bool,

    /// Plan with a run-time estimate instead of the requested walltime (reservations,
    /// backfill tests and rule scores; jobs are still killed at their walltime). `user`,
    /// `last2`, `model`: predicted at each job's submission from the jobs completed before
    /// it on the trace's own timeline (submit + wait + run), over the whole trace; `oracle`:
    /// the true run time. See docs/validation.md.
    #[arg(long, value_enum, requires = "trace")]
    pub estimate: Option<PlanEstimate>,
}

impl TraceReplayArgs {
    /// How the trace is read and laid out.
    pub fn options(&self) -> TraceOptions {
        TraceOptions {
            skip_bad_lines: self.skip_bad_lines,
            cluster: self.cluster,
            estimate: self.estimate,
        }
    }

    /// The windows asked for.
    pub fn windows(&self) -> WindowChoice {
        match (self.windows, self.window.is_empty()) {
            (Some(random), _) => WindowChoice::Random(random),
            (None, true) => WindowChoice::Whole,
            (None, false) => WindowChoice::Spans(self.window.clone()),
        }
    }
}

/// The shape of generated snapshots, shared by `generate` and `dataset build`.
#[derive(Debug, Clone, Args)]
pub struct ShapeArgs {
    /// Queue length of each snapshot: MIN..MAX, inclusive, drawn uniformly; or one length
    /// [default: 8..12].
    #[arg(long)]
    pub queue: Option<QueueRange>,

    /// Number of servers [default: the family's: uniform 2-4, hpc 8, dl 4].
    #[arg(long)]
    pub servers: Option<usize>,

    /// Number of running jobs at `now` [default: the family's]. Conflicts with --load.
    #[arg(long, conflicts_with = "load")]
    pub running: Option<usize>,

    /// Fraction of the first resource (hpc: cores, dl: GPUs) kept busy by running jobs at
    /// `now`, in [0, 1) [default: the family's]. Conflicts with --running.
    #[arg(long)]
    pub load: Option<f64>,

    /// Probability in [0, 1] that a queued job depends on an earlier queued or a running job
    /// [default: 0].
    #[arg(long)]
    pub deps: Option<f64>,

    /// Seed of every random choice: the same seed gives the same bytes, whatever the number of
    /// threads.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl ShapeArgs {
    /// The queue range asked for, or 8..12.
    pub fn queue(&self) -> QueueRange {
        self.queue.unwrap_or(QueueRange { min: 8, max: 12 })
    }

    /// A generator configuration of `family` with these settings (the family's defaults for
    /// the others).
    pub fn config(&self, family: Family) -> Config {
        let mut config = Config::new(family, self.seed);
        let queue = self.queue();
        config.queue_min = queue.min;
        config.queue_max = queue.max;
        config.servers = self.servers;
        config.load = match (self.running, self.load) {
            (Some(n), _) => Some(Load::Jobs(n)),
            (None, Some(f)) => Some(Load::Fraction(f)),
            (None, None) => None,
        };
        config.dep_prob = self.deps.unwrap_or(0.0);
        config
    }

    /// The options given that shape a sampled cluster (not the queue range or the seed): they
    /// mean nothing when the snapshots come from elsewhere.
    pub fn cluster_options_given(&self) -> Vec<&'static str> {
        [
            ("--servers", self.servers.is_some()),
            ("--running", self.running.is_some()),
            ("--load", self.load.is_some()),
            ("--deps", self.deps.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }
}

/// A queue-length range such as `8..12` (inclusive) or a single length such as `10`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueRange {
    pub min: usize,
    pub max: usize,
}

impl std::str::FromStr for QueueRange {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!("`{s}` is not a queue range: write MIN..MAX (inclusive, e.g. 8..12) or one length (e.g. 10)")
        };
        let (min, max) = match s.split_once("..") {
            Some((a, b)) => (a, b.strip_prefix('=').unwrap_or(b)),
            None => (s, s),
        };
        let min: usize = min.trim().parse().map_err(|_| bad())?;
        let max: usize = max.trim().parse().map_err(|_| bad())?;
        if min == 0 || min > max {
            return Err(format!("queue range `{s}` must satisfy 1 <= MIN <= MAX"));
        }
        Ok(QueueRange { min, max })
    }
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Snapshot family. `uniform`: small heterogeneous clusters with 3 resources (cores,
    /// mem_gib, gpus) and uniform demands. `hpc`: Lublin-Feitelson-like rigid HPC jobs on
    /// identical multi-core nodes. `dl`: deep-learning training jobs on GPU servers, with model,
    /// batch size, GPU count and epochs in `meta`. docs/generator.md lists every distribution.
    /// [default: hpc]
    #[arg(long, value_enum)]
    pub family: Option<Family>,

    /// Number of snapshots to write.
    #[arg(long, short = 'n', default_value_t = 100)]
    pub count: usize,

    #[command(flatten)]
    pub shape: ShapeArgs,

    /// Output file (JSON Lines); standard output when absent or `-`.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,

    /// Cut snapshots from an online replay of this SWF trace (plain or gzipped) instead of
    /// sampling a family: at the selected events (instants with a waiting queue), the state
    /// after that instant's completions and arrivals and before the start rule starts jobs,
    /// on one pool server of the trace's MaxProcs cores. Queues longer than --queue's MAX are
    /// cut to the oldest jobs; shorter than MIN are skipped. -n caps the count. The cluster
    /// comes from the trace: --family, --servers, --running, --load and --deps are refused.
    /// See docs/traces.md.
    // Not `conflicts_with_all`: a conflict makes clap skip the `requires = "from_trace"` of
    // the options below (clap-rs/clap#4520); `generate` refuses them itself.
    #[arg(long, value_name = "FILE")]
    pub from_trace: Option<PathBuf>,

    /// With --from-trace: the priority rule that drives the replay.
    #[arg(long, value_enum, default_value = "fcfs", requires = "from_trace")]
    pub policy: Rule,

    /// With --from-trace: how the replay starts jobs from the ordered queue.
    #[arg(long, value_enum, default_value = "easy", requires = "from_trace")]
    pub start_rule: schedlm_model::sim::StartRule,

    /// With --from-trace: cut every N-th event (the default is every event).
    #[arg(
        long,
        value_name = "N",
        requires = "from_trace",
        conflicts_with = "sample"
    )]
    pub every: Option<usize>,

    /// With --from-trace: cut K events drawn uniformly without replacement (ChaCha8 seeded by
    /// --seed).
    #[arg(long, value_name = "K", requires = "from_trace")]
    pub sample: Option<usize>,

    /// With --from-trace: replace each queued walltime by this run-time estimate (made at the
    /// job's submission from the replay's earlier completions); the request is kept in
    /// `meta.requested_walltime`.
    #[arg(long, value_enum, requires = "from_trace")]
    pub estimate: Option<schedlm_generator::estimate::Estimator>,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// JSON Lines file of instances (`-` for standard input).
    pub file: PathBuf,
}

#[derive(Debug, Args)]
pub struct ScheduleArgs {
    /// Priority rule that orders each queue (SPEC section 6). `fcfs`: earliest submit first;
    /// `sjf`: shortest walltime; `saf`: smallest walltime x cores; `ljf`: longest walltime;
    /// `wfp3`, `unicep`, `f1`: published scoring rules; `random`: seeded shuffle. Ties go to the
    /// earlier submit, then the earlier queue position.
    #[arg(long, value_enum, default_value = "fcfs")]
    pub policy: Rule,

    /// Use the `strict` dispatcher (no overtaking: a job never starts before the job placed
    /// just before it) instead of the serial one (backfilling allowed).
    #[arg(long)]
    pub strict: bool,

    /// Seed of the `random` policy; instance k of the file uses stream k of this seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// F1's t_origin in seconds: the first submit of the trace the snapshots come from.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub origin: i64,

    /// JSON Lines file of instances (`-` for standard input).
    pub file: PathBuf,

    /// Output file: one JSON object per valid instance with `line`, `policy`, `variant`,
    /// `order` (queued ids in dispatch order), `starts`, `ends` and `servers` (id -> value) and
    /// `objectives` (`bsld`, `wait`, `flow`, `makespan`). Standard output when absent or `-`.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}

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

    /// Time budget of the optimal solver per snapshot, e.g. 2s or 500ms.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub time_limit: Duration,

    /// Directory that receives everything the pipeline makes: the snapshots of the table
    /// (`<family>.jsonl`), the dataset (`data/`), the trained model (`model/`) and the report
    /// (`report/report.html`, `report.md`, `summary.json`, `instances.csv`).
    #[arg(long, short = 'o', default_value = "schedlm-out")]
    pub out: PathBuf,

    /// Stop after the comparison table (nothing is written).
    #[arg(long)]
    pub table_only: bool,

    /// Snapshots of the dataset the tiny model is trained on and evaluated on (family
    /// `uniform`, queues of 6..8 jobs, the B1 setting of docs/learning.md); 80/5/15 split.
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u64).range(20..))]
    pub train_count: u64,

    /// Training epochs of the tiny GPT.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub epochs: u64,
}

/// Parses a duration such as `10s`, `500ms`, `2m` or `1h 30m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s)
        .map_err(|e| format!("`{s}` is not a duration ({e}); write e.g. 10s, 500ms or 2m"))
}

#[derive(Debug, Args)]
pub struct SolveArgs {
    /// Solver. `auto`: priority rules, then local search, then branch and bound, then (serial
    /// dispatcher) the HiGHS MILP for a lower bound when branch and bound does not finish.
    /// `bnb`: branch and bound over orders, exact. `milp`: time-indexed MILP (exact on one
    /// server with times on its grid, a lower bound otherwise; serial only). `ls`: local search,
    /// a good order without proof.
    #[arg(long, value_enum, default_value = "auto")]
    pub solver: Method,

    /// Objective to minimise (SPEC section 4). `bsld`: mean bounded slowdown (tau = 10 s);
    /// `wait`: mean wait [s]; `flow`: weighted mean flow time [s]; `makespan`: latest completion
    /// minus now [s].
    #[arg(long, value_enum, default_value = "bsld")]
    pub objective: Objective,

    /// Use the `strict` dispatcher (no overtaking) instead of the serial one.
    #[arg(long)]
    pub strict: bool,

    /// Wall-clock budget per instance, e.g. 10s, 500ms, 2m. A run stopped by it reports its
    /// best order, a lower bound and the gap, and is never called optimal.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub time_limit: Duration,

    /// Most branch-and-bound nodes per instance [default: no limit]. A node limit makes a
    /// stopped run deterministic, unlike a time limit.
    #[arg(long)]
    pub node_limit: Option<u64>,

    /// Seed of local search.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Worker threads (instances are solved in parallel, one per task) [default: all cores].
    #[arg(long, short = 'j')]
    pub threads: Option<usize>,

    /// JSON Lines file of instances (`-` for standard input).
    pub file: PathBuf,

    /// Output file: one JSON object per valid instance with `line`, `solver`, `objective`,
    /// `variant`, `order` (queued ids), `value`, `lower_bound`, `gap` ((value - bound) / bound),
    /// `proven_optimal`, `status` (optimal, time_limit, node_limit, bounded, heuristic), `nodes`,
    /// `time_ms` and `baselines` (each priority rule's value). Standard output when absent or `-`.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// PSPLIB single-mode RCPSP files (`.sm`, e.g. the j30 set) as one-server instances: one
    /// server "pool" with the renewable capacities R1..R4, every non-dummy activity queued at
    /// now = 0 with submit 0, walltime = duration, demand = requests and deps = predecessors.
    /// The dummy source and sink (duration 0) are dropped, their precedences passed through.
    /// Solve with `--objective makespan` to compare with published optima.
    Psplib(ImportPsplibArgs),
}

#[derive(Debug, Args)]
pub struct ImportPsplibArgs {
    /// `.sm` files, or directories whose `.sm` files are read in name order.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,

    /// Output file (JSON Lines, one instance per input file, in input order); standard output
    /// when absent or `-`.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(args.split_whitespace())
    }

    /// An option that only means something with another one is refused without it, also when
    /// a conflicting option is given (clap skips `requires` then: clap-rs/clap#4520).
    #[test]
    fn options_that_need_another_are_refused_without_it() {
        for line in [
            "schedlm generate --family hpc --policy sjf",
            "schedlm generate --servers 3 --every 2",
            "schedlm generate --estimate last2",
            "schedlm estimate --train a.swf --test b.swf --split 0.3",
            "schedlm replay --trace t.swf -o out --window 0:3 --windows 2x3",
        ] {
            assert!(parse(line).is_err(), "accepted: {line}");
        }
        for line in [
            "schedlm generate --from-trace t.swf --policy sjf --every 2",
            "schedlm estimate --trace t.swf --split 0.3",
            "schedlm replay --trace t.swf -o out --windows 2x3 --estimate oracle",
        ] {
            assert!(parse(line).is_ok(), "refused: {line}");
        }
    }

    /// What clap cannot refuse, the commands do, naming the options.
    #[test]
    fn generated_shape_options_are_refused_with_snapshots_from_elsewhere() {
        let Ok(Cli {
            command: Command::Generate(args),
        }) = parse("schedlm generate --from-trace t.swf --family dl --load 0.5")
        else {
            panic!("does not parse");
        };
        let e = crate::cmd::generate::run(&args).unwrap_err().to_string();
        assert!(e.contains("drop --family, --load"), "{e}");
        let Ok(Cli {
            command: Command::Estimate(args),
        }) = parse("schedlm estimate --trace t.swf --train a.swf --test b.swf")
        else {
            panic!("does not parse");
        };
        let e = crate::cmd::estimate::run(&args).unwrap_err().to_string();
        assert!(e.contains("not both"), "{e}");
        let Ok(Cli {
            command: Command::Dataset(command),
        }) = parse("schedlm dataset build --from x.jsonl --family dl --queue 3 --deps 0.1 -o d")
        else {
            panic!("does not parse");
        };
        let e = crate::cmd::dataset::run(&command).unwrap_err().to_string();
        assert!(e.contains("drop --family, --queue, --deps"), "{e}");
    }
}
