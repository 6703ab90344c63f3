//! One entry point for every solver, and the `auto` portfolio.
//!
//! `auto` runs the classic rules, then a quick branch and bound (2,000 nodes) from the best of
//! them, which proves most instances at once. Only if that fails: local search (a tenth of the
//! budget), branch and bound from its order with most of the rest, and, when branch and bound
//! does not finish, the time-indexed MILP (feature `milp`, serial dispatcher) with what is left,
//! for a lower bound and perhaps a better order. An order is called optimal only when branch
//! and bound finished, or when a proven bound matches its value.
//!
//! # Budgets
//!
//! A solve has a work limit ([`crate::work`]), a time limit, or both. Under a work limit every
//! share of the plan above is a share of counted work (branch-and-bound nodes, local-search
//! placements, simplex iterations), branch and bound runs on one thread and the MILP waits
//! for HiGHS rather than skip it, so the same instance, settings and limit give the same
//! order, bound, status and counters on any machine, at any load, with any `threads`; a time
//! limit given as well only caps the run, and a run it stops says `time_limit`. Without a
//! work limit the phases share the time limit, as wall-clock solvers do.

use std::time::{Duration, Instant};

use rayon::prelude::*;

use schedlm_model::{Objective, Problem, Variant};

use crate::bnb::{self, BnbOptions};
use crate::local::{self, LsOptions};
use crate::rules::Rule;
use crate::work::{self, Allowance, Budget};

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
    /// Counted work of the whole call ([`crate::work`]): the budget that decides the result
    /// the same way on every machine, at any load and with any number of threads. `None`: the
    /// phases share the time limit instead.
    pub work_limit: Option<u64>,
    /// Wall-clock budget of the whole call. With a work limit it only caps it: a solve it
    /// stops reports `time_limit` and may differ from machine to machine.
    pub time_limit: Option<Duration>,
    /// Node limit of branch and bound.
    pub node_limit: Option<u64>,
    /// Seed of local search.
    pub seed: u64,
    /// Threads for this one instance: branch and bound searches subtrees in parallel when
    /// above 1 and no work or node limit is set (its order stays the single-thread one; see
    /// `bnb::parallel`). Give 1 when instances themselves run in parallel.
    pub threads: usize,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            solver: Solver::Auto,
            objective: Objective::Bsld,
            variant: Variant::Serial,
            work_limit: None,
            time_limit: Some(Duration::from_secs(10)),
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
    /// The wall-clock limit stopped the proof; `lower_bound` and the gap say how far it may
    /// be. The result depends on the machine and its load.
    TimeLimit,
    /// The work limit stopped the proof; the result is the same on every machine.
    WorkLimit,
    /// Branch and bound stopped at its node limit before a proof (and no other limit stopped
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
    /// `optimal`, `time_limit`, `work_limit`, `node_limit`, `bounded` or `heuristic`.
    pub fn name(self) -> &'static str {
        match self {
            SolveStatus::Optimal => "optimal",
            SolveStatus::TimeLimit => "time_limit",
            SolveStatus::WorkLimit => "work_limit",
            SolveStatus::NodeLimit => "node_limit",
            SolveStatus::Bounded => "bounded",
            SolveStatus::Heuristic => "heuristic",
        }
    }

    /// Which status a merged result reports: a proof wins, then the clock (which makes the
    /// result machine-dependent), then the limit that stopped a proof.
    fn rank(self) -> u8 {
        match self {
            SolveStatus::Optimal => 5,
            SolveStatus::TimeLimit => 4,
            SolveStatus::WorkLimit => 3,
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
    /// Units of work spent by every phase ([`crate::work`]); under a work limit the same on
    /// every machine.
    pub work: u64,
    /// The budget the solve had (from its [`SolveOptions`]).
    pub budget: Budget,
    /// Wall-clock time of the whole call, baselines included.
    pub elapsed: Duration,
    /// Each classic rule's objective value.
    pub baselines: Vec<(Rule, f64)>,
}

/// One line of `schedlm solve` output: the input's line, then the solution.
#[derive(Debug, serde::Serialize)]
pub struct SolveRecord {
    /// The input's line.
    pub line: usize,
    /// The solution.
    #[serde(flatten)]
    pub output: SolveOutput,
}

/// Solves every instance line of a file with `options` on the current rayon pool, calling
/// `done` after each; a line that is not a valid instance, or that the solver refuses, gives
/// its reason. A single line gets every thread of the pool, and its time limit counts from
/// `read` (reading a huge queue is part of what the user waits for); other lines' from their
/// own start.
pub fn solve_lines(
    lines: &[schedlm_model::input::Line],
    options: &SolveOptions,
    read: Instant,
    done: &(dyn Fn() + Sync),
) -> Vec<Result<SolveRecord, String>> {
    let single = lines.len() == 1;
    let options = SolveOptions {
        threads: if single {
            rayon::current_num_threads()
        } else {
            options.threads
        },
        ..options.clone()
    };
    let one = |line: &schedlm_model::input::Line| {
        let began = if single { read } else { Instant::now() };
        let (_, problem) = line.instance()?;
        let solution = solve_since(&problem, &options, began).map_err(|e| e.to_string())?;
        let output = SolveOutput::new(&options, &problem, &solution);
        Ok(SolveRecord {
            line: line.number,
            output,
        })
    };
    let each = |line| {
        let record = one(line);
        done();
        record
    };
    lines.par_iter().map(each).collect()
}

/// A solution as `schedlm solve` writes it (one JSON object per instance, after the input's
/// `line`) and the Python package's `solve` returns it: job ids, the figures, the budget and
/// each rule's value.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SolveOutput {
    /// The solver asked for (`auto`, `bnb`, `milp`, `ls`).
    pub solver: &'static str,
    /// The objective.
    pub objective: Objective,
    /// The dispatcher variant.
    pub variant: Variant,
    /// The best order, as job ids.
    pub order: Vec<String>,
    /// Its value.
    pub value: f64,
    /// A proven lower bound.
    pub lower_bound: f64,
    /// [`Solution::gap`].
    pub gap: f64,
    /// Whether the value is proven optimal.
    pub proven_optimal: bool,
    /// How the solve ended.
    pub status: &'static str,
    /// Branch-and-bound nodes.
    pub nodes: u64,
    /// Units of work spent.
    pub work: u64,
    /// The budget it had.
    pub budget: Budget,
    /// Wall-clock milliseconds.
    pub time_ms: u64,
    /// Each classic rule's value, by rule name.
    pub baselines: serde_json::Map<String, serde_json::Value>,
}

