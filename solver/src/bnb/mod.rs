//! Exact branch and bound over queue orders (SPEC sections 2-4).
//!
//! The search places one job per level, exactly as the dispatcher would, so every leaf is the
//! schedule of an order and the best leaf is the optimum over orders. It branches only on jobs
//! whose queued dependencies are placed, so it never builds an order that needs repair.
//!
//! Bounds (all stay valid with several servers):
//! - **earliest start**: placing more jobs never lets an unplaced job start earlier, so each
//!   unplaced job costs at least its cost at its earliest start on the current partial
//!   schedule. The earliest starts per (job, server) are cached per level and updated
//!   incrementally: after a placement only the server that changed, and jobs whose lower
//!   bound rose, are rescanned.
//! - **pooled energy**: per resource, pool the free capacity of all servers, rounded down to
//!   the largest sum of queued demands that fits in it (rigid jobs cannot fill the rest; see
//!   `packing.rs`); the m-th job to finish cannot finish before that energy covers the m smallest energies
//!   (demand x walltime) of the unplaced jobs, nor before the m-th smallest earliest
//!   completion. Costs are bounded below by a line in C (bsld: (C - s) / max(p, 10)), and
//!   pairing the largest slopes with the smallest completion bounds gives a bound on their sum.
//!   It is evaluated adaptively: on instances where it rarely prunes, only on a sample of nodes.
//! - **mean busy time** (sum objectives, at the root; `busy.rs`): per resource, the jobs'
//!   energy poured into the pooled free capacity, highest cost slope per unit of energy first,
//!   from each job's earliest start; a job's mean busy time is its completion less half its
//!   walltime, which the pooled-energy pairing leaves out. Also over each set of servers some
//!   jobs fit only on (the GPU servers), those jobs on that set's pool plus the others on the
//!   whole pool. On `uniform` 16-20 jobs it raises the root bound by up to 10 % (mean
//!   certified gap at 1 s 15.0 % -> 9.9 %); at nodes it cost more time than it pruned.
//! - **disjunctive cliques** (makespan on one server): two jobs whose demands together exceed
//!   the server's capacity in some resource can never run at the same time. The jobs of a
//!   clique of such pairwise-conflicting jobs run one at a time, each not before its earliest
//!   start and followed by the chain of its dependents (its tail), so Jackson's preemptive
//!   schedule bounds the makespan from below (`jackson.rs`). The cliques are the greedy clique
//!   of the unplaced jobs (longest first) and the four best of the greedy cliques grown from
//!   each job, chosen once. On j30 it is what the earliest-start and energy bounds miss: jobs
//!   that compete with each other (j309_2's root bound: 66 with the longest-first clique and
//!   heads only, 89 now; optimum 92).
//! - **time windows** (makespan, queues of at most 64 jobs; `propagation.rs`): a makespan of
//!   `T` gives every unplaced job a window from its earliest start to `T` less the chain of
//!   its dependents; propagating dependencies, the timetable of compulsory parts,
//!   disjunctive pairs and, on each clique, the one-machine test and edge finding through
//!   the windows (and, at the root, an energetic check and shaving) can show that no
//!   completion meets `T`. At the root this gives a destructive bound (a bisection over
//!   horizons: one more than the latest refuted); at a node on one server, a refuted
//!   "incumbent less one second" prunes it (within 8 levels of the root, with shaving too). On PSPLIB j30 it is what proves the
//!   tightest set (j305) in seconds.
//!
//! - **delay** (bsld, wait and flow; serial dispatcher; no queued dependencies; queues of at
//!   most 128 jobs; `delay.rs`): when the unplaced jobs cannot all start at their earliest
//!   starts (their servers cannot be assigned with those starts fixed, or their demand at some
//!   instant exceeds the room the servers have for them), at least one waits until some job ends; the cheapest
//!   such wait (one job moved to the first end at which the rest still fits, or two jobs each
//!   moved to their first possible end), or a fractional cover of the excess at an instant,
//!   is added to the earliest-start bound; at a node, a search over which jobs wait shows
//!   when every set of waits cheaper than what would prune it leaves the rest unable to fit.
//!   The same search, following the waiting jobs to where they fit, runs at the root at the
//!   start and whenever the incumbent improves: when no set of waits cheaper than the
//!   incumbent's excess over the root's earliest-start bound exists, the incumbent is optimal
//!   and the search ends.
//!   On lightly loaded clusters, where orders differ by the seconds one long job waits, this is
//!   what proves the optimum.
//!
//! Dominance:
//! - **interchangeable jobs** (same demand, walltime, release, queued deps and dependents, and
//!   for `flow` the same weight) are placed in submit order: swapping two of them in an order
//!   swaps their starts and nothing else, and giving the earlier start to the earlier submit
//!   never costs more (bsld is convex in the wait; wait, flow and makespan do not change).
//! - **commuting placements**: when placing `b` right after `a` leaves `b` where it would
//!   have gone before `a`, the prefixes `.., a, b` and `.., b, a` reach the same state; only
//!   the one with the smaller index first is explored.
//! - **identical partial states**: two prefixes that place the same jobs at the same starts on
//!   the same servers (and, for `strict`, end with the same start) have identical futures; a
//!   table keyed by the placed set and a 128-bit hash of the placements explores such a state
//!   once, unless it is reached again with a lower cost.
//!
//! Node and time limits stop the search; the result then carries the best order, the lowest
//! bound of the parts left unexplored and the gap, and is never called optimal. Values within
//! a relative 1e-9 count as equal.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use schedlm_model::{Dispatcher, Objective, Placement, Problem, Time, Variant};

use crate::cost::Cost;
use crate::deadline::Deadline;
use crate::packing::UsableCapacity;
use crate::rules::best_rule;

mod busy;
mod delay;
mod jackson;
mod parallel;
mod propagation;

use busy::{BusyTime, Pool};
use delay::DelayBound;
use jackson::{choose_cliques, greedy_clique, longest_first, Jackson, Member};
use propagation::Propagation;

