//! What an online replay (SPEC section 5) runs on: a cleaned SWF trace laid out as servers,
//! with the planning lengths of `--estimate`, and the windows of it to replay.
//!
//! [`ReplayTrace::read`] reads and lays out the trace once; [`select_windows`] picks the
//! windows (the whole trace, listed `START:COUNT` spans, or `NxLEN` random ones); and
//! [`ReplayTrace::simulation`] makes the simulator of one window, started from an empty
//! cluster. The replay loop itself is [`crate::online::evaluate_online`], used by both
//! `schedlm replay` (one priority rule) and `schedlm eval --trace` (any policies).

use std::path::Path;
use std::str::FromStr;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use schedlm_generator::trace::cut::window_jobs;
use schedlm_generator::trace::estimate::{completions, predict_online, Estimator, Predictor};
use schedlm_generator::trace::swf::{
    cluster, read_swf_with_waits, ClusterShape, SwfOptions, Trace,
};
use schedlm_model::sim::{Simulation, StartRule};
use schedlm_model::{Server, Time};
use serde::{Deserialize, Serialize};

use crate::error::EvalError;

/// How a trace is replayed: the flags shared by `schedlm replay` and `schedlm eval --trace`.
#[derive(Debug, Clone, clap::Args)]
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
    /// How the trace is read and laid out ([`TraceOptions`]).
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

/// How a trace is read and laid out, and what the replay plans with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceOptions {
    /// Skip and count malformed lines instead of stopping at the first one.
    pub skip_bad_lines: bool,
    /// The machine layout.
    pub cluster: Cluster,
    /// What reservations, backfill tests and rule scores plan with; `None`: the walltimes.
    pub estimate: Option<PlanEstimate>,
}

/// The machine layout of a replay: `pool` (one server with all processors) or `nodes:N:K`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cluster(pub ClusterShape);

impl Default for Cluster {
    fn default() -> Cluster {
        Cluster(ClusterShape::Pool)
    }
}

impl FromStr for Cluster {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "pool" {
            return Ok(Cluster(ClusterShape::Pool));
        }
        let bad = || {
            format!("`{s}` is not a cluster: write `pool` or `nodes:N:K` (N servers of K cores)")
        };
        let rest = s.strip_prefix("nodes:").ok_or_else(bad)?;
        let (n, k) = rest.split_once(':').ok_or_else(bad)?;
        Ok(Cluster(ClusterShape::Nodes {
            nodes: n.trim().parse().map_err(|_| bad())?,
            cores: k.trim().parse().map_err(|_| bad())?,
        }))
    }
}

impl std::fmt::Display for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            ClusterShape::Pool => f.write_str("pool"),
            ClusterShape::Nodes { nodes, cores } => write!(f, "nodes:{nodes}:{cores}"),
        }
    }
}

/// What a replay plans with instead of the requested walltime (`--estimate`). Jobs still run
/// min(runtime, walltime) and are killed at their walltime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlanEstimate {
    /// The requested walltime (the same as no estimate).
    User,
    /// The mean run time of the user's last two completed jobs.
    Last2,
    /// The online regression of docs/traces.md.
    Model,
    /// The run time of the most similar of the user's recent jobs (docs/traces.md).
    Similar,
    /// The true run time min(runtime, walltime) (an upper reference).
    Oracle,
}

impl PlanEstimate {
    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            PlanEstimate::User => "user",
            PlanEstimate::Last2 => "last2",
            PlanEstimate::Model => "model",
            PlanEstimate::Similar => "similar",
            PlanEstimate::Oracle => "oracle",
        }
    }
}

/// A trace read, cleaned and laid out for replay.
#[derive(Debug, Clone)]
pub struct ReplayTrace {
    /// The file as given.
    pub path: String,
    /// The cleaned trace: its header, the kept jobs sorted by (submit, number), and the cleaning
    /// report.
    pub trace: Trace,
    /// Resource names of the layout (`cores` for an SWF trace).
    pub resources: Vec<String>,
    /// The servers of the layout: one `pool` server with all the machine's processors, or the
    /// N nodes `n0`, `n1`, ... of K cores each.
    pub servers: Vec<Server>,
    /// Each job's planning length, or `None` to plan with walltimes.
    pub plans: Option<Vec<Time>>,
    /// The first submit: F1's t_origin.
    pub origin: Time,
    /// The options it was read with.
    pub options: TraceOptions,
    /// Seconds spent reading, cleaning and estimating.
    pub read_seconds: f64,
}