impl SolveOutput {
    /// The output of `s`, a solution of `problem` under `options`.
    pub fn new(options: &SolveOptions, problem: &Problem, s: &Solution) -> SolveOutput {
        SolveOutput {
            solver: options.solver.name(),
            objective: options.objective,
            variant: options.variant,
            order: s
                .order
                .iter()
                .map(|&j| problem.job_id(j).to_string())
                .collect(),
            value: s.value,
            lower_bound: s.lower_bound,
            gap: s.gap(),
            proven_optimal: s.proven_optimal,
            status: s.status.name(),
            nodes: s.nodes,
            work: s.work,
            budget: s.budget,
            time_ms: s.elapsed.as_millis() as u64,
            baselines: s
                .baselines
                .iter()
                .map(|(r, v)| (r.name().to_string(), (*v).into()))
                .collect(),
        }
    }
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
    solve_since(problem, options, Instant::now())
}

/// Solves one problem with its time limit (if any) counted from `started`, not from now: a
/// command that read and validated the instance first starts its clock before the reading,
/// so the limit bounds what the user waits for. The result's `elapsed` counts from
/// `started` too. Work and node limits are unaffected.
pub fn solve_since(
    problem: &Problem,
    options: &SolveOptions,
    started: Instant,
) -> Result<Solution, SolveError> {
    options.check()?;
    let mut plan = Plan::new(options, started);
    let (obj, variant) = (options.objective, options.variant);
    // The classic rules are dispatched once: their values are the baselines, the best of them
    // starts every solver. On a queue so long that the rules alone would overrun the time
    // limit, the rules the deadline leaves no room for are left out of the baselines.
    let (runs, dispatch_time) =
        crate::rules::classic_runs_until(problem, obj, variant, plan.deadline);
    plan.dispatch_time = dispatch_time;
    let baselines = runs.iter().map(|(rule, _, v)| (*rule, *v)).collect();
    let (rule_order, rule_value) = crate::rules::best_of(&runs);
    let mut best = match options.solver {
        Solver::Auto => auto(problem, options, (rule_order, rule_value), &mut plan),
        Solver::Ls | Solver::Bnb if !plan.time_for_root(problem.jobs()) => {
            Candidate::timed_out(problem, options, (rule_order, rule_value))
        }
        Solver::Ls => {
            // The bound first: local search then has what is left of the budget.
            let bound = root_bound(problem, obj, variant);
            plan.spend(work::node_units(problem.jobs()));
            let ls = run_ls(problem, options, rule_order, plan.rest());
            // Local search makes no proof attempt: `heuristic`, unless the clock cut a
            // work-limited run short (its result then depends on the machine).
            let capped = options.work_limit.is_some() && ls.status == SolveStatus::TimeLimit;
            Candidate {
                lower_bound: bound,
                status: if capped {
                    SolveStatus::TimeLimit
                } else {
                    SolveStatus::Heuristic
                },
                ..ls
            }
        }
        Solver::Bnb => run_bnb(
            problem,
            options,
            rule_order,
            plan.rest(),
            options.node_limit,
        ),
        Solver::Milp => run_milp(problem, options, Some(rule_order), plan.rest())?,
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
        work: best.work,
        budget: options.budget(),
        elapsed: started.elapsed(),
        baselines,
    })
}

