//! One entry point for every solver, and the `auto` portfolio.
//!
//! `auto` runs the classic rules, then a quick branch and bound (2,000 nodes) from the best of
//! them, which proves most instances at once. Only if that fails: local search (a tenth of the
//! budget), branch and bound from its order with most of the rest, and, when branch and bound
//! does not finish, the time-indexed MILP (feature `milp`, serial dispatcher) with what is left,
//! for a lower bound and perhaps a better order. An order is called optimal only when branch
//! and bound finished, or when a proven bound matches its value.

use std::time::{Duration, Instant};

use schedlm_model::{Objective, Problem, Variant};

use crate::bnb::{self, BnbOptions};
use crate::local::{self, LsOptions};
use crate::rules::Rule;

/// Which solver to run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Solver {
    /// Rules, then local search, then branch and bound, then the MILP bound.
    #[default]
    Auto,
    /// Branch and bound alone (from the best rule).
    Bnb,
    /// The time-indexed MILP alone (serial dispatcher only).
    Milp,
    /// Local search alone (from the best rule).
    Ls,
}

impl Solver {
    /// The name used on the command line and in JSON: `auto`, `bnb`, `milp` or `ls`.
    pub fn name(self) -> &'static str {
        match self {
            Solver::Auto => "auto",
            Solver::Bnb => "bnb",
            Solver::Milp => "milp",
            Solver::Ls => "ls",
        }
    }
}

/// What to solve and within which limits.
#[derive(Debug, Clone)]
pub struct SolveOptions {
    /// Which solver to run (default `auto`).
    pub solver: Solver,
    /// The objective to minimise (SPEC section 4; default `bsld`).
    pub objective: Objective,
    /// The dispatcher that turns an order into a schedule: `serial` (SPEC section 3, the
    /// default) or `strict` (no overtaking).
    pub variant: Variant,
    /// Wall-clock budget of the whole call.
    pub time_limit: Duration,
    /// Node limit of branch and bound.
    pub node_limit: Option<u64>,
    /// Seed of local search.
    pub seed: u64,
    /// Threads for this one instance: branch and bound searches subtrees in parallel when
    /// above 1 (its order stays the single-thread one; see `bnb::parallel`). Give 1 when
    /// instances themselves run in parallel.
    pub threads: usize,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            solver: Solver::Auto,
            objective: Objective::Bsld,
            variant: Variant::Serial,
            time_limit: Duration::from_secs(10),
            node_limit: None,
            seed: 1,
            threads: 1,
        }
    }
}

/// How a solve ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SolveStatus {
    /// The order is proven optimal.
    Optimal,
    /// A limit stopped the proof; `lower_bound` and the gap say how far it may be.
    TimeLimit,
    /// Branch and bound stopped at its node limit before a proof (and no time limit stopped
    /// a later step).
    NodeLimit,
    /// The MILP finished but its bound is below the best order (several servers or times off
    /// the grid make it a relaxation).
    Bounded,
    /// A heuristic order with a bound but no proof attempt (local search).
    Heuristic,
}

impl SolveStatus {
    /// The status as written in reports and JSON (the same spelling as serde's):
    /// `optimal`, `time_limit`, `node_limit`, `bounded` or `heuristic`.
    pub fn name(self) -> &'static str {
        match self {
            SolveStatus::Optimal => "optimal",
            SolveStatus::TimeLimit => "time_limit",
            SolveStatus::NodeLimit => "node_limit",
            SolveStatus::Bounded => "bounded",
            SolveStatus::Heuristic => "heuristic",
        }
    }

    /// Which status a merged result reports: a proof wins, then the limit that stopped a proof.
    fn rank(self) -> u8 {
        match self {
            SolveStatus::Optimal => 4,
            SolveStatus::TimeLimit => 3,
            SolveStatus::NodeLimit => 2,
            SolveStatus::Bounded => 1,
            SolveStatus::Heuristic => 0,
        }
    }
}

