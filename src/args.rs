//! Argument groups and value parsers shared by several commands, each defined once with the
//! long help that `schedlm <command> --help` prints: the dispatcher ([`DispatcherArgs`]), the
//! shape of generated snapshots
//! ([`ShapeArgs`], `generate` and `dataset build`), how a trace is replayed
//! ([`TraceReplayArgs`], `replay` and `eval --trace`), queue ranges and durations. A command's
//! own arguments stand beside it in `cmd/`.

use clap::Args;
use std::time::Duration;

use schedlm_eval::replay::{
    Cluster, PlanEstimate, RandomWindows, Span, TraceOptions, WindowChoice,
};
use schedlm_generator::{Config, Family};
use schedlm_model::sim::StartRule;
use schedlm_model::Variant;

/// Which dispatcher turns an order into a schedule (SPEC section 3), shared by `schedule`,
/// `solve` and `dataset build`.
#[derive(Debug, Clone, Copy, Args)]
pub struct DispatcherArgs {
    /// Use the `strict` dispatcher (no overtaking: a job never starts before the job placed
    /// just before it) instead of the serial one (backfilling allowed).
    #[arg(long)]
    pub strict: bool,
}

impl DispatcherArgs {
    /// The dispatcher variant asked for.
    pub fn variant(self) -> Variant {
        if self.strict {
            Variant::Strict
        } else {
            Variant::Serial
        }
    }
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
    /// `last2`, `model`, `similar`: predicted at each job's submission from the jobs completed before
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

    /// Number of servers [default: the family's: uniform 2-4, hpc 8, dl 4, mixed 4].
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

    /// hpc: the partition's walltime limit (a short or debug partition), e.g. 1h: jobs whose
    /// request would exceed it are drawn again. At least 5m. One of the settings that give
    /// headroom over the rules (docs/generator.md).
    #[arg(long, value_name = "DURATION", value_parser = parse_seconds)]
    pub max_walltime: Option<i64>,

    /// Every family: the queue arrived in a burst within this span before `now` (a job array,
    /// a sweep, a deadline), e.g. 10m: the family's arrival times are scaled down to it, in the
    /// same order. 0 puts every submission at `now`.
    #[arg(long, value_name = "DURATION", value_parser = parse_seconds_or_zero)]
    pub queue_span: Option<i64>,

    /// hpc and dl: the share of wide jobs, e.g. 0.3 or 30%: 16 to 32 cores (half a node or
    /// more) on hpc, 4 or 8 GPUs on dl (GPU fragmentation).
    #[arg(long, value_name = "SHARE", value_parser = parse_share)]
    pub wide: Option<f64>,

    /// hpc: the share of memory-bound jobs: 1 to 4 cores with half to all of the largest
    /// node's memory, e.g. 0.3 or 30%.
    #[arg(long, value_name = "SHARE", value_parser = parse_share)]
    pub mem_bound: Option<f64>,

