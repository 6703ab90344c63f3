//! Policies that answer in text, and how a text answer is scored.
//!
//! A reply goes through the dataset's answer parser ([`schedlm_dataset::parse_answer`]). A
//! clean reply (strict mode) is *valid* and scored by its own order. Anything else (a defect,
//! no order, no reply at all) is *invalid*: it is scored by the FCFS order (the fallback a
//! site would run), and the lenient repair of the reply is scored too, so a report can show
//! validity and both scores.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use schedlm_dataset::{parse_answer, IdMap, Mode, ParseError, Template};
use schedlm_model::{dispatch, Instance, Objective, OrderError, Problem, Variant};
use schedlm_solver::rules::{self, Rule, RuleContext};

use serde::{Deserialize, Serialize};

use crate::error::EvalError;

/// `text` on one line, cut to `most` characters (with `...` when cut).
pub(crate) fn shorten(text: &str, most: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= most {
        return line;
    }
    let cut: String = line.chars().take(most).collect();
    format!("{cut}...")
}

/// One answer of a text policy (also the answer part of a line of `answers.jsonl`, where
/// `output` must be present, `null` when there is none).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// The raw text; `None` when there is none (`error` says why).
    pub output: Option<String>,
    /// A best-of-N answer, for policies that sample several.
    #[serde(default)]
    pub best_of: Option<String>,
    /// Whether best-of-N samples were drawn (then a missing `best_of` means none was valid,
    /// and the best-of column is reported even if no answer has one).
    #[serde(default)]
    pub sampled: bool,
    /// Decision time in seconds, when measured.
    #[serde(default)]
    pub seconds: Option<f64>,
    /// Why there is no output (request failed, missing prediction, ...).
    #[serde(default)]
    pub error: Option<String>,
    /// Why the model stopped, as the server says (`stop`, `length`, ...).
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Tokens of the prompt, as the server counts them; `None` when it does not say.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// Tokens of the answer, as the server counts them; `None` when it does not say.
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    /// Decision time of the best-of answer (all its samples) in seconds, when measured apart
    /// from `seconds` (the greedy answer's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_of_seconds: Option<f64>,
    /// A constrained model's greedy answer decoded without the constraint, to measure the
    /// validity of the model alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconstrained: Option<String>,
    /// Requests retried before this answer (or before giving up).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
    /// Why each retry happened, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retry_reasons: Vec<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How a text policy decodes its answers, in words for reports and `answers.jsonl`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decoding {
    /// The greedy (main) answer: `constrained greedy`, `unconstrained greedy`, `endpoint,
    /// temperature 0`, `as given (predictions file)`.
    pub greedy: String,
    /// The best-of column, when the policy samples: `constrained, best of 8 samples at
    /// temperature 1`.
    pub best_of: Option<String>,
    /// Samples behind the best-of column (its equal-compute baseline gets as many dispatcher
    /// evaluations).
    pub samples: usize,
    /// Whether answers are constrained to valid orders (`None`: unknown or not applicable).
    pub constrained: Option<bool>,
}

impl Decoding {
    /// Both columns in one line, for `answers.jsonl` (a resumed run reuses an answer only when
    /// this is unchanged).
    pub fn line(&self) -> String {
        match &self.best_of {
            Some(b) => format!("{}; best-of: {b}", self.greedy),
            None => self.greedy.clone(),
        }
    }
}

impl Reply {
    /// Whether the answer was cut off at the token limit (`finish_reason: length`).
    pub fn truncated(&self) -> bool {
        self.finish_reason.as_deref() == Some("length")
    }
}

/// What a text policy is asked: the rendered prompt, and the snapshot it shows (for
/// policies that render prompts themselves or check their samples, like schedlm models).
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    /// The system message, as rendered with `template`.
    pub system: &'a str,
    /// The user message (the snapshot and the question), as rendered with `template`.
    pub user: &'a str,
    /// The snapshot the prompt shows: its queue is what the answer orders.
    pub instance: &'a Instance,
    /// The objective the answer is scored by (`bsld` online).
    pub objective: Objective,
    /// The dispatcher variant the answer is scored under (`serial` online).
    pub variant: Variant,
    /// The template `system` and `user` were rendered with.
    pub template: Template,
}

/// A policy that answers in text.
pub trait TextModel: Sync {
    /// Answers one question. Never fails: a failed request or model error is a [`Reply`] without
    /// `output` whose `error` says why.
    fn answer(&self, ask: &Ask<'_>) -> Reply;

    /// Questions to ask at once, whatever the requested concurrency (which is meant for
    /// remote endpoints): a model that runs in this process answers one per core, since more
    /// gain nothing and each holds its own activations. `None`: the requested concurrency.
    fn own_concurrency(&self) -> Option<usize> {
        None
    }

    /// How the answers are decoded.
    fn decoding(&self) -> Decoding {
        Decoding {
            greedy: "endpoint's own decoding".into(),
            ..Decoding::default()
        }
    }

    /// What the model was trained on, when it records it (schedlm models): instances outside
    /// it are counted and warned about.
    fn trained_on(&self) -> Option<schedlm_dataset::distribution::TrainingDistribution> {
        None
    }
}

/// Loads the policy of `model:DIR`. With the feature `models`, `model_policy::loader` loads
/// schedlm's own models through `schedlm_finetune::Predictor` (what the `schedlm` binary
/// passes); without it the default loader ([`load_model`]) refuses.
#[derive(Clone)]
pub struct ModelLoader(pub LoadFn);

/// The function behind a [`ModelLoader`].
pub type LoadFn = Arc<dyn Fn(&Path) -> Result<Box<dyn TextModel>, EvalError> + Send + Sync>;

impl ModelLoader {
    /// Loads the policy of `model:DIR` from `dir` with the wrapped [`LoadFn`].
    pub fn load(&self, dir: &Path) -> Result<Box<dyn TextModel>, EvalError> {
        (self.0)(dir)
    }
}

impl Default for ModelLoader {
    fn default() -> Self {
        ModelLoader(Arc::new(load_model))
    }
}

impl std::fmt::Debug for ModelLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ModelLoader")
    }
}

