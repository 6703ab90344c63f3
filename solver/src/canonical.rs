//! Canonical labels: one documented choice among the orders that reach a target value.
//!
//! An instance often has many optimal orders, and a solver returns whichever it met first, so
//! two nearly identical snapshots can carry unrelated labels. The canonical label removes that
//! noise:
//!
//! 1. The **ranking rule** of an instance is the classic priority rule (SPEC section 6) whose
//!    order has the lowest objective value under the dispatcher; rules within a relative 1e-9
//!    of each other tie, and ties go to the first rule in [`PREFERENCE`] (SJF first). Its
//!    order, before any dependency repair, is the instance's **ranking** of the jobs.
//! 2. The **canonical order** for a target value V (the proven optimum, or the best value a
//!    solver found) is the dependency-feasible order that comes first in the lexicographic
//!    order of ranking positions among all orders whose value is at most V (relative 1e-9).
//!
//! So when the ranking rule's own order reaches V, the label is that rule's order; otherwise it
//! keeps the longest ranking prefix that still allows V, and so on job by job. Similar snapshots
//! get similar answers, and a model that reads the ranking learns "follow the best rule, except
//! where it costs".
//!
//! [`lex_first`] finds the canonical order by depth-first search over the ranking, placing jobs
//! with the dispatcher and pruning a prefix when its cost plus, for every unplaced job, its cost
//! at its earliest start on the partial schedule already exceeds V. Pruning never removes an
//! order that reaches V, so the first complete order the search meets is the canonical one. It
//! uses no dominance rule (those would cut orders that tie). The search stops at a node limit,
//! not a time limit, so its answer never depends on the machine; queues longer than
//! [`LONG_QUEUE`] are not searched (the solver's order stays the label, marked not canonical).

use schedlm_model::{tied, Dispatcher, Objective, Problem, Variant};

use crate::cost::Cost;
use crate::portfolio::LONG_QUEUE;
use crate::rules::{order, Rule, RuleContext};

/// Which rule's ranking is used when several classic rules reach the same best value: the rules
/// that are best on average for bounded slowdown first, FCFS and LJF last.
pub const PREFERENCE: [Rule; 7] = [
    Rule::Sjf,
    Rule::Saf,
    Rule::F1,
    Rule::Wfp3,
    Rule::Unicep,
    Rule::Fcfs,
    Rule::Ljf,
];

/// Default node limit of [`lex_first`]: far above what queues of up to 12 jobs need.
pub const NODE_LIMIT: u64 = 2_000_000;

/// The ranking rule of an instance and its ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    /// The ranking rule: the classic rule (SPEC section 6) with the lowest objective value,
    /// ties broken by [`PREFERENCE`]; SJF for an empty queue.
    pub rule: Rule,
    /// Queue indices in the rule's order (before dependency repair).
    pub order: Vec<usize>,
    /// The objective value of the rule's (repaired) order.
    pub value: f64,
}

/// The classic rule with the lowest value on `problem`, ties broken by [`PREFERENCE`].
pub fn ranking(problem: &Problem, objective: Objective, variant: Variant) -> Ranking {
    let mut best: Option<Ranking> = None;
    for rule in PREFERENCE {
        let o = order(rule, problem, &RuleContext::default());
        let (_, value) = problem.evaluate(&o, objective, variant);
        let better = match &best {
            None => true,
            Some(b) => value < b.value && !tied(value, b.value),
        };
        if better {
            best = Some(Ranking {
                rule,
                order: o,
                value,
            });
        }
    }
    best.unwrap_or(Ranking {
        rule: Rule::Sjf,
        order: Vec::new(),
        value: 0.0,
    })
}

/// The order in which a prompt lists the jobs, and so the order the canonical label prefers
/// them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Listing {
    /// The ranking, the same at every step (compact-v2 and step-v1 prompts).
    #[default]
    Ranking,
    /// At every step, the jobs that may be placed next by their completion if placed next,
    /// ties by the ranking ([`crate::greedy::listing`]; step-v2 prompts).
    EarliestCompletion,
}

