//! Counted search work: the budget that decides a result the same way on every machine.
//!
//! A wall-clock limit makes a solver's answer depend on how fast the machine was while it ran:
//! under load, on a shared login node or on a slower core, the same instance gets another
//! label. A *work limit* counts what the solvers do instead, like CP-SAT's deterministic time
//! or Gurobi's `WorkLimit`, so the same instance, settings and limit give the same order,
//! bound, status and counters on any machine, at any load, with any number of threads.
//!
//! One **unit** is about the cost of the dispatcher placing one job; each solver counts:
//!
//! - branch and bound: half a unit per job of the queue for every node, rounded up (a node's
//!   bounds and propagation touch every job), so a budget of `w` units buys
//!   `w / ceil(jobs / 2)` nodes ([`nodes_for`]);
//! - local search: one unit per job the dispatcher places while evaluating candidates and
//!   committing orders (the incremental evaluation places only the jobs after the first
//!   change), and one per candidate;
//! - the MILP: [`LP_ITERATION_UNITS`] units per simplex iteration as HiGHS counts them (its
//!   MIP's total LP iterations), HiGHS on one thread, so the MILP is stopped at the same
//!   iteration on every machine.
//!
//! The weights were calibrated once (docs/benchmarks.md, "Work units"), so that a unit costs
//! about the same CPU time in each solver on the snapshots labels are made from by default
//! (`uniform`, 16..20 jobs); [`UNITS_PER_SECOND`] is that rate. On other snapshots a unit
//! costs more or less time (a branch-and-bound node of an `hpc` snapshot costs about 50 times
//! one of `uniform`, since its bounds do more), which moves the time a limit takes, never its
//! answer. The rate is a guide for choosing a limit, never used to decide anything.

use std::time::{Duration, Instant};

/// Units one simplex iteration of the MILP costs (HiGHS on a 16..20-job time-indexed model:
/// about 0.6 ms an iteration, model building and presolve included).
pub const LP_ITERATION_UNITS: u64 = 3_500;

/// Units the solvers get through in a CPU second of the reference machine, measured on
/// `uniform` 16..20 snapshots (docs/benchmarks.md, "Work units"). A guide only.
pub const UNITS_PER_SECOND: u64 = 6_000_000;

/// The default work limit of `dataset build`: about two seconds of one core of the reference
/// machine, the wall-clock default it replaces.
pub const DEFAULT_DATASET_WORK: u64 = 2 * UNITS_PER_SECOND;

/// Units one branch-and-bound node costs on a queue of `jobs` jobs: half a unit per job,
/// rounded up.
pub fn node_units(jobs: usize) -> u64 {
    (jobs.max(1) as u64).div_ceil(2)
}

/// Nodes a budget of `work` units buys on a queue of `jobs` jobs (at least the root).
pub fn nodes_for(work: u64, jobs: usize) -> u64 {
    (work / node_units(jobs)).max(1)
}

/// Simplex iterations a budget of `work` units buys.
pub fn lp_iterations_for(work: u64) -> u64 {
    work / LP_ITERATION_UNITS
}

/// The budget a label was computed with, as records and manifests state it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Budget {
    /// Units of counted work (`--work-limit`); `None`: the clock alone decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_limit: Option<u64>,
    /// Wall-clock limit in milliseconds (`--time-limit`); with a work limit only a cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit_ms: Option<u64>,
    /// Branch-and-bound node limit (`--node-limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_limit: Option<u64>,
}

impl Budget {
    /// Whether a result under this budget is the same on every machine unless the clock
    /// stopped it: a work limit, or a node limit without a time limit.
    pub fn is_counted(&self) -> bool {
        self.work_limit.is_some() || (self.node_limit.is_some() && self.time_limit_ms.is_none())
    }
}

/// What one phase of a solve may spend: counted work, a wall-clock deadline, or both (the
/// deadline then only caps the work).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowance {
    /// Units of work; `None`: not counted.
    pub work: Option<u64>,
    /// The instant the phase must end by; `None`: no cap.
    pub deadline: Option<Instant>,
}

impl Allowance {
    /// Time left before the deadline (`None` without one).
    pub fn time_left(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Whether the deadline has passed.
    pub fn timed_out(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// `--work-limit`: units of counted search work, or none (the clock alone decides).
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

impl WorkLimit {
    /// The time limit of a solve under this work limit: the one given; without one, 10 s
    /// unless a work limit is set (then the work decides, the same on every machine).
    pub fn time_limit(
        work: Option<WorkLimit>,
        time: Option<std::time::Duration>,
    ) -> Option<std::time::Duration> {
        match (time, work) {
            (Some(t), _) => Some(t),
            (None, Some(WorkLimit(Some(_)))) => None,
            (None, _) => Some(std::time::Duration::from_secs(10)),
        }
    }
}

/// Parses `--work-limit`: [`parse_work`], or `none` (the clock alone decides; give a time
/// limit then).
pub fn parse_work_limit(s: &str) -> Result<WorkLimit, String> {
    if s.trim().eq_ignore_ascii_case("none") {
        return Ok(WorkLimit(None));
    }
    parse_work(s).map(|w| WorkLimit(Some(w)))
}

/// Parses a work limit as written on the command line: a whole number with an optional `k`,
/// `M` or `G` suffix (thousands, millions, billions), e.g. `5M` or `2500000`.
pub fn parse_work(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, scale) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1_000),
        Some((i, 'M' | 'm')) => (&t[..i], 1_000_000),
        Some((i, 'G' | 'g')) => (&t[..i], 1_000_000_000),
        _ => (t, 1),
    };
    let bad = || {
        format!("`{}` is not a work limit: give a whole number of units with an optional k, M or G (e.g. 5M)", text.escape_debug())
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    n.checked_mul(scale).filter(|&w| w > 0).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_limits_parse_with_suffixes() {
        assert_eq!(parse_work("2500000"), Ok(2_500_000));
        assert_eq!(parse_work("5M"), Ok(5_000_000));
        assert_eq!(parse_work("20k"), Ok(20_000));
        assert_eq!(parse_work("1G"), Ok(1_000_000_000));
        for bad in ["", "M", "0", "-3", "1.5M", "20000000000G", "5 s"] {
            assert!(parse_work(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn budgets_buy_whole_nodes_and_at_least_the_root() {
        assert_eq!(nodes_for(0, 20), 1);
        assert_eq!(nodes_for(node_units(20) * 7 + 3, 20), 7);
        assert_eq!(node_units(0), 1);
        assert_eq!(node_units(17), 9);
        assert_eq!(lp_iterations_for(LP_ITERATION_UNITS * 9), 9);
    }
}
