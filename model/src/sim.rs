//! Online simulation (trace replay) of SPEC section 5.
//!
//! Jobs arrive at their submit time and run for `min(runtime, walltime)`: a job that would run
//! longer than its walltime is killed at its walltime. Time advances from event to event; all
//! events at one instant form one step, in which completions are processed first (freeing their
//! capacity), then arrivals join the waiting queue, then the [`Policy`] orders the waiting queue
//! and the [`StartRule`] starts jobs. A step is taken at every instant where a job arrives or
//! ends, so "at every event" of SPEC holds, and simultaneous events never see each other in a
//! half-processed state.
//!
//! Start rules (SPEC section 5), with "fits now" meaning some server has the job's demand free
//! now in every resource (the first such server in server order takes it):
//!
//! - [`StartRule::Strict`]: start jobs in policy order while the next one fits now; stop at the
//!   first that does not.
//! - [`StartRule::Easy`]: as strict; then the first job that does not fit (the *head*) gets a
//!   reservation at the earliest time it fits, computed from the running jobs' walltime ends
//!   (start + walltime, what the scheduler knows), on the first server reaching that time. Every
//!   later job in policy order starts now if it fits now and does not delay the reservation:
//!   it runs on another server, or it ends (now + walltime) no later than the reservation, or it
//!   fits in what the reservation server has left over at the reservation time (the *extra*
//!   capacity, which such a job then uses up).
//! - [`StartRule::Conservative`]: every waiting job gets a reservation by the dispatcher of
//!   SPEC section 3 ([`crate::Dispatcher`], serial variant) in policy order, against the
//!   running jobs' walltime ends; the jobs whose reservation is now start, on the server the
//!   dispatcher chose. Reservations are recomputed at every step (they can only move earlier
//!   when jobs end before their walltime).
//!
//! Dependencies are not part of online replay: a [`SimJob`] has none.
//!
//! # Planning with estimates
//!
//! A job may carry a planning length [`SimJob::estimate`] (a run-time prediction). The
//! scheduler then plans with it everywhere it would use the requested walltime: a running
//! job's expected end is start + estimate (EASY reservations, the conservative dispatcher),
//! the EASY backfill test uses now + estimate, the policy sees the job with `walltime` =
//! estimate ([`SimState::jobs`], [`Policy::static_key`]; so SJF's r is the estimate), and
//! [`SimState::snapshot`] shows it. The job still runs min(runtime, walltime) and is killed at
//! its requested walltime. A running job that outlives its estimate is re-planned, from the
//! first step at or after start + estimate, to end at start + walltime (the correction of
//! Tsafrir, Etsion & Feitelson 2007: back to the user's request), so a planned end is
//! always after `now`. Without estimates nothing changes.
//!
//! A [`Policy`] sees the whole state ([`SimState`]: time, servers, free capacity, running
//! jobs with their walltime ends, the waiting queue with true run times) and can turn it into a
//! SPEC-section-1 [`Instance`] with [`SimState::snapshot`], so a solver (rolling horizon: solve
//! the snapshot, return its order; with the conservative start rule exactly the jobs the
//! optimal schedule starts now are started) or a language model can drive the replay. A policy
//! whose order is a fixed score per job (FCFS, SJF, F1, ...) returns it from
//! [`Policy::static_key`]; the simulator then keeps the queue sorted itself and never calls
//! [`Policy::order`], which makes a full-trace replay take about a second.
//!
//! ```
//! use schedlm_model::sim::{Fcfs, SimJob, Simulation, StartRule};
//! use schedlm_model::Server;
//!
//! let servers = vec![Server { id: "pool".into(), capacity: vec![4] }];
//! let jobs = vec![
//!     SimJob::new("a", 0, vec![4], 100, 50),  // ends at 50, before its walltime
//!     SimJob::new("b", 10, vec![2], 100, 100),
//!     SimJob::new("c", 20, vec![2], 5, 30),   // killed at its walltime of 5
//! ];
//! let sim = Simulation::new(vec!["cores".into()], servers, jobs).unwrap();
//! let result = sim.run(&mut Fcfs, StartRule::Easy).unwrap();
//! let starts: Vec<i64> = result.jobs.iter().map(|j| j.start).collect();
//! assert_eq!(starts, vec![0, 50, 50]);
//! assert!(result.jobs[2].killed && result.jobs[2].end == 55);
//! ```

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeSet, BinaryHeap, HashMap};

use serde::{Deserialize, Serialize};

use crate::dispatch::{Dispatcher, Variant};
use crate::instance::{Instance, QueuedJob, RunningJob, Server, Time};
use crate::objective::job_bsld;
use crate::problem::Problem;
use crate::validate::MAX_MAGNITUDE;

/// One job of a trace to replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimJob {
    pub id: String,
    /// Arrival time.
    pub submit: Time,
    /// Demand per resource; the job runs on one server.
    pub demand: Vec<i64>,
    /// Requested time (>= 1): what the scheduler plans with, and the kill limit.
    pub walltime: Time,
    /// True length (>= 0), hidden from the start rules; the job runs min(runtime, walltime).
    pub runtime: Time,
    pub user: Option<String>,
    /// Planning length (>= 1): when set, the scheduler plans with it instead of `walltime`
    /// (reservations, backfill tests, the policy's view of the job, snapshots), while the
    /// job is still killed at `walltime`. `None` = plan with the walltime. See
    /// [the module docs](self#planning-with-estimates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<Time>,
}

impl SimJob {
    /// A job without a user.
    pub fn new(
        id: impl Into<String>,
        submit: Time,
        demand: Vec<i64>,
        walltime: Time,
        runtime: Time,
    ) -> SimJob {
        SimJob {
            id: id.into(),
            submit,
            demand,
            walltime,
            runtime,
            user: None,
            estimate: None,
        }
    }

