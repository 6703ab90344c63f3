//! The dispatcher of SPEC section 3: serial schedule generation over per-server resource
//! profiles, with an incremental place/undo API for search.
//!
//! Each server keeps a step function of its used capacity: breakpoints `times[k]` and the usage
//! vector of the segment `[times[k], times[k+1])` (the last segment runs to infinity and is
//! always empty, because every job's end is a breakpoint). Placing a job inserts at most two
//! breakpoints; undoing it removes exactly what it inserted. Once the vectors have grown to
//! their working size, placing and undoing allocate nothing.
//!
//! The earliest feasible start on one server is found by a single left-to-right scan: start at
//! the lower bound `t`; whenever a segment inside `[t, t + p)` lacks capacity, move `t` to the
//! end of that segment. The start found this way is always the lower bound or an end of a job
//! on that server, which are exactly SPEC's candidate times. Taking the minimum over servers,
//! with the first server winning ties, gives SPEC's choice.

use crate::instance::Time;
use crate::order::{check_permutation, repair, OrderError};
use crate::problem::Problem;

/// Which dispatcher of SPEC section 3.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// Serial schedule generation: a job may start before jobs placed earlier (backfilling).
    #[default]
    Serial,
    /// No overtaking: a job never starts before the job placed just before it.
    Strict,
}

impl Variant {
    /// The name used in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Serial => "serial",
            Variant::Strict => "strict",
        }
    }
}

/// Where and when one job runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// Start time S_j in seconds (>= `now`).
    pub start: Time,
    /// 0-based index of the server, in instance order.
    pub server: usize,
}

/// A complete schedule: per queued job (by queue index) its start and server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// The order the jobs were placed in (after the dependency repair).
    pub order: Vec<usize>,
    /// Start S_j of each queued job in seconds, by queue index; `Time::MIN` for a job not
    /// placed yet (a partial schedule from [`Dispatcher::schedule`]).
    pub start: Vec<Time>,
    /// 0-based server index (instance order) of each queued job, by queue index;
    /// `usize::MAX` for a job not placed yet.
    pub server: Vec<usize>,
}

impl Schedule {
    /// Completion time C_j = S_j + p_j.
    pub fn end(&self, problem: &Problem, j: usize) -> Time {
        self.start[j] + problem.walltime(j)
    }
}

/// Dispatches a full order: checks it is a permutation, repairs it for dependencies (SPEC
/// section 2), then places the jobs one by one.
pub fn dispatch(
    problem: &Problem,
    order: &[usize],
    variant: Variant,
) -> Result<Schedule, OrderError> {
    check_permutation(problem, order)?;
    let order = repair(problem, order);
    let mut d = Dispatcher::new(problem, variant);
    for &j in &order {
        d.place(j);
    }
    Ok(d.schedule())
}

/// Used capacity of one server over time.
#[derive(Debug, Clone)]
struct Profile {
    times: Vec<Time>,
    /// `resources` entries per segment.
    usage: Vec<i64>,
}

impl Profile {
    fn new(now: Time, r: usize, running: &[(Time, &[i64])]) -> Profile {
        let mut ends: Vec<Time> = running.iter().map(|&(end, _)| end).collect();
        ends.sort_unstable();
        ends.dedup();
        let mut times = Vec::with_capacity(ends.len() + 1);
        let mut usage = Vec::with_capacity((ends.len() + 1) * r);
        for t in std::iter::once(now).chain(ends) {
            times.push(t);
            for q in 0..r {
                let used: i64 = running
                    .iter()
                    .filter(|&&(end, _)| end > t)
                    .map(|&(_, d)| d[q])
                    .sum();
                usage.push(used);
            }
        }
        Profile { times, usage }
    }

    /// Index of the segment containing `t` (requires `t >= times[0]`).
    #[inline]
    fn segment(&self, t: Time) -> usize {
        self.times.partition_point(|&x| x <= t) - 1
    }

    #[inline]
    fn has_room(&self, k: usize, demand: &[i64], capacity: &[i64]) -> bool {
        let r = demand.len();
        let used = &self.usage[k * r..(k + 1) * r];
        used.iter()
            .zip(demand)
            .zip(capacity)
            .all(|((u, d), c)| u + d <= *c)
    }

