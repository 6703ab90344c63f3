//! Job history, configuration advice and planning: what a scheduler does with the facts that
//! `schedlm-knowledge` reads.
//!
//! [`history`] keeps past jobs in SQLite and predicts a new job's duration from the most
//! similar of them; [`advice`] learns which configurations fit and how fast they run from past
//! runs, and fills a job's GPU count and batch size; [`planning`] plans a workload with the
//! request, the history's prediction or the learned throughput; [`replay`] measures what the
//! advice is worth in an online replay, run on the model crate's simulator
//! (`schedlm_model::sim`, the project's one replay loop); [`snapshot`] turns extracted jobs into
//! the queue of a scheduling snapshot; [`deployed`] is the time limit the Slurm filter sets and
//! the replay of a recorded history under it; [`lookup`] answers the filter's question from the
//! history's indexes, in a fixed budget. docs/knowledge.md is the reference.

#![warn(missing_docs)]

pub mod advice;
pub mod deployed;
pub mod filter_conf;
pub mod history;
pub mod lookup;
pub mod planning;
pub mod replay;
pub mod replay_table;
pub mod snapshot;
pub mod submit;