/// The answer of a solver for one instance.
#[derive(Debug, Clone)]
pub struct Solution {
    /// Best order found (queue indices, dependency-feasible).
    pub order: Vec<usize>,
    /// Its objective value under the dispatcher.
    pub value: f64,
    /// A proven lower bound on the optimum over orders.
    pub lower_bound: f64,
    /// Whether `value` is proven optimal: branch and bound finished, or the bound matches
    /// the value within a relative 1e-9 (then `lower_bound == value`).
    pub proven_optimal: bool,
    /// How the solve ended; `Optimal` exactly when `proven_optimal`.
    pub status: SolveStatus,
    /// Branch-and-bound nodes explored.
    pub nodes: u64,
    /// Wall-clock time of the whole call, baselines included.
    pub elapsed: Duration,
    /// Each classic rule's objective value.
    pub baselines: Vec<(Rule, f64)>,
}

impl Solution {
    /// (value - lower_bound) / lower_bound, 0 when proven; infinite when the bound is 0 and
    /// the value is not.
    pub fn gap(&self) -> f64 {
        relative_gap(self.value, self.lower_bound)
    }
}

/// (value - bound) / bound, as SPEC section 4 defines the gap.
pub fn relative_gap(value: f64, bound: f64) -> f64 {
    if value <= bound {
        0.0
    } else if bound > 0.0 {
        (value - bound) / bound
    } else {
        f64::INFINITY
    }
}

/// Solves one problem.
pub fn solve(problem: &Problem, options: &SolveOptions) -> Result<Solution, SolveError> {
    let started = Instant::now();
    let (obj, variant) = (options.objective, options.variant);
    // The classic rules are dispatched once: their values are the baselines, the best of them
    // starts every solver.
    let runs = crate::rules::classic_runs(problem, obj, variant);
    let baselines = runs.iter().map(|(rule, _, v)| (*rule, *v)).collect();
    let (rule_order, _) = crate::rules::best_of(&runs);
    let deadline = started + options.time_limit;
    let mut best = match options.solver {
        Solver::Auto => auto(problem, options, rule_order, deadline),
        Solver::Ls => {
            // The bound first: local search then has what is left of the limit.
            let bound = root_bound(problem, obj, variant);
            let left = deadline.saturating_duration_since(Instant::now());
            let ls = run_ls(problem, options, rule_order, left);
            Candidate::new(ls.0, ls.1, bound, SolveStatus::Heuristic, 0)
        }
        Solver::Bnb => run_bnb(
            problem,
            options,
            rule_order,
            deadline.saturating_duration_since(Instant::now()),
            options.node_limit,
        ),
        Solver::Milp => run_milp(problem, options, Some(rule_order), options.time_limit)?,
    };
    if best.value.is_nan() {
        best.value = f64::INFINITY;
    }
    let proven = best.status == SolveStatus::Optimal
        || best.lower_bound >= best.value - 1e-9 * best.value.abs().max(1.0);
    Ok(Solution {
        order: best.order,
        value: best.value,
        lower_bound: if proven { best.value } else { best.lower_bound },
        proven_optimal: proven,
        status: if proven {
            SolveStatus::Optimal
        } else {
            best.status
        },
        nodes: best.nodes,
        elapsed: started.elapsed(),
        baselines,
    })
}

/// Nodes of the first, quick branch-and-bound attempt of `auto`: most instances are proven at
/// the root, and this keeps their cost to a fraction of a millisecond.
const QUICK_NODES: u64 = 2_000;

/// Time HiGHS may spend before it first polls its interrupt callback.
const MILP_SETUP: Duration = Duration::from_millis(300);

/// Least time worth giving the MILP inside `auto`.
const MILP_MIN_TIME: Duration = Duration::from_millis(500);