    /// Earliest start >= `lower` of a job of length `p`, or `None` if it is `>= limit`.
    /// The job's demand must fit `capacity`.
    fn earliest(
        &self,
        demand: &[i64],
        capacity: &[i64],
        p: Time,
        lower: Time,
        limit: Time,
    ) -> Option<Time> {
        let segments = self.times.len();
        let mut t = lower;
        let mut k = self.segment(lower);
        while k < segments && t < limit {
            if self.times[k] >= t + p {
                return Some(t);
            }
            if self.has_room(k, demand, capacity) {
                k += 1;
            } else {
                // The last segment is always empty, so an infeasible segment has a successor.
                k += 1;
                t = self.times[k];
            }
        }
        (t < limit).then_some(t)
    }

    /// Makes `t` a breakpoint; returns its segment index and whether it was inserted.
    fn split(&mut self, t: Time, r: usize) -> (usize, bool) {
        let k = self.segment(t);
        if self.times[k] == t {
            return (k, false);
        }
        self.times.insert(k + 1, t);
        let len = self.usage.len();
        self.usage.resize(len + r, 0);
        self.usage.copy_within(k * r..len, (k + 1) * r);
        (k + 1, true)
    }

    fn add(&mut self, from: usize, to: usize, demand: &[i64], sign: i64) {
        let r = demand.len();
        for k in from..to {
            for (u, d) in self.usage[k * r..(k + 1) * r].iter_mut().zip(demand) {
                *u += sign * d;
            }
        }
    }

    fn remove(&mut self, k: usize, r: usize) {
        self.times.remove(k);
        self.usage.drain(k * r..(k + 1) * r);
    }
}

/// One placed job and what its placement inserted, for undo.
#[derive(Debug, Clone, Copy)]
struct Undo {
    job: usize,
    server: usize,
    inserted_start: bool,
    inserted_end: bool,
}

/// A partial schedule built by placing jobs one at a time; see the module docs.
///
/// ```
/// use schedlm_model::{Instance, Problem, Dispatcher, Variant};
/// let inst: Instance = serde_json::from_str(r#"{
///   "now": 0, "resources": ["cores"],
///   "servers": [{"id": "n0", "capacity": [4]}],
///   "queue": [{"id": "a", "submit": 0, "demand": [4], "walltime": 10},
///             {"id": "b", "submit": 0, "demand": [2], "walltime": 5}]}"#).unwrap();
/// let problem = Problem::new(&inst).unwrap();
/// let mut d = Dispatcher::new(&problem, Variant::Serial);
/// assert_eq!(d.place(0).start, 0);
/// assert_eq!(d.place(1).start, 10); // a job ending at 10 frees its cores at 10
/// d.undo();
/// assert_eq!(d.earliest(1).start, 10);
/// ```
#[derive(Debug, Clone)]
pub struct Dispatcher<'p> {
    problem: &'p Problem,
    variant: Variant,
    profiles: Vec<Profile>,
    start: Vec<Time>,
    server: Vec<usize>,
    placed: Vec<bool>,
    stack: Vec<Undo>,
}

impl<'p> Dispatcher<'p> {
    /// An empty partial schedule: only the running jobs occupy the servers.
    pub fn new(problem: &'p Problem, variant: Variant) -> Dispatcher<'p> {
        let n = problem.jobs();
        let profiles = (0..problem.servers())
            .map(|s| {
                let on_s: Vec<(Time, &[i64])> = problem
                    .running()
                    .iter()
                    .filter(|j| j.server == s)
                    .map(|j| (j.end, j.demand.as_slice()))
                    .collect();
                let mut p = Profile::new(problem.now(), problem.resources(), &on_s);
                // Room for every queued job's two breakpoints: no allocation while searching.
                p.times.reserve(2 * n);
                p.usage.reserve(2 * n * problem.resources());
                p
            })
            .collect();
        Dispatcher {
            problem,
            variant,
            profiles,
            start: vec![Time::MIN; n],
            server: vec![usize::MAX; n],
            placed: vec![false; n],
            stack: Vec::with_capacity(n),
        }
    }

    /// The problem being scheduled.
    pub fn problem(&self) -> &'p Problem {
        self.problem
    }

