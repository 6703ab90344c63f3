//! What knowing a training job is worth to the scheduler: online replays (SPEC section 5) of
//! a `dl` workload in which the scheduler plans with the user's requested walltime, with a
//! run time predicted from job knowledge, or with the true run time.
//!
//! The scheduler plans with a job's length everywhere (SJF's and SAF's scores, EASY's
//! reservations and backfill test); the job still runs its true run time and is killed at its
//! request (`schedlm_model::sim`, "Planning with estimates"). What the plans are:
//!
//! - [`Plan::Request`]: the walltime the user asked for (in the `dl` family the true run time
//!   times an overestimate drawn log-uniformly from [1.1, 4]);
//! - [`Plan::History`]: the job history's prediction ([`crate::history::predict`]): the actual
//!   run time of the nearest past job by the job's metadata (model, GPUs, global batch,
//!   sequence length, epochs), capped at the request;
//! - [`Plan::Throughput`]: configuration knowledge ([`crate::advice::Knowledge`]): the
//!   throughput of the nearest past run of the same model, scaled to the job's configuration,
//!   times the job's work (epochs x samples), plus start-up and staging;
//! - [`Plan::Oracle`]: the true run time (an upper reference).
//!
//! History and throughput are learned from the same past jobs (another `dl` workload, each
//! job once in its user's configuration, with its true run time). What the schedulers gain is
//! the difference in mean wait, JCT and bounded slowdown between the rows of one rule and start
//! rule (docs/knowledge.md).

use std::collections::HashMap;

use schedlm_model::instance::Instance;
use schedlm_model::sim::SimJob;
use serde::Serialize;
use serde_json::json;

use crate::advice::Knowledge;
use crate::history::{predict, MatchBy, NewJob, Outcome, PastJob, Query};
use crate::replay::{jobs_of, knowledge_of, predicted_runtime, ReplayError, ReplayJob};
use schedlm_knowledge::facts::{Field, JobFacts, Source, Strength};

/// What the scheduler plans a job's length with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Plan {
    /// The requested walltime.
    Request,
    /// The nearest past job's actual run time, capped at the request.
    History,
    /// Work over the throughput learned from past runs, plus start-up and staging.
    Throughput,
    /// The true run time.
    Oracle,
}

impl Plan {
    /// Every plan, in report order.
    pub const ALL: [Plan; 4] = [Plan::Request, Plan::History, Plan::Throughput, Plan::Oracle];

    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Plan::Request => "request",
            Plan::History => "history",
            Plan::Throughput => "throughput",
            Plan::Oracle => "oracle",
        }
    }
}

impl std::str::FromStr for Plan {
    type Err = String;
    fn from_str(s: &str) -> Result<Plan, String> {
        Plan::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                format!("`{s}` is not a plan: write request, history, throughput or oracle")
            })
    }
}

/// What the planner knows: past jobs as a history and as configuration knowledge.
pub struct Planner {
    history: Vec<PastJob>,
    knowledge: Knowledge,
}

impl Planner {
    /// Learns from the queued jobs of the `dl` snapshot `past` (each with its `meta` and true
    /// run time); a job without them is an error naming it.
    pub fn learn(past: &Instance) -> Result<Planner, ReplayError> {
        let jobs = jobs_of(past, 0.0, 0)?;
        let walltimes: HashMap<&str, i64> = past
            .queue
            .iter()
            .map(|q| (q.id.as_str(), q.walltime))
            .collect();
        let history = jobs
            .iter()
            .zip(1..)
            .map(|(r, id)| PastJob {
                id,
                job: NewJob {
                    name: r.id.clone(),
                    user: None,
                    facts: facts_of(r),
                    requested_s: walltimes.get(r.id.as_str()).copied(),
                    actual_s: Some(r.runtime),
                    outcome: Outcome::Completed,
                    embedding: None,
                    accounting: Default::default(),
                },
            })
            .collect();
        Ok(Planner {
            history,
            knowledge: knowledge_of(&jobs),
        })
    }

    /// Past jobs learned.
    pub fn past_jobs(&self) -> usize {
        self.history.len()
    }

    /// The length the scheduler plans `job` with (>= 1), given its request. History and
    /// throughput fall back to the request when they know nothing of the job's model.
    pub fn plan(&self, job: &ReplayJob, requested: i64, plan: Plan) -> i64 {
        let predicted = match plan {
            Plan::Request => None,
            Plan::Oracle => Some(job.runtime.min(requested)),
            Plan::History => {
                let facts = facts_of(job);
                let query = Query {
                    facts: &facts,
                    embedding: None,
                };
                predict(&self.history, query, Some(requested), 1, MatchBy::Meta)
                    .ok()
                    .map(|p| p.seconds)
            }
            Plan::Throughput => {
                let local = job.job.batch_size / job.job.gpus.max(1);
                predicted_runtime(&self.knowledge, job, job.job.gpus, local)
                    .filter(|s| s.is_finite())
                    .map(|s| s.round() as i64)
            }
        };
        predicted.unwrap_or(requested).max(1)
    }

