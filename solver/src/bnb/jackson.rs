//! One machine with heads and tails: the makespan of Jackson's preemptive schedule.
//!
//! Jobs that pairwise can never overlap run one at a time. Each job `j` has a head `r_j` (it
//! cannot start before) and a tail `q_j` (after it ends, a chain of its dependents still takes
//! `q_j`), so every schedule lasts at least `max_j (C_j + q_j)`. Allowing preemption, the least
//! such value is reached by running, at every instant, the released job with the longest tail
//! (Jackson's preemptive schedule; Carlier 1982), which equals
//! `max over sets S of (min head + sum of walltimes + min tail)`: the one-machine bound of the
//! job shop, here over a clique of conflicting jobs.

use std::collections::BinaryHeap;

use schedlm_model::{Problem, Time};

/// Cliques of conflicting jobs kept for the one-machine bound and test.
const CLIQUES: usize = 4;

/// A job of the one-machine relaxation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Member {
    pub(super) head: Time,
    pub(super) walltime: Time,
    pub(super) tail: Time,
}

/// Scratch of the bound (nothing is allocated per call once warm).
#[derive(Debug, Default)]
pub(super) struct Jackson {
    /// Released jobs: (tail, index into the sorted members).
    heap: BinaryHeap<(Time, usize)>,
    remaining: Vec<Time>,
}

impl Jackson {
    /// The latest `C_j + q_j` of Jackson's preemptive schedule of `members` (sorted here by
    /// head); `Time::MIN` when there are none.
    pub(super) fn bound(&mut self, members: &mut [Member]) -> Time {
        members.sort_unstable();
        self.heap.clear();
        self.remaining.clear();
        self.remaining.extend(members.iter().map(|m| m.walltime));
        let mut best = Time::MIN;
        let mut next = 0;
        let mut t = Time::MIN;
        while next < members.len() || !self.heap.is_empty() {
            if self.heap.is_empty() {
                t = t.max(members[next].head);
            }
            while next < members.len() && members[next].head <= t {
                self.heap.push((members[next].tail, next));
                next += 1;
            }
            let Some(&(tail, k)) = self.heap.peek() else {
                continue;
            };
            let release = members.get(next).map_or(Time::MAX, |m| m.head);
            let run = self.remaining[k].min(release.saturating_sub(t));
            t += run;
            self.remaining[k] -= run;
            if self.remaining[k] == 0 {
                self.heap.pop();
                best = best.max(t + tail);
            }
        }
        best
    }
}

/// The queue's jobs, longest walltime first (the order greedy cliques grow in).
pub(super) fn longest_first(problem: &Problem) -> Vec<usize> {
    let mut jobs: Vec<usize> = (0..problem.jobs()).collect();
    jobs.sort_by_key(|&j| (std::cmp::Reverse(problem.walltime(j)), j));
    jobs
}

/// The clique grown from `seed` (a bit set of pairwise-conflicting jobs; may be empty) by
/// adding, in the order `by_length`, each job with `open(j)` that conflicts with every member.
pub(super) fn greedy_clique(
    conflict: &[u128],
    by_length: &[usize],
    seed: u128,
    open: impl Fn(usize) -> bool,
) -> u128 {
    let mut members = seed;
    for &j in by_length {
        if open(j) && conflict[j] & members == members {
            members |= 1 << j;
        }
    }
    members
}

/// Cliques of pairwise-conflicting jobs (`conflict`, bit sets) for the one-machine bound: the
/// greedy clique grown from each job (then in the order `by_length`, longest first), the
/// [`CLIQUES`] with the highest bound kept, scored with heads from the release times and
/// dependency chains and tails `tail`. The greedy clique of all jobs, longest first, alone can
/// miss the strongest one: PSPLIB j309_2's bound rises from 66 to 89 (optimum 92).
pub(super) fn choose_cliques(
    problem: &Problem,
    conflict: &[u128],
    tail: &[Time],
    by_length: &[usize],
) -> Vec<u128> {
    let n = problem.jobs();
    if conflict.is_empty() {
        return Vec::new();
    }
    let mut head = vec![0; n];
    for j in problem.topological_order() {
        head[j] = problem.released(j);
        for &d in problem.deps(j) {
            head[j] = head[j].max(head[d] + problem.walltime(d));
        }
    }
    let mut jackson = Jackson::default();
    let mut members_of = Vec::with_capacity(n);
    let mut found: Vec<(Time, u128)> = Vec::new();
    for seed in 0..n {
        let members = greedy_clique(conflict, by_length, 1 << seed, |_| true);
        if members.count_ones() < 2 || found.iter().any(|&(_, m)| m == members) {
            continue;
        }
        members_of.clear();
        members_of.extend((0..n).filter(|&j| members >> j & 1 == 1).map(|j| Member {
            head: head[j],
            walltime: problem.walltime(j),
            tail: tail[j],
        }));
        found.push((jackson.bound(&mut members_of), members));
    }
    found.sort_unstable_by(|a, b| b.cmp(a));
    found.iter().take(CLIQUES).map(|&(_, m)| m).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The bound equals its closed form: the largest min head + sum of walltimes + min tail
    /// over all sets of members.
    fn by_sets(members: &[Member]) -> Time {
        let n = members.len();
        (1u32..1 << n)
            .map(|set| {
                let inside = || {
                    (0..n)
                        .filter(move |&i| set >> i & 1 == 1)
                        .map(|i| members[i])
                };
                inside().map(|m| m.head).min().unwrap_or(0)
                    + inside().map(|m| m.walltime).sum::<Time>()
                    + inside().map(|m| m.tail).min().unwrap_or(0)
            })
            .max()
            .unwrap_or(Time::MIN)
    }

    proptest! {
        #[test]
        fn equals_the_best_set(jobs in prop::collection::vec((0i64..50, 1i64..20, 0i64..40), 1..8)) {
            let mut members: Vec<Member> = jobs
                .iter()
                .map(|&(head, walltime, tail)| Member { head, walltime, tail })
                .collect();
            let expected = by_sets(&members);
            prop_assert_eq!(Jackson::default().bound(&mut members), expected);
        }
    }

    #[test]
    fn tails_lift_the_bound_above_the_heads_alone() {
        // Two jobs released at 0: the one with the long tail runs first.
        let mut members = [
            Member {
                head: 0,
                walltime: 5,
                tail: 0,
            },
            Member {
                head: 0,
                walltime: 3,
                tail: 10,
            },
        ];
        assert_eq!(Jackson::default().bound(&mut members), 13);
    }
}
