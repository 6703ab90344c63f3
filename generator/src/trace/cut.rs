//! Snapshots cut from a trace replay: SPEC-section-1 instances taken at sampled event times of
//! an online replay (SPEC section 5) of an SWF trace.
//!
//! The trace is replayed from an empty cluster by the caller's [`Policy`] (a priority rule,
//! a solver, ...) and [`StartRule`]. An *event* is a step of the replay (an instant where a
//! job arrives or ends) at which the waiting queue is non-empty; events are numbered 1, 2,
//! ... in time order. [`Select::Every`]`(n)` takes events n, 2n, 3n, ...;
//! [`Select::Sample`]`(k)` takes k events drawn uniformly without replacement (ChaCha8
//! seeded by [`CutConfig::seed`]; all of them when there are fewer than k). A taken event
//! whose queue is shorter than [`CutConfig::queue_min`] is skipped and counted
//! ([`CutReport::skipped_short`]); [`CutConfig::count`] caps the number of instances.
//!
//! The cut happens at the step's instant **after** its completions and arrivals and
//! **before** the start rule starts jobs: the queue is exactly what the scheduler must decide
//! on at that instant. The instance has
//!
//! - `now` = the instant; the trace's servers ([`cluster`]);
//! - every running job with `end` = start + requested walltime (SPEC; always > `now`, since a
//!   job is killed at its walltime and completions at `now` are already processed);
//! - the waiting queue in arrival order (submit, then trace order), with `submit`, `demand`
//!   (requested processors), `walltime`, the true run time in `runtime` and `user` =
//!   `"u<user id>"` (absent when the trace has none). A queue longer than
//!   [`CutConfig::queue_max`] is cut to its `queue_max` **oldest** jobs (counted in
//!   [`CutReport::truncated`]); the jobs cut away are simply not in the instance.
//!
//! Ids are the trace's ([`job_id`]: `j<number>`). Every instance passes
//! [`schedlm_model::validate()`] (checked; a failure is an error, never a dropped instance).
//!
//! With [`CutConfig::estimate`], each queued job's `walltime` becomes the run-time estimate
//! ([`Predictor::predict`], in [1, walltime]) made at its submission, and its requested
//! walltime is kept in `meta` as `{"requested_walltime": w}`. The predictor is fed the
//! replay's own completions in time order, completions before submissions at equal times, so
//! an estimate never uses a job that completes after its submit (hence after `now`). The
//! replay itself is still scheduled with the requested walltimes (the states are those of the
//! scheduler that ran the trace); only the snapshot carries the better knowledge, and SPEC's
//! dispatcher then plans the queue with the estimates. Running jobs keep their SPEC end
//! (start + requested walltime).
//!
//! The replay runs twice (once to count events and learn completion times, once to cut), so
//! the policy must be deterministic; its static key, if any, is ignored (the policy's
//! [`Policy::order`] is called at every event). Same trace, policy and config: same
//! instances.
//!
//! ```
//! use schedlm_generator::trace::cut::{cut_trace, CutConfig, Select};
//! use schedlm_generator::trace::swf::{parse_swf, SwfOptions};
//! use schedlm_model::sim::Fcfs;
//!
//! let text = "; MaxProcs: 4
//! 1 0 -1 100 4 -1 -1 4 200 -1 1 7 -1 -1 -1 -1 -1 -1
//! 2 10 -1 50 2 -1 -1 2 60 -1 1 7 -1 -1 -1 -1 -1 -1
//! 3 20 -1 30 2 -1 -1 2 40 -1 1 8 -1 -1 -1 -1 -1 -1
//! ";
//! let trace = parse_swf(text.as_bytes(), "t.swf", &SwfOptions::default()).unwrap();
//! let mut config = CutConfig::new(1, 2);
//! config.select = Select::Every(1);
//! let cut = cut_trace(&trace, &config, &mut Fcfs).unwrap();
//! // Events with a waiting queue: 0 (j1 arrives), 10 (j2), 20 (j2, j3), 100 (j2, j3).
//! let nows: Vec<i64> = cut.instances.iter().map(|i| i.now).collect();
//! assert_eq!(nows, vec![0, 10, 20, 100]);
//! assert_eq!(cut.instances[2].running[0].end, 200); // j1: start 0 + walltime 200
//! assert_eq!(cut.instances[2].queue[1].user.as_deref(), Some("u8"));
//! ```

use std::ops::Range;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use schedlm_model::sim::{Policy, SimError, SimJob, SimState, Simulation, StartRule};
use schedlm_model::{validate, Instance, InstanceError, Time};
use serde::{Deserialize, Serialize};

use crate::trace::estimate::{predict_online, EstimateError, Estimator, Predictor};
use crate::trace::swf::{cluster, job_id, ClusterShape, SwfError, Trace};

/// Which events to cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Select {
    /// Events n, 2n, 3n, ... (1-based; n >= 1).
    Every(usize),
    /// k events drawn uniformly without replacement (all when fewer), in time order.
    Sample(usize),
}