/// On queues longer than this, for the sum objectives (bsld, wait, flow), `auto` gives its MILP
/// the larger part of the time left after local search (60 %, not 30 %): branch and bound
/// seldom proves such a queue, its bound does not rise above the root's while it searches, and
/// the MILP's bound on 30-50-job trace snapshots is 2-4x closer to the best order
/// (docs/benchmarks.md, "Certified gaps"). Not for the makespan, where the clique and energy
/// bounds of branch and bound are strong: on PSPLIB j30 the larger MILP share proved one
/// instance fewer in 2 s.
const MILP_HALF: usize = 20;

/// Queues longer than this get `auto`'s long-queue plan: the root bound of branch and bound, then
/// local search for the rest of the limit.
pub const LONG_QUEUE: usize = 200;

/// The `auto` portfolio: quick branch and bound; if unproven, local search, then branch and
/// bound from its order with most of the budget, then the MILP bound with the rest (on queues
/// longer than [`MILP_HALF`], more of it to the MILP).
fn auto(
    problem: &Problem,
    options: &SolveOptions,
    rule_order: Vec<usize>,
    deadline: Instant,
) -> Candidate {
    if problem.jobs() > LONG_QUEUE {
        return auto_long(problem, options, rule_order, deadline);
    }
    let left = || deadline.saturating_duration_since(Instant::now());
    let quick_nodes = options
        .node_limit
        .map_or(QUICK_NODES, |n| n.min(QUICK_NODES));
    let mut best = run_bnb(problem, options, rule_order, left(), Some(quick_nodes));
    if best.status == SolveStatus::Optimal {
        return best;
    }
    let (order, value) = run_ls(
        problem,
        options,
        best.order.clone(),
        (options.time_limit / 10).min(left()),
    );
    best = best.merge(Candidate::new(
        order,
        value,
        f64::NEG_INFINITY,
        SolveStatus::Heuristic,
        0,
    ));
    let milp = cfg!(feature = "milp") && options.variant == Variant::Serial;
    let sum_on_long_queue = problem.jobs() > MILP_HALF && !options.objective.is_max();
    let share = match (milp, sum_on_long_queue) {
        (false, _) => left(),
        (true, false) => left().mul_f64(0.7),
        (true, true) => left().mul_f64(0.4),
    };
    // When the MILP's part would be too short to run, branch and bound keeps it (with 2 s,
    // the makespan used to leave 0.54 s of its limit unused).
    let share = if milp_time(left().saturating_sub(share)).is_some() {
        share
    } else {
        left()
    };
    let start = best.order.clone();
    best = best.merge(run_bnb(problem, options, start, share, options.node_limit));
    if best.status != SolveStatus::Optimal && milp {
        best = milp_phase(problem, options, best, left());
    }
    spend_the_rest(problem, options, best, deadline)
}

/// Time left below which `auto` does not start another phase.
const LAST_PHASE_MIN: Duration = Duration::from_millis(20);

/// The rest of `auto`'s limit when nothing is proven (the MILP ended early, or its part was
/// kept for HiGHS' setup): local search from the best order with a quarter of it, then
/// branch and bound from the best order until the limit. Not with a node limit, which the
/// plan already spent.
fn spend_the_rest(
    problem: &Problem,
    options: &SolveOptions,
    mut best: Candidate,
    deadline: Instant,
) -> Candidate {
    let left = || deadline.saturating_duration_since(Instant::now());
    if best.status == SolveStatus::Optimal || options.node_limit.is_some() {
        return best;
    }
    if left() > LAST_PHASE_MIN {
        let (order, value) = run_ls(problem, options, best.order.clone(), left() / 4);
        best = best.merge(Candidate::new(
            order,
            value,
            f64::NEG_INFINITY,
            SolveStatus::Heuristic,
            0,
        ));
    }
    if left() > LAST_PHASE_MIN {
        let start = best.order.clone();
        best = best.merge(run_bnb(problem, options, start, left(), None));
    }
    best
}