    /// The length the scheduler plans with: the estimate when set, else the walltime.
    pub fn plan(&self) -> Time {
        self.estimate.unwrap_or(self.walltime)
    }

    /// How long the job holds its server: min(runtime, walltime).
    pub fn run(&self) -> Time {
        self.runtime.min(self.walltime)
    }

    /// Whether the job is killed at its walltime.
    pub fn killed(&self) -> bool {
        self.runtime > self.walltime
    }
}

/// How jobs are started from the ordered queue (SPEC section 5).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum StartRule {
    /// In order while the next job fits now; no overtaking.
    Strict,
    /// EASY backfilling: one reservation for the first job that does not fit.
    #[default]
    Easy,
    /// Conservative backfilling: a reservation for every waiting job (SPEC section 3).
    Conservative,
}

impl StartRule {
    /// Every start rule.
    pub const ALL: [StartRule; 3] = [StartRule::Strict, StartRule::Easy, StartRule::Conservative];

    /// The name used in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            StartRule::Strict => "strict",
            StartRule::Easy => "easy",
            StartRule::Conservative => "conservative",
        }
    }
}

impl std::fmt::Display for StartRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Orders the waiting queue at every step of a replay.
pub trait Policy {
    /// The order in which to consider the waiting jobs: a permutation of
    /// `0..waiting.len()`, first = runs first. `waiting` holds indices into
    /// [`SimState::jobs`], in arrival order (submit, then input position).
    fn order(&mut self, state: &SimState<'_>, waiting: &[usize]) -> Vec<usize>;

    /// A score that stays fixed while the job waits (ascending runs first), for policies that
    /// are a static priority. When this is `Some` for the first job, it must be `Some` for
    /// every job: the simulator then keeps the queue sorted by (key, submit, input position)
    /// and never calls [`Policy::order`]. The default `None` calls `order` at every step.
    fn static_key(&self, _job: &SimJob) -> Option<f64> {
        None
    }
}

/// First come, first served: arrival order.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fcfs;

impl Policy for Fcfs {
    fn order(&mut self, _state: &SimState<'_>, waiting: &[usize]) -> Vec<usize> {
        (0..waiting.len()).collect()
    }

    fn static_key(&self, job: &SimJob) -> Option<f64> {
        Some(job.submit as f64)
    }
}

/// A policy from a closure `(state, waiting) -> order`, called at every step.
pub struct OrderFn<F>(pub F);

impl<F> Policy for OrderFn<F>
where
    F: FnMut(&SimState<'_>, &[usize]) -> Vec<usize>,
{
    fn order(&mut self, state: &SimState<'_>, waiting: &[usize]) -> Vec<usize> {
        (self.0)(state, waiting)
    }
}

/// Why a replay cannot be set up or run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error("`resources` is empty: a replay needs at least one resource")]
    NoResources,
    #[error("`servers` is empty: a replay needs at least one server")]
    NoServers,
    #[error("server \"{server}\": `capacity` has {found} entries, expected {expected} (one per resource)")]
    ServerShape {
        server: String,
        expected: usize,
        found: usize,
    },
    #[error(
        "server \"{server}\": `capacity` {capacity:?} has a negative amount or one above 2^40"
    )]
    BadCapacity { server: String, capacity: Vec<i64> },
    #[error("id \"{0}\" is used twice; job ids must be unique and differ from server ids")]
    DuplicateId(String),
    #[error("job \"{job}\": `demand` has {found} entries, expected {expected} (one per resource)")]
    DemandShape {
        job: String,
        expected: usize,
        found: usize,
    },
    #[error("job \"{job}\": `demand` {demand:?} has a negative amount or one above 2^40")]
    BadDemand { job: String, demand: Vec<i64> },
    #[error("job \"{job}\": `demand` {demand:?} fits on no server")]
    FitsNoServer { job: String, demand: Vec<i64> },
    #[error("job \"{job}\": `walltime` is {walltime}; it must be between 1 and 2^40")]
    BadWalltime { job: String, walltime: Time },
    #[error("job \"{job}\": `runtime` is {runtime}; it must be between 0 and 2^40")]
    BadRuntime { job: String, runtime: Time },
    #[error("job \"{job}\": `estimate` is {estimate}; it must be between 1 and 2^40")]
    BadEstimate { job: String, estimate: Time },
    #[error("job \"{job}\": `submit` is {submit}, outside [-2^40, 2^40]")]
    BadSubmit { job: String, submit: Time },
    #[error("the policy's order at time {now} is not a permutation of the {waiting} waiting jobs: {why}")]
    BadOrder {
        now: Time,
        waiting: usize,
        why: String,
    },
}

/// Per-job outcome of a replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub id: String,
    pub submit: Time,
    pub start: Time,
    pub end: Time,
    /// start - submit.
    pub wait: Time,
    /// min(runtime, walltime).
    pub run: Time,
    /// max((wait + run) / max(run, TAU), 1).
    pub bsld: f64,
    /// Whether the job hit its walltime.
    pub killed: bool,
    /// Index of the server it ran on.
    pub server: usize,
}

/// Queue length and footprint after each step.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Series {
    pub resources: Vec<String>,
    /// Time of each step (increasing).
    pub time: Vec<Time>,
    /// Waiting jobs after the step.
    pub queue: Vec<u32>,
    /// Running jobs after the step.
    pub running: Vec<u32>,
    /// Used fraction of each resource over all servers, `resources.len()` entries per step.
    pub used: Vec<f64>,
}

impl Series {
    /// Number of steps recorded.
    pub fn len(&self) -> usize {
        self.time.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }

