//! Snapshot evaluation: every policy orders every record's queue; one [`Row`] per (policy,
//! record) with the value, the gap to the record's reference and the validity of text answers.
//!
//! The reference of a record is its proven optimum when the label is proven optimal, else its
//! lower bound (and the gap is then an upper bound on the true gap). Rows are in policy order,
//! then file order, whatever the number of threads; only `seconds` depends on timing (and
//! `optimal`'s orders, when its time budget rather than the node limit stops it).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ParallelProgressIterator, ProgressBar, ProgressStyle};

use rayon::prelude::*;
use schedlm_dataset::prompt_ids;
use schedlm_solver::local::{self, LsOptions};
use schedlm_solver::portfolio::{relative_gap, solve, SolveOptions, Solver};
use schedlm_solver::rules::{self, RuleContext};
use serde::{Deserialize, Serialize};

use crate::answers::{prompt_sha256, AnswerLine, AnswerLog};
use crate::baseline::{record_rules, RecordRules};
use crate::data::{Dataset, Loaded};
use crate::error::EvalError;
use crate::openai::{Client, ClientOptions};
use crate::policy::EvalPolicy;
use crate::predictions::{read_predictions, Prediction};
use crate::stats::tied;
use crate::text_policy::{
    answer_all, placed, score_text, Ask, Decoding, ModelLoader, Reply, Scored, TextModel,
};
use crate::verdict::VerdictRule;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use schedlm_dataset::distribution::{OutsideTally, TrainingDistribution};

/// Values within this relative distance are equal (ties, "solved optimally").
pub const TOLERANCE: f64 = schedlm_model::VALUE_TOLERANCE;

/// Limits and settings of a snapshot evaluation.
#[derive(Debug, Clone)]
pub struct SnapshotOptions {
    /// Time budget of `optimal` per instance (not used with a work limit).
    pub time_limit: Duration,
    /// Counted work of `optimal` per instance (`schedlm_solver::work`): the same answers on
    /// every machine; `None`: the time limit decides.
    pub work_limit: Option<u64>,
    /// Node limit of `optimal`'s branch and bound (makes it deterministic).
    pub node_limit: Option<u64>,
    /// Seed of `random` and of local search.
    pub seed: u64,
    /// Candidate evaluations of local search per instance.
    pub ls_evaluations: u64,
    /// Requests in flight at once for `openai:` and models.
    pub concurrency: usize,
    /// Request limits of `openai:` policies (timeout, retries, backoff, API key variable,
    /// `max_tokens`).
    pub client: ClientOptions,
    /// Loads `model:DIR` policies.
    pub models: ModelLoader,
    /// Where text answers are written as they arrive, and the answers of an earlier run to
    /// resume from (`answers.jsonl`); `None`: not written.
    pub answers: Option<Arc<AnswerLog>>,
    /// Show a progress bar per policy (rate and ETA) on stderr.
    pub progress: bool,
    /// How verdicts are decided (the paired test's confidence and resamples, the margin).
    pub verdict: VerdictRule,
}

impl Default for SnapshotOptions {
    fn default() -> Self {
        SnapshotOptions {
            time_limit: Duration::from_secs(1),
            work_limit: None,
            node_limit: None,
            seed: 1,
            ls_evaluations: 20_000,
            concurrency: 8,
            client: ClientOptions::default(),
            models: ModelLoader::default(),
            answers: None,
            progress: false,
            verdict: VerdictRule::default(),
        }
    }
}

