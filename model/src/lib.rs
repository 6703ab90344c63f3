//! The shared model of schedlm: cluster snapshots ([`Instance`], SPEC section 1), their
//! validation, queue orders and their dependency repair (section 2), the serial dispatcher that
//! turns an order into a schedule (section 3) and the objectives (section 4).
//!
//! Every other crate (generator, solver, dataset, finetune, eval) builds on these types, so
//! every number schedlm prints comes from this one dispatcher.
//!
//! ```
//! use schedlm_model::{dispatch, Instance, Objective, Problem, Variant};
//!
//! let instance = Instance::from_json(r#"{
//!   "now": 100, "resources": ["cores", "mem_gib"],
//!   "servers": [{"id": "n0", "capacity": [8, 32]}],
//!   "running": [{"id": "r1", "server": "n0", "demand": [4, 16], "end": 160}],
//!   "queue": [{"id": "big", "submit": 40, "demand": [8, 8], "walltime": 100},
//!             {"id": "small", "submit": 90, "demand": [4, 16], "walltime": 50}]
//! }"#).unwrap();
//! let problem = Problem::new(&instance).unwrap();
//! // FCFS order: "big" waits for r1 to end at 160; "small" backfills at 100.
//! let schedule = dispatch(&problem, &[0, 1], Variant::Serial).unwrap();
//! assert_eq!(schedule.start, vec![160, 100]);
//! // Strict: "small" may not overtake "big".
//! let strict = dispatch(&problem, &[0, 1], Variant::Strict).unwrap();
//! assert_eq!(strict.start, vec![160, 260]);
//! assert_eq!(Objective::Makespan.value(&problem, &schedule.start), 160.0);
//! ```

#![warn(missing_docs)]

pub mod cpu;
pub mod dispatch;
pub mod input;
pub mod instance;
pub mod lines;
pub mod objective;
pub mod order;
pub mod problem;
#[cfg(feature = "progress")]
pub mod progress;
pub mod quantile;
pub mod sim;
pub mod skips;
pub mod units;
pub mod validate;

pub use dispatch::{dispatch, Dispatcher, Placement, Schedule, Variant};
pub use instance::{
    Instance, ParseError, QueuedJob, RunningJob, Server, Time, UnknownField, UnknownFields,
};
pub use lines::{text_lines, TextLine};
pub use objective::{
    bounded_slowdown, job_bsld, tied, Objective, Objectives, TAU, VALUE_TOLERANCE,
};
pub use order::{check_permutation, order_from_ids, repair, OrderError};
pub use problem::{Problem, Running};
pub use validate::{
    parse_valid, parse_valid_with, problems, validate, InstanceError, MAX_MAGNITUDE,
};
