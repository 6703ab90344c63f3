//! What a replay produces: one [`JobRecord`] per job, the [`Series`] of the state after every
//! step, and the [`Summary`].

use serde::{Deserialize, Serialize};

use crate::instance::Time;

use super::SimJob;

/// Per-job outcome of a replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// The job's id, from [`SimJob::id`].
    pub id: String,
    /// Arrival time, in seconds, from [`SimJob::submit`].
    pub submit: Time,
    /// When the job started, in seconds.
    pub start: Time,
    /// When the job freed its server, in seconds: start + run.
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
    /// Names of the resources, in the order of the entries of `used`.
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
    /// Number of jobs replayed.
    pub jobs: usize,
    /// Mean of the jobs' bounded slowdowns [`JobRecord::bsld`] (from the true run time).
    pub mean_bsld: f64,
    /// Largest bounded slowdown of a job.
    pub max_bsld: f64,
    /// Mean wait, start - submit, in seconds.
    pub mean_wait: f64,
    /// Longest wait of a job, in seconds.
    pub max_wait: Time,
    /// Used resource-seconds of the first resource / (its capacity * makespan).
    pub utilization: f64,
    /// The same per resource.
    pub utilization_per_resource: Vec<f64>,
    /// Last end - first submit.
    pub makespan: Time,
    /// Earliest submit time, in seconds (0 when there are no jobs).
    pub first_submit: Time,
    /// Latest end of a job, in seconds (0 when there are no jobs).
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
    /// Queue length, running jobs and footprint after every step.
    pub series: Series,
    /// Aggregates over all jobs.
    pub summary: Summary,
}

impl Summary {
    /// Aggregates records; `demand` and `capacity` give the used resource-seconds.
    pub(super) fn of(
        records: &[JobRecord],
        jobs: &[SimJob],
        capacity: &[i64],
        steps: usize,
    ) -> Summary {
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
