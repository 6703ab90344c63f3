//! Local search over queue orders: iterated greedy with insertion and swap moves (SPEC
//! sections 2-4), for queues too long for [`crate::bnb`] to prove (50 to 100 jobs and more).
//!
//! # Method
//!
//! The search works on dependency-feasible orders only and starts from a given order or from
//! the best classic priority rule ([`crate::rules::best_rule`]).
//!
//! - **Local search.** Insertion moves first: every job, in a random order, is taken out of its
//!   position `a` and tried at every other position `b` where it still comes after its queued
//!   dependencies and before its dependents; it goes to the best position if that improves the
//!   order. Passes repeat while they improve. When a whole insertion pass finds nothing, a
//!   swap pass (exchange the jobs at `a < b`, first improvement) runs; an improving swap sends
//!   the search back to insertion passes. The result is a local optimum of both neighbourhoods.
//! - **Iterated greedy** (Ruiz & Stützle 2007). At a local optimum, remove a few random jobs
//!   (`min(4, n - 1)`; a job whose queued dependents are still in the order is replaced by a
//!   random one of those dependents, repeatedly, so the partial order never misses a
//!   dependency), reinsert them one by one, each at the position that minimises the total
//!   cost of the partial order, run the local search again, and keep the new order when it is
//!   not worse than the old one (ties accepted, so the search can cross plateaus); otherwise
//!   go back. The best order seen is kept throughout. Removed jobs are reinserted in a random
//!   order that respects their dependencies among themselves, so every partial order is
//!   dependency-feasible too. (Accepting orders worse by a threshold of 0.2% or 2% of the
//!   gap to the lower bound below made no measurable difference on 60-100-job queues.)
//!
//! - **Double justification** (makespan, queues of at most 200 jobs; `justify.rs`). Each
//!   local optimum's schedule is shifted right, then left, and the order of the result
//!   replaces the current one while that shortens the makespan (the search then goes on from
//!   there). On the 144 shared PSPLIB j30 instances (`--solver ls --time-limit 1s`) it takes
//!   the orders at the published optimum from 99 to 120 and the mean excess over it from
//!   1.24 % to 0.57 %.
//!
//! # Incremental evaluation
//!
//! One [`Dispatcher`] holds the order evaluated last (possibly only a prefix of it), with the
//! running total of the per-job costs ([`Cost`]) after each position. A candidate order is
//! evaluated by undoing the dispatcher to the longest prefix it shares with the candidate and
//! placing only the rest, so a move that changes positions `>= i` re-dispatches the suffix
//! from `i`. The scans are ordered to make consecutive candidates share long prefixes (moves
//! to later positions by increasing target, moves to earlier positions and greedy
//! reinsertions by decreasing target).
//!
//! A candidate is abandoned as soon as it cannot beat the value it has to beat: costs are
//! non-negative (makespan is a maximum), so the total of the placed prefix plus, for each job
//! still to place, its cost at its earliest start on the running jobs alone (placing more jobs
//! never makes a start earlier) is a lower bound on the candidate's total.
//!
//! A candidate also stops early when it falls back into step with the current order: the
//! current order's schedule is kept (per job its start and server, and the total cost of each
//! suffix), and once the candidate's remaining positions are the current order's and every job
//! placed so far sits where the current schedule has it, the dispatcher state is the current
//! one and so is the future (serial generation is deterministic); the total is the prefix
//! total plus the current suffix total. (`strict` also needs the last placed job to be the
//! same one.) This is exact, not a heuristic.
//!
//! Evaluation allocates nothing once the buffers have their working size.
//!
//! # Budget and determinism
//!
//! Every candidate evaluated (complete or abandoned, in a move scan or a greedy reinsertion)
//! counts as one evaluation. The search stops at `max_evaluations`, at the time limit, or when
//! the best order reaches the lower bound above (then it is optimal). All choices come from a
//! ChaCha8 generator seeded with `seed`, so without a time limit the result depends only on the
//! problem, the objective, the variant and the options. The returned value is recomputed from a
//! fresh [`dispatch`](fn@schedlm_model::dispatch) with [`Objective::value`].