impl ReplayTrace {
    /// Reads, cleans and lays out the trace at `path`; an empty trace (after cleaning) and a
    /// layout the jobs do not fit are errors.
    pub fn read(path: &Path, options: &TraceOptions) -> Result<ReplayTrace, EvalError> {
        let name = path.display().to_string();
        let start = Instant::now();
        let swf = SwfOptions {
            skip_bad_lines: options.skip_bad_lines,
            ..SwfOptions::default()
        };
        let (trace, waits) = read_swf_with_waits(path, &swf)
            .map_err(|e| EvalError::Input(format!("cannot read the trace: {e}")))?;
        let Some(origin) = trace.jobs.first().map(|j| j.submit) else {
            return Err(EvalError::Input(format!(
                "{name}: no job left after cleaning"
            )));
        };
        let plans = plans(&trace, &waits, options.estimate)?;
        let (resources, servers) = cluster(&trace, options.cluster.0).map_err(|e| {
            EvalError::Input(format!("cannot lay out {name} as {}: {e}", options.cluster))
        })?;
        Ok(ReplayTrace {
            path: name,
            trace,
            resources,
            servers,
            plans,
            origin,
            options: options.clone(),
            read_seconds: start.elapsed().as_secs_f64(),
        })
    }

    /// The simulator of one window, from an empty cluster.
    pub fn simulation(&self, window: &Window) -> Result<Simulation, EvalError> {
        let jobs = window_jobs(
            &self.trace,
            window.start..window.start + window.count,
            self.plans.as_deref(),
        );
        Simulation::new(self.resources.clone(), self.servers.clone(), jobs)
            .map_err(|e| EvalError::Input(format!("window {}:{}: {e}", window.start, window.count)))
    }
}

/// Each trace job's planning length, or `None` to plan with walltimes.
fn plans(
    trace: &Trace,
    waits: &[Option<i64>],
    choice: Option<PlanEstimate>,
) -> Result<Option<Vec<Time>>, EvalError> {
    let estimator = match choice {
        None | Some(PlanEstimate::User) => return Ok(None),
        Some(PlanEstimate::Oracle) => {
            let truth = trace.jobs.iter().map(|j| j.runtime.min(j.walltime).max(1));
            return Ok(Some(truth.collect()));
        }
        Some(PlanEstimate::Last2) => Estimator::Last2,
        Some(PlanEstimate::Model) => Estimator::Model,
        Some(PlanEstimate::Similar) => Estimator::Similar,
    };
    let mut predictor = Predictor::new(estimator);
    let done = completions(trace, Some(waits));
    predict_online(&mut predictor, &trace.jobs, &done, 0)
        .map(Some)
        .map_err(|e| EvalError::Input(format!("cannot estimate run times: {e}")))
}

/// One window of the trace: `count` jobs from index `start` of the cleaned trace, the first
/// being SWF job `first_job`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// Index of the window's first job in the cleaned trace (column `start` of `windows.csv`).
    pub start: usize,
    /// Number of jobs in the window (consecutive in submit order).
    pub count: usize,
    /// SWF job number (field 1) of the window's first job.
    pub first_job: i64,
}

/// A window as written on the command line: `START:COUNT`, COUNT jobs from index START.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Index of the span's first job in the cleaned trace (START, from 0).
    pub start: usize,
    /// Number of jobs in the span (COUNT, at least 1).
    pub count: usize,
}

impl FromStr for Span {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not a window: write START:COUNT, e.g. 5000:1024");
        let (a, b) = s.split_once(':').ok_or_else(bad)?;
        let start = a.trim().parse().map_err(|_| bad())?;
        let count: usize = b.trim().parse().map_err(|_| bad())?;
        if count == 0 {
            return Err(format!("window `{s}` has no job: COUNT must be at least 1"));
        }
        Ok(Span { start, count })
    }
}

