//! Propagation reasoning for the makespan: a test that no completion of a partial schedule can
//! finish every queued job by a horizon `T`, and the destructive lower bound built on it.
//!
//! Given `T`, each unplaced job `j` must run inside its window `[est_j, lct_j)`: `est_j` is its
//! earliest start on the partial schedule (which never gets earlier as more jobs are placed),
//! and `lct_j = T - tail_j`, where `tail_j` is the longest chain of walltimes of the queued jobs
//! that depend on `j`, directly or not. In any interval `[t1, t2)` the job then uses at least
//! its *minimal intersection* `min(t2 - t1, p_j, ect_j - t1, t2 - lst_j)` (when positive) times
//! its demand, whichever way it is placed in its window. If, in some resource, the unplaced
//! jobs need more energy in an interval than the servers have free there (capacity pooled over
//! servers, minus the running and placed jobs), no schedule meets `T`, and so no order does:
//! every order's schedule is a schedule. The intervals tried are Baptiste's: `t1` among the
//! jobs' `est`, `lst` and `ect`, `t2` among their `lct`, `ect` and `lst` (Baptiste, Le Pape and
//! Nuijten, *Constraint-Based Scheduling*, 2001, ch. 3).
//!
//! On one server, the jobs of each clique of pairwise-conflicting jobs (`jackson.rs`) run one
//! at a time: the preemptive one-machine schedule with heads `est` and tails `T - lct` must
//! meet `T` (overload), and edge finding (for a task interval `O` of the clique and a member
//! `i` outside it: when `O` and `i` cannot all end by `O`'s latest completion, `i` ends after
//! all of `O`; symmetrically before) tightens the windows. With them the root bound of
//! PSPLIB j309_1 rose from 75 to 83 (its optimum, proven in 0.3 s instead of not in 10 s).
//!
//! A horizon proven infeasible is a proof that the optimum is later, whatever the test says of
//! other horizons, so the destructive bound (Klein and Scholl, 1999) may search the horizons
//! by bisection: the latest horizon found infeasible, plus one, is a lower bound. At the root a
//! second bisection adds *shaving*: each job's start is tried in the first (last) half of its
//! window, then, when that is not refuted, a quarter, down to a sixteenth, and a part that
//! propagation refutes is cut off (a proof by cases: the job starts in the rest); passes repeat
//! while a window narrows. It runs while the search's time limit allows (always without one),
//! costs 10-300 ms on j30, and raised the root bounds of PSPLIB j305_3 from 61 to 67 (optimum
//! 76) and of j3025_1 from 83 to 91 (optimum 93). Branch and bound repeats the shaved test at
//! shallow nodes (`SHAVED_LEVELS`).

use schedlm_model::{Dispatcher, Problem, Time};

use super::jackson::{Jackson, Member};

/// Most rounds of propagation per test (each round only shrinks windows; the limit only keeps
/// a pathological instance from looping long, it never makes the test unsound).
const MAX_ROUNDS: usize = 32;

/// Most trials on each end of one job's window per shaving pass.
const SHAVE_STEPS: usize = 6;

/// Shaving tries the first (last) half of a window, and after a trial that refutes nothing, a
/// quarter, an eighth, down to this fraction.
const SHAVE_FINEST: Time = 16;

/// Most shaving passes over the jobs (a pass is repeated while it narrows some window).
/// PSPLIB j3025_1's root bound: 83 with one pass of halvings, 91 with these (optimum 93).
const SHAVE_PASSES: usize = 10;

/// What one shaving trial did.
enum Shaved {
    /// The whole window is refuted: so is the horizon.
    Refuted,
    /// Half of the window was cut off.
    Narrowed,
    /// Nothing was learnt.
    Kept,
}