/// Limits and starting point of a branch and bound run.
#[derive(Debug, Clone)]
pub struct BnbOptions {
    /// Stop after this much time.
    pub time_limit: Option<Duration>,
    /// Stop after this many nodes.
    pub node_limit: Option<u64>,
    /// A first order to beat (queue indices); the best classic rule when absent.
    pub incumbent: Option<Vec<usize>>,
    /// Most states kept in the identical-state table (about 48 bytes each; per thread).
    pub table_limit: usize,
    /// Threads of one search. Above 1 (and without a node limit, which must stay
    /// deterministic), the subtrees below the first two placements are searched in parallel
    /// (`solver/src/bnb/parallel.rs`); the order returned is the one a single thread returns.
    pub threads: usize,
}

impl Default for BnbOptions {
    fn default() -> Self {
        BnbOptions {
            time_limit: None,
            node_limit: None,
            incumbent: None,
            table_limit: 1 << 20,
            threads: 1,
        }
    }
}

/// How a search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The search finished: the order is optimal.
    Optimal,
    /// The time limit stopped the search.
    TimeLimit,
    /// The node limit stopped the search.
    NodeLimit,
}

impl Status {
    /// The status as written in reports and JSON: `optimal`, `time_limit` or `node_limit`
    /// (the same spelling as serde's).
    pub fn name(self) -> &'static str {
        match self {
            Status::Optimal => "optimal",
            Status::TimeLimit => "time_limit",
            Status::NodeLimit => "node_limit",
        }
    }
}

/// The result of a branch and bound run.
#[derive(Debug, Clone)]
pub struct BnbOutcome {
    /// Best order found (queue indices, dependency-feasible).
    pub order: Vec<usize>,
    /// Its objective value, recomputed from its schedule.
    pub value: f64,
    /// A proven lower bound on the optimum (equals `value` when optimal).
    pub lower_bound: f64,
    /// Whether the search finished or which limit stopped it.
    pub status: Status,
    /// Search-tree nodes visited (the root, every partial order explored and every complete
    /// order); this is what [`BnbOptions::node_limit`] caps.
    pub nodes: u64,
    /// Wall-clock time of the whole run, the starting incumbent included.
    pub elapsed: Duration,
}

impl BnbOutcome {
    /// Whether the search was exhausted, so `order` is proven optimal (SPEC section 4).
    pub fn proven_optimal(&self) -> bool {
        self.status == Status::Optimal
    }
}

/// Most jobs for the parallel search: its work items are the root's grandchildren (up to
/// n^2 of them, each expanded on the calling thread first), which on a long queue cost more
/// than the search they split; longer queues are searched on one thread.
const PARALLEL_MAX_JOBS: usize = 400;

/// Most server sets the root's mean-busy-time bound looks at (`Search::busy_root_bound`).
const BUSY_SETS: usize = 8;

/// Runs branch and bound on `problem`.
pub fn solve(
    problem: &Problem,
    objective: Objective,
    variant: Variant,
    options: &BnbOptions,
) -> BnbOutcome {
    let started = Instant::now();
    let (incumbent, _) = match &options.incumbent {
        Some(o) => problem.evaluate(o, objective, variant),
        None => best_rule(problem, objective, variant),
    };
    let parallel = (3..=PARALLEL_MAX_JOBS).contains(&problem.jobs());
    let found = if options.threads > 1 && options.node_limit.is_none() && parallel {
        parallel::search(problem, objective, variant, options, started, &incumbent)
    } else {
        sequential(problem, objective, variant, options, started, &incumbent)
    };
    let cost = Cost::new(problem, objective);
    let (order, value) = problem.evaluate(&found.best_order, objective, variant);
    let status = found.stopped.unwrap_or(Status::Optimal);
    let lower_bound = if status == Status::Optimal {
        value
    } else {
        cost.value(cost.round_up(found.open_bound.min(found.best_total)))
            .min(value)
    };
    BnbOutcome {
        order,
        value,
        lower_bound,
        status,
        nodes: found.nodes,
        elapsed: started.elapsed(),
    }
}

/// Key of the identical-state table: the placed set and two hashes of the placements.
type StateKey = (u128, u64, u64);

/// The search on the calling thread, from `incumbent`.
fn sequential(
    problem: &Problem,
    objective: Objective,
    variant: Variant,
    options: &BnbOptions,
    started: Instant,
    incumbent: &[usize],
) -> Found {
    let mut search = Search::new(problem, objective, variant, options, started);
    search.set_incumbent(incumbent);
    search.run();
    Found {
        best_order: search.best_order,
        best_total: search.best_total,
        stopped: search.stopped,
        open_bound: search.open_bound,
        nodes: search.nodes,
    }
}

/// What a search (one thread or several) leaves: its best order and total, how it stopped,
/// the lowest bound of the parts left unexplored, and its nodes.
struct Found {
    best_order: Vec<usize>,
    best_total: f64,
    stopped: Option<Status>,
    open_bound: f64,
    nodes: u64,
}

const NO_FIT: Time = Time::MAX;

/// Step budgets of one evaluation of the delay bound (`delay.rs`: its server searches and
/// fit checks together) at the root and at a node.
const DELAY_ROOT_STEPS: u64 = 1 << 16;
const DELAY_NODE_STEPS: u64 = 1 << 10;
/// Fewest unplaced jobs at a node for the delay bound: below, the subtree it could prune is
/// smaller than what it costs (three 14-job `hpc` instances: 1.3-2.6x the time of the search
/// without it when evaluated at every node; ten 16-job `uniform` ones: 1.24x from 7 jobs
/// left, 1.00x from 10, with `delay::PRUNE_ONE_IN`; see docs/benchmarks.md).
const DELAY_MIN_UNPLACED: usize = 10;
/// What one try of the root to reach the incumbent ([`Search::root_reaches_best`]) showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RootTry {
    /// The root's bound reaches the incumbent, which is optimal.
    Reached,
    /// It does not, or the try was not made.
    Short,
    /// The clock stopped the try before it decided.
    Cut,
}

/// How often (in nodes) a search looks again whether the root may try to reach an improved
/// incumbent it put off.
const ROOT_RETRY_NODES: u64 = 1 << 16;
/// Longest queue with the delay bound: it costs O(n^2) per evaluation.
const DELAY_MAX_JOBS: usize = 128;

/// Deepest level at which a node's window test is repeated with shaving
/// ([`Search::window_test_prunes`]). PSPLIB j30, 144 instances, `auto` 10 s: 0 levels 139
/// proven (35 s in all), 8 levels 140 (31 s), 16 levels 139, 64 levels 139 (38 s).
const SHAVED_LEVELS: usize = 8;