/// The budget of a whole solve, shared out between its phases: counted work (then the
/// deadline, if any, only caps it) or, without a work limit, the time until the deadline.
struct Plan {
    /// The whole work limit, and the units the finished phases spent.
    work: Option<u64>,
    spent: u64,
    /// The whole time limit and when it ends.
    time: Option<Duration>,
    deadline: Option<Instant>,
    /// The longest dispatch of the whole queue seen (a classic rule's): a phase that must
    /// dispatch the queue at least twice is not started with less time than that left.
    dispatch_time: Duration,
}

impl Plan {
    fn new(options: &SolveOptions, started: Instant) -> Self {
        Plan {
            work: options.work_limit,
            spent: 0,
            time: options.time_limit,
            deadline: options.time_limit.map(|t| started + t),
            dispatch_time: Duration::ZERO,
        }
    }

    fn spend(&mut self, units: u64) {
        self.spent = self.spent.saturating_add(units);
    }

    /// Counts a finished phase's work and merges its result into `best`.
    fn merge(&mut self, best: Candidate, phase: Candidate) -> Candidate {
        self.spend(phase.work);
        best.merge(phase)
    }

    fn work_left(&self) -> Option<u64> {
        self.work.map(|w| w.saturating_sub(self.spent))
    }

    fn time_left(&self) -> Duration {
        self.deadline.map_or(Duration::MAX, |d| {
            d.saturating_duration_since(Instant::now())
        })
    }

    /// Everything that is left.
    fn rest(&self) -> Allowance {
        Allowance {
            work: self.work_left(),
            deadline: self.deadline,
        }
    }

    /// `part` of what is left: of the work when it is counted (the deadline still caps it),
    /// else of the time.
    fn part_of_left(&self, part: f64) -> Allowance {
        match self.work_left() {
            Some(left) => Allowance {
                work: Some((left as f64 * part) as u64),
                deadline: self.deadline,
            },
            None => self.for_time(self.time_left().mul_f64(part)),
        }
    }

    /// `part` of the whole budget, at most what is left.
    fn part_of_whole(&self, part: f64) -> Allowance {
        match (self.work, self.work_left()) {
            (Some(whole), Some(left)) => Allowance {
                work: Some(((whole as f64 * part) as u64).min(left)),
                deadline: self.deadline,
            },
            _ => {
                let whole = self.time.unwrap_or(Duration::MAX);
                self.for_time(whole.mul_f64(part).min(self.time_left()))
            }
        }
    }

