//! [`Predictor`]: a trained run directory that answers snapshots with queue orders.

use std::path::Path;
use std::time::Instant;

use candle_core::Device;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use schedlm_dataset::{
    order_line, parse_answer, prompt_ids, render, IdMap, Mode, Record, RecordKind, Template,
};
use schedlm_model::{Instance, Objective, Problem, Variant};
use serde::{Deserialize, Serialize};

use crate::constrain::{answer_tokens, OrderConstraint};
use crate::decode::{generate, prime, Chooser, DecodeOptions, Vocab};
use crate::error::{FinetuneError, Result};
use crate::model::{self, Loaded};
use crate::rollout::{order_value as rollout_value, rollout, Rollout};
use crate::scorer::{self, StepScorer};
use crate::tokenizer::TextTokenizer;
use schedlm_dataset::distribution::TrainingDistribution;

/// A model's answer to one snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// Raw model output of greedy decoding.
    pub text: String,
    /// The best valid order among `best_of` samples (by the dispatcher's objective value);
    /// `None` without best-of or when no sample was valid.
    pub best_of: Option<String>,
    /// Tokens generated greedily.
    pub tokens: usize,
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// Samples that parsed as a valid order (of `best_of`).
    pub valid_samples: usize,
    /// Objective value of `best_of`.
    pub best_value: Option<f64>,
    /// The greedy answer decoded without the constraint, when decoding is constrained and
    /// [`DecodeOptions::check_unconstrained`] asks for it: what the model alone writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconstrained: Option<String>,
    /// Seconds of the greedy answer (prompt and decoding), the model's decision time.
    #[serde(default)]
    pub greedy_seconds: f64,
    /// Seconds of the best-of samples (0 without best-of).
    #[serde(default)]
    pub samples_seconds: f64,
}

/// What decoding needs to know about a tokenizer's tokens, computed once.
pub struct AnswerTables {
    /// Decoded text of every token.
    pub pieces: Vec<String>,
    /// Tokens that may appear in an answer.
    pub candidates: Vec<u32>,
    /// Tokens that end unconstrained decoding: the end token and the tokenizer's stop tokens.
    pub stop: Vec<u32>,
    /// The token that ends an answer (`<|im_end|>` for ChatML models).
    pub end: u32,
}

impl AnswerTables {
    /// Computes the tables of `tokenizer` (decodes every token id once).
    pub fn new(tokenizer: &TextTokenizer) -> AnswerTables {
        let pieces = tokenizer.pieces();
        let candidates = answer_tokens(&pieces);
        AnswerTables {
            pieces,
            candidates,
            stop: tokenizer.stop_tokens(),
            end: tokenizer.end_token(),
        }
    }

    /// The tables as [`generate`] takes them.
    pub fn vocab(&self) -> Vocab<'_> {
        Vocab {
            pieces: &self.pieces,
            candidates: &self.candidates,
            end: self.end,
            stop: &self.stop,
        }
    }
}

/// A loaded model ready to answer: a language model with its tokenizer, or a step scorer
/// ([`crate::scorer`]).
pub struct Predictor {
    engine: Engine,
    device: Device,
}

enum Engine {
    Text {
        loaded: Box<Loaded>,
        tables: AnswerTables,
    },
    Scorer {
        scorer: StepScorer,
        trained_on: Option<Box<TrainingDistribution>>,
    },
}

impl Predictor {
    /// Loads the model of a run directory (written by training) onto the CPU.
    pub fn load(dir: &Path) -> Result<Predictor> {
        Predictor::load_on(dir, &Device::Cpu)
    }

    /// Loads onto `device` (a step scorer always runs on the CPU).
    pub fn load_on(dir: &Path, device: &Device) -> Result<Predictor> {
        if scorer::is_scorer(dir) {
            let trained_on = TrainingDistribution::read(dir)
                .map_err(FinetuneError::Model)?
                .map(Box::new);
            return Ok(Predictor {
                engine: Engine::Scorer {
                    scorer: StepScorer::load(dir)?,
                    trained_on,
                },
                device: Device::Cpu,
            });
        }
        Ok(Predictor::from_loaded(model::load(dir, device)?, device))
    }