/// Longest queue on which the makespan search propagates time windows (`propagation.rs`): the
/// root's destructive bound runs an O(n^3) energetic check per horizon it tries.
const PROPAGATION_MAX_JOBS: usize = 64;

struct Search<'p> {
    problem: &'p Problem,
    cost: Cost<'p>,
    variant: Variant,
    d: Dispatcher<'p>,
    n: usize,
    servers: usize,
    /// est[level][job][server]: earliest start of an unplaced job on a server (exact for jobs
    /// whose dependencies are placed, a lower bound otherwise); `NO_FIT` if it never fits.
    est: Vec<Vec<Time>>,
    /// emin[level][job]: minimum of est over servers.
    emin: Vec<Vec<Time>>,
    topo: Vec<usize>,
    class_prev: Vec<usize>,
    children: Vec<Vec<(Time, usize, usize)>>,
    best_total: f64,
    best_order: Vec<usize>,
    nodes: u64,
    node_limit: u64,
    deadline: Deadline,
    stopped: Option<Status>,
    open_bound: f64,
    /// The earliest-start bound of the root, and whether the root's delay bound has since
    /// reached the incumbent (which ends the search: the incumbent is optimal).
    root_base: f64,
    closed: bool,
    /// Whether the incumbent improved since the root last tried to reach it, the time those
    /// tries took, and when the search started.
    root_pending: bool,
    /// Whether the pending try repeats one the clock cut.
    root_retry: bool,
    root_time: Duration,
    started: Instant,
    // Energy-bound scratch.
    pooled_times: Vec<Time>,
    pooled_usage: Vec<i64>,
    total_capacity: Vec<i64>,
    /// The part of a free capacity that queued jobs can fill (sums of their demands).
    usable: UsableCapacity,
    energies: Vec<f64>,
    completion: Vec<f64>,
    slopes: Vec<f64>,
    /// The mean-busy-time bound's scratch (`busy.rs`; at the root).
    busy: BusyTime,
    /// When to evaluate the pooled-energy bound ([`Sampling`]).
    energy_sampling: Sampling,
    /// Makespan on one server: bit i of `conflict[j]` when jobs i and j can never overlap;
    /// empty otherwise (no clique bound).
    conflict: Vec<u128>,
    /// Makespan on queues of at most `PROPAGATION_MAX_JOBS`: the time-window test
    /// (`propagation.rs`), and when to run it at a node ([`Sampling`]).
    windows: Option<Propagation>,
    window_sampling: Sampling,
    /// Sum objectives, serial dispatcher, no queued dependencies: the delay bound
    /// (`delay.rs`).
    delay: Option<DelayBound>,
    /// Queue indices, longest walltime first (the greedy clique's order).
    by_length: Vec<usize>,
    /// Clique scratch: head, walltime and tail of its members.
    clique: Vec<Member>,
    jackson: Jackson,
    /// Cliques chosen at the start (`jackson::choose_cliques`), as bit sets of jobs.
    cliques: Vec<u128>,
    /// Makespan: the longest chain of walltimes of the queued jobs that depend on each job.
    tail: Vec<Time>,
    /// The best total of every worker of a parallel search (f64 bits).
    shared: Option<Arc<AtomicU64>>,
    /// The identical-state table of a parallel search (then `table` stays empty), and the
    /// work item being searched.
    shared_table: Option<Arc<parallel::SharedTable>>,
    item: usize,
    // Identical-state table.
    table: HashMap<StateKey, f64>,
    table_limit: usize,
    /// How long the table's last growth took.
    table_growth: Duration,
    use_table: bool,
    mask: u128,
    h1: u64,
    h2: u64,
}

impl<'p> Search<'p> {
    fn new(
        problem: &'p Problem,
        objective: Objective,
        variant: Variant,
        options: &BnbOptions,
        started: Instant,
    ) -> Self {
        let n = problem.jobs();
        let servers = problem.servers();
        let r = problem.resources();
        let total_capacity = (0..r)
            .map(|q| (0..servers).map(|s| problem.capacity(s)[q]).sum())
            .collect();
        let conflict = conflicts(problem, objective);
        // Tails serve the clique bound only (makespan on one server).
        let tail = if conflict.is_empty() {
            Vec::new()
        } else {
            problem.tails()
        };
        let by_length = longest_first(problem);
        let cliques = choose_cliques(problem, &conflict, &tail, &by_length);
        Search {
            problem,
            cost: Cost::new(problem, objective),
            variant,
            d: Dispatcher::new(problem, variant),
            n,
            servers,
            // Grown a level at a time as the search goes deeper ([`Search::update_estimates`]):
            // (n + 1) x n x servers entries at once are 576 MB for a 3,000-job queue on 8
            // servers, filled by the allocator before the first clock check.
            est: Vec::new(),
            emin: Vec::new(),
            topo: problem.topological_order(),
            class_prev: class_predecessors(problem, objective),
            children: (0..=n).map(|_| Vec::new()).collect(),
            best_total: f64::INFINITY,
            best_order: Vec::new(),
            nodes: 0,
            node_limit: options.node_limit.unwrap_or(u64::MAX),
            deadline: Deadline::new(started, options.time_limit, problem.jobs(), 256),
            stopped: None,
            open_bound: f64::INFINITY,
            root_base: f64::NEG_INFINITY,
            closed: false,
            root_pending: true,
            root_retry: false,
            root_time: Duration::ZERO,
            started,
            pooled_times: Vec::new(),
            pooled_usage: Vec::new(),
            total_capacity,
            usable: UsableCapacity::new(problem),
            energies: Vec::with_capacity(n),
            energy_sampling: Sampling::default(),
            completion: vec![0.0; n],
            slopes: Vec::with_capacity(n),
            busy: BusyTime::new(n),
            windows: (objective == Objective::Makespan && n <= PROPAGATION_MAX_JOBS)
                .then(|| Propagation::new(problem, &conflict, &cliques)),
            conflict,
            window_sampling: Sampling::default(),
            delay: (!objective.is_max() && variant == Variant::Serial && n <= DELAY_MAX_JOBS)
                .then(|| DelayBound::new(problem))
                .flatten(),
            by_length,
            clique: Vec::with_capacity(n),
            jackson: Jackson::default(),
            cliques,
            tail,
            shared: None,
            shared_table: None,
            item: 0,
            table: HashMap::new(),
            table_limit: options.table_limit,
            table_growth: Duration::ZERO,
            use_table: n <= 128 && options.table_limit > 0,
            mask: 0,
            h1: 0,
            h2: 0,
        }
    }