    /// What would be left after `given` was spent in full.
    fn left_after(&self, given: &Allowance) -> Allowance {
        match (self.work_left(), given.work) {
            (Some(left), Some(g)) => Allowance {
                work: Some(left.saturating_sub(g)),
                deadline: self.deadline,
            },
            _ => self.for_time(
                self.time_left()
                    .saturating_sub(given.time_left().unwrap_or(Duration::ZERO)),
            ),
        }
    }

    /// Whether the time left holds `n` dispatches of the whole queue (always without a
    /// deadline). A phase that cannot even dispatch its start and its result in time is not
    /// started: on a 20,000-job queue one dispatch is a good part of a second.
    fn time_for_dispatches(&self, n: u32) -> bool {
        self.deadline.is_none() || self.time_left() > self.dispatch_time * n
    }

    /// Whether the time left holds the root of branch and bound (and a search after it): on
    /// queues longer than [`LONG_QUEUE`] the root's set-up and bounds cost about three and a
    /// half dispatches of the queue (1.2 s of CPU at 20,000 jobs), so six are asked for;
    /// three on shorter ones.
    fn time_for_root(&self, jobs: usize) -> bool {
        self.time_for_dispatches(if jobs > LONG_QUEUE { 6 } else { 3 })
    }

    /// Whether at least [`LAST_PHASE_MIN_WORK`] units (or [`LAST_PHASE_MIN`] of time) are
    /// left for another phase.
    fn room_for_a_phase(&self) -> bool {
        match self.work_left() {
            Some(left) => left >= LAST_PHASE_MIN_WORK && !self.rest().timed_out(),
            None => self.time_left() > LAST_PHASE_MIN,
        }
    }

    fn for_time(&self, time: Duration) -> Allowance {
        Allowance {
            work: None,
            deadline: Some(Instant::now().checked_add(time).unwrap_or(far_future())),
        }
    }
}

/// An instant no solve reaches.
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600)
}

/// Nodes of the first, quick branch-and-bound attempt of `auto`: most instances are proven at
/// the root, and this keeps their cost to a fraction of a millisecond.
const QUICK_NODES: u64 = 2_000;

/// Time HiGHS may spend before it first polls its interrupt callback.
const MILP_SETUP: Duration = Duration::from_millis(300);

/// Least time worth giving the MILP inside `auto`.
const MILP_MIN_TIME: Duration = Duration::from_millis(500);

/// Least work worth giving the MILP inside `auto` (a thousand simplex iterations).
const MILP_MIN_WORK: u64 = 1_000 * work::LP_ITERATION_UNITS;

/// On queues longer than this, for the sum objectives (bsld, wait, flow), `auto` gives its MILP
/// the larger part of the budget left after local search (60 %, not 30 %): branch and bound
/// seldom proves such a queue, its bound does not rise above the root's while it searches, and
/// the MILP's bound on 30-50-job trace snapshots is 2-4x closer to the best order
/// (docs/benchmarks.md, "Certified gaps"). Not for the makespan, where the clique and energy
/// bounds of branch and bound are strong: on PSPLIB j30 the larger MILP share proved one
/// instance fewer in 2 s.
const MILP_HALF: usize = 20;

/// Queues longer than this get `auto`'s long-queue plan: the root bound of branch and bound, then
/// local search for the rest of the budget.
pub const LONG_QUEUE: usize = 200;