/// The scratch of the test, sized once per search (nothing is allocated per test).
pub(super) struct Propagation {
    /// Longest chain of walltimes of the jobs that depend on each job (0 without dependents).
    tail: Vec<Time>,
    topo: Vec<usize>,
    /// Bit i of `conflict[j]` when queued jobs i and j can never overlap (one server only).
    conflict: Vec<u128>,
    /// Total capacity per resource, pooled over servers.
    capacity: Vec<i64>,
    /// Window of each job in the current test: earliest start and latest completion.
    est: Vec<Time>,
    lct: Vec<Time>,
    /// The unplaced jobs of the current test.
    open: Vec<usize>,
    starts: Vec<Time>,
    ends: Vec<Time>,
    times: Vec<Time>,
    usage: Vec<i64>,
    /// free[k * R + q]: free energy of resource `q` from `times[0]` to `times[k]`.
    free: Vec<i128>,
    need: Vec<i128>,
    /// Timetable: segment breakpoints and the capacity left in each segment by the running
    /// and placed jobs and the compulsory parts of the unplaced ones.
    seg: Vec<Time>,
    avail: Vec<i64>,
    /// Shaving: the windows before a trial.
    saved_est: Vec<Time>,
    saved_lct: Vec<Time>,
    /// Cliques of conflicting jobs (bit sets; one server only) for the one-machine test.
    cliques: Vec<u128>,
    jackson: Jackson,
    members: Vec<Member>,
    in_clique: Vec<usize>,
    /// The horizon of the current test.
    horizon: Time,
    /// Propagations run, and those run while shaving.
    fixpoints: u64,
    shaving_work: u64,
}

impl Propagation {
    pub(super) fn new(problem: &Problem, conflict: &[u128], cliques: &[u128]) -> Propagation {
        let n = problem.jobs();
        let r = problem.resources();
        Propagation {
            tail: problem.tails(),
            topo: problem.topological_order(),
            conflict: conflict.to_vec(),
            capacity: (0..r)
                .map(|q| (0..problem.servers()).map(|s| problem.capacity(s)[q]).sum())
                .collect(),
            est: vec![0; n],
            lct: vec![0; n],
            open: Vec::with_capacity(n),
            starts: Vec::with_capacity(3 * n),
            ends: Vec::with_capacity(3 * n),
            times: Vec::new(),
            usage: Vec::new(),
            free: Vec::new(),
            need: vec![0; r],
            seg: Vec::new(),
            avail: Vec::new(),
            saved_est: vec![0; n],
            saved_lct: vec![0; n],
            cliques: cliques.to_vec(),
            jackson: Jackson::default(),
            members: Vec::with_capacity(n),
            in_clique: Vec::with_capacity(n),
            horizon: 0,
            fixpoints: 0,
            shaving_work: 0,
        }
    }

    /// Whether no completion of the dispatcher's partial schedule finishes every unplaced job
    /// by `horizon` (absolute time), given each unplaced job's earliest start `est[j]`
    /// (`Time::MAX` when it fits no server: then nothing is concluded). `false` means only that
    /// this test finds no contradiction.
    pub(super) fn refutes(
        &mut self,
        problem: &Problem,
        d: &Dispatcher,
        est: &[Time],
        horizon: Time,
        energetic: bool,
    ) -> bool {
        if let Some(known) = self.load(problem, d, est, horizon) {
            return known;
        }
        self.fixpoint(problem, d) || (energetic && self.energy_overload(problem))
    }

    /// [`Propagation::refutes`] at the root, with the energetic check and shaving: each job's
    /// start is tried in the first half of what is left of its window, and when propagation
    /// refutes that, the window loses that half (at most [`SHAVE_STEPS`] halvings per job).
    /// `stop` is asked before each job's trials; when it says stop, the test ends without a
    /// refutation (never an unsound answer).
    pub(super) fn refutes_shaved(
        &mut self,
        problem: &Problem,
        d: &Dispatcher,
        est: &[Time],
        horizon: Time,
        stop: &mut dyn FnMut() -> bool,
    ) -> bool {
        if let Some(known) = self.load(problem, d, est, horizon) {
            return known;
        }
        self.fixpoint(problem, d) || self.shave(problem, d, stop) || self.energy_overload(problem)
    }

