//! Solvers that order a schedlm queue: the classic priority rules of SPEC section 6 (this
//! module's [`rules`]) and, built on the same dispatcher, search methods that find and prove
//! optimal orders.
//!
//! ```
//! use schedlm_model::{dispatch, Instance, Objective, Problem, Variant};
//! use schedlm_solver::rules::{order, Rule, RuleContext};
//!
//! let instance = Instance::from_json(r#"{
//!   "now": 100, "resources": ["cores"],
//!   "servers": [{"id": "n0", "capacity": [8]}],
//!   "queue": [{"id": "long", "submit": 10, "demand": [8], "walltime": 1000},
//!             {"id": "short", "submit": 50, "demand": [8], "walltime": 10}]
//! }"#).unwrap();
//! let problem = Problem::new(&instance).unwrap();
//! let sjf = order(Rule::Sjf, &problem, &RuleContext::default());
//! assert_eq!(sjf, vec![1, 0]);
//! let schedule = dispatch(&problem, &sjf, Variant::Serial).unwrap();
//! assert_eq!(schedule.start, vec![110, 100]);
//! ```

#![warn(missing_docs)]

pub mod rules;

pub mod bench;
pub mod bnb;
pub mod brute;
pub mod canonical;
pub mod compare;
pub mod cost;
mod deadline;
pub mod greedy;
mod justify;
pub mod local;
pub mod lookahead;
#[cfg(feature = "milp")]
pub mod milp;
mod packing;
pub mod policy;
pub mod portfolio;
pub mod values;
pub mod work;