    /// Wraps a model already in memory.
    pub fn from_loaded(loaded: Loaded, device: &Device) -> Predictor {
        Predictor {
            engine: Engine::Text {
                tables: AnswerTables::new(&loaded.tokenizer),
                loaded: Box::new(loaded),
            },
            device: device.clone(),
        }
    }

    /// The language model, tokenizer and task the predictor decodes with; `None` for a step
    /// scorer.
    pub fn loaded(&self) -> Option<&Loaded> {
        match &self.engine {
            Engine::Text { loaded, .. } => Some(loaded),
            Engine::Scorer { .. } => None,
        }
    }

    /// The step scorer the predictor rolls out; `None` for a language model.
    pub fn scorer(&self) -> Option<&StepScorer> {
        match &self.engine {
            Engine::Scorer { scorer, .. } => Some(scorer),
            Engine::Text { .. } => None,
        }
    }

    /// What the model was trained on, when its run recorded it.
    pub fn trained_on(&self) -> Option<&TrainingDistribution> {
        match &self.engine {
            Engine::Text { loaded, .. } => loaded.trained_on.as_ref(),
            Engine::Scorer { trained_on, .. } => trained_on.as_deref(),
        }
    }

    /// Answers a snapshot rendered with `objective`, `options.variant` and `template`: greedy,
    /// and best of `options.best_of` samples when it is 2 or more.
    pub fn predict(
        &self,
        instance: &Instance,
        objective: Objective,
        template: Template,
        options: &DecodeOptions,
    ) -> Result<Prediction> {
        let (loaded, tables) = match &self.engine {
            Engine::Scorer { scorer, .. } => {
                return predict_scored(scorer, instance, objective, template, options)
            }
            Engine::Text { loaded, tables } => (loaded, tables),
        };
        if loaded.task.records == RecordKind::Steps {
            return self.predict_steps(loaded, tables, instance, objective, template, options);
        }
        let rendered = render(instance, objective, options.variant, template);
        let tok = &loaded.tokenizer;
        let prompt = tok.encode_prompt(&rendered.system, &rendered.user)?;
        let model = &loaded.model;
        // A constrained answer needs at least `J`, digits per job and the end token.
        let room = if options.constrained {
            2 * instance.queue.len() + 1
        } else {
            1
        };
        if prompt.len() + room > model.context() {
            return Err(FinetuneError::PromptTooLong {
                tokens: prompt.len(),
                context: model.context(),
            });
        }
        let started = Instant::now();
        let primed = prime(model, &prompt, &self.device)?;
        let vocab = tables.vocab();
        let constraint = options
            .constrained
            .then(|| OrderConstraint::new(instance.queue.len()));
        let greedy = generate(
            model,
            &primed,
            &vocab,
            constraint.clone(),
            &mut Chooser::Greedy,
            options,
            &self.device,
        )?;
        let greedy_seconds = started.elapsed().as_secs_f64();
        let unconstrained = if options.constrained && options.check_unconstrained {
            let free = generate(
                model,
                &primed,
                &vocab,
                None,
                &mut Chooser::Greedy,
                options,
                &self.device,
            )?;
            Some(tok.decode_clean(&free)?)
        } else {
            None
        };
        let started = Instant::now();
        let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
        let mut best = BestOf::default();
        for _ in 0..options.samples() {
            let mut chooser = Chooser::Sample {
                temperature: options.temperature,
                top_k: options.top_k,
                rng: &mut rng,
            };
            let tokens = generate(
                model,
                &primed,
                &vocab,
                constraint.clone(),
                &mut chooser,
                options,
                &self.device,
            )?;
            let text = tok.decode_clean(&tokens)?;
            let value = order_value(&text, &rendered.ids, instance, objective, options.variant);
            best.offer(value, || text);
        }
        Ok(Prediction {
            text: tok.decode_clean(&greedy)?,
            tokens: greedy.len(),
            prompt_tokens: prompt.len(),
            valid_samples: best.valid,
            best_value: best.best.as_ref().map(|b| b.0),
            best_of: best.best.map(|b| b.1),
            unconstrained,
            greedy_seconds,
            samples_seconds: started.elapsed().as_secs_f64(),
        })
    }
}