    fn set_incumbent(&mut self, order: &[usize]) {
        let mut d = Dispatcher::new(self.problem, self.variant);
        let mut total = if self.cost.is_max() {
            f64::NEG_INFINITY
        } else {
            0.0
        };
        for &j in order {
            let at = d.place(j);
            total = self.cost.add(total, self.cost.job(j, at.start));
        }
        self.best_total = total;
        self.best_order = order.to_vec();
    }

    fn eps(&self) -> f64 {
        1e-9 * self.best_total.abs().max(1.0)
    }

    fn run(&mut self) {
        if self.n == 0 {
            return;
        }
        self.update_estimates(0, None);
        let start = if self.cost.is_max() {
            f64::NEG_INFINITY
        } else {
            0.0
        };
        let root = self.root_bound();
        self.root_base = self.cost.add(start, self.start_bound(0));
        self.try_root();
        self.dfs(0, start, root);
    }

    /// Whether the root's tries (and the table's growth) are paced by the clock: under a time
    /// limit without a node limit. With a node limit (a search that must give the same answer
    /// on every machine) or without a time limit, each try has a fixed budget of work instead.
    fn timed_root(&self) -> bool {
        self.deadline.is_set() && self.node_limit == u64::MAX
    }

    /// Asks the root to reach the incumbent ([`Search::root_reaches_best`]), unless, when
    /// paced by the clock ([`Search::timed_root`]), those tries have taken half its time so
    /// far: then it waits (looking again every [`ROOT_RETRY_NODES`] nodes). One try may run up
    /// to twice as long as the search has, so the tries can take up to about two thirds of a
    /// search; each has at most [`DELAY_ROOT_STEPS`] steps. A try the clock or its steps cut
    /// is made again from the start, later, without a step limit: once the tries have taken
    /// at most an eighth of the search, for a sixteenth of the time it has run (so the repeats
    /// cost at most about a seventh). Otherwise it always asks, with a fixed budget, so a
    /// search under a node limit stays deterministic.
    fn try_root(&mut self) {
        let elapsed = self.started.elapsed();
        // A try the clock cut repeats work already done: it waits until the tries have
        // taken at most an eighth of the search, and gets a sixteenth of its time.
        let (share, time, steps) = if self.root_retry {
            (8, elapsed / 16, u64::MAX)
        } else {
            (2, elapsed * 2, DELAY_ROOT_STEPS)
        };
        if self.delay.is_none() || (self.timed_root() && self.root_time * share > elapsed) {
            return;
        }
        let asked = Instant::now();
        let outcome = self.root_reaches_best(time.max(Duration::from_millis(1)), steps);
        self.root_time += asked.elapsed();
        self.closed = outcome == RootTry::Reached;
        self.root_pending = outcome == RootTry::Cut;
        self.root_retry = self.root_pending;
    }

    /// Whether the root's delay bound (`delay.rs`), asked to reach the incumbent, does: the
    /// incumbent is then optimal. Its search over which jobs wait can only refute waits
    /// cheaper than a given amount, so it runs at the start and again whenever the incumbent
    /// improves (the root's first evaluation knows no amount to reach). Sequential searches
    /// only (a worker of a parallel search holds only its own incumbent).
    fn root_reaches_best(&mut self, time: Duration, steps: u64) -> RootTry {
        if self.shared.is_some() || self.n < DELAY_MIN_UNPLACED || !self.best_total.is_finite() {
            return RootTry::Short;
        }
        let needed = self.best_total - self.eps() - self.root_base;
        let deadline = self.deadline;
        let timed = self.timed_root();
        let Some(delay) = self.delay.as_mut() else {
            return RootTry::Short;
        };
        if needed <= 0.0 {
            return RootTry::Short;
        }
        let mut root = Dispatcher::new(self.problem, self.variant);
        delay.bound_cascades(!timed);
        let until = timed.then(|| Instant::now() + time);
        let extra = delay.increment(
            &mut root,
            &self.cost,
            &self.emin[0],
            &self.est[0],
            None,
            needed,
            steps,
            &mut || deadline.passed_now() || until.is_some_and(|u| Instant::now() >= u),
        );
        if extra >= needed {
            RootTry::Reached
        } else if timed && delay.ran_out() {
            RootTry::Cut
        } else {
            RootTry::Short
        }
    }

    /// The destructive bound of the root (a makespan total; minus infinity without window
    /// propagation): one more than the latest horizon between the earliest-start bound and
    /// the incumbent that the bisection of `Propagation::destructive` finds refuted.
    /// The bounds computed once at the root: the destructive makespan bound and the
    /// mean-busy-time bound.
    fn root_bound(&mut self) -> f64 {
        self.destructive_root_bound().max(self.busy_root_bound())
    }

    /// The mean-busy-time bound (`busy.rs`) of the root (sum objectives): over the pool of all
    /// servers, and, for each set of servers some jobs fit only on (the GPU servers, say),
    /// those jobs on that set's pool plus the other jobs on the whole pool (each part at least
    /// its earliest-start bound). At most [`BUSY_SETS`] sets, the most used first.
    fn busy_root_bound(&mut self) -> f64 {
        if self.cost.is_max() {
            return f64::NEG_INFINITY;
        }
        let (p, n, servers) = (self.problem, self.n, self.servers);
        let all_jobs: Vec<usize> = (0..n).collect();
        let mut best = self.busy_over(&|_| true, &all_jobs);
        if servers == 0 || servers > 64 {
            return best;
        }
        let confined: Vec<u64> = (0..n)
            .map(|j| {
                (0..servers)
                    .filter(|&s| p.fits(j, s))
                    .fold(0, |m, s| m | 1 << s)
            })
            .collect();
        let everywhere = u64::MAX >> (64 - servers);
        let mut sets: Vec<(usize, u64)> = Vec::new();
        for &m in confined.iter().filter(|&&m| m != everywhere) {
            match sets.iter_mut().find(|(_, set)| *set == m) {
                Some((count, _)) => *count += 1,
                None => sets.push((1, m)),
            }
        }
        sets.sort_unstable_by(|a, b| b.cmp(a));
        for &(_, set) in sets.iter().take(BUSY_SETS) {
            let (inside, outside): (Vec<usize>, Vec<usize>) =
                (0..n).partition(|&j| confined[j] & !set == 0);
            let a = self
                .busy_over(&|s| set >> s & 1 == 1, &inside)
                .max(self.start_sum(&inside));
            let b = self
                .busy_over(&|_| true, &outside)
                .max(self.start_sum(&outside));
            best = best.max(a + b);
        }
        best
    }