    /// Used fractions of step `k`, one per resource.
    pub fn used_at(&self, k: usize) -> &[f64] {
        let r = self.resources.len();
        &self.used[k * r..(k + 1) * r]
    }
}

/// Aggregates of a replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub jobs: usize,
    pub mean_bsld: f64,
    pub max_bsld: f64,
    pub mean_wait: f64,
    pub max_wait: Time,
    /// Used resource-seconds of the first resource / (its capacity * makespan).
    pub utilization: f64,
    /// The same per resource.
    pub utilization_per_resource: Vec<f64>,
    /// Last end - first submit.
    pub makespan: Time,
    pub first_submit: Time,
    pub last_end: Time,
    /// Jobs killed at their walltime.
    pub killed: usize,
    /// Steps (distinct event instants) simulated.
    pub steps: usize,
}

/// Everything a replay produces.
#[derive(Debug, Clone, PartialEq)]
pub struct SimResult {
    /// One record per input job, in input order.
    pub jobs: Vec<JobRecord>,
    pub series: Series,
    pub summary: Summary,
}

impl Summary {
    /// Aggregates records; `demand` and `capacity` give the used resource-seconds.
    fn of(records: &[JobRecord], jobs: &[SimJob], capacity: &[i64], steps: usize) -> Summary {
        let n = records.len();
        let r = capacity.len();
        let first_submit = records.iter().map(|j| j.submit).min().unwrap_or(0);
        let last_end = records.iter().map(|j| j.end).max().unwrap_or(0);
        let makespan = last_end - first_submit;
        let mut used = vec![0f64; r];
        for (rec, job) in records.iter().zip(jobs) {
            for (u, &d) in used.iter_mut().zip(&job.demand) {
                *u += rec.run as f64 * d as f64;
            }
        }
        let utilization_per_resource: Vec<f64> = (0..r)
            .map(|q| {
                let denom = capacity[q] as f64 * makespan as f64;
                if denom > 0.0 {
                    used[q] / denom
                } else {
                    0.0
                }
            })
            .collect();
        let mean = |f: &dyn Fn(&JobRecord) -> f64| {
            if n == 0 {
                0.0
            } else {
                records.iter().map(f).sum::<f64>() / n as f64
            }
        };
        Summary {
            jobs: n,
            mean_bsld: mean(&|j| j.bsld),
            max_bsld: records.iter().map(|j| j.bsld).fold(0.0, f64::max),
            mean_wait: mean(&|j| j.wait as f64),
            max_wait: records.iter().map(|j| j.wait).max().unwrap_or(0),
            utilization: utilization_per_resource.first().copied().unwrap_or(0.0),
            utilization_per_resource,
            makespan,
            first_submit,
            last_end,
            killed: records.iter().filter(|j| j.killed).count(),
            steps,
        }
    }
}

/// A validated replay setup: resources, servers and jobs. Run it with [`Simulation::run`] as
/// often as needed (each run starts from an empty cluster).
#[derive(Debug, Clone)]
pub struct Simulation {
    resources: Vec<String>,
    servers: Vec<Server>,
    jobs: Vec<SimJob>,
    /// The jobs as the scheduler sees them (`walltime` = [`SimJob::plan`]), only when some
    /// job has an estimate.
    view: Option<Vec<SimJob>>,
    /// Job indices by (submit, input position).
    arrival: Vec<usize>,
}

impl Simulation {
    /// Checks the setup: one capacity and demand entry per resource, non-negative amounts,
    /// walltime >= 1, runtime >= 0, every job fits some server, unique ids.
    pub fn new(
        resources: Vec<String>,
        servers: Vec<Server>,
        jobs: Vec<SimJob>,
    ) -> Result<Simulation, SimError> {
        let r = resources.len();
        if r == 0 {
            return Err(SimError::NoResources);
        }
        if servers.is_empty() {
            return Err(SimError::NoServers);
        }
        let amount_ok = |v: &[i64]| v.iter().all(|&x| (0..=MAX_MAGNITUDE).contains(&x));
        let mut ids: HashMap<&str, ()> = HashMap::with_capacity(servers.len() + jobs.len());
        for s in &servers {
            if s.capacity.len() != r {
                return Err(SimError::ServerShape {
                    server: s.id.clone(),
                    expected: r,
                    found: s.capacity.len(),
                });
            }
            if !amount_ok(&s.capacity) {
                return Err(SimError::BadCapacity {
                    server: s.id.clone(),
                    capacity: s.capacity.clone(),
                });
            }
            if ids.insert(&s.id, ()).is_some() {
                return Err(SimError::DuplicateId(s.id.clone()));
            }
        }
        for j in &jobs {
            if j.demand.len() != r {
                return Err(SimError::DemandShape {
                    job: j.id.clone(),
                    expected: r,
                    found: j.demand.len(),
                });
            }
            if !amount_ok(&j.demand) {
                return Err(SimError::BadDemand {
                    job: j.id.clone(),
                    demand: j.demand.clone(),
                });
            }
            if !(1..=MAX_MAGNITUDE).contains(&j.walltime) {
                return Err(SimError::BadWalltime {
                    job: j.id.clone(),
                    walltime: j.walltime,
                });
            }
            if !(0..=MAX_MAGNITUDE).contains(&j.runtime) {
                return Err(SimError::BadRuntime {
                    job: j.id.clone(),
                    runtime: j.runtime,
                });
            }
            if let Some(estimate) = j.estimate {
                if !(1..=MAX_MAGNITUDE).contains(&estimate) {
                    return Err(SimError::BadEstimate {
                        job: j.id.clone(),
                        estimate,
                    });
                }
            }
            if !(-MAX_MAGNITUDE..=MAX_MAGNITUDE).contains(&j.submit) {
                return Err(SimError::BadSubmit {
                    job: j.id.clone(),
                    submit: j.submit,
                });
            }
            let fits = servers
                .iter()
                .any(|s| j.demand.iter().zip(&s.capacity).all(|(d, c)| d <= c));
            if !fits {
                return Err(SimError::FitsNoServer {
                    job: j.id.clone(),
                    demand: j.demand.clone(),
                });
            }
            if ids.insert(&j.id, ()).is_some() {
                return Err(SimError::DuplicateId(j.id.clone()));
            }
        }
        drop(ids);
        let mut arrival: Vec<usize> = (0..jobs.len()).collect();
        arrival.sort_by_key(|&j| (jobs[j].submit, j));
        let view = jobs.iter().any(|j| j.estimate.is_some()).then(|| {
            jobs.iter()
                .map(|j| SimJob {
                    walltime: j.plan(),
                    ..j.clone()
                })
                .collect()
        });
        Ok(Simulation {
            resources,
            servers,
            jobs,
            view,
            arrival,
        })
    }