/// One (policy, record) result: a line of `instances.csv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The policy's report name (the spec as written; `NAME (best-of)` for a best-of column).
    pub policy: String,
    /// Record id.
    pub record: String,
    /// 1-based line of the record in the data file.
    pub line: usize,
    /// The record's family (generator family, or the name given to `--from` input).
    pub family: String,
    /// Queue length.
    pub queue: usize,
    /// The record's proven optimum, or its lower bound when `proven` is false.
    pub reference: f64,
    /// Whether `reference` is a proven optimum (`false`: a lower bound, and `gap` is then an upper
    /// bound on the true gap).
    pub proven: bool,
    /// The value that counts (the FCFS fallback's for an invalid answer).
    pub value: f64,
    /// (value - reference) / reference, 0 when `optimal`; empty when the reference is 0 and
    /// the value is not.
    pub gap: Option<f64>,
    /// Whether `value` is within [`TOLERANCE`] of the reference.
    pub optimal: bool,
    /// Whether the answer was valid (always true for rules and solvers).
    pub valid: bool,
    /// Whether there was no answer at all (request or model failed, prediction missing):
    /// `defects` says why. A failed answer is also invalid.
    #[serde(default)]
    pub failed: bool,
    /// Whether the answer was cut off at the token limit (`finish_reason: length`).
    #[serde(default)]
    pub truncated: bool,
    /// The leniently repaired answer's value (= `value` for rules and solvers).
    pub lenient_value: f64,
    /// The FCFS fallback's value.
    pub fcfs_value: f64,
    /// Why an answer was invalid (parser defects, missing prediction, request error).
    pub defects: String,
    /// Decision time in seconds; empty when not measured.
    pub seconds: Option<f64>,
    /// The best rule per instance ([`crate::baseline`]): the classic rule whose order the
    /// `same_as_best_rule_order` column compares with.
    pub best_rule: String,
    /// The best rule per instance's value (the minimum of the classic rules' values).
    pub best_rule_value: f64,
    /// Whether the placed order (after the dependency repair) equals the queue order's
    /// (`J1 J2 ... Jn` repaired); always false for an invalid answer.
    pub same_as_queue_order: bool,
    /// Whether the placed order equals the best rule's placed order; always false for an
    /// invalid answer.
    pub same_as_best_rule_order: bool,
    /// `ect`'s value on this record ([`crate::baseline`]).
    #[serde(default)]
    pub ect_value: Option<f64>,
    /// Whether the placed order equals `ect`'s; always false for an invalid answer.
    #[serde(default)]
    pub same_as_ect_order: bool,
    /// The answer read as step decisions against the earliest-completion listing
    /// ([`crate::listing`]): states with a choice; empty for an invalid answer or a queue
    /// longer than [`LISTING_MAX_JOBS`].
    #[serde(default)]
    pub decisions: Option<usize>,
    /// Of those, the decisions that leave the listing (take another job than the first
    /// listed).
    #[serde(default)]
    pub leaving: Option<usize>,
    /// Of those, the decisions that lower the final value ([`crate::listing`]).
    #[serde(default)]
    pub leaving_right: Option<usize>,
    /// The best known value of the record: the least of the label's value and every valid
    /// answer's value in this evaluation.
    #[serde(default)]
    pub best_known: Option<f64>,
    /// (value - best_known) / best_known; 0 within [`TOLERANCE`]; empty when undefined.
    #[serde(default)]
    pub gap_to_best_known: Option<f64>,
    /// How a text policy's answer was decoded (`constrained greedy`, `unconstrained greedy`,
    /// `constrained, best of 8 samples at temperature 1`, `endpoint, temperature 0`, ...);
    /// empty for rules and solvers.
    #[serde(default)]
    pub decoding: String,
    /// A constrained model only: whether its greedy answer without the constraint (decoded
    /// beside the constrained one) is a valid order; empty otherwise.
    #[serde(default)]
    pub unconstrained_valid: Option<bool>,
    /// Models that record their training distribution: whether this record lies outside it
    /// (family, queue length, objective, variant or template never seen in training); empty
    /// when unknown.
    #[serde(default)]
    pub outside_training: Option<bool>,
    /// Requests retried for this answer (endpoints).
    #[serde(default)]
    pub retries: u32,
    /// Why they were retried, `; `-separated.
    #[serde(default)]
    pub retry_reasons: String,
}

/// The rows of an evaluation and what the report must mention about its inputs.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// Policy names in column order.
    pub policies: Vec<String>,
    /// One row per (policy, record): policy-major in `policies` order, then file order; the
    /// lines of `instances.csv`.
    pub rows: Vec<Row>,
    /// Remarks on the inputs (ids in a predictions file that are not in the data, ...).
    pub notes: Vec<String>,
    /// What went wrong with text answers: failed ones and their reasons, answers cut off at
    /// the token limit (`answer_notes`); the report lists them with the notes.
    pub warnings: Vec<String>,
    /// The classic rules on every record, in file order.
    pub rules: Vec<RecordRules>,
    /// A few answers of each text policy next to the record's label.
    pub examples: Vec<AnswerExample>,
}

/// One answer of a text policy shown in the report beside the label: the first invalid
/// answer, the first valid one that is not optimal and the first optimal one, of each policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerExample {
    /// The text policy's report name.
    pub policy: String,
    /// Record id.
    pub record: String,
    /// 1-based line of the record in the data file.
    pub line: usize,
    /// Queue length (number of queued jobs) of the record.
    pub queue: usize,
    /// The raw answer (or why there was none).
    pub answer: String,
    /// The record's label as its answer line (prompt ids).
    pub label: String,
    /// The value that counts: the answer's own, or the FCFS fallback's for an invalid answer.
    pub value: f64,
    /// The record's reference: its proven optimum, or its lower bound.
    pub reference: f64,
    /// (value - reference) / reference, a fraction (0.05 = 5%), 0 when `optimal`; `None` when the
    /// reference is 0 and the value is not.
    pub gap: Option<f64>,
    /// Whether the answer was valid (a clean strict parse).
    pub valid: bool,
    /// Whether `value` is within [`TOLERANCE`] of the reference.
    pub optimal: bool,
}

