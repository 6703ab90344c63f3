//! The deployed path (docs/slurm.md): the time limit the Slurm filter sets at submission
//! ([`TimeFill`], what `schedlm submit fill` runs), and the replay that measures it on the same
//! history the filter reads ([`limits`]).
//!
//! A history whose jobs carry their accounting (submit and start times and GPUs, as `sacct`
//! gives them: [`crate::history::Accounting`]) is a workload: each job arrives at its submit
//! time, holds its GPUs of one pool and runs its recorded run time. What it runs under is its
//! time limit, which is also what the scheduler plans with ([`Limit`]): the one its user
//! asked for, the one the filter would have set when the job was submitted, or the truth. The
//! filter's limit for a job is computed from the jobs that had ended by its submit time, in the
//! order they ended (the order an epilog adds them), exactly as `submit fill` computes it from
//! the whole history at a real submission; nothing the filter could not have known is used.
//! A job whose run time exceeds its limit is killed there, as Slurm kills it, and counted.
//!
//! [`dl_accounting`] writes such a history from a simulated cluster (a `dl` workload run first
//! come, first served with EASY under its requests), for trying the path without a cluster's
//! records.

use schedlm_knowledge::facts::{FactValue, Field, JobFacts};
use schedlm_model::instance::Server;
use schedlm_model::sim::{Fcfs, SimError, SimJob, Simulation, StartRule};
use serde::Serialize;

use crate::history::History;
use crate::history::{
    predict, Accounting, HistoryError, MatchBy, NewJob, Outcome, PastJob, Prediction, Query,
};
use crate::lookup::predict_indexed;
use crate::planning::facts_of;
use crate::replay::{dl_workload, jobs_of, ReplayError};

/// Why the deployed path cannot run.
#[derive(Debug, thiserror::Error)]
pub enum DeployedError {
    /// A margin below 1 or not a number.
    #[error("the margin must be a number of at least 1, got {0}")]
    Margin(f64),
    /// A cap shorter than a minute.
    #[error("the longest time limit must be at least 60 s, got {0} s")]
    Cap(i64),
    /// The history holds no job that can be replayed.
    #[error(
        "no job of the history can be replayed: each needs its submit and start times, its \
         actual run time and its GPUs (`schedlm history add --submit --start --gpus`)"
    )]
    Empty,
    /// The replay refused the jobs.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The synthetic workload could not be made.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The synthetic workload could not be generated.
    #[error(transparent)]
    Generate(#[from] schedlm_generator::GenError),
}

/// The nearest jobs a filled limit's prediction lists.
const NEAREST: usize = 3;

/// How the filter sets a time limit: the history's prediction times a margin, capped, in
/// whole minutes (Slurm's unit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeFill {
    margin: f64,
    max_time_s: i64,
}

/// A time limit the filter set, and what it rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct FilledTime {
    /// The limit, whole minutes (at least 1).
    pub minutes: u64,
    /// The prediction it was made from.
    pub prediction: Prediction,
    /// Whether the cap cut it.
    pub capped: bool,
}

impl FilledTime {
    /// The limit in seconds.
    pub fn seconds(&self) -> i64 {
        self.minutes as i64 * 60
    }
}

impl TimeFill {
    /// A filler with `margin` (>= 1) and the longest limit `max_time_s` (>= 60).
    pub fn new(margin: f64, max_time_s: i64) -> Result<TimeFill, DeployedError> {
        if !(margin.is_finite() && margin >= 1.0) {
            return Err(DeployedError::Margin(margin));
        }
        if max_time_s < 60 {
            return Err(DeployedError::Cap(max_time_s));
        }
        Ok(TimeFill { margin, max_time_s })
    }

    /// The margin.
    pub fn margin(&self) -> f64 {
        self.margin
    }

    /// The longest limit, seconds.
    pub fn max_time_s(&self) -> i64 {
        self.max_time_s
    }

    /// The time limit for a job with `facts`, from the completed jobs of `past` (its nearest
    /// by metadata, as `history predict`); an error when nothing completed can be matched.
    pub fn fill(&self, past: &[PastJob], facts: &JobFacts) -> Result<FilledTime, HistoryError> {
        let query = Query {
            facts,
            embedding: None,
        };
        self.limit(predict(past, query, None, NEAREST, MatchBy::Meta)?)
    }