    /// The jobs as the scheduler sees them: as given, with `walltime` replaced by
    /// [`SimJob::plan`] (the same as [`Simulation::jobs`] when no job has an estimate).
    pub fn planning_jobs(&self) -> &[SimJob] {
        self.view.as_deref().unwrap_or(&self.jobs)
    }

    pub fn resources(&self) -> &[String] {
        &self.resources
    }

    pub fn servers(&self) -> &[Server] {
        &self.servers
    }

    pub fn jobs(&self) -> &[SimJob] {
        &self.jobs
    }

    /// Total capacity over all servers, per resource.
    pub fn total_capacity(&self) -> Vec<i64> {
        let mut total = vec![0; self.resources.len()];
        for s in &self.servers {
            for (t, c) in total.iter_mut().zip(&s.capacity) {
                *t += c;
            }
        }
        total
    }

    /// Replays every job with `policy` and `rule`, from an empty cluster.
    pub fn run<P: Policy + ?Sized>(
        &self,
        policy: &mut P,
        rule: StartRule,
    ) -> Result<SimResult, SimError> {
        let keyed = self
            .arrival
            .first()
            .is_some_and(|&j| policy.static_key(&self.planning_jobs()[j]).is_some());
        let mut state = SimState::new(self, keyed);
        let mut engine = Engine {
            heap: BinaryHeap::with_capacity(64),
            next_arrival: 0,
            order: Vec::new(),
            started: Vec::new(),
        };
        loop {
            let next_end = engine.heap.peek().map(|Reverse((t, _))| *t);
            let next_submit = self
                .arrival
                .get(engine.next_arrival)
                .map(|&j| self.jobs[j].submit);
            let now = match (next_end, next_submit) {
                (None, None) => break,
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
            };
            state.now = now;
            // Completions first.
            while let Some(&Reverse((t, j))) = engine.heap.peek() {
                if t != now {
                    break;
                }
                engine.heap.pop();
                state.finish(j);
            }
            // Running jobs that outlived their estimate are now planned to their walltime.
            state.replan();
            // Then arrivals.
            while let Some(&j) = self.arrival.get(engine.next_arrival) {
                if self.jobs[j].submit != now {
                    break;
                }
                engine.next_arrival += 1;
                let key = if keyed {
                    policy
                        .static_key(&self.planning_jobs()[j])
                        .unwrap_or(f64::INFINITY)
                } else {
                    0.0
                };
                state.arrive(j, key);
            }
            // Then the policy and the start rule.
            if state.waiting_len() > 0 {
                engine.pass(&mut state, policy, rule)?;
            }
            state.record();
        }
        Ok(state.finish_result())
    }
}

/// A job in the sorted queue of a static-key policy: ordered by (key, submit, input index).
#[derive(Debug, Clone, Copy)]
struct Keyed {
    key: f64,
    submit: Time,
    job: usize,
}

impl PartialEq for Keyed {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Keyed {}
impl PartialOrd for Keyed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Keyed {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key
            .total_cmp(&other.key)
            .then(self.submit.cmp(&other.submit))
            .then(self.job.cmp(&other.job))
    }
}

/// A running job as a policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunningView {
    /// Index into [`SimState::jobs`].
    pub job: usize,
    pub server: usize,
    pub start: Time,
    /// start + walltime: when the job is killed at the latest (its end in a SPEC trace
    /// snapshot).
    pub walltime_end: Time,
    /// When the scheduler expects the job to end: start + estimate while that is after now,
    /// else `walltime_end` (equal to `walltime_end` for a job without an estimate).
    pub planned_end: Time,
}

/// The state of a replay between events, as a [`Policy`] sees it.
pub struct SimState<'a> {
    sim: &'a Simulation,
    r: usize,
    now: Time,
    /// Free capacity, `r` entries per server.
    free: Vec<i64>,
    /// Per server, the running jobs as (planned end, job).
    by_wend: Vec<BTreeSet<(Time, usize)>>,
    /// Planned end of each running job.
    pend: Vec<Time>,
    /// (start + estimate, job) of running jobs that will outlive their estimate.
    overrun: BinaryHeap<Reverse<(Time, usize)>>,
    running: Vec<usize>,
    /// Position of each running job in `running`.
    slot: Vec<usize>,
    /// Waiting jobs in arrival order (only without static keys).
    waiting: Vec<usize>,
    /// Waiting jobs in key order (only with static keys).
    keyed_queue: BTreeSet<Keyed>,
    keys: Vec<f64>,
    keyed: bool,
    /// Per resource, how many waiting jobs demand none of it.
    zero_waiting: Vec<usize>,
    start: Vec<Time>,
    server: Vec<usize>,
    series: Series,
    total: Vec<i64>,
    used: Vec<i64>,
    steps: usize,
}

