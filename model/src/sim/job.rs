//! The jobs of a replay ([`SimJob`]) and why a replay cannot run ([`SimError`]).

use serde::{Deserialize, Serialize};

use crate::instance::Time;

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
