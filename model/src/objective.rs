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

    /// The objective of a complete schedule given by the start of every queued job.
    pub fn value(self, problem: &Problem, start: &[Time]) -> f64 {
        let n = problem.jobs();
        match self {
            Objective::Bsld => {
                (0..n)
                    .map(|j| bounded_slowdown(problem, j, start[j]))
                    .sum::<f64>()
                    / n as f64
            }
            Objective::Wait => {
                (0..n)
                    .map(|j| (start[j] - problem.submit(j)) as f64)
                    .sum::<f64>()
                    / n as f64
            }
            Objective::Flow => {
                let total: f64 = (0..n).map(|j| problem.weight(j)).sum();
                (0..n)
                    .map(|j| {
                        problem.weight(j)
                            * (start[j] + problem.walltime(j) - problem.submit(j)) as f64
                    })
                    .sum::<f64>()
                    / total
            }
            Objective::Makespan => (0..n)
                .map(|j| start[j] + problem.walltime(j) - problem.now())
                .max()
                .unwrap_or(0) as f64,
        }
    }
}

impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Bounded slowdown of job `j` started at `start`: max((w + p) / max(p, tau), 1).
pub fn bounded_slowdown(problem: &Problem, j: usize, start: Time) -> f64 {
    let p = problem.walltime(j);
    let w = start - problem.submit(j);
    ((w + p) as f64 / p.max(TAU) as f64).max(1.0)
}

/// All four objectives of one schedule.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Objectives {
    pub bsld: f64,
    pub wait: f64,
    pub flow: f64,
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
