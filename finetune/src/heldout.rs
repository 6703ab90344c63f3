//! The held-out gap during training: the model being trained answers the first validation
//! records greedily (in memory, no reload), each answer is dispatched and scored like in
//! evaluation, and the gap is taken to the record's lower bound.
//!
//! Per record, the prompt runs through the model once; from it two greedy answers are decoded:
//! constrained (always a permutation; its objective value gives the gap and whether it is
//! optimal) and unconstrained (whether the model alone writes a valid order). Nothing here
//! draws random numbers, so evaluating never changes what training does next.

use candle_core::Device;
use schedlm_dataset::{parse_answer, prompt_ids, IdMap, Mode, Record, RecordKind, Template};
use schedlm_model::Problem;

use crate::constrain::OrderConstraint;
use crate::data::Example;
use crate::decode::{generate, prime, Chooser, DecodeOptions};
use crate::error::{FinetuneError, Result};
use crate::model::Loaded;
use crate::predict::AnswerTables;
use crate::rollout::{order_value, rollout};

/// Relative tolerance of "optimal": a value at most `record.value * (1 + OPTIMAL_TOLERANCE)`.
pub const OPTIMAL_TOLERANCE: f64 = 1e-9;
/// Tokens an unconstrained answer may run past the length of the label's answer.
pub const UNCONSTRAINED_SLACK: usize = 16;

/// A validation record ready to decode.
pub struct HeldOut {
    record: Record,
    problem: Problem,
    ids: IdMap,
    prompt: Vec<u32>,
    /// Tokens of the label's answer with its end token.
    answer_len: usize,
}

/// What greedy decoding of the held-out records gave.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GapReport {
    /// Mean gap, (value - lower_bound) / lower_bound, of the constrained answers (0 when at
    /// or under the bound; records whose gap is undefined, bound 0, are left out).
    pub gap_mean: Option<f64>,
    /// Share of unconstrained answers that parse strictly as a permutation of the queue.
    pub valid_share: f64,
    /// Share of constrained answers whose value is at most the record's value (+1e-9 relative).
    pub optimal_share: f64,
}

/// The first `count` records (in file order) whose prompt and answer fit `context` tokens. For
/// a step model ([`RecordKind::Steps`]) only the first step of each instance counts: its
/// instance is rolled out whole.
pub fn held_out(
    records: &[Record],
    loaded: &Loaded,
    context: usize,
    count: usize,
) -> Result<Vec<HeldOut>> {
    let mut out = Vec::new();
    for record in records {
        if out.len() == count {
            break;
        }
        if loaded.task.records == RecordKind::Steps && !record.is_first_step() {
            continue;
        }
        let example = Example::new(record, &loaded.tokenizer)?;
        if example.tokens.len() > context || example.answer_len() == 0 {
            continue;
        }
        let problem = Problem::new(&record.instance)
            .map_err(|e| FinetuneError::Config(format!("record {}: {e}", record.id)))?;
        let (system, user) = record.system_user();
        out.push(HeldOut {
            problem,
            ids: prompt_ids(
                &record.instance,
                record.objective,
                record.variant,
                template(record)?,
            ),
            prompt: loaded.tokenizer.encode_prompt(&system, &user)?,
            answer_len: example.answer_len(),
            record: record.clone(),
        });
    }
    Ok(out)
}

/// The template a record was rendered with.
fn template(record: &Record) -> Result<Template> {
    record.template().ok_or_else(|| {
        FinetuneError::Config(format!(
            "record {}: field `template`: unknown template {}",
            record.id, record.template
        ))
    })
}

/// The objective value of a strictly valid answer under the record's dispatcher variant.
fn answer_value(held: &HeldOut, text: &str) -> Option<f64> {
    let r = &held.record;
    let parsed = parse_answer(text, &held.ids, &r.instance, Mode::Strict).ok()?;
    order_value(&held.problem, &parsed.order, r.objective, r.variant)
}

