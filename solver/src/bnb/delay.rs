//! The delay bound: what it costs at least when the unplaced jobs cannot all start at their
//! earliest starts (sum objectives, serial dispatcher, no queued dependencies).
//!
//! The earliest-start bound charges every unplaced job its cost at its earliest start on the
//! partial schedule, as if each were alone. On lightly loaded clusters (the default `hpc`
//! family) almost every job does start there, and the optimum exceeds that bound by the cost of
//! the one or two jobs that must wait a few minutes for room: branch and bound then enumerates
//! orders whose values differ by seconds. This bound charges that wait.
//!
//! Let `est_j` be the earliest starts and `D` the unplaced jobs of a completion that do not
//! start at theirs. In the dispatcher's schedule a job starts at `now`, at a dependency's end or
//! at the end of a running or earlier placed job (SPEC section 3), so a delayed job starts at
//! the first such end after `est_j` or later:
//!
//! 1. Fixed starts: if the unplaced jobs cannot be given servers with each starting at its
//!    `est_j` (the partial schedule kept, every server's capacity respected at every instant),
//!    then `D` is not empty. This is checked by a depth-first search over servers (the job
//!    with the fewest servers left first; servers identical from then on tried once), with a
//!    step budget: an unfinished search counts as "they fit", which only weakens the bound.
//! 2. `|D| >= 2` costs at least the two smallest `delta_j = cost(j, E_j) - cost(j, est_j)`,
//!    where `E_j` is the earliest end after `est_j` any job can have: of running and placed
//!    jobs exactly, of an unplaced job `k` at least `est_k + p_k` (or `est_j + 1` when that is
//!    not after `est_j`, since `k` may itself be delayed).
//! 3. `D = {j}`: every other unplaced job starts at its `est_k`, so the ends before `j`'s start
//!    are known exactly and `j` starts at one of them; the first end `e` at which the fixed
//!    starts (with `j` at `e`) still fit gives the cost `cost(j, e) - cost(j, est_j)`.
//!
//! 4. Instant cover: if at the start `t` of an unplaced job the jobs that would run then need
//!    `x` more of a resource than they can occupy at `t`, jobs holding at least `x` of it
//!    start after `t` (a job that would run at `t` cannot end before it), each costing at least
//!    its cost at the first end after `t`; the fractional knapsack of the cheapest per unit
//!    bounds that set's cost. What they can occupy is counted per server: its free capacity
//!    beside the running and placed jobs, but only as much as those of them that fit in it
//!    alone demand (free cores on a server without free memory hold nothing). This one counts
//!    several delayed jobs, and longer delays.
//!
//! 5. Several waits (where the bound only matters if it reaches a given `needed`: at a node,
//!    what prunes it; at the root, the incumbent, asked again whenever it improves; and when
//!    the two smallest deltas do not reach it): the server search of 1 may also let a job
//!    wait, at its `delta`, leaving its room to the others, while the waits cost less than
//!    `needed`; if no such choice fits, the jobs cost at least `needed` more. At the root the
//!    waiting jobs are also followed to where they fit: a waiting job starts at the first end
//!    after its earliest start or later, at a time it fits beside the jobs fixed so far, which
//!    it is charged (more fixed jobs never make that time earlier); and once every other job
//!    is fixed, the waiting jobs are started in time order (the cascade): of those whose
//!    earliest such start is `t`, the ones that start at `t` must be given servers together,
//!    the others start at an end after `t` or later (a job ends after its earliest start plus
//!    its walltime; a server's usage changes only at its breakpoints), where they fit; an
//!    assignment whose waits reach `needed` this way fails. The true schedule's waiting jobs
//!    are among the choices at every step, each at or after the start it is charged. At nodes
//!    that costs more than it prunes, so there the waiting jobs are charged their deltas only.
//!
//! 6. Pruning the server search at the root: at each of its steps, the waiting jobs are
//!    charged again beside every job fixed so far (their charges only rise), and the jobs still
//!    to assign are covered as in 4, beside the fixed jobs, each holding the excess at its
//!    delta; a step whose charges and cover reach `needed` fails (in the search of 1, any
//!    excess fails). On a 20-job `hpc` instance this turned a search that found no answer in
//!    a million steps into a refutation in 7,952.
//!
//! The increment is the larger of the cover and the smallest of 2 and 3 (when 1 or the cover
//! shows that someone waits). Where the two smallest deltas cannot reach `needed`, 2 and 3
//! are skipped (they could not prune) and the increment is the cover, or `needed` when 5
//! refutes every cheaper set of waits. It is added to the earliest-start bound. Costs
//! must not decrease with the start (bounded slowdown, wait and flow do not). With queued
//! dependencies a delayed job would move its dependents too, and under `strict` a start may
//! also equal an earlier start; both are left out (no increment).

use schedlm_model::{Dispatcher, Placement, Problem, Time};

use crate::cost::Cost;

use super::{Sampling, NO_FIT};

/// A part of the bound is evaluated at every node while it prunes at least one node in this
/// many (it costs several nodes' work), else on one node in 16 ([`Sampling`]).
const PRUNE_ONE_IN: u64 = 8;

/// Search nodes of [`DelayBound::cascade`] at one complete assignment of part 5 (beyond them
/// the waits count as affordable). With the server search's steps they bound one call's work.
const CASCADE_NODES: u64 = 1024;

/// How often (in steps or cascade nodes) a search asks whether to stop: a step of the root's
/// server search covers every instant (O(n^2) work on an n-job queue).
const STOP_EVERY: u64 = 64;

/// One instant of [`DelayBound::cascade`]: the waiting jobs at `t` and the others, and the
/// first possible end after `t`.
struct Frame<'a> {
    t: Time,
    next: Time,
    group: &'a [usize],
    rest: &'a [(Time, usize)],
}