use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use schedlm_model::{check_permutation, repair, Dispatcher, Objective, Problem, Time, Variant};

use crate::cost::Cost;
use crate::deadline::Deadline;
use crate::justify::{justify, JUSTIFY_MAX_JOBS};
use crate::rules::best_rule;

/// Budget, seed and starting point of a local search run.
#[derive(Debug, Clone)]
pub struct LsOptions {
    /// Stop after this much time (makes the result depend on timing).
    pub time_limit: Option<Duration>,
    /// Stop after this many candidate evaluations (a deterministic budget).
    pub max_evaluations: u64,
    /// Stop after this many units of work ([`crate::work`]: one per job placed, one per
    /// candidate), the deterministic budget of `auto` and of `--work-limit`; `None`: not counted.
    pub max_work: Option<u64>,
    /// Seed of every random choice.
    pub seed: u64,
    /// Starting order (queue indices, a permutation; repaired for dependencies); the best
    /// classic rule when absent.
    pub start: Option<Vec<usize>>,
}

impl Default for LsOptions {
    fn default() -> Self {
        LsOptions {
            time_limit: None,
            max_evaluations: 20_000,
            max_work: None,
            seed: 0,
            start: None,
        }
    }
}

/// The result of a local search run.
#[derive(Debug, Clone)]
pub struct LsOutcome {
    /// Best order found (queue indices, dependency-feasible).
    pub order: Vec<usize>,
    /// Its objective value, recomputed from a fresh dispatch.
    pub value: f64,
    /// Candidate orders evaluated.
    pub evaluations: u64,
    /// Times the best order improved on the previous best (from the starting order on).
    pub improvements: u64,
    /// Units of work spent ([`crate::work`]): jobs placed plus candidates evaluated.
    pub work: u64,
    /// Whether the time limit ended the search (its result then depends on the machine).
    pub timed_out: bool,
    /// Wall-clock time of the whole run, the starting order included.
    pub elapsed: Duration,
}

/// Jobs removed and reinserted by one perturbation (at most `n - 1`).
const DESTROY: usize = 4;

/// Runs iterated greedy local search on `problem`; see the module docs.
///
/// # Panics
///
/// If `options.start` is not a permutation of the queue.
pub fn solve(
    problem: &Problem,
    objective: Objective,
    variant: Variant,
    options: &LsOptions,
) -> LsOutcome {
    let started = Instant::now();
    let start = match &options.start {
        Some(o) => {
            if let Err(e) = check_permutation(problem, o) {
                panic!("local search start order: {e}");
            }
            repair(problem, o)
        }
        None => best_rule(problem, objective, variant).0,
    };
    let mut search = Search::new(problem, objective, variant, options, started, start);
    search.run();
    let (order, value) = problem.evaluate(&search.best, objective, variant);
    LsOutcome {
        order,
        value,
        evaluations: search.eval.evaluations,
        improvements: search.improvements,
        work: search.work(),
        timed_out: search.timed_out,
        elapsed: started.elapsed(),
    }
}

/// The dispatcher state of the candidate evaluated last, the committed (current) order's
/// schedule, and how to evaluate the next candidate.
struct Evaluator<'p> {
    d: Dispatcher<'p>,
    cost: Cost<'p>,
    /// Whether the dispatcher is `strict` (its state includes the last start).
    strict: bool,
    /// Jobs placed in `d`, in order.
    seq: Vec<usize>,
    /// `total[k]`: total cost of `seq[..k]`.
    total: Vec<f64>,
    /// `low[k]`: sum of `floor` over `seq[..k]` (sum objectives only).
    low: Vec<f64>,
    /// `diff[k]`: jobs of `seq[..k]` placed elsewhere than in the committed schedule.
    diff: Vec<u32>,
    /// Per job, its cost at its earliest start with no queued job placed.
    floor: Vec<f64>,
    /// The committed schedule: per job its start and server; `ref_suffix[k]`: total cost of
    /// the committed order's positions `k..`.
    ref_start: Vec<Time>,
    ref_server: Vec<usize>,
    ref_suffix: Vec<f64>,
    evaluations: u64,
    /// Jobs placed by the dispatcher (evaluations, commits and justifications).
    placed: u64,
}

