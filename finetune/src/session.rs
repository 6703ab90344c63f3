//! A training session, as `schedlm finetune` runs it: a new run or a resumed one, its records
//! checked (one kind, one template, values where the targets need them), the tokenizer chosen
//! (a byte-level BPE trained on the records for a GPT from scratch, the base model's own for
//! LoRA), the examples that fit the context, the held-out answers of each evaluation point, the
//! fit with its checkpoints and `curve.csv`, and the lines that report it. The command only maps
//! its flags to a [`SessionConfig`] and prints what the session says.
//!
//! ```no_run
//! use schedlm_finetune::session::{Session, SessionConfig};
//! use schedlm_finetune::{GptConfig, ModelSpec, TrainOptions, Device};
//!
//! let config = SessionConfig::new(
//!     "ds/train.jsonl".into(),
//!     "run".into(),
//!     ModelSpec::Gpt { config: GptConfig::tiny(0) },
//!     TrainOptions::default(),
//! );
//! let mut session = Session::open(&config, &Device::Cpu).unwrap();
//! println!("{}", session.summary());
//! for line in session.fit().unwrap() {
//!     println!("{line}");
//! }
//! ```

use std::path::{Path, PathBuf};

use schedlm_dataset::distribution::TrainingDistribution;
use schedlm_dataset::{read_records, Record, RecordKind, Template};

use crate::data::{examples_with, Example};
use crate::error::{FinetuneError, Result};
use crate::model::{build, save_merged, ModelSpec, Task};
use crate::train::STATE_FILE;
use crate::{Device, TextTokenizer, TrainOptions, Trainer};

/// What a session trains, on what, and where.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Training records (JSON Lines).
    pub train: PathBuf,
    /// Validation records.
    pub val: Option<PathBuf>,
    /// The run directory (checkpoints, `curve.csv`, the model).
    pub out: PathBuf,
    /// Continue the run in `out` when it holds one.
    pub resume: bool,
    /// The model of a new run (a GPT's `vocab_size` is the trained tokenizer's).
    pub spec: ModelSpec,
    /// Vocabulary size of the BPE trained for a GPT from scratch.
    pub vocab: usize,
    /// Seed of the weights' initialisation.
    pub seed: u64,
    /// The options of a new run.
    pub options: TrainOptions,
    /// What a resumed run takes from this session (the rest is the run's own).
    pub resumed: Resumed,
    /// Also write the base and adapters folded together (`merged.safetensors`).
    pub merge: bool,
}

/// Options a resumed run takes from the new session: its length and its evaluation.
#[derive(Debug, Clone, Default)]
pub struct Resumed {
    /// Epochs in all.
    pub epochs: Option<usize>,
    /// Optimizer steps in all.
    pub steps: Option<usize>,
    /// Steps between evaluation points.
    pub eval_every: Option<usize>,
    /// Validation records answered at each point.
    pub eval_records: Option<usize>,
    /// Asked for a curriculum (a resumed run keeps its own order: said, not applied).
    pub curriculum: bool,
    /// Show progress.
    pub progress: bool,
}

impl SessionConfig {
    /// A new run of `spec` on `train` into `out`, with `options`, no validation records.
    pub fn new(train: PathBuf, out: PathBuf, spec: ModelSpec, options: TrainOptions) -> Self {
        SessionConfig {
            train,
            val: None,
            out,
            resume: false,
            spec,
            vocab: 1024,
            seed: options.seed,
            options,
            resumed: Resumed::default(),
            merge: false,
        }
    }
}

/// A session ready to train.
pub struct Session {
    /// The trainer: the model, its optimizer state and history.
    pub trainer: Trainer,
    /// Whether the run was resumed.
    pub resumed: bool,
    /// What the session noticed on the way (records left out, options ignored).
    pub notes: Vec<String>,
    train: Vec<Example>,
    val: Vec<Example>,
    held_out: usize,
    done: usize,
    out: PathBuf,
    merge: bool,
}

impl Session {
    /// Starts or resumes the run of `config` on `device` and prepares its examples.
    pub fn open(config: &SessionConfig, device: &Device) -> Result<Session> {
        let mut notes = Vec::new();
        let resumed = config.resume && config.out.join(STATE_FILE).is_file();
        let mut trainer = if resumed {
            let mut t = Trainer::resume(&config.out, None, device)?;
            resume_options(&config.resumed, &mut t.state.options, &mut notes);
            t
        } else {
            start(config, device)?
        };
        let weight = trainer.state.options.deviation_weight;
        if !(weight.is_finite() && weight > 0.0) {
            return Err(invalid(format!(
                "--deviation-weight {weight}: give a positive weight (1 for the plain loss)"
            )));
        }
        let temperature = trainer.state.options.value_temperature;
        if let Some(t) = temperature {
            if !(t.is_finite() && t > 0.0) {
                return Err(invalid(format!(
                    "--temperature {t}: give a positive temperature (e.g. 0.01)"
                )));
            }
            if weight != 1.0 {
                return Err(invalid(
                    "--targets values spreads each answer over its candidates: drop \
                     --deviation-weight"
                        .into(),
                ));
            }
        }
        let (train, _) = examples(&config.train, &trainer, weight, temperature, &mut notes)?;
        let (val, val_records) = match &config.val {
            Some(p) => examples(p, &trainer, 1.0, None, &mut notes)?,
            None => (Vec::new(), Vec::new()),
        };
        let held_out = trainer.set_held_out(&val_records)?;
        let done = trainer.state.history.len();
        Ok(Session {
            trainer,
            resumed,
            notes,
            train,
            val,
            held_out,
            done,
            out: config.out.clone(),
            merge: config.merge,
        })
    }