    /// [`TimeFill::fill`] from the history file's index ([`crate::lookup`]): the same limit,
    /// reading only the nearest jobs (what `schedlm submit fill` runs at a submission).
    pub fn fill_indexed(
        &self,
        history: &History,
        facts: &JobFacts,
    ) -> Result<FilledTime, HistoryError> {
        self.limit(predict_indexed(history, facts, None, NEAREST)?)
    }

    /// The limit from a prediction.
    fn limit(&self, prediction: Prediction) -> Result<FilledTime, HistoryError> {
        if prediction.basis == "request" {
            return Err(HistoryError::Nothing);
        }
        let seconds = (prediction.seconds as f64 * self.margin).ceil();
        let capped = seconds > self.max_time_s as f64;
        let limited = seconds.min(self.max_time_s as f64);
        let minutes = (limited / 60.0).ceil().max(1.0) as u64;
        Ok(FilledTime {
            minutes,
            prediction,
            capped,
        })
    }
}

/// What a replayed job runs under: its time limit, which the scheduler also plans with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The limit its user asked for (the longest limit when it asked for none, as a
    /// partition's maximum).
    Request,
    /// What the filter leaves: a stated limit kept, a missing one filled from the history at
    /// the job's submission (the longest limit when nothing can be predicted).
    Filter,
    /// The filter's limit for every job, as if none stated one (the stated limit when nothing
    /// can be predicted, else the longest).
    History,
    /// The recorded run time (an upper reference: nothing is killed, nothing over-reserved).
    Oracle,
}

impl Limit {
    /// Every limit, in report order.
    pub const ALL: [Limit; 4] = [Limit::Request, Limit::Filter, Limit::History, Limit::Oracle];

    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Limit::Request => "request",
            Limit::Filter => "filter",
            Limit::History => "history",
            Limit::Oracle => "oracle",
        }
    }
}

impl std::str::FromStr for Limit {
    type Err = String;
    fn from_str(s: &str) -> Result<Limit, String> {
        Limit::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| {
                format!("`{s}` is not a limit: write request, filter, history or oracle")
            })
    }
}

/// A job of the history that can be replayed.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedJob {
    /// Its row in the history.
    pub id: i64,
    /// Submit time (Unix seconds).
    pub submit: i64,
    /// GPUs it held.
    pub gpus: u32,
    /// Its recorded run time (>= 1).
    pub actual_s: i64,
    /// The limit its user asked for.
    pub requested_s: Option<i64>,
    /// What its files said (what the filter matches it by).
    pub facts: JobFacts,
}

/// A job of the history left out of the replay, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeftOut {
    /// Its row in the history.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// What it lacks.
    pub reason: &'static str,
}

/// The replayable jobs of a history (in submit order), the jobs left out, and the past the
/// filter reads (every job with a start and an actual run time, in the order they ended).
#[derive(Debug, Clone)]
pub struct Workload {
    /// The jobs replayed, by (submit, id).
    pub jobs: Vec<RecordedJob>,
    /// The jobs left out.
    pub left_out: Vec<LeftOut>,
    /// Past jobs by (end, id), and their ends.
    past: Vec<PastJob>,
    ends: Vec<i64>,
}

/// The GPUs a job held: its accounting's, else its facts' (GPUs per node x nodes).
fn gpus_of(job: &NewJob) -> Option<u32> {
    job.accounting.gpus.or_else(|| {
        let count = |f: Field| job.facts.value(f).and_then(FactValue::as_u64);
        let per_node = count(Field::GpusPerNode)?;
        let nodes = count(Field::Nodes).unwrap_or(1);
        u32::try_from(per_node.checked_mul(nodes)?).ok()
    })
}