/// Scratch space of the delay bound for one search.
#[derive(Debug)]
pub(super) struct DelayBound {
    /// The unplaced jobs, and each one's fixed start for the server search.
    jobs: Vec<usize>,
    starts: Vec<Time>,
    assigned: Vec<bool>,
    /// Ends of running and placed jobs, sorted; the running ones alone, and the placed ones.
    exact_ends: Vec<Time>,
    running_ends: Vec<Time>,
    placed_ends: Vec<Time>,
    /// (`est_k + p_k`, `k`) of the unplaced jobs, sorted.
    unplaced_ends: Vec<(Time, usize)>,
    /// (delta, job), sorted.
    deltas: Vec<(f64, usize)>,
    /// Steps left to the server searches of one call.
    steps: u64,
    /// Server search: `fit[j * servers + s]` whether unassigned job `j` still fits server `s`
    /// at its start, `count[j]` on how many, and the (job, server) pairs lost to placements
    /// (undone on backtracking).
    fit: Vec<bool>,
    count: Vec<usize>,
    /// The same at the earliest starts, before any placement of the search.
    fit0: Vec<bool>,
    count0: Vec<usize>,
    /// The server of each job in the last assignment the search found (`usize::MAX`: none).
    witness: Vec<usize>,
    lost: Vec<(usize, usize)>,
    /// At an instant, per resource: the unplaced jobs' demand, the room they can occupy
    /// ([`DelayBound::instant_need`]), and one server's share of it.
    need: Vec<i64>,
    room: Vec<i64>,
    fitting: Vec<i64>,
    /// The jobs [`DelayBound::fill_room`] counts, and what each of them costs more if it
    /// starts later ([`DelayBound::excess_cost`]).
    group: Vec<usize>,
    extra: Vec<f64>,
    /// Instant cover: (cost per unit, units) of the jobs that could make room.
    items: Vec<(f64, f64)>,
    /// When to evaluate each part at a node.
    cover_sampling: Sampling,
    single_sampling: Sampling,
    waits_sampling: Sampling,
    /// Part 5: each unplaced job's delta and the first end after its earliest start (where
    /// its delta is taken), what the waiting jobs may cost in all and may still cost.
    delta_of: Vec<f64>,
    wait_from: Vec<Time>,
    waits_total: f64,
    /// Whether the waiting jobs are followed to where they fit (at the root) or only charged
    /// their deltas (at nodes, where that costs too much for what it prunes).
    follow_waits: bool,
    /// Nodes left to the cascade of one assignment, and nodes of all cascades (the clock is
    /// asked every [`STOP_EVERY`]).
    cascade_nodes: u64,
    cascade_ticks: u64,
    /// Whether cascade nodes also spend the call's step budget ([`DelayBound::bound_cascades`]).
    cascade_counts_steps: bool,

    allowance: f64,
}

/// Whether the server search showed that the fixed starts fit, that they do not, or ran out
/// of steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fit {
    Yes,
    No,
    Unknown,
}

impl DelayBound {
    /// A bound for `problem`, or `None` where it does not apply (queued dependencies).
    pub(super) fn new(problem: &Problem) -> Option<DelayBound> {
        if problem.has_queued_deps() {
            return None;
        }
        let n = problem.jobs();
        Some(DelayBound {
            jobs: Vec::with_capacity(n),
            starts: vec![0; n],
            assigned: vec![false; n],
            exact_ends: Vec::with_capacity(problem.running().len() + n),
            unplaced_ends: Vec::with_capacity(n),
            deltas: Vec::with_capacity(n),
            running_ends: {
                let mut ends: Vec<Time> = problem.running().iter().map(|r| r.end).collect();
                ends.sort_unstable();
                ends
            },
            placed_ends: Vec::with_capacity(n),
            steps: 0,
            fit: vec![false; n * problem.servers()],
            count: vec![0; n],
            fit0: vec![false; n * problem.servers()],
            count0: vec![0; n],
            witness: vec![usize::MAX; n],
            lost: Vec::with_capacity(n * problem.servers()),
            need: vec![0; problem.resources()],
            room: vec![0; problem.resources()],
            fitting: vec![0; problem.resources()],
            group: Vec::with_capacity(n),
            extra: Vec::with_capacity(n),

            items: Vec::with_capacity(n),
            cover_sampling: Sampling::default(),
            single_sampling: Sampling::default(),
            waits_sampling: Sampling::default(),
            delta_of: vec![0.0; n],
            wait_from: vec![Time::MAX; n],
            waits_total: 0.0,
            follow_waits: false,
            cascade_nodes: 0,
            cascade_ticks: 0,
            cascade_counts_steps: false,

            allowance: 0.0,
        })
    }

