//! Run-time estimators for trace jobs, used online and scored on a trace.
//!
//! A scheduler plans with the user's requested walltime, which overestimates the true run
//! time several times over on real logs. An [`Estimator`] predicts the run time of a newly
//! submitted job from what has been seen so far:
//!
//! - [`Estimator::User`]: the requested walltime itself (the baseline).
//! - [`Estimator::Last2`]: the mean of the run times of the same user's last two completed
//!   jobs (Tsafrir, Etsion & Feitelson, "Backfilling using system-generated predictions rather
//!   than user runtime estimates", IEEE TPDS 18(6), 2007); the walltime while the user has
//!   fewer than two completed jobs.
//! - [`Estimator::Model`]: an online least-squares regression of log run time on the job's
//!   request and its user's history (see [`Estimator::Model`] for the features).
//! - [`Estimator::Similar`]: the run time of the most similar of the user's recent jobs, by
//!   the matcher of [`crate::similar`] over executable, queue, group, partition, processors and
//!   requested time.
//!
//! Every prediction is an integer in [1, walltime]. Users with a negative id (unknown, as
//! throughout `lublin_256.swf`) have no history.
//!
//! # Causality
//!
//! A [`Predictor`] only knows the jobs passed to [`Predictor::observe`]. The replay in
//! [`predict_online`] observes each job at its completion time and asks for a prediction at
//! each submit time, completions first at equal times (as SPEC section 5 processes events),
//! so a prediction never uses a job that completes after the query. What a predictor learns
//! from a job is its *effective* run time, min(run time, walltime): the length the job would
//! have in a replay after SPEC section 5, which kills a job at its walltime. That is also the
//! target the scores compare with.
//!
//! The completion time of a job is `submit + wait + run time` on the trace's own timeline
//! (the wait of field 3, from [`crate::trace::swf::read_swf_with_waits`]; 0 where missing), or
//! `submit + run time` with [`completions`]`(trace, None)` (as if no job waited, which
//! reveals completions earlier than they happened).
//!
//! ```
//! use schedlm_generator::trace::estimate::{Estimator, Predictor};
//! use schedlm_generator::trace::swf::TraceJob;
//!
//! let job = |number, runtime, walltime| TraceJob {
//!     number, submit: 0, runtime, walltime, procs: 1, user: 7, group: -1, executable: -1,
//!     queue: -1, partition: -1, status: 1, line: 0,
//! };
//! let mut last2 = Predictor::new(Estimator::Last2);
//! assert_eq!(last2.predict(&job(3, 0, 1000)), 1000); // no history: the walltime
//! last2.observe(&job(1, 100, 1000));
//! last2.observe(&job(2, 300, 1000));
//! assert_eq!(last2.predict(&job(3, 0, 1000)), 200); // (100 + 300) / 2
//! assert_eq!(last2.predict(&job(3, 0, 150)), 150); // capped at the walltime
//! ```

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::similar::{self, Descriptor, Match};
use crate::trace::swf::{Trace, TraceJob};

/// A way to predict a job's run time at its submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Estimator {
    /// The user's requested walltime (the baseline).
    User,
    /// The mean of the user's last two effective run times, rounded half up; the walltime
    /// while the user has fewer than two completed jobs; capped at the walltime.
    Last2,
    /// Online ridge regression (lambda = 1e-3) of ln(effective run time) on ten
    /// features: intercept, ln walltime, ln processors, and from the user's
    /// completed jobs the last and the second-last ln run time, the mean ln run time, and the
    /// ln run time of the last job with the same walltime and processors, each with a
    /// 0/1 indicator of being present (and 0 when absent). The prediction is
    /// exp(w . x) rounded and clamped to [1, walltime]; the walltime until 20 jobs have been
    /// observed. The weights are refitted (exactly, a 10 x 10 solve) after every observation,
    /// with the features the job had when it was submitted, so training and prediction
    /// agree. Deterministic. (The constants: `RIDGE`, `MODEL_FEATURES`, `MODEL_WARMUP`.)
    Model,
    /// The effective run time of the nearest of the user's last [`SIMILAR_RECENT`] completed
    /// jobs by [`crate::similar::distance`] over the kinds executable, queue, group and
    /// partition (SWF fields 14, 15, 13, 16; -1 is missing) and the sizes processors and
    /// requested time; the most recent wins ties. The walltime while the user has no completed
    /// job; capped at the walltime.
    Similar,
}