    /// Sets the windows of the unplaced jobs for `horizon`: `Some(true)` when a placed job
    /// already ends after it, `Some(false)` when there is nothing to test, `None` otherwise.
    fn load(
        &mut self,
        problem: &Problem,
        d: &Dispatcher,
        est: &[Time],
        horizon: Time,
    ) -> Option<bool> {
        self.open.clear();
        self.horizon = horizon;
        for (j, &earliest) in est.iter().enumerate().take(problem.jobs()) {
            if d.is_placed(j) {
                if d.start(j) + problem.walltime(j) > horizon {
                    return Some(true);
                }
                continue;
            }
            if earliest == Time::MAX {
                return Some(false);
            }
            self.est[j] = earliest;
            self.lct[j] = horizon - self.tail[j];
            self.open.push(j);
        }
        if self.open.is_empty() {
            return Some(false);
        }
        d.pooled_usage(&mut self.times, &mut self.usage);
        None
    }

    /// Propagates dependencies, the timetable and disjunctive pairs until nothing changes;
    /// whether a window emptied (the horizon is refuted).
    fn fixpoint(&mut self, problem: &Problem, d: &Dispatcher) -> bool {
        self.fixpoints += 1;
        for _ in 0..MAX_ROUNDS {
            let mut changed = match self.precedences(problem, d) {
                Some(c) => c,
                None => return true,
            };
            match self.timetable(problem) {
                Some(c) => changed |= c,
                None => return true,
            }
            match self.pairs(problem) {
                Some(c) => changed |= c,
                None => return true,
            }
            if self.one_machine_overload(problem) {
                return true;
            }
            match self.edge_finding(problem) {
                Some(c) => changed |= c,
                None => return true,
            }
            if !changed {
                return false;
            }
        }
        false
    }

    /// Shaving (see [`Propagation::refutes_shaved`]), from both ends of each window; whether
    /// the horizon is refuted.
    fn shave(&mut self, problem: &Problem, d: &Dispatcher, stop: &mut dyn FnMut() -> bool) -> bool {
        let before = self.fixpoints;
        for _ in 0..SHAVE_PASSES {
            let mut narrowed = false;
            for a in 0..self.open.len() {
                if stop() {
                    return false;
                }
                let j = self.open[a];
                for early in [true, false] {
                    let mut part = 2;
                    for _ in 0..SHAVE_STEPS {
                        match self.shave_once(problem, d, j, early, part) {
                            Shaved::Refuted => {
                                self.shaving_work += self.fixpoints - before;
                                return true;
                            }
                            Shaved::Narrowed => narrowed = true,
                            Shaved::Kept if part < SHAVE_FINEST => part *= 2,
                            Shaved::Kept => break,
                        }
                    }
                }
            }
            if !narrowed {
                break;
            }
        }
        self.shaving_work += self.fixpoints - before;
        false
    }

    /// Propagations spent shaving so far.
    pub(super) fn shaving_work(&self) -> u64 {
        self.shaving_work
    }

    /// One trial: whether `j` can start in the first (`early`) or last `1 / part` of what is
    /// left of its start window; when propagation refutes it, the window loses that part.
    fn shave_once(
        &mut self,
        problem: &Problem,
        d: &Dispatcher,
        j: usize,
        early: bool,
        part: Time,
    ) -> Shaved {
        let p = problem.walltime(j);
        let (e, lst) = (self.est[j], self.lct[j] - p);
        if e >= lst {
            return Shaved::Kept;
        }
        let width = ((lst - e + 1) / part).max(1);
        // Trial: start in [e, e + width - 1] (early) or in [lst - width + 1, lst].
        let (cut_low, cut_high) = (e + width - 1, lst - width + 1);
        self.saved_est.clone_from(&self.est);
        self.saved_lct.clone_from(&self.lct);
        if early {
            self.lct[j] = cut_low + p;
        } else {
            self.est[j] = cut_high;
        }
        let refuted = self.fixpoint(problem, d);
        self.est.clone_from(&self.saved_est);
        self.lct.clone_from(&self.saved_lct);
        if !refuted {
            return Shaved::Kept;
        }
        if early {
            self.est[j] = cut_low + 1;
        } else {
            self.lct[j] = cut_high - 1 + p;
        }
        if self.fixpoint(problem, d) {
            Shaved::Refuted
        } else {
            Shaved::Narrowed
        }
    }