impl<'a> SimState<'a> {
    fn new(sim: &'a Simulation, keyed: bool) -> SimState<'a> {
        let r = sim.resources.len();
        let n = sim.jobs.len();
        SimState {
            sim,
            r,
            now: sim.arrival.first().map_or(0, |&j| sim.jobs[j].submit),
            free: sim
                .servers
                .iter()
                .flat_map(|s| s.capacity.iter().copied())
                .collect(),
            by_wend: vec![BTreeSet::new(); sim.servers.len()],
            pend: vec![0; n],
            overrun: BinaryHeap::new(),
            running: Vec::new(),
            slot: vec![usize::MAX; n],
            waiting: Vec::new(),
            keyed_queue: BTreeSet::new(),
            keys: if keyed { vec![0.0; n] } else { Vec::new() },
            keyed,
            zero_waiting: vec![0; r],
            start: vec![Time::MIN; n],
            server: vec![usize::MAX; n],
            series: Series {
                resources: sim.resources.clone(),
                ..Series::default()
            },
            total: sim.total_capacity(),
            used: vec![0; r],
            steps: 0,
        }
    }

    /// The current time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Every job of the replay (indices are input positions), as the scheduler sees it:
    /// `walltime` is the planning length [`SimJob::plan`] (the estimate when the job has one).
    /// [`SimState::input_jobs`] has the jobs as given.
    pub fn jobs(&self) -> &'a [SimJob] {
        self.sim.planning_jobs()
    }

