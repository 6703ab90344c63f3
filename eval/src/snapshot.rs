//! Snapshot evaluation: every scheduler orders every record's queue; one [`Row`] per (policy,
//! record) with the value, the gap to the record's reference and the validity of text answers.
//!
//! The reference of a record is its proven optimum when the label is proven optimal, else its
//! lower bound (and the gap is then an upper bound on the true gap). Rows are in policy order,
//! then file order, whatever the number of threads; only `seconds` depends on timing (and
//! `optimal`'s orders, when its time budget rather than the node limit stops it).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rayon::prelude::*;
use schedlm_dataset::prompt_ids;
use schedlm_solver::local::{self, LsOptions};
use schedlm_solver::portfolio::{relative_gap, solve, Method, SolveOptions};
use schedlm_solver::rules::{self, RuleContext};
use serde::{Deserialize, Serialize};

use crate::baseline::{record_rules, RecordRules};
use crate::data::{Dataset, Loaded};
use crate::error::EvalError;
use crate::openai::{Client, ClientOptions};
use crate::predictions::{read_predictions, Prediction};
use crate::spec::PolicySpec;
use crate::text::{answer_all, placed, score_text, Ask, ModelLoader, Reply, Scored, TextModel};

/// Values within this relative distance are equal (ties, "solved optimally").
pub const TOLERANCE: f64 = 1e-9;

/// Limits and settings of a snapshot evaluation.
#[derive(Debug, Clone)]
pub struct SnapshotOptions {
    /// Time budget of `optimal` per instance.
    pub time_limit: Duration,
    /// Node limit of `optimal`'s branch and bound (makes it deterministic).
    pub node_limit: Option<u64>,
    /// Seed of `random` and of local search.
    pub seed: u64,
    /// Candidate evaluations of local search per instance.
    pub ls_evaluations: u64,
    /// Requests in flight at once for `openai:` and models.
    pub concurrency: usize,
    pub client: ClientOptions,
    /// Loads `model:DIR` schedulers.
    pub models: ModelLoader,
}

impl Default for SnapshotOptions {
    fn default() -> Self {
        SnapshotOptions {
            time_limit: Duration::from_secs(1),
            node_limit: None,
            seed: 1,
            ls_evaluations: 20_000,
            concurrency: 8,
            client: ClientOptions::default(),
            models: ModelLoader::default(),
        }
    }
}

/// One (policy, record) result: a line of `instances.csv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub policy: String,
    /// Record id.
    pub record: String,
    /// 1-based line of the record in the data file.
    pub line: usize,
    pub family: String,
    /// Queue length.
    pub queue: usize,
    /// The record's proven optimum, or its lower bound when `proven` is false.
    pub reference: f64,
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
}

/// The rows of an evaluation and what the report must mention about its inputs.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// Policy names in column order.
    pub policies: Vec<String>,
    pub rows: Vec<Row>,
    /// Remarks on the inputs (ids in a predictions file that are not in the data, ...).
    pub notes: Vec<String>,
    /// The classic rules on every record, in file order.
    pub rules: Vec<RecordRules>,
}

/// An order (or a text answer) for one record, before scoring.
enum Decision {
    Order(Vec<usize>),
    Text(Result<String, String>),
}

/// Evaluates every scheduler on every record.
pub fn evaluate(
    data: &Dataset,
    specs: &[PolicySpec],
    options: &SnapshotOptions,
) -> Result<Evaluation, EvalError> {
    // Load every scheduler first, so a bad one fails before any work is done.
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
        for (name, decisions) in decide(data, spec, source, options, &mut eval.notes)? {
            let rows = score_all(data, &eval.rules, &name, decisions)?;
            eval.policies.push(name);
            eval.rows.extend(rows);
        }
    }
    Ok(eval)
}

type Decisions = Vec<(Decision, Option<f64>)>;

/// A loaded scheduler.
enum Source {
    /// Rules and solvers: computed per record.
    Orders,
    Text(Box<dyn TextModel>),
    Predictions(HashMap<String, Prediction>),
}

fn prepare(spec: &PolicySpec, options: &SnapshotOptions) -> Result<Source, EvalError> {
    Ok(match spec {
        PolicySpec::Model(dir) => Source::Text(options.models.load(dir)?),
        PolicySpec::OpenAi { url, model } => Source::Text(Box::new(
            Client::new(url, model, options.client.clone())
                .map_err(|e| EvalError::policy(&spec.name(), e))?,
        )),
        PolicySpec::Predictions(file) => Source::Predictions(read_predictions(file)?),
        _ => Source::Orders,
    })
}

/// The decisions of one scheduler: one column, or two for text schedulers with best-of-N.
fn decide(
    data: &Dataset,
    spec: &PolicySpec,
    source: &Source,
    options: &SnapshotOptions,
    notes: &mut Vec<String>,
) -> Result<Vec<(String, Decisions)>, EvalError> {
    let name = spec.name();
    let replies = match source {
        Source::Text(model) => ask(data, model.as_ref(), options)?,
        Source::Predictions(by_id) => predicted(data, by_id.clone(), &name, notes),
        Source::Orders => return Ok(vec![(name, timed_orders(data, spec, options)?)]),
    };
    Ok(text_columns(name, replies))
}

