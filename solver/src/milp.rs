//! A time-indexed MILP for SPEC's problem (serial dispatcher only), built with good_lp and
//! solved with HiGHS: it gives an order and, above all, a *lower bound on the order optimum*
//! (SPEC section 4: the minimum of the objective over all permutations under the dispatcher).
//!
//! # Model
//!
//! Time is cut into slots of `delta` seconds from `now`: slot `k` is
//! `[now + k delta, now + (k+1) delta)`. A binary `x[j,s,k]` says that job `j` starts on server
//! `s` (only servers `j` fits) in slot `k`. With `len_j = floor(p_j / delta)` slots,
//! `est_j` the earliest start that `now`, running dependencies and queued dependency chains
//! allow, and `t_jk = max(now + k delta, est_j)`:
//!
//! - assignment: `sum_{s,k} x[j,s,k] = 1` for every job;
//! - capacity, per server `s`, resource `q`, slot `k`: the demands of the jobs whose slots
//!   `k'..k'+len_j-1` contain `k` sum to at most the capacity minus the demand of the running
//!   jobs that still run at the end of the slot (`end >= now + (k+1) delta`);
//! - dependencies: `sum k x[j,.,k] - sum k x[d,.,k] >= len_d` for a queued dependency `d`;
//! - release: `x[j,s,k]` exists only for `k >= floor((est_j - now) / delta)`;
//! - objective: each `x[j,s,k]` costs job `j`'s exact cost when started at `t_jk` (bounded
//!   slowdown, wait, weighted flow; the MILP minimises the *sum*, mapped back to the mean), and
//!   for the makespan an integer `Cmax >= t_jk + p_j - now` row per job.
//!
//! # Why the bound is valid
//!
//! Write `OPT` for the order optimum and `MILP*` for the MILP optimum.
//!
//! 1. **Flooring gives a relaxation.** Take any feasible schedule (start `S_j`, server `s_j`),
//!    for instance the dispatcher's schedule of an optimal order, and map job `j` to slot
//!    `k_j = floor((S_j - now) / delta)` on `s_j`. Release: `S_j >= est_j` gives
//!    `k_j >= floor((est_j - now)/delta)`. Dependencies: `S_j >= S_d + p_d` and
//!    `floor(a + b) >= floor(a) + floor(b)` give `k_j >= k_d + len_d`. Capacity: let
//!    `t = now + (k+1) delta - 1/2`, just before the end of slot `k`. A job with
//!    `k_j <= k <= k_j + len_j - 1` has `S_j <= now + (k_j+1) delta - 1 < t` and
//!    `S_j + p_j >= now + (k_j + len_j) delta >= now + (k+1) delta > t`, so it runs at `t`; a
//!    running job counted in slot `k` runs at `t` too. So the slot's row is the real capacity
//!    constraint at the instant `t`, which the schedule meets. Cost: every cost is
//!    nondecreasing in the start and `S_j >= t_jk`, so the slot's cost is at most the real one.
//!    Hence the floored schedule is MILP-feasible and costs at most the real schedule.
//! 2. **Several servers: `MILP* <= OPT`.** By (1) applied to an optimal order's schedule. The
//!    inequality can be strict: the MILP may put a job on any server at any time, while the
//!    dispatcher always takes the earliest start and the first server, so some schedules are
//!    reached by no order (a 3-job instance is in the tests).
//! 3. **One server, all times on the grid (`delta` divides the walltimes and the offsets from
//!    `now` of running ends and releases): `MILP* = OPT`.** `<=` by (1), where flooring changes
//!    nothing. `>=`: take a MILP schedule `S` and dispatch its jobs sorted by start. By induction
//!    every job gets `S'_j <= S_j`: when `j` is placed, the jobs placed before it started no later
//!    than `S_j` in `S`; one of them running at an instant `u >= S_j` in `S'` has
//!    `S'_i <= S_i <= S_j <= u < S'_i + p_i <= S_i + p_i`, so it also runs at `u` in `S`. On the
//!    single server, the load at `u` in the partial `S'` is at most the load in `S` minus `j`'s,
//!    so `j` fits at `S_j`; its dependencies were placed before it (they start strictly earlier)
//!    and end by `S_j`. The dispatcher takes the earliest feasible start, so `S'_j <= S_j`, and
//!    regular (nondecreasing) costs give `obj(S') <= obj(S)`. This is the classic fact that the
//!    serial schedule generation scheme produces every active schedule, and some active schedule
//!    is optimal for a regular objective (Kolisch 1996; Sprecher, Kolisch & Drexl 1995).
//!
//! HiGHS's dual bound is at most `MILP*`, so (with a tolerance of 1e-6 relative, rounded up for
//! objectives whose MILP costs are integers) it maps to a lower bound on `OPT`.
//!
//! # Horizon
//!
//! The MILP must contain the (floored) schedule of an *optimal* order, not just some schedule.
//! Let `UB` be the best of the incumbent's and FCFS's dispatched value; an optimal order's total
//! cost is at most `UB` times `n` (or the weight sum). Every job costs at least its cost at
//! `est_j`, so job `j`'s own cost is at most `c_j(est_j) + (total UB - sum_i c_i(est_i))`: that
//! gives a latest start. For the makespan every completion is at most `now + UB`. Independently,
//! in any dispatched schedule a job starts by `T0 + sum_{i != j} p_i` with `T0` the latest of
//! `now`, the running ends and the releases (once earlier-placed jobs and running jobs are done
//! the server is empty). The latest start is the smaller of the two.
//!
//! # Step
//!
//! By default `delta` is the gcd of the walltimes and of the offsets from `now` of running ends
//! and releases, so the grid is exact; if the model would exceed `max_columns` columns (or
//! `8 * max_columns` nonzeros) `delta` is raised, which keeps the bound valid by (1).
//!
//! # HiGHS
//!
//! The variables (the `x` columns grouped by job, then `Cmax`), rows and objective are built
//! with good_lp (`ProblemVariables`, `constraint!`, `.using(highs)`). good_lp's `solve` drops
//! the HiGHS model before its dual bound can be read, so the `highs::Model` is taken out with
//! `HighsProblem::try_into_inner` and driven directly: options, an interrupt callback at the
//! deadline (`Highs_setCallback`), the warm start, the solve, `mip_dual_bound`, and the
//! solution read back by column index (good_lp's variable order).
//!
//! One thread, `mip_rel_gap = 0`, `mip_abs_gap = 1e-9`, the time limit left after building,
//! output off, presolve off above 50,000 nonzeros (it checks the time limit rarely and can take
//! seconds there). The better of FCFS and the incumbent is floored onto the grid and passed as
//! a starting solution (`Highs_setSolution`). The bound is `mip_dual_bound`. See
//! `docs/milp.md`.
//!
//! HiGHS 1.15's C API resets a process-wide scheduler when a model is destroyed, which is not
//! thread-safe; solves in one process are therefore serialised by a lock.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use good_lp::solvers::highs::{highs, HighsProblem};
use good_lp::{constraint, variable, Expression, ProblemVariables, SolverModel, Variable};
use highs::{HighsModelStatus, HighsSolutionStatus};
use schedlm_model::{Objective, OrderError, Problem, Time, Variant};