impl Predictor {
    /// [`Predictor::predict`] for a step model: greedy rollout (and sampled rollouts for
    /// best-of), the order written in the ids of `template`. An invalid rollout's text is the
    /// jobs placed before the invalid step, then a note quoting that step's answer (in step-v1
    /// ids), so a strict parse always refuses it.
    fn predict_steps(
        &self,
        loaded: &Loaded,
        tables: &AnswerTables,
        instance: &Instance,
        objective: Objective,
        template: Template,
        options: &DecodeOptions,
    ) -> Result<Prediction> {
        let ids = prompt_ids(instance, objective, options.variant, template);
        let text_of = |r: &Rollout| {
            let mut text = order_line(&r.order, &ids);
            if let Some(bad) = r.answers.last().filter(|_| !r.valid) {
                text.push_str(&format!(
                    " (step {}: invalid answer {bad:?})",
                    r.order.len()
                ));
            }
            text
        };
        let roll = |chooser: &mut Chooser| {
            rollout(
                loaded,
                tables,
                instance,
                objective,
                options,
                chooser,
                &self.device,
            )
        };
        let started = Instant::now();
        let greedy = roll(&mut Chooser::Greedy)?;
        let greedy_seconds = started.elapsed().as_secs_f64();
        let unconstrained = if options.constrained && options.check_unconstrained {
            let free = DecodeOptions {
                constrained: false,
                ..options.clone()
            };
            let r = rollout(
                loaded,
                tables,
                instance,
                objective,
                &free,
                &mut Chooser::Greedy,
                &self.device,
            )?;
            Some(text_of(&r))
        } else {
            None
        };
        let problem = Problem::new(instance).map_err(|e| FinetuneError::Config(e.to_string()))?;
        let started = Instant::now();
        let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
        let mut best = BestOf::default();
        for _ in 0..options.samples() {
            let sample = roll(&mut Chooser::Sample {
                temperature: options.temperature,
                top_k: options.top_k,
                rng: &mut rng,
            })?;
            let value = sample
                .valid
                .then(|| rollout_value(&problem, &sample.order, objective, options.variant))
                .flatten();
            best.offer(value, || text_of(&sample));
        }
        Ok(Prediction {
            text: text_of(&greedy),
            tokens: greedy.tokens,
            prompt_tokens: greedy.prompt_tokens,
            valid_samples: best.valid,
            best_value: best.best.as_ref().map(|b| b.0),
            best_of: best.best.map(|b| b.1),
            unconstrained,
            greedy_seconds,
            samples_seconds: started.elapsed().as_secs_f64(),
        })
    }
}

/// [`Predictor::predict`] for a step scorer: its greedy rollout, and sampled rollouts for
/// best-of, the order written in the ids of `template`.
fn predict_scored(
    scorer: &StepScorer,
    instance: &Instance,
    objective: Objective,
    template: Template,
    options: &DecodeOptions,
) -> Result<Prediction> {
    let ids = prompt_ids(instance, objective, options.variant, template);
    let started = Instant::now();
    let greedy = scorer.rollout(instance, objective, options.variant, &mut |s| {
        scorer::best(s)
    })?;
    let greedy_seconds = started.elapsed().as_secs_f64();
    let problem = Problem::new(instance).map_err(|e| FinetuneError::Config(e.to_string()))?;
    let started = Instant::now();
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let mut best = BestOf::default();
    for _ in 0..options.samples() {
        let order = scorer.rollout(instance, objective, options.variant, &mut |s| {
            scorer::sample(s, options.temperature, &mut rng)
        })?;
        let value = rollout_value(&problem, &order, objective, options.variant);
        best.offer(value, || order_line(&order, &ids));
    }
    Ok(Prediction {
        text: order_line(&greedy, &ids),
        tokens: 0,
        prompt_tokens: 0,
        valid_samples: best.valid,
        best_value: best.best.as_ref().map(|b| b.0),
        best_of: best.best.map(|b| b.1),
        unconstrained: None,
        greedy_seconds,
        samples_seconds: started.elapsed().as_secs_f64(),
    })
}