    /// Lower bound (>= 0) on what the unplaced jobs of `d` cost above their earliest starts
    /// `est` (indexed by job; `on[j * servers + s]` its earliest start on each server), at the
    /// root or at node number `node` of the search, where it helps prune a node whose bound is
    /// `needed` short of the incumbent. At a node, each part (the cover; the fixed starts with
    /// one delayed job; several waits) is evaluated as [`Sampling`] decides from how often it
    /// reached `needed`, the second only when it can reach it, the third only when not. The
    /// server searches share `budget` steps and stop when `stop` says so (asked every
    /// [`STOP_EVERY`] steps); out of steps, the jobs not yet examined count with their `delta`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn increment(
        &mut self,
        d: &mut Dispatcher,
        cost: &Cost,
        est: &[Time],
        on: &[Time],
        node: Option<u64>,
        needed: f64,
        budget: u64,
        stop: &mut dyn FnMut() -> bool,
    ) -> f64 {
        let want_cover = node.is_none_or(|n| self.cover_sampling.worthwhile_at(n, PRUNE_ONE_IN));
        let want_single = node.is_none_or(|n| self.single_sampling.worthwhile_at(n, PRUNE_ONE_IN));
        if !want_cover && !want_single {
            return 0.0;
        }
        self.steps = budget;
        self.follow_waits = node.is_none();
        let p = d.problem();
        self.jobs.clear();
        self.jobs.extend((0..p.jobs()).filter(|&j| !d.is_placed(j)));
        if self.jobs.len() < 2 || self.jobs.iter().any(|&j| est[j] == NO_FIT) {
            return 0.0;
        }
        self.collect_ends(d, est);
        for &j in &self.jobs {
            self.starts[j] = est[j];
        }
        let mut cover = 0.0;
        if want_cover {
            cover = self.cover(d, cost, est);
            if node.is_some() {
                self.cover_sampling.record(cover >= needed);
            }
        }
        if !want_single || (node.is_some() && cover >= needed) {
            return cover;
        }
        self.deltas.clear();
        let (mut low, mut second) = (f64::INFINITY, f64::INFINITY);
        for &j in &self.jobs {
            let first = self.first_end_after(j, est[j]);
            self.wait_from[j] = first;
            let delta = if first == Time::MAX {
                f64::INFINITY
            } else {
                cost.job(j, first) - cost.job(j, est[j])
            };
            self.deltas.push((delta, j));
            if delta < low {
                (low, second) = (delta, low);
            } else if delta < second {
                second = delta;
            }
        }
        let bound = low + second;
        if bound <= 0.0 {
            return cover;
        }
        if bound < needed {
            // One wait cannot reach `needed`; several may have to (part 5).
            if node.is_some_and(|n| !self.waits_sampling.worthwhile_at(n, PRUNE_ONE_IN)) {
                return cover;
            }
            for &(delta, j) in &self.deltas {
                self.delta_of[j] = delta;
            }
            self.fill_table(d.problem().servers(), est, on);
            let refuted = self.fits_with_waits(d, cost, needed, stop) == Fit::No;
            if node.is_some() {
                self.waits_sampling.record(refuted);
            }
            return if refuted { needed.max(cover) } else { cover };
        }
        self.deltas.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let single = self.single_delay(d, cost, est, on, bound, cover > 0.0, stop);
        if node.is_some() {
            self.single_sampling.record(single >= needed);
        }
        single.max(cover)
    }

    /// Parts 1-3 of the module docs: 0 if the fixed starts fit (unless `excess` already showed
    /// they do not), else the cheapest single delay that lets them fit, at most `bound` (the
    /// two smallest deltas).
    #[allow(clippy::too_many_arguments)]
    fn single_delay(
        &mut self,
        d: &mut Dispatcher,
        cost: &Cost,
        est: &[Time],
        on: &[Time],
        mut bound: f64,
        excess: bool,
        stop: &mut dyn FnMut() -> bool,
    ) -> f64 {
        self.fill_table(d.problem().servers(), est, on);
        if !excess && self.fits(d, None, stop) != Fit::No {
            return 0.0;
        }
        for i in 0..self.deltas.len() {
            let (delta, j) = self.deltas[i];
            if delta >= bound {
                break;
            }
            if self.steps == 0 {
                bound = delta;
                break;
            }
            let mut e = est[j];
            loop {
                e = self.next_candidate(j, e);
                if e == Time::MAX {
                    break;
                }
                let extra = cost.job(j, e) - cost.job(j, est[j]);
                if extra >= bound {
                    break;
                }
                self.starts[j] = e;
                let fit = self.fits(d, Some(j), stop);
                self.starts[j] = est[j];
                if fit != Fit::No {
                    bound = extra;
                    break;
                }
            }
        }
        bound
    }

    /// The instant cover: if at the start `t` of an unplaced job the jobs running then (all at
    /// their earliest starts) need `x` more of a resource than they can occupy at `t`
    /// ([`DelayBound::instant_need`]), jobs
    /// of at least `x` of it must not run at `t`, which for a job that would run at `t` means
    /// starting after `t`: at the first end after `t` or later. The cheapest such set is
    /// bounded below by its fractional knapsack (cheapest per unit of the resource first).
    /// The largest of these over instants and resources; 0 without an excess.
    fn cover(&mut self, d: &Dispatcher, cost: &Cost, est: &[Time]) -> f64 {
        let p = d.problem();
        let mut best: f64 = 0.0;
        for i in 0..self.jobs.len() {
            let t = est[self.jobs[i]];
            if self.jobs[..i].iter().any(|&k| est[k] == t) {
                continue;
            }
            self.instant_need(d, t);
            if !self.has_excess() {
                continue;
            }
            self.extra.clear();
            for g in 0..self.group.len() {
                let j = self.group[g];
                let first = self.first_end_after(j, t);
                self.extra.push(if first == Time::MAX {
                    f64::INFINITY
                } else {
                    cost.job(j, first) - cost.job(j, est[j])
                });
            }
            best = best.max(self.excess_cost(p));
        }
        best
    }

    /// Whether the jobs of `group` need more of some resource than they can occupy
    /// ([`DelayBound::fill_room`] filled both).
    fn has_excess(&self) -> bool {
        self.need.iter().zip(&self.room).any(|(n, r)| n > r)
    }

    /// The least cost of making room: for each resource the jobs of `group` need more of than
    /// they can occupy, jobs holding the excess start later, each at `extra` more (aligned
    /// with `group`); the fractional knapsack of the cheapest per unit, the largest over
    /// resources.
    fn excess_cost(&mut self, p: &Problem) -> f64 {
        let mut best: f64 = 0.0;
        for q in 0..p.resources() {
            let excess = (self.need[q] - self.room[q]) as f64;
            if excess <= 0.0 {
                continue;
            }
            self.items.clear();
            for (&j, &extra) in self.group.iter().zip(&self.extra) {
                let dq = p.demand(j)[q];
                if dq > 0 {
                    self.items.push((extra / dq as f64, dq as f64));
                }
            }
            best = best.max(cheapest_cover(&mut self.items, excess));
        }
        best
    }

    /// Fills `exact_ends` (running and placed jobs) and `unplaced_ends`.
    fn collect_ends(&mut self, d: &Dispatcher, est: &[Time]) {
        let p = d.problem();
        self.placed_ends.clear();
        self.placed_ends.extend(
            (0..p.jobs())
                .filter(|&k| d.is_placed(k))
                .map(|k| d.start(k) + p.walltime(k)),
        );
        self.placed_ends.sort_unstable();
        self.exact_ends.clear();
        let (mut a, mut b) = (0, 0);
        let (running, placed) = (&self.running_ends, &self.placed_ends);
        while a < running.len() || b < placed.len() {
            if b == placed.len() || (a < running.len() && running[a] <= placed[b]) {
                self.exact_ends.push(running[a]);
                a += 1;
            } else {
                self.exact_ends.push(placed[b]);
                b += 1;
            }
        }
        self.unplaced_ends.clear();
        self.unplaced_ends
            .extend(self.jobs.iter().map(|&k| (est[k] + p.walltime(k), k)));
        self.unplaced_ends.sort_unstable();
    }

    /// The earliest end after `t` of any job but `j`, unplaced jobs possibly delayed.
    fn first_end_after(&self, j: usize, t: Time) -> Time {
        let i = self.exact_ends.partition_point(|&e| e <= t);
        let mut first = self.exact_ends.get(i).copied().unwrap_or(Time::MAX);
        for &(e, k) in &self.unplaced_ends {
            if k != j {
                first = first.min(e.max(t + 1));
                break;
            }
        }
        first
    }

    /// The first end after `t` when every unplaced job but `j` starts at its earliest start
    /// (`Time::MAX` if none): the next candidate start of a delayed `j`.
    fn next_candidate(&self, j: usize, t: Time) -> Time {
        let a = self.exact_ends.partition_point(|&e| e <= t);
        let mut next = self.exact_ends.get(a).copied().unwrap_or(Time::MAX);
        let b = self.unplaced_ends.partition_point(|&(e, _)| e <= t);
        if let Some(&(e, _)) = self.unplaced_ends[b..].iter().find(|&&(_, k)| k != j) {
            next = next.min(e);
        }
        next
    }

    /// Fills `fit0` and `count0`: on which servers each unplaced job fits at its earliest start
    /// (where its earliest start on that server, `on[j * servers + s]`, is its earliest).
    fn fill_table(&mut self, servers: usize, est: &[Time], on: &[Time]) {
        for &j in &self.jobs {
            let row = &on[j * servers..(j + 1) * servers];
            let mut count = 0;
            for (s, &t) in row.iter().enumerate() {
                self.fit0[j * servers + s] = t == est[j];
                count += usize::from(t == est[j]);
            }
            self.count0[j] = count;
        }
    }

    /// Whether the unplaced jobs fit the servers of `d` at `starts`, which differ from the
    /// earliest starts of `fill_table` at most in job `moved` (`d` is left as it was).
    fn fits(
        &mut self,
        d: &mut Dispatcher,
        moved: Option<usize>,
        stop: &mut dyn FnMut() -> bool,
    ) -> Fit {
        if !self.take_step(stop) {
            return Fit::Unknown;
        }
        let servers = d.problem().servers();
        self.fit.copy_from_slice(&self.fit0);
        self.count.copy_from_slice(&self.count0);
        if let Some(j) = moved {
            let mut count = 0;
            for s in 0..servers {
                let fits = d.fits_at(j, s, self.starts[j]);
                self.fit[j * servers + s] = fits;
                count += usize::from(fits);
            }
            self.count[j] = count;
        }
        if self.jobs.iter().any(|&j| self.count[j] == 0) || self.waits_needed(d, None) > 0.0 {
            return Fit::No;
        }
        if self.witness_fits(d) {
            return Fit::Yes;
        }
        self.search_all(d, None, 0.0, stop)
    }

    /// Whether the last call ran out of steps or was stopped before it decided.
    pub(super) fn ran_out(&self) -> bool {
        self.steps == 0
    }

    /// Whether the cascades of part 5 spend the step budget of a call too, which bounds the
    /// call's work by its budget (for searches without a time limit, which must not depend on
    /// the clock); otherwise the clock (`stop`) bounds them.
    pub(super) fn bound_cascades(&mut self, by_steps: bool) {
        self.cascade_counts_steps = by_steps;
    }

    /// Spends one step of the budget (each call of `fits` and each node of the server search
    /// counts); `false` when none is left or `stop` says so (asked every [`STOP_EVERY`] steps).
    fn take_step(&mut self, stop: &mut dyn FnMut() -> bool) -> bool {
        if self.steps.is_multiple_of(STOP_EVERY) && stop() {
            self.steps = 0;
        }
        if self.steps == 0 {
            return false;
        }
        self.steps -= 1;
        true
    }

    /// Part 5 of the module docs: whether some set of jobs whose deltas sum to less than
    /// `allowance` can wait so that the others fit at their earliest starts (`No`: every such
    /// set fails, so the jobs cost at least `allowance` above their earliest starts).
    fn fits_with_waits(
        &mut self,
        d: &mut Dispatcher,
        cost: &Cost,
        allowance: f64,
        stop: &mut dyn FnMut() -> bool,
    ) -> Fit {
        self.fit.copy_from_slice(&self.fit0);
        self.count.copy_from_slice(&self.count0);
        self.search_all(d, Some(cost), allowance, stop)
    }

    /// The server search over every unplaced job from the table in `fit` and `count`; with
    /// `cost`, jobs may also wait, their waits costing less than `allowance` in all.
    fn search_all(
        &mut self,
        d: &mut Dispatcher,
        cost: Option<&Cost>,
        allowance: f64,
        stop: &mut dyn FnMut() -> bool,
    ) -> Fit {
        for &j in &self.jobs {
            self.assigned[j] = false;
        }
        self.lost.clear();
        self.allowance = allowance;
        self.waits_total = allowance;
        self.search(d, cost, self.jobs.len(), stop)
    }

    /// What waiting costs `j` at least, given the jobs in `d` (running, placed, and the
    /// unplaced ones the server search has fixed so far): it starts at the first end after its
    /// earliest start or later, at a time it fits beside them on some server. More jobs in `d`
    /// never make that start earlier, so the charge stays a lower bound as the search goes on.
    fn wait_charge(&self, d: &Dispatcher, cost: &Cost, j: usize) -> f64 {
        self.wait_start(d, j).map_or(f64::INFINITY, |t| {
            cost.job(j, t) - cost.job(j, self.starts[j])
        })
    }

    /// The earliest start of waiting job `j` beside the jobs in `d`: from the first end after
    /// its earliest start on, where it fits (`None`: nowhere).
    fn wait_start(&self, d: &Dispatcher, j: usize) -> Option<Time> {
        let from = self.wait_from[j];
        (from != Time::MAX)
            .then(|| Self::earliest_anywhere(d, j, from))
            .flatten()
    }

    /// A lower bound on the first end after `t` of any job at a complete assignment of part 5:
    /// the first change of a server's usage in `d` after `t`, or the end of a waiting job at
    /// its earliest start or later (`t + 1` when that is not after `t`).
    fn next_end_after(d: &Dispatcher, t: Time, waiting: &[(Time, usize)]) -> Time {
        let p = d.problem();
        let mut next = Time::MAX;
        for s in 0..p.servers() {
            let (times, _) = d.usage(s);
            if let Some(&x) = times.get(times.partition_point(|&x| x <= t)) {
                next = next.min(x);
            }
        }
        for &(start, k) in waiting {
            next = next.min((start + p.walltime(k)).max(t + 1));
        }
        next
    }

    /// The earliest start >= `from` of `j` on any server beside the jobs in `d`.
    fn earliest_anywhere(d: &Dispatcher, j: usize, from: Time) -> Option<Time> {
        (0..d.problem().servers())
            .filter_map(|s| d.earliest_on(j, s, from))
            .min()
    }

    /// At a complete assignment: whether the waiting jobs (assigned, not in `d`) can still
    /// start with their waits costing less than the search's allowance (`Yes`), cannot
    /// (`No`), or the search ran out of steps. Each starts at its earliest start beside every
    /// fixed job or later ([`DelayBound::wait_charge`]), and they must also find room beside
    /// each other ([`DelayBound::cascade`]).
    fn waits_affordable(
        &mut self,
        d: &mut Dispatcher,
        cost: &Cost,
        stop: &mut dyn FnMut() -> bool,
    ) -> Fit {
        let mut total = 0.0;
        let mut waiting = Vec::new();
        for &j in &self.jobs {
            if d.is_placed(j) {
                continue;
            }
            let Some(t) = self.wait_start(d, j) else {
                return Fit::No;
            };
            total += cost.job(j, t) - cost.job(j, self.starts[j]);
            waiting.push((t, j));
        }
        if total >= self.waits_total {
            return Fit::No;
        }
        self.cascade_nodes = CASCADE_NODES;
        match self.cascade(d, cost, waiting, total, stop) {
            Some(false) => Fit::No,
            // Out of time: unknown; out of this assignment's cascade nodes: counted as
            // affordable, and the server search goes on.
            None if self.steps == 0 => Fit::Unknown,
            _ => Fit::Yes,
        }
    }

    /// Whether the waiting jobs, each not before its start in `waiting`, can start with
    /// their waits costing less than the allowance in all, `spent` so far (`None`: out of
    /// steps). The earliest waiting jobs, all at `t`: those that start at `t` are given
    /// servers together beside the jobs in `d`; the others start at an end after `t` or
    /// later ([`DelayBound::next_end_after`]), where they fit; and so on, in time order.
    fn cascade(
        &mut self,
        d: &mut Dispatcher,
        cost: &Cost,
        waiting: Vec<(Time, usize)>,
        spent: f64,
        stop: &mut dyn FnMut() -> bool,
    ) -> Option<bool> {
        let Some(t) = waiting.iter().map(|w| w.0).min() else {
            return Some(true);
        };
        let next = Self::next_end_after(d, t, &waiting);
        let (group, rest): (Vec<_>, Vec<_>) = waiting.into_iter().partition(|w| w.0 == t);
        let group: Vec<usize> = group.into_iter().map(|w| w.1).collect();
        if group.len() >= 2
            && spent + self.group_cover(d, cost, t, next, &group) >= self.waits_total
        {
            return Some(false);
        }
        let mut deferred = Vec::with_capacity(group.len());
        let frame = Frame {
            t,
            next,
            group: &group,
            rest: &rest,
        };
        self.assign_group(d, cost, &frame, 0, &mut deferred, spent, 0.0, stop)
    }

    /// A lower bound on what the waiting jobs of `group`, all at their earliest start `t`,
    /// add by not all starting there: where they need more than they can occupy at `t`
    /// ([`DelayBound::fill_room`]), jobs holding the excess start from `next` on; the
    /// fractional knapsack of those extra costs, the largest over resources.
    fn group_cover(
        &mut self,
        d: &Dispatcher,
        cost: &Cost,
        t: Time,
        next: Time,
        group: &[usize],
    ) -> f64 {
        self.group.clear();
        self.group.extend_from_slice(group);
        self.fill_room(d, t);
        if !self.has_excess() {
            return 0.0;
        }
        self.extra.clear();
        for &j in group {
            self.extra.push(
                Self::earliest_anywhere(d, j, next)
                    .map_or(f64::INFINITY, |u| cost.job(j, u) - cost.job(j, t)),
            );
        }
        self.excess_cost(d.problem())
    }

    /// [`DelayBound::cascade`] at one instant, from the `i`-th job of the group on: it starts
    /// at `t` on a server where it fits, or waits (`deferred`). `spent` is what the waits cost
    /// up to `t`, `pending` a lower bound on what the deferred jobs add.
    #[allow(clippy::too_many_arguments)]
    fn assign_group(
        &mut self,
        d: &mut Dispatcher,
        cost: &Cost,
        frame: &Frame,
        i: usize,
        deferred: &mut Vec<usize>,
        spent: f64,
        pending: f64,
        stop: &mut dyn FnMut() -> bool,
    ) -> Option<bool> {
        if spent + pending >= self.waits_total {
            return Some(false);
        }
        if self.cascade_nodes == 0 || (self.cascade_counts_steps && self.steps == 0) {
            return None;
        }
        self.cascade_nodes -= 1;
        if self.cascade_counts_steps {
            self.steps -= 1;
        }
        self.cascade_ticks += 1;
        if self.cascade_ticks.is_multiple_of(STOP_EVERY) && stop() {
            self.steps = 0;
            self.cascade_nodes = 0;
            return None;
        }
        let t = frame.t;
        if i == frame.group.len() {
            let mut waiting = frame.rest.to_vec();
            let mut spent = spent;
            for &j in deferred.iter() {
                let Some(u) = Self::earliest_anywhere(d, j, frame.next) else {
                    return Some(false);
                };
                spent += cost.job(j, u) - cost.job(j, t);
                waiting.push((u, j));
            }
            if spent >= self.waits_total {
                return Some(false);
            }
            return self.cascade(d, cost, waiting, spent, stop);
        }
        let j = frame.group[i];
        let mut result = Some(false);
        for s in 0..d.problem().servers() {
            if !d.fits_at(j, s, t) || (0..s).any(|a| d.same_from(a, s, t)) {
                continue;
            }
            d.place_at(
                j,
                Placement {
                    start: t,
                    server: s,
                },
            );
            let r = self.assign_group(d, cost, frame, i + 1, deferred, spent, pending, stop);
            d.undo();
            match r {
                Some(false) => {}
                None => return None,
                Some(true) => return Some(true),
            }
        }
        // j waits: at least until it fits from the next end on, beside the jobs in `d` now.
        let later = Self::earliest_anywhere(d, j, frame.next)
            .map_or(f64::INFINITY, |u| cost.job(j, u) - cost.job(j, t));
        if spent + pending + later < self.waits_total {
            deferred.push(j);
            let r = self.assign_group(
                d,
                cost,
                frame,
                i + 1,
                deferred,
                spent,
                pending + later,
                stop,
            );
            deferred.pop();
            result = r;
        }
        result
    }

    /// Whether the servers of the last assignment found still hold every unplaced job at its
    /// start (placed in turn; `d` is left as it was). Successive nodes of branch and bound
    /// differ by one placement, so this usually answers "they fit" without a search.
    fn witness_fits(&mut self, d: &mut Dispatcher) -> bool {
        let mut placed = 0;
        for &j in &self.jobs {
            let s = self.witness[j];
            if s == usize::MAX || !d.fits_at(j, s, self.starts[j]) {
                break;
            }
            d.place_at(
                j,
                Placement {
                    start: self.starts[j],
                    server: s,
                },
            );
            placed += 1;
        }
        for _ in 0..placed {
            d.undo();
        }
        placed == self.jobs.len()
    }

    fn search(
        &mut self,
        d: &mut Dispatcher,
        cost: Option<&Cost>,
        left: usize,
        stop: &mut dyn FnMut() -> bool,
    ) -> Fit {
        if left == 0 {
            if let (true, Some(c)) = (self.follow_waits, cost) {
                match self.waits_affordable(d, c, stop) {
                    Fit::Yes => {}
                    other => return other,
                }
            }
            for &j in &self.jobs {
                self.witness[j] = d.server(j);
            }
            return Fit::Yes;
        }
        if !self.take_step(stop) {
            return Fit::Unknown;
        }
        // At the root the search also stops where the jobs still to assign cannot all start
        // at their fixed starts: without waits, at any excess; with waits, where making room
        // costs at least what the waiting ones, charged beside the jobs fixed so far, leave.
        let cut = self.follow_waits
            && match cost {
                None => self.waits_needed(d, None) > 0.0,
                Some(c) => {
                    let left = self.waits_total - self.waits_charged(d, c);
                    left <= 0.0 || self.waits_needed(d, Some(left)) >= left
                }
            };
        if cut {
            return Fit::No;
        }
        let (j, from) = self.most_constrained(d);
        let servers = d.problem().servers();
        let t = self.starts[j];
        let mut result = Fit::No;
        for s in 0..servers {
            if !self.fit[j * servers + s]
                || (0..s).any(|a| self.fit[j * servers + a] && d.same_from(a, s, from))
            {
                continue;
            }
            d.place_at(
                j,
                Placement {
                    start: t,
                    server: s,
                },
            );
            self.assigned[j] = true;
            let mark = self.lost.len();
            let fit = if self.narrow(d, s) {
                self.search(d, cost, left - 1, stop)
            } else {
                Fit::No
            };
            self.restore(mark, servers);
            self.assigned[j] = false;
            d.undo();
            if fit != Fit::No {
                return fit;
            }
        }
        let Some(c) = cost else {
            return result;
        };
        let charge = if self.delta_of[j] >= self.allowance {
            f64::INFINITY
        } else if self.follow_waits {
            self.wait_charge(d, c, j)
        } else {
            self.delta_of[j]
        };
        if charge < self.allowance {
            // j waits: it leaves the fixed starts (and its room to the others), at least to a
            // time it fits beside the jobs fixed so far.
            let allowance = self.allowance;
            self.allowance -= charge;
            self.assigned[j] = true;
            result = self.search(d, cost, left - 1, stop);
            self.assigned[j] = false;
            self.allowance = allowance;
        }
        result
    }

    /// What the waiting jobs (assigned by the server search but not in `d`) cost at least
    /// beside the jobs fixed so far ([`DelayBound::wait_charge`]).
    fn waits_charged(&self, d: &Dispatcher, cost: &Cost) -> f64 {
        let mut total = 0.0;
        for &j in &self.jobs {
            if self.assigned[j] && !d.is_placed(j) {
                total += self.wait_charge(d, cost, j);
            }
        }
        total
    }

    /// A lower bound on what the jobs the server search has not yet assigned cost in waits:
    /// at the start `t` of one of them, those running then (at `starts`) may need more than
    /// they can occupy beside the jobs in `d` ([`DelayBound::fill_room`]); jobs holding the
    /// excess then wait, each costing at least its delta (the fractional knapsack of
    /// [`DelayBound::excess_cost`]). Waiting jobs followed to where they fit are not in `d`,
    /// which only leaves more room. The largest over instants, stopping once it reaches
    /// `enough`; with `enough` `None` (no waits allowed), infinite at any excess.
    fn waits_needed(&mut self, d: &Dispatcher, enough: Option<f64>) -> f64 {
        let p = d.problem();
        let mut best: f64 = 0.0;
        for i in 0..self.jobs.len() {
            let j = self.jobs[i];
            let t = self.starts[j];
            if self.assigned[j]
                || self.jobs[..i]
                    .iter()
                    .any(|&k| !self.assigned[k] && self.starts[k] == t)
            {
                continue;
            }
            self.instant_need(d, t);
            if !self.has_excess() {
                continue;
            }
            let Some(enough) = enough else {
                return f64::INFINITY;
            };
            self.extra.clear();
            self.extra
                .extend(self.group.iter().map(|&k| self.delta_of[k]));
            best = best.max(self.excess_cost(p));
            if best >= enough {
                break;
            }
        }
        best
    }

    /// At instant `t`, fills `need` with the demand of the unplaced jobs running then (at
    /// `starts`) that the server search has not assigned (outside a search, none is) and
    /// `room` with the most of each resource they can occupy together
    /// ([`DelayBound::fill_room`]).
    fn instant_need(&mut self, d: &Dispatcher, t: Time) {
        let p = d.problem();
        self.group.clear();
        for &j in &self.jobs {
            if !self.assigned[j] && self.starts[j] <= t && t < self.starts[j] + p.walltime(j) {
                self.group.push(j);
            }
        }
        self.fill_room(d, t);
    }

    /// Fills `need` with the demand of the jobs in `group` and `room` with the most of each
    /// resource they can occupy together at instant `t` beside the jobs in `d`: on each
    /// server, its free capacity at `t`, but no more than the demand of those of them that
    /// fit in it alone. A server whose free cores come without free memory holds none.
    fn fill_room(&mut self, d: &Dispatcher, t: Time) {
        let p = d.problem();
        let r = p.resources();
        self.need.fill(0);
        self.room.fill(0);
        for &j in &self.group {
            for (q, dq) in p.demand(j).iter().enumerate() {
                self.need[q] += dq;
            }
        }
        for s in 0..p.servers() {
            let (times, usage) = d.usage(s);
            let k = times.partition_point(|&x| x <= t) - 1;
            let used = &usage[k * r..(k + 1) * r];
            let capacity = p.capacity(s);
            self.fitting.fill(0);
            for &j in &self.group {
                let demand = p.demand(j);
                if (0..r).all(|q| used[q] + demand[q] <= capacity[q]) {
                    for (f, dq) in self.fitting.iter_mut().zip(demand) {
                        *f += dq;
                    }
                }
            }
            for q in 0..r {
                self.room[q] += (capacity[q] - used[q]).min(self.fitting[q]);
            }
        }
    }

    /// After a placement on server `s`: the unassigned jobs that no longer fit `s` at their
    /// start lose it (recorded in `lost`); `false` if one of them has no server left.
    fn narrow(&mut self, d: &Dispatcher, s: usize) -> bool {
        let servers = d.problem().servers();
        let mut alive = true;
        for &k in &self.jobs {
            if self.assigned[k] || !self.fit[k * servers + s] || d.fits_at(k, s, self.starts[k]) {
                continue;
            }
            self.fit[k * servers + s] = false;
            self.count[k] -= 1;
            self.lost.push((k, s));
            alive &= self.count[k] > 0 || self.delta_of[k] < self.allowance;
        }
        alive
    }

    /// Gives back the servers lost since `lost` had `mark` entries.
    fn restore(&mut self, mark: usize, servers: usize) {
        for &(k, s) in &self.lost[mark..] {
            self.fit[k * servers + s] = true;
            self.count[k] += 1;
        }
        self.lost.truncate(mark);
    }

    /// The unassigned job with the fewest servers it fits at its start (ties: the larger first
    /// demand, then the lower index), and the earliest start still to come: of the unassigned
    /// jobs, and of the waiting ones when they are followed to where they fit.
    fn most_constrained(&self, d: &Dispatcher) -> (usize, Time) {
        let p = d.problem();
        let mut best = (usize::MAX, usize::MAX);
        let mut from = Time::MAX;
        for &j in &self.jobs {
            if self.assigned[j] {
                // A waiting job followed to where it fits starts from its first end on: two
                // servers are interchangeable only from the earliest start still to come.
                if self.follow_waits && !d.is_placed(j) {
                    from = from.min(self.wait_from[j]);
                }
                continue;
            }
            from = from.min(self.starts[j]);
            let count = self.count[j];
            let better = best.1 == usize::MAX
                || count < best.0
                || (count == best.0 && p.demand(j)[0] > p.demand(best.1)[0]);
            if better {
                best = (count, j);
            }
        }
        (best.1, from)
    }
}