    /// The mean-busy-time bound of `jobs` (unplaced) on the pool of the servers `of` holds
    /// for, at the root.
    fn busy_over(&mut self, of: &dyn Fn(usize) -> bool, jobs: &[usize]) -> f64 {
        if jobs.is_empty() {
            return 0.0;
        }
        let p = self.problem;
        self.d
            .pooled_usage_of(of, &mut self.pooled_times, &mut self.pooled_usage);
        let total: Vec<i64> = (0..p.resources())
            .map(|q| {
                (0..self.servers)
                    .filter(|&s| of(s))
                    .map(|s| p.capacity(s)[q])
                    .sum()
            })
            .collect();
        let pool = Pool {
            problem: p,
            cost: &self.cost,
            times: &self.pooled_times,
            usage: &self.pooled_usage,
            total: &total,
            usable: &self.usable,
        };
        self.busy.bound(&pool, jobs, &self.emin[0])
    }

    /// The earliest-start bound of `jobs` at the root.
    fn start_sum(&self, jobs: &[usize]) -> f64 {
        jobs.iter()
            .map(|&j| self.cost.job(j, self.emin[0][j]))
            .sum()
    }

    fn destructive_root_bound(&mut self) -> f64 {
        if self.windows.is_none() || !self.best_total.is_finite() {
            return f64::NEG_INFINITY;
        }
        let now = self.problem.now();
        let low = now + self.start_bound(0) as Time;
        let high = now + self.best_total as Time;
        let Some(windows) = self.windows.as_mut() else {
            return f64::NEG_INFINITY;
        };
        let deadline = self.deadline;
        let mut stop = || deadline.passed_now();
        let bound = windows.destructive(self.problem, &self.d, &self.emin[0], low, high, &mut stop);
        (bound - now) as f64
    }

    /// Whether propagating time windows proves that no completion of this node finishes by
    /// the incumbent's makespan less one second (makespans are whole seconds), which prunes
    /// it. Where that fails within [`SHAVED_LEVELS`] of the root, the test is repeated with
    /// shaving, while shaving has cost fewer propagations than the search has nodes (about
    /// half the time; counted, not timed, so a node-limited search stays deterministic).
    /// Only on one server: with several, pooling their capacity makes the timetable too weak
    /// to pay for itself per node (4-server `uniform`, 12 jobs: the median time to proof
    /// tripled). Sampled like the energy bound ([`Sampling`]); without the energetic check,
    /// which costs 8x as much per node and pruned almost nothing more on PSPLIB j30.
    fn window_test_prunes(&mut self, level: usize) -> bool {
        if self.servers > 1 {
            return false;
        }
        let Some(windows) = self.windows.as_mut() else {
            return false;
        };
        if !self.window_sampling.worthwhile(self.nodes) || !self.best_total.is_finite() {
            return false;
        }
        let horizon = self.problem.now() + self.best_total as Time - 1;
        let est = &self.emin[level];
        let mut refuted = windows.refutes(self.problem, &self.d, est, horizon, false);
        if !refuted && level <= SHAVED_LEVELS && windows.shaving_work() <= self.nodes {
            let deadline = self.deadline;
            let mut stop = || deadline.passed_now();
            refuted = windows.refutes_shaved(self.problem, &self.d, est, horizon, &mut stop);
        }
        self.window_sampling.record(refuted);
        refuted
    }

    /// Fills est/emin of `level` from `level - 1` after `placed` (job, placement), or from
    /// scratch at the root.
    fn update_estimates(&mut self, level: usize, placed: Option<(usize, Placement)>) {
        let (n, ns) = (self.n, self.n * self.servers);
        // A level's rows are always written (copied from the level above, then updated) before
        // they are read.
        // One buffer per level, made when the search first goes that deep: no reallocation
        // copies the levels above, and the clock is read between levels.
        while self.est.len() <= level {
            self.est.push(vec![0; ns]);
            self.emin.push(vec![0; n]);
        }
        if placed.is_some() {
            let (above, this) = self.est.split_at_mut(level);
            this[0].copy_from_slice(&above[level - 1]);
        }
        let p = self.problem;
        let strict_floor = match (self.variant, placed) {
            (Variant::Strict, Some((_, at))) => at.start,
            _ => Time::MIN,
        };
        for t in 0..n {
            let j = self.topo[t];
            if self.d.is_placed(j) {
                continue;
            }
            let mut lower = p.released(j).max(strict_floor);
            for &dep in p.deps(j) {
                let end = if self.d.is_placed(dep) {
                    self.d.start(dep) + p.walltime(dep)
                } else {
                    self.emin[level][dep].saturating_add(p.walltime(dep))
                };
                lower = lower.max(end);
            }
            let row = j * self.servers;
            let mut best = NO_FIT;
            for s in 0..self.servers {
                let old = self.est[level][row + s];
                let fresh = placed.is_none();
                let stale = fresh || old < lower || placed.is_some_and(|(_, at)| at.server == s);
                let e = if !stale {
                    old
                } else if !fresh && old == NO_FIT {
                    NO_FIT
                } else {
                    let from = if fresh { lower } else { lower.max(old) };
                    self.d.earliest_on(j, s, from).unwrap_or(NO_FIT)
                };
                self.est[level][row + s] = e;
                best = best.min(e);
            }
            self.emin[level][j] = best;
        }
    }

    fn check_limits(&mut self) -> bool {
        if self.nodes >= self.node_limit {
            self.stopped = Some(Status::NodeLimit);
        } else if self.deadline.passed(self.nodes) {
            self.stopped = Some(Status::TimeLimit);
        }
        self.stopped.is_some()
    }

