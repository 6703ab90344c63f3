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

mod bounds;
mod grid;
mod highs_model;

use std::time::{Duration, Instant};

use schedlm_model::{Objective, OrderError, Problem, Variant};

use crate::cost::Cost;
use bounds::{earliest_starts, evaluate, latest_starts, trivial_total};
use grid::{auto_grid, on_grid, Grid};
use highs_model::{lock_queued, lock_until, Limits, Model, NONZEROS_PER_COLUMN};

/// Options of [`solve`].
#[derive(Debug, Clone)]
pub struct MilpOptions {
    /// Wall-clock limit for the whole call (model building included); `None`: no limit
    /// (give an iteration limit then).
    pub time_limit: Option<Duration>,
    /// Most simplex iterations (HiGHS's MIP total; the deterministic budget, see
    /// [`crate::work`]); `None`: not counted. HiGHS runs on one thread, so a run stopped by it
    /// stops at the same point on every machine.
    pub iteration_limit: Option<u64>,
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
    /// Wait for HiGHS (one model per process) as long as it takes, the time limit counting
    /// from when it is free: solves from several threads then queue instead of failing with
    /// [`MilpError::Busy`]. Off: the wait counts against the time limit.
    pub queue: bool,
}

impl Default for MilpOptions {
    fn default() -> Self {
        MilpOptions {
            time_limit: Some(Duration::from_secs(10)),
            iteration_limit: None,
            step: None,
            max_columns: 20_000,
            incumbent: None,
            variant: Variant::Serial,
            queue: false,
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
    /// HiGHS's model status ("optimal", "time limit", "work limit", ...).
    pub status: String,
    /// Simplex iterations HiGHS made.
    pub iterations: u64,
    /// Whether the time limit (not the iteration limit or a proof) ended the run.
    pub timed_out: bool,
    /// Wall-clock time of the call.
    pub time_ms: u64,
}

/// Why [`solve`] could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MilpError {
    /// [`MilpOptions::variant`] (the value carried) is not [`Variant::Serial`]; the `strict`
    /// start-order coupling is not modelled.
    #[error("the MILP models only the serial dispatcher, not `{}`", .0.name())]
    UnsupportedVariant(Variant),
    /// [`MilpOptions::step`] (the value carried, in seconds) is below 1.
    #[error("grid step {0} is not a positive number of seconds")]
    BadStep(i64),
    /// [`MilpOptions::incumbent`] is not a permutation of the queue indices.
    #[error("the incumbent is not an order of the queue: {0}")]
    BadIncumbent(#[from] OrderError),
    /// The model exceeds the size limits: with the explicit [`MilpOptions::step`], or with an
    /// automatic step already so coarse that every job has a single slot.
    #[error(
        "the MILP is too large: {columns} columns and {nonzeros} nonzeros with step {step} s \
         (limit {max_columns} columns, {max_nonzeros} nonzeros)"
    )]
    TooLarge {
        /// Binary `x` columns the model would have at this step.
        columns: usize,
        /// Estimated nonzeros of the constraint matrix at this step.
        nonzeros: usize,
        /// The grid step delta tried last, in seconds.
        step: i64,
        /// The column limit, [`MilpOptions::max_columns`].
        max_columns: usize,
        /// The nonzero limit, 8 times `max_columns`.
        max_nonzeros: usize,
    },
    /// HiGHS returned an error while loading, configuring or solving the model (the message
    /// says which step), or reported the model infeasible although the incumbent's floored
    /// schedule is feasible.
    #[error("HiGHS failed: {0}")]
    Solver(String),
    /// Another thread's MILP held the process-wide HiGHS lock until this call's time limit
    /// ran out, so the model was never solved.
    #[error("another thread held HiGHS until the time limit (HiGHS runs one model at a time)")]
    Busy,
}

/// The version of the HiGHS library linked in (`1.11.0`).
pub fn highs_version() -> String {
    // SAFETY: HiGHS returns a pointer to a static, NUL-terminated version string.
    unsafe {
        let text = highs_sys::Highs_version();
        if text.is_null() {
            return "unknown".into();
        }
        std::ffi::CStr::from_ptr(text)
            .to_string_lossy()
            .into_owned()
    }
}

/// Builds and solves the time-indexed MILP of the module docs.
pub fn solve(
    problem: &Problem,
    objective: Objective,
    opts: &MilpOptions,
) -> Result<MilpOutcome, MilpError> {
    if opts.variant != Variant::Serial {
        return Err(MilpError::UnsupportedVariant(opts.variant));
    }
    if let Some(step) = opts.step {
        if step < 1 {
            return Err(MilpError::BadStep(step));
        }
    }
    // Queued: wait for HiGHS first, and start the clock when it is ours.
    let queued = opts.queue.then(lock_queued);
    let clock = Instant::now();
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
            iterations: 0,
            timed_out: false,
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

    let deadline = opts.time_limit.map(|t| clock + t);
    let held = match (queued, deadline) {
        (Some(guard), _) => guard,
        (None, Some(deadline)) => lock_until(deadline)?,
        (None, None) => lock_queued(),
    };
    let limits = Limits {
        deadline,
        iterations: opts
            .iteration_limit
            .map(|i| i64::try_from(i).unwrap_or(i64::MAX)),
        timed_out: std::cell::Cell::new(false),
        iterations_seen: std::cell::Cell::new(0),
    };
    let run = model.run(warm.as_deref(), &limits)?;
    drop(held);

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
        iterations: run.iterations,
        timed_out: run.timed_out,
        time_ms: clock.elapsed().as_millis() as u64,
    })
}