impl Estimator {
    /// Every estimator, in declaration order.
    pub const ALL: [Estimator; 4] = [
        Estimator::User,
        Estimator::Last2,
        Estimator::Model,
        Estimator::Similar,
    ];

    /// The name used on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Estimator::User => "user",
            Estimator::Last2 => "last2",
            Estimator::Model => "model",
            Estimator::Similar => "similar",
        }
    }
}

impl fmt::Display for Estimator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Estimator {
    type Err = EstimateError;

    fn from_str(s: &str) -> Result<Estimator, EstimateError> {
        Estimator::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| EstimateError::UnknownEstimator(s.to_string()))
    }
}

/// Why an evaluation could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EstimateError {
    /// An estimator name (the string carried) parsed with `Estimator`'s `FromStr` is not
    /// `user`, `last2`, `model` or `similar`.
    #[error("unknown estimator \"{0}\"; expected one of: user, last2, model, similar")]
    UnknownEstimator(String),
    /// A [`Split::Fraction`] (the value carried) is not in [0, 1), or is NaN.
    #[error("split fraction {0} must lie in [0, 1)")]
    Fraction(f64),
    /// The split point is at or past the last job, so no job is left to score (also raised
    /// with both fields 0 when the test trace of [`evaluate_transfer`] is empty).
    #[error("the split leaves no test job ({jobs} jobs, split at job {at}); lower the split")]
    NoTestJobs {
        /// Number of jobs in the trace.
        jobs: usize,
        /// 0-based index of the first job that would be scored.
        at: usize,
    },
    /// [`predict_online`] got a completion-time list whose length differs from the job list.
    #[error("{completions} completion times given for {jobs} jobs")]
    Completions {
        /// Number of jobs given.
        jobs: usize,
        /// Number of completion times given (one per job is required).
        completions: usize,
    },
}

/// Number of features of [`Estimator::Model`].
pub const FEATURES: usize = 10;
/// Names of the model's features, in order.
pub const MODEL_FEATURES: [&str; FEATURES] = [
    "1",
    "ln walltime",
    "ln procs",
    "has last",
    "ln last run",
    "has second-last",
    "ln second-last run",
    "mean ln run of the user",
    "has same request",
    "ln run of the last same request",
];
/// Ridge penalty of the model (added to the diagonal of X'X, intercept included).
pub const RIDGE: f64 = 1e-3;
/// Observations the model needs before it predicts (the walltime until then).
pub const MODEL_WARMUP: usize = 2 * FEATURES;
/// Completed jobs per user that [`Estimator::Similar`] compares with (chosen on SDSC-SP2).
pub const SIMILAR_RECENT: usize = 16;

/// The effective run time a predictor learns from and is scored against:
/// min(run time, walltime), at least 1.
pub fn effective_runtime(job: &TraceJob) -> i64 {
    job.runtime.min(job.walltime).max(1)
}

#[derive(Debug, Clone, Default)]
struct History {
    /// The last two effective run times, most recent first.
    last: [i64; 2],
    count: u64,
    sum_ln: f64,
}

