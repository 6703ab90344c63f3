//! Double justification for the makespan (forward-backward improvement; Valls, Ballestín and
//! Quintanilla 2005), used by the local search.
//!
//! The schedule of an order is shifted right, then left: the jobs, latest end first, each end
//! as late as the makespan, their queued dependents' late starts and the capacity allow (on the
//! first server with room); then the order of those late starts is dispatched again. Each job
//! of that order fits at its late start (on one server, the jobs before it start no later, so
//! from there on they use no more), so the new makespan is never longer on one server; it is
//! often shorter, because the right shift closes gaps the serial dispatcher left. The search
//! keeps the new order only when it is better.

use std::cmp::Reverse;

use schedlm_model::{Problem, Time};

/// Longest queue justified (the backward pass is cubic in the queue length).
pub(crate) const JUSTIFY_MAX_JOBS: usize = 200;

/// A job placed by the backward pass: server, start, end, job.
type Held = (usize, Time, Time, usize);

/// The order of the right-justified schedule of a schedule (`start`: each queued job's start,
/// as the dispatcher placed it; `dependents`: the queued jobs that depend on each job), or
/// `None` when a job cannot end by the makespan without starting before it is released
/// (running jobs block the start of the schedule).
pub(crate) fn justify(
    problem: &Problem,
    start: &[Time],
    dependents: &[Vec<usize>],
) -> Option<Vec<usize>> {
    let n = problem.jobs();
    let end = |j: usize| start[j] + problem.walltime(j);
    let horizon = (0..n).map(end).max()?;
    let mut by_end: Vec<usize> = (0..n).collect();
    by_end.sort_by_key(|&j| (Reverse(end(j)), Reverse(start[j]), j));
    let mut late = vec![Time::MIN; n];
    let mut held: Vec<Held> = Vec::with_capacity(n);
    let mut ends: Vec<Time> = Vec::with_capacity(n + 1);
    for &j in &by_end {
        let p = problem.walltime(j);
        let upper = dependents[j]
            .iter()
            .map(|&k| late[k])
            .fold(horizon, Time::min);
        ends.clear();
        ends.push(upper);
        ends.extend(held.iter().map(|h| h.1).filter(|&t| t < upper));
        ends.sort_unstable_by(|a, b| b.cmp(a));
        ends.dedup();
        let at = ends.iter().find_map(|&f| {
            (0..problem.servers())
                .find(|&s| problem.fits(j, s) && room(problem, &held, s, j, f - p, f))
                .map(|s| (s, f))
        })?;
        let (server, finish) = at;
        if finish - p < problem.released(j) {
            return None;
        }
        late[j] = finish - p;
        held.push((server, finish - p, finish, j));
    }
    let mut justified: Vec<usize> = (0..n).collect();
    justified.sort_by_key(|&j| (late[j], j));
    Some(justified)
}

/// Whether job `j` fits server `s` over `[a, b)` beside the running jobs and `held`.
fn room(problem: &Problem, held: &[Held], s: usize, j: usize, a: Time, b: Time) -> bool {
    // Usage rises only at `a` and where a held job starts.
    let instants = std::iter::once(a).chain(
        held.iter()
            .filter(|h| h.0 == s && a < h.1 && h.1 < b)
            .map(|h| h.1),
    );
    let cap = problem.capacity(s);
    for t in instants {
        for (q, &c) in cap.iter().enumerate() {
            let running: i64 = problem
                .running()
                .iter()
                .filter(|r| r.server == s && t < r.end)
                .map(|r| r.demand[q])
                .sum();
            let placed: i64 = held
                .iter()
                .filter(|h| h.0 == s && h.1 <= t && t < h.2)
                .map(|h| problem.demand(h.3)[q])
                .sum();
            if running + placed + problem.demand(j)[q] > c {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlm_generator::{generate_one, Config, Family};
    use schedlm_model::{dispatch, Objective, Variant};

    /// On one server the justified order's makespan is never longer, and it is shorter on
    /// some instances (so the pass does something).
    #[test]
    fn never_lengthens_one_server_and_sometimes_shortens() {
        let mut shorter = 0;
        for family in [Family::Uniform, Family::Hpc, Family::Dl] {
            for index in 0..40 {
                let mut config = Config::new(family, 11);
                config.servers = Some(1);
                config.queue_min = 10;
                config.queue_max = 16;
                config.dep_prob = 0.3;
                let instance = generate_one(&config, index).expect("valid config");
                let p = Problem::new(&instance).expect("valid instance");
                let order: Vec<usize> = (0..p.jobs()).rev().collect();
                let mut dependents = vec![Vec::new(); p.jobs()];
                for j in 0..p.jobs() {
                    for &d in p.deps(j) {
                        dependents[d].push(j);
                    }
                }
                for variant in [Variant::Serial, Variant::Strict] {
                    let (_, before) = p.evaluate(&order, Objective::Makespan, variant);
                    let schedule = dispatch(&p, &order, variant).expect("a permutation");
                    let Some(justified) = justify(&p, &schedule.start, &dependents) else {
                        continue;
                    };
                    let (_, after) = p.evaluate(&justified, Objective::Makespan, variant);
                    assert!(after <= before, "{family:?} #{index}: {before} -> {after}");
                    shorter += usize::from(after < before);
                }
            }
        }
        assert!(shorter > 0, "justification never shortened a schedule");
    }
}