use crate::cost::Cost;

/// Nonzeros allowed per allowed column.
const NONZEROS_PER_COLUMN: usize = 8;

/// Above this many nonzeros HiGHS's presolve is switched off.
const PRESOLVE_NONZEROS: usize = 50_000;

/// Serialises every HiGHS model's life (see the module docs).
static HIGHS_LOCK: Mutex<()> = Mutex::new(());

/// Below this budget HiGHS's presolve is switched off (it cannot be interrupted).
const PRESOLVE_MIN_TIME: Duration = Duration::from_secs(2);

/// HiGHS callback kinds (`kHighsCallback*Interrupt` in HiGHS's C API).
const CALLBACK_SIMPLEX_INTERRUPT: highs_sys::HighsInt = 1;
const CALLBACK_IPM_INTERRUPT: highs_sys::HighsInt = 2;
const CALLBACK_MIP_INTERRUPT: highs_sys::HighsInt = 6;

/// Asks HiGHS to stop once the deadline behind `user` has passed.
unsafe extern "C" fn interrupt(
    _kind: std::ffi::c_int,
    _message: *const std::ffi::c_char,
    _out: *const highs_sys::HighsCallbackDataOut,
    data_in: *mut highs_sys::HighsCallbackDataIn,
    user: *mut std::ffi::c_void,
) {
    // SAFETY: `user` is the `Instant` registered in `Model::run`, alive during the solve;
    // `data_in` is HiGHS's, valid for this call (it may be null for some kinds).
    unsafe {
        let deadline = &*(user as *const Instant);
        if !data_in.is_null() && Instant::now() >= *deadline {
            (*data_in).user_interrupt = 1;
        }
    }
}

