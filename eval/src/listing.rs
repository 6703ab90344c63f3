//! An order read as a sequence of step decisions against the earliest-completion listing.
//!
//! A step model (`step-v1`, `step-v2` templates) answers one decision at a time from a prompt
//! that lists the jobs it may place next by the time they would end
//! ([`schedlm_solver::greedy::listing`]); following the listing at every state is the `ect`
//! rule. So the question a report must answer about such a model is whether it ever leaves
//! the listing, and whether it is right when it does. [`trace`] replays any order through the
//! serial (or strict) dispatcher and, at each state with a choice, compares the job the order
//! places with the listing's first job:
//!
//! - a **decision** is a state with at least two jobs the listing offers (a forced placement
//!   is no decision);
//! - a decision **leaves the listing** when the order places another job than the first
//!   listed;
//! - such a decision is **right** when it lowers the final value: the prefix, then the
//!   order's job, then the rest earliest completion first, ends strictly below (beyond
//!   [`crate::snapshot::TOLERANCE`]) the prefix, then the listing's first job, then the rest
//!   the same way. Both continuations follow the same rule, so the comparison isolates the
//!   one decision.

use serde::{Deserialize, Serialize};

use schedlm_model::{Dispatcher, Objective, Problem, Variant};
use schedlm_solver::greedy::{complete, listing};

/// How one order relates to the earliest-completion listing (module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListingTrace {
    /// States with at least two jobs to choose from.
    pub decisions: usize,
    /// Decisions where the order places another job than the first listed.
    pub leaving: usize,
    /// Decisions leaving the listing that lower the final value (module doc).
    pub leaving_right: usize,
}

impl ListingTrace {
    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &ListingTrace) {
        self.decisions += other.decisions;
        self.leaving += other.leaving;
        self.leaving_right += other.leaving_right;
    }
}

/// Replays `order` (a permutation of the queue in dispatch order, as the dispatcher placed
/// it) and counts its decisions against the listing, ties in the listing broken by `rank`
/// (the instance's ranking, as the step prompts and `ect` break them).
pub fn trace(
    problem: &Problem,
    objective: Objective,
    variant: Variant,
    rank: &[usize],
    order: &[usize],
) -> ListingTrace {
    let mut d = Dispatcher::new(problem, variant);
    let mut out = ListingTrace::default();
    let mut scratch = Vec::with_capacity(problem.jobs());
    for (k, &choice) in order.iter().enumerate() {
        let listed = listing(&d, rank);
        if listed.len() >= 2 {
            out.decisions += 1;
            let first = listed[0].0;
            if choice != first {
                out.leaving += 1;
                // The continuation's value from the schedule the dispatcher holds (no second
                // dispatch of the whole order).
                let mut value_after = |j: usize| {
                    scratch.clear();
                    scratch.extend_from_slice(&order[..k]);
                    d.place(j);
                    scratch.push(j);
                    complete(&mut d, rank, &mut scratch);
                    let value = objective.value(problem, &d.schedule().start);
                    d.truncate(k);
                    value
                };
                let taken = value_after(choice);
                let listed_first = value_after(first);
                if taken < listed_first - crate::snapshot::TOLERANCE * listed_first.abs().max(1.0) {
                    out.leaving_right += 1;
                }
            }
        }
        d.place(choice);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlm_generator::{generate_one, Config, Family};
    use schedlm_solver::canonical::ranking;
    use schedlm_solver::greedy::earliest_completion;

    fn problems() -> Vec<Problem> {
        let mut config = Config::new(Family::Uniform, 11);
        config.queue_min = 8;
        config.queue_max = 12;
        (0..12)
            .map(|i| Problem::new(&generate_one(&config, i).unwrap()).unwrap())
            .collect()
    }

    #[test]
    fn the_listing_rule_never_leaves_the_listing() {
        for p in problems() {
            let rank = ranking(&p, Objective::Bsld, Variant::Serial).order;
            let ect = earliest_completion(&p, Variant::Serial, &rank);
            let t = trace(&p, Objective::Bsld, Variant::Serial, &rank, &ect);
            assert_eq!(t.leaving, 0, "{t:?}");
            assert!(
                t.decisions >= p.jobs() - 1 - 1,
                "{t:?} of {} jobs",
                p.jobs()
            );
        }
    }

    #[test]
    fn a_single_departure_is_right_exactly_when_it_lowers_the_value() {
        let mut right = 0;
        let mut wrong = 0;
        for p in problems() {
            let (obj, var) = (Objective::Bsld, Variant::Serial);
            let rank = ranking(&p, obj, var).order;
            let ect = earliest_completion(&p, var, &rank);
            let ect_value = p.evaluate(&ect, obj, var).1;
            // Each order that takes another listed job first, then follows the listing.
            let listed = listing(&Dispatcher::new(&p, var), &rank);
            for &(first, _) in listed.iter().skip(1) {
                let mut d = Dispatcher::new(&p, var);
                d.place(first);
                let mut order = vec![first];
                complete(&mut d, &rank, &mut order);
                let t = trace(&p, obj, var, &rank, &order);
                assert_eq!(t.leaving, 1, "{t:?}");
                let lower = p.evaluate(&order, obj, var).1 < ect_value - 1e-9;
                assert_eq!(t.leaving_right, usize::from(lower), "{t:?}");
                if lower {
                    right += 1;
                } else {
                    wrong += 1;
                }
            }
        }
        // The instances give both outcomes, so the test can tell them apart.
        assert!(right > 0 && wrong > 0, "right {right}, wrong {wrong}");
    }
}