/// The `auto` portfolio: quick branch and bound; if unproven, local search, then branch and
/// bound from its order with most of the budget, then the MILP bound with the rest (on queues
/// longer than [`MILP_HALF`], more of it to the MILP). Every share is of counted work under a
/// work limit, of time otherwise.
fn auto(
    problem: &Problem,
    options: &SolveOptions,
    (rule_order, rule_value): (Vec<usize>, f64),
    plan: &mut Plan,
) -> Candidate {
    if problem.jobs() > LONG_QUEUE {
        return auto_long(problem, options, (rule_order, rule_value), plan);
    }
    let quick_nodes = options
        .node_limit
        .map_or(QUICK_NODES, |n| n.min(QUICK_NODES));
    let mut best = run_bnb(problem, options, rule_order, plan.rest(), Some(quick_nodes));
    plan.spend(best.work);
    if best.status == SolveStatus::Optimal {
        return best;
    }
    let ls = run_ls(
        problem,
        options,
        best.order.clone(),
        plan.part_of_whole(0.1),
    );
    best = plan.merge(best, ls);
    let milp = cfg!(feature = "milp") && options.variant == Variant::Serial;
    let sum_on_long_queue = problem.jobs() > MILP_HALF && !options.objective.is_max();
    let share = match (milp, sum_on_long_queue) {
        (false, _) => plan.rest(),
        (true, false) => plan.part_of_left(0.7),
        (true, true) => plan.part_of_left(0.4),
    };
    // When the MILP's part would be too small to run, branch and bound keeps it (with 2 s,
    // the makespan used to leave 0.54 s of its limit unused).
    let share = if milp_limits(&plan.left_after(&share)).is_some() {
        share
    } else {
        plan.rest()
    };
    let start = best.order.clone();
    let searched = run_bnb(problem, options, start, share, options.node_limit);
    best = plan.merge(best, searched);
    if best.status != SolveStatus::Optimal && milp {
        best = milp_phase(problem, options, best, plan);
    }
    spend_the_rest(problem, options, best, plan)
}

/// Time left below which `auto` does not start another phase.
const LAST_PHASE_MIN: Duration = Duration::from_millis(20);

/// Work left below which `auto` does not start another phase.
const LAST_PHASE_MIN_WORK: u64 = 10_000;

/// The rest of `auto`'s budget when nothing is proven (the MILP ended early, or its part was
/// kept for HiGHS' setup): local search from the best order with a quarter of it, then
/// branch and bound from the best order with the rest. Not with a node limit, which the
/// plan already spent.
fn spend_the_rest(
    problem: &Problem,
    options: &SolveOptions,
    mut best: Candidate,
    plan: &mut Plan,
) -> Candidate {
    if best.status == SolveStatus::Optimal || options.node_limit.is_some() {
        return best;
    }
    if plan.room_for_a_phase() {
        let ls = run_ls(
            problem,
            options,
            best.order.clone(),
            plan.part_of_left(0.25),
        );
        best = plan.merge(best, ls);
    }
    if plan.room_for_a_phase() {
        let start = best.order.clone();
        let searched = run_bnb(problem, options, start, plan.rest(), None);
        best = plan.merge(best, searched);
    }
    best
}

/// The MILP inside `auto`, warm-started from `best`'s order, with what is left of the plan;
/// skipped when too little would be left for a useful bound ([`milp_limits`]).
fn milp_phase(
    problem: &Problem,
    options: &SolveOptions,
    best: Candidate,
    plan: &mut Plan,
) -> Candidate {
    if milp_limits(&plan.rest()).is_none() {
        return best;
    }
    let start = best.order.clone();
    match run_milp(problem, options, Some(start), plan.rest()) {
        Ok(milp) => plan.merge(best, milp),
        Err(_) => best,
    }
}

/// The MILP's limits inside an allowance, or `None` when it is too small to run: under a
/// work limit, at least [`MILP_MIN_WORK`]; by the clock, the time less HiGHS' uninterruptible
/// setup (15 %, at least [`MILP_SETUP`]) must leave [`MILP_MIN_TIME`] (the setup is kept).
fn milp_limits(allowance: &Allowance) -> Option<(Option<Duration>, Option<u64>)> {
    match allowance.work {
        Some(work) => (work >= MILP_MIN_WORK)
            .then(|| (allowance.time_left(), Some(work::lp_iterations_for(work)))),
        None => {
            let budget = allowance.time_left()?;
            let time = budget.saturating_sub(budget.mul_f64(0.15).max(MILP_SETUP));
            (time >= MILP_MIN_TIME).then_some((Some(time), None))
        }
    }
}