    /// hpc and dl: heterogeneous servers, node types in turn (hpc: 32 cores/128 GiB, 64/256,
    /// 32/512, 16/64; dl: 8 GPUs/64 cores/512 GiB and 4/32/256) instead of identical nodes.
    #[arg(long)]
    pub mixed_nodes: bool,

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
        let queue = self.queue();
        let shape = schedlm_generator::Shape {
            servers: self.servers,
            running: self.running,
            load: self.load,
            deps: self.deps,
            hard: schedlm_generator::Hard {
                max_walltime: self.max_walltime,
                queue_span: self.queue_span,
                wide: self.wide.unwrap_or(0.0),
                mem_bound: self.mem_bound.unwrap_or(0.0),
                mixed_nodes: self.mixed_nodes,
            },
        };
        Config::shaped(family, queue.min, queue.max, self.seed, &shape)
    }

    /// The options given that shape a sampled cluster (not the queue range or the seed): they
    /// mean nothing when the snapshots come from elsewhere.
    pub fn cluster_options_given(&self) -> Vec<&'static str> {
        [
            ("--servers", self.servers.is_some()),
            ("--running", self.running.is_some()),
            ("--load", self.load.is_some()),
            ("--deps", self.deps.is_some()),
            ("--max-walltime", self.max_walltime.is_some()),
            ("--queue-span", self.queue_span.is_some()),
            ("--wide", self.wide.is_some()),
            ("--mem-bound", self.mem_bound.is_some()),
            ("--mixed-nodes", self.mixed_nodes),
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

/// [`parse_seconds`], where 0 is allowed.
pub fn parse_seconds_or_zero(s: &str) -> Result<i64, String> {
    if s.trim() == "0" {
        return Ok(0);
    }
    parse_seconds(s)
}

/// Parses a whole number of seconds, `5400` or a duration such as `1h 30m`, at least 1 s.
pub fn parse_seconds(s: &str) -> Result<i64, String> {
    let seconds = match s.trim().parse::<i64>() {
        Ok(n) => n,
        Err(_) => i64::try_from(parse_duration(s)?.as_secs()).unwrap_or(i64::MAX),
    };
    if seconds < 1 {
        return Err(format!("`{s}` must be at least one second"));
    }
    Ok(seconds)
}

/// `--work-limit`: units of counted search work (`schedlm_solver::work`), or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkLimit(pub Option<u64>);

impl std::fmt::Display for WorkLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            None => f.write_str("none"),
            Some(w) if w % 1_000_000 == 0 => write!(f, "{}M", w / 1_000_000),
            Some(w) if w % 1_000 == 0 => write!(f, "{}k", w / 1_000),
            Some(w) => write!(f, "{w}"),
        }
    }
}

/// Parses a work limit that must be a number (no `none`).
pub fn parse_work(s: &str) -> Result<u64, String> {
    schedlm_solver::work::parse_work(s)
}

/// Parses `--work-limit`: a whole number of units with an optional k, M or G (`5M`), or
/// `none` (the clock alone decides; give a time limit then).
pub fn parse_work_limit(s: &str) -> Result<WorkLimit, String> {
    if s.trim().eq_ignore_ascii_case("none") {
        return Ok(WorkLimit(None));
    }
    schedlm_solver::work::parse_work(s).map(|w| WorkLimit(Some(w)))
}

/// Parses a duration such as `10s`, `500ms`, `2m` or `1h 30m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s)
        .map_err(|e| format!("`{s}` is not a duration ({e}); write e.g. 10s, 500ms or 2m"))
}

/// Parses a share written as a percentage (`1%`, `0.5%`) or a fraction below 1 (`0.01`).
/// A bare number of 1 or more is refused: `2` could mean 2% or 200%.
pub fn parse_share(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (number, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 0.01),
        None => (t, 1.0),
    };
    let v: f64 = number.parse().map_err(|_| {
        format!("`{s}` is not a share; write a percentage such as 1% or a fraction such as 0.01")
    })?;
    let v = v * scale;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("`{s}`: a share must be 0 or more"));
    }
    if scale == 1.0 && v >= 1.0 {
        return Err(format!(
            "`{s}` is ambiguous: write {s}% for a percentage, or a fraction below 1"
        ));
    }
    Ok(v)
}

#[cfg(test)]
mod share_tests {
    use super::parse_share;

    #[test]
    fn shares_are_percentages_or_fractions() {
        assert_eq!(parse_share("1%"), Ok(0.01));
        assert_eq!(parse_share("0.5 %"), Ok(0.005));
        assert_eq!(parse_share("0.02"), Ok(0.02));
        assert_eq!(parse_share("150%"), Ok(1.5));
        assert!(parse_share("2").unwrap_err().contains("ambiguous"));
        assert!(parse_share("-1%").is_err());
        assert!(parse_share("x").is_err());
    }
}
