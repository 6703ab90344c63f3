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
use std::io::BufReader;
use std::path::{Path, PathBuf};

use schedlm_model::lines::TextLines;
use schedlm_model::{repair, text_lines, tied, Instance, Objective, Problem, Variant};
use schedlm_solver::canonical::{canonical_order, follow_listing, ranking, Ranking, NODE_LIMIT};
use schedlm_solver::portfolio::Solution;
use schedlm_solver::work::Budget;
use serde::{Deserialize, Serialize};

use crate::canonical::{fingerprint, Fingerprint};
use crate::difficulty::Difficulty;
use crate::error::BuildError;
use crate::prompt::{answer, render, Template};
use crate::split::{Split, SplitSpec};
use crate::step::StepState;
use crate::values::StepValues;

/// A chat message (`role` is `system`, `user` or `assistant`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks: `system` (the task), `user` (the snapshot) or `assistant` (the answer).
    pub role: String,
    /// The message text; the assistant's is the record's completion.
    pub content: String,
}

/// Relative tolerance of [`Record::check_label`]: the value written and the value recomputed
/// come from the same dispatcher and formulas, so only the last bits may differ.
pub const LABEL_TOLERANCE: f64 = schedlm_model::VALUE_TOLERANCE;

/// One line of a dataset file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The instance fingerprint's id ([`Fingerprint::id`]): equal for the same content under
    /// other ids, listing orders or clock.
    pub id: String,
    /// Position in the source: the generator index, or the 1-based line of `--from FILE`.
    pub index: u64,
    /// The split the fingerprint put the record in, which is also the file it is in
    /// (`train`, `val` or `test`).
    pub split: Split,
    /// Generator family, or the name given to `--from` input.
    pub family: String,
    /// Versioned template name, e.g. `compact-v1`.
    pub template: String,
    /// The objective the label minimises and the prompt states (`bsld`, `wait`, `flow` or
    /// `makespan`).
    pub objective: Objective,
    /// The dispatcher the label's `value` and plan line are computed with: `serial` or
    /// `strict`.
    pub variant: Variant,
    /// The text before the answer: system message, a blank line, the user message, a newline.
    /// Left out of files written in the `messages` format ([`RecordFormat`]); filled in from
    /// `messages` when such a file is read.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prompt: String,
    /// The answer: the order line, and the plan line when the build asked for it (left out
    /// and filled in like `prompt`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub completion: String,
    /// The same as `prompt` + `completion`, as system, user and assistant messages. Left out
    /// of files written in the `prompt-completion` format; filled in from them when read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
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
    /// Step records built with `--targets values` only: every job the state offers, with the
    /// best value reachable when it goes next, its regret and whether that value is proven
    /// ([`crate::values`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<StepValues>,
    /// Objective value of `order` under the dispatcher.
    pub value: f64,
    /// A proven lower bound on the best value over all orders (equals `value` when optimal).
    pub lower_bound: f64,
    /// Whether `value` is proven to be the optimum (then `lower_bound` equals it); otherwise
    /// the label carries its gap `(value - lower_bound) / lower_bound`.
    pub proven_optimal: bool,
    /// How the solve ended: `optimal`, `time_limit`, `node_limit`, `bounded` or `heuristic`.
    pub status: String,
    /// The solver that produced the label (`auto`, `bnb`, `milp`, `ls`).
    pub solver: String,
    /// Branch-and-bound nodes the solve explored.
    pub nodes: u64,
    /// Units of work the solve spent (`schedlm_solver::work`); under a work limit the same on
    /// every machine. 0 in records written before work was counted.
    #[serde(default)]
    pub work: u64,
    /// The budget the label was computed with: `work_limit` (counted work, the same label on
    /// every machine), `time_limit_ms` (a cap, or the whole budget when there is no work
    /// limit) and `node_limit`. Absent in records written before budgets were stated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// Each classic rule's objective value on this instance, by rule name.
    pub baselines: BTreeMap<String, f64>,
    /// How much the label asks beyond the prompt's ranking: its headroom over the best rule
    /// per instance, and the label positions that leave the ranking
    /// ([`crate::difficulty`]). Absent in records built before it was stored
    /// ([`Difficulty::of_record`] recomputes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<Difficulty>,
    /// The snapshot that was solved (SPEC section 1), as parsed: input fields the schema does
    /// not know are not kept.
    pub instance: Instance,
}

/// Which form of the prompt and answer a dataset file carries. Both forms hold the same text;
/// fine-tuning tools pick one by the columns they find, so a file with both is ambiguous (TRL's
/// `SFTTrainer` decides by the order of a Python set, which changes with the hash seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum RecordFormat {
    /// `messages` only: system, user and assistant turns (conversational; TRL applies the
    /// model's chat template, whose end-of-turn token ends the answer).
    Messages,
    /// `prompt` and `completion` strings only (TRL's standard prompt-completion type: the loss
    /// on the completion only, and the end-of-sequence token appended to it).
    PromptCompletion,
    /// Both forms (every build before formats; the serde default, so that older manifests
    /// read as what they are).
    #[default]
    Both,
}