/// `auto` on a queue longer than [`LONG_QUEUE`]: branch and bound cannot prove such a queue in
/// any useful time, and one node of it touches every job. Its root gives the certified lower
/// bound (and proves the best rule's order when the bound meets it); local search, from that
/// order, spends the rest of the budget on the order. Status `time_limit` or `work_limit`
/// (or `heuristic` when local search ends first) unless proven.
fn auto_long(
    problem: &Problem,
    options: &SolveOptions,
    (rule_order, rule_value): (Vec<usize>, f64),
    plan: &mut Plan,
) -> Candidate {
    if !plan.time_for_root(problem.jobs()) {
        return Candidate::timed_out(problem, options, (rule_order, rule_value));
    }
    let root = run_bnb(problem, options, rule_order, plan.rest(), Some(1));
    plan.spend(root.work);
    if root.status == SolveStatus::Optimal {
        return root;
    }
    if !plan.time_for_dispatches(2) {
        return Candidate {
            status: SolveStatus::TimeLimit,
            ..root
        };
    }
    let start = root.order.clone();
    let ls = run_ls(problem, options, start, plan.rest());
    plan.spend(ls.work);
    let ls_status = ls.status;
    let mut best = root.merge(ls);
    // The root's status says "node limit", which the user never set: the plan stopped the
    // search, at its limit or when local search ran out of evaluations.
    best.status = ls_status;
    best
}

/// Local search from `start` within `allowance`. Its status says what stopped it: the clock
/// (`time_limit`), the counted work (`work_limit`) or its own end (`heuristic`).
fn run_ls(
    problem: &Problem,
    options: &SolveOptions,
    start: Vec<usize>,
    allowance: Allowance,
) -> Candidate {
    let defaults = LsOptions::default();
    let ls = local::solve(
        problem,
        options.objective,
        options.variant,
        &LsOptions {
            time_limit: allowance.time_left(),
            max_work: allowance.work,
            // Counted work is the budget when there is one.
            max_evaluations: if allowance.work.is_some() {
                u64::MAX
            } else {
                defaults.max_evaluations
            },
            start: Some(start),
            seed: options.seed,
        },
    );
    let status = if ls.timed_out {
        SolveStatus::TimeLimit
    } else if allowance.work.is_some_and(|w| ls.work >= w) {
        SolveStatus::WorkLimit
    } else {
        SolveStatus::Heuristic
    };
    Candidate {
        order: ls.order,
        value: ls.value,
        lower_bound: f64::NEG_INFINITY,
        status,
        nodes: 0,
        work: ls.work,
    }
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
    /// [`SolveOptions::check`] found neither a work, a time nor a node limit: the search
    /// would never end on a hard instance.
    #[error("no budget: give a work limit, a time limit or (for `bnb`) a node limit")]
    NoLimit,
}

impl SolveOptions {
    /// The budget these options give, as records state it.
    pub fn budget(&self) -> Budget {
        Budget {
            work_limit: self.work_limit,
            time_limit_ms: self.time_limit.map(|t| t.as_millis() as u64),
            node_limit: self.node_limit,
        }
    }