/// The MILP inside `auto`, warm-started from `best`'s order, within `budget`; skipped when too
/// little time would be left for a useful bound. HiGHS stops at its interrupt callback, but its
/// setup before the first poll (about 0.3 s on a model of 10,000 columns) cannot be
/// interrupted: that margin is kept.
fn milp_phase(
    problem: &Problem,
    options: &SolveOptions,
    best: Candidate,
    budget: Duration,
) -> Candidate {
    let Some(time) = milp_time(budget) else {
        return best;
    };
    let start = best.order.clone();
    match run_milp(problem, options, Some(start), time) {
        Ok(milp) => best.merge(milp),
        Err(_) => best,
    }
}

/// The MILP's time limit inside a `budget`: the budget less HiGHS' uninterruptible setup (15 %,
/// at least [`MILP_SETUP`]); `None` when that leaves less than [`MILP_MIN_TIME`].
fn milp_time(budget: Duration) -> Option<Duration> {
    let time = budget.saturating_sub(budget.mul_f64(0.15).max(MILP_SETUP));
    (time >= MILP_MIN_TIME).then_some(time)
}

/// `auto` on a queue longer than [`LONG_QUEUE`]: branch and bound cannot prove such a queue in
/// any useful time, and one node of it touches every job. Its root gives the certified lower
/// bound (and proves the best rule's order when the bound meets it); local search, from that
/// order, spends the rest of the budget on the order. Status `time_limit` (or `heuristic` when
/// local search ends first) unless proven.
fn auto_long(
    problem: &Problem,
    options: &SolveOptions,
    rule_order: Vec<usize>,
    deadline: Instant,
) -> Candidate {
    let left = || deadline.saturating_duration_since(Instant::now());
    let root = run_bnb(problem, options, rule_order, left(), Some(1));
    if root.status == SolveStatus::Optimal {
        return root;
    }
    let start = root.order.clone();
    let (order, value) = run_ls(problem, options, start, left());
    let mut best = root.merge(Candidate::new(
        order,
        value,
        f64::NEG_INFINITY,
        SolveStatus::Heuristic,
        0,
    ));
    // The root's status says "node limit", which the user never set: the plan stopped the
    // search, at the deadline or when local search ran out of evaluations.
    best.status = if Instant::now() >= deadline {
        SolveStatus::TimeLimit
    } else {
        SolveStatus::Heuristic
    };
    best
}

/// Local search from `start`; returns (order, value).
fn run_ls(
    problem: &Problem,
    options: &SolveOptions,
    start: Vec<usize>,
    time: Duration,
) -> (Vec<usize>, f64) {
    let ls = local::solve(
        problem,
        options.objective,
        options.variant,
        &LsOptions {
            time_limit: Some(time),
            start: Some(start),
            seed: options.seed,
            ..LsOptions::default()
        },
    );
    (ls.order, ls.value)
}

/// Why a solve could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SolveError {
    /// The `milp` solver failed (in `auto` a MILP failure is ignored instead).
    #[cfg(feature = "milp")]
    #[error(transparent)]
    Milp(#[from] crate::milp::MilpError),
    /// The `milp` solver was asked for, but the crate was built without its `milp` feature.
    #[error("the `milp` solver is not built in: rebuild schedlm-solver with the `milp` feature")]
    MilpUnavailable,
    /// [`SolveOptions::check`] refused the `milp` solver with the `strict` dispatcher, which
    /// the MILP does not model.
    #[error("the `milp` solver models only the serial dispatcher, not the strict one: use `bnb` or `auto` for strict")]
    MilpStrict,
}

impl SolveOptions {
    /// Whether these options can run at all (checked before any work, so that a command
    /// refuses them at once): `milp` models only the serial dispatcher.
    pub fn check(&self) -> Result<(), SolveError> {
        if self.solver == Solver::Milp && self.variant == Variant::Strict {
            return Err(SolveError::MilpStrict);
        }
        Ok(())
    }
}

/// The best known order and bound while a portfolio runs.
struct Candidate {
    order: Vec<usize>,
    value: f64,
    lower_bound: f64,
    status: SolveStatus,
    nodes: u64,
}