/// The gap of `value` to `bound`: 0 at or under it, `None` when undefined (bound 0 or less).
pub fn gap(value: f64, bound: f64) -> Option<f64> {
    if value <= bound + OPTIMAL_TOLERANCE * bound.abs() {
        Some(0.0)
    } else if bound > 0.0 {
        Some((value - bound) / bound)
    } else {
        None
    }
}

/// One record's result: constrained value (if its answer was complete) and whether the
/// unconstrained answer was valid.
fn decode_one(
    loaded: &Loaded,
    tables: &AnswerTables,
    held: &HeldOut,
    device: &Device,
) -> Result<(Option<f64>, bool)> {
    if loaded.task.records == RecordKind::Steps {
        return roll_one(loaded, tables, held, device);
    }
    let model = &loaded.model;
    let primed = prime(model, &held.prompt, device)?;
    let vocab = tables.vocab();
    let jobs = held.record.instance.queue.len();
    let text = |tokens: Vec<u32>| loaded.tokenizer.decode_clean(&tokens);
    let constrained = DecodeOptions::default();
    let answer = generate(
        model,
        &primed,
        &vocab,
        Some(OrderConstraint::new(jobs)),
        &mut Chooser::Greedy,
        &constrained,
        device,
    )?;
    let value = answer_value(held, &text(answer)?);
    let free = DecodeOptions {
        constrained: false,
        max_new_tokens: held.answer_len + UNCONSTRAINED_SLACK,
        ..DecodeOptions::default()
    };
    let answer = generate(
        model,
        &primed,
        &vocab,
        None,
        &mut Chooser::Greedy,
        &free,
        device,
    )?;
    let valid = answer_value(held, &text(answer)?).is_some();
    Ok((value, valid))
}

/// [`decode_one`] for a step model: a constrained and an unconstrained greedy rollout.
fn roll_one(
    loaded: &Loaded,
    tables: &AnswerTables,
    held: &HeldOut,
    device: &Device,
) -> Result<(Option<f64>, bool)> {
    let r = &held.record;
    let run = |constrained: bool| {
        let options = DecodeOptions {
            constrained,
            variant: r.variant,
            ..DecodeOptions::default()
        };
        rollout(
            loaded,
            tables,
            &r.instance,
            r.objective,
            &options,
            &mut Chooser::Greedy,
            device,
        )
    };
    // A state can outgrow the context in the middle of a rollout (the free profiles lengthen
    // as jobs are placed): that rollout has no answer, and training goes on.
    let constrained = match run(true) {
        Ok(r) => r,
        Err(FinetuneError::PromptTooLong { .. }) => return Ok((None, false)),
        Err(e) => return Err(e),
    };
    let value = order_value(&held.problem, &constrained.order, r.objective, r.variant);
    let valid = match run(false) {
        Ok(r) => r.valid,
        Err(FinetuneError::PromptTooLong { .. }) => false,
        Err(e) => return Err(e),
    };
    Ok((value, valid))
}

/// Decodes every held-out record with the current weights; `None` without records.
pub fn evaluate(
    loaded: &Loaded,
    tables: &AnswerTables,
    held: &[HeldOut],
    device: &Device,
) -> Result<Option<GapReport>> {
    if held.is_empty() {
        return Ok(None);
    }
    let (mut gaps, mut valid, mut optimal) = (Vec::new(), 0usize, 0usize);
    for h in held {
        let (value, ok) = decode_one(loaded, tables, h, device)?;
        valid += usize::from(ok);
        if let Some(v) = value {
            gaps.extend(gap(v, h.record.lower_bound));
            optimal += usize::from(v <= h.record.value * (1.0 + OPTIMAL_TOLERANCE));
        }
    }
    let n = held.len() as f64;
    Ok(Some(GapReport {
        gap_mean: (!gaps.is_empty()).then(|| gaps.iter().sum::<f64>() / gaps.len() as f64),
        valid_share: valid as f64 / n,
        optimal_share: optimal as f64 / n,
    }))
}