    /// Lower bound on the total of the unplaced jobs at `level` (earliest-start bound).
    fn start_bound(&self, level: usize) -> f64 {
        let mut h = if self.cost.is_max() {
            f64::NEG_INFINITY
        } else {
            0.0
        };
        for j in 0..self.n {
            if !self.d.is_placed(j) {
                h = self.cost.add(h, self.cost.job(j, self.emin[level][j]));
            }
        }
        h
    }

    /// Lower bound on the total of the unplaced jobs from pooled resource energy.
    fn energy_bound(&mut self, level: usize) -> f64 {
        let p = self.problem;
        let n = self.n;
        let r = p.resources();
        self.d
            .pooled_usage(&mut self.pooled_times, &mut self.pooled_usage);
        // completion[m]: lower bound on the (m+1)-th smallest completion of the unplaced jobs.
        self.energies.clear();
        for j in 0..n {
            if !self.d.is_placed(j) {
                self.energies
                    .push((self.emin[level][j] + p.walltime(j)) as f64);
            }
        }
        let m = self.energies.len();
        self.energies.sort_unstable_by(f64::total_cmp);
        self.completion[..m].copy_from_slice(&self.energies);
        for q in 0..r {
            self.energies.clear();
            for j in 0..n {
                if !self.d.is_placed(j) {
                    self.energies.push((p.demand(j)[q] * p.walltime(j)) as f64);
                }
            }
            self.energies.sort_unstable_by(f64::total_cmp);
            let mut need = 0.0;
            let mut seg = 0;
            let mut done = 0.0; // free energy before pooled_times[seg]
            let times = &self.pooled_times;
            for (k, e) in self.energies.iter().enumerate() {
                need += e;
                if need <= 0.0 {
                    continue;
                }
                // Advance to the segment where the cumulative free energy reaches `need`.
                loop {
                    let free = self
                        .usable
                        .usable(q, self.total_capacity[q] - self.pooled_usage[seg * r + q])
                        as f64;
                    if seg + 1 == times.len() {
                        if free > 0.0 {
                            let t = times[seg] as f64 + (need - done) / free;
                            self.completion[k] = self.completion[k].max(t);
                        }
                        break;
                    }
                    let len = (times[seg + 1] - times[seg]) as f64;
                    if done + free * len >= need {
                        let t = times[seg] as f64 + (need - done) / free;
                        self.completion[k] = self.completion[k].max(t);
                        break;
                    }
                    done += free * len;
                    seg += 1;
                }
            }
        }
        if self.cost.is_max() {
            return self.completion[m - 1] - p.now() as f64;
        }
        // Pair the largest slopes with the smallest completion bounds.
        self.slopes.clear();
        let mut offset = 0.0;
        for j in 0..n {
            if !self.d.is_placed(j) {
                let (a, b) = self.cost.linear(j);
                self.slopes.push(a);
                offset += b;
            }
        }
        self.slopes.sort_unstable_by(|a, b| b.total_cmp(a));
        offset
            + self
                .slopes
                .iter()
                .zip(&self.completion[..m])
                .map(|(a, c)| a * c)
                .sum::<f64>()
    }

    /// Makespan lower bound (relative to `now`) from cliques of pairwise-conflicting unplaced
    /// jobs on the one server: the one-machine bound with heads and tails (`jackson.rs`) of
    /// the greedy clique of the unplaced jobs (longest first) and of the unplaced members of
    /// the cliques chosen at the start (`jackson::choose_cliques`).
    fn clique_bound(&mut self, level: usize) -> f64 {
        let d = &self.d;
        let members = greedy_clique(&self.conflict, &self.by_length, 0, |j| !d.is_placed(j));
        let mut best = self.one_machine(level, members);
        for k in 0..self.cliques.len() {
            best = best.max(self.one_machine(level, self.cliques[k]));
        }
        if best == Time::MIN {
            return f64::NEG_INFINITY;
        }
        (best - self.problem.now()) as f64
    }

    /// The one-machine bound of the unplaced jobs of `members` (`Time::MIN` when none).
    fn one_machine(&mut self, level: usize, members: u128) -> Time {
        self.clique.clear();
        let mut rest = members;
        while rest != 0 {
            let j = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            if !self.d.is_placed(j) {
                self.clique.push(Member {
                    head: self.emin[level][j],
                    walltime: self.problem.walltime(j),
                    tail: self.tail[j],
                });
            }
        }
        self.jackson.bound(&mut self.clique)
    }

    fn table_key(&self, level: usize) -> StateKey {
        let last = match (self.variant, level) {
            (Variant::Strict, l) if l > 0 => {
                self.d.placed_order().last().map_or(0, |j| self.d.start(j))
            }
            _ => 0,
        };
        (self.mask, self.h1 ^ mix(last as u64, 0x9e37), self.h2)
    }