/// An online run-time predictor: feed it completed jobs in completion order with
/// [`Predictor::observe`], and ask it about a newly submitted job with
/// [`Predictor::predict`] (always in [1, walltime]).
#[derive(Debug, Clone)]
pub struct Predictor {
    estimator: Estimator,
    observed: usize,
    users: HashMap<i64, History>,
    /// Last effective run time per (user, walltime, procs).
    same: HashMap<(i64, i64, i64), i64>,
    /// Per user, the last [`SIMILAR_RECENT`] completed jobs, most recent first (similar only).
    recent: HashMap<i64, VecDeque<(Descriptor, i64)>>,
    /// Features recorded at submission, by job number (model only).
    pending: HashMap<i64, [f64; FEATURES]>,
    /// X'X and X'y of the observations so far (model only).
    xtx: [[f64; FEATURES]; FEATURES],
    xty: [f64; FEATURES],
    weights: [f64; FEATURES],
}

impl Predictor {
    /// A predictor that has seen nothing.
    pub fn new(estimator: Estimator) -> Predictor {
        Predictor {
            estimator,
            observed: 0,
            users: HashMap::new(),
            same: HashMap::new(),
            recent: HashMap::new(),
            pending: HashMap::new(),
            xtx: [[0.0; FEATURES]; FEATURES],
            xty: [0.0; FEATURES],
            weights: [0.0; FEATURES],
        }
    }

    /// The estimator this predictor applies.
    pub fn estimator(&self) -> Estimator {
        self.estimator
    }

    /// Jobs observed so far.
    pub fn observed(&self) -> usize {
        self.observed
    }

    /// The model's current weights, in the order of [`MODEL_FEATURES`] (all 0 for the other
    /// estimators and before the first observation).
    pub fn weights(&self) -> [f64; FEATURES] {
        self.weights
    }

    /// Notes that `job` was submitted now. Optional: the model then trains on the features
    /// the job had at submission rather than those it has when it completes. A job passed
    /// here must later be passed to [`Predictor::observe`], or its record stays.
    pub fn submit(&mut self, job: &TraceJob) {
        if self.estimator == Estimator::Model {
            let x = self.features(job);
            self.pending.insert(job.number, x);
        }
    }

    /// Learns from a completed job. Jobs must come in completion order.
    pub fn observe(&mut self, job: &TraceJob) {
        self.observed += 1;
        let run = effective_runtime(job);
        if self.estimator == Estimator::Model {
            let x = self
                .pending
                .remove(&job.number)
                .unwrap_or_else(|| self.features(job));
            let y = (run as f64).ln();
            for i in 0..FEATURES {
                for k in 0..FEATURES {
                    self.xtx[i][k] += x[i] * x[k];
                }
                self.xty[i] += x[i] * y;
            }
            self.weights = solve(&self.xtx, &self.xty);
        }
        if job.user < 0 || self.estimator == Estimator::User {
            return;
        }
        let h = self.users.entry(job.user).or_default();
        h.last = [run, h.last[0]];
        h.count += 1;
        h.sum_ln += (run as f64).ln();
        if self.estimator == Estimator::Model {
            self.same.insert((job.user, job.walltime, job.procs), run);
        }
        if self.estimator == Estimator::Similar {
            let recent = self.recent.entry(job.user).or_default();
            if recent.len() == SIMILAR_RECENT {
                recent.pop_back();
            }
            recent.push_front((descriptor(job), run));
        }
    }

    /// The predicted run time of `job`, in [1, walltime].
    pub fn predict(&self, job: &TraceJob) -> i64 {
        let walltime = job.walltime.max(1);
        let raw = match self.estimator {
            Estimator::User => walltime,
            Estimator::Last2 => match self.history(job) {
                Some(h) if h.count >= 2 => (h.last[0] + h.last[1] + 1) / 2,
                _ => walltime,
            },
            Estimator::Model => {
                if self.observed < MODEL_WARMUP {
                    walltime
                } else {
                    let x = self.features(job);
                    let z: f64 = x.iter().zip(&self.weights).map(|(a, b)| a * b).sum();
                    // exp of at most ln(walltime) + 1 cannot overflow before the clamp.
                    let cap = (walltime as f64).ln() + 1.0;
                    z.min(cap).exp().round() as i64
                }
            }
            Estimator::Similar => self.similar(job).unwrap_or(walltime),
        };
        raw.clamp(1, walltime)
    }