impl<'p> Evaluator<'p> {
    fn new(problem: &'p Problem, objective: Objective, variant: Variant) -> Self {
        let n = problem.jobs();
        let cost = Cost::new(problem, objective);
        let d = Dispatcher::new(problem, variant);
        let floor = (0..n)
            .map(|j| {
                let earliest = (0..problem.servers())
                    .filter_map(|s| d.earliest_on(j, s, problem.released(j)))
                    .min()
                    .unwrap_or(problem.released(j));
                cost.job(j, earliest)
            })
            .collect();
        let mut total = Vec::with_capacity(n + 1);
        total.push(identity(&cost));
        let mut low = Vec::with_capacity(n + 1);
        low.push(0.0);
        let mut diff = Vec::with_capacity(n + 1);
        diff.push(0);
        Evaluator {
            d,
            cost,
            strict: variant == Variant::Strict,
            seq: Vec::with_capacity(n),
            total,
            low,
            diff,
            floor,
            ref_start: vec![Time::MIN; n],
            ref_server: vec![usize::MAX; n],
            ref_suffix: vec![identity(&cost); n + 1],
            evaluations: 0,
            placed: 0,
        }
    }

    /// Lower bound on the total of any order of `jobs` (sum of floors, or their maximum).
    fn bound_of(&self, jobs: &[usize]) -> f64 {
        jobs.iter().fold(identity(&self.cost), |t, &j| {
            self.cost.add(t, self.floor[j])
        })
    }

    /// Total cost of `cand` if it is below `bound`, else `None` (possibly abandoned early).
    /// `floor_sum` is the sum of `floor` over `cand` (ignored for makespan). `tail`: a position
    /// from which `cand` equals the committed order (`cand.len()` if none is known).
    fn eval(&mut self, cand: &[usize], floor_sum: f64, bound: f64, tail: usize) -> Option<f64> {
        self.evaluations += 1;
        self.run(cand, floor_sum, bound, tail)
    }

    fn run(&mut self, cand: &[usize], floor_sum: f64, bound: f64, tail: usize) -> Option<f64> {
        let mut k = 0;
        let shared = self.seq.len().min(cand.len());
        while k < shared && self.seq[k] == cand[k] {
            k += 1;
        }
        self.d.truncate(k);
        self.seq.truncate(k);
        self.total.truncate(k + 1);
        self.low.truncate(k + 1);
        self.diff.truncate(k + 1);
        // From here on, a state equal to the committed one has the committed future. (Strict:
        // the last placed job must be the same job too, for the same floor on the next start.)
        let sync = tail.saturating_add(usize::from(self.strict));
        let is_max = self.cost.is_max();
        loop {
            let g = self.total[k];
            let lower = if is_max {
                g
            } else {
                g + (floor_sum - self.low[k])
            };
            if lower >= bound {
                return None;
            }
            if k == cand.len() {
                return Some(g);
            }
            if k >= sync && self.diff[k] == 0 {
                let t = self.cost.add(g, self.ref_suffix[k]);
                return (t < bound).then_some(t);
            }
            let j = cand[k];
            let at = self.d.place(j);
            self.placed += 1;
            self.seq.push(j);
            self.total
                .push(self.cost.add(g, self.cost.job(j, at.start)));
            self.low.push(self.low[k] + self.floor[j]);
            let moved = at.start != self.ref_start[j] || at.server != self.ref_server[j];
            self.diff.push(self.diff[k] + u32::from(moved));
            k += 1;
        }
    }