    /// Explores the node at `level` whose placed jobs cost `g`; `inherited` is its parent's
    /// bound, which holds for every order below the parent and so below this node too: the
    /// node's bound never drops below it (a sampled bound skipped here cannot weaken the
    /// bound reported for an unfinished search, and a child may be pruned by it after the
    /// incumbent improved).
    fn dfs(&mut self, level: usize, g: f64, inherited: f64) {
        self.nodes += 1;
        if self.closed {
            return;
        }
        if self.root_pending && self.nodes.is_multiple_of(ROOT_RETRY_NODES) {
            self.try_root();
            if self.closed {
                return;
            }
        }
        // Below the root, a child also looks at the clock before its bounds: on a long queue a
        // node has hundreds of children, each costing an update of every job's earliest start,
        // and children pruned by their bound would otherwise never look. The parent records
        // its own bound as open when it sees the stop.
        if level > 0 && self.deadline.passed(self.nodes) {
            self.stopped = Some(Status::TimeLimit);
            return;
        }
        if level == self.n {
            if g < self.best_total - self.eps() {
                self.best_total = g;
                self.best_order = self.d.placed_order().collect();
                self.root_pending = true;
                self.root_retry = false;
                self.try_root();
                if let Some(shared) = &self.shared {
                    let bits = g.to_bits();
                    let _ = shared.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                        (g < f64::from_bits(old)).then_some(bits)
                    });
                }
            }
            return;
        }
        let Some(bound) = self.node_bound(level, g, inherited) else {
            return;
        };
        if self.check_limits() {
            self.open_bound = self.open_bound.min(bound);
            return;
        }
        if self.use_table && level >= 2 && level + 1 < self.n && self.seen_before(level, g) {
            return;
        }
        let mut kids = std::mem::take(&mut self.children[level]);
        kids.clear();
        self.collect_children(level, &mut kids);
        for &(start, server, job) in &kids {
            let at = Placement { start, server };
            self.d.place_at(job, at);
            self.toggle(job, at);
            self.update_estimates(level + 1, Some((job, at)));
            let child_g = self.cost.add(g, self.cost.job(job, start));
            self.dfs(level + 1, child_g, bound);
            self.toggle(job, at);
            self.d.undo();
            if self.stopped.is_some() {
                self.open_bound = self.open_bound.min(bound);
                break;
            }
            if self.closed {
                break;
            }
        }
        self.children[level] = kids;
    }

    /// The bound of the node at `level` whose placed jobs cost `g` (never below `inherited`,
    /// its parent's), or `None` when it prunes the node: earliest starts, then pooled energy
    /// (when worthwhile), the delay bound, the clique bound and the time-window test, each
    /// only while the node survives.
    fn node_bound(&mut self, level: usize, g: f64, inherited: f64) -> Option<f64> {
        let mut bound = inherited.max(
            self.cost
                .round_up(self.cost.add(g, self.start_bound(level))),
        );
        if self.prunes(bound) {
            return None;
        }
        if self.energy_sampling.worthwhile(self.nodes) {
            let energy = self.energy_bound(level);
            bound = bound.max(self.cost.round_up(self.cost.add(g, energy)));
            let pruned = self.prunes(bound);
            self.energy_sampling.record(pruned);
            if pruned {
                return None;
            }
        }
        if let Some(raised) = self.delay_bound(level, g) {
            bound = bound.max(raised);
            if self.prunes(bound) {
                return None;
            }
        }
        if !self.conflict.is_empty() {
            let clique = self.clique_bound(level);
            bound = bound.max(self.cost.round_up(self.cost.add(g, clique)));
            if self.prunes(bound) {
                return None;
            }
        }
        if self.window_test_prunes(level) {
            return None;
        }
        Some(bound)
    }

    /// The earliest-start bound of the node at `level` raised by the delay bound (`delay.rs`),
    /// where it applies: at the root (with a larger step budget) and at nodes with at least
    /// `DELAY_MIN_UNPLACED` jobs left.
    fn delay_bound(&mut self, level: usize, g: f64) -> Option<f64> {
        if self.delay.is_none() || !self.best_total.is_finite() {
            return None;
        }
        if level > 0 && self.n - level < DELAY_MIN_UNPLACED {
            return None;
        }
        let base = self.cost.add(g, self.start_bound(level));
        let (node, needed, budget) = if level == 0 {
            (None, 0.0, DELAY_ROOT_STEPS)
        } else {
            let needed = self.best_total - self.eps() - base;
            (Some(self.nodes), needed, DELAY_NODE_STEPS)
        };
        let deadline = self.deadline;
        let delay = self.delay.as_mut()?;
        let extra = delay.increment(
            &mut self.d,
            &self.cost,
            &self.emin[level],
            &self.est[level],
            node,
            needed,
            budget,
            &mut || deadline.passed_now(),
        );
        Some(self.cost.round_up(base + extra))
    }

    /// Whether a node with this bound cannot hold an order better than this search's best (a
    /// tie prunes), or, in a parallel search, worse than the best any worker has found (a tie
    /// does not prune: each subtree still finds its own first optimal order, which keeps the
    /// parallel result equal to the sequential one).
    fn prunes(&self, bound: f64) -> bool {
        if bound >= self.best_total - self.eps() {
            return true;
        }
        self.shared.as_ref().is_some_and(|shared| {
            let best = f64::from_bits(shared.load(Ordering::Relaxed));
            bound > best + 1e-9 * best.abs().max(1.0)
        })
    }

    /// Whether the identical-state table already holds this node's state reached at a cost no
    /// higher (then its futures are covered); records the state otherwise. In a parallel
    /// search the table is shared, and only states of this item or of earlier items prune
    /// (see `parallel`).
    fn seen_before(&mut self, level: usize, g: f64) -> bool {
        let key = self.table_key(level);
        let eps = self.eps();
        if let Some(shared) = &self.shared_table {
            return shared.seen_before(key, g, eps, self.item);
        }
        let full = self.table.len() >= self.table_limit;
        match self.table.get_mut(&key) {
            Some(seen) if *seen <= g + eps => return true,
            Some(seen) => *seen = g,
            None if !full => {
                // Growing rehashes the whole table at once (130 ms at 0.9 M states): near the
                // deadline the table stays as it is, so the time limit holds. Not under a node
                // limit, whose searches must not depend on the clock before their deadline.
                let grows = self.table.len() == self.table.capacity();
                if grows && self.timed_root() && !self.deadline.leaves(self.table_growth * 4) {
                    return false;
                }
                let asked = grows.then(Instant::now);
                self.table.insert(key, g);
                if let Some(asked) = asked {
                    self.table_growth = asked.elapsed();
                }
            }
            None => {}
        }
        false
    }

    /// Where job `j` would go at `level`: (start, first server reaching it).
    fn placement_at(&self, level: usize, j: usize) -> (Time, usize) {
        let start = self.emin[level][j];
        let row = j * self.servers;
        let server = (0..self.servers)
            .find(|&s| self.est[level][row + s] == start)
            .unwrap_or(0);
        (start, server)
    }

    fn collect_children(&self, level: usize, kids: &mut Vec<(Time, usize, usize)>) {
        let last = self.d.placed_order().last();
        for j in 0..self.n {
            if self.d.is_placed(j) || !self.d.is_ready(j) {
                continue;
            }
            let prev = self.class_prev[j];
            if prev != usize::MAX && !self.d.is_placed(prev) {
                continue;
            }
            let (start, server) = self.placement_at(level, j);
            if let Some(a) = last {
                if j < a && self.commutes(level, a, j, start, server) {
                    continue;
                }
            }
            kids.push((start, server, j));
        }
        let p = self.problem;
        kids.sort_unstable_by_key(|&(start, _, j)| (start, p.walltime(j), j));
    }

    /// Whether placing `b` right after `a` gives the same state as placing `b` before `a`, so
    /// that only the prefix ending `b, a` needs exploring (for `b < a`).
    ///
    /// If `b` could go at the parent level (ready and first of its class without `a`) and
    /// `a`'s placement did not move it, then with `b` placed first `a` still fits where it is
    /// (the state with both is feasible) and cannot start earlier (placing more never helps),
    /// and servers before `a`'s only got fuller: both placements and the cost are unchanged.
    /// Under `strict`, `a` must also not be pushed later by `b`'s start.
    fn commutes(&self, level: usize, a: usize, b: usize, start: Time, server: usize) -> bool {
        if self.problem.deps(b).contains(&a) || self.class_prev[b] == a {
            return false;
        }
        if self.variant == Variant::Strict && start != self.d.start(a) {
            return false;
        }
        self.placement_at(level - 1, b) == (start, server)
    }

    /// Adds or removes a placement from the identical-state key.
    fn toggle(&mut self, job: usize, at: Placement) {
        if !self.use_table {
            return;
        }
        self.mask ^= 1u128 << job;
        let x =
            (at.start as u64) ^ (job as u64).rotate_left(41) ^ (at.server as u64).rotate_left(23);
        self.h1 ^= mix(x, 0x51_7cc1_b727_220a);
        self.h2 ^= mix(x, 0x2545_f491_4f6c_dd1d);
    }
}

