//! Rolling a step model out: a model trained on step records (`step-v1` or `step-v2`, one
//! dispatching decision per record) orders a queue by answering one decision at a time. At
//! each step the state after the jobs placed so far is rendered with the run's step template
//! ([`schedlm_dataset::StepState`]), the
//! model names the next job, and that job is placed; the last job is forced. Constrained,
//! only unplaced jobs whose queued dependencies are placed may be named, so every rollout is
//! a valid order; unconstrained, a rollout that names anything else is invalid.

use candle_core::Device;
use schedlm_dataset::{StepState, Template};
use schedlm_model::{Instance, Objective, Problem, Variant};

use crate::constrain::OrderConstraint;
use crate::decode::{generate, prime, Chooser, DecodeOptions};
use crate::error::{FinetuneError, Result};
use crate::model::Loaded;
use crate::predict::AnswerTables;

/// Tokens one step's answer may take unconstrained (`J`, digits and the end, with room).
const STEP_TOKENS: usize = 8;

/// What a rollout gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rollout {
    /// The jobs in placement order (queue indices): the whole queue when `valid`, else the
    /// prefix before the first invalid answer.
    pub order: Vec<usize>,
    /// Whether every answer named a job that could be placed next.
    pub valid: bool,
    /// Each step's raw answer text, in order.
    pub answers: Vec<String>,
    /// Prompt tokens over all steps.
    pub prompt_tokens: usize,
    /// Tokens generated over all steps.
    pub tokens: usize,
    /// Each decision as the model saw and answered it: its prompt's tokens and its answer's
    /// tokens with the end token (what reinforcement learning trains on).
    pub decisions: Vec<(Vec<u32>, Vec<u32>)>,
}

/// Rolls `loaded` out on `instance`, choosing each step's tokens with `chooser`.
/// `options.constrained` decides whether answers are constrained to placeable jobs.
pub fn rollout(
    loaded: &Loaded,
    tables: &AnswerTables,
    instance: &Instance,
    objective: Objective,
    options: &DecodeOptions,
    chooser: &mut Chooser,
    device: &Device,
) -> Result<Rollout> {
    let problem = Problem::new(instance).map_err(|e| FinetuneError::Config(e.to_string()))?;
    let n = problem.jobs();
    let template = loaded.task.step_template.unwrap_or(Template::StepV1);
    let mut state =
        StepState::new(instance, &problem, objective, options.variant).rendered_as(template);
    let mut out = Rollout {
        order: Vec::with_capacity(n),
        valid: true,
        answers: Vec::with_capacity(n),
        prompt_tokens: 0,
        tokens: 0,
        decisions: Vec::with_capacity(n),
    };
    let step_options = DecodeOptions {
        max_new_tokens: STEP_TOKENS,
        ..options.clone()
    };
    while out.order.len() < n {
        let placeable = state.placeable();
        if out.order.len() + 1 == n {
            // The last decision is forced (step records leave it out too).
            out.order.extend(placeable);
            break;
        }
        let rendered = state.render();
        let numbers: Vec<usize> = placeable
            .iter()
            .filter_map(|&j| rendered.ids.job(j).strip_prefix('J')?.parse().ok())
            .collect();
        let prompt = loaded
            .tokenizer
            .encode_prompt(&rendered.system, &rendered.user)?;
        if prompt.len() + STEP_TOKENS > loaded.model.context() {
            return Err(FinetuneError::PromptTooLong {
                tokens: prompt.len(),
                context: loaded.model.context(),
            });
        }
        let primed = prime(&loaded.model, &prompt, device)?;
        let constraint = options
            .constrained
            .then(|| OrderConstraint::pick(n, &numbers));
        let tokens = generate(
            &loaded.model,
            &primed,
            &tables.vocab(),
            constraint,
            chooser,
            &step_options,
            device,
        )?;
        out.prompt_tokens += prompt.len();
        out.tokens += tokens.len();
        let text = loaded.tokenizer.decode_clean(&tokens)?;
        let mut answer = tokens;
        answer.push(tables.end);
        out.decisions.push((prompt, answer));
        let chosen = rendered.ids.job_index(text.trim());
        out.answers.push(text);
        // `place` refuses placed, unknown and not-yet-ready jobs: the rollout is invalid.
        match chosen.filter(|&j| state.place(j)) {
            Some(j) => out.order.push(j),
            None => {
                out.valid = false;
                break;
            }
        }
    }
    Ok(out)
}

/// The objective value of a complete order under `variant` (`None` if it is not a valid
/// order); every answer of this crate is scored through it.
pub fn order_value(
    problem: &Problem,
    order: &[usize],
    objective: Objective,
    variant: Variant,
) -> Option<f64> {
    let schedule = schedlm_model::dispatch(problem, order, variant).ok()?;
    Some(objective.value(problem, &schedule.start))
}