impl Select {
    /// Every `every`-th event, or a sample of `sample` events; every event when neither.
    pub fn of(every: Option<usize>, sample: Option<usize>) -> Select {
        match (every, sample) {
            (_, Some(k)) => Select::Sample(k),
            (Some(n), None) => Select::Every(n),
            (None, None) => Select::Every(1),
        }
    }
}

/// What to cut.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CutConfig {
    /// Events whose queue is shorter are skipped (>= 1).
    pub queue_min: usize,
    /// Longer queues are cut to their oldest `queue_max` jobs.
    pub queue_max: usize,
    /// Which events of the replay to cut (every n-th, or a seeded sample).
    pub select: Select,
    /// Most instances to return; `None` = no cap.
    pub count: Option<usize>,
    /// Seed of [`Select::Sample`].
    pub seed: u64,
    /// Replace queued walltimes by this estimator's predictions.
    pub estimate: Option<Estimator>,
    /// Start rule of the replay (SPEC section 5: `strict`, `easy` or `conservative`); it
    /// decides which jobs are running and waiting at each event.
    pub start_rule: StartRule,
    /// How the trace's machine becomes SPEC servers: one pool or identical nodes.
    pub shape: ClusterShape,
}

impl CutConfig {
    /// Queue range `min..=max`, every event, no cap, seed 1, no estimate, EASY, pool.
    pub fn new(queue_min: usize, queue_max: usize) -> CutConfig {
        CutConfig {
            queue_min,
            queue_max,
            select: Select::Every(1),
            count: None,
            seed: 1,
            estimate: None,
            start_rule: StartRule::Easy,
            shape: ClusterShape::Pool,
        }
    }

    /// Checks the options; the error names the bad one.
    pub fn check(&self) -> Result<(), CutError> {
        if self.queue_min == 0 || self.queue_min > self.queue_max {
            return Err(CutError::Config(format!(
                "queue range {}..{} must satisfy 1 <= MIN <= MAX (--queue)",
                self.queue_min, self.queue_max
            )));
        }
        if self.select == Select::Every(0) {
            return Err(CutError::Config(
                "`every` (--every) is 0; take every n-th event with n >= 1".into(),
            ));
        }
        Ok(())
    }
}

/// What a cut did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CutReport {
    /// Jobs replayed.
    pub jobs: usize,
    /// Events: instants of the replay with a non-empty waiting queue.
    pub events: usize,
    /// Events taken by the selection.
    pub selected: usize,
    /// Taken events skipped because their queue was shorter than `queue_min`.
    pub skipped_short: usize,
    /// Taken events not cut because `count` instances were already made.
    pub over_count: usize,
    /// Instances whose queue was cut to the `queue_max` oldest jobs.
    pub truncated: usize,
    /// Instances made.
    pub instances: usize,
}

impl std::fmt::Display for CutReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} jobs replayed, {} events with a waiting queue, {} selected, {} skipped (queue too short), {} over the count, {} instances ({} queues cut to the oldest jobs)",
            self.jobs,
            self.events,
            self.selected,
            self.skipped_short,
            self.over_count,
            self.instances,
            self.truncated
        )
    }
}

/// Instances and the report of a cut.
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    /// The snapshots, in time order of their events; each has passed
    /// [`schedlm_model::validate()`].
    pub instances: Vec<Instance>,
    /// Counts of the replay's events and of what happened to the selected ones.
    pub report: CutReport,
}