    /// Dispatches the complete `order` (not counted as an evaluation) and makes it the
    /// committed order; returns its total.
    fn commit(&mut self, order: &[usize], floor_sum: f64) -> f64 {
        let total = self
            .run(order, floor_sum, f64::INFINITY, order.len())
            .expect("an unbounded evaluation completes");
        let n = order.len();
        for &j in order {
            self.ref_start[j] = self.d.start(j);
            self.ref_server[j] = self.d.server(j);
        }
        self.ref_suffix[n] = identity(&self.cost);
        for k in (0..n).rev() {
            let j = order[k];
            self.ref_suffix[k] = self
                .cost
                .add(self.cost.job(j, self.ref_start[j]), self.ref_suffix[k + 1]);
        }
        self.diff.iter_mut().for_each(|x| *x = 0);
        total
    }
}

/// The total of no job.
fn identity(cost: &Cost) -> f64 {
    if cost.is_max() {
        f64::NEG_INFINITY
    } else {
        0.0
    }
}

struct Search<'p> {
    problem: &'p Problem,
    /// Makespan on a queue short enough: local optima are also justified (`justify.rs`).
    justified: bool,
    eval: Evaluator<'p>,
    rng: ChaCha8Rng,
    n: usize,
    max_evaluations: u64,
    max_work: u64,
    deadline: Deadline,
    /// Set when the deadline stopped the search.
    timed_out: bool,
    /// Jobs that depend on each job.
    dependents: Vec<Vec<usize>>,
    /// Current order, its positions and total.
    cur: Vec<usize>,
    pos: Vec<usize>,
    cur_total: f64,
    /// Best order and total.
    best: Vec<usize>,
    best_total: f64,
    /// Lower bound on every order's total: reaching it ends the search.
    floor_total: f64,
    floor_sum: f64,
    improvements: u64,
    // Scratch.
    cand: Vec<usize>,
    jobs: Vec<usize>,
    saved: Vec<usize>,
    removed: Vec<usize>,
    partial: Vec<usize>,
}

impl<'p> Search<'p> {
    fn new(
        problem: &'p Problem,
        objective: Objective,
        variant: Variant,
        options: &LsOptions,
        started: Instant,
        start: Vec<usize>,
    ) -> Self {
        let n = problem.jobs();
        let mut dependents = vec![Vec::new(); n];
        for j in 0..n {
            for &d in problem.deps(j) {
                dependents[d].push(j);
            }
        }
        let eval = Evaluator::new(problem, objective, variant);
        let all: Vec<usize> = (0..n).collect();
        let floor_total = eval.bound_of(&all);
        let floor_sum = eval.floor.iter().sum();
        let mut search = Search {
            problem,
            justified: objective == Objective::Makespan && n <= JUSTIFY_MAX_JOBS,
            eval,
            rng: ChaCha8Rng::seed_from_u64(options.seed),
            n,
            max_evaluations: options.max_evaluations,
            max_work: options.max_work.unwrap_or(u64::MAX),
            deadline: Deadline::new(started, options.time_limit, n, 32),
            timed_out: false,
            dependents,
            pos: vec![0; n],
            cur: start,
            cur_total: f64::INFINITY,
            best: Vec::new(),
            best_total: f64::INFINITY,
            floor_total,
            floor_sum,
            improvements: 0,
            cand: Vec::with_capacity(n),
            jobs: (0..n).collect(),
            saved: Vec::with_capacity(n),
            removed: Vec::with_capacity(DESTROY),
            partial: Vec::with_capacity(n),
        };
        search.set_current();
        search.best = search.cur.clone();
        search.best_total = search.cur_total;
        search.improvements = 0;
        search
    }

    fn eps(total: f64) -> f64 {
        1e-9 * total.abs().max(1.0)
    }

    /// Makes `cur` the committed order: positions, schedule, total, and the best so far.
    fn set_current(&mut self) {
        for (i, &j) in self.cur.iter().enumerate() {
            self.pos[j] = i;
        }
        self.cur_total = self.eval.commit(&self.cur, self.floor_sum);
        self.record();
    }

    /// Units of work spent so far ([`crate::work`]).
    fn work(&self) -> u64 {
        self.eval.placed + self.eval.evaluations
    }

