//! Dispatching rules that look at the schedule being built: unlike the priority rules of SPEC
//! section 6, whose scores are fixed before the first job is placed, these pick each next job
//! from where every remaining job would start if it were placed now.
//!
//! **Earliest completion first (ECT).** Place, one job at a time, the job that would *end*
//! earliest if placed next: the smallest `start + walltime` on the schedule of the jobs placed
//! so far (only jobs whose queued dependencies are placed; ties by a given ranking, the
//! instance's best classic rule by default). It reads what the serial dispatcher will do with
//! the order, which no static score can: a long job that can start now may end before a short
//! one that must wait. On `uniform` snapshots of 16 to 20 jobs it is about 2.2% above the best
//! known order where the best classic rule per instance is 3.5% away (docs/learning.md).
//!
//! ```
//! use schedlm_model::{Instance, Objective, Problem, Variant};
//! use schedlm_solver::greedy::{earliest_completion, listing};
//!
//! // One 4-core server, busy on 2 cores for 100 s: the 4-core job must wait, the 2-core
//! // one ends first if placed now.
//! let instance = Instance::from_json(r#"{
//!   "now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [4]}],
//!   "running": [{"id": "r", "server": "n0", "demand": [2], "end": 100}],
//!   "queue": [{"id": "wide", "submit": 0, "demand": [4], "walltime": 20},
//!             {"id": "narrow", "submit": 0, "demand": [2], "walltime": 60}]
//! }"#).unwrap();
//! let problem = Problem::new(&instance).unwrap();
//! // SJF would place `wide` first (20 s); it cannot start before 100 and ends at 120, while
//! // `narrow` starts now and ends at 60.
//! assert_eq!(earliest_completion(&problem, Variant::Serial, &[0, 1]), vec![1, 0]);
//! let d = schedlm_model::Dispatcher::new(&problem, Variant::Serial);
//! assert_eq!(listing(&d, &[0, 1]), vec![(1, 0), (0, 100)]);
//! ```

use schedlm_model::{Dispatcher, Objective, Problem, Time, Variant};

/// The jobs that may be placed next on `d`'s partial schedule (unplaced, every queued
/// dependency placed), each with the start it would get, in ECT order: by `start + walltime`,
/// ties by position in `rank` (a permutation of the queue indices).
pub fn listing(d: &Dispatcher<'_>, rank: &[usize]) -> Vec<(usize, Time)> {
    let problem = d.problem();
    let mut out: Vec<(usize, Time, usize)> = rank
        .iter()
        .enumerate()
        .filter(|&(_, &j)| !d.is_placed(j) && d.is_ready(j))
        .map(|(k, &j)| (j, d.earliest(j).start, k))
        .collect();
    out.sort_by_key(|&(j, start, k)| (start.saturating_add(problem.walltime(j)), k));
    out.into_iter().map(|(j, start, _)| (j, start)).collect()
}

/// The earliest-completion-first order of `problem` under `variant`, ties by `rank`.
pub fn earliest_completion(problem: &Problem, variant: Variant, rank: &[usize]) -> Vec<usize> {
    let mut d = Dispatcher::new(problem, variant);
    let mut order = Vec::with_capacity(problem.jobs());
    complete(&mut d, rank, &mut order);
    order
}

/// The earliest-completion-first order, ties by the ranking of the instance's best classic rule
/// for `objective` ([`crate::canonical::ranking`]): the `ect` policy of snapshot and online
/// evaluation.
pub fn ect(problem: &Problem, objective: Objective, variant: Variant) -> Vec<usize> {
    let rank = crate::canonical::ranking(problem, objective, variant).order;
    earliest_completion(problem, variant, &rank)
}

/// Completes `d`'s partial schedule earliest completion first (ties by `rank`), appending each
/// job it places to `order`, which holds the jobs placed so far.
pub fn complete(d: &mut Dispatcher<'_>, rank: &[usize], order: &mut Vec<usize>) {
    while order.len() < d.problem().jobs() {
        // A valid problem has no dependency cycle: some unplaced job is always ready.
        let Some(&(j, _)) = listing(d, rank).first() else {
            break;
        };
        d.place(j);
        order.push(j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::ranking;
    use schedlm_model::{Instance, Objective};

    #[test]
    fn every_order_is_a_dependency_respecting_permutation() {
        let mut config = schedlm_generator::Config::new(schedlm_generator::Family::Uniform, 5);
        config.dep_prob = 0.4;
        for inst in schedlm_generator::generate(&config, 40).unwrap() {
            let p = Problem::new(&inst).unwrap();
            let rank = ranking(&p, Objective::Bsld, Variant::Serial).order;
            let o = earliest_completion(&p, Variant::Serial, &rank);
            let mut sorted = o.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..p.jobs()).collect::<Vec<_>>());
            assert_eq!(
                schedlm_model::repair(&p, &o),
                o,
                "placed after its dependencies"
            );
        }
    }

    #[test]
    fn ties_follow_the_ranking() {
        let inst = Instance::from_json(
            r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n", "capacity": [2]}],
                "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 60},
                          {"id": "b", "submit": 0, "demand": [1], "walltime": 60}]}"#,
        )
        .unwrap();
        let p = Problem::new(&inst).unwrap();
        assert_eq!(
            earliest_completion(&p, Variant::Serial, &[1, 0]),
            vec![1, 0]
        );
        assert_eq!(
            earliest_completion(&p, Variant::Serial, &[0, 1]),
            vec![0, 1]
        );
    }
}