    /// The run time of the nearest of the user's recent jobs, if the user has one.
    fn similar(&self, job: &TraceJob) -> Option<i64> {
        let recent = self.recent.get(&job.user).filter(|_| job.user >= 0)?;
        let mut nearest_one = [Match::NONE; 1];
        let query = descriptor(job);
        if similar::nearest(&query, recent.iter().map(|(d, _)| d), &mut nearest_one) == 0 {
            return None;
        }
        Some(recent[nearest_one[0].index].1)
    }

    fn history(&self, job: &TraceJob) -> Option<&History> {
        if job.user < 0 {
            None
        } else {
            self.users.get(&job.user)
        }
    }

    fn features(&self, job: &TraceJob) -> [f64; FEATURES] {
        let ln = |v: i64| (v.max(1) as f64).ln();
        let mut x = [0.0; FEATURES];
        x[0] = 1.0;
        x[1] = ln(job.walltime);
        x[2] = ln(job.procs);
        if let Some(h) = self.history(job) {
            if h.count >= 1 {
                x[3] = 1.0;
                x[4] = ln(h.last[0]);
                x[7] = h.sum_ln / h.count as f64;
            }
            if h.count >= 2 {
                x[5] = 1.0;
                x[6] = ln(h.last[1]);
            }
        }
        if job.user >= 0 {
            if let Some(&run) = self.same.get(&(job.user, job.walltime, job.procs)) {
                x[8] = 1.0;
                x[9] = ln(run);
            }
        }
        x
    }
}

/// What [`Estimator::Similar`] compares: the kinds executable, queue, group, partition and the
/// sizes processors and requested time.
fn descriptor(job: &TraceJob) -> Descriptor {
    let mut d = Descriptor::EMPTY;
    for (slot, kind) in [job.executable, job.queue, job.group, job.partition]
        .into_iter()
        .enumerate()
    {
        if kind >= 0 {
            d.kinds[slot] = kind as u64;
        }
    }
    d.set_size(0, job.procs as f64);
    d.set_size(1, job.walltime as f64);
    d
}

/// Solves (A + RIDGE I) w = b by Cholesky factorisation (A is X'X, so the system is positive
/// definite).
fn solve(a: &[[f64; FEATURES]; FEATURES], b: &[f64; FEATURES]) -> [f64; FEATURES] {
    let mut l = [[0.0; FEATURES]; FEATURES];
    for i in 0..FEATURES {
        for k in 0..=i {
            let dot: f64 = (0..k).map(|m| l[i][m] * l[k][m]).sum();
            let ridge = if i == k { RIDGE } else { 0.0 };
            let sum = a[i][k] + ridge - dot;
            if i == k {
                l[i][i] = sum.max(1e-300).sqrt();
            } else {
                l[i][k] = sum / l[k][k];
            }
        }
    }
    let mut y = [0.0; FEATURES];
    for i in 0..FEATURES {
        let s: f64 = (0..i).map(|m| l[i][m] * y[m]).sum();
        y[i] = (b[i] - s) / l[i][i];
    }
    let mut w = [0.0; FEATURES];
    for i in (0..FEATURES).rev() {
        let s: f64 = (i + 1..FEATURES).map(|m| l[m][i] * w[m]).sum();
        w[i] = (y[i] - s) / l[i][i];
    }
    w
}

/// Which completion times the online replay of the estimators uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Timeline {
    /// submit + wait (SWF field 3; 0 where missing) + run time: when the job really ended.
    #[default]
    Trace,
    /// submit + run time, as if no job had waited (completions known earlier than they were).
    NoWait,
}