    fn stop(&mut self) -> bool {
        if self.eval.evaluations >= self.max_evaluations
            || self.work() >= self.max_work
            || self.best_total <= self.floor_total + Self::eps(self.floor_total)
        {
            return true;
        }
        self.timed_out = self.timed_out || self.deadline.passed(self.eval.evaluations);
        self.timed_out
    }

    fn record(&mut self) {
        if self.cur_total < self.best_total - Self::eps(self.best_total) {
            self.best_total = self.cur_total;
            self.best.clone_from(&self.cur);
            self.improvements += 1;
        }
    }

    fn run(&mut self) {
        if self.n < 2 {
            return;
        }
        self.local_search();
        self.justify_current();
        while !self.stop() {
            self.saved.clone_from(&self.cur);
            let saved_total = self.cur_total;
            // On `false` the budget ran out mid-construction and `cur` is still committed.
            if !self.perturb() {
                break;
            }
            self.local_search();
            self.justify_current();
            if self.cur_total > saved_total + Self::eps(saved_total) {
                std::mem::swap(&mut self.cur, &mut self.saved);
                self.set_current();
            }
        }
    }

    /// Makespan: replaces the current order by its double justification (`justify.rs`) while
    /// that shortens it, then searches from there again.
    fn justify_current(&mut self) {
        if !self.justified {
            return;
        }
        while !self.stop() {
            // `cur` is committed: the evaluator holds its schedule.
            // A justification shifts every job right, then left.
            self.eval.placed += 2 * self.n as u64;
            let Some(justified) = justify(self.problem, &self.eval.ref_start, &self.dependents)
            else {
                return;
            };
            self.saved.clone_from(&self.cur);
            let before = self.cur_total;
            self.cur = justified;
            self.set_current();
            if self.cur_total < before - Self::eps(before) {
                self.local_search();
            } else {
                std::mem::swap(&mut self.cur, &mut self.saved);
                self.set_current();
                return;
            }
        }
    }

    /// Insertion passes until none improves, then a swap pass; repeats while swaps improve.
    fn local_search(&mut self) {
        loop {
            while self.insertion_pass() {}
            if self.stop() || !self.swap_pass() {
                return;
            }
        }
    }

    /// Positions where job `x` may stand in `order` (which holds it at `pos[x]`): after its
    /// dependencies and before its dependents.
    fn window(&self, x: usize) -> (usize, usize) {
        let lo = self
            .problem
            .deps(x)
            .iter()
            .map(|&d| self.pos[d] + 1)
            .max()
            .unwrap_or(0);
        let hi = self.dependents[x]
            .iter()
            .map(|&d| self.pos[d] - 1)
            .min()
            .unwrap_or(self.n - 1);
        (lo, hi)
    }

    /// Moves each job (random order) to its best position; true if any move improved.
    fn insertion_pass(&mut self) -> bool {
        let mut improved = false;
        let mut jobs = std::mem::take(&mut self.jobs);
        jobs.shuffle(&mut self.rng);
        for &x in &jobs {
            if self.stop() {
                break;
            }
            let a = self.pos[x];
            let (lo, hi) = self.window(x);
            let mut best_b = a;
            let mut best_t = self.cur_total;
            // Later positions by increasing target, then earlier ones by decreasing target:
            // consecutive candidates share all positions before the target.
            for b in (a + 1..=hi).chain((lo..a).rev()) {
                if self.stop() {
                    break;
                }
                insertion(&self.cur, a, b, &mut self.cand);
                let bound = best_t - Self::eps(best_t);
                let tail = a.max(b) + 1;
                if let Some(t) = self.eval.eval(&self.cand, self.floor_sum, bound, tail) {
                    best_t = t;
                    best_b = b;
                }
            }
            if best_b != a {
                insertion(&self.cur, a, best_b, &mut self.cand);
                std::mem::swap(&mut self.cur, &mut self.cand);
                self.set_current();
                improved = true;
            }
        }
        self.jobs = jobs;
        improved
    }