    /// One line: the records and tokens the session trains on.
    pub fn summary(&self) -> String {
        let tokens: usize = self.train.iter().map(|e| e.tokens.len()).sum();
        format!(
            "{} training records ({tokens} tokens), {} validation records, {} answered at each \
             evaluation point",
            self.train.len(),
            self.val.len(),
            self.held_out
        )
    }

    /// Trains (checkpoints and `curve.csv` in the run directory), writes the merged weights
    /// when asked, and returns the report: a line per epoch of this session and per
    /// evaluation point.
    pub fn fit(&mut self) -> Result<Vec<String>> {
        self.trainer.fit(&self.train, &self.val, Some(&self.out))?;
        let mut lines: Vec<String> = self.trainer.state.history[self.done..]
            .iter()
            .map(|log| {
                let val = log.val_loss.map_or("-".to_string(), |v| format!("{v:.4}"));
                format!(
                    "epoch {:>3}  steps {:>5}  train loss {:.4}  val loss {val}  {:.0} tok/s",
                    log.epoch, log.steps, log.train_loss, log.tokens_per_s
                )
            })
            .collect();
        lines.extend(self.trainer.points.iter().map(|p| p.line()));
        if self.merge {
            let path = save_merged(&self.trainer.loaded, &self.out)?;
            self.notes.push(format!("wrote {}", path.display()));
        }
        Ok(lines)
    }
}

fn invalid(message: String) -> FinetuneError {
    FinetuneError::Config(message)
}

fn records_of(path: &Path) -> Result<Vec<Record>> {
    read_records(path)
        .and_then(|r| r.all())
        .map_err(|e| FinetuneError::Records(e.to_string()))
}

/// A new run: the records' task, a tokenizer for a GPT from scratch, the model.
fn start(config: &SessionConfig, device: &Device) -> Result<Trainer> {
    let records = records_of(&config.train)?;
    let mut spec = config.spec.clone();
    let tokenizer = match &mut spec {
        ModelSpec::Gpt { config: gpt } => {
            let texts: Vec<String> = records
                .iter()
                .flat_map(|r| [r.prompt.clone(), r.completion.clone()])
                .collect();
            let tokenizer = TextTokenizer::train_bpe(&texts, config.vocab)?;
            gpt.vocab_size = tokenizer.vocab_size();
            Some(tokenizer)
        }
        ModelSpec::Lora { .. } => None,
    };
    let mut loaded = build(&spec, tokenizer, config.seed, device)?;
    loaded.task = task_of(&records, &config.train)?;
    loaded.trained_on = Some(TrainingDistribution::of(&records));
    Trainer::new(loaded, config.options.clone(), device)
}

/// A resumed run's options, with the length and evaluation options given.
fn resume_options(r: &Resumed, o: &mut TrainOptions, notes: &mut Vec<String>) {
    if let Some(e) = r.epochs {
        o.epochs = e;
    }
    if r.steps.is_some() {
        o.steps = r.steps;
    }
    if let Some(k) = r.eval_every {
        o.eval_every = k;
    }
    if let Some(m) = r.eval_records {
        o.eval_records = m;
    }
    if r.curriculum && !o.curriculum {
        notes.push("--curriculum ignored: the resumed run trains without it".into());
    }
    o.progress = r.progress;
}

/// What the training records teach: whole orders, or one decision each (step records). A
/// file that mixes both is refused, naming the first record of the minority kind.
pub fn task_of(records: &[Record], path: &Path) -> Result<Task> {
    let Some(first) = records.first() else {
        return Ok(Task::default());
    };
    if let Some(other) = records.iter().find(|r| r.kind() != first.kind()) {
        return Err(FinetuneError::Records(format!(
            "{}: record {} is {} but record {} is {}: train on one kind of record",
            path.display(),
            first.id,
            first.kind().name(),
            other.id,
            other.kind().name()
        )));
    }
    if let Some(other) = records.iter().find(|r| r.template != first.template) {
        return Err(FinetuneError::Records(format!(
            "{}: record {} has template {} but record {} has {}: train on one template",
            path.display(),
            first.id,
            first.template,
            other.id,
            other.template
        )));
    }
    let step_template = (first.kind() == RecordKind::Steps)
        .then(|| first.template())
        .flatten()
        .filter(|t| *t != Template::StepV1);
    Ok(Task {
        records: first.kind(),
        step_template,
    })
}

/// The examples of a records file (those that fit the context), with the records; answer
/// positions that leave the prompt's listing weigh `deviation`, or with `temperature` the
/// answers have soft targets from the records' values.
fn examples(
    path: &Path,
    trainer: &Trainer,
    deviation: f32,
    temperature: Option<f64>,
    notes: &mut Vec<String>,
) -> Result<(Vec<Example>, Vec<Record>)> {
    let records = records_of(path)?;
    if temperature.is_some() && !records.iter().any(|r| r.values.is_some()) {
        return Err(FinetuneError::Records(format!(
            "--targets values: no record of {} carries values (build it with `dataset build \
             --records steps --targets values`)",
            path.display()
        )));
    }
    let context = trainer.loaded.model.context();
    let (ex, skipped) = examples_with(
        &records,
        &trainer.loaded.tokenizer,
        context,
        deviation,
        temperature,
    )?;
    if skipped > 0 {
        notes.push(format!(
            "{}: left out {skipped} of {} records longer than {context} tokens",
            path.display(),
            records.len()
        ));
    }
    Ok((ex, records))
}
