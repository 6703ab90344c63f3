//! schedlm's own models as `model:DIR` policies (feature `models`): a directory that
//! [`schedlm_finetune::Predictor`] loads (a text model or a step scorer) answers through
//! [`TextModel`], greedy and best-of-N, so `schedlm eval`, library users and tests evaluate
//! a model the same way.
//!
//! ```no_run
//! use schedlm_eval::model_policy::loader;
//! use schedlm_finetune::DecodeOptions;
//!
//! let models = loader(DecodeOptions::default());
//! let model = models.load(std::path::Path::new("models/b7-uniform")).unwrap();
//! assert!(model.decoding().greedy.contains("greedy"));
//! ```

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use schedlm_dataset::distribution::TrainingDistribution;
use schedlm_finetune::{DecodeOptions, Predictor};

use crate::text_policy::{Ask, Decoding, ModelLoader, Reply, TextModel};
use crate::EvalError;

/// The loader of `model:DIR` policies with these decoding options (the variant comes from
/// each question).
pub fn loader(decode: DecodeOptions) -> ModelLoader {
    ModelLoader(Arc::new(move |dir: &Path| {
        let predictor = Predictor::load(dir).map_err(|e| EvalError::Policy {
            spec: format!("model:{}", dir.display()),
            message: format!("cannot load the model: {e:#}"),
        })?;
        Ok(Box::new(FinetuneModel {
            predictor,
            decode: decode.clone(),
        }) as Box<dyn TextModel>)
    }))
}

/// A schedlm model (`model:DIR`) as a text policy: greedy answer and best-of-N.
/// Answers are independent of each other, so concurrent asks decode at the same time on one
/// shared model (weights are read-only while decoding).
pub struct FinetuneModel {
    predictor: Predictor,
    decode: DecodeOptions,
}

impl TextModel for FinetuneModel {
    fn own_concurrency(&self) -> Option<usize> {
        Some(rayon::current_num_threads())
    }

    fn decoding(&self) -> Decoding {
        let d = &self.decode;
        Decoding {
            greedy: d.greedy_label(),
            best_of: d.best_of_label(),
            samples: d.samples(),
            constrained: Some(d.constrained),
        }
    }

    fn trained_on(&self) -> Option<TrainingDistribution> {
        self.predictor.trained_on().cloned()
    }

    fn answer(&self, ask: &Ask<'_>) -> Reply {
        let started = Instant::now();
        let decode = DecodeOptions {
            variant: ask.variant,
            ..self.decode.clone()
        };
        let result = self
            .predictor
            .predict(ask.instance, ask.objective, ask.template, &decode);
        let seconds = Some(started.elapsed().as_secs_f64());
        match result {
            Ok(p) => Reply {
                finish_reason: Some(
                    if p.tokens >= self.decode.max_new_tokens {
                        "length"
                    } else {
                        "stop"
                    }
                    .to_string(),
                ),
                prompt_tokens: Some(p.prompt_tokens as u64),
                completion_tokens: Some(p.tokens as u64),
                output: Some(p.text),
                best_of: p.best_of,
                sampled: self.decode.best_of >= 2,
                // The decision time of each column: the greedy answer, and the samples.
                seconds: Some(p.greedy_seconds),
                best_of_seconds: (self.decode.best_of >= 2).then_some(p.samples_seconds),
                unconstrained: p.unconstrained,
                error: None,
                ..Reply::default()
            },
            Err(e) => Reply {
                error: Some(format!("model error: {e:#}")),
                seconds,
                ..Reply::default()
            },
        }
    }
}
