//! Objectives as sums (or a maximum) of per-job costs, the form search methods work with.
//!
//! SPEC's objectives are means; a search compares totals instead: `bsld` and `wait` are
//! `total / n`, `flow` is `total / sum of weights`, `makespan` is the maximum of `C_j - now`.
//! Final values are always recomputed from the starts with [`Objective::value`]. The job costs
//! and the divisor are the model's ([`Objective::job_cost`], [`Objective::scale`]).

use schedlm_model::{Objective, Problem, Time, TAU};

/// Per-job cost and aggregation of one objective on one problem.
#[derive(Debug, Clone, Copy)]
pub struct Cost<'p> {
    problem: &'p Problem,
    objective: Objective,
    scale: f64,
    integral: bool,
}

impl<'p> Cost<'p> {
    /// The costs of `objective` on `problem`, with the divisor from totals to values
    /// ([`Objective::scale`]: the job count, the weight sum, or 1 for the makespan).
    pub fn new(problem: &'p Problem, objective: Objective) -> Cost<'p> {
        let integral = match objective {
            Objective::Bsld => false,
            Objective::Wait | Objective::Makespan => true,
            Objective::Flow => (0..problem.jobs()).all(|j| problem.weight(j).fract() == 0.0),
        };
        Cost {
            problem,
            objective,
            scale: objective.scale(problem),
            integral,
        }
    }

    /// The objective whose costs these are.
    pub fn objective(&self) -> Objective {
        self.objective
    }

    /// Whether totals combine by maximum (makespan) rather than by sum.
    #[inline]
    pub fn is_max(&self) -> bool {
        self.objective.is_max()
    }

    /// Cost of job `j` started at `start`.
    #[inline]
    pub fn job(&self, j: usize, start: Time) -> f64 {
        self.objective.job_cost(self.problem, j, start)
    }

    /// Whether every job cost (and so every total) is an integer: wait and makespan always,
    /// flow with integer weights, bounded slowdown never.
    pub fn is_integral(&self) -> bool {
        self.integral
    }

    /// A lower bound on a total, rounded up to the next integer when every total is an integer
    /// (a makespan bound of 54.3125 s is a bound of 55 s). A relative 1e-9 is taken off first,
    /// so a bound that floating point puts a hair above an integer stays at that integer.
    #[inline]
    pub fn round_up(&self, bound: f64) -> f64 {
        if self.integral && bound.is_finite() {
            (bound - 1e-9 * bound.abs().max(1.0)).ceil()
        } else {
            bound
        }
    }

    /// Adds a job cost to a total.
    #[inline]
    pub fn add(&self, total: f64, cost: f64) -> f64 {
        if self.is_max() {
            total.max(cost)
        } else {
            total + cost
        }
    }

    /// The objective value of a total.
    #[inline]
    pub fn value(&self, total: f64) -> f64 {
        total / self.scale
    }

    /// The total of an objective value.
    #[inline]
    pub fn total(&self, value: f64) -> f64 {
        value * self.scale
    }

    /// Linear lower bound of job `j`'s cost in its completion time C: cost >= slope * C + offset.
    /// Used by the energy bound.
    #[inline]
    pub fn linear(&self, j: usize) -> (f64, f64) {
        let p = self.problem;
        let (pj, sub) = (p.walltime(j) as f64, p.submit(j) as f64);
        match self.objective {
            // max((C - s) / max(p, tau), 1) >= (C - s) / max(p, tau)
            Objective::Bsld => {
                let m = p.walltime(j).max(TAU) as f64;
                (1.0 / m, -sub / m)
            }
            Objective::Wait => (1.0, -pj - sub),
            Objective::Flow => (p.weight(j), -p.weight(j) * sub),
            Objective::Makespan => (0.0, 0.0),
        }
    }
}