    /// Whether these options can run at all (checked before any work, so that a command
    /// refuses them at once): `milp` models only the serial dispatcher.
    pub fn check(&self) -> Result<(), SolveError> {
        if self.solver == Solver::Milp && self.variant == Variant::Strict {
            return Err(SolveError::MilpStrict);
        }
        let node_limited = self.solver == Solver::Bnb && self.node_limit.is_some();
        if self.work_limit.is_none() && self.time_limit.is_none() && !node_limited {
            return Err(SolveError::NoLimit);
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
    work: u64,
}

impl Candidate {
    /// The best rule's order and value when the time limit leaves no room for any search,
    /// with the trivial bound (every job at its release), status `time_limit`.
    fn timed_out(
        problem: &Problem,
        options: &SolveOptions,
        (order, value): (Vec<usize>, f64),
    ) -> Candidate {
        let cost = crate::cost::Cost::new(problem, options.objective);
        let total = (0..problem.jobs()).fold(
            if cost.is_max() {
                f64::NEG_INFINITY
            } else {
                0.0
            },
            |t, j| cost.add(t, cost.job(j, problem.released(j))),
        );
        Candidate {
            order,
            value,
            lower_bound: cost.value(total).min(value),
            status: SolveStatus::TimeLimit,
            nodes: 0,
            work: 0,
        }
    }

    /// Keeps the better order, the higher bound, and a proof from either side; adds up the
    /// work.
    fn merge(self, other: Candidate) -> Candidate {
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
            lower_bound: self.lower_bound.max(other.lower_bound),
            status,
            nodes: self.nodes + other.nodes,
            work: self.work.saturating_add(other.work),
        }
    }
}

/// Branch and bound from `incumbent` within `allowance` and `node_limit` (whichever buys fewer
/// nodes: a node limit from the allowance's work reports `work_limit`).
fn run_bnb(
    problem: &Problem,
    options: &SolveOptions,
    incumbent: Vec<usize>,
    allowance: Allowance,
    node_limit: Option<u64>,
) -> Candidate {
    let bought = allowance.work.map(|w| work::nodes_for(w, problem.jobs()));
    let limit = match (node_limit, bought) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let by_work = bought.is_some_and(|b| node_limit.is_none_or(|a| b < a));
    let out = bnb::solve(
        problem,
        options.objective,
        options.variant,
        &BnbOptions {
            time_limit: allowance.time_left(),
            node_limit: limit,
            incumbent: Some(incumbent),
            threads: options.threads,
            ..BnbOptions::default()
        },
    );
    let status = match out.status {
        bnb::Status::Optimal => SolveStatus::Optimal,
        bnb::Status::TimeLimit => SolveStatus::TimeLimit,
        bnb::Status::NodeLimit if by_work => SolveStatus::WorkLimit,
        bnb::Status::NodeLimit => SolveStatus::NodeLimit,
    };
    Candidate {
        order: out.order,
        value: out.value,
        lower_bound: out.lower_bound,
        status,
        nodes: out.nodes,
        work: out.nodes.saturating_mul(work::node_units(problem.jobs())),
    }
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
    allowance: Allowance,
) -> Result<Candidate, SolveError> {
    use crate::milp::{self, MilpOptions};
    // `--solver milp` has the whole budget; inside `auto` HiGHS' setup is kept out of it.
    let (time_limit, iteration_limit) = if options.solver == Solver::Milp {
        (
            allowance.time_left(),
            allowance.work.map(work::lp_iterations_for),
        )
    } else {
        milp_limits(&allowance).unwrap_or((Some(Duration::ZERO), None))
    };
    let out = milp::solve(
        problem,
        options.objective,
        &MilpOptions {
            time_limit,
            iteration_limit,
            incumbent,
            variant: options.variant,
            // `--solver milp` queues for HiGHS (one model per process) rather than drop an
            // instance, and so does a work-limited `auto` (whose result must not depend on
            // what other threads do); a timed `auto` treats the MILP as an optional bound and
            // never waits past the instance's deadline.
            queue: options.solver == Solver::Milp || allowance.work.is_some(),
            ..MilpOptions::default()
        },
    )?;
    let status = match (out.proven, out.exact) {
        (true, true) => SolveStatus::Optimal,
        (true, false) => SolveStatus::Bounded,
        (false, _) if out.timed_out || iteration_limit.is_none() => SolveStatus::TimeLimit,
        (false, _) => SolveStatus::WorkLimit,
    };
    Ok(Candidate {
        order: out.order,
        value: out.value,
        lower_bound: out.lower_bound,
        status,
        nodes: 0,
        work: out.iterations.saturating_mul(work::LP_ITERATION_UNITS),
    })
}

#[cfg(not(feature = "milp"))]
fn run_milp(
    _problem: &Problem,
    _options: &SolveOptions,
    _incumbent: Option<Vec<usize>>,
    _allowance: Allowance,
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