/// Random windows as written on the command line: `NxLEN`, N windows of LEN jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RandomWindows {
    /// Number of windows (N, at least 1).
    pub count: usize,
    /// Jobs per window (LEN, at least 1).
    pub len: usize,
}

impl FromStr for RandomWindows {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not a window set: write NxLEN, e.g. 10x1024");
        let (a, b) = s.split_once(['x', 'X']).ok_or_else(bad)?;
        let count: usize = a.trim().parse().map_err(|_| bad())?;
        let len: usize = b.trim().parse().map_err(|_| bad())?;
        if count == 0 || len == 0 {
            return Err(format!("`{s}`: N and LEN must be at least 1"));
        }
        Ok(RandomWindows { count, len })
    }
}

/// Which windows to replay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum WindowChoice {
    /// The whole trace as one window.
    #[default]
    Whole,
    /// The listed spans, in order.
    Spans(Vec<Span>),
    /// Random windows, starts drawn by [`random_starts`].
    Random(RandomWindows),
}

/// The windows of `choice` over `trace`; a span past the end and random windows longer than
/// the trace are errors.
pub fn select_windows(
    trace: &Trace,
    choice: &WindowChoice,
    seed: u64,
) -> Result<Vec<Window>, EvalError> {
    let n = trace.jobs.len();
    let window = |start: usize, count: usize| Window {
        start,
        count,
        first_job: trace.jobs.get(start).map_or(-1, |j| j.number),
    };
    match choice {
        WindowChoice::Whole => Ok(vec![window(0, n)]),
        WindowChoice::Random(r) if r.len > n => Err(EvalError::Input(format!(
            "--windows {}x{}: the trace has only {n} jobs",
            r.count, r.len
        ))),
        WindowChoice::Random(r) => Ok(random_starts(n, r.count, r.len, seed)
            .into_iter()
            .map(|start| window(start, r.len))
            .collect()),
        WindowChoice::Spans(spans) => spans
            .iter()
            .map(|s| {
                if s.start + s.count > n {
                    return Err(EvalError::Input(format!(
                        "--window {}:{} runs past the trace's {n} jobs (last index {})",
                        s.start,
                        s.count,
                        n.saturating_sub(1)
                    )));
                }
                Ok(window(s.start, s.count))
            })
            .collect(),
    }
}

/// `count` window starts for windows of `len` consecutive jobs out of `total` (in submit
/// order), each drawn uniformly from 0..=total-len with ChaCha8 seeded by `seed`. Empty when
/// `len` is 0 or above `total`.
pub fn random_starts(total: usize, count: usize, len: usize, seed: u64) -> Vec<usize> {
    if len == 0 || len > total {
        return Vec::new();
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| rng.random_range(0..=total - len))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_command_line_forms() {
        assert_eq!(
            "5:10".parse::<Span>().unwrap(),
            Span {
                start: 5,
                count: 10
            }
        );
        assert!("5:0".parse::<Span>().is_err());
        assert!("5".parse::<Span>().is_err());
        assert_eq!(
            "10x1024".parse::<RandomWindows>().unwrap(),
            RandomWindows {
                count: 10,
                len: 1024
            }
        );
        assert!("10x0".parse::<RandomWindows>().is_err());
        assert_eq!("pool".parse::<Cluster>().unwrap(), Cluster::default());
        let nodes = "nodes:120:2".parse::<Cluster>().unwrap();
        assert_eq!(
            nodes,
            Cluster(ClusterShape::Nodes {
                nodes: 120,
                cores: 2
            })
        );
        assert_eq!(nodes.to_string(), "nodes:120:2");
        assert!("nodes:3".parse::<Cluster>().is_err());
    }

    #[test]
    fn random_starts_are_seeded_and_in_range() {
        let a = random_starts(1000, 10, 100, 1);
        assert_eq!(a, random_starts(1000, 10, 100, 1));
        assert_ne!(a, random_starts(1000, 10, 100, 2));
        assert!(a.iter().all(|&s| s <= 900));
        assert_eq!(random_starts(5, 3, 5, 0), vec![0, 0, 0]);
        assert!(random_starts(5, 3, 6, 0).is_empty());
    }
}