/// Takes the HiGHS lock, waiting at most until `deadline`.
fn lock_until(deadline: Instant) -> Result<std::sync::MutexGuard<'static, ()>, MilpError> {
    loop {
        match HIGHS_LOCK.try_lock() {
            Ok(guard) => return Ok(guard),
            Err(std::sync::TryLockError::Poisoned(e)) => return Ok(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(std::sync::TryLockError::WouldBlock) => return Err(MilpError::Busy),
        }
    }
}

/// Options of [`solve`].
#[derive(Debug, Clone)]
pub struct MilpOptions {
    /// Wall-clock limit for the whole call (model building included).
    pub time_limit: Duration,
    /// Grid step delta in seconds; `None`: the gcd of walltimes, running-end offsets and
    /// release offsets from `now`, raised if needed to keep the model under `max_columns`.
    pub step: Option<i64>,
    /// Most binary columns the model may have.
    pub max_columns: usize,
    /// An order (queue indices), e.g. from a heuristic: used for the horizon and as a warm
    /// start. FCFS is always tried as well.
    pub incumbent: Option<Vec<usize>>,
    /// The dispatcher; only [`Variant::Serial`] is modelled.
    pub variant: Variant,
}

impl Default for MilpOptions {
    fn default() -> Self {
        MilpOptions {
            time_limit: Duration::from_secs(10),
            step: None,
            max_columns: 20_000,
            incumbent: None,
            variant: Variant::Serial,
        }
    }
}

/// What [`solve`] found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MilpOutcome {
    /// The jobs sorted by MILP start (ties by queue index), repaired; or the incumbent (or
    /// FCFS) when that dispatches better or the MILP found no solution.
    pub order: Vec<usize>,
    /// That order's objective under the dispatcher (SPEC).
    pub value: f64,
    /// A valid lower bound on the order optimum (HiGHS's dual bound mapped back, at least the
    /// trivial bound of every job at its earliest start, at most `value`).
    pub lower_bound: f64,
    /// The objective of HiGHS's MILP solution, if it has one.
    pub milp_value: Option<f64>,
    /// HiGHS proved its MILP optimal (relative gap 0).
    pub proven: bool,
    /// One server and every time on the grid: the MILP optimum is the order optimum, so
    /// `proven && exact` proves `value` optimal.
    pub exact: bool,
    /// The grid step delta used, in seconds.
    pub step: i64,
    /// HiGHS's model status ("optimal", "time limit", ...).
    pub status: String,
    /// Wall-clock time of the call.
    pub time_ms: u64,
}

/// Why [`solve`] could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MilpError {
    #[error("the MILP models only the serial dispatcher, not `{}`", .0.name())]
    UnsupportedVariant(Variant),
    #[error("grid step {0} is not a positive number of seconds")]
    BadStep(i64),
    #[error("the incumbent is not an order of the queue: {0}")]
    BadIncumbent(#[from] OrderError),
    #[error(
        "the MILP is too large: {columns} columns and {nonzeros} nonzeros with step {step} s \
         (limit {max_columns} columns, {max_nonzeros} nonzeros)"
    )]
    TooLarge {
        columns: usize,
        nonzeros: usize,
        step: i64,
        max_columns: usize,
        max_nonzeros: usize,
    },
    #[error("HiGHS failed: {0}")]
    Solver(String),
    #[error("another thread held HiGHS until the time limit (HiGHS runs one model at a time)")]
    Busy,
}