/// What [`lex_first`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct LexOutcome {
    /// The canonical order, or `None` if the node limit stopped the search first.
    pub order: Option<Vec<usize>>,
    /// Search nodes (tentative placements) visited.
    pub nodes: u64,
}

/// The first dependency-feasible order in the lexicographic order of `rank` (a permutation of
/// the queue indices) whose objective value is at most `target` (relative 1e-9).
///
/// `target` should be a value some order reaches (e.g. a solver's); if none does, the result
/// is `None` after an exhausted search.
pub fn lex_first(
    problem: &Problem,
    objective: Objective,
    variant: Variant,
    rank: &[usize],
    target: f64,
    node_limit: u64,
) -> LexOutcome {
    lex_first_by(
        problem,
        objective,
        variant,
        rank,
        Listing::Ranking,
        target,
        node_limit,
    )
}

/// [`lex_first`] where the jobs are preferred, at every step, in the order `listing` gives
/// them (with `Listing::Ranking`, exactly [`lex_first`]).
pub fn lex_first_by(
    problem: &Problem,
    objective: Objective,
    variant: Variant,
    rank: &[usize],
    listing: Listing,
    target: f64,
    node_limit: u64,
) -> LexOutcome {
    let cost = Cost::new(problem, objective);
    let total = cost.total(target);
    let mut search = Lex {
        problem,
        cost,
        d: Dispatcher::new(problem, variant),
        rank,
        listing,
        limit: total + 1e-9 * total.abs().max(1.0),
        nodes: 0,
        node_limit,
    };
    let start = if cost.is_max() {
        f64::NEG_INFINITY
    } else {
        0.0
    };
    let order = match search.dfs(start) {
        Step::Found => Some(search.d.placed_order().collect()),
        Step::Exhausted | Step::Stopped => None,
    };
    LexOutcome {
        order,
        nodes: search.nodes,
    }
}

enum Step {
    Found,
    Exhausted,
    Stopped,
}

struct Lex<'p, 'r> {
    problem: &'p Problem,
    cost: Cost<'p>,
    d: Dispatcher<'p>,
    rank: &'r [usize],
    listing: Listing,
    /// Largest total that counts as reaching the target.
    limit: f64,
    nodes: u64,
    node_limit: u64,
}

impl Lex<'_, '_> {
    fn dfs(&mut self, total: f64) -> Step {
        if self.d.len() == self.problem.jobs() {
            return if total <= self.limit {
                Step::Found
            } else {
                Step::Exhausted
            };
        }
        match self.listing {
            // The ranking: no allocation per node.
            Listing::Ranking => {
                for k in 0..self.rank.len() {
                    let j = self.rank[k];
                    if self.d.is_placed(j) || !self.d.is_ready(j) {
                        continue;
                    }
                    if let Some(step) = self.visit(j, total) {
                        return step;
                    }
                }
            }
            Listing::EarliestCompletion => {
                for (j, _) in crate::greedy::listing(&self.d, self.rank) {
                    if let Some(step) = self.visit(j, total) {
                        return step;
                    }
                }
            }
        }
        Step::Exhausted
    }

    /// Places `j` next and searches below it; `Some` when the search ends there (found or
    /// stopped), `None` to try the next job.
    fn visit(&mut self, j: usize, total: f64) -> Option<Step> {
        self.nodes += 1;
        if self.nodes > self.node_limit {
            return Some(Step::Stopped);
        }
        let at = self.d.earliest(j);
        let next = self.cost.add(total, self.cost.job(j, at.start));
        if next > self.limit {
            return None;
        }
        self.d.place_at(j, at);
        if self.bound(next) <= self.limit {
            match self.dfs(next) {
                Step::Exhausted => {}
                found_or_stopped => return Some(found_or_stopped),
            }
        }
        self.d.undo();
        None
    }

    /// `total` plus every unplaced job's cost at its earliest start on the partial schedule
    /// (ready jobs) or at its release (jobs still waiting for a dependency): a lower bound on
    /// the total of any completion, since placing more jobs never lets a job start earlier.
    fn bound(&self, mut total: f64) -> f64 {
        for j in 0..self.problem.jobs() {
            if self.d.is_placed(j) {
                continue;
            }
            let start = if self.d.is_ready(j) {
                self.d.earliest(j).start
            } else {
                self.problem.released(j)
            };
            total = self.cost.add(total, self.cost.job(j, start));
        }
        total
    }
}