    /// Whether job `j`'s window is too short for it.
    fn empty(&self, problem: &Problem, j: usize) -> bool {
        self.est[j] + problem.walltime(j) > self.lct[j]
    }

    /// Pushes earliest starts forward along dependencies and latest completions backward.
    /// `None` when a window empties; otherwise whether anything changed.
    fn precedences(&mut self, problem: &Problem, d: &Dispatcher) -> Option<bool> {
        let mut changed = false;
        for &j in &self.topo {
            if d.is_placed(j) {
                continue;
            }
            for &dep in problem.deps(j) {
                if !d.is_placed(dep) && self.est[dep] + problem.walltime(dep) > self.est[j] {
                    self.est[j] = self.est[dep] + problem.walltime(dep);
                    changed = true;
                }
            }
        }
        for &k in self.topo.iter().rev() {
            if d.is_placed(k) {
                continue;
            }
            for &dep in problem.deps(k) {
                if !d.is_placed(dep) && self.lct[k] - problem.walltime(k) < self.lct[dep] {
                    self.lct[dep] = self.lct[k] - problem.walltime(k);
                    changed = true;
                }
            }
        }
        if self.open.iter().any(|&j| self.empty(problem, j)) {
            return None;
        }
        Some(changed)
    }

    /// Timetabling: each job must fit beside the running and placed jobs and the compulsory
    /// parts `[lst, ect)` of the other unplaced jobs; its earliest start moves to the first
    /// place where it does, its latest completion to the last. `None` when a window empties.
    fn timetable(&mut self, problem: &Problem) -> Option<bool> {
        self.build_timetable(problem);
        let mut changed = false;
        for i in 0..self.open.len() {
            let j = self.open[i];
            let p = problem.walltime(j);
            let (e, l) = (self.est[j], self.lct[j]);
            let start = self.earliest_fit(problem, j, e, l)?;
            let end = self.latest_fit(problem, j, start, l)?;
            if start != e || end != l {
                self.est[j] = start;
                self.lct[j] = end;
                changed = true;
            }
            if start + p > end {
                return None;
            }
        }
        Some(changed)
    }

    /// Fills `seg` and `avail` from the pooled usage and the compulsory parts of the windows.
    fn build_timetable(&mut self, problem: &Problem) {
        let r = problem.resources();
        self.seg.clear();
        self.seg.extend_from_slice(&self.times);
        for &j in &self.open {
            let (lst, ect) = (
                self.lct[j] - problem.walltime(j),
                self.est[j] + problem.walltime(j),
            );
            if lst < ect {
                self.seg.extend([lst, ect]);
            }
        }
        self.seg.sort_unstable();
        self.seg.dedup();
        self.avail.clear();
        let mut k = 0;
        for i in 0..self.seg.len() {
            let t = self.seg[i];
            while k + 1 < self.times.len() && self.times[k + 1] <= t {
                k += 1;
            }
            for q in 0..r {
                self.avail.push(self.capacity[q] - self.usage[k * r + q]);
            }
        }
        for &j in &self.open {
            let (lst, ect) = (
                self.lct[j] - problem.walltime(j),
                self.est[j] + problem.walltime(j),
            );
            if lst >= ect {
                continue;
            }
            let first = self.seg.partition_point(|&t| t < lst);
            let last = self.seg.partition_point(|&t| t < ect);
            for i in first..last {
                for q in 0..r {
                    self.avail[i * r + q] -= problem.demand(j)[q];
                }
            }
        }
    }

    /// Whether job `j` fits segment `i` of the timetable (its own compulsory part given back).
    fn fits_segment(&self, problem: &Problem, j: usize, i: usize) -> bool {
        let r = problem.resources();
        let p = problem.walltime(j);
        let (lst, ect) = (self.lct[j] - p, self.est[j] + p);
        let own = lst <= self.seg[i] && self.seg.get(i + 1).is_some_and(|&t| t <= ect);
        (0..r).all(|q| {
            let d = problem.demand(j)[q];
            d <= self.avail[i * r + q] + if own { d } else { 0 }
        })
    }