/// The examples of one text policy (see [`AnswerExample`]); `texts` are its answers in record
/// order.
fn examples(data: &Dataset, rows: &[Row], texts: &[String]) -> Vec<AnswerExample> {
    let picks = [
        rows.iter().position(|r| !r.valid),
        rows.iter().position(|r| r.valid && !r.optimal),
        rows.iter().position(|r| r.optimal),
    ];
    picks
        .into_iter()
        .flatten()
        .map(|i| {
            let (r, row) = (&data.records[i].record, &rows[i]);
            AnswerExample {
                policy: row.policy.clone(),
                record: row.record.clone(),
                line: row.line,
                queue: row.queue,
                answer: texts[i].clone(),
                label: r.completion.lines().next().unwrap_or_default().to_string(),
                value: row.value,
                reference: row.reference,
                gap: row.gap,
                valid: row.valid,
                optimal: row.optimal,
            }
        })
        .collect()
}

/// An order (or a text answer) for one record, before scoring.
enum Decision {
    Order(Vec<usize>),
    /// A text answer, and whether it was cut off at the token limit.
    Text(String, bool),
    /// No answer at all (request or model failed, prediction missing), and why.
    Failed(String),
    /// An answer that is no order (no valid best-of sample), and why.
    NoOrder(String),
}

impl Decision {
    /// A text policy's answer as the report shows it; `None` for rules and solvers.
    fn text(&self) -> Option<String> {
        match self {
            Decision::Order(_) => None,
            Decision::Text(t, _) => Some(t.clone()),
            Decision::Failed(why) | Decision::NoOrder(why) => Some(format!("(none: {why})")),
        }
    }
}

/// Evaluates every policy on every record.
///
/// Every text policy brings its equal-compute baselines as columns of their own, right after
/// it: `ls@POLICY`, local search given the policy's decision time on each record, when the
/// times are known; and for a best-of-N column, `ranking+Nswaps@POLICY (best-of)`, the best of
/// the ranking and N random transpositions of it under the same dispatcher.
pub fn evaluate(
    data: &Dataset,
    specs: &[EvalPolicy],
    options: &SnapshotOptions,
) -> Result<Evaluation, EvalError> {
    // Load every policy first, so a bad one fails before any work is done.
    let sources: Vec<Source> = specs
        .iter()
        .map(|s| prepare(s, options))
        .collect::<Result<_, _>>()?;
    let mut eval = Evaluation {
        policies: Vec::new(),
        rows: Vec::new(),
        notes: Vec::new(),
        rules: data
            .records
            .par_iter()
            .map(|r| record_rules(r, data.objective, data.variant))
            .collect(),
        warnings: Vec::new(),
        examples: Vec::new(),
    };
    let disagree = eval.rules.iter().filter(|r| r.disagrees).count();
    if disagree > 0 {
        eval.notes.push(format!(
            "{disagree} of {} records have baselines whose best value differs from the \
             evaluator's dispatch of the classic rules (the recorded baselines are used)",
            data.records.len()
        ));
    }
    for (spec, source) in specs.iter().zip(&sources) {
        let columns = decide(data, spec, source, options, &mut eval)?;
        for column in columns {
            let texts: Vec<String> = column
                .decided
                .iter()
                .filter_map(|d| d.decision.text())
                .collect();
            let name = column.name.clone();
            let rows = score_all(data, &eval.rules, column)?;
            if texts.len() == rows.len() {
                eval.examples.extend(examples(data, &rows, &texts));
            }
            eval.warnings.extend(answer_notes(&name, &rows));
            eval.policies.push(name);
            eval.rows.extend(rows);
        }
    }
    set_best_known(data, &mut eval.rows);
    Ok(eval)
}

/// One answer of a column, before scoring.
struct Decided {
    decision: Decision,
    /// Decision time in seconds, when measured.
    seconds: Option<f64>,
    /// A constrained model's unconstrained greedy answer.
    unconstrained: Option<String>,
    /// Requests retried, and why.
    retries: u32,
    retry_reasons: Vec<String>,
}

impl Decided {
    fn order(order: Vec<usize>, seconds: Option<f64>) -> Decided {
        Decided {
            decision: Decision::Order(order),
            seconds,
            unconstrained: None,
            retries: 0,
            retry_reasons: Vec::new(),
        }
    }
}

/// One column of the evaluation (a policy, or a text policy's best-of answers, or an
/// equal-compute baseline), before scoring.
struct Column {
    name: String,
    /// How the answers were decoded (text policies); empty for rules and solvers.
    decoding: String,
    decided: Vec<Decided>,
    /// Per record, whether it lies outside the policy's training distribution; `None` when
    /// the policy does not record one.
    outside: Option<Vec<bool>>,
}

