//! The instance JSON of SPEC section 1, as plain serde types.
//!
//! These types mirror the file format one to one. They are deliberately loose (signed integers,
//! optional fields) so that a bad value reaches [`crate::validate()`] and gets an error that names
//! the job and the field, instead of a bare serde message. Unknown fields are ignored.

use serde::{Deserialize, Serialize};

/// Integer seconds, as every time in an instance.
pub type Time = i64;

/// One snapshot of a cluster: servers, running jobs and the queue to order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    /// The snapshot time.
    pub now: Time,
    /// Names of the resources; every capacity and demand vector has this length.
    pub resources: Vec<String>,
    /// The servers, in instance order (the dispatcher's tie-break).
    pub servers: Vec<Server>,
    /// Jobs already running at `now`.
    #[serde(default)]
    pub running: Vec<RunningJob>,
    /// Jobs waiting to be ordered.
    pub queue: Vec<QueuedJob>,
}

/// A server and its capacity per resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Server {
    /// Server id, unique across servers, running and queued jobs; running jobs name it in
    /// `server`.
    pub id: String,
    /// Capacity per resource, one non-negative amount per entry of `resources`, in that order.
    pub capacity: Vec<i64>,
}

/// A job that holds `demand` on `server` from before `now` until `end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunningJob {
    /// Job id, unique across servers, running and queued jobs; queued jobs may name it in
    /// `deps`.
    pub id: String,
    /// Id of the server the job runs on (one of `servers`).
    pub server: String,
    /// Amount held per resource, in `resources` order; the running jobs of a server must
    /// fit its capacity together.
    pub demand: Vec<i64>,
    /// When the job frees its server, in seconds (> `now`); in a trace, start + requested
    /// walltime.
    pub end: Time,
}

/// A job waiting in the queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueuedJob {
    /// Job id, unique across servers, running and queued jobs; an order lists the queue by
    /// these ids.
    pub id: String,
    /// Submission time in seconds (<= `now`); the wait w_j = S_j - submit counts from it.
    pub submit: Time,
    /// Amount needed per resource, in `resources` order; it must fit at least one server's
    /// capacity.
    pub demand: Vec<i64>,
    /// Requested processing time p_j, the length the scheduler plans with (>= 1).
    pub walltime: Time,
    /// True length, hidden from the scheduler; used only by online simulation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Time>,
    /// Ids of running or queued jobs that must finish before this one starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deps: Vec<String>,
    /// Weight in the `flow` objective; 1 when absent.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub weight: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Submitting user (free text, SPEC section 1); ignored by the dispatcher and objectives.
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Free JSON data about the job (SPEC section 1), e.g. `{"model": "resnet50"}`; ignored by
    /// the dispatcher. Replay snapshots keep the requested walltime here as
    /// `{"requested_walltime": w}` when the walltime field holds an estimate.
    pub meta: Option<serde_json::Value>,
}

fn one() -> f64 {
    1.0
}

fn is_one(w: &f64) -> bool {
    *w == 1.0
}

impl QueuedJob {
    /// A job with the required fields and every optional field at its default.
    pub fn new(id: impl Into<String>, submit: Time, demand: Vec<i64>, walltime: Time) -> Self {
        QueuedJob {
            id: id.into(),
            submit,
            demand,
            walltime,
            runtime: None,
            deps: Vec::new(),
            weight: 1.0,
            user: None,
            meta: None,
        }
    }
}

impl Instance {
    /// Parses one instance from JSON text.
    pub fn from_json(text: &str) -> Result<Instance, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The instance as one line of JSON.
    pub fn to_json(&self) -> String {
        // Serialising these plain types cannot fail: every map key is a string and every
        // float is finite after validation (and serde_json writes non-finite floats as null).
        serde_json::to_string(self).unwrap_or_default()
    }
}