    /// The earliest start >= `from` at which `j` fits the timetable and ends by `lct`.
    fn earliest_fit(&self, problem: &Problem, j: usize, from: Time, lct: Time) -> Option<Time> {
        let p = problem.walltime(j);
        let mut start = from;
        let mut i = self.seg.partition_point(|&t| t <= start).saturating_sub(1);
        while i < self.seg.len() && self.seg[i] < start + p {
            if !self.fits_segment(problem, j, i) {
                start = match self.seg.get(i + 1) {
                    Some(&t) => t,
                    None => return None,
                };
            }
            if start + p > lct {
                return None;
            }
            i += 1;
        }
        Some(start)
    }

    /// The latest completion <= `lct` at which `j` fits the timetable and starts at or after
    /// `est`.
    fn latest_fit(&self, problem: &Problem, j: usize, est: Time, lct: Time) -> Option<Time> {
        let p = problem.walltime(j);
        let mut end = lct;
        let mut i = self.seg.partition_point(|&t| t < end);
        while i > 0 {
            i -= 1;
            let seg_end = self.seg.get(i + 1).copied().unwrap_or(Time::MAX);
            if seg_end <= end - p {
                break;
            }
            if !self.fits_segment(problem, j, i) {
                end = self.seg[i];
            }
            if end - p < est {
                return None;
            }
        }
        Some(end)
    }

    /// Disjunctive pairs (one server): two jobs that can never overlap run one after the
    /// other; when only one order fits their windows, the windows follow it. `None` when
    /// neither order fits.
    fn pairs(&mut self, problem: &Problem) -> Option<bool> {
        if self.conflict.is_empty() {
            return Some(false);
        }
        let mut changed = false;
        for a in 0..self.open.len() {
            let i = self.open[a];
            for b in a + 1..self.open.len() {
                let j = self.open[b];
                if self.conflict[i] & (1u128 << j) == 0 {
                    continue;
                }
                let (pi, pj) = (problem.walltime(i), problem.walltime(j));
                let i_first = self.est[i] + pi <= self.lct[j] - pj;
                let j_first = self.est[j] + pj <= self.lct[i] - pi;
                let (before, after, pb, pa) = match (i_first, j_first) {
                    (false, false) => return None,
                    (true, false) => (i, j, pi, pj),
                    (false, true) => (j, i, pj, pi),
                    (true, true) => continue,
                };
                if self.est[after] < self.est[before] + pb {
                    self.est[after] = self.est[before] + pb;
                    changed = true;
                }
                if self.lct[before] > self.lct[after] - pa {
                    self.lct[before] = self.lct[after] - pa;
                    changed = true;
                }
            }
        }
        Some(changed)
    }

    /// The one-machine test: the unplaced jobs of a clique run one at a time, each not before
    /// its earliest start and leaving its tail to the horizon (`T - lct`); whether even their
    /// preemptive schedule (`jackson.rs`) overruns the horizon.
    fn one_machine_overload(&mut self, problem: &Problem) -> bool {
        for k in 0..self.cliques.len() {
            self.members.clear();
            for &j in &self.open {
                if self.cliques[k] >> j & 1 == 1 {
                    self.members.push(Member {
                        head: self.est[j],
                        walltime: problem.walltime(j),
                        tail: self.horizon - self.lct[j],
                    });
                }
            }
            if self.members.len() > 1 && self.jackson.bound(&mut self.members) > self.horizon {
                return true;
            }
        }
        false
    }

    /// Edge finding on each clique (one job at a time): for a task interval `O` (the clique's
    /// unplaced jobs whose windows lie within `[est_a, lct_b]`) and a member `i` outside it,
    /// when `O` and `i` cannot all end by `lct(O)`, `i` ends after all of `O`, so it starts no
    /// earlier than `O`'s earliest start plus its walltimes; symmetrically, when they cannot
    /// all start from `est(O)` on, `i` ends before all of `O`. `None` when a window empties.
    fn edge_finding(&mut self, problem: &Problem) -> Option<bool> {
        let mut changed = false;
        for k in 0..self.cliques.len() {
            let clique = self.cliques[k];
            let mut jobs = std::mem::take(&mut self.in_clique);
            jobs.clear();
            jobs.extend(self.open.iter().copied().filter(|&j| clique >> j & 1 == 1));
            let found = self.edge_find_in(problem, &jobs);
            self.in_clique = jobs;
            changed |= found?;
        }
        Some(changed)
    }

