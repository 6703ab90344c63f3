//! Job knowledge: facts about training jobs read from the files that define them.
//!
//! Schedulers see a job as a demand vector and a requested walltime; its scripts, launch
//! command and logs say which model it trains, on how many GPUs, for how many steps, how far
//! it got and why it died. This crate reads those facts deterministically, each with the
//! `file:line` it came from and a confidence ([`facts`]): scheduler headers ([`scheduler`]),
//! launch commands and training arguments ([`launch`]), configuration files ([`configs`]),
//! Python defaults ([`python`]) and logs ([`logs`]); [`extract()`]
//! puts them together for one job directory, reading it only through [`confine`] (nothing
//! outside the directory, only regular files, bounded bytes). [`history`] keeps past jobs in SQLite and
//! predicts a new job's duration from the most similar of them; [`advice`] learns which
//! configurations fit and how fast they run from past runs, and fills a job's GPU count and
//! batch size; [`planning`] replays a workload planned with the request, the history's
//! prediction or the learned throughput; [`snapshot`] turns extracted jobs into the queue of a scheduling snapshot. The design, the precedence between sources and the
//! slices still to come (configs, Python defaults, the version cache, the LLM agent, history,
//! configuration advice) are in docs/knowledge.md.

#![warn(missing_docs)]

pub mod advice;
pub mod agent;
pub mod configs;
pub mod confine;
pub mod embed;
pub mod extract;
pub mod facts;
pub mod history;
pub mod launch;
pub mod logs;
pub mod planning;
pub mod python;
pub mod replay;
pub mod scheduler;
mod shell;
pub mod snapshot;

pub use extract::{extract, extract_cached, Cache, ExtractError, Extraction};
pub use facts::{Fact, JobFacts, Strength};