/// What went wrong with a policy's answers, for the report and stderr: how many failed and
/// the most common reasons, how many were cut off at the token limit.
fn answer_notes(policy: &str, rows: &[Row]) -> Vec<String> {
    let mut notes = Vec::new();
    let failed: Vec<&Row> = rows.iter().filter(|r| r.failed).collect();
    if !failed.is_empty() {
        let mut reasons: Vec<(&str, usize)> = Vec::new();
        for r in &failed {
            match reasons.iter_mut().find(|(why, _)| *why == r.defects) {
                Some((_, n)) => *n += 1,
                None => reasons.push((&r.defects, 1)),
            }
        }
        reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
        let shown: Vec<String> = reasons
            .iter()
            .take(3)
            .map(|(why, n)| format!("{n} x {why}"))
            .collect();
        let more = if reasons.len() > 3 {
            format!("; and {} other reasons", reasons.len() - 3)
        } else {
            String::new()
        };
        notes.push(format!(
            "{policy}: {} of {} answers failed (no answer; scored by the FCFS fallback): {}{more}",
            failed.len(),
            rows.len(),
            shown.join("; ")
        ));
    }
    let truncated = rows.iter().filter(|r| r.truncated).count();
    if truncated > 0 {
        notes.push(format!(
            "{policy}: {truncated} of {} answers were cut off at the token limit \
             (finish_reason length); raise --max-tokens",
            rows.len()
        ));
    }
    notes
}

/// A loaded policy.
enum Source {
    /// Rules and solvers: computed per record.
    Orders,
    Text(Box<dyn TextModel>),
    Predictions(HashMap<String, Prediction>),
}

fn prepare(spec: &EvalPolicy, options: &SnapshotOptions) -> Result<Source, EvalError> {
    Ok(match spec {
        EvalPolicy::Model(dir) => Source::Text(options.models.load(dir)?),
        EvalPolicy::OpenAi { url, model } => Source::Text(Box::new(
            Client::new(url, model, options.client.clone())
                .map_err(|e| EvalError::policy(&spec.name(), e))?,
        )),
        EvalPolicy::Predictions(file) => Source::Predictions(read_predictions(file)?),
        EvalPolicy::Lookahead | EvalPolicy::Rollout => {
            return Err(EvalError::policy(
                &spec.name(),
                "decides from a replay's future (the jobs to come, the run times so far) and \
                 runs only online: use it with --trace",
            ))
        }
        _ => Source::Orders,
    })
}

/// The columns of one policy: one for rules and solvers; for a text policy its greedy column,
/// its best-of column when it samples, and their equal-compute baselines.
fn decide(
    data: &Dataset,
    spec: &EvalPolicy,
    source: &Source,
    options: &SnapshotOptions,
    eval: &mut Evaluation,
) -> Result<Vec<Column>, EvalError> {
    let name = spec.name();
    let (replies, decoding, outside) = match source {
        Source::Text(model) => {
            let replies = ask(data, &name, model.as_ref(), options)?;
            let outside = model
                .trained_on()
                .map(|d| outside_training(data, &d, &name, &mut eval.warnings));
            (replies, model.decoding(), outside)
        }
        Source::Predictions(by_id) => {
            let replies = predicted(data, by_id.clone(), &name, &mut eval.notes);
            let decoding = predictions_decoding(by_id);
            (replies, decoding, None)
        }
        Source::Orders => {
            return Ok(vec![Column {
                name,
                decoding: String::new(),
                decided: timed_orders(data, spec, options)?,
                outside: None,
            }])
        }
    };
    let retried: u32 = replies.iter().map(|r| r.retries).sum();
    if retried > 0 {
        eval.warnings
            .push(retry_note(&name, &replies, retried, data.records.len()));
    }
    let mut columns = text_columns(name, replies, &decoding, outside);
    let mut baselines = Vec::new();
    for column in &columns {
        if column
            .decided
            .iter()
            .all(|d| matches!(d.decision, Decision::Failed(_)))
        {
            // No answer at all: nothing was computed to match.
            continue;
        }
        let baseline = if column.name.ends_with(BEST_OF_SUFFIX) {
            (decoding.samples > 0)
                .then(|| ranking_swaps(data, &eval.rules, column, decoding.samples, options))
        } else {
            equal_time_ls(data, column, options)
        };
        match baseline {
            Some(b) => baselines.push(b),
            None => eval.notes.push(format!(
                "{}: no equal-compute baseline ({})",
                column.name,
                if column.name.ends_with(BEST_OF_SUFFIX) {
                    "the number of samples is unknown"
                } else {
                    "its decision times are unknown"
                }
            )),
        }
    }
    columns.extend(baselines);
    Ok(columns)
}

/// The suffix of a text policy's best-of column.
pub const BEST_OF_SUFFIX: &str = " (best-of)";

