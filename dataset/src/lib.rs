//! Prompt/answer records for fine-tuning language models on schedlm snapshots.
//!
//! - [`prompt`]: render an [`Instance`](schedlm_model::Instance) as text with a named, versioned
//!   [`Template`], with short prompt ids (`J1..Jn`, `S1..Sm`, `R1..Rk`) kept in an [`IdMap`];
//!   the target's answer line and the dispatcher's plan line.
//! - [`parse`]: turn a model's raw reply back into an order of the queue, classifying every
//!   [`Defect`], strictly or with repairs.
//! - [`record`]: records (one form of prompt and answer per file, [`RecordFormat`]) and their
//!   reader; [`build`], [`merge`], [`stats`]: `schedlm dataset build | merge | stats`;
//!   [`manifest`]: what a dataset directory holds and the arguments that made it;
//!   [`difficulty`]: how much a record asks beyond the prompt's ranking (headroom, deviations);
//!   [`distribution`]: what a model was trained on, to tell later questions outside it;
//!   [`layout`]: its files on disk; [`error`]: [`BuildError`], why any of them failed.
//! - [`step_env`]: a step environment, one dispatching decision at a time as step prompts show
//!   it, for policies rolled out outside Rust.
//! - [`reward`]: the reward of an answer (its value against the best rule per instance), the
//!   one formula of reinforcement learning.
//! - [`features`]: each candidate of a step state as numbers, for candidate scorers.
//! - [`values`]: every candidate's value and regret in step records (`--targets values`).
//! - [`testing`]: small solved datasets, the one fixture of every crate's tests.
//!
//! ```
//! use schedlm_dataset::{answer_line, parse_answer, render, Mode, Template};
//! use schedlm_model::{Instance, Objective, Variant};
//!
//! let instance = Instance::from_json(r#"{
//!   "now": 100, "resources": ["cores"],
//!   "servers": [{"id": "n0", "capacity": [8]}],
//!   "queue": [{"id": "big", "submit": 40, "demand": [8], "walltime": 100},
//!             {"id": "small", "submit": 90, "demand": [4], "walltime": 50}]
//! }"#).unwrap();
//! let rendered = render(&instance, Objective::Bsld, Variant::Serial, Template::Compact);
//! assert!(rendered.user.contains("J2 4 50 10")); // need, requested time, waited
//! assert_eq!(rendered.ids.to_original("J2"), Some("small"));
//!
//! // compact-v2 lists and numbers the queue in the order of the best rule (here SJF):
//! let ranked = render(&instance, Objective::Bsld, Variant::Serial, Template::CompactV2);
//! assert!(ranked.user.contains("queue by sjf (2): id need time\n"));
//! assert_eq!(ranked.ids.to_original("J1"), Some("small"));
//!
//! // The target for "small first":
//! assert_eq!(answer_line(&["J2", "J1"]), "J2 J1");
//! // A model's reply, with prose around the answer:
//! let reply = "J2 is short, so it goes first.\nOrder: J2 -> J1";
//! let parsed = parse_answer(reply, &rendered.ids, &instance, Mode::Lenient).unwrap();
//! assert_eq!(parsed.order, vec![1, 0]);
//! assert!(parse_answer(reply, &rendered.ids, &instance, Mode::Strict).is_err()); // extra text
//! ```

#![warn(missing_docs)]

pub mod build;
pub mod canonical;
pub mod difficulty;
pub mod distribution;
pub mod error;
pub mod features;
#[doc(hidden)]
pub mod fuzzing;
pub mod ids;
pub mod layout;
pub mod manifest;
pub mod merge;
pub mod parse;
pub mod prompt;
pub mod record;
pub mod reward;
pub mod split;
pub mod stats;
pub mod step;
pub mod step_env;
pub mod testing;
pub mod values;

pub use canonical::{fingerprint, Fingerprint};
pub use error::BuildError;
pub use ids::IdMap;
pub use manifest::{read_manifest, BuildArgs, Manifest, Shard, Source};
pub use parse::{parse_answer, Defect, Mode, ParseError, Parsed};
pub use prompt::{
    answer, answer_line, human, objective_sentence, order_line, plan_line, prompt_ids, render,
    Rendered, Template,
};
pub use record::{
    make_record, read_records, AnswerOrder, Message, Record, RecordFormat, RecordKind,
    RecordOptions, Targets,
};
pub use split::{Split, SplitSpec};
pub use step::{render_state, StepState};
