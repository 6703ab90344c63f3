//! One fine-tuning record: a solved snapshot as prompt, completion and chat messages, with its
//! label and how good the label is proven to be.
//!
//! The JSON of a record is flat where fine-tuning tools look (`prompt`, `completion`,
//! `messages`) and complete where researchers look (`instance`, `order`, `value`,
//! `lower_bound`, `proven_optimal`, `baselines`): Hugging Face `datasets` loads it with
//! `load_dataset("json", data_files=...)`, and TRL trains on `prompt`/`completion` or on
//! `messages` unchanged.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Lines};
use std::path::{Path, PathBuf};

use schedlm_model::{repair, Instance, Objective, Problem, Variant};
use schedlm_solver::bnb::evaluate;
use schedlm_solver::canonical::{canonical_order, ranking, NODE_LIMIT};
use schedlm_solver::portfolio::Solution;
use serde::{Deserialize, Serialize};

use crate::build::BuildError;
use crate::canonical::{fingerprint, Fingerprint};
use crate::prompt::{answer, render, Template};
use crate::split::{Split, SplitSpec};
use crate::step::StepState;

/// A chat message (`role` is `system`, `user` or `assistant`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

/// One line of a dataset file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The instance fingerprint's id ([`Fingerprint::id`]): equal for the same content under
    /// other ids, listing orders or clock.
    pub id: String,
    /// Position in the source: the generator index, or the 1-based line of `--from FILE`.
    pub index: u64,
    pub split: Split,
    /// Generator family, or the name given to `--from` input.
    pub family: String,
    /// Versioned template name, e.g. `compact-v1`.
    pub template: String,
    pub objective: Objective,
    pub variant: Variant,
    /// The text before the answer: system message, a blank line, the user message, a newline.
    pub prompt: String,
    /// The answer: the order line, and the plan line when the build asked for it.
    pub completion: String,
    /// The same as `prompt` + `completion`, as system, user and assistant messages.
    pub messages: Vec<Message>,
    /// The label: the queue order, as the instance's own job ids.
    pub order: Vec<String>,
    /// Which of the orders as good as the solver's is the label: `canonical` (the first in the
    /// ranking of the instance's best rule, see `schedlm_solver::canonical`) or `solver` (the
    /// one the solver returned; left out of the JSON, as in records before canonical labels).
    #[serde(default, skip_serializing_if = "AnswerOrder::is_solver")]
    pub answer: AnswerOrder,
    /// The instance's best classic rule, whose order ranks the jobs for canonical labels and
    /// the compact-v2 prompt (left out when neither is used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranking_rule: Option<String>,
    /// Step records only (`dataset build --records steps`): how many jobs of the label are
    /// already placed in the prompt's state; the completion names the next. (The placed jobs
    /// are a prefix of `order` repaired so that every job follows its queued dependencies.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
    /// Objective value of `order` under the dispatcher.
    pub value: f64,
    /// A proven lower bound on the best value over all orders (equals `value` when optimal).
    pub lower_bound: f64,
    pub proven_optimal: bool,
    /// How the solve ended: `optimal`, `time_limit`, `node_limit`, `bounded` or `heuristic`.
    pub status: String,
    /// The solver that produced the label (`auto`, `bnb`, `milp`, `ls`).
    pub solver: String,
    /// Branch-and-bound nodes the solve explored.
    pub nodes: u64,
    /// Each classic rule's objective value on this instance, by rule name.
    pub baselines: BTreeMap<String, f64>,
    pub instance: Instance,
}

/// Which order among those as good as the solver's becomes the label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerOrder {
    /// The order the solver returned (every build before canonical labels).
    #[default]
    Solver,
    /// The canonical order: the first, in the ranking of the instance's best classic rule, of
    /// the orders whose value is at most the solver's (`schedlm_solver::canonical`). Equal
    /// content gets equal labels, and the label is the best rule's order whenever that rule is
    /// as good as the solver.
    Canonical,
}

impl AnswerOrder {
    pub fn name(self) -> &'static str {
        match self {
            AnswerOrder::Solver => "solver",
            AnswerOrder::Canonical => "canonical",
        }
    }

    pub fn is_solver(&self) -> bool {
        *self == AnswerOrder::Solver
    }
}