    /// Every job of the replay as given to [`Simulation::new`] (requested walltimes).
    pub fn input_jobs(&self) -> &'a [SimJob] {
        &self.sim.jobs
    }

    pub fn resources(&self) -> &'a [String] {
        &self.sim.resources
    }

    pub fn servers(&self) -> &'a [Server] {
        &self.sim.servers
    }

    /// Free capacity of server `s` now, per resource.
    pub fn free(&self, s: usize) -> &[i64] {
        &self.free[s * self.r..(s + 1) * self.r]
    }

    /// The running jobs (in no particular order).
    pub fn running(&self) -> impl ExactSizeIterator<Item = RunningView> + '_ {
        self.running.iter().map(|&j| RunningView {
            job: j,
            server: self.server[j],
            start: self.start[j],
            walltime_end: self.start[j] + self.sim.jobs[j].walltime,
            planned_end: self.pend[j],
        })
    }

    /// Number of waiting jobs.
    pub fn waiting_len(&self) -> usize {
        if self.keyed {
            self.keyed_queue.len()
        } else {
            self.waiting.len()
        }
    }

    /// The waiting jobs (indices into [`SimState::jobs`]) in arrival order.
    pub fn waiting(&self) -> Vec<usize> {
        if self.keyed {
            let mut w: Vec<usize> = self.keyed_queue.iter().map(|k| k.job).collect();
            w.sort_by_key(|&j| (self.sim.jobs[j].submit, j));
            w
        } else {
            self.waiting.clone()
        }
    }

    /// The current state as a SPEC-section-1 instance: `now`, the servers, the running jobs
    /// (end = start + walltime) and the waiting queue in arrival order (with `runtime`, the
    /// true length, and `user`). Queue position `i` of the instance is `waiting()[i]`. Valid
    /// whenever some job waits (an instance needs a non-empty queue).
    ///
    /// With estimates, the snapshot is the scheduler's plan: a queued job's `walltime` is its
    /// planning length, with the requested walltime kept in `meta` as
    /// `{"requested_walltime": w}`, and a running job's `end` is its
    /// [`RunningView::planned_end`].
    pub fn snapshot(&self) -> Instance {
        self.snapshot_of(&self.waiting())
    }

    /// The current state as an instance whose queue is `queue` (indices into `jobs()`), in
    /// that order.
    pub fn snapshot_of(&self, queue: &[usize]) -> Instance {
        let jobs = &self.sim.jobs;
        let servers = &self.sim.servers;
        Instance {
            now: self.now,
            resources: self.sim.resources.clone(),
            servers: servers.clone(),
            running: self
                .running()
                .map(|r| RunningJob {
                    id: jobs[r.job].id.clone(),
                    server: servers[r.server].id.clone(),
                    demand: jobs[r.job].demand.clone(),
                    end: r.planned_end,
                })
                .collect(),
            queue: queue
                .iter()
                .map(|&j| {
                    let job = &jobs[j];
                    let mut q =
                        QueuedJob::new(job.id.clone(), job.submit, job.demand.clone(), job.plan());
                    q.runtime = Some(job.runtime);
                    q.user = job.user.clone();
                    if job.estimate.is_some() {
                        q.meta = Some(serde_json::json!({ "requested_walltime": job.walltime }));
                    }
                    q
                })
                .collect(),
        }
    }

    fn demand(&self, j: usize) -> &'a [i64] {
        &self.sim.jobs[j].demand
    }

    fn arrive(&mut self, j: usize, key: f64) {
        for (q, &d) in self.demand(j).iter().enumerate() {
            if d == 0 {
                self.zero_waiting[q] += 1;
            }
        }
        if self.keyed {
            self.keys[j] = key;
            self.keyed_queue.insert(Keyed {
                key,
                submit: self.sim.jobs[j].submit,
                job: j,
            });
        } else {
            self.waiting.push(j);
        }
    }

    /// First server with room for `j` now.
    fn fits_now(&self, j: usize) -> Option<usize> {
        let d = self.demand(j);
        (0..self.sim.servers.len()).find(|&s| self.room(s, d))
    }

    #[inline]
    fn room(&self, s: usize, d: &[i64]) -> bool {
        self.free[s * self.r..(s + 1) * self.r]
            .iter()
            .zip(d)
            .all(|(f, d)| d <= f)
    }

    /// Whether no waiting job can fit on any server now: every server lacks some resource
    /// that every waiting job needs.
    fn closed(&self) -> bool {
        (0..self.sim.servers.len()).all(|s| {
            self.free[s * self.r..(s + 1) * self.r]
                .iter()
                .zip(&self.zero_waiting)
                .any(|(&f, &z)| f == 0 && z == 0)
        })
    }

    /// Starts waiting job `j` on server `s` now (does not touch the queue containers).
    fn begin(&mut self, j: usize, s: usize, heap: &mut BinaryHeap<Reverse<(Time, usize)>>) {
        let job = &self.sim.jobs[j];
        let r = self.r;
        for q in 0..r {
            self.free[s * r + q] -= job.demand[q];
            self.used[q] += job.demand[q];
            if job.demand[q] == 0 {
                self.zero_waiting[q] -= 1;
            }
        }
        self.start[j] = self.now;
        self.server[j] = s;
        self.slot[j] = self.running.len();
        self.running.push(j);
        let plan = job.plan();
        self.pend[j] = self.now + plan;
        self.by_wend[s].insert((self.now + plan, j));
        if job.run() > plan {
            self.overrun.push(Reverse((self.now + plan, j)));
        }
        heap.push(Reverse((self.now + job.run(), j)));
    }

    fn finish(&mut self, j: usize) {
        let job = &self.sim.jobs[j];
        let s = self.server[j];
        let r = self.r;
        for q in 0..r {
            self.free[s * r + q] += job.demand[q];
            self.used[q] -= job.demand[q];
        }
        self.by_wend[s].remove(&(self.pend[j], j));
        let k = self.slot[j];
        self.running.swap_remove(k);
        if let Some(&moved) = self.running.get(k) {
            self.slot[moved] = k;
        }
        self.slot[j] = usize::MAX;
    }

    /// Running jobs whose estimate has run out (start + estimate <= now) are planned to end
    /// at their walltime instead (Tsafrir et al. 2007 correct an exceeded prediction the
    /// same way, to the user's request).
    fn replan(&mut self) {
        while let Some(&Reverse((t, j))) = self.overrun.peek() {
            if t > self.now {
                break;
            }
            self.overrun.pop();
            if self.slot[j] == usize::MAX {
                continue;
            }
            let s = self.server[j];
            self.by_wend[s].remove(&(self.pend[j], j));
            self.pend[j] = self.start[j] + self.sim.jobs[j].walltime;
            self.by_wend[s].insert((self.pend[j], j));
        }
    }

    /// Removes started jobs from the queue containers.
    fn dequeue(&mut self, started: &[usize]) {
        if started.is_empty() {
            return;
        }
        if self.keyed {
            for &j in started {
                self.keyed_queue.remove(&Keyed {
                    key: self.keys[j],
                    submit: self.sim.jobs[j].submit,
                    job: j,
                });
            }
        } else {
            let start = &self.start;
            self.waiting.retain(|&j| start[j] == Time::MIN);
        }
    }

    /// Earliest time job `j` fits from the running jobs' walltime ends: (time, server, extra
    /// capacity left on that server at that time once `j` is counted).
    fn reservation(&self, j: usize) -> (Time, usize, Vec<i64>) {
        let d = self.demand(j);
        let r = self.r;
        let mut best: Option<(Time, usize, Vec<i64>)> = None;
        let mut acc = vec![0i64; r];
        for (s, server) in self.sim.servers.iter().enumerate() {
            if !d.iter().zip(&server.capacity).all(|(d, c)| d <= c) {
                continue;
            }
            acc.copy_from_slice(self.free(s));
            let fits = |acc: &[i64]| acc.iter().zip(d).all(|(a, d)| d <= a);
            let mut found = if fits(&acc) { Some(self.now) } else { None };
            if found.is_none() {
                let mut iter = self.by_wend[s].iter().peekable();
                while let Some(&(t, k)) = iter.next() {
                    if best.as_ref().is_some_and(|b| t >= b.0) {
                        break;
                    }
                    for (a, x) in acc.iter_mut().zip(&self.sim.jobs[k].demand) {
                        *a += x;
                    }
                    if iter.peek().is_some_and(|&&(t2, _)| t2 == t) {
                        continue;
                    }
                    if fits(&acc) {
                        found = Some(t);
                        break;
                    }
                }
            }
            if let Some(t) = found {
                if best.as_ref().is_none_or(|b| t < b.0) {
                    let extra = acc.iter().zip(d).map(|(a, d)| a - d).collect();
                    best = Some((t, s, extra));
                }
            }
        }
        // Every job fits some server, and with all running jobs gone it fits there.
        best.expect("a job that fits some server has a reservation")
    }

    fn record(&mut self) {
        let queue = self.waiting_len() as u32;
        let running = self.running.len() as u32;
        let series = &mut self.series;
        // Zero-length jobs can make two steps at one instant: keep the last.
        if series.time.last() == Some(&self.now) {
            series.time.pop();
            series.queue.pop();
            series.running.pop();
            let len = series.used.len() - self.r;
            series.used.truncate(len);
        } else {
            self.steps += 1;
        }
        series.time.push(self.now);
        series.queue.push(queue);
        series.running.push(running);
        for q in 0..self.r {
            let frac = if self.total[q] > 0 {
                self.used[q] as f64 / self.total[q] as f64
            } else {
                0.0
            };
            series.used.push(frac);
        }
    }

    fn finish_result(self) -> SimResult {
        let jobs = &self.sim.jobs;
        let records: Vec<JobRecord> = jobs
            .iter()
            .enumerate()
            .map(|(j, job)| {
                let start = self.start[j];
                let run = job.run();
                let wait = start - job.submit;
                JobRecord {
                    id: job.id.clone(),
                    submit: job.submit,
                    start,
                    end: start + run,
                    wait,
                    run,
                    bsld: job_bsld(wait, run),
                    killed: job.killed(),
                    server: self.server[j],
                }
            })
            .collect();
        let summary = Summary::of(&records, jobs, &self.total, self.steps);
        SimResult {
            jobs: records,
            series: self.series,
            summary,
        }
    }
}