/// Builds and solves the time-indexed MILP of the module docs.
pub fn solve(
    problem: &Problem,
    objective: Objective,
    opts: &MilpOptions,
) -> Result<MilpOutcome, MilpError> {
    let clock = Instant::now();
    if opts.variant != Variant::Serial {
        return Err(MilpError::UnsupportedVariant(opts.variant));
    }
    if let Some(step) = opts.step {
        if step < 1 {
            return Err(MilpError::BadStep(step));
        }
    }
    let n = problem.jobs();

    // Incumbents: FCFS and the given order; the better one sets the horizon and warm start.
    let mut fcfs: Vec<usize> = (0..n).collect();
    fcfs.sort_by_key(|&j| (problem.submit(j), j));
    let mut best = evaluate(problem, objective, &fcfs);
    if let Some(order) = &opts.incumbent {
        schedlm_model::check_permutation(problem, order)?;
        let given = evaluate(problem, objective, order);
        if given.value <= best.value {
            best = given;
        }
    }
    if n == 0 {
        return Ok(MilpOutcome {
            order: Vec::new(),
            value: best.value,
            lower_bound: best.value,
            milp_value: None,
            proven: true,
            exact: true,
            step: opts.step.unwrap_or(1),
            status: "empty queue".into(),
            time_ms: clock.elapsed().as_millis() as u64,
        });
    }

    let costs = Cost::new(problem, objective);
    let topo = problem.topological_order();
    let est = earliest_starts(problem, &topo);
    let latest = latest_starts(problem, objective, &costs, &est, best.value);

    let max_nonzeros = opts.max_columns.saturating_mul(NONZEROS_PER_COLUMN);
    let grid = match opts.step {
        Some(delta) => {
            let grid = Grid::new(problem, &topo, &est, &latest, delta);
            if grid.columns > opts.max_columns || grid.nonzeros > max_nonzeros {
                return Err(grid.too_large(opts.max_columns, max_nonzeros));
            }
            grid
        }
        None => auto_grid(
            problem,
            &topo,
            &est,
            &latest,
            opts.max_columns,
            max_nonzeros,
        )?,
    };
    let delta = grid.delta;
    let exact = problem.servers() == 1 && on_grid(problem, delta);

    let model = Model::build(problem, objective, &costs, &est, &grid);
    let warm = model.warm_start(problem, &best.start, &best.server);

    let run = model.run(warm.as_deref(), clock + opts.time_limit)?;

    // The MILP's schedule, sorted by start, through the dispatcher.
    let mut chosen = best;
    if let Some(slots) = &run.slots {
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&j| (slots[j], j));
        let from_milp = evaluate(problem, objective, &order);
        if from_milp.value <= chosen.value {
            chosen = from_milp;
        }
    }
    let value = chosen.value;

    // The lower bound: trivial bound, raised by HiGHS's dual bound.
    let mut lower = costs.value(trivial_total(&costs, &est));
    if let Some(dual) = run.dual_bound {
        let mut sum = dual - 1e-6 * dual.abs().max(1.0);
        if costs.is_integral() {
            sum = sum.ceil();
        }
        lower = lower.max(costs.value(sum));
        if exact && run.proven {
            let tol = 1e-6 * value.abs().max(1.0);
            if value <= costs.value(dual) + tol {
                lower = value;
            }
        }
    }
    let lower_bound = lower.min(value);

    Ok(MilpOutcome {
        order: chosen.order,
        value,
        lower_bound,
        milp_value: run.objective.map(|v| costs.value(v)),
        proven: run.proven,
        exact,
        step: delta,
        status: run.status,
        time_ms: clock.elapsed().as_millis() as u64,
    })
}

/// An order dispatched and evaluated.
struct Evaluated {
    order: Vec<usize>,
    start: Vec<Time>,
    server: Vec<usize>,
    value: f64,
}

fn evaluate(problem: &Problem, objective: Objective, order: &[usize]) -> Evaluated {
    // `order` is a permutation here (checked or built), so dispatch cannot fail.
    let (schedule, value) = problem
        .schedule(order, objective, Variant::Serial)
        .expect("a permutation of the queue");
    Evaluated {
        order: schedule.order,
        start: schedule.start,
        server: schedule.server,
        value,
    }
}

/// The MILP's coefficient of job `j` started at `t` in the objective sum: its cost, or 0 for
/// the makespan (modelled by `Cmax`).
fn coefficient(cost: &Cost, j: usize, t: Time) -> f64 {
    if cost.is_max() {
        0.0
    } else {
        cost.job(j, t)
    }
}

/// The total with every job at its earliest start (a valid bound).
fn trivial_total(cost: &Cost, est: &[Time]) -> f64 {
    est.iter()
        .enumerate()
        .fold(0.0, |total, (j, &t)| cost.add(total, cost.job(j, t)))
}

/// Earliest start of each job in any schedule: release and queued dependency chains.
fn earliest_starts(problem: &Problem, topo: &[usize]) -> Vec<Time> {
    let mut est = vec![0; problem.jobs()];
    for &j in topo {
        est[j] = problem
            .deps(j)
            .iter()
            .map(|&d| est[d] + problem.walltime(d))
            .fold(problem.released(j), Time::max);
    }
    est
}