    /// The jobs of the `dl` snapshot `workload` as replay jobs (arrival = submit, demand,
    /// walltime and true run time as in the snapshot), each planned with `plan`.
    pub fn sim_jobs(&self, workload: &Instance, plan: Plan) -> Result<Vec<SimJob>, ReplayError> {
        let jobs = jobs_of(workload, 0.0, 0)?;
        let by_id: HashMap<&str, &ReplayJob> = jobs.iter().map(|r| (r.id.as_str(), r)).collect();
        workload
            .queue
            .iter()
            .map(|q| {
                let r = by_id.get(q.id.as_str()).ok_or_else(|| ReplayError::Job {
                    job: q.id.clone(),
                    message: "not read as a dl job".into(),
                })?;
                let runtime = q.runtime.ok_or_else(|| ReplayError::Job {
                    job: q.id.clone(),
                    message: "no true runtime".into(),
                })?;
                let mut job = SimJob::new(
                    q.id.clone(),
                    q.submit,
                    q.demand.clone(),
                    q.walltime,
                    runtime,
                );
                job.user = q.user.clone();
                job.estimate = Some(self.plan(r, q.walltime, plan));
                Ok(job)
            })
            .collect()
    }
}

/// The facts a job's files would give the history: model, GPUs on one node, global batch,
/// sequence length and epochs (the `dl` family's `meta`; its sample count is left out, as a
/// job's files rarely state the size of its data set).
pub fn facts_of(job: &ReplayJob) -> JobFacts {
    let mut facts = JobFacts::default();
    let mut set = |field: Field, value: serde_json::Value| {
        facts.set(field, value, Source::Meta, 1.0, Strength::Config);
    };
    let j = &job.job;
    set(Field::Model, json!(j.model.name));
    set(Field::GpusPerNode, json!(j.gpus));
    set(Field::Nodes, json!(1));
    set(Field::GlobalBatchSize, json!(j.batch_size));
    set(Field::Epochs, json!(j.epochs));
    if let Some(seq) = j.model.seq_len {
        set(Field::SequenceLength, json!(seq));
    }
    facts
}

/// How far plans are from the true run times.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PlanError {
    /// Mean absolute percentage error of the plans against min(runtime, walltime).
    pub mape: f64,
    /// Median absolute percentage error.
    pub median_ape: f64,
    /// Share of the jobs planned shorter than they run.
    pub under: f64,
}

/// The error of the plans of `jobs` ([`SimJob::plan`]) against their run times.
pub fn plan_error(jobs: &[SimJob]) -> PlanError {
    let mut apes: Vec<f64> = jobs
        .iter()
        .map(|j| {
            let run = j.run().max(1) as f64;
            (j.plan() as f64 - run).abs() / run * 100.0
        })
        .collect();
    apes.sort_by(f64::total_cmp);
    let n = apes.len().max(1) as f64;
    let under = jobs.iter().filter(|j| j.plan() < j.run()).count() as f64 / n;
    PlanError {
        mape: apes.iter().sum::<f64>() / n,
        median_ape: apes.get(apes.len() / 2).copied().unwrap_or(0.0),
        under,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::dl_workload;

    fn dl(seed: u64, queue: usize) -> Instance {
        dl_workload(seed, queue, None).unwrap()
    }

    #[test]
    fn the_oracle_plans_the_true_run_time_and_the_request_the_walltime() {
        let planner = Planner::learn(&dl(1, 50)).unwrap();
        let workload = dl(2, 40);
        let oracle = planner.sim_jobs(&workload, Plan::Oracle).unwrap();
        let request = planner.sim_jobs(&workload, Plan::Request).unwrap();
        for ((o, r), q) in oracle.iter().zip(&request).zip(&workload.queue) {
            assert_eq!(o.id, q.id);
            assert_eq!(o.plan(), q.runtime.unwrap().min(q.walltime).max(1));
            assert_eq!(r.plan(), q.walltime);
            assert_eq!((o.runtime, o.walltime), (r.runtime, r.walltime));
        }
        assert_eq!(plan_error(&oracle).mape, 0.0);
        assert!(
            plan_error(&request).mape >= 10.0,
            "{:?}",
            plan_error(&request)
        );
        assert_eq!(plan_error(&request).under, 0.0);
    }

    #[test]
    fn knowledge_predicts_closer_than_the_request() {
        let planner = Planner::learn(&dl(1, 300)).unwrap();
        assert_eq!(planner.past_jobs(), 300);
        let workload = dl(2, 200);
        let request = plan_error(&planner.sim_jobs(&workload, Plan::Request).unwrap());
        let throughput = plan_error(&planner.sim_jobs(&workload, Plan::Throughput).unwrap());
        assert!(
            throughput.median_ape < request.median_ape,
            "{throughput:?} vs {request:?}"
        );
        // History caps at the request: never above it.
        for j in planner.sim_jobs(&workload, Plan::History).unwrap() {
            assert!(j.plan() <= j.walltime, "{}", j.id);
        }
    }

    #[test]
    fn a_job_without_meta_is_named() {
        let mut workload = dl(2, 5);
        workload.queue[3].meta = None;
        let id = workload.queue[3].id.clone();
        let err = Planner::learn(&workload).err().unwrap();
        assert!(err.to_string().contains(&id), "{err}");
    }
}
