//! Job facts: what training jobs are, read from the files that define them.
//!
//! Schedulers see a job as a demand vector and a requested walltime; its scripts, launch
//! command and logs say which model it trains, on how many GPUs, for how many steps, how far
//! it got and why it died. This crate reads those facts deterministically, each with the
//! `file:line` it came from and a confidence ([`facts`]). Its readers are small units over one
//! vocabulary ([`field::Field`]):
//!
//! - [`confine`]: the only way into a job directory (nothing outside it, only regular files,
//!   bounded bytes);
//! - [`shell`]: the one shell interpreter (continuations, variables, arithmetic,
//!   here-documents, `source`, `bash -c`, `eval`, script arguments), which every reader of
//!   commands goes through;
//! - [`scheduler`] (`#SBATCH`, `#PBS`, `srun` options), [`launch`] (launchers and training
//!   arguments, from the tables of [`vocabulary`]), [`configs`] (JSON, YAML, TOML),
//!   [`python`] (defaults in the training code) and [`logs`] (progress and failures);
//! - [`precedence`]: the one rule that decides between values of one field;
//! - [`derive`](mod@derive): every fact computed from others, each in one function;
//! - [`extract()`]: all of them over one job directory, cached by content;
//! - [`user_dir`]: a job directory read for another user (a child process with that user's
//!   rights, bounded entries, bytes and time), for code that runs as root;
//! - [`agent`]: the optional LLM pass for what the rules leave open, checked against the lines
//!   it cites; [`embed`]: sentence embeddings of a job's text.
//!
//! What is done with the facts (a history of past jobs, predictions, configuration advice and
//! their replays) is the `schedlm-history` crate's. docs/knowledge.md is the reference.

#![warn(missing_docs)]

pub mod agent;
pub mod configs;
pub mod confine;
pub mod derive;
pub mod embed;
pub mod extract;
pub mod facts;
pub mod field;
pub mod launch;
pub mod logs;
pub mod precedence;
pub mod python;
pub mod scheduler;
pub mod shell;
pub mod user_dir;
pub mod vocabulary;

pub use extract::{
    extract, extract_cached, extract_with, Cache, ExtractError, ExtractOptions, Extraction,
};
pub use facts::{Fact, JobFacts, Source, Strength};