/// Reads the workload out of `history`.
pub fn workload(history: &[PastJob]) -> Workload {
    let mut jobs = Vec::new();
    let mut left_out = Vec::new();
    let mut past: Vec<(i64, &PastJob)> = Vec::new();
    for p in history {
        let j = &p.job;
        if let (Some(start), Some(actual)) = (j.accounting.start, j.actual_s) {
            past.push((start + actual, p));
        }
        let a = j.accounting;
        match (a.submit, a.start, j.actual_s, gpus_of(j)) {
            (Some(submit), Some(_), Some(actual_s), Some(gpus)) => jobs.push(RecordedJob {
                id: p.id,
                submit,
                gpus,
                actual_s,
                requested_s: j.requested_s,
                facts: j.facts.clone(),
            }),
            (submit, start, actual, _) => left_out.push(LeftOut {
                id: p.id,
                name: j.name.clone(),
                reason: if submit.is_none() {
                    "no submit time"
                } else if start.is_none() {
                    "no start time"
                } else if actual.is_none() {
                    "no actual run time"
                } else {
                    "no GPU count"
                },
            }),
        }
    }
    jobs.sort_by_key(|j| (j.submit, j.id));
    past.sort_by_key(|(end, p)| (*end, p.id));
    Workload {
        jobs,
        left_out,
        ends: past.iter().map(|(end, _)| *end).collect(),
        past: past.into_iter().map(|(_, p)| p.clone()).collect(),
    }
}

impl Workload {
    /// The jobs that had ended by `t`, in the order they ended.
    pub fn past_at(&self, t: i64) -> &[PastJob] {
        &self.past[..self.ends.partition_point(|&end| end <= t)]
    }
}

/// How often the filter could fill a limit in a replay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FillCount {
    /// Jobs whose limit came from the history.
    pub filled: usize,
    /// Jobs the history could not predict (no completed past job to match by then).
    pub unpredicted: usize,
    /// Filled limits the cap cut.
    pub capped: usize,
}

/// The replay jobs of `workload` under `limit` (ids `h<row>`, one resource `gpus`), and how
/// often the filter filled a limit.
pub fn limits(workload: &Workload, fill: &TimeFill, limit: Limit) -> (Vec<SimJob>, FillCount) {
    let mut count = FillCount::default();
    let jobs = workload
        .jobs
        .iter()
        .map(|j| {
            let mut filled = || match fill.fill(workload.past_at(j.submit), &j.facts) {
                Ok(f) => {
                    count.filled += 1;
                    count.capped += usize::from(f.capped);
                    Some(f.seconds())
                }
                Err(_) => {
                    count.unpredicted += 1;
                    None
                }
            };
            let walltime = match limit {
                Limit::Request => j.requested_s,
                Limit::Filter => j.requested_s.or_else(&mut filled),
                Limit::History => filled().or(j.requested_s),
                Limit::Oracle => Some(j.actual_s),
            }
            .unwrap_or(fill.max_time_s)
            .max(1);
            SimJob::new(
                format!("h{}", j.id),
                j.submit,
                vec![i64::from(j.gpus)],
                walltime,
                j.actual_s,
            )
        })
        .collect();
    (jobs, count)
}

/// The replay of `jobs` on one pool of `gpus` GPUs.
pub fn simulation(gpus: i64, jobs: Vec<SimJob>) -> Result<Simulation, DeployedError> {
    let pool = Server {
        id: "pool".into(),
        capacity: vec![gpus],
    };
    Ok(Simulation::new(vec!["gpus".into()], vec![pool], jobs)?)
}