impl Candidate {
    fn new(
        order: Vec<usize>,
        value: f64,
        lower_bound: f64,
        status: SolveStatus,
        nodes: u64,
    ) -> Self {
        Candidate {
            order,
            value,
            lower_bound,
            status,
            nodes,
        }
    }

    /// Keeps the better order, the higher bound, and a proof from either side.
    fn merge(self, other: Candidate) -> Candidate {
        let nodes = self.nodes + other.nodes;
        let lower_bound = self.lower_bound.max(other.lower_bound);
        let status = if self.status.rank() >= other.status.rank() {
            self.status
        } else {
            other.status
        };
        let (order, value) = if other.value < self.value {
            (other.order, other.value)
        } else {
            (self.order, self.value)
        };
        Candidate {
            order,
            value,
            lower_bound,
            status,
            nodes,
        }
    }
}

fn run_bnb(
    problem: &Problem,
    options: &SolveOptions,
    incumbent: Vec<usize>,
    time: Duration,
    node_limit: Option<u64>,
) -> Candidate {
    let out = bnb::solve(
        problem,
        options.objective,
        options.variant,
        &BnbOptions {
            time_limit: Some(time),
            node_limit,
            incumbent: Some(incumbent),
            threads: options.threads,
            ..BnbOptions::default()
        },
    );
    let status = match out.status {
        bnb::Status::Optimal => SolveStatus::Optimal,
        bnb::Status::TimeLimit => SolveStatus::TimeLimit,
        bnb::Status::NodeLimit => SolveStatus::NodeLimit,
    };
    Candidate::new(out.order, out.value, out.lower_bound, status, out.nodes)
}

/// The bound of the branch-and-bound root node (earliest starts and pooled energy).
pub fn root_bound(problem: &Problem, objective: Objective, variant: Variant) -> f64 {
    let out = bnb::solve(
        problem,
        objective,
        variant,
        &BnbOptions {
            node_limit: Some(1),
            ..BnbOptions::default()
        },
    );
    out.lower_bound
}

#[cfg(feature = "milp")]
fn run_milp(
    problem: &Problem,
    options: &SolveOptions,
    incumbent: Option<Vec<usize>>,
    time: Duration,
) -> Result<Candidate, SolveError> {
    use crate::milp::{self, MilpOptions};
    let out = milp::solve(
        problem,
        options.objective,
        &MilpOptions {
            time_limit: time,
            incumbent,
            variant: options.variant,
            // `--solver milp` queues for HiGHS (one model per process) rather than drop an
            // instance; inside `auto` the MILP is an optional bound and never waits past the
            // instance's deadline.
            queue: options.solver == Solver::Milp,
            ..MilpOptions::default()
        },
    )?;
    let status = match (out.proven, out.exact) {
        (true, true) => SolveStatus::Optimal,
        (true, false) => SolveStatus::Bounded,
        (false, _) => SolveStatus::TimeLimit,
    };
    Ok(Candidate::new(
        out.order,
        out.value,
        out.lower_bound,
        status,
        0,
    ))
}

#[cfg(not(feature = "milp"))]
fn run_milp(
    _problem: &Problem,
    _options: &SolveOptions,
    _incumbent: Option<Vec<usize>>,
    _time: Duration,
) -> Result<Candidate, SolveError> {
    Err(SolveError::MilpUnavailable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milp_with_the_strict_dispatcher_is_refused_before_any_work() {
        let strict = SolveOptions {
            solver: Solver::Milp,
            variant: Variant::Strict,
            ..SolveOptions::default()
        };
        assert!(matches!(strict.check(), Err(SolveError::MilpStrict)));
        for solver in [Solver::Auto, Solver::Bnb] {
            assert!(SolveOptions {
                solver,
                ..strict.clone()
            }
            .check()
            .is_ok());
        }
        let serial = SolveOptions {
            variant: Variant::Serial,
            ..strict
        };
        assert!(serial.check().is_ok());
    }
}