/// The note of a policy whose requests were retried: how many, and the most common reasons.
fn retry_note(policy: &str, replies: &[Reply], retried: u32, records: usize) -> String {
    let mut reasons: Vec<(&str, usize)> = Vec::new();
    for why in replies.iter().flat_map(|r| &r.retry_reasons) {
        match reasons.iter_mut().find(|(w, _)| *w == why) {
            Some((_, n)) => *n += 1,
            None => reasons.push((why, 1)),
        }
    }
    reasons.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let shown: Vec<String> = reasons
        .iter()
        .take(3)
        .map(|(w, n)| format!("{n} x {w}"))
        .collect();
    let answers = replies.iter().filter(|r| r.retries > 0).count();
    format!(
        "{policy}: {retried} requests retried for {answers} of {records} answers: {}",
        shown.join("; ")
    )
}

/// Per record, whether it lies outside the training distribution `d`; the warning, when any
/// does, goes to `warnings`.
fn outside_training(
    data: &Dataset,
    d: &TrainingDistribution,
    policy: &str,
    warnings: &mut Vec<String>,
) -> Vec<bool> {
    let mut tally = OutsideTally::default();
    let flags = data
        .records
        .iter()
        .map(|r| {
            let rec = &r.record;
            let why = d.outside(
                &rec.family,
                rec.instance.queue.len(),
                data.objective,
                data.variant,
                &rec.template,
            );
            tally.add(&why);
            !why.is_empty()
        })
        .collect();
    warnings.extend(tally.warning(policy, d));
    flags
}

/// How a predictions file says its answers were decoded (its `decoding` and `samples` fields),
/// or that it does not say.
fn predictions_decoding(by_id: &HashMap<String, Prediction>) -> Decoding {
    let first = by_id.values().min_by_key(|p| p.line);
    let samples = first.and_then(|p| p.samples).unwrap_or(0);
    Decoding {
        greedy: first
            .and_then(|p| p.decoding.clone())
            .unwrap_or_else(|| "not stated by the predictions file".into()),
        best_of: (samples > 0).then(|| format!("best of {samples} samples (predictions file)")),
        samples,
        constrained: None,
    }
}

/// Orders from rules and solvers, with their decision time.
fn timed_orders(
    data: &Dataset,
    spec: &EvalPolicy,
    options: &SnapshotOptions,
) -> Result<Vec<Decided>, EvalError> {
    let bar = progress_bar(&spec.name(), data.records.len(), options.progress);
    data.records
        .par_iter()
        .progress_with(bar)
        .map(|r| {
            let t = Instant::now();
            let order = order_of(r, spec, data, options)?;
            Ok(Decided::order(order, Some(t.elapsed().as_secs_f64())))
        })
        .collect()
}

/// `ls@POLICY`: local search from the best rule on each record, for as long as the policy took
/// to decide there (no evaluation limit). `None` when no decision time is known.
fn equal_time_ls(data: &Dataset, of: &Column, options: &SnapshotOptions) -> Option<Column> {
    if of.decided.iter().all(|d| d.seconds.is_none()) {
        return None;
    }
    let name = format!("ls@{}", of.name);
    let bar = progress_bar(&name, data.records.len(), options.progress);
    let decided = data
        .records
        .par_iter()
        .zip(of.decided.par_iter())
        .progress_with(bar)
        .map(|(r, d)| {
            let limit = Duration::from_secs_f64(d.seconds.unwrap_or(0.0).max(0.0));
            let ls = LsOptions {
                time_limit: Some(limit),
                max_evaluations: u64::MAX,
                max_work: None,
                seed: options.seed,
                start: None,
            };
            let t = Instant::now();
            let order = local::solve(&r.problem, data.objective, data.variant, &ls).order;
            Decided::order(order, Some(t.elapsed().as_secs_f64()))
        })
        .collect();
    Some(Column {
        name,
        decoding: String::new(),
        decided,
        outside: None,
    })
}

/// `ranking+Nswaps@POLICY`: on each record the best, under the dispatcher, of the ranking (the
/// best rule per instance's order, `J1 J2 ... Jn` in compact-v2) and `samples` random
/// transpositions of it (two positions drawn uniformly, seeded by `--seed` and the record's
/// line): the same number of dispatcher evaluations as a best-of-N column, spent without a
/// model.
fn ranking_swaps(
    data: &Dataset,
    rules: &[RecordRules],
    of: &Column,
    samples: usize,
    options: &SnapshotOptions,
) -> Column {
    let decided = data
        .records
        .par_iter()
        .zip(rules.par_iter())
        .map(|(r, rr)| {
            let t = Instant::now();
            let order = best_transposition(r, rr, samples, options.seed, data);
            Decided::order(order, Some(t.elapsed().as_secs_f64()))
        })
        .collect();
    let base = of.name.strip_suffix(BEST_OF_SUFFIX).unwrap_or(&of.name);
    Column {
        name: format!("ranking+{samples}swaps@{base}{BEST_OF_SUFFIX}"),
        decoding: String::new(),
        decided,
        outside: None,
    }
}