/// The accounting of a simulated cluster: the `dl` workload of `seed` (`jobs` jobs on
/// `servers` nodes of 8 GPUs, as `history replay` draws it) run first come, first served with
/// EASY under its requests; each job with its facts (model, GPUs, batch, sequence length,
/// epochs), request, run time (cut at the request: `timeout`), submit and start times and GPUs.
/// A share `unstated` of the jobs (drawn from the seed) state no time limit: they ran under
/// `max_time_s`, as under a partition's maximum, and are recorded without a request.
pub fn dl_accounting(
    seed: u64,
    jobs: usize,
    servers: usize,
    unstated: f64,
    max_time_s: i64,
) -> Result<Vec<NewJob>, DeployedError> {
    let instance = dl_workload(seed, jobs, Some(servers))?;
    let replay_jobs = jobs_of(&instance, 0.0, 0)?;
    let states: Vec<bool> = (0..replay_jobs.len())
        .map(|i| unit(seed, i as u64) >= unstated)
        .collect();
    let sim_jobs: Vec<SimJob> = replay_jobs
        .iter()
        .zip(&instance.queue)
        .zip(&states)
        .map(|((r, q), &stated)| {
            let limit = if stated {
                q.walltime
            } else {
                max_time_s.max(q.walltime)
            };
            SimJob::new(q.id.clone(), q.submit, q.demand.clone(), limit, r.runtime)
        })
        .collect();
    let sim = Simulation::new(
        instance.resources.clone(),
        instance.servers.clone(),
        sim_jobs.clone(),
    )?;
    let result = sim.run(&mut Fcfs, StartRule::Easy)?;
    let gpu = instance.resources.iter().position(|r| r == "gpus");
    Ok(replay_jobs
        .iter()
        .zip(&sim_jobs)
        .zip(&result.jobs)
        .zip(&states)
        .map(|(((r, s), record), &stated)| NewJob {
            name: r.id.clone(),
            user: None,
            facts: facts_of(r),
            requested_s: stated.then_some(s.walltime),
            actual_s: Some(s.run().max(1)),
            outcome: if record.killed {
                Outcome::Timeout
            } else {
                Outcome::Completed
            },
            embedding: None,
            accounting: Accounting {
                submit: Some(s.submit),
                start: Some(record.start),
                gpus: gpu.and_then(|g| u32::try_from(s.demand[g]).ok()),
            },
        })
        .collect())
}