/// Latest start of each job in the dispatcher schedule of an optimal order (module docs).
fn latest_starts(
    problem: &Problem,
    objective: Objective,
    costs: &Cost,
    est: &[Time],
    upper: f64,
) -> Vec<Time> {
    let n = problem.jobs();
    let now = problem.now();
    let t0 = (0..n)
        .map(|j| problem.released(j))
        .chain(problem.running().iter().map(|r| r.end))
        .fold(now, Time::max);
    let total_p: Time = (0..n).map(|j| problem.walltime(j)).sum();
    let min_costs: Vec<f64> = (0..n).map(|j| coefficient(costs, j, est[j])).collect();
    let slack = (costs.total(upper) - min_costs.iter().sum::<f64>()).max(0.0);
    (0..n)
        .map(|j| {
            let p = problem.walltime(j);
            let cap = t0 + total_p - p;
            let budget = min_costs[j] + slack;
            let by_cost = match objective {
                Objective::Bsld => {
                    problem.submit(j) as f64 - p as f64 + budget * p.max(schedlm_model::TAU) as f64
                }
                Objective::Wait => problem.submit(j) as f64 + budget,
                Objective::Flow => problem.submit(j) as f64 - p as f64 + budget / problem.weight(j),
                Objective::Makespan => (now - p) as f64 + upper,
            };
            // One extra second absorbs rounding; a later latest start only adds columns.
            let latest = if by_cost.is_finite() && by_cost < cap as f64 {
                (by_cost.floor() as Time + 1).min(cap)
            } else {
                cap
            };
            latest.max(est[j])
        })
        .collect()
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

/// The gcd of the walltimes and of the offsets from `now` of running ends and releases.
fn grid_gcd(problem: &Problem) -> i64 {
    let now = problem.now();
    let g = (0..problem.jobs())
        .flat_map(|j| [problem.walltime(j), problem.released(j) - now])
        .chain(problem.running().iter().map(|r| r.end - now))
        .fold(0, gcd);
    g.max(1)
}

fn on_grid(problem: &Problem, delta: i64) -> bool {
    grid_gcd(problem) % delta == 0
}

/// Slot ranges of every job for one step.
struct Grid {
    delta: i64,
    kmin: Vec<i64>,
    kmax: Vec<i64>,
    len: Vec<i64>,
    columns: usize,
    nonzeros: usize,
}

impl Grid {
    fn new(problem: &Problem, topo: &[usize], est: &[Time], latest: &[Time], delta: i64) -> Grid {
        let n = problem.jobs();
        let now = problem.now();
        let len: Vec<i64> = (0..n).map(|j| problem.walltime(j) / delta).collect();
        let mut kmin: Vec<i64> = (0..n).map(|j| (est[j] - now) / delta).collect();
        let mut kmax: Vec<i64> = (0..n).map(|j| (latest[j] - now) / delta).collect();
        for &j in topo {
            for &d in problem.deps(j) {
                kmin[j] = kmin[j].max(kmin[d] + len[d]);
            }
        }
        for &j in topo.iter().rev() {
            for &d in problem.deps(j) {
                kmax[d] = kmax[d].min(kmax[j] - len[d]);
            }
        }
        let mut columns = 0usize;
        let mut nonzeros = 0usize;
        for j in 0..n {
            // Never empty: a wider range only adds columns (see the module docs).
            kmax[j] = kmax[j].max(kmin[j]);
            let servers = (0..problem.servers())
                .filter(|&s| problem.fits(j, s))
                .count();
            let cols = servers.saturating_mul((kmax[j] - kmin[j] + 1) as usize);
            let used = problem.demand(j).iter().filter(|&&d| d > 0).count();
            let per = 2 + used * len[j] as usize + problem.deps(j).len();
            columns = columns.saturating_add(cols);
            nonzeros = nonzeros.saturating_add(cols.saturating_mul(per));
        }
        Grid {
            delta,
            kmin,
            kmax,
            len,
            columns,
            nonzeros,
        }
    }

    fn too_large(&self, max_columns: usize, max_nonzeros: usize) -> MilpError {
        MilpError::TooLarge {
            columns: self.columns,
            nonzeros: self.nonzeros,
            step: self.delta,
            max_columns,
            max_nonzeros,
        }
    }
}

/// The exact grid, coarsened until the model fits the limits.
fn auto_grid(
    problem: &Problem,
    topo: &[usize],
    est: &[Time],
    latest: &[Time],
    max_columns: usize,
    max_nonzeros: usize,
) -> Result<Grid, MilpError> {
    let base = grid_gcd(problem);
    let now = problem.now();
    // Past this step every job has one slot and length 0: coarser cannot help.
    let widest = (0..problem.jobs())
        .map(|j| latest[j] - now + problem.walltime(j))
        .max()
        .unwrap_or(0)
        + 1;
    let mut delta = base;
    loop {
        let grid = Grid::new(problem, topo, est, latest, delta);
        if grid.columns <= max_columns && grid.nonzeros <= max_nonzeros {
            return Ok(grid);
        }
        if delta > widest {
            return Err(grid.too_large(max_columns, max_nonzeros));
        }
        let ratio = (grid.columns as f64 / max_columns.max(1) as f64)
            .max((grid.nonzeros as f64 / max_nonzeros.max(1) as f64).sqrt())
            .max(1.05);
        let next = ((delta as f64) * ratio).ceil().min(widest as f64 + 1.0) as i64;
        let next = next.max(delta + 1);
        // Stay on multiples of the exact step where possible.
        delta = (next + base - 1) / base * base;
    }
}

/// One allowed column `x[j,s,k]`.
struct Column {
    job: usize,
    server: usize,
    slot: i64,
}

/// The MILP built with good_lp for HiGHS, before solving.
struct Model {
    problem: HighsProblem,
    /// Number of variables: the `x` columns in the order of `columns`, then `Cmax`.
    num_cols: usize,
    columns: Vec<Column>,
    /// First column index of each job (columns are grouped by job).
    first: Vec<usize>,
    delta: i64,
    makespan: bool,
    /// Earliest start of each job.
    est: Vec<Time>,
    /// Nonzeros of the constraint matrix.
    nonzeros: usize,
}

/// The good_lp expression `sum factor * var` of a row's terms.
fn expression(terms: &[(Variable, f64)]) -> Expression {
    let mut lhs = Expression::with_capacity(terms.len());
    for &(var, factor) in terms {
        lhs.add_mul(factor, var);
    }
    lhs
}

/// What HiGHS returned.
struct Run {
    status: String,
    proven: bool,
    dual_bound: Option<f64>,
    objective: Option<f64>,
    /// MILP start slot of each job, when HiGHS has a solution.
    slots: Option<Vec<i64>>,
}

impl Model {
    fn build(
        problem: &Problem,
        objective: Objective,
        costs: &Cost,
        est: &[Time],
        grid: &Grid,
    ) -> Model {
        let n = problem.jobs();
        let r = problem.resources();
        let servers = problem.servers();
        let now = problem.now();
        let delta = grid.delta;
        let horizon = (0..n)
            .map(|j| grid.kmax[j] + grid.len[j].max(1))
            .max()
            .unwrap_or(0) as usize
            + 1;

        // Free capacity per server, resource and slot after the running jobs.
        let mut avail = vec![0i64; servers * r * horizon];
        for s in 0..servers {
            for q in 0..r {
                for k in 0..horizon {
                    let slot_end = now + (k as i64 + 1) * delta;
                    let used: i64 = problem
                        .running()
                        .iter()
                        .filter(|x| x.server == s && x.end >= slot_end)
                        .map(|x| x.demand[q])
                        .sum();
                    avail[(s * r + q) * horizon + k] = problem.capacity(s)[q] - used;
                }
            }
        }
        let fits_at = |j: usize, s: usize, k: i64| {
            let d = problem.demand(j);
            (k..k + grid.len[j])
                .all(|kk| (0..r).all(|q| d[q] <= avail[(s * r + q) * horizon + kk as usize]))
        };

        // Allowed columns, grouped by job.
        let mut columns = Vec::new();
        let mut first = Vec::with_capacity(n + 1);
        for j in 0..n {
            first.push(columns.len());
            for s in (0..servers).filter(|&s| problem.fits(j, s)) {
                for k in grid.kmin[j]..=grid.kmax[j] {
                    if fits_at(j, s, k) {
                        columns.push(Column {
                            job: j,
                            server: s,
                            slot: k,
                        });
                    }
                }
            }
        }
        first.push(columns.len());

        // Variables: the x columns in the order of `columns` (the warm start and the decoding
        // rely on it), then the integer Cmax for the makespan.
        let makespan = objective == Objective::Makespan;
        let mut vars = ProblemVariables::new();
        let x: Vec<Variable> = vars.add_vector(variable().binary(), columns.len());
        let cmax = makespan.then(|| vars.add(variable().integer().min(0)));
        let num_cols = vars.len();

        // Left-hand sides as term lists, filled column by column below and turned into
        // good_lp expressions at the end (each sized once: far fewer rehashes).
        // Assignment rows.
        let mut assign: Vec<Vec<(Variable, f64)>> = (0..n)
            .map(|j| Vec::with_capacity(first[j + 1] - first[j]))
            .collect();
        // Capacity rows, only where the jobs that may be there could exceed the room.
        let mut potential = vec![0i64; servers * r * horizon];
        for j in 0..n {
            let d = problem.demand(j);
            let mut covered: Vec<(usize, i64, i64)> = Vec::new();
            for c in &columns[first[j]..first[j + 1]] {
                if grid.len[j] == 0 {
                    continue;
                }
                match covered.last_mut() {
                    Some((s, _, hi)) if *s == c.server && c.slot <= *hi + 1 => {
                        *hi = (*hi).max(c.slot + grid.len[j] - 1);
                    }
                    _ => covered.push((c.server, c.slot, c.slot + grid.len[j] - 1)),
                }
            }
            for (s, lo, hi) in covered {
                for q in (0..r).filter(|&q| d[q] > 0) {
                    for kk in lo..=hi {
                        potential[(s * r + q) * horizon + kk as usize] += d[q];
                    }
                }
            }
        }
        let mut capacity_rows: Vec<(Vec<(Variable, f64)>, f64)> = Vec::new();
        let capacity: Vec<Option<usize>> = (0..servers * r * horizon)
            .map(|i| {
                (potential[i] > avail[i]).then(|| {
                    capacity_rows.push((Vec::new(), avail[i] as f64));
                    capacity_rows.len() - 1
                })
            })
            .collect();
        // Dependency rows: sum k x_j - sum k x_d >= len_d.
        let mut dep_rows: Vec<(Vec<(Variable, f64)>, f64)> = Vec::new();
        let mut succ_rows: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut pred_rows: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (j, rows) in succ_rows.iter_mut().enumerate() {
            for &d in problem.deps(j) {
                if grid.kmin[j] >= grid.kmax[d] + grid.len[d] {
                    continue;
                }
                dep_rows.push((Vec::new(), grid.len[d] as f64));
                rows.push(dep_rows.len() - 1);
                pred_rows[d].push(dep_rows.len() - 1);
            }
        }
        // Makespan rows: Cmax - (t_jk + p_j - now) x >= 0.
        let mut cmax_rows: Vec<Vec<(Variable, f64)>> = match cmax {
            Some(cmax) => (0..n)
                .map(|j| {
                    let mut terms = Vec::with_capacity(first[j + 1] - first[j] + 1);
                    terms.push((cmax, 1.0));
                    terms
                })
                .collect(),
            None => Vec::new(),
        };

        let mut cost = Expression::with_capacity(num_cols);
        let mut nonzeros = if makespan { n } else { 0 };
        for (c, &var) in columns.iter().zip(&x) {
            let j = c.job;
            let t = (now + c.slot * delta).max(est[j]);
            cost.add_mul(coefficient(costs, j, t), var);
            assign[j].push((var, 1.0));
            nonzeros += 1;
            let d = problem.demand(j);
            for q in (0..r).filter(|&q| d[q] > 0) {
                for kk in c.slot..c.slot + grid.len[j] {
                    if let Some(row) = capacity[(c.server * r + q) * horizon + kk as usize] {
                        capacity_rows[row].0.push((var, d[q] as f64));
                        nonzeros += 1;
                    }
                }
            }
            if c.slot != 0 {
                for &row in &succ_rows[j] {
                    dep_rows[row].0.push((var, c.slot as f64));
                }
                for &row in &pred_rows[j] {
                    dep_rows[row].0.push((var, -(c.slot as f64)));
                }
                nonzeros += succ_rows[j].len() + pred_rows[j].len();
            }
            if makespan {
                cmax_rows[j].push((var, -((t + problem.walltime(j) - now) as f64)));
                nonzeros += 1;
            }
        }
        if let Some(cmax) = cmax {
            cost.add_mul(1.0, cmax);
        }

        // Rows in the order assignment, capacity, dependencies, makespan.
        let mut pb = vars.minimise(cost).using(highs);
        for terms in &assign {
            pb.add_constraint(constraint!(expression(terms) == 1.0));
        }
        for (terms, room) in &capacity_rows {
            pb.add_constraint(constraint!(expression(terms) <= *room));
        }
        for (terms, len) in &dep_rows {
            pb.add_constraint(constraint!(expression(terms) >= *len));
        }
        for terms in &cmax_rows {
            pb.add_constraint(constraint!(expression(terms) >= 0.0));
        }
        Model {
            problem: pb,
            num_cols,
            columns,
            first,
            delta,
            makespan,
            est: est.to_vec(),
            nonzeros,
        }
    }

    /// Column values of a schedule floored onto the grid, if all its columns exist.
    fn warm_start(&self, problem: &Problem, start: &[Time], server: &[usize]) -> Option<Vec<f64>> {
        let now = problem.now();
        let mut values = vec![0.0; self.num_cols];
        let mut cmax: Time = 0;
        for j in 0..problem.jobs() {
            let k = (start[j] - now) / self.delta;
            let i = (self.first[j]..self.first[j + 1])
                .find(|&i| self.columns[i].server == server[j] && self.columns[i].slot == k)?;
            values[i] = 1.0;
            let t = (now + k * self.delta).max(self.est[j]);
            cmax = cmax.max(t + problem.walltime(j) - now);
        }
        if self.makespan {
            *values.last_mut()? = cmax as f64;
        }
        Some(values)
    }

    fn run(self, warm: Option<&[f64]>, deadline: Instant) -> Result<Run, MilpError> {
        let solver =
            |what: &str, e: &dyn std::fmt::Debug| MilpError::Solver(format!("{what}: {e:?}"));
        let n_x = self.columns.len();
        let jobs = self.first.len() - 1;
        // HiGHS's presolve checks the time limit rarely and can take seconds on large
        // time-indexed models; the root LP bound is what a large model is solved for.
        // Presolve does not poll the interrupt either: skip it when the budget is short.
        let short = deadline.saturating_duration_since(Instant::now()) < PRESOLVE_MIN_TIME;
        let presolve = if self.nonzeros > PRESOLVE_NONZEROS || short {
            "off"
        } else {
            "choose"
        };
        let _guard = lock_until(deadline)?;
        // good_lp's `solve` would drop the HiGHS model before the dual bound can be read and
        // cannot take the interrupt callback: take the `highs::Model` out and drive it here.
        let mut model = self
            .problem
            .try_into_inner()
            .map_err(|e| solver("loading the model", &e))?;
        model.make_quiet();
        let time_limit = deadline
            .saturating_duration_since(Instant::now())
            .as_secs_f64()
            .max(1e-3);
        // HiGHS checks its own time limit rarely inside a long LP; the interrupt callback,
        // called from simplex, IPM and MIP loops, stops it at the deadline.
        // SAFETY: `deadline` outlives the solve below, which is the only time HiGHS calls
        // `interrupt`, and `interrupt` only reads it.
        unsafe {
            let ptr = model.as_mut_ptr();
            let data = &deadline as *const Instant as *mut std::ffi::c_void;
            highs_sys::Highs_setCallback(ptr, Some(interrupt), data);
            for kind in [
                CALLBACK_SIMPLEX_INTERRUPT,
                CALLBACK_IPM_INTERRUPT,
                CALLBACK_MIP_INTERRUPT,
            ] {
                highs_sys::Highs_startCallback(ptr, kind);
            }
        }
        model
            .try_set_option("threads", 1)
            .and_then(|()| model.try_set_option("mip_rel_gap", 0.0))
            .and_then(|()| model.try_set_option("mip_abs_gap", 1e-9))
            .and_then(|()| model.try_set_option("time_limit", time_limit))
            .and_then(|()| model.try_set_option("random_seed", 0))
            .and_then(|()| model.try_set_option("presolve", presolve))
            .map_err(|e| solver("setting an option", &e))?;
        if let Some(values) = warm {
            // A rejected start only costs the warm start.
            let _ = model.try_set_solution(Some(values), None, None, None);
        }
        let solved = model.try_solve().map_err(|e| solver("solving", &e))?;
        let model_status = solved.status();
        let status = match model_status {
            HighsModelStatus::Optimal => "optimal".to_string(),
            HighsModelStatus::ReachedTimeLimit | HighsModelStatus::ReachedInterrupt => {
                "time limit".to_string()
            }
            HighsModelStatus::Infeasible => {
                return Err(MilpError::Solver(
                    "HiGHS reports the model infeasible, but the incumbent is feasible".into(),
                ))
            }
            other => format!("{other:?}").to_lowercase(),
        };
        let proven = model_status == HighsModelStatus::Optimal;
        let dual_bound = solved
            .double_info_value(c"mip_dual_bound")
            .ok()
            .filter(|v| v.is_finite());
        let (objective, slots) = if solved.primal_solution_status() == HighsSolutionStatus::Feasible
        {
            let solution = solved.get_solution();
            let values = solution.columns();
            let mut slots = vec![i64::MAX; jobs];
            let mut best = vec![0.0f64; jobs];
            for (c, &v) in self.columns.iter().zip(&values[..n_x]) {
                if v > best[c.job] {
                    best[c.job] = v;
                    slots[c.job] = c.slot;
                }
            }
            (Some(solved.objective_value()), Some(slots))
        } else {
            (None, None)
        };
        Ok(Run {
            status,
            proven,
            dual_bound,
            objective,
            slots,
        })
    }
}