/// Scratch of one replay.
struct Engine {
    heap: BinaryHeap<Reverse<(Time, usize)>>,
    next_arrival: usize,
    order: Vec<usize>,
    started: Vec<usize>,
}

impl Engine {
    /// One step's policy call and start rule.
    fn pass<P: Policy + ?Sized>(
        &mut self,
        state: &mut SimState<'_>,
        policy: &mut P,
        rule: StartRule,
    ) -> Result<(), SimError> {
        self.started.clear();
        if state.keyed {
            match rule {
                StartRule::Conservative => {
                    self.order.clear();
                    self.order.extend(state.keyed_queue.iter().map(|k| k.job));
                    conservative(state, &self.order, &mut self.heap, &mut self.started);
                }
                _ => {
                    // Walk the sorted queue without cloning it: take it out for the pass.
                    let queue = std::mem::take(&mut state.keyed_queue);
                    easy_or_strict(
                        state,
                        queue.iter().map(|k| k.job),
                        rule,
                        &mut self.heap,
                        &mut self.started,
                    );
                    state.keyed_queue = queue;
                }
            }
        } else {
            let order = policy.order(&*state, &state.waiting);
            check_order(&order, state.waiting.len(), state.now)?;
            self.order.clear();
            self.order.extend(order.iter().map(|&i| state.waiting[i]));
            match rule {
                StartRule::Conservative => {
                    conservative(state, &self.order, &mut self.heap, &mut self.started)
                }
                _ => easy_or_strict(
                    state,
                    self.order.iter().copied(),
                    rule,
                    &mut self.heap,
                    &mut self.started,
                ),
            }
        }
        let started = std::mem::take(&mut self.started);
        state.dequeue(&started);
        self.started = started;
        Ok(())
    }
}

fn check_order(order: &[usize], n: usize, now: Time) -> Result<(), SimError> {
    let bad = |why: String| SimError::BadOrder {
        now,
        waiting: n,
        why,
    };
    if order.len() != n {
        return Err(bad(format!("it has {} entries", order.len())));
    }
    let mut seen = vec![false; n];
    for &i in order {
        if i >= n {
            return Err(bad(format!("position {i} is out of range")));
        }
        if seen[i] {
            return Err(bad(format!("position {i} appears twice")));
        }
        seen[i] = true;
    }
    Ok(())
}

/// The strict and EASY start rules over jobs in policy order.
fn easy_or_strict(
    state: &mut SimState<'_>,
    mut order: impl Iterator<Item = usize>,
    rule: StartRule,
    heap: &mut BinaryHeap<Reverse<(Time, usize)>>,
    started: &mut Vec<usize>,
) {
    let mut head = None;
    for j in order.by_ref() {
        match state.fits_now(j) {
            Some(s) => {
                state.begin(j, s, heap);
                started.push(j);
            }
            None => {
                head = Some(j);
                break;
            }
        }
    }
    let Some(head) = head else { return };
    if rule == StartRule::Strict || state.closed() {
        return;
    }
    let (t_res, s_res, mut extra) = state.reservation(head);
    let now = state.now;
    let servers = state.sim.servers.len();
    for j in order {
        let job = &state.sim.jobs[j];
        let d = &job.demand;
        let ends_before = now + job.plan() <= t_res;
        let mut chosen = None;
        for s in 0..servers {
            if !state.room(s, d) {
                continue;
            }
            if s != s_res || ends_before {
                chosen = Some((s, false));
                break;
            }
            if extra.iter().zip(d).all(|(e, d)| d <= e) {
                chosen = Some((s, true));
                break;
            }
        }
        if let Some((s, uses_extra)) = chosen {
            if uses_extra {
                for (e, x) in extra.iter_mut().zip(d) {
                    *e -= x;
                }
            }
            state.begin(j, s, heap);
            started.push(j);
            if state.closed() {
                break;
            }
        }
    }
}