/// What one solved instance becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordKind {
    /// One record per instance, answered by the whole queue order (every build before step
    /// records).
    #[default]
    Orders,
    /// One record per dispatching decision: `n - 1` records per instance of `n` queued jobs,
    /// rendered with `step-v1` (see [`crate::step`]).
    Steps,
}

impl RecordKind {
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Orders => "orders",
            RecordKind::Steps => "steps",
        }
    }

    pub fn is_orders(&self) -> bool {
        *self == RecordKind::Orders
    }
}

/// The step records of an instance's order record (see [`crate::step`]): for each prefix
/// `0..n-1` of its label, repaired so that every job follows its queued dependencies, the
/// state after that prefix and the next job. Each keeps the order record's fields (label,
/// value, bound, baselines, instance, split) with id `<id>-s<k>`, template `step-v1` and
/// `step: Some(k)`.
pub fn step_records(order: &Record, problem: &Problem) -> Result<Vec<Record>, RecordError> {
    let label = order
        .order_indices()
        .map_err(|id| RecordError::Order(schedlm_model::OrderError::UnknownJob(id)))?;
    let label = repair(problem, &label);
    let n = label.len();
    let mut state = StepState::new(&order.instance, problem, order.objective, order.variant);
    let mut out = Vec::with_capacity(n.saturating_sub(1));
    for (k, &next) in label.iter().enumerate().take(n.saturating_sub(1)) {
        let rendered = state.render();
        let completion = rendered.ids.job(next);
        out.push(Record {
            id: format!("{}-s{k}", order.id),
            template: Template::StepV1.name().to_string(),
            prompt: prompt_text(&rendered.system, &rendered.user),
            messages: vec![
                message("system", rendered.system),
                message("user", rendered.user),
                message("assistant", completion.clone()),
            ],
            completion,
            step: Some(k),
            ..order.clone()
        });
        // A repaired label names each job once, after its queued dependencies.
        let placed = state.place(next);
        debug_assert!(placed, "job {next} of a repaired label could not be placed");
    }
    Ok(out)
}

/// How records are rendered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecordOptions {
    /// Which optimal order is the label.
    pub answer: AnswerOrder,
    pub template: Template,
    pub objective: Objective,
    pub variant: Variant,
    /// Add the dispatcher's plan line to the completion.
    pub plan: bool,
    pub split: SplitSpec,
}

/// Why a record could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RecordError {
    #[error("the solver's order is not a valid order of the queue: {0}")]
    Order(#[from] schedlm_model::OrderError),
}

/// The prompt text of a rendered instance: system, blank line, user, newline.
pub fn prompt_text(system: &str, user: &str) -> String {
    format!("{system}\n\n{user}\n")
}

/// Builds the record of a solved instance.
pub fn make_record(
    index: u64,
    family: &str,
    instance: &Instance,
    problem: &Problem,
    solution: &Solution,
    solver: &str,
    options: &RecordOptions,
) -> Result<Record, RecordError> {
    make_record_with(
        fingerprint(instance),
        index,
        family,
        instance,
        problem,
        solution,
        solver,
        options,
    )
}

/// [`make_record`] with the fingerprint already computed.
#[allow(clippy::too_many_arguments)]
pub fn make_record_with(
    fp: Fingerprint,
    index: u64,
    family: &str,
    instance: &Instance,
    problem: &Problem,
    solution: &Solution,
    solver: &str,
    options: &RecordOptions,
) -> Result<Record, RecordError> {
    let rendered = render(
        instance,
        options.objective,
        options.variant,
        options.template,
    );
    let label = Label::new(problem, solution, options);
    let completion = answer(
        problem,
        &label.order,
        &rendered.ids,
        options.variant,
        options.plan,
    )?;
    let prompt = prompt_text(&rendered.system, &rendered.user);
    let messages = vec![
        message("system", rendered.system),
        message("user", rendered.user),
        message("assistant", completion.clone()),
    ];
    Ok(Record {
        id: fp.id(),
        index,
        split: options.split.of(&fp),
        family: family.to_string(),
        template: options.template.name().to_string(),
        objective: options.objective,
        variant: options.variant,
        prompt,
        completion,
        messages,
        order: label
            .order
            .iter()
            .map(|&j| problem.job_id(j).to_string())
            .collect(),
        answer: label.answer,
        ranking_rule: label.ranking_rule,
        step: None,
        value: label.value,
        lower_bound: solution.lower_bound,
        proven_optimal: solution.proven_optimal,
        status: solution.status.name().to_string(),
        solver: solver.to_string(),
        nodes: solution.nodes,
        baselines: solution
            .baselines
            .iter()
            .map(|(rule, v)| (rule.name().to_string(), *v))
            .collect(),
        instance: instance.clone(),
    })
}