/// A number in [0, 1) drawn from `seed` and `index` (SplitMix64).
fn unit(seed: u64, index: u64) -> f64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(index.wrapping_add(1).wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlm_knowledge::Strength;
    use serde_json::json;

    fn job(name: &str, model: &str, times: (i64, i64, i64), requested: Option<i64>) -> NewJob {
        let mut facts = JobFacts::default();
        facts.set(
            Field::Model,
            json!(model),
            schedlm_knowledge::facts::Source::line("t", 1),
            1.0,
            Strength::Config,
        );
        let (submit, start, actual) = times;
        NewJob {
            name: name.into(),
            user: None,
            facts,
            requested_s: requested,
            actual_s: Some(actual),
            outcome: Outcome::Completed,
            embedding: None,
            accounting: Accounting {
                submit: Some(submit),
                start: Some(start),
                gpus: Some(4),
            },
        }
    }

    fn past(jobs: Vec<NewJob>) -> Vec<PastJob> {
        jobs.into_iter()
            .zip(1..)
            .map(|(job, id)| PastJob { id, job })
            .collect()
    }

    #[test]
    fn the_filter_rounds_up_to_minutes_and_caps() {
        let history = past(vec![job("a", "bert", (0, 0, 3_601), None)]);
        let facts = history[0].job.facts.clone();
        let f = TimeFill::new(1.5, 7 * 86_400)
            .unwrap()
            .fill(&history, &facts)
            .unwrap();
        // 1.5 x 3,601 = 5,401.5 s -> 5,402 s -> 91 minutes.
        assert_eq!((f.minutes, f.capped), (91, false));
        let f = TimeFill::new(2.0, 3_600)
            .unwrap()
            .fill(&history, &facts)
            .unwrap();
        assert_eq!((f.seconds(), f.capped), (3_600, true));
        assert!(TimeFill::new(0.9, 3_600).is_err());
        assert!(TimeFill::new(f64::NAN, 3_600).is_err());
        assert!(TimeFill::new(1.0, 59).is_err());
        assert!(matches!(
            TimeFill::new(1.5, 3_600).unwrap().fill(&[], &facts),
            Err(HistoryError::Nothing)
        ));
    }

    #[test]
    fn a_limit_is_filled_only_from_jobs_that_ended_before_the_submission() {
        // a ends at 1,000; b is submitted at 900 (a still running) and c at 1,000.
        let history = past(vec![
            job("a", "bert", (0, 0, 1_000), Some(5_000)),
            job("b", "bert", (900, 1_000, 2_000), None),
            job("c", "bert", (1_000, 1_000, 1_200), None),
        ]);
        let w = workload(&history);
        assert_eq!(w.left_out, []);
        let fill = TimeFill::new(1.5, 86_400).unwrap();
        let (jobs, count) = limits(&w, &fill, Limit::Filter);
        let limit = |id: &str| jobs.iter().find(|j| j.id == id).unwrap().walltime;
        assert_eq!(limit("h1"), 5_000, "a stated limit is kept");
        assert_eq!(limit("h2"), 86_400, "nothing had ended: the longest limit");
        assert_eq!(limit("h3"), 1_500, "1.5 x a's 1,000 s");
        assert_eq!(
            count,
            FillCount {
                filled: 1,
                unpredicted: 1,
                capped: 0
            }
        );
        // Every job filled: a has no past either; c's limit cuts nothing.
        let (jobs, _) = limits(&w, &fill, Limit::History);
        assert_eq!(jobs[0].walltime, 5_000);
        // Under the oracle nothing is killed.
        let (jobs, _) = limits(&w, &fill, Limit::Oracle);
        let result = simulation(8, jobs)
            .unwrap()
            .run(&mut Fcfs, StartRule::Easy)
            .unwrap();
        assert!(result.jobs.iter().all(|r| !r.killed));
    }

    #[test]
    fn a_filled_limit_below_the_run_time_kills_the_job() {
        // b runs 3,000 s but its nearest past job ran 1,000 s: 1.5 x 1,000 < 3,000.
        let history = past(vec![
            job("a", "bert", (0, 0, 1_000), None),
            job("b", "bert", (2_000, 2_000, 3_000), None),
        ]);
        let w = workload(&history);
        let fill = TimeFill::new(1.5, 86_400).unwrap();
        let (jobs, _) = limits(&w, &fill, Limit::Filter);
        let result = simulation(8, jobs)
            .unwrap()
            .run(&mut Fcfs, StartRule::Easy)
            .unwrap();
        assert_eq!(
            result.jobs.iter().map(|r| r.killed).collect::<Vec<_>>(),
            [false, true]
        );
    }

    #[test]
    fn jobs_without_accounting_are_left_out_by_name() {
        let mut a = job("a", "bert", (0, 0, 10), None);
        a.accounting.submit = None;
        let mut b = job("b", "bert", (0, 0, 10), None);
        b.actual_s = None;
        let mut c = job("c", "bert", (0, 0, 10), None);
        c.accounting.gpus = None;
        let w = workload(&past(vec![a, b, c]));
        assert!(w.jobs.is_empty());
        let reasons: Vec<_> = w
            .left_out
            .iter()
            .map(|l| (l.name.as_str(), l.reason))
            .collect();
        assert_eq!(
            reasons,
            [
                ("a", "no submit time"),
                ("b", "no actual run time"),
                ("c", "no GPU count")
            ]
        );
    }

    #[test]
    fn the_simulated_accounting_is_a_replayable_history() {
        let jobs = dl_accounting(3, 40, 2, 0.5, 86_400).unwrap();
        let unstated = jobs.iter().filter(|j| j.requested_s.is_none()).count();
        assert!((10..=30).contains(&unstated), "{unstated} of 40");
        let history = past(jobs);
        let w = workload(&history);
        assert_eq!((w.jobs.len(), w.left_out.len()), (40, 0));
        assert!(history
            .iter()
            .all(|p| p.job.accounting.start >= p.job.accounting.submit));
        // Replayed under its requests nothing is killed (a recorded timeout ran exactly its
        // limit); a job of the dl family holds at most one node's GPUs.
        let fill = TimeFill::new(1.5, 7 * 86_400).unwrap();
        let (jobs, _) = limits(&w, &fill, Limit::Request);
        assert!(jobs.iter().all(|j| (1..=8).contains(&j.demand[0])));
        let result = simulation(16, jobs)
            .unwrap()
            .run(&mut Fcfs, StartRule::Easy)
            .unwrap();
        assert!(result.jobs.iter().all(|r| !r.killed));
        // Same seed, same accounting.
        assert_eq!(
            dl_accounting(3, 40, 2, 0.5, 86_400).unwrap(),
            history.into_iter().map(|p| p.job).collect::<Vec<_>>()
        );
    }
}