/// The samples of a best-of run: the best valid one (the lowest value; of equals, the first)
/// and how many were valid.
#[derive(Default)]
struct BestOf {
    best: Option<(f64, String)>,
    valid: usize,
}

/// One record answered by [`Predictor::answer_record`]: the `schedlm predict` output line and
/// what it counts for.
#[derive(Debug, Clone)]
pub struct RecordAnswer {
    /// `id`, `output`, `best_of`, `tokens`, `time_ms`, `decoding`, and with best-of sampling
    /// `samples` and `best_of_time_ms`, with a check `unconstrained`; for a prompt longer than
    /// the context an empty `output` and the `error`.
    pub line: serde_json::Value,
    /// The greedy answer is a valid order of the record's queue.
    pub valid: bool,
    /// The prompt does not fit the model's context.
    pub too_long: bool,
}

impl Predictor {
    /// Answers one dataset record (its own dispatcher variant) with `options`.
    pub fn answer_record(&self, record: &Record, options: &DecodeOptions) -> Result<RecordAnswer> {
        let template = record.template().ok_or_else(|| {
            FinetuneError::Records(format!("unknown template {}", record.template))
        })?;
        let options = DecodeOptions {
            variant: record.variant,
            ..options.clone()
        };
        let p = match self.predict(&record.instance, record.objective, template, &options) {
            Ok(p) => p,
            Err(e @ FinetuneError::PromptTooLong { .. }) => {
                let line = serde_json::json!({"id": record.id, "output": "", "best_of": null,
                    "tokens": 0, "time_ms": 0.0, "error": e.to_string()});
                return Ok(RecordAnswer {
                    line,
                    valid: false,
                    too_long: true,
                });
            }
            Err(e) => return Err(e),
        };
        let ids = prompt_ids(&record.instance, record.objective, record.variant, template);
        let valid = parse_answer(&p.text, &ids, &record.instance, Mode::Strict).is_ok();
        let mut line = serde_json::json!({"id": record.id, "output": p.text, "best_of": p.best_of,
            "tokens": p.tokens, "time_ms": p.greedy_seconds * 1e3,
            "decoding": options.describe()});
        if options.samples() > 0 {
            line["samples"] = options.samples().into();
            line["best_of_time_ms"] = (p.samples_seconds * 1e3).into();
        }
        if let Some(free) = &p.unconstrained {
            line["unconstrained"] = serde_json::json!(free);
        }
        Ok(RecordAnswer {
            line,
            valid,
            too_long: false,
        })
    }

    /// A warning when records lie outside the model's training distribution (`who` starts
    /// it: "predict: the model").
    pub fn outside_warning(&self, records: &[Record], who: &str) -> Option<String> {
        let d = self.trained_on()?;
        let mut tally = schedlm_dataset::distribution::OutsideTally::default();
        for r in records {
            let queue = r.instance.queue.len();
            tally.add(&d.outside(&r.family, queue, r.objective, r.variant, &r.template));
        }
        tally.warning(who, d)
    }
}

impl BestOf {
    /// A sample of value `value` (`None`: invalid), its text made only when it is the best.
    fn offer(&mut self, value: Option<f64>, text: impl FnOnce() -> String) {
        let Some(value) = value else { return };
        self.valid += 1;
        if self.best.as_ref().is_none_or(|(v, _)| value < *v) {
            self.best = Some((value, text()));
        }
    }
}

/// The objective value of a strictly valid answer under the dispatcher; `None` if invalid.
pub fn order_value(
    text: &str,
    ids: &IdMap,
    instance: &Instance,
    objective: Objective,
    variant: Variant,
) -> Option<f64> {
    let parsed = parse_answer(text, ids, instance, Mode::Strict).ok()?;
    let problem = Problem::new(instance).ok()?;
    rollout_value(&problem, &parsed.order, objective, variant)
}