/// The canonical label of an instance for a solver's order: the ranking, and the lexicographic
/// first order (in ranking positions) that is as good as the solver's. Returns the solver's
/// order unchanged (with `canonical == false`) if the node limit stops the search.
pub fn canonical_order(
    problem: &Problem,
    objective: Objective,
    variant: Variant,
    solver_order: &[usize],
    node_limit: u64,
) -> Canonical {
    canonical_order_by(
        problem,
        objective,
        variant,
        Listing::Ranking,
        solver_order,
        node_limit,
    )
}

/// [`canonical_order`] for prompts that list the jobs by `listing`: the first order, preferring
/// at each step the jobs in that listing, that is as good as the solver's.
pub fn canonical_order_by(
    problem: &Problem,
    objective: Objective,
    variant: Variant,
    listing: Listing,
    solver_order: &[usize],
    node_limit: u64,
) -> Canonical {
    let ranking = ranking(problem, objective, variant);
    let (placed, value) = problem.evaluate(solver_order, objective, variant);
    // One node of the search touches every job, and a long queue needs at least one node per
    // job: beyond `auto`'s long-queue threshold the solver's order stays the label (as when
    // the node limit stops the search), which keeps a build's time bounded by its time limit.
    let node_limit = if problem.jobs() > LONG_QUEUE {
        0
    } else {
        node_limit
    };
    let found = lex_first_by(
        problem,
        objective,
        variant,
        &ranking.order,
        listing,
        value,
        node_limit,
    );
    let (order, canonical) = match found.order {
        Some(o) => (o, true),
        None => (placed, false),
    };
    Canonical {
        ranking,
        order,
        canonical,
        nodes: found.nodes,
    }
}

/// The label that follows a listing: built job by job, at each step the first job of the
/// listing (on the schedule of the jobs chosen so far) for which a *witness* shows that the
/// target value is still reached. Two witnesses are tried for a candidate `j` after the prefix
/// `P`: `P`, `j`, then the other jobs in the order of the current witness (initially the
/// solver's order); and `P`, `j`, then the listing's greedy completion (earliest completion
/// first, [`crate::greedy::earliest_completion`]). A candidate whose witnesses both miss the
/// target is passed over; when every one is, the current witness's own next job is taken, so
/// the label always reaches the target (relative 1e-9) and its value is never worse than the
/// solver's.
///
/// Unlike [`lex_first_by`] it needs no search: O(n^2) dispatches, microseconds at 40 jobs, at
/// any queue length; where the exact search finishes (queues of up to 12 jobs) they agree on
/// most steps (docs/learning.md). Returns the label (queue indices, placement order).
pub fn follow_listing(
    problem: &Problem,
    objective: Objective,
    variant: Variant,
    rank: &[usize],
    solver_order: &[usize],
) -> Vec<usize> {
    let (mut witness, target) = problem.evaluate(solver_order, objective, variant);
    let limit = target + 1e-9 * target.abs().max(1.0);
    // The placement order of `order` when it reaches the target: the next witness.
    let reaching = |order: &[usize]| {
        let (placed, value) = problem.evaluate(order, objective, variant);
        (value <= limit).then_some(placed)
    };
    let n = problem.jobs();
    let mut d = Dispatcher::new(problem, variant);
    let mut label: Vec<usize> = Vec::with_capacity(n);
    let mut candidate: Vec<usize> = Vec::with_capacity(n);
    while label.len() < n {
        let mut chosen: Option<(usize, Vec<usize>)> = None;
        for (j, _) in crate::greedy::listing(&d, rank) {
            candidate.clear();
            candidate.extend_from_slice(&label);
            candidate.push(j);
            candidate.extend(
                witness
                    .iter()
                    .copied()
                    .filter(|&x| x != j && !d.is_placed(x)),
            );
            let next = reaching(&candidate).or_else(|| reaching(&complete_greedily(rank, &d, j)));
            if let Some(next) = next {
                chosen = Some((j, next));
                break;
            }
        }
        // No listed job keeps the target: the witness's own next job (the witness, a
        // placement order, stays as it is).
        let j = match chosen {
            Some((j, next)) => {
                witness = next;
                j
            }
            None => witness[label.len()],
        };
        d.place(j);
        label.push(j);
    }
    label
}