/// The label of a solved instance under [`RecordOptions::answer`].
struct Label {
    order: Vec<usize>,
    value: f64,
    answer: AnswerOrder,
    ranking_rule: Option<String>,
}

impl Label {
    fn new(problem: &Problem, solution: &Solution, options: &RecordOptions) -> Label {
        let solver = Label {
            order: solution.order.clone(),
            value: solution.value,
            answer: AnswerOrder::Solver,
            ranking_rule: None,
        };
        if options.answer == AnswerOrder::Solver {
            // Solver labels need the ranking rule only to name it (compact-v2), not the search.
            let ranked = matches!(options.template, Template::CompactV2);
            let ranking_rule = ranked.then(|| {
                ranking(problem, options.objective, options.variant)
                    .rule
                    .name()
                    .to_string()
            });
            return Label {
                ranking_rule,
                ..solver
            };
        }
        let c = canonical_order(
            problem,
            options.objective,
            options.variant,
            &solution.order,
            NODE_LIMIT,
        );
        let ranking_rule = Some(c.ranking.rule.name().to_string());
        if !c.canonical {
            // The node limit stopped the search: the solver's order stays the label, and the
            // record says so.
            return Label {
                ranking_rule,
                ..solver
            };
        }
        let (_, value) = evaluate(problem, options.objective, options.variant, &c.order);
        Label {
            order: c.order,
            value,
            answer: AnswerOrder::Canonical,
            ranking_rule,
        }
    }
}

fn message(role: &str, content: String) -> Message {
    Message {
        role: role.to_string(),
        content,
    }
}

impl Record {
    /// Whether the record stands for its whole instance: an order record, or the first step
    /// of a step record's instance (readers that work per instance keep only these).
    pub fn is_first_step(&self) -> bool {
        self.step.unwrap_or(0) == 0
    }

    /// What kind of record this is: an order record, or one step of a step build.
    pub fn kind(&self) -> RecordKind {
        if self.step.is_some() {
            RecordKind::Steps
        } else {
            RecordKind::Orders
        }
    }

    /// The template the record's prompt was rendered with (`None` for an unknown name).
    pub fn template(&self) -> Option<Template> {
        Template::from_name(&self.template)
    }

    /// The record's queue order as indices of `instance.queue`, or the first unknown id.
    pub fn order_indices(&self) -> Result<Vec<usize>, String> {
        self.order
            .iter()
            .map(|id| {
                self.instance
                    .queue
                    .iter()
                    .position(|j| &j.id == id)
                    .ok_or_else(|| id.clone())
            })
            .collect()
    }
}

/// Reads a dataset file record by record: yields each non-blank line's 1-based number and its
/// record, or the error naming the file and line.
pub fn read_records(path: &Path) -> Result<RecordReader, BuildError> {
    let file = File::open(path).map_err(|source| BuildError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(RecordReader {
        path: path.to_path_buf(),
        lines: BufReader::new(file).lines(),
        line: 0,
    })
}

/// The iterator of [`read_records`].
pub struct RecordReader {
    path: PathBuf,
    lines: Lines<BufReader<File>>,
    line: u64,
}

impl Iterator for RecordReader {
    type Item = Result<(u64, Record), BuildError>;

    fn next(&mut self) -> Option<Self::Item> {
        for text in self.lines.by_ref() {
            self.line += 1;
            let text = match text {
                Ok(t) => t,
                Err(source) => {
                    return Some(Err(BuildError::Io {
                        path: self.path.clone(),
                        source,
                    }))
                }
            };
            if text.trim().is_empty() {
                continue;
            }
            return Some(
                serde_json::from_str(&text)
                    .map(|r| (self.line, r))
                    .map_err(|e| BuildError::Record {
                        path: self.path.clone(),
                        line: self.line,
                        reason: e.to_string(),
                    }),
            );
        }
        None
    }
}
