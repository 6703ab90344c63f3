//! Action values of a dispatching state: for a fixed prefix of placed jobs and each job that
//! may go next, the best objective value reachable by an order that starts with the prefix and
//! that job (`dataset build --records steps --targets values`).
//!
//! # Method
//!
//! For candidate `c` after the prefix `P` of a reference order `L` (the label; `P` is its first
//! `k` jobs):
//!
//! 1. **Incumbent**: `L` with `c` moved to position `k` (`P`, `c`, then the rest of `L` in its
//!    order). The reference's own next job gets exactly the reference's value, and no
//!    candidate is worse than this simple repair.
//! 2. **Local search over the suffix**: insertion moves (a job of the suffix taken out and put
//!    back at another position of the suffix), first improvement in a fixed scan order, until
//!    a whole pass finds nothing or half the budget is spent. A candidate order is evaluated by
//!    undoing the dispatcher to the prefix it shares with the order evaluated before and
//!    placing the rest, and abandoned as soon as its partial total exceeds the best (costs are
//!    non-negative, the makespan is a maximum). A move that breaks a queued dependency is
//!    passed over.
//! 3. **Branch and bound below `P`, `c`** with the rest of the budget: depth first, children
//!    in earliest-completion order, pruned by the earliest-start bound (placing more jobs never
//!    lets an unplaced job start earlier, so each unplaced job costs at least its cost at its
//!    earliest start now). When it finishes, the value is the optimum over orders starting with
//!    `P`, `c`: **proven**. A value equal to a known lower bound of the whole instance is
//!    proven too.
//!
//! # Budget and determinism
//!
//! Work is counted in [`crate::work`] units: one per job the dispatcher places and one per
//! candidate order in the local search; one per unplaced job (its earliest start) and one for
//! the node in the branch and bound. Each candidate gets the same budget; nothing reads the
//! clock and nothing is random, so the values depend only on the problem, the reference, the
//! prefix length and the budget. Final values are recomputed by a fresh dispatch
//! ([`Problem::evaluate`]), so the reference's next job's value is bit for bit the reference's.

use schedlm_model::{tied, Dispatcher, Objective, Problem, Variant};

use crate::cost::Cost;

/// The default budget of one candidate (`--value-work-limit`), in [`crate::work`] units: about
/// 15 ms of one core of the reference machine. On `uniform` 16..20 it proves the candidates of
/// the last ten or so steps of an instance and brings the others to a local optimum of the
/// suffix.
pub const DEFAULT_VALUE_WORK: u64 = 100_000;

/// The value of one candidate next job.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateValue {
    /// The candidate (a queue index).
    pub job: usize,
    /// The best value found over orders that start with the prefix and this job.
    pub value: f64,
    /// An order reaching `value` (queue indices, placement order).
    pub order: Vec<usize>,
    /// Whether `value` is proven to be the best over those orders.
    pub proven: bool,
    /// Units of work spent on this candidate.
    pub work: u64,
}

/// The values of the candidates of one state.
///
/// `reference` is a dependency-feasible order of the whole queue (queue indices, e.g. a
/// repaired label); the state is its first `k` jobs placed. `candidates` are jobs that may be
/// placed after them (unplaced, every queued dependency in the prefix); a job that may not is
/// given an infinite value. `lower_bound` is a proven lower bound of the whole instance (0 when
/// none is known); `work_limit` is each candidate's budget.
#[allow(clippy::too_many_arguments)]
pub fn state_values(
    problem: &Problem,
    objective: Objective,
    variant: Variant,
    reference: &[usize],
    k: usize,
    candidates: &[usize],
    lower_bound: f64,
    work_limit: u64,
) -> Vec<CandidateValue> {
    let k = k.min(reference.len());
    let mut base = Dispatcher::new(problem, variant);
    let cost = Cost::new(problem, objective);
    let mut base_total = if cost.is_max() {
        f64::NEG_INFINITY
    } else {
        0.0
    };
    for &j in &reference[..k] {
        if j >= problem.jobs() || base.is_placed(j) || !base.is_ready(j) {
            return candidates.iter().map(|&c| unreachable(c)).collect();
        }
        let at = base.place(j);
        base_total = cost.add(base_total, cost.job(j, at.start));
    }
    candidates
        .iter()
        .map(|&c| {
            if c >= problem.jobs() || base.is_placed(c) || !base.is_ready(c) {
                return unreachable(c);
            }
            let mut d = base.clone();
            let at = d.place(c);
            let total = cost.add(base_total, cost.job(c, at.start));
            let suffix: Vec<usize> = reference[k..].iter().copied().filter(|&j| j != c).collect();
            let mut search = Suffix {
                cost,
                d,
                fixed: k + 1,
                fixed_total: total,
                totals: Vec::new(),
                work: 0,
                limit: work_limit,
            };
            let (best, best_total, proven) = search.run(suffix);
            let mut order: Vec<usize> = reference[..k].to_vec();
            order.push(c);
            order.extend(best);
            let (order, value) = problem.evaluate(&order, objective, variant);
            let proven =
                proven || (lower_bound > 0.0 && (tied(value, lower_bound) || value < lower_bound));
            debug_assert!(best_total.is_finite());
            CandidateValue {
                job: c,
                value,
                order,
                proven,
                work: search.work,
            }
        })
        .collect()
}