/// When to evaluate a bound that costs about as much as the rest of a node and on many
/// instances never prunes (the pooled energy, the time-window test): after 256 evaluations, if
/// fewer than 1 in 64 pruned, only on every 16th node (still sampling, so it comes back if it
/// starts to prune). Skipping a bound never changes the result, only the node count; the rule
/// depends on counts alone, so runs stay deterministic.
#[derive(Debug, Default, Clone, Copy)]
struct Sampling {
    calls: u64,
    prunes: u64,
}

impl Sampling {
    /// Whether to evaluate the bound at node number `nodes`.
    fn worthwhile(&self, nodes: u64) -> bool {
        self.worthwhile_at(nodes, 64)
    }

    /// The same for a bound that must prune at least one node in `one_in` to be worth it.
    fn worthwhile_at(&self, nodes: u64, one_in: u64) -> bool {
        self.calls < 256 || self.prunes * one_in >= self.calls || nodes.is_multiple_of(16)
    }

    /// Counts one evaluation, and whether it pruned.
    fn record(&mut self, pruned: bool) {
        self.calls += 1;
        self.prunes += u64::from(pruned);
    }
}

/// SplitMix64 finaliser of `x` with a seed.
fn mix(x: u64, seed: u64) -> u64 {
    let mut z = x.wrapping_add(seed).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The pairs of queued jobs that can never run at the same time, for the clique bound: only
/// for the makespan on one server and queues of at most 128 jobs (the clique is a bit set);
/// empty otherwise.
pub(crate) fn conflicts(problem: &Problem, objective: Objective) -> Vec<u128> {
    let n = problem.jobs();
    if objective != Objective::Makespan || problem.servers() != 1 || n > 128 {
        return Vec::new();
    }
    let cap = problem.capacity(0);
    let clash = |i: usize, j: usize| {
        i != j && (0..cap.len()).any(|q| problem.demand(i)[q] + problem.demand(j)[q] > cap[q])
    };
    (0..n)
        .map(|j| {
            (0..n)
                .filter(|&i| clash(i, j))
                .fold(0, |row, i| row | 1 << i)
        })
        .collect()
}

/// For each job, the job just before it in its class of interchangeable jobs (by submit, then
/// queue position), or `usize::MAX`.
fn class_predecessors(problem: &Problem, objective: Objective) -> Vec<usize> {
    let n = problem.jobs();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for j in 0..n {
        for &d in problem.deps(j) {
            dependents[d].push(j);
        }
    }
    let key = |j: usize| {
        let mut deps = problem.deps(j).to_vec();
        deps.sort_unstable();
        let weight = if objective == Objective::Flow {
            problem.weight(j).to_bits()
        } else {
            0
        };
        (
            problem.demand(j).to_vec(),
            problem.walltime(j),
            problem.released(j),
            deps,
            dependents[j].clone(),
            weight,
        )
    };
    let mut by_key: Vec<usize> = (0..n).collect();
    by_key.sort_by_cached_key(|&j| (key(j), problem.submit(j), j));
    let mut prev = vec![usize::MAX; n];
    for w in by_key.windows(2) {
        if key(w[0]) == key(w[1]) {
            prev[w[1]] = w[0];
        }
    }
    prev
}

/// Instances and earliest starts for the brute-force soundness tests of the bounds.
#[cfg(test)]
mod testing {
    use schedlm_generator::{generate_one, Config, Family, Load};
    use schedlm_model::{Dispatcher, Problem, Time, Variant};

    /// Instance `index` of `family` with 3-7 queued jobs on `servers` servers, queued
    /// dependencies with probability `deps`, and `load` (the family's when `None`).
    pub(super) fn problem(
        family: Family,
        deps: f64,
        servers: usize,
        load: Option<f64>,
        index: u64,
    ) -> Problem {
        let mut config = Config::new(family, 20_261_124);
        config.queue_min = 3;
        config.queue_max = 7;
        config.dep_prob = deps;
        config.servers = Some(servers);
        config.load = load.map(Load::Fraction);
        let instance = generate_one(&config, index).expect("generator config is valid");
        Problem::new(&instance).expect("generated instances are valid")
    }

    /// Earliest starts of the unplaced jobs as branch and bound computes them: dependencies
    /// chained, the strict floor, the first fit on any server.
    pub(super) fn earliest_starts(p: &Problem, d: &Dispatcher, variant: Variant) -> Vec<Time> {
        let floor = match variant {
            Variant::Strict => d.placed_order().last().map_or(Time::MIN, |j| d.start(j)),
            Variant::Serial => Time::MIN,
        };
        let mut est = vec![Time::MAX; p.jobs()];
        for j in p.topological_order() {
            if d.is_placed(j) {
                continue;
            }
            let mut lower = p.released(j).max(floor);
            for &dep in p.deps(j) {
                let end = if d.is_placed(dep) {
                    d.start(dep) + p.walltime(dep)
                } else {
                    est[dep].saturating_add(p.walltime(dep))
                };
                lower = lower.max(end);
            }
            est[j] = (0..p.servers())
                .filter_map(|s| d.earliest_on(j, s, lower))
                .min()
                .unwrap_or(Time::MAX);
        }
        est
    }
}
