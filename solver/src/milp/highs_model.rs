//! The model in good_lp and its solve by HiGHS: columns, rows, the warm start, the deadline
//! callback and the process-wide lock around HiGHS.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use good_lp::solvers::highs::{highs, HighsProblem};
use good_lp::{constraint, variable, Expression, ProblemVariables, SolverModel, Variable};
use highs::{HighsModelStatus, HighsSolutionStatus};
use schedlm_model::{Objective, Problem, Time};

use crate::cost::Cost;

use super::bounds::coefficient;
use super::grid::Grid;
use super::MilpError;

/// Nonzeros allowed per allowed column.
pub(super) const NONZEROS_PER_COLUMN: usize = 8;

/// Above this many nonzeros HiGHS's presolve is switched off.
pub(super) const PRESOLVE_NONZEROS: usize = 50_000;

/// Serialises every HiGHS model's life (see the module docs).
pub(super) static HIGHS_LOCK: Mutex<()> = Mutex::new(());

/// Below this budget HiGHS's presolve is switched off (it cannot be interrupted).
pub(super) const PRESOLVE_MIN_TIME: Duration = Duration::from_secs(2);

/// Below this many simplex iterations (an iteration-limited run) presolve is switched off.
pub(super) const PRESOLVE_MIN_ITERATIONS: i64 = 20_000;

/// HiGHS callback kinds (`kHighsCallback*Interrupt` in HiGHS's C API).
pub(super) const CALLBACK_SIMPLEX_INTERRUPT: highs_sys::HighsInt = 1;
pub(super) const CALLBACK_IPM_INTERRUPT: highs_sys::HighsInt = 2;
pub(super) const CALLBACK_MIP_INTERRUPT: highs_sys::HighsInt = 6;

/// What the interrupt callback stops HiGHS at: a deadline, a count of simplex iterations, or
/// both; it notes which one fired.
pub(super) struct Limits {
    pub(super) deadline: Option<Instant>,
    /// Most simplex iterations (the MIP's total over its LPs; the root LP's own count before
    /// the branch and bound starts). HiGHS runs on one thread, so this stops it at the same
    /// point on every machine.
    pub(super) iterations: Option<i64>,
    pub(super) timed_out: std::cell::Cell<bool>,
    pub(super) iterations_seen: std::cell::Cell<i64>,
}

/// Asks HiGHS to stop once a limit behind `user` (a [`Limits`]) is reached.
pub(super) unsafe extern "C" fn interrupt(
    kind: std::ffi::c_int,
    _message: *const std::ffi::c_char,
    out: *const highs_sys::HighsCallbackDataOut,
    data_in: *mut highs_sys::HighsCallbackDataIn,
    user: *mut std::ffi::c_void,
) {
    // SAFETY: `user` is the `Limits` registered in `Model::run`, alive during the solve;
    // `out` and `data_in` are HiGHS's, valid for this call (they may be null for some kinds).
    unsafe {
        let limits = &*(user as *const Limits);
        if data_in.is_null() {
            return;
        }
        if !out.is_null() {
            let out = &*out;
            let done = if kind == CALLBACK_MIP_INTERRUPT {
                out.mip_total_lp_iterations
            } else {
                i64::from(out.simplex_iteration_count)
            };
            limits
                .iterations_seen
                .set(limits.iterations_seen.get().max(done));
            if limits.iterations.is_some_and(|max| done >= max) {
                (*data_in).user_interrupt = 1;
                return;
            }
        }
        if limits.deadline.is_some_and(|d| Instant::now() >= d) {
            limits.timed_out.set(true);
            (*data_in).user_interrupt = 1;
        }
    }
}

/// Takes the HiGHS lock, waiting as long as it takes (the caller's clock starts after).
pub(super) fn lock_queued() -> std::sync::MutexGuard<'static, ()> {
    HIGHS_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Takes the HiGHS lock, waiting at most until `deadline`.
pub(super) fn lock_until(
    deadline: Instant,
) -> Result<std::sync::MutexGuard<'static, ()>, MilpError> {
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

/// One allowed column `x[j,s,k]`.
pub(super) struct Column {
    pub(super) job: usize,
    pub(super) server: usize,
    pub(super) slot: i64,
}

/// The MILP built with good_lp for HiGHS, before solving.
pub(super) struct Model {
    pub(super) problem: HighsProblem,
    /// Number of variables: the `x` columns in the order of `columns`, then `Cmax`.
    pub(super) num_cols: usize,
    pub(super) columns: Vec<Column>,
    /// First column index of each job (columns are grouped by job).
    pub(super) first: Vec<usize>,
    pub(super) delta: i64,
    pub(super) makespan: bool,
    /// Earliest start of each job.
    pub(super) est: Vec<Time>,
    /// Nonzeros of the constraint matrix.
    pub(super) nonzeros: usize,
}