fn unreachable(job: usize) -> CandidateValue {
    CandidateValue {
        job,
        value: f64::INFINITY,
        order: Vec::new(),
        proven: false,
        work: 0,
    }
}

/// The search below a fixed prefix: the dispatcher holds the prefix and (beyond `fixed` jobs)
/// the suffix evaluated last, `totals[i]` the total after its first `i + 1` suffix jobs.
struct Suffix<'p> {
    cost: Cost<'p>,
    d: Dispatcher<'p>,
    fixed: usize,
    fixed_total: f64,
    totals: Vec<f64>,
    work: u64,
    limit: u64,
}

impl Suffix<'_> {
    /// Local search then branch and bound from `start`; the best suffix, its total and whether
    /// it is proven optimal.
    fn run(&mut self, start: Vec<usize>) -> (Vec<usize>, f64, bool) {
        let mut best_total = self
            .evaluate(&start, f64::INFINITY)
            .unwrap_or(f64::INFINITY);
        let mut best = start;
        let m = best.len();
        let ls_limit = self.limit / 2;
        let mut candidate = Vec::with_capacity(m);
        'passes: loop {
            let mut improved = false;
            for a in 0..m {
                for b in 0..m {
                    if a == b || self.work >= ls_limit {
                        break 'passes;
                    }
                    moved(&best, a, b, &mut candidate);
                    self.work += 1;
                    if let Some(total) = self.evaluate(&candidate, best_total) {
                        if total < best_total && !tied(total, best_total) {
                            best_total = total;
                            std::mem::swap(&mut best, &mut candidate);
                            improved = true;
                        }
                    }
                }
            }
            if !improved {
                break;
            }
        }
        // Branch and bound from the prefix with the local optimum as incumbent.
        while self.d.len() > self.fixed {
            self.d.undo();
        }
        self.totals.clear();
        let mut bb = Bnb {
            best_total,
            best: None,
            path: Vec::with_capacity(m),
            stopped: false,
        };
        self.dfs(self.fixed_total, &mut bb);
        if let Some(order) = bb.best {
            best = order;
            best_total = bb.best_total;
        }
        (best, best_total, !bb.stopped)
    }

    /// The total of the prefix then `suffix`, or `None` when it exceeds `beat` (abandoned) or a
    /// job is placed before one of its queued dependencies.
    fn evaluate(&mut self, suffix: &[usize], beat: f64) -> Option<f64> {
        // Undo to the part the dispatcher shares with `suffix`.
        let placed: Vec<usize> = self.d.placed_order().skip(self.fixed).collect();
        let shared = placed
            .iter()
            .zip(suffix)
            .take_while(|(a, b)| a == b)
            .count();
        for _ in shared..placed.len() {
            self.d.undo();
        }
        self.totals.truncate(shared);
        let limit = beat + 1e-9 * beat.abs().max(1.0);
        let mut total = self.totals.last().copied().unwrap_or(self.fixed_total);
        if total > limit {
            return None;
        }
        for &j in &suffix[shared..] {
            if !self.d.is_ready(j) {
                return None;
            }
            self.work += 1;
            let at = self.d.place(j);
            total = self.cost.add(total, self.cost.job(j, at.start));
            self.totals.push(total);
            if total > limit {
                return None;
            }
        }
        Some(total)
    }

    fn dfs(&mut self, total: f64, bb: &mut Bnb) {
        let problem = self.d.problem();
        let n = problem.jobs();
        if self.d.len() == n {
            if total < bb.best_total && !tied(total, bb.best_total) {
                bb.best_total = total;
                bb.best = Some(bb.path.clone());
            }
            return;
        }
        self.work += 1 + (n - self.d.len()) as u64;
        if self.work > self.limit {
            bb.stopped = true;
            return;
        }
        // Children earliest completion first, with the earliest-start bound.
        let mut bound = total;
        let mut children: Vec<(i64, usize)> = Vec::with_capacity(n - self.d.len());
        for j in 0..n {
            if self.d.is_placed(j) {
                continue;
            }
            let start = if self.d.is_ready(j) {
                let s = self.d.earliest(j).start;
                children.push((s.saturating_add(problem.walltime(j)), j));
                s
            } else {
                problem.released(j)
            };
            bound = self.cost.add(bound, self.cost.job(j, start));
        }
        if bound >= bb.best_total || tied(bound, bb.best_total) {
            return;
        }
        children.sort_unstable();
        for (_, j) in children {
            let at = self.d.earliest(j);
            let next = self.cost.add(total, self.cost.job(j, at.start));
            if next >= bb.best_total || tied(next, bb.best_total) {
                continue;
            }
            self.d.place_at(j, at);
            bb.path.push(j);
            self.dfs(next, bb);
            bb.path.pop();
            self.d.undo();
            if bb.stopped {
                return;
            }
        }
    }
}