    /// Swaps (first improvement, random first position); true at the first improving swap.
    fn swap_pass(&mut self) -> bool {
        let mut firsts = std::mem::take(&mut self.jobs);
        firsts.shuffle(&mut self.rng);
        let mut improved = false;
        'outer: for &a in &firsts {
            // `firsts` is a permutation of 0..n, used here as positions.
            let x = self.cur[a];
            let (_, x_hi) = self.window(x);
            for b in a + 1..=x_hi.min(self.n - 1) {
                if self.stop() {
                    break 'outer;
                }
                let y = self.cur[b];
                if self.problem.deps(y).iter().any(|&d| self.pos[d] >= a) {
                    continue;
                }
                self.cand.clone_from(&self.cur);
                self.cand.swap(a, b);
                let bound = self.cur_total - Self::eps(self.cur_total);
                if self
                    .eval
                    .eval(&self.cand, self.floor_sum, bound, b + 1)
                    .is_some()
                {
                    std::mem::swap(&mut self.cur, &mut self.cand);
                    self.set_current();
                    improved = true;
                    break 'outer;
                }
            }
        }
        self.jobs = firsts;
        improved
    }

    /// Destruction and greedy construction: removes up to `DESTROY` random jobs and reinserts
    /// each at the position minimising the partial order's total. False (and `cur` left
    /// unusable) if the budget ran out first.
    fn perturb(&mut self) -> bool {
        let k = DESTROY.min(self.n - 1);
        self.removed.clear();
        while self.removed.len() < k {
            let mut j = self.cur[self.rng.random_range(0..self.n)];
            if self.removed.contains(&j) {
                continue;
            }
            // Every job left in the partial order must keep its queued dependencies: walk down
            // to a job whose dependents are all removed already.
            loop {
                let kept = self.dependents[j]
                    .iter()
                    .filter(|d| !self.removed.contains(d))
                    .count();
                if kept == 0 {
                    break;
                }
                let pick = self.rng.random_range(0..kept);
                j = *self.dependents[j]
                    .iter()
                    .filter(|d| !self.removed.contains(d))
                    .nth(pick)
                    .expect("pick < kept");
            }
            self.removed.push(j);
        }
        self.partial.clear();
        self.partial.extend(
            self.cur
                .iter()
                .copied()
                .filter(|j| !self.removed.contains(j)),
        );
        let mut floor_sum: f64 = self.partial.iter().map(|&j| self.eval.floor[j]).sum();
        // Reinsert in the random removal order, each job once its removed dependencies are in.
        while !self.removed.is_empty() {
            let i = self
                .removed
                .iter()
                .position(|&j| {
                    self.problem
                        .deps(j)
                        .iter()
                        .all(|d| !self.removed.contains(d))
                })
                .expect("dependencies are acyclic");
            let x = self.removed.remove(i);
            let m = self.partial.len();
            let mut lo = 0;
            let mut hi = m;
            for (p, &j) in self.partial.iter().enumerate() {
                if self.problem.deps(x).contains(&j) {
                    lo = lo.max(p + 1);
                }
                if self.problem.deps(j).contains(&x) {
                    hi = hi.min(p);
                }
            }
            floor_sum += self.eval.floor[x];
            let mut best_b = hi;
            let mut best_t = f64::INFINITY;
            for b in (lo..=hi).rev() {
                if self.stop() {
                    return false;
                }
                self.cand.clear();
                self.cand.extend_from_slice(&self.partial[..b]);
                self.cand.push(x);
                self.cand.extend_from_slice(&self.partial[b..]);
                let none = self.cand.len();
                if let Some(t) = self.eval.eval(&self.cand, floor_sum, best_t, none) {
                    best_t = t;
                    best_b = b;
                }
            }
            self.partial.insert(best_b, x);
        }
        std::mem::swap(&mut self.cur, &mut self.partial);
        self.set_current();
        true
    }
}

/// `out` = `order` with the job at `a` moved to position `b`.
fn insertion(order: &[usize], a: usize, b: usize, out: &mut Vec<usize>) {
    out.clear();
    out.extend_from_slice(order);
    if a < b {
        out[a..=b].rotate_left(1);
    } else {
        out[b..=a].rotate_right(1);
    }
}