impl RecordFormat {
    /// The name used by `--format` and in manifests: `messages`, `prompt-completion` or
    /// `both`.
    pub fn name(self) -> &'static str {
        match self {
            RecordFormat::Messages => "messages",
            RecordFormat::PromptCompletion => "prompt-completion",
            RecordFormat::Both => "both",
        }
    }

    /// Whether this is [`RecordFormat::Both`], the default that manifests leave out.
    pub fn is_both(&self) -> bool {
        *self == RecordFormat::Both
    }
}

/// Which order among those as good as the solver's becomes the label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum AnswerOrder {
    /// The order the solver returned (every build before canonical labels).
    #[default]
    Solver,
    /// The canonical order: the first, in the ranking of the instance's best classic rule, of
    /// the orders whose value is at most the solver's (`schedlm_solver::canonical`). Equal
    /// content gets equal labels, and the label is the best rule's order whenever that rule is
    /// as good as the solver. For `step-v2` records, whose prompts list the jobs by their
    /// completion if placed next, the order that follows that listing wherever the solver's
    /// value stays reachable (`schedlm_solver::canonical::follow_listing`).
    Canonical,
}

impl AnswerOrder {
    /// The name used by `--answer` and in the JSON: `solver` or `canonical`.
    pub fn name(self) -> &'static str {
        match self {
            AnswerOrder::Solver => "solver",
            AnswerOrder::Canonical => "canonical",
        }
    }

    /// Whether this is [`AnswerOrder::Solver`], the default that records leave out of their
    /// JSON.
    pub fn is_solver(&self) -> bool {
        *self == AnswerOrder::Solver
    }
}

/// What one solved instance becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
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
    /// The name used by `--records` and in manifests: `orders` or `steps`.
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Orders => "orders",
            RecordKind::Steps => "steps",
        }
    }

    /// Whether this is [`RecordKind::Orders`], the default that manifests leave out.
    pub fn is_orders(&self) -> bool {
        *self == RecordKind::Orders
    }
}

/// What a step record's answer is trained towards (`--targets`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Targets {
    /// The label's next job only (every build before values).
    #[default]
    Label,
    /// The label's next job, and every candidate's value and regret ([`crate::values`]).
    Values,
}

impl Targets {
    /// The name used by `--targets` and in manifests: `label` or `values`.
    pub fn name(self) -> &'static str {
        match self {
            Targets::Label => "label",
            Targets::Values => "values",
        }
    }

    /// Whether this is [`Targets::Label`], the default that manifests leave out.
    pub fn is_label(&self) -> bool {
        *self == Targets::Label
    }
}

/// The step records of an instance's order record (see [`crate::step`]): for each prefix
/// `0..n-1` of its label, repaired so that every job follows its queued dependencies, the
/// state after that prefix and the next job. Each keeps the order record's fields (label,
/// value, bound, baselines, instance, split) with id `<id>-s<k>`, template `step-v2` when the
/// order record's is (`step-v1` otherwise) and `step: Some(k)`.
pub fn step_records(order: &Record, problem: &Problem) -> Result<Vec<Record>, RecordError> {
    step_records_with(order, problem, None)
}