/// The branch and bound's incumbent and state.
struct Bnb {
    best_total: f64,
    best: Option<Vec<usize>>,
    path: Vec<usize>,
    stopped: bool,
}

/// `out` = `order` with the job at `a` moved to position `b`.
fn moved(order: &[usize], a: usize, b: usize, out: &mut Vec<usize>) {
    out.clear();
    out.extend_from_slice(order);
    let j = out.remove(a);
    out.insert(b, j);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::brute;
    use schedlm_model::Instance;

    fn problem(json: &str) -> Problem {
        Problem::new(&Instance::from_json(json).unwrap()).unwrap()
    }

    fn five() -> Problem {
        problem(
            r#"{"now": 0, "resources": ["cores"],
                "servers": [{"id": "n", "capacity": [4]}],
                "running": [{"id": "r", "server": "n", "demand": [2], "end": 300}],
                "queue": [{"id": "a", "submit": 0, "demand": [4], "walltime": 600},
                          {"id": "b", "submit": 0, "demand": [2], "walltime": 60},
                          {"id": "c", "submit": 0, "demand": [1], "walltime": 900},
                          {"id": "d", "submit": 0, "demand": [3], "walltime": 120},
                          {"id": "e", "submit": 0, "demand": [2], "walltime": 30, "deps": ["a"]}]}"#,
        )
    }

    /// The best value over every order starting with `prefix`, by enumeration.
    fn best_with_prefix(p: &Problem, o: Objective, v: Variant, prefix: &[usize]) -> f64 {
        let mut rest: Vec<usize> = (0..p.jobs()).filter(|j| !prefix.contains(j)).collect();
        let mut best = f64::INFINITY;
        loop {
            let mut order = prefix.to_vec();
            order.extend_from_slice(&rest);
            if schedlm_model::repair(p, &order) == order {
                best = best.min(p.evaluate(&order, o, v).1);
            }
            if !brute::next_permutation(&mut rest) {
                return best;
            }
        }
    }

    #[test]
    fn proven_values_are_the_optima_below_each_prefix() {
        let p = five();
        for (o, v) in [
            (Objective::Bsld, Variant::Serial),
            (Objective::Wait, Variant::Strict),
            (Objective::Makespan, Variant::Serial),
        ] {
            let reference = schedlm_model::repair(&p, &[3, 2, 1, 0, 4]);
            for k in 0..4 {
                let d = {
                    let mut d = Dispatcher::new(&p, v);
                    for &j in &reference[..k] {
                        d.place(j);
                    }
                    d
                };
                let cands: Vec<usize> = (0..5)
                    .filter(|&j| !d.is_placed(j) && d.is_ready(j))
                    .collect();
                let values = state_values(&p, o, v, &reference, k, &cands, 0.0, DEFAULT_VALUE_WORK);
                for cv in &values {
                    assert!(cv.proven, "{o:?} k {k} job {}", cv.job);
                    let mut prefix = reference[..k].to_vec();
                    prefix.push(cv.job);
                    let exact = best_with_prefix(&p, o, v, &prefix);
                    assert!(
                        tied(cv.value, exact),
                        "{o:?} k {k} job {}: {} vs {exact}",
                        cv.job,
                        cv.value
                    );
                    assert!(tied(p.evaluate(&cv.order, o, v).1, cv.value));
                    assert_eq!(&cv.order[..=k], &prefix[..]);
                }
                // The reference's own next job never does worse than the reference.
                let own = values.iter().find(|cv| cv.job == reference[k]).unwrap();
                assert!(own.value <= p.evaluate(&reference, o, v).1 + 1e-9);
            }
        }
    }

    #[test]
    fn a_tiny_budget_keeps_the_moved_reference_unproven() {
        let p = five();
        let (o, v) = (Objective::Bsld, Variant::Serial);
        let reference = vec![3, 2, 1, 0, 4];
        let values = state_values(&p, o, v, &reference, 0, &[0, 1, 2, 3], 0.0, 1);
        for cv in &values {
            assert!(!cv.proven);
            let mut moved: Vec<usize> = vec![cv.job];
            moved.extend(reference.iter().copied().filter(|&j| j != cv.job));
            assert!(cv.value <= p.evaluate(&moved, o, v).1 + 1e-9);
        }
        let own = values.iter().find(|cv| cv.job == 3).unwrap();
        assert_eq!(own.value, p.evaluate(&reference, o, v).1);
        // A job that may not go next (e waits for a) is unreachable.
        let e = state_values(&p, o, v, &reference, 0, &[4], 0.0, 1);
        assert!(e[0].value.is_infinite());
    }
}