/// The good_lp expression `sum factor * var` of a row's terms.
pub(super) fn expression(terms: &[(Variable, f64)]) -> Expression {
    let mut lhs = Expression::with_capacity(terms.len());
    for &(var, factor) in terms {
        lhs.add_mul(factor, var);
    }
    lhs
}

/// What HiGHS returned.
pub(super) struct Run {
    pub(super) status: String,
    pub(super) proven: bool,
    pub(super) dual_bound: Option<f64>,
    pub(super) objective: Option<f64>,
    /// MILP start slot of each job, when HiGHS has a solution.
    pub(super) slots: Option<Vec<i64>>,
    /// Simplex iterations HiGHS reported (the most its callbacks saw).
    pub(super) iterations: u64,
    /// Whether the deadline (not the iteration limit) stopped HiGHS.
    pub(super) timed_out: bool,
}

impl Model {
    pub(super) fn build(
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
    pub(super) fn warm_start(
        &self,
        problem: &Problem,
        start: &[Time],
        server: &[usize],
    ) -> Option<Vec<f64>> {
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

    /// Solves the model by `deadline`. The caller holds the HiGHS lock ([`lock_until`],
    /// [`lock_queued`]).
    pub(super) fn run(self, warm: Option<&[f64]>, limits: &Limits) -> Result<Run, MilpError> {
        let solver =
            |what: &str, e: &dyn std::fmt::Debug| MilpError::Solver(format!("{what}: {e:?}"));
        let n_x = self.columns.len();
        let jobs = self.first.len() - 1;
        // HiGHS's presolve checks the time limit rarely and can take seconds on large
        // time-indexed models; the root LP bound is what a large model is solved for.
        // Presolve does not poll the interrupt either: skip it when the budget is short.
        // Under an iteration limit the choice must not depend on the clock: presolve runs
        // when the budget holds at least [`PRESOLVE_MIN_ITERATIONS`].
        let short = match (limits.iterations, limits.deadline) {
            (Some(max), _) => max < PRESOLVE_MIN_ITERATIONS,
            (None, Some(d)) => d.saturating_duration_since(Instant::now()) < PRESOLVE_MIN_TIME,
            (None, None) => false,
        };
        let presolve = if self.nonzeros > PRESOLVE_NONZEROS || short {
            "off"
        } else {
            "choose"
        };
        // good_lp's `solve` would drop the HiGHS model before the dual bound can be read and
        // cannot take the interrupt callback: take the `highs::Model` out and drive it here.
        let mut model = self
            .problem
            .try_into_inner()
            .map_err(|e| solver("loading the model", &e))?;
        model.make_quiet();
        let time_limit = limits.deadline.map_or(f64::INFINITY, |d| {
            d.saturating_duration_since(Instant::now())
                .as_secs_f64()
                .max(1e-3)
        });
        // HiGHS checks its own time limit rarely inside a long LP; the interrupt callback,
        // called from simplex, IPM and MIP loops, stops it at the deadline.
        // SAFETY: `limits` outlives the solve below, which is the only time HiGHS calls
        // `interrupt`, and `interrupt` only reads it and sets its cells.
        unsafe {
            let ptr = model.as_mut_ptr();
            let data = limits as *const Limits as *mut std::ffi::c_void;
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
            // HiGHS' symmetry detection cannot be interrupted: on a 50-job `hpc` snapshot it
            // held a 1.7 s MILP phase for 3.3 s past its limit.
            .and_then(|()| model.try_set_option("mip_detect_symmetry", false))
            .map_err(|e| solver("setting an option", &e))?;
        if let Some(values) = warm {
            // A rejected start only costs the warm start.
            let _ = model.try_set_solution(Some(values), None, None, None);
        }
        let solved = model.try_solve().map_err(|e| solver("solving", &e))?;
        let model_status = solved.status();
        let status = match model_status {
            HighsModelStatus::Optimal => "optimal".to_string(),
            HighsModelStatus::ReachedTimeLimit => "time limit".to_string(),
            HighsModelStatus::ReachedInterrupt if limits.timed_out.get() => {
                "time limit".to_string()
            }
            HighsModelStatus::ReachedInterrupt => "work limit".to_string(),
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
        let timed_out = model_status == HighsModelStatus::ReachedTimeLimit
            || (model_status == HighsModelStatus::ReachedInterrupt && limits.timed_out.get());
        Ok(Run {
            status,
            proven,
            dual_bound,
            objective,
            slots,
            iterations: limits.iterations_seen.get().max(0) as u64,
            timed_out,
        })
    }
}
