//! The objectives of SPEC section 4, computed over the queued jobs from their starts.

use crate::instance::Time;
use crate::problem::Problem;

/// The bounded-slowdown threshold tau, in seconds.
pub const TAU: Time = 10;

/// An objective to minimise.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Objective {
    /// Mean bounded slowdown, max((w + p) / max(p, 10), 1).
    #[default]
    Bsld,
    /// Mean wait S - submit.
    Wait,
    /// Weighted mean flow time, sum w (C - submit) / sum w.
    Flow,
    /// Latest completion minus `now`.
    Makespan,
}

impl Objective {
    /// Every objective, in SPEC's order.
    pub const ALL: [Objective; 4] = [
        Objective::Bsld,
        Objective::Wait,
        Objective::Flow,
        Objective::Makespan,
    ];

    /// The name used in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Objective::Bsld => "bsld",
            Objective::Wait => "wait",
            Objective::Flow => "flow",
            Objective::Makespan => "makespan",
        }
    }

    /// The cost of queued job `j` started at `start`, the term the objective aggregates:
    /// its bounded slowdown, its wait, its weighted flow time, or its completion minus `now`.
    /// Every solver scores jobs with this one function.
    #[inline]
    pub fn job_cost(self, problem: &Problem, j: usize, start: Time) -> f64 {
        match self {
            Objective::Bsld => bounded_slowdown(problem, j, start),
            Objective::Wait => (start - problem.submit(j)) as f64,
            Objective::Flow => {
                problem.weight(j) * (start + problem.walltime(j) - problem.submit(j)) as f64
            }
            Objective::Makespan => (start + problem.walltime(j) - problem.now()) as f64,
        }
    }

    /// Whether the objective is the maximum of the job costs (makespan) rather than a sum.
    #[inline]
    pub fn is_max(self) -> bool {
        self == Objective::Makespan
    }

    /// What the sum of the job costs is divided by: the number of jobs (bsld, wait), the sum
    /// of the weights (flow), or 1 (makespan, a maximum).
    pub fn scale(self, problem: &Problem) -> f64 {
        match self {
            Objective::Bsld | Objective::Wait => problem.jobs() as f64,
            Objective::Flow => (0..problem.jobs()).map(|j| problem.weight(j)).sum(),
            Objective::Makespan => 1.0,
        }
    }

    /// The objective of a complete schedule given by the start of every queued job: the
    /// job costs summed (in queue order) and divided by [`Objective::scale`], or their maximum.
    pub fn value(self, problem: &Problem, start: &[Time]) -> f64 {
        let costs = (0..problem.jobs()).map(|j| self.job_cost(problem, j, start[j]));
        if self.is_max() {
            costs.fold(0.0, f64::max)
        } else {
            costs.sum::<f64>() / self.scale(problem)
        }
    }
}

impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Relative tolerance under which two objective values are the same value.
pub const VALUE_TOLERANCE: f64 = 1e-9;

/// Whether two objective values are equal within [`VALUE_TOLERANCE`] (relative to the larger,
/// and at least that much in absolute terms): the one test of a tie between orders.
pub fn tied(a: f64, b: f64) -> bool {
    (a - b).abs() <= VALUE_TOLERANCE * a.abs().max(b.abs()).max(1.0)
}

/// Bounded slowdown of queued job `j` started at `start`, planned with its walltime p:
/// max((w + p) / max(p, tau), 1).
pub fn bounded_slowdown(problem: &Problem, j: usize, start: Time) -> f64 {
    job_bsld(start - problem.submit(j), problem.walltime(j))
}

/// Bounded slowdown of a job that waited `wait` and ran `run`: max((w + r) / max(r, tau), 1).
/// The one formula of snapshots (run = walltime) and replays (run = the true run time).
pub fn job_bsld(wait: Time, run: Time) -> f64 {
    ((wait + run) as f64 / run.max(TAU) as f64).max(1.0)
}

/// All four objectives of one schedule.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Objectives {
    /// Mean bounded slowdown of the queued jobs (`bsld`, dimensionless, >= 1).
    pub bsld: f64,
    /// Mean wait S_j - submit_j of the queued jobs, in seconds (`wait`).
    pub wait: f64,
    /// Weighted mean flow time sum w_j (C_j - submit_j) / sum w_j, in seconds (`flow`).
    pub flow: f64,
    /// Latest completion C_j minus `now`, in seconds (`makespan`).
    pub makespan: f64,
}

impl Objectives {
    /// Every objective of a complete schedule.
    pub fn of(problem: &Problem, start: &[Time]) -> Objectives {
        Objectives {
            bsld: Objective::Bsld.value(problem, start),
            wait: Objective::Wait.value(problem, start),
            flow: Objective::Flow.value(problem, start),
            makespan: Objective::Makespan.value(problem, start),
        }
    }

    /// The value of one objective.
    pub fn get(&self, objective: Objective) -> f64 {
        match objective {
            Objective::Bsld => self.bsld,
            Objective::Wait => self.wait,
            Objective::Flow => self.flow,
            Objective::Makespan => self.makespan,
        }
    }
}