    /// The dispatcher variant.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// Number of jobs placed so far.
    pub fn len(&self) -> usize {
        self.stack.len()
    }

    /// Whether no job is placed yet.
    pub fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }

    /// Whether job `j` is placed.
    pub fn is_placed(&self, j: usize) -> bool {
        self.placed[j]
    }

    /// Start of placed job `j` (`Time::MIN` if not placed).
    pub fn start(&self, j: usize) -> Time {
        self.start[j]
    }

    /// Server of placed job `j`.
    pub fn server(&self, j: usize) -> usize {
        self.server[j]
    }

    /// The jobs placed so far, in placement order.
    pub fn placed_order(&self) -> impl ExactSizeIterator<Item = usize> + '_ {
        self.stack.iter().map(|u| u.job)
    }

    /// Whether every queued dependency of `j` is placed.
    pub fn is_ready(&self, j: usize) -> bool {
        self.problem.deps(j).iter().all(|&d| self.placed[d])
    }

    /// The lower bound on `j`'s start from `now`, its dependencies and (strict) the last start.
    /// Requires every queued dependency of `j` to be placed.
    pub fn lower_bound(&self, j: usize) -> Time {
        let p = self.problem;
        let mut lower = p.released(j);
        for &d in p.deps(j) {
            lower = lower.max(self.start[d] + p.walltime(d));
        }
        if self.variant == Variant::Strict {
            if let Some(last) = self.stack.last() {
                lower = lower.max(self.start[last.job]);
            }
        }
        lower
    }

    /// Where job `j` would go if it were placed next. Requires `j` unplaced and ready.
    pub fn earliest(&self, j: usize) -> Placement {
        let p = self.problem;
        let lower = self.lower_bound(j);
        let demand = p.demand(j);
        let length = p.walltime(j);
        let mut best = Placement {
            start: Time::MAX,
            server: usize::MAX,
        };
        for (s, profile) in self.profiles.iter().enumerate() {
            if !p.fits(j, s) {
                continue;
            }
            if let Some(t) = profile.earliest(demand, p.capacity(s), length, lower, best.start) {
                best = Placement {
                    start: t,
                    server: s,
                };
                if t == lower {
                    break;
                }
            }
        }
        best
    }

    /// Earliest start >= `lower` of job `j` on server `s` alone, given the jobs placed so far;
    /// `None` if `j` does not fit `s`. Ignores dependencies and the strict rule: the caller's
    /// `lower` carries them. Placing more jobs never makes this earlier.
    pub fn earliest_on(&self, j: usize, s: usize, lower: Time) -> Option<Time> {
        let p = self.problem;
        if !p.fits(j, s) {
            return None;
        }
        self.profiles[s].earliest(p.demand(j), p.capacity(s), p.walltime(j), lower, Time::MAX)
    }

    /// Whether job `j` fits server `s` starting exactly at `t >= now`, given the jobs placed so
    /// far (dependencies and the strict rule aside, as in [`Dispatcher::earliest_on`]).
    pub fn fits_at(&self, j: usize, s: usize, t: Time) -> bool {
        let p = self.problem;
        p.fits(j, s)
            && self.profiles[s].earliest(p.demand(j), p.capacity(s), p.walltime(j), t, t + 1)
                == Some(t)
    }

    /// Whether servers `a` and `b` have the same capacity and the same used capacity at every
    /// instant from `t` on, so that whatever fits one from `t` fits the other. A breakpoint
    /// that changes nothing can make two equal profiles look different (then `false`).
    pub fn same_from(&self, a: usize, b: usize, t: Time) -> bool {
        let p = self.problem;
        if p.capacity(a) != p.capacity(b) {
            return false;
        }
        let r = p.resources();
        let (pa, pb) = (&self.profiles[a], &self.profiles[b]);
        let (ka, kb) = (pa.segment(t), pb.segment(t));
        pa.times.len() - ka == pb.times.len() - kb
            && pa.times[ka + 1..] == pb.times[kb + 1..]
            && pa.usage[ka * r..] == pb.usage[kb * r..]
    }

    /// Used capacity of server `s` as a step function: segment `k` starts at `times[k]` (the
    /// first at `now`) and uses `usage[k * R..(k + 1) * R]` until the next breakpoint; the
    /// last segment runs forever. Counts running jobs and the jobs placed so far.
    pub fn usage(&self, s: usize) -> (&[Time], &[i64]) {
        let profile = &self.profiles[s];
        (&profile.times, &profile.usage)
    }

    /// Total usage over all servers, as a step function: fills `times` with every breakpoint
    /// of every server (sorted, distinct) and `usage` with `resources` entries per segment.
    pub fn pooled_usage(&self, times: &mut Vec<Time>, usage: &mut Vec<i64>) {
        self.pooled_usage_of(|_| true, times, usage);
    }

    /// [`Dispatcher::pooled_usage`] over the servers `s` for which `of(s)` holds.
    pub fn pooled_usage_of(
        &self,
        of: impl Fn(usize) -> bool,
        times: &mut Vec<Time>,
        usage: &mut Vec<i64>,
    ) {
        let r = self.problem.resources();
        let chosen = || {
            self.profiles
                .iter()
                .enumerate()
                .filter(|&(s, _)| of(s))
                .map(|(_, p)| p)
        };
        times.clear();
        for profile in chosen() {
            times.extend_from_slice(&profile.times);
        }
        times.sort_unstable();
        times.dedup();
        usage.clear();
        usage.resize(times.len() * r, 0);
        for profile in chosen() {
            let mut k = 0;
            for (i, &t) in times.iter().enumerate() {
                while k + 1 < profile.times.len() && profile.times[k + 1] <= t {
                    k += 1;
                }
                for q in 0..r {
                    usage[i * r + q] += profile.usage[k * r + q];
                }
            }
        }
    }

    /// Places job `j` next. Requires `j` unplaced and ready (see [`Dispatcher::is_ready`]).
    pub fn place(&mut self, j: usize) -> Placement {
        debug_assert!(!self.placed[j] && self.is_ready(j));
        let at = self.earliest(j);
        self.place_at(j, at);
        at
    }

    /// Places job `j` at a placement returned by [`Dispatcher::earliest`] for this state.
    pub fn place_at(&mut self, j: usize, at: Placement) {
        let p = self.problem;
        let r = p.resources();
        let profile = &mut self.profiles[at.server];
        let (_, inserted_start) = profile.split(at.start, r);
        let (to, inserted_end) = profile.split(at.start + p.walltime(j), r);
        let from = profile.segment(at.start);
        profile.add(from, to, p.demand(j), 1);
        self.start[j] = at.start;
        self.server[j] = at.server;
        self.placed[j] = true;
        self.stack.push(Undo {
            job: j,
            server: at.server,
            inserted_start,
            inserted_end,
        });
    }

    /// Removes the last placed job; returns it, or `None` if nothing is placed.
    pub fn undo(&mut self) -> Option<usize> {
        let u = self.stack.pop()?;
        let p = self.problem;
        let r = p.resources();
        let profile = &mut self.profiles[u.server];
        let start = self.start[u.job];
        let from = profile.segment(start);
        let to = profile.segment(start + p.walltime(u.job));
        profile.add(from, to, p.demand(u.job), -1);
        if u.inserted_end {
            profile.remove(to, r);
        }
        if u.inserted_start {
            profile.remove(from, r);
        }
        self.start[u.job] = Time::MIN;
        self.server[u.job] = usize::MAX;
        self.placed[u.job] = false;
        Some(u.job)
    }

    /// Undoes placements until `len` jobs remain placed.
    pub fn truncate(&mut self, len: usize) {
        while self.stack.len() > len {
            self.undo();
        }
    }

    /// The schedule so far (complete once every job is placed).
    pub fn schedule(&self) -> Schedule {
        Schedule {
            order: self.placed_order().collect(),
            start: self.start.clone(),
            server: self.server.clone(),
        }
    }
}