/// Why a cut failed.
#[derive(Debug, thiserror::Error)]
pub enum CutError {
    /// A bad [`CutConfig`]: `queue_min` is 0 or above `queue_max`, or the selection is
    /// `Select::Every(0)`; the message names the option and the command-line flag.
    #[error("{0}")]
    Config(String),
    /// The trace has no job (all were skipped by the cleaning, or the file had none).
    #[error("the trace has no job left after cleaning")]
    Empty,
    /// The trace's machine cannot be laid out as [`CutConfig::shape`] asks: unknown machine
    /// size, a bad node shape, or a job larger than a server.
    #[error(transparent)]
    Cluster(#[from] SwfError),
    /// The replay could not be set up or run.
    #[error("replay: {0}")]
    Sim(#[from] SimError),
    /// The run-time estimator of [`CutConfig::estimate`] failed.
    #[error("estimate: {0}")]
    Estimate(#[from] EstimateError),
    /// A cut snapshot failed [`schedlm_model::validate()`]; this is a bug in this crate.
    #[error("internal error: the snapshot at {now} is invalid: {source}")]
    Invalid {
        /// The snapshot's `now`, the replay instant of the event (seconds, trace clock).
        now: Time,
        /// The validation error, which names the job and the field.
        #[source]
        source: InstanceError,
    },
}

/// The trace's jobs as replay jobs, in trace order: id `j<number>`, demand = requested
/// processors, user `u<user>` (none for a negative user id).
pub fn sim_jobs(trace: &Trace) -> Vec<SimJob> {
    window_jobs(trace, 0..trace.jobs.len(), None)
}

/// The jobs `range` of the trace as replay jobs, as [`sim_jobs`] makes them, with planning
/// lengths (`estimate`) from `plans` (indexed like the trace's jobs) when given.
pub fn window_jobs(trace: &Trace, range: Range<usize>, plans: Option<&[Time]>) -> Vec<SimJob> {
    trace.jobs[range.clone()]
        .iter()
        .zip(range)
        .map(|(j, i)| SimJob {
            user: (j.user >= 0).then(|| format!("u{}", j.user)),
            estimate: plans.map(|p| p[i]),
            ..SimJob::new(job_id(j), j.submit, vec![j.procs], j.walltime, j.runtime)
        })
        .collect()
}

/// Counts events and passes the order through (static keys hidden).
struct Counter<'p> {
    inner: &'p mut dyn Policy,
    events: usize,
}

impl Policy for Counter<'_> {
    fn order(&mut self, state: &SimState<'_>, waiting: &[usize]) -> Vec<usize> {
        self.events += 1;
        self.inner.order(state, waiting)
    }
}

/// Cuts the selected events, then passes the order through.
struct Cutter<'p, 'c> {
    inner: &'p mut dyn Policy,
    config: &'c CutConfig,
    /// Selected event numbers (0-based), ascending.
    selected: Vec<usize>,
    next: usize,
    event: usize,
    predictions: Option<Vec<Time>>,
    cap: usize,
    report: CutReport,
    instances: Vec<Instance>,
    error: Option<CutError>,
}

impl Cutter<'_, '_> {
    fn cut(&mut self, state: &SimState<'_>, waiting: &[usize]) {
        if waiting.len() < self.config.queue_min {
            self.report.skipped_short += 1;
            return;
        }
        if self.instances.len() >= self.cap {
            self.report.over_count += 1;
            return;
        }
        // `waiting` is in arrival order: the oldest jobs first.
        let keep = waiting.len().min(self.config.queue_max);
        if keep < waiting.len() {
            self.report.truncated += 1;
        }
        let mut instance = state.snapshot_of(&waiting[..keep]);
        if let Some(predictions) = &self.predictions {
            for (q, &j) in instance.queue.iter_mut().zip(waiting) {
                let requested = q.walltime;
                q.walltime = predictions[j];
                q.meta = Some(serde_json::json!({ "requested_walltime": requested }));
            }
        }
        if let Err(source) = validate(&instance) {
            if self.error.is_none() {
                self.error = Some(CutError::Invalid {
                    now: instance.now,
                    source,
                });
            }
            return;
        }
        self.instances.push(instance);
    }
}

impl Policy for Cutter<'_, '_> {
    fn order(&mut self, state: &SimState<'_>, waiting: &[usize]) -> Vec<usize> {
        let k = self.event;
        self.event += 1;
        if self.selected.get(self.next) == Some(&k) {
            self.next += 1;
            self.cut(state, waiting);
        }
        self.inner.order(state, waiting)
    }
}

/// The 0-based numbers of the selected events among `events`.
pub fn select_events(select: Select, events: usize, seed: u64) -> Vec<usize> {
    match select {
        Select::Every(n) => (1..=events / n.max(1)).map(|i| i * n - 1).collect(),
        Select::Sample(k) => {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut v = rand::seq::index::sample(&mut rng, events, k.min(events)).into_vec();
            v.sort_unstable();
            v
        }
    }
}

/// Replays `trace` with `policy` and `config.start_rule` and cuts instances at the selected
/// events (see the module docs).
pub fn cut_trace(
    trace: &Trace,
    config: &CutConfig,
    policy: &mut dyn Policy,
) -> Result<Cut, CutError> {
    config.check()?;
    if trace.jobs.is_empty() {
        return Err(CutError::Empty);
    }
    let (resources, servers) = cluster(trace, config.shape)?;
    let sim = Simulation::new(resources, servers, sim_jobs(trace))?;

    // Pass 1: count the events and learn the completion times.
    let mut counter = Counter {
        inner: &mut *policy,
        events: 0,
    };
    let first = sim.run(&mut counter, config.start_rule)?;
    let events = counter.events;
    let predictions = match config.estimate {
        None => None,
        Some(estimator) => {
            let completions: Vec<Time> = first.jobs.iter().map(|j| j.end).collect();
            let mut predictor = Predictor::new(estimator);
            Some(predict_online(
                &mut predictor,
                &trace.jobs,
                &completions,
                0,
            )?)
        }
    };

    // Pass 2: the same replay, cutting at the selected events.
    let selected = select_events(config.select, events, config.seed);
    let mut cutter = Cutter {
        inner: policy,
        config,
        report: CutReport {
            jobs: trace.jobs.len(),
            events,
            selected: selected.len(),
            ..CutReport::default()
        },
        selected,
        next: 0,
        event: 0,
        predictions,
        cap: config.count.unwrap_or(usize::MAX),
        instances: Vec::new(),
        error: None,
    };
    sim.run(&mut cutter, config.start_rule)?;
    if let Some(e) = cutter.error {
        return Err(e);
    }
    let mut report = cutter.report;
    report.instances = cutter.instances.len();
    Ok(Cut {
        instances: cutter.instances,
        report,
    })
}