impl Timeline {
    /// Its name in reports, with what it means.
    pub fn describe(self) -> &'static str {
        match self {
            Timeline::Trace => "trace (submit + wait + run)",
            Timeline::NoWait => "no-wait (submit + run)",
        }
    }

    /// The completion times of `trace`'s jobs on this timeline, given their `waits`
    /// ([`crate::trace::swf::read_swf_with_waits`]).
    pub fn completions(self, trace: &Trace, waits: &[Option<i64>]) -> Vec<i64> {
        match self {
            Timeline::Trace => completions(trace, Some(waits)),
            Timeline::NoWait => completions(trace, None),
        }
    }
}

/// Each job's completion time: `submit + wait + run time`, with the waits of
/// [`crate::trace::swf::read_swf_with_waits`] (0 where missing) or, with `None`, no wait at all.
/// The run time is the trace's (the job really ran that long).
pub fn completions(trace: &Trace, waits: Option<&[Option<i64>]>) -> Vec<i64> {
    trace
        .jobs
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let wait = waits.and_then(|w| w.get(i).copied().flatten()).unwrap_or(0);
            j.submit + wait + j.runtime.max(1)
        })
        .collect()
}

/// Replays `jobs` (sorted by submit) online: each job is submitted to `predictor` at its
/// submit time and observed at `completions[i]`, completions first at equal times. Returns
/// the predictions made for `jobs[from..]` at their submission.
pub fn predict_online(
    predictor: &mut Predictor,
    jobs: &[TraceJob],
    completions: &[i64],
    from: usize,
) -> Result<Vec<i64>, EstimateError> {
    if completions.len() != jobs.len() {
        return Err(EstimateError::Completions {
            jobs: jobs.len(),
            completions: completions.len(),
        });
    }
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| (completions[i], i));
    let mut done = 0;
    let mut predictions = Vec::with_capacity(jobs.len().saturating_sub(from));
    for (i, job) in jobs.iter().enumerate() {
        while done < order.len() && completions[order[done]] <= job.submit {
            predictor.observe(&jobs[order[done]]);
            done += 1;
        }
        if i >= from {
            predictions.push(predictor.predict(job));
        }
        predictor.submit(job);
    }
    for &i in &order[done..] {
        predictor.observe(&jobs[i]);
    }
    Ok(predictions)
}

/// Where the scored part of a trace begins.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Split {
    /// The first `floor(f * jobs)` jobs (in submit order) are history only; `f` in [0, 1).
    Fraction(f64),
    /// The first `k` jobs are history only.
    Index(usize),
}

impl Split {
    /// The index of the first scored job.
    pub fn index(self, jobs: usize) -> Result<usize, EstimateError> {
        let at = match self {
            Split::Fraction(f) if (0.0..1.0).contains(&f) => (f * jobs as f64).floor() as usize,
            Split::Fraction(f) => return Err(EstimateError::Fraction(f)),
            Split::Index(k) => k,
        };
        if at >= jobs {
            return Err(EstimateError::NoTestJobs { jobs, at });
        }
        Ok(at)
    }
}

/// How well an estimator did on the scored jobs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// The estimator that made the scored predictions.
    pub estimator: Estimator,
    /// Scored jobs.
    pub jobs: usize,
    /// Mean absolute percentage error: mean of |pred - run| / run, as a fraction
    /// (1.0 = 100%), with run the effective run time.
    pub mape: f64,
    /// Median of |pred - run| / run (the mean of the two middle values for an even count).
    pub median_ape: f64,
    /// Share of jobs with pred < run.
    pub under: f64,
    /// Mean accuracy min(pred, run) / max(pred, run), in (0, 1] (Tsafrir et al. 2007): a
    /// bounded, symmetric companion of the MAPE, which a few very short jobs dominate.
    pub accuracy: f64,
}