/// Orders from rules and solvers, with their decision time.
fn timed_orders(
    data: &Dataset,
    spec: &PolicySpec,
    options: &SnapshotOptions,
) -> Result<Decisions, EvalError> {
    data.records
        .par_iter()
        .map(|r| {
            let t = Instant::now();
            let order = order_of(r, spec, data, options)?;
            Ok((Decision::Order(order), Some(t.elapsed().as_secs_f64())))
        })
        .collect()
}

fn order_of(
    r: &Loaded,
    spec: &PolicySpec,
    data: &Dataset,
    options: &SnapshotOptions,
) -> Result<Vec<usize>, EvalError> {
    let (objective, variant) = (data.objective, data.variant);
    Ok(match spec {
        PolicySpec::Rule(rule) => {
            let ctx = RuleContext {
                origin: 0,
                seed: options.seed,
                stream: r.line as u64,
            };
            rules::order(*rule, &r.problem, &ctx)
        }
        PolicySpec::LocalSearch => {
            let ls = LsOptions {
                max_evaluations: options.ls_evaluations,
                seed: options.seed,
                ..LsOptions::default()
            };
            local::solve(&r.problem, objective, variant, &ls).order
        }
        _ => {
            let solve_options = SolveOptions {
                method: Method::Auto,
                objective,
                variant,
                time_limit: options.time_limit,
                node_limit: options.node_limit,
                seed: options.seed,
            };
            solve(&r.problem, &solve_options)
                .map_err(|e| EvalError::Input(format!("line {}: optimal: {e}", r.line)))?
                .order
        }
    })
}

/// Asks a text model every record's prompt (the record's own system and user messages).
fn ask(
    data: &Dataset,
    model: &dyn TextModel,
    options: &SnapshotOptions,
) -> Result<Vec<Reply>, EvalError> {
    let prompts: Vec<(String, String)> = data.records.iter().map(prompt_of).collect();
    let asks = data
        .records
        .iter()
        .zip(&prompts)
        .map(|(r, (system, user))| {
            let template = r.record.template().ok_or_else(|| {
                EvalError::Input(format!(
                    "line {}: field `template`: unknown template {}",
                    r.line, r.record.template
                ))
            })?;
            Ok(Ask {
                system,
                user,
                instance: &r.record.instance,
                objective: data.objective,
                variant: data.variant,
                template,
            })
        })
        .collect::<Result<Vec<_>, EvalError>>()?;
    Ok(answer_all(model, &asks, options.concurrency))
}

/// The system and user messages of a record (empty when the record has none).
pub fn prompt_of(r: &Loaded) -> (String, String) {
    let find = |role: &str| {
        r.record
            .messages
            .iter()
            .find(|m| m.role == role)
            .map(|m| m.content.clone())
            .unwrap_or_default()
    };
    (find("system"), find("user"))
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
                sampled: false,
                seconds: p.seconds,
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
fn text_columns(name: String, replies: Vec<Reply>) -> Vec<(String, Decisions)> {
    let has_best = replies.iter().any(|r| r.best_of.is_some() || r.sampled);
    let text = |r: &Reply, best: bool| {
        let out = if best { &r.best_of } else { &r.output };
        match (out, &r.error) {
            (Some(t), _) => Ok(t.clone()),
            (None, Some(e)) => Err(e.clone()),
            (None, None) => Err("no valid best-of answer".to_string()),
        }
    };
    let column = |best: bool| -> Decisions {
        replies
            .iter()
            .map(|r| (Decision::Text(text(r, best)), r.seconds))
            .collect()
    };
    let mut out = vec![(name.clone(), column(false))];
    if has_best {
        out.push((format!("{name} (best-of)"), column(true)));
    }
    out
}

fn score_all(
    data: &Dataset,
    rules: &[RecordRules],
    policy: &str,
    decisions: Decisions,
) -> Result<Vec<Row>, EvalError> {
    data.records
        .par_iter()
        .zip(rules.par_iter())
        .zip(decisions.into_par_iter())
        .map(|((r, rr), (decision, seconds))| score_one(data, r, rr, policy, &decision, seconds))
        .collect()
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
    let fcfs = crate::text::fcfs_value(&r.problem, objective, variant).map_err(bad)?;
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
        Decision::Text(text) => {
            let text = text.as_deref().map_err(String::as_str);
            let template = r.record.template().ok_or_else(|| {
                EvalError::Input(format!(
                    "line {}: field `template`: unknown template {}",
                    r.line, r.record.template
                ))
            })?;
            let ids = prompt_ids(&r.record.instance, objective, variant, template);
            score_text(
                &r.problem,
                &r.record.instance,
                &ids,
                objective,
                variant,
                text,
            )
            .map_err(bad)?
        }
    };
    let rec = &r.record;
    let reference = if rec.proven_optimal {
        rec.value
    } else {
        rec.lower_bound
    };
    let (optimal, gap) = gap_to(scored.value, reference);
    let same = |other: &[usize]| scored.valid && scored.order.as_deref() == Some(other);
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
        lenient_value: scored.lenient_value,
        fcfs_value: fcfs,
        seconds,
        best_rule: rules.best_rule.name().to_string(),
        best_rule_value: rules.best_value,
        same_as_queue_order: same(&rules.queue_order),
        same_as_best_rule_order: same(&rules.best_order),
        defects: scored.defects,
    })
}

/// Rows by policy name, for lookups.
pub fn rows_by_policy(rows: &[Row]) -> HashMap<&str, Vec<&Row>> {
    let mut map: HashMap<&str, Vec<&Row>> = HashMap::new();
    for row in rows {
        map.entry(row.policy.as_str()).or_default().push(row);
    }
    map
}