/// The conservative start rule: dispatch the whole queue in `order` (SPEC section 3) and start
/// what the dispatcher places now.
fn conservative(
    state: &mut SimState<'_>,
    order: &[usize],
    heap: &mut BinaryHeap<Reverse<(Time, usize)>>,
    started: &mut Vec<usize>,
) {
    if state.closed() {
        return;
    }
    let instance = state.snapshot_of(order);
    // The snapshot of a valid simulation is a valid instance (running ends > now, every
    // queued job fits some server, unique ids).
    let problem = Problem::new(&instance).expect("a replay snapshot is a valid instance");
    let mut dispatcher = Dispatcher::new(&problem, Variant::Serial);
    let now = state.now;
    for (i, &j) in order.iter().enumerate() {
        let at = dispatcher.place(i);
        if at.start == now {
            // The dispatcher found room at `now` counting the running jobs and the jobs
            // started before, so the job has room now on that server.
            state.begin(j, at.server, heap);
            started.push(j);
            // Later jobs cannot start now once every server lacks something they all need;
            // their reservations are in the future, so they need not be placed.
            if state.closed() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod estimate_tests {
    use super::*;

    fn pool(cores: i64) -> Vec<Server> {
        vec![Server {
            id: "pool".into(),
            capacity: vec![cores],
        }]
    }

    fn job(id: &str, submit: Time, cores: i64, wall: Time, run: Time, est: Option<Time>) -> SimJob {
        SimJob {
            estimate: est,
            ..SimJob::new(id, submit, vec![cores], wall, run)
        }
    }

    fn starts(jobs: Vec<SimJob>, policy: &mut dyn Policy, rule: StartRule) -> Vec<Time> {
        let sim = Simulation::new(vec!["cores".into()], pool(4), jobs).unwrap();
        let r = sim.run(policy, rule).unwrap();
        r.jobs.iter().map(|j| j.start).collect()
    }

    // a (2 of 4 cores, wall 1000, run 100) at 0; b (4 cores) at 1 is blocked; c (2 cores,
    // wall 500, run 50) at 2 fits now. Planned with walltimes, b's reservation is at 1000 and
    // c backfills (ends 502 <= 1000). With a's estimate 100, b's reservation is at 100 and c
    // would delay it: c waits until b ends at 200. With c's estimate 50 too, c ends (52) before
    // the reservation and backfills again.
    #[test]
    fn reservations_and_backfill_use_the_estimate() {
        let base = |ea, ec| {
            vec![
                job("a", 0, 2, 1000, 100, ea),
                job("b", 1, 4, 100, 100, None),
                job("c", 2, 2, 500, 50, ec),
            ]
        };
        for rule in [StartRule::Easy, StartRule::Conservative] {
            assert_eq!(starts(base(None, None), &mut Fcfs, rule), vec![0, 100, 2]);
            assert_eq!(
                starts(base(Some(100), None), &mut Fcfs, rule),
                vec![0, 100, 200]
            );
            assert_eq!(
                starts(base(Some(100), Some(50)), &mut Fcfs, rule),
                vec![0, 100, 2]
            );
        }
    }

    // a (2 cores, wall 1000, run 300, estimate 100) outlives its estimate. b (4 cores) at 1
    // gets a reservation at 100; c (2 cores, wall 150) at 2 would delay it and waits. At 150
    // (d arrives) a is re-planned to end at its walltime 1000, so b's reservation moves to
    // 1000 and c (ends 300) backfills at 150. At 300 a and c end: b starts, d after it.
    #[test]
    fn an_exceeded_estimate_falls_back_to_the_walltime() {
        let jobs = vec![
            job("a", 0, 2, 1000, 300, Some(100)),
            job("b", 1, 4, 100, 100, None),
            job("c", 2, 2, 150, 150, None),
            job("d", 150, 2, 100, 100, None),
        ];
        assert_eq!(
            starts(jobs.clone(), &mut Fcfs, StartRule::Easy),
            vec![0, 300, 150, 400]
        );
        // The snapshot at 150 (before the start rule) shows a planned to its walltime.
        let sim = Simulation::new(vec!["cores".into()], pool(4), jobs).unwrap();
        let mut seen = Vec::new();
        let mut spy = OrderFn(|state: &SimState<'_>, waiting: &[usize]| {
            let inst = state.snapshot();
            crate::validate(&inst).unwrap();
            seen.push((state.now(), inst.running.first().map(|r| r.end)));
            (0..waiting.len()).collect()
        });
        sim.run(&mut spy, StartRule::Easy).unwrap();
        assert!(seen.contains(&(1, Some(100))), "{seen:?}");
        assert!(seen.contains(&(150, Some(1000))), "{seen:?}");
    }

    /// SJF as a static key on the job's walltime, as the policy sees it.
    struct Sjf;
    impl Policy for Sjf {
        fn order(&mut self, _: &SimState<'_>, waiting: &[usize]) -> Vec<usize> {
            (0..waiting.len()).collect()
        }
        fn static_key(&self, job: &SimJob) -> Option<f64> {
            Some(job.walltime as f64)
        }
    }

    // x (4 cores) runs 0..100; y (wall 500, estimate 20) and z (wall 50) wait. SJF on
    // walltimes runs z first; on the estimates y first. Both are killed at their walltime
    // only, and the snapshot's meta keeps y's request.
    #[test]
    fn policies_see_the_estimate() {
        let jobs = |ey| {
            vec![
                job("x", 0, 4, 100, 100, None),
                job("y", 1, 4, 500, 30, ey),
                job("z", 2, 4, 50, 50, None),
            ]
        };
        assert_eq!(
            starts(jobs(None), &mut Sjf, StartRule::Easy),
            vec![0, 150, 100]
        );
        assert_eq!(
            starts(jobs(Some(20)), &mut Sjf, StartRule::Easy),
            vec![0, 100, 130]
        );
        let sim = Simulation::new(vec!["cores".into()], pool(4), jobs(Some(20))).unwrap();
        assert_eq!(sim.planning_jobs()[1].walltime, 20);
        assert_eq!(sim.jobs()[1].walltime, 500);
        let mut metas = Vec::new();
        let mut spy = OrderFn(|state: &SimState<'_>, waiting: &[usize]| {
            let inst = state.snapshot();
            for q in &inst.queue {
                metas.push((q.id.clone(), q.walltime, q.meta.clone()));
            }
            (0..waiting.len()).collect()
        });
        sim.run(&mut spy, StartRule::Easy).unwrap();
        assert!(metas.contains(&(
            "y".into(),
            20,
            Some(serde_json::json!({"requested_walltime": 500}))
        )));
        assert!(metas.contains(&("z".into(), 50, None)));
        let bad = vec![job("q", 0, 1, 10, 10, Some(0))];
        let err = Simulation::new(vec!["cores".into()], pool(4), bad).unwrap_err();
        assert!(matches!(err, SimError::BadEstimate { .. }), "{err}");
    }
}