/// The fractional knapsack: the least cost of `excess` units from `items` (cost per unit,
/// units), cheapest first; infinite when they hold less than `excess`. Sorts `items`.
fn cheapest_cover(items: &mut [(f64, f64)], mut excess: f64) -> f64 {
    items.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let mut cost = 0.0;
    for &(per_unit, units) in items.iter() {
        let take = units.min(excess);
        cost += per_unit * take;
        excess -= take;
        if excess <= 0.0 {
            return cost;
        }
    }
    f64::INFINITY
}

#[cfg(test)]
mod tests {
    use super::DelayBound;
    use crate::bnb::testing::{earliest_starts, problem};
    use crate::brute::brute_force;
    use crate::cost::Cost;
    use schedlm_generator::Family;
    use schedlm_model::{dispatch, Dispatcher, Objective, Problem, Time, Variant};

    /// Two jobs that each fit alone at `now` but not together (only one server has room for
    /// either, though both servers together have room for both, so the energy bound sees no
    /// conflict): the earliest-start bound misses the wait of one of them, the delay bound
    /// charges the cheaper wait (the long job's, until the short one ends), which is the
    /// optimum: proven at the root.
    #[test]
    fn proves_a_forced_wait_at_the_root() {
        let instance: schedlm_model::Instance = serde_json::from_str(
            r#"{"now": 0, "resources": ["cores"],
                "servers": [{"id": "n0", "capacity": [4]}, {"id": "n1", "capacity": [4]}],
                "running": [{"id": "r0", "server": "n0", "demand": [1], "end": 10000},
                            {"id": "r1", "server": "n1", "demand": [3], "end": 10000}],
                "queue": [{"id": "long", "submit": 0, "demand": [2], "walltime": 1000},
                          {"id": "short", "submit": 0, "demand": [2], "walltime": 100}]}"#,
        )
        .expect("valid JSON");
        let p = schedlm_model::Problem::new(&instance).expect("valid instance");
        let out = crate::bnb::solve(
            &p,
            Objective::Bsld,
            Variant::Serial,
            &crate::bnb::BnbOptions::default(),
        );
        // short first: bsld 1 and (100 + 1000) / 1000 = 1.1.
        assert!((out.value - 1.05).abs() < 1e-12, "{}", out.value);
        assert!(out.proven_optimal());
        assert_eq!(out.nodes, 1, "not proven at the root");
    }

    /// Soundness against brute force: at the root and after every prefix of an optimal order,
    /// the placed jobs' cost, the earliest-start bound and the increment never pass the
    /// optimum; and the dispatcher is left as it was.
    #[test]
    fn never_passes_the_optimum() {
        let (mut lifted, mut cases) = (0, 0);
        for family in [Family::Uniform, Family::Hpc, Family::Dl] {
            for servers in [1, 2, 3] {
                for load in [None, Some(0.6), Some(0.9)] {
                    for objective in [Objective::Bsld, Objective::Wait, Objective::Flow] {
                        for index in 0..8 {
                            let p = problem(family, 0.0, servers, load, index);
                            let case = format!(
                                "{family:?} servers={servers} load={load:?} {objective:?} #{index}"
                            );
                            let (l, c) = check_against_brute_force(&p, objective, &case);
                            lifted += l;
                            cases += c;
                        }
                    }
                }
            }
        }
        // Not vacuous: the bound rises above the earliest starts on a share of the nodes.
        assert!(lifted * 20 > cases, "lifted on {lifted} of {cases} nodes");
    }

    /// Two servers identical from the unfixed jobs' earliest start on are not identical for a
    /// waiting job that starts before it: `w` (100 s) must follow `x` on n0 at 5 while `j`
    /// takes n1 at 10 (optimal, flow 5 s above the earliest starts); merging n0 and n1 for `j`
    /// would leave `w` only n1 at 10 and refute the optimum. (Found in review.)
    #[test]
    fn a_waiting_job_keeps_servers_apart() {
        let instance: schedlm_model::Instance = serde_json::from_str(
            r#"{"now": 0, "resources": ["a", "b"],
                "servers": [{"id": "n0", "capacity": [2, 1]}, {"id": "n1", "capacity": [2, 1]},
                            {"id": "n2", "capacity": [1, 0]}],
                "running": [{"id": "r0", "server": "n0", "demand": [0, 1], "end": 10},
                            {"id": "r1", "server": "n1", "demand": [2, 1], "end": 10},
                            {"id": "r2", "server": "n2", "demand": [1, 0], "end": 7}],
                "queue": [{"id": "x", "submit": 0, "demand": [2, 0], "walltime": 5},
                          {"id": "w", "submit": 0, "demand": [2, 0], "walltime": 100},
                          {"id": "j", "submit": 0, "demand": [2, 1], "walltime": 50,
                           "weight": 1000},
                          {"id": "z", "submit": 0, "demand": [1, 0], "walltime": 3}]}"#,
        )
        .expect("valid JSON");
        let p = Problem::new(&instance).expect("valid instance");
        check_against_brute_force(&p, Objective::Flow, "review case");
    }

    /// At the root and after every prefix of an optimal order of `p`: the placed jobs' cost,
    /// the earliest-start bound and the increment (asked for nothing, and asked to reach what
    /// would prune that prefix, at a node and at the root, with ample and with exhausted step
    /// budgets) never pass the optimum, and the dispatcher is left as it was. Returns on how
    /// many of the prefixes the increment was positive, and how many there were.
    fn check_against_brute_force(p: &Problem, objective: Objective, case: &str) -> (usize, usize) {
        let (mut lifted, mut cases) = (0, 0);
        let (order, best) = brute_force(p, objective, Variant::Serial);
        let cost = Cost::new(p, objective);
        let optimum = cost.total(best);
        let eps = 1e-9 * optimum.abs().max(1.0);
        let schedule = dispatch(p, &order, Variant::Serial).expect("valid order");
        let mut bound = DelayBound::new(p).expect("no queued deps");
        let mut d = Dispatcher::new(p, Variant::Serial);
        let mut placed = 0.0;
        for (k, &j) in schedule.order.iter().enumerate() {
            let est = earliest_starts(p, &d, Variant::Serial);
            let on: Vec<Time> = (0..p.jobs())
                .flat_map(|j| (0..p.servers()).map(move |s| (j, s)))
                .map(|(j, s)| d.earliest_on(j, s, p.released(j)).unwrap_or(Time::MAX))
                .collect();
            let base: f64 = (0..p.jobs())
                .filter(|&i| !d.is_placed(i))
                .map(|i| cost.job(i, est[i]))
                .sum();
            let before = d.schedule();
            let reach = optimum - placed - base + 2.0 * eps;
            let mut extra: f64 = 0.0;
            // `None`: the root's form, which also follows the waiting jobs to where they fit.
            for (node, needed, budget) in [
                (None, 0.0, 1 << 20),
                (Some(k as u64), reach, 1 << 20),
                (None, reach, 1 << 20),
                (None, 0.0, 3),
                (Some(k as u64), reach, 3),
                (None, reach, 3),
            ] {
                let e =
                    bound.increment(&mut d, &cost, &est, &on, node, needed, budget, &mut || {
                        false
                    });
                extra = extra.max(e);
            }
            assert_eq!(d.schedule(), before, "{case}: dispatcher changed");
            assert!(
                placed + base + extra <= optimum + eps,
                "{case}, after {k} placements: {placed} + {base} + {extra} > optimum {optimum}"
            );
            lifted += usize::from(extra > 0.0);
            cases += 1;
            let at = d.earliest(j);
            assert_eq!(at.start, schedule.start[j]);
            d.place_at(j, at);
            placed += cost.job(j, at.start);
        }
        (lifted, cases)
    }
}