/// The default loader of `model:DIR` when no other is given: refuses, pointing to
/// `predictions:FILE` (`model_policy::loader`, feature `models`, loads schedlm's models).
pub fn load_model(dir: &Path) -> Result<Box<dyn TextModel>, EvalError> {
    Err(EvalError::policy(
        &format!("model:{}", dir.display()),
        "this build cannot load schedlm models (the schedlm binary can); run `schedlm \
         predict` and evaluate its output with predictions:FILE",
    ))
}

/// Asks `model` every question, at most `concurrency` at a time; replies in question order.
/// `on_reply(i, reply)` runs as each reply arrives (on the thread that got it), e.g. to save it.
pub fn answer_all(
    model: &dyn TextModel,
    asks: &[Ask<'_>],
    concurrency: usize,
    on_reply: &(dyn Fn(usize, &Reply) + Sync),
) -> Vec<Reply> {
    let concurrency = model.own_concurrency().unwrap_or(concurrency);
    let next = AtomicUsize::new(0);
    let replies: Mutex<Vec<Option<Reply>>> = Mutex::new(vec![None; asks.len()]);
    std::thread::scope(|scope| {
        for _ in 0..concurrency.clamp(1, asks.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(ask) = asks.get(i) else {
                    break;
                };
                let reply = model.answer(ask);
                on_reply(i, &reply);
                if let Ok(mut all) = replies.lock() {
                    all[i] = Some(reply);
                }
            });
        }
    });
    replies
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| Reply {
                error: Some("the request thread failed".into()),
                ..Reply::default()
            })
        })
        .collect()
}

/// The score of one text answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// The value that counts: the answer's own when valid, the FCFS fallback's when not.
    pub value: f64,
    /// The value of the leniently repaired answer (FCFS order when there is no text).
    pub lenient_value: f64,
    /// Whether the answer parsed cleanly (strict mode), so `value` is its own order's.
    pub valid: bool,
    /// The defects found, `; `-separated; empty for a valid answer.
    pub defects: String,
    /// The placed order of a valid answer (after the dependency repair); `None` when invalid.
    pub order: Option<Vec<usize>>,
}

/// The objective value of `order` (queue indices, a permutation) under the dispatcher.
pub fn order_value(
    problem: &Problem,
    order: &[usize],
    objective: Objective,
    variant: Variant,
) -> Result<f64, OrderError> {
    let schedule = dispatch(problem, order, variant)?;
    Ok(objective.value(problem, &schedule.start))
}

/// The placed order (after the dependency repair) and the objective value of `order` (queue
/// indices, a permutation) under the dispatcher.
pub fn placed(
    problem: &Problem,
    order: &[usize],
    objective: Objective,
    variant: Variant,
) -> Result<(Vec<usize>, f64), OrderError> {
    let schedule = dispatch(problem, order, variant)?;
    let value = objective.value(problem, &schedule.start);
    Ok((schedule.order, value))
}

/// The FCFS fallback's value.
pub fn fcfs_value(
    problem: &Problem,
    objective: Objective,
    variant: Variant,
) -> Result<f64, OrderError> {
    let order = rules::order(Rule::Fcfs, problem, &RuleContext::default());
    order_value(problem, &order, objective, variant)
}

/// Scores a reply (or its absence, with the reason) on one instance.
pub fn score_text(
    problem: &Problem,
    instance: &Instance,
    ids: &IdMap,
    objective: Objective,
    variant: Variant,
    text: Result<&str, &str>,
) -> Result<Scored, OrderError> {
    let fallback = fcfs_value(problem, objective, variant)?;
    let text = match text {
        Ok(t) => t,
        Err(why) => {
            return Ok(Scored {
                value: fallback,
                lenient_value: fallback,
                valid: false,
                defects: why.to_string(),
                order: None,
            })
        }
    };
    match parse_answer(text, ids, instance, Mode::Strict) {
        Ok(parsed) => {
            let (order, value) = placed(problem, &parsed.order, objective, variant)?;
            Ok(Scored {
                value,
                lenient_value: value,
                valid: true,
                defects: String::new(),
                order: Some(order),
            })
        }
        Err(error) => {
            let defects = match &error {
                ParseError::Rejected(list) => list
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join("; "),
                other => other.to_string(),
            };
            let lenient = match parse_answer(text, ids, instance, Mode::Lenient) {
                Ok(p) => order_value(problem, &p.order, objective, variant)?,
                Err(_) => fallback,
            };
            Ok(Scored {
                value: fallback,
                lenient_value: lenient,
                valid: false,
                defects,
                order: None,
            })
        }
    }
}