/// The best of the ranking and `samples` random transpositions of it.
fn best_transposition(
    r: &Loaded,
    rr: &RecordRules,
    samples: usize,
    seed: u64,
    data: &Dataset,
) -> Vec<usize> {
    let ranking = &rr.best_order;
    let n = ranking.len();
    let value = |o: &[usize]| r.problem.evaluate(o, data.objective, data.variant).1;
    let mut best = (value(ranking), ranking.clone());
    if n < 2 {
        return best.1;
    }
    let mut rng =
        ChaCha8Rng::seed_from_u64(seed ^ (r.line as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut cand = ranking.clone();
    for _ in 0..samples {
        let i = rng.random_range(0..n);
        let mut j = rng.random_range(0..n - 1);
        if j >= i {
            j += 1;
        }
        cand.clone_from(ranking);
        cand.swap(i, j);
        let v = value(&cand);
        if v < best.0 && !tied(v, best.0) {
            best = (v, cand.clone());
        }
    }
    best.1
}

fn order_of(
    r: &Loaded,
    spec: &EvalPolicy,
    data: &Dataset,
    options: &SnapshotOptions,
) -> Result<Vec<usize>, EvalError> {
    let (objective, variant) = (data.objective, data.variant);
    Ok(match spec {
        EvalPolicy::Rule(rule) => {
            let ctx = RuleContext {
                origin: 0,
                seed: options.seed,
                stream: r.line as u64,
            };
            rules::order(*rule, &r.problem, &ctx)
        }
        EvalPolicy::Ect => schedlm_solver::greedy::ect(&r.problem, objective, variant),
        EvalPolicy::LocalSearch => {
            let ls = LsOptions {
                max_evaluations: options.ls_evaluations,
                seed: options.seed,
                ..LsOptions::default()
            };
            local::solve(&r.problem, objective, variant, &ls).order
        }
        _ => {
            let solve_options = SolveOptions {
                solver: Solver::Auto,
                objective,
                variant,
                work_limit: options.work_limit,
                time_limit: options.work_limit.is_none().then_some(options.time_limit),
                node_limit: options.node_limit,
                seed: options.seed,
                threads: 1,
            };
            solve(&r.problem, &solve_options)
                .map_err(|e| EvalError::Input(format!("line {}: optimal: {e}", r.line)))?
                .order
        }
    })
}

/// A progress bar on stderr (hidden unless `show`): the policy, count, rate and ETA.
fn progress_bar(policy: &str, len: usize, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template(
        "{prefix} [{bar:30}] {pos}/{len} ({per_sec}, ETA {eta}) {msg}",
    )
    .map(|s| s.progress_chars("=> "))
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    ProgressBar::with_draw_target(Some(len as u64), schedlm_model::progress::draw_target())
        .with_style(style)
        .with_prefix(policy.to_string())
}

/// Asks a text model every record's prompt (the record's own system and user messages),
/// except those an earlier run answered (`options.answers`, on resume); each new answer is
/// written to `answers.jsonl` as it arrives.
fn ask(
    data: &Dataset,
    policy: &str,
    model: &dyn TextModel,
    options: &SnapshotOptions,
) -> Result<Vec<Reply>, EvalError> {
    let prompts: Vec<(String, String)> = data
        .records
        .iter()
        .map(|r| r.record.system_user())
        .collect();
    let hashes: Vec<String> = prompts.iter().map(|(s, u)| prompt_sha256(s, u)).collect();
    let log = options.answers.as_deref();
    let decoding = model.decoding().line();
    let mut replies: Vec<Option<Reply>> = data
        .records
        .iter()
        .zip(&hashes)
        .map(|(r, h)| {
            log.and_then(|l| l.kept(policy, &r.record.id, h, &decoding))
                .cloned()
        })
        .collect();
    let todo: Vec<usize> = (0..replies.len())
        .filter(|&i| replies[i].is_none())
        .collect();
    let asks = todo
        .iter()
        .map(|&i| {
            let (r, (system, user)) = (&data.records[i], &prompts[i]);
            Ask {
                system,
                user,
                instance: &r.record.instance,
                objective: data.objective,
                variant: data.variant,
                template: r.record.template().unwrap_or_default(),
            }
        })
        .collect::<Vec<_>>();
    let bar = progress_bar(policy, data.records.len(), options.progress);
    bar.set_position((data.records.len() - todo.len()) as u64);
    let failures = std::sync::atomic::AtomicUsize::new(0);
    let write_error = std::sync::Mutex::new(None);
    let on_reply = |k: usize, reply: &Reply| {
        let i = todo[k];
        if reply.error.is_some() {
            let n = failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            bar.set_message(format!("{n} failed"));
        }
        bar.inc(1);
        if let Some(log) = log {
            let r = &data.records[i];
            let line = AnswerLine::new(
                policy,
                &r.record.id,
                r.line,
                hashes[i].clone(),
                &decoding,
                reply,
            );
            if let Err(e) = log.write(&line) {
                if let Ok(mut first) = write_error.lock() {
                    first.get_or_insert(e);
                }
            }
        }
    };
    let new = answer_all(model, &asks, options.concurrency, &on_reply);
    bar.finish_and_clear();
    if let Some(e) = write_error.into_inner().ok().flatten() {
        return Err(e);
    }
    for (&i, reply) in todo.iter().zip(new) {
        replies[i] = Some(reply);
    }
    Ok(replies.into_iter().map(Option::unwrap_or_default).collect())
}

/// Replies from a predictions file, in record order; missing records get an error reply.
fn predicted(
    data: &Dataset,
    mut by_id: HashMap<String, Prediction>,
    name: &str,
    notes: &mut Vec<String>,
) -> Vec<Reply> {
    let mut missing = 0;
    let replies = data
        .records
        .iter()
        .map(|r| match by_id.remove(&r.record.id) {
            Some(p) => Reply {
                error: p.output.is_none().then(|| "no output".to_string()),
                output: p.output,
                best_of: p.best_of,
                seconds: p.seconds,
                best_of_seconds: p.best_of_seconds,
                unconstrained: p.unconstrained,
                ..Reply::default()
            },
            None => {
                missing += 1;
                Reply {
                    error: Some("missing prediction".into()),
                    ..Reply::default()
                }
            }
        })
        .collect();
    if missing > 0 {
        notes.push(format!(
            "{name}: {missing} of {} records have no prediction (scored as invalid)",
            data.records.len()
        ));
    }
    if !by_id.is_empty() {
        let mut extra: Vec<&String> = by_id.keys().collect();
        extra.sort();
        notes.push(format!(
            "{name}: {} predictions name records not in the data (not scored), e.g. {}",
            extra.len(),
            extra[0]
        ));
    }
    replies
}

/// The greedy column, and a best-of column when any reply has a best-of answer.
fn text_columns(
    name: String,
    replies: Vec<Reply>,
    decoding: &Decoding,
    outside: Option<Vec<bool>>,
) -> Vec<Column> {
    let has_best = replies.iter().any(|r| r.best_of.is_some() || r.sampled);
    let decided = |r: &Reply, best: bool| {
        let out = if best { &r.best_of } else { &r.output };
        let decision = match (out, &r.error) {
            (Some(t), _) => Decision::Text(t.clone(), !best && r.truncated()),
            (None, Some(e)) => Decision::Failed(e.clone()),
            (None, None) if best => Decision::NoOrder("no valid best-of answer".into()),
            (None, None) => Decision::Failed("no output".into()),
        };
        let seconds = if best {
            match (r.seconds, r.best_of_seconds) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            }
        } else {
            r.seconds
        };
        Decided {
            decision,
            seconds,
            unconstrained: if best { None } else { r.unconstrained.clone() },
            retries: if best { 0 } else { r.retries },
            retry_reasons: if best {
                Vec::new()
            } else {
                r.retry_reasons.clone()
            },
        }
    };
    let column =
        |best: bool| -> Vec<Decided> { replies.iter().map(|r| decided(r, best)).collect() };
    let mut out = vec![Column {
        name: name.clone(),
        decoding: decoding.greedy.clone(),
        decided: column(false),
        outside: outside.clone(),
    }];
    if has_best {
        out.push(Column {
            name: format!("{name}{BEST_OF_SUFFIX}"),
            decoding: decoding
                .best_of
                .clone()
                .unwrap_or_else(|| "best of several samples".into()),
            decided: column(true),
            outside,
        });
    }
    out
}

fn score_all(data: &Dataset, rules: &[RecordRules], column: Column) -> Result<Vec<Row>, EvalError> {
    let Column {
        name,
        decoding,
        decided,
        outside,
    } = column;
    let outside = outside.unwrap_or_default();
    data.records
        .par_iter()
        .zip(rules.par_iter())
        .zip(decided.into_par_iter())
        .enumerate()
        .map(|(i, ((r, rr), d))| {
            let mut row = score_one(data, r, rr, &name, &d.decision, d.seconds)?;
            row.decoding.clone_from(&decoding);
            row.unconstrained_valid = d
                .unconstrained
                .as_deref()
                .map(|text| score_reply(data, r, Ok(text)).is_ok_and(|s| s.valid));
            row.outside_training = outside.get(i).copied();
            row.retries = d.retries;
            row.retry_reasons = d.retry_reasons.join("; ");
            Ok(row)
        })
        .collect()
}

/// Longest queue whose answers are read as step decisions ([`crate::listing`]): the reading
/// costs two earliest-completion continuations per decision that leaves the listing, about
/// n^3 placements for an order that leaves it often.
pub const LISTING_MAX_JOBS: usize = 64;

/// Sets every row's best known value (the least of its record's label value and every valid
/// answer's value) and its gap to it.
fn set_best_known(data: &Dataset, rows: &mut [Row]) {
    let mut best: HashMap<usize, f64> = data
        .records
        .iter()
        .map(|r| (r.line, r.record.value))
        .collect();
    for row in rows.iter().filter(|r| r.valid) {
        if let Some(b) = best.get_mut(&row.line) {
            *b = b.min(row.value);
        }
    }
    for row in rows.iter_mut() {
        let known = best.get(&row.line).copied().unwrap_or(row.value);
        row.best_known = Some(known);
        row.gap_to_best_known = gap_to(row.value, known).1;
    }
}

/// Whether `value` is optimal (within [`TOLERANCE`] of `reference`) and its gap:
/// (value - reference) / reference, 0 when optimal, `None` when undefined (zero reference,
/// non-zero value).
pub fn gap_to(value: f64, reference: f64) -> (bool, Option<f64>) {
    let optimal = value <= reference + TOLERANCE * reference.abs().max(1.0);
    // Within the tolerance the gap is 0 (floating-point sums differ in the last bits).
    let gap = if optimal {
        0.0
    } else {
        relative_gap(value, reference)
    };
    (optimal, gap.is_finite().then_some(gap))
}

fn score_one(
    data: &Dataset,
    r: &Loaded,
    rules: &RecordRules,
    policy: &str,
    decision: &Decision,
    seconds: Option<f64>,
) -> Result<Row, EvalError> {
    let (objective, variant) = (data.objective, data.variant);
    let bad =
        |e: schedlm_model::OrderError| EvalError::Input(format!("line {}: {policy}: {e}", r.line));
    let fcfs = crate::text_policy::fcfs_value(&r.problem, objective, variant).map_err(bad)?;
    let scored = match decision {
        Decision::Order(order) => {
            let (placed, value) = placed(&r.problem, order, objective, variant).map_err(bad)?;
            Scored {
                value,
                lenient_value: value,
                valid: true,
                defects: String::new(),
                order: Some(placed),
            }
        }
        Decision::Text(text, _) => score_reply(data, r, Ok(text)).map_err(bad)?,
        Decision::Failed(why) | Decision::NoOrder(why) => {
            score_reply(data, r, Err(why)).map_err(bad)?
        }
    };
    let (failed, truncated) = match decision {
        Decision::Failed(_) => (true, false),
        Decision::Text(_, truncated) => (false, *truncated),
        _ => (false, false),
    };
    let rec = &r.record;
    let reference = if rec.proven_optimal {
        rec.value
    } else {
        rec.lower_bound
    };
    let (optimal, gap) = gap_to(scored.value, reference);
    let same = |other: &[usize]| scored.valid && scored.order.as_deref() == Some(other);
    let listing = scored
        .order
        .as_deref()
        .filter(|_| scored.valid && r.problem.jobs() <= LISTING_MAX_JOBS)
        .map(|order| crate::listing::trace(&r.problem, objective, variant, &rules.rank, order));
    Ok(Row {
        policy: policy.to_string(),
        record: rec.id.clone(),
        line: r.line,
        family: rec.family.clone(),
        queue: r.problem.jobs(),
        reference,
        proven: rec.proven_optimal,
        value: scored.value,
        gap,
        optimal,
        valid: scored.valid,
        failed,
        truncated,
        lenient_value: scored.lenient_value,
        fcfs_value: fcfs,
        seconds,
        best_rule: rules.best_rule.name().to_string(),
        best_rule_value: rules.best_value,
        same_as_queue_order: same(&rules.queue_order),
        same_as_best_rule_order: same(&rules.best_order),
        ect_value: Some(rules.ect_value),
        same_as_ect_order: same(&rules.ect_order),
        decisions: listing.map(|t| t.decisions),
        leaving: listing.map(|t| t.leaving),
        leaving_right: listing.map(|t| t.leaving_right),
        best_known: None,
        gap_to_best_known: None,
        defects: scored.defects,
        decoding: String::new(),
        unconstrained_valid: None,
        outside_training: None,
        retries: 0,
        retry_reasons: String::new(),
    })
}

/// Scores a text answer (or its absence, with the reason) on one record (whose template is
/// known: the data reader checked it).
fn score_reply(
    data: &Dataset,
    r: &Loaded,
    text: Result<&str, &str>,
) -> Result<Scored, schedlm_model::OrderError> {
    let (objective, variant) = (data.objective, data.variant);
    let template = r.record.template().unwrap_or_default();
    let ids = prompt_ids(&r.record.instance, objective, variant, template);
    score_text(
        &r.problem,
        &r.record.instance,
        &ids,
        objective,
        variant,
        text,
    )
}

/// Rows by policy name, for lookups.
pub fn rows_by_policy(rows: &[Row]) -> HashMap<&str, Vec<&Row>> {
    let mut map: HashMap<&str, Vec<&Row>> = HashMap::new();
    for row in rows {
        map.entry(row.policy.as_str()).or_default().push(row);
    }
    map
}