    /// [`Propagation::edge_finding`] on the unplaced members `jobs` of one clique.
    fn edge_find_in(&mut self, problem: &Problem, jobs: &[usize]) -> Option<bool> {
        let mut changed = false;
        for &a in jobs {
            for &b in jobs {
                let (lo, hi) = (self.est[a], self.lct[b]);
                if lo >= hi {
                    continue;
                }
                let mut work = 0;
                let mut inside: u128 = 0;
                for &j in jobs {
                    if self.est[j] >= lo && self.lct[j] <= hi {
                        work += problem.walltime(j);
                        inside |= 1 << j;
                    }
                }
                if inside == 0 {
                    continue;
                }
                if lo + work > hi {
                    return None;
                }
                for &i in jobs {
                    if inside >> i & 1 == 1 {
                        continue;
                    }
                    let p = problem.walltime(i);
                    if self.est[i].min(lo) + work + p > hi && self.est[i] < lo + work {
                        self.est[i] = lo + work;
                        changed = true;
                    }
                    if lo + work + p > self.lct[i].max(hi) && self.lct[i] > hi - work {
                        self.lct[i] = hi - work;
                        changed = true;
                    }
                    if self.empty(problem, i) {
                        return None;
                    }
                }
            }
        }
        Some(changed)
    }

    /// The energetic check on the propagated windows: whether some interval needs more energy
    /// than is free in it.
    fn energy_overload(&mut self, problem: &Problem) -> bool {
        self.starts.clear();
        self.ends.clear();
        for &j in &self.open {
            let p = problem.walltime(j);
            let (e, l) = (self.est[j], self.lct[j]);
            self.starts.extend([e, l - p, e + p]);
            self.ends.extend([l, e + p, l - p]);
        }
        self.starts.sort_unstable();
        self.starts.dedup();
        self.ends.sort_unstable();
        self.ends.dedup();
        self.free_energy_table(problem);
        let r = problem.resources();
        for a in 0..self.starts.len() {
            let t1 = self.starts[a];
            let first = self.ends.partition_point(|&t| t <= t1);
            for b in first..self.ends.len() {
                let t2 = self.ends[b];
                self.need.fill(0);
                for &j in &self.open {
                    let p = problem.walltime(j);
                    let (lst, ect) = (self.lct[j] - p, self.est[j] + p);
                    let overlap = (t2 - t1).min(ect - t1).min(t2 - lst).min(p);
                    if overlap > 0 {
                        for (q, need) in self.need.iter_mut().enumerate() {
                            *need += problem.demand(j)[q] as i128 * overlap as i128;
                        }
                    }
                }
                for q in 0..r {
                    if self.need[q] > self.free_between(q, r, t1, t2) {
                        return true;
                    }
                }
            }
        }
        false
    }