/// [`step_records`], with each state's candidate values ([`StepValues`]) computed under a
/// budget of `values` work units per candidate when given.
pub fn step_records_with(
    order: &Record,
    problem: &Problem,
    values: Option<u64>,
) -> Result<Vec<Record>, RecordError> {
    let label = order
        .order_indices()
        .map_err(|id| RecordError::Order(schedlm_model::OrderError::UnknownJob(id)))?;
    let label = repair(problem, &label);
    let n = label.len();
    let template = match order.template() {
        Some(Template::StepV2) => Template::StepV2,
        _ => Template::StepV1,
    };
    let mut state = StepState::new(&order.instance, problem, order.objective, order.variant)
        .rendered_as(template);
    let mut out = Vec::with_capacity(n.saturating_sub(1));
    for (k, &next) in label.iter().enumerate().take(n.saturating_sub(1)) {
        let rendered = state.render();
        let completion = rendered.ids.job(next);
        let values = values.map(|work_limit| {
            let lower_bound = if order.lower_bound.is_finite() {
                order.lower_bound
            } else {
                0.0
            };
            StepValues::compute(
                problem,
                order.objective,
                order.variant,
                &label,
                k,
                &state.placeable(),
                &rendered.ids,
                lower_bound,
                work_limit,
            )
        });
        out.push(Record {
            id: format!("{}-s{k}", order.id),
            template: template.name().to_string(),
            prompt: prompt_text(&rendered.system, &rendered.user),
            messages: vec![
                message("system", rendered.system),
                message("user", rendered.user),
                message("assistant", completion.clone()),
            ],
            completion,
            step: Some(k),
            values,
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
    /// The template the prompt is rendered with (`--template`).
    pub template: Template,
    /// The objective the label minimises and the prompt states.
    pub objective: Objective,
    /// The dispatcher of the label, its value and the plan line: `serial` or `strict`.
    pub variant: Variant,
    /// Add the dispatcher's plan line to the completion.
    pub plan: bool,
    /// Shares of train, validation and test; the record's split is picked from its
    /// fingerprint against them.
    pub split: SplitSpec,
}

/// Why a record could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RecordError {
    /// The label is not a permutation of the queue (it names an unknown job, lists one twice
    /// or misses one), so it can be neither dispatched nor written.
    #[error("the solver's order is not a valid order of the queue: {0}")]
    Order(#[from] schedlm_model::OrderError),
}

/// The prompt text of a rendered instance: system, blank line, user, newline.
pub fn prompt_text(system: &str, user: &str) -> String {
    format!("{system}\n\n{user}\n")
}

/// The system and user messages of a prompt made by [`prompt_text`]: split at the first blank
/// line (all user message when there is none).
fn split_prompt(prompt: &str) -> (&str, &str) {
    let prompt = prompt.strip_suffix('\n').unwrap_or(prompt);
    prompt.split_once("\n\n").unwrap_or(("", prompt))
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
    record_with_fingerprint(
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
pub fn record_with_fingerprint(
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
    let difficulty = Difficulty::with_ranking(
        problem,
        &label.ranking,
        &label.order,
        label.value,
        solution.lower_bound,
    );
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
        values: None,
        value: label.value,
        lower_bound: solution.lower_bound,
        proven_optimal: solution.proven_optimal,
        status: solution.status.name().to_string(),
        solver: solver.to_string(),
        nodes: solution.nodes,
        work: solution.work,
        budget: Some(solution.budget),
        baselines: solution
            .baselines
            .iter()
            .map(|(rule, v)| (rule.name().to_string(), *v))
            .collect(),
        difficulty: Some(difficulty),
        instance: instance.clone(),
    })
}

/// The label of a solved instance under [`RecordOptions::answer`], and the instance's ranking.
struct Label {
    order: Vec<usize>,
    value: f64,
    answer: AnswerOrder,
    /// The ranking rule's name, when the record names it (canonical labels, compact-v2).
    ranking_rule: Option<String>,
    ranking: Ranking,
}

impl Label {
    fn new(problem: &Problem, solution: &Solution, options: &RecordOptions) -> Label {
        if options.answer == AnswerOrder::Solver {
            let ranking = ranking(problem, options.objective, options.variant);
            // Solver labels name the ranking rule only for compact-v2, whose prompt shows it.
            let ranked = matches!(options.template, Template::CompactV2);
            return Label {
                order: solution.order.clone(),
                value: solution.value,
                answer: AnswerOrder::Solver,
                ranking_rule: ranked.then(|| ranking.rule.name().to_string()),
                ranking,
            };
        }
        if options.template == Template::StepV2 {
            // step-v2 lists the jobs by their completion if placed next: the label follows
            // that listing wherever the solver's value stays reachable.
            let ranking = ranking(problem, options.objective, options.variant);
            let order = follow_listing(
                problem,
                options.objective,
                options.variant,
                &ranking.order,
                &solution.order,
            );
            let (_, value) = problem.evaluate(&order, options.objective, options.variant);
            return Label {
                order,
                value,
                answer: AnswerOrder::Canonical,
                ranking_rule: Some(ranking.rule.name().to_string()),
                ranking,
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
                order: solution.order.clone(),
                value: solution.value,
                answer: AnswerOrder::Solver,
                ranking_rule,
                ranking: c.ranking,
            };
        }
        let (_, value) = problem.evaluate(&c.order, options.objective, options.variant);
        Label {
            order: c.order,
            value,
            answer: AnswerOrder::Canonical,
            ranking_rule,
            ranking: c.ranking,
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
    /// The record as a file of `format` carries it: the other form left empty (and so out of
    /// the JSON).
    pub fn into_format(mut self, format: RecordFormat) -> Record {
        match format {
            RecordFormat::Messages => {
                self.prompt.clear();
                self.completion.clear();
            }
            RecordFormat::PromptCompletion => self.messages.clear(),
            RecordFormat::Both => {}
        }
        self
    }

    /// The system and user messages: from `messages`, else split from `prompt` (at its first
    /// blank line, as [`prompt_text`] joins them).
    pub fn system_user(&self) -> (String, String) {
        let role = |r: &str| self.messages.iter().find(|m| m.role == r);
        if let (Some(s), Some(u)) = (role("system"), role("user")) {
            return (s.content.clone(), u.content.clone());
        }
        let (system, user) = split_prompt(&self.prompt);
        (system.to_string(), user.to_string())
    }

    /// Fills in the form a file left out (see [`RecordFormat`]), so that every reader sees
    /// both: `prompt` and `completion` from the system, user and assistant messages, or the
    /// messages from the prompt (split at its first blank line) and the completion. Fails when
    /// the record has neither.
    pub fn fill_forms(&mut self) -> Result<(), String> {
        let has_text = !self.prompt.is_empty() || !self.completion.is_empty();
        match (has_text, self.messages.is_empty()) {
            (true, true) => {
                let (system, user) = split_prompt(&self.prompt);
                self.messages = vec![
                    message("system", system.to_string()),
                    message("user", user.to_string()),
                    message("assistant", self.completion.clone()),
                ];
            }
            (false, false) => {
                let role = |r: &str| {
                    self.messages
                        .iter()
                        .find(|m| m.role == r)
                        .map(|m| m.content.as_str())
                        .ok_or_else(|| format!("field `messages` has no {r} message"))
                };
                let (system, user) = (role("system")?, role("user")?);
                let (prompt, completion) = (prompt_text(system, user), role("assistant")?);
                self.completion = completion.to_string();
                self.prompt = prompt;
            }
            (false, true) => {
                return Err(
                    "the record has neither `messages` nor `prompt` and `completion`".into(),
                )
            }
            (true, false) => {}
        }
        Ok(())
    }

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

    /// Checks the label against the dispatcher, as an outside reader of the file would:
    /// `order` is a permutation of the queue whose value under the record's objective and
    /// variant is `value` (within a relative 1e-9), and `lower_bound` is a finite number with
    /// `0 <= lower_bound <= value` (equal to `value` when `proven_optimal`). Returns what is
    /// wrong, naming the field.
    pub fn check_label(&self, problem: &Problem) -> Result<(), String> {
        for (field, v) in [("value", self.value), ("lower_bound", self.lower_bound)] {
            if !v.is_finite() {
                return Err(format!("field `{field}` is not a finite number"));
            }
        }
        let order = schedlm_model::order_from_ids(problem, &self.order)
            .map_err(|e| format!("field `order`: {e}"))?;
        let (_, actual) = problem.evaluate(&order, self.objective, self.variant);
        if !tied(actual, self.value) {
            return Err(format!(
                "field `value`: {} does not match its order, which scores {actual} ({} / {})",
                self.value,
                self.objective.name(),
                self.variant.name()
            ));
        }
        if self.lower_bound < 0.0 {
            return Err(format!(
                "field `lower_bound`: {} is negative (no objective is)",
                self.lower_bound
            ));
        }
        if self.lower_bound > self.value && !tied(self.lower_bound, self.value) {
            return Err(format!(
                "field `lower_bound`: {} is above the label's value {}",
                self.lower_bound, self.value
            ));
        }
        if self.proven_optimal && !tied(self.lower_bound, self.value) {
            return Err(format!(
                "field `proven_optimal`: true, but lower_bound {} differs from value {}",
                self.lower_bound, self.value
            ));
        }
        Ok(())
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
        lines: text_lines(BufReader::new(file)),
    })
}

/// The iterator of [`read_records`].
pub struct RecordReader {
    path: PathBuf,
    lines: TextLines<BufReader<File>>,
}

impl RecordReader {
    /// Every remaining record, in file order; the first bad line is the error.
    pub fn all(self) -> Result<Vec<Record>, BuildError> {
        self.map(|item| item.map(|(_, record)| record)).collect()
    }
}

impl Iterator for RecordReader {
    type Item = Result<(u64, Record), BuildError>;

    fn next(&mut self) -> Option<Self::Item> {
        for line in self.lines.by_ref() {
            let line = match line {
                Ok(l) => l,
                Err(source) => {
                    return Some(Err(BuildError::Io {
                        path: self.path.clone(),
                        source,
                    }))
                }
            };
            if line.is_blank() {
                continue;
            }
            let number = line.number as u64;
            let record = line.text.and_then(|text| {
                let mut r: Record = serde_json::from_str(&text)
                    .map_err(|e| schedlm_model::lines::bounded(&e.to_string()))?;
                r.fill_forms()?;
                Ok(r)
            });
            return Some(
                record
                    .map(|r| (number, r))
                    .map_err(|reason| BuildError::Record {
                        path: self.path.clone(),
                        line: number,
                        reason,
                    }),
            );
        }
        None
    }
}