/// The order that places `d`'s jobs, then `j`, then the rest earliest completion first.
fn complete_greedily(rank: &[usize], d: &Dispatcher<'_>, j: usize) -> Vec<usize> {
    let mut e = d.clone();
    let mut order: Vec<usize> = d.placed_order().collect();
    e.place(j);
    order.push(j);
    crate::greedy::complete(&mut e, rank, &mut order);
    order
}

/// See [`canonical_order`].
#[derive(Debug, Clone, PartialEq)]
pub struct Canonical {
    /// The instance's ranking rule and ranking, which the label follows where it can.
    pub ranking: Ranking,
    /// The label: the canonical order, or the solver's placement order if the search stopped.
    pub order: Vec<usize>,
    /// Whether `order` is the canonical order.
    pub canonical: bool,
    /// Search nodes (tentative placements) [`lex_first`] visited, at most the node limit
    /// plus one.
    pub nodes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlm_model::Instance;

    fn problem(json: &str) -> Problem {
        Problem::new(&Instance::from_json(json).unwrap()).unwrap()
    }

    /// Three identical jobs: every order is optimal, so the label is the ranking itself.
    #[test]
    fn ties_follow_the_ranking() {
        let p = problem(
            r#"{"now": 100, "resources": ["cores"], "servers": [{"id": "n", "capacity": [4]}],
                "queue": [{"id": "a", "submit": 90, "demand": [4], "walltime": 60},
                          {"id": "b", "submit": 50, "demand": [4], "walltime": 60},
                          {"id": "c", "submit": 70, "demand": [4], "walltime": 60}]}"#,
        );
        let r = ranking(&p, Objective::Bsld, Variant::Serial);
        // All rules tie on value; SJF is preferred and breaks walltime ties by submit.
        assert_eq!(r.rule, Rule::Sjf);
        assert_eq!(r.order, vec![1, 2, 0]);
        let c = canonical_order(&p, Objective::Bsld, Variant::Serial, &[0, 1, 2], NODE_LIMIT);
        assert!(c.canonical);
        assert_eq!(c.order, vec![1, 2, 0]);
    }

    #[test]
    fn node_limit_falls_back_to_the_solver_order() {
        let p = problem(
            r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n", "capacity": [4]}],
                "queue": [{"id": "a", "submit": 0, "demand": [4], "walltime": 600},
                          {"id": "b", "submit": 0, "demand": [4], "walltime": 60}]}"#,
        );
        let c = canonical_order(&p, Objective::Bsld, Variant::Serial, &[1, 0], 1);
        assert!(!c.canonical);
        assert_eq!(c.order, vec![1, 0]);
        let c = canonical_order(&p, Objective::Bsld, Variant::Serial, &[1, 0], NODE_LIMIT);
        assert!(c.canonical);
        assert_eq!(c.order, vec![1, 0]);
    }

    #[test]
    fn long_queues_keep_the_solver_order() {
        let n = LONG_QUEUE + 1;
        let queue: Vec<String> = (0..n)
            .map(|k| {
                format!(
                    r#"{{"id": "j{k}", "submit": 0, "demand": [1], "walltime": {}}}"#,
                    600 - k
                )
            })
            .collect();
        let p = problem(&format!(
            r#"{{"now": 0, "resources": ["cores"], "servers": [{{"id": "n", "capacity": [1]}}],
                "queue": [{}]}}"#,
            queue.join(",")
        ));
        let fcfs: Vec<usize> = (0..n).collect();
        let c = canonical_order(&p, Objective::Bsld, Variant::Serial, &fcfs, NODE_LIMIT);
        assert!(!c.canonical);
        assert_eq!(c.order, fcfs);
    }
}
