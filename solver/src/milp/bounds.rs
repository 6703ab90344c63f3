//! What the model needs from the problem: an order evaluated, the MILP's cost coefficients,
//! earliest and latest starts (the horizon of the module docs), the trivial bound.

use schedlm_model::{Objective, Problem, Time, Variant};

use crate::cost::Cost;

/// An order dispatched and evaluated.
pub(super) struct Evaluated {
    pub(super) order: Vec<usize>,
    pub(super) start: Vec<Time>,
    pub(super) server: Vec<usize>,
    pub(super) value: f64,
}

pub(super) fn evaluate(problem: &Problem, objective: Objective, order: &[usize]) -> Evaluated {
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
pub(super) fn coefficient(cost: &Cost, j: usize, t: Time) -> f64 {
    if cost.is_max() {
        0.0
    } else {
        cost.job(j, t)
    }
}

/// The total with every job at its earliest start (a valid bound).
pub(super) fn trivial_total(cost: &Cost, est: &[Time]) -> f64 {
    est.iter()
        .enumerate()
        .fold(0.0, |total, (j, &t)| cost.add(total, cost.job(j, t)))
}

/// Earliest start of each job in any schedule: release and queued dependency chains.
pub(super) fn earliest_starts(problem: &Problem, topo: &[usize]) -> Vec<Time> {
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
pub(super) fn latest_starts(
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
