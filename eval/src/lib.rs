//! Evaluation of policies on schedlm snapshots and in online trace replay, with
//! optimality-gap reports.
//!
//! The question this crate answers: how far is a policy (a language model, a priority rule,
//! local search) from the optimum, and is it better than the rules a site already runs? Every
//! policy is scored on the same instances by the same dispatcher and simulator
//! (`schedlm-model`), so the numbers are comparable.
//!
//! - [`policy`]: the policies under test, parsed from `fcfs`, `ls`, `optimal`, `model:DIR`,
//!   `openai:URL#MODEL`, `predictions:FILE`.
//! - [`data`]: reading dataset records (JSON Lines) with errors that name the line.
//! - [`predictions`]: raw model outputs produced elsewhere, keyed by record id.
//! - [`text_policy`]: policies that answer in text ([`text_policy::TextModel`]) and how a reply is scored
//!   (strict parse; an invalid answer counts as invalid and is scored by the FCFS fallback).
//! - [`answers`]: `answers.jsonl`, every text answer as it arrives, for `eval --resume`.
//! - [`openai`]: a client for OpenAI-compatible chat-completions endpoints.
//! - [`snapshot`]: snapshot evaluation, one [`snapshot::Row`] per (policy, record).
//! - [`baseline`]: the classic rules on each record (the best rule per instance and the queue
//!   order), the reference for "does it beat the rules, or just repeat one?".
//! - [`listing`]: an order read as step decisions against the earliest-completion listing
//!   (how often a step model leaves it, and whether it is right to).
//! - `model_policy` (feature `models`): schedlm's own models (`model:DIR`) as text policies.
//! - [`stats`]: every summary number, computed from the rows alone.
//! - [`verdict`]: "better than", "level with", "worse than": a paired bootstrap test and a
//!   practical margin on per-record gaps.
//! - [`replay`]: what an online replay runs on: the trace laid out as servers, planning
//!   estimates, the windows.
//! - [`online`]: online evaluation (trace replay with each policy consulted at every event),
//!   the one replay loop of the project.
//! - [`report`]: `summary.json`, per-instance CSV, `report.md` and `report.html` with SVG plots.
//!
//! docs/eval.md describes the command, the definitions of every number and the files.

#![warn(missing_docs)]

pub mod answers;
pub mod baseline;
pub mod data;
pub mod error;
pub mod listing;
#[cfg(feature = "models")]
pub mod model_policy;
pub mod online;
pub mod openai;
pub mod policy;
pub mod predictions;
pub mod replay;
pub mod report;
pub mod snapshot;
pub mod stats;
pub mod text_policy;
pub mod verdict;

pub use error::EvalError;
pub use policy::EvalPolicy;
