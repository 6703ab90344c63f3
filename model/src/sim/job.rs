//! The jobs of a replay ([`SimJob`]) and why a replay cannot run ([`SimError`]).

use serde::{Deserialize, Serialize};

use crate::instance::Time;
use crate::lines::excerpt;

/// One job of a trace to replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimJob {
    /// Job id, unique among the jobs and different from every server id (a trace replay
    /// uses `j<SWF job number>`).
    pub id: String,
    /// Arrival time.
    pub submit: Time,
    /// Demand per resource; the job runs on one server.
    pub demand: Vec<i64>,
    /// Requested time (>= 1): what the scheduler plans with, and the kill limit.
    pub walltime: Time,
    /// True length (>= 0), hidden from the start rules; the job runs min(runtime, walltime).
    pub runtime: Time,
    /// Submitting user, if known; copied into snapshots and free for policies to use (a trace
    /// replay uses `u<SWF user id>`, none for a negative id).
    pub user: Option<String>,
    /// Planning length (>= 1): when set, the scheduler plans with it instead of `walltime`
    /// (reservations, backfill tests, the policy's view of the job, snapshots), while the
    /// job is still killed at `walltime`. `None` = plan with the walltime. See
    /// the module docs of [`crate::sim`] ("Planning with estimates").
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
    #[error("job {}: a policy configured it with another id or submit time", excerpt(.job))]
    /// A policy's configuration of an arriving job ([`super::Policy::arrive`]) changed its id
    /// or submit time.
    Reconfigured {
        /// Id of the job.
        job: String,
    },
    #[error("`resources` is empty: a replay needs at least one resource")]
    /// The list of resources is empty.
    NoResources,
    #[error("`servers` is empty: a replay needs at least one server")]
    /// The list of servers is empty.
    NoServers,
    #[error("server {}: `capacity` has {found} entries, expected {expected} (one per resource)", excerpt(.server))]
    /// A server's `capacity` does not have one entry per resource.
    ServerShape {
        /// Id of the server.
        server: String,
        /// The number of resources.
        expected: usize,
        /// The capacity vector's actual length.
        found: usize,
    },
    #[error(
        "server {}: `capacity` {capacity:?} has a negative amount or one above 2^40", excerpt(.server)
    )]
    /// A server's `capacity` has an amount below 0 or above [`crate::MAX_MAGNITUDE`] (2^40).
    BadCapacity {
        /// Id of the server.
        server: String,
        /// The server's whole capacity vector.
        capacity: Vec<i64>,
    },
    #[error("id {} is used twice; job ids must be unique and differ from server ids", excerpt(.0))]
    /// Two servers, two jobs, or a server and a job share an id; the field is that id.
    DuplicateId(String),
    #[error("job {}: `demand` has {found} entries, expected {expected} (one per resource)", excerpt(.job))]
    /// A job's `demand` does not have one entry per resource.
    DemandShape {
        /// Id of the job.
        job: String,
        /// The number of resources.
        expected: usize,
        /// The demand vector's actual length.
        found: usize,
    },
    #[error("job {}: `demand` {demand:?} has a negative amount or one above 2^40", excerpt(.job))]
    /// A job's `demand` has an amount below 0 or above [`crate::MAX_MAGNITUDE`] (2^40).
    BadDemand {
        /// Id of the job.
        job: String,
        /// The job's whole demand vector.
        demand: Vec<i64>,
    },
    #[error("job {}: `demand` {demand:?} fits on no server", excerpt(.job))]
    /// A job's `demand` exceeds, in some resource, the capacity of every server, so it could never
    /// start.
    FitsNoServer {
        /// Id of the job.
        job: String,
        /// The job's demand, one amount per resource.
        demand: Vec<i64>,
    },
    #[error("job {}: `walltime` is {walltime}; it must be between 1 and 2^40", excerpt(.job))]
    /// A job's `walltime` is outside [1, 2^40] seconds.
    BadWalltime {
        /// Id of the job.
        job: String,
        /// The rejected walltime, in seconds.
        walltime: Time,
    },
    #[error("job {}: `runtime` is {runtime}; it must be between 0 and 2^40", excerpt(.job))]
    /// A job's `runtime` is outside [0, 2^40] seconds.
    BadRuntime {
        /// Id of the job.
        job: String,
        /// The rejected runtime, in seconds.
        runtime: Time,
    },
    #[error("job {}: `estimate` is {estimate}; it must be between 1 and 2^40", excerpt(.job))]
    /// A job's `estimate` is set but outside [1, 2^40] seconds.
    BadEstimate {
        /// Id of the job.
        job: String,
        /// The rejected estimate, in seconds.
        estimate: Time,
    },
    #[error("job {}: `submit` is {submit}, outside [-2^40, 2^40]", excerpt(.job))]
    /// A job's `submit` is outside [-2^40, 2^40] seconds.
    BadSubmit {
        /// Id of the job.
        job: String,
        /// The rejected submit time, in seconds.
        submit: Time,
    },
    #[error("the policy's order at time {now} is not a permutation of the {waiting} waiting jobs: {why}")]
    /// During the replay, [`super::Policy::order`] returned something that is not a
    /// permutation of `0..waiting`; the replay stops.
    BadOrder {
        /// Replay time of the step at which the policy answered, in seconds.
        now: Time,
        /// Number of waiting jobs, i.e. the length the order should have had.
        waiting: usize,
        /// What is wrong: the wrong number of entries, or a position out of range or
        /// repeated.
        why: String,
    },
}