/// Scores predictions against the jobs' effective run times.
pub fn score(estimator: Estimator, jobs: &[TraceJob], predictions: &[i64]) -> Score {
    assert_eq!(jobs.len(), predictions.len(), "one prediction per job");
    let mut apes: Vec<f64> = jobs
        .iter()
        .zip(predictions)
        .map(|(j, &p)| {
            let run = effective_runtime(j);
            (p - run).abs() as f64 / run as f64
        })
        .collect();
    let under = jobs
        .iter()
        .zip(predictions)
        .filter(|(j, &p)| p < effective_runtime(j))
        .count();
    let accuracy: f64 = jobs
        .iter()
        .zip(predictions)
        .map(|(j, &p)| {
            let (run, p) = (effective_runtime(j), p.max(1));
            run.min(p) as f64 / run.max(p) as f64
        })
        .sum();
    let n = apes.len();
    let mape = if n == 0 {
        0.0
    } else {
        apes.iter().sum::<f64>() / n as f64
    };
    apes.sort_by(f64::total_cmp);
    let median_ape = schedlm_model::quantile::median(&apes).unwrap_or(0.0);
    Score {
        estimator,
        jobs: n,
        mape,
        median_ape,
        under: if n == 0 { 0.0 } else { under as f64 / n as f64 },
        accuracy: if n == 0 { 0.0 } else { accuracy / n as f64 },
    }
}

/// Scores every estimator on `trace` after `split`, with the no-wait timeline
/// ([`completions`]`(trace, None)`); [`evaluate_with`] takes the trace's own timeline.
pub fn evaluate(trace: &Trace, split: Split) -> Result<Vec<Score>, EstimateError> {
    evaluate_with(trace, &completions(trace, None), split)
}

/// Scores as a fixed-width table, one row per estimator.
pub fn score_table(scores: &[Score]) -> String {
    let mut out = format!(
        "{:<10} {:>8} {:>10} {:>12} {:>8} {:>10}\n",
        "estimator", "jobs", "MAPE %", "median APE %", "under %", "accuracy"
    );
    for s in scores {
        let (mape, median, under) = (100.0 * s.mape, 100.0 * s.median_ape, 100.0 * s.under);
        out += &format!(
            "{:<10} {:>8} {mape:>10.1} {median:>12.1} {under:>8.1} {:>10.3}\n",
            s.estimator.name(),
            s.jobs,
            s.accuracy
        );
    }
    out
}

/// Scores every estimator on `trace` after `split`: all jobs are replayed online (the ones
/// before the split are history), the ones from the split on are scored.
pub fn evaluate_with(
    trace: &Trace,
    completions: &[i64],
    split: Split,
) -> Result<Vec<Score>, EstimateError> {
    let from = split.index(trace.jobs.len())?;
    Estimator::ALL
        .into_iter()
        .map(|estimator| {
            let mut predictor = Predictor::new(estimator);
            let predictions = predict_online(&mut predictor, &trace.jobs, completions, from)?;
            Ok(score(estimator, &trace.jobs[from..], &predictions))
        })
        .collect()
}

/// Scores every estimator on `test` after it has observed every job of `train` (in
/// completion order): the training trace is taken as history that ended before the test
/// trace began. User ids are assumed to mean the same people in both.
pub fn evaluate_transfer(
    train: &Trace,
    train_completions: &[i64],
    test: &Trace,
    test_completions: &[i64],
) -> Result<Vec<Score>, EstimateError> {
    if test.jobs.is_empty() {
        return Err(EstimateError::NoTestJobs { jobs: 0, at: 0 });
    }
    Estimator::ALL
        .into_iter()
        .map(|estimator| {
            let mut predictor = Predictor::new(estimator);
            predict_online(
                &mut predictor,
                &train.jobs,
                train_completions,
                train.jobs.len(),
            )?;
            let predictions = predict_online(&mut predictor, &test.jobs, test_completions, 0)?;
            Ok(score(estimator, &test.jobs, &predictions))
        })
        .collect()
}