    /// The destructive bound: one more than the latest absolute horizon in `[low, high)` that
    /// a bisection finds refuted (`low` when it finds none; the test need not be monotone, so
    /// this is not always the earliest horizon left unrefuted). A valid lower bound on the
    /// latest completion of any completion of the partial schedule whenever `low` is one: a
    /// refuted horizon is a proof. Shaving runs only while `stop` allows.
    pub(super) fn destructive(
        &mut self,
        problem: &Problem,
        d: &Dispatcher,
        est: &[Time],
        low: Time,
        high: Time,
        stop: &mut dyn FnMut() -> bool,
    ) -> Time {
        let (mut lo, mut hi) = (low, high);
        // Invariant: `lo` is a lower bound (every earlier horizon refuted or below `low`).
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.refutes(problem, d, est, mid, true) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        // Then with shaving, which costs a propagation per trial, while there is time.
        let mut hi = high;
        while lo < hi && !stop() {
            let mid = lo + (hi - lo) / 2;
            if self.refutes_shaved(problem, d, est, mid, stop) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Fills `free` with the cumulative free energy at each breakpoint of the pooled usage.
    fn free_energy_table(&mut self, problem: &Problem) {
        let r = problem.resources();
        self.free.clear();
        self.free.resize(self.times.len() * r, 0);
        for k in 1..self.times.len() {
            let len = (self.times[k] - self.times[k - 1]) as i128;
            for q in 0..r {
                let rate = (self.capacity[q] - self.usage[(k - 1) * r + q]) as i128;
                self.free[k * r + q] = self.free[(k - 1) * r + q] + rate * len;
            }
        }
    }

    /// Free energy of resource `q` in `[t1, t2)`.
    fn free_between(&self, q: usize, r: usize, t1: Time, t2: Time) -> i128 {
        self.cumulative(q, r, t2) - self.cumulative(q, r, t1)
    }

    /// Free energy of resource `q` from the first breakpoint (`now`) to `t`.
    fn cumulative(&self, q: usize, r: usize, t: Time) -> i128 {
        let t = t.max(self.times[0]);
        let k = self.times.partition_point(|&x| x <= t) - 1;
        let rate = (self.capacity[q] - self.usage[k * r + q]) as i128;
        self.free[k * r + q] + rate * (t - self.times[k]) as i128
    }
}

#[cfg(test)]
mod tests {
    use super::Propagation;
    use crate::bnb::testing::{earliest_starts, problem};
    use crate::brute::brute_force;
    use schedlm_generator::Family;
    use schedlm_model::{dispatch, Dispatcher, Objective, Time, Variant};

    /// Soundness against brute force: the horizon an optimal order meets is refuted neither at
    /// the root nor after any prefix of that order, and the destructive bound, with nothing
    /// above it but a horizon every order meets, never passes the optimum.
    #[test]
    fn never_refutes_a_horizon_an_order_meets() {
        let mut lifted = 0;
        for family in [Family::Uniform, Family::Hpc, Family::Dl] {
            for (deps, servers) in [(0.0, 1), (0.4, 1), (0.4, 2), (0.0, 3)] {
                for variant in [Variant::Serial, Variant::Strict] {
                    for index in 0..12 {
                        let p = problem(family, deps, servers, None, index);
                        let (order, best) = brute_force(&p, Objective::Makespan, variant);
                        let horizon = p.now() + best as Time;
                        let conflict = crate::bnb::conflicts(&p, Objective::Makespan);
                        let tail = p.tails();
                        let by_length = crate::bnb::jackson::longest_first(&p);
                        let cliques =
                            crate::bnb::jackson::choose_cliques(&p, &conflict, &tail, &by_length);
                        let mut test = Propagation::new(&p, &conflict, &cliques);
                        let mut d = Dispatcher::new(&p, variant);
                        let root = earliest_starts(&p, &d, variant);
                        let low = (0..p.jobs())
                            .map(|j| root[j] + p.walltime(j))
                            .max()
                            .unwrap();
                        let top = horizon + (0..p.jobs()).map(|j| p.walltime(j)).sum::<Time>();
                        let bound = test.destructive(&p, &d, &root, low, top, &mut || false);
                        let case = format!(
                            "{family:?} deps={deps} servers={servers} {variant:?} #{index}"
                        );
                        assert!(
                            bound <= horizon,
                            "{case}: bound {bound} > optimum {horizon}"
                        );
                        lifted += usize::from(bound > low);
                        let schedule = dispatch(&p, &order, variant).expect("valid order");
                        for (k, &j) in schedule.order.iter().enumerate() {
                            let est = earliest_starts(&p, &d, variant);
                            assert!(
                                !test.refutes(&p, &d, &est, horizon, true),
                                "{case}: refuted the optimum after {k} placements"
                            );
                            let at = d.earliest(j);
                            assert_eq!(at.start, schedule.start[j]);
                            d.place_at(j, at);
                        }
                    }
                }
            }
        }
        // The test is not vacuous: propagation lifts the bound above the earliest starts.
        assert!(
            lifted > 0,
            "the destructive bound never rose above the earliest starts"
        );
    }
}
