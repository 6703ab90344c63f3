//! `schedlm finetune`: train a small GPT from scratch, or LoRA adapters on a pretrained model,
//! on a data set's records (see docs/finetune.md).

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use schedlm_dataset::distribution::TrainingDistribution;
use schedlm_dataset::read_records;
use schedlm_dataset::{Record, RecordKind, Template};
use schedlm_finetune::data::{examples_with, Example};
use schedlm_finetune::model::{build, save_merged, Base, ModelSpec, Task};
use schedlm_finetune::train::STATE_FILE;
use schedlm_finetune::Device;
use schedlm_finetune::{GptConfig, LoraConfig, TextTokenizer, TrainOptions, Trainer};

#[derive(Debug, Args)]
pub struct FinetuneArgs {
    /// Training records (JSON Lines, e.g. DIR/train.jsonl from `schedlm dataset build`).
    #[arg(long)]
    pub train: PathBuf,
    /// Validation records (e.g. DIR/val.jsonl). At each evaluation point their answer loss is
    /// measured, and the first --eval-records of them are answered by the model for the
    /// held-out gap (see curve.csv below).
    #[arg(long)]
    pub val: Option<PathBuf>,
    /// `gpt-tiny` (from scratch), `gguf:PATH` (e.g. SmolLM2-135M-Instruct, see
    /// scripts/fetch-smollm2.sh) or `hf:DIR|ORG/NAME[@REVISION]` (a Hugging Face model
    /// directory, or a model in the local hf-hub cache at a branch, tag or commit; nothing is
    /// downloaded: fill the cache with `huggingface-cli download ORG/NAME`).
    #[arg(long, default_value = "gpt-tiny")]
    pub model: String,
    /// Run directory. Holds the model and tokenizer, a checkpoint (optimizer.safetensors,
    /// train_state.json) rewritten at every evaluation point and epoch end, and the learning
    /// curves: curve.csv, one row per evaluation point (step, epoch, tokens_seen,
    /// answer_tokens_seen, elapsed_s, train_loss, val_loss, val_gap_mean, val_valid_share,
    /// val_optimal_share), and curve.svg, its plot.
    #[arg(visible_alias = "output", short = 'o', long)]
    pub out: PathBuf,
    /// Length of the run in epochs (passes over the training records) [default: 10].
    /// Ignored when --steps is given. On --resume, replaces the run's planned length.
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Length of the run in optimizer steps (one step = one batch of --batch records); replaces
    /// --epochs. Batches are drawn epoch after epoch, each epoch a new order of all training
    /// records, and the run stops after N steps, mid-epoch if it falls there; the learning-rate
    /// schedule (warmup, then cosine decay) spans the N steps. On --resume, replaces the run's
    /// planned length.
    #[arg(long, value_name = "N")]
    pub steps: Option<usize>,
    /// Steps between evaluation points [default: 0, meaning one point at the end of each
    /// epoch]. There is always a point after the last step. Each point measures the
    /// validation loss and the held-out gap, appends a row to curve.csv, redraws curve.svg and
    /// writes a checkpoint that --resume continues from.
    #[arg(long, value_name = "K")]
    pub eval_every: Option<usize>,
    /// Validation records answered at each evaluation point [default: 64]. The first M (in
    /// file order) that fit the context get a greedy constrained answer: val_gap_mean is the
    /// mean of (value - lower bound) / lower bound (a fraction; curve.svg shows percent) and
    /// val_optimal_share the share at the record's own value. They also get a greedy
    /// unconstrained answer: val_valid_share is the share that is a valid order. 0 turns
    /// these columns off. Costs two decodes per record per point.
    #[arg(long, value_name = "M")]
    pub eval_records: Option<usize>,
    /// Curriculum by queue length: within each epoch, batches of short queues first (a batch
    /// holds records of one queue length where the counts allow), in an order shuffled by
    /// (--seed, epoch) among batches of the same length. Without it, batches of similar token
    /// length come in a shuffled order.
    #[arg(long)]
    pub curriculum: bool,
    /// Loss weight of the answer tokens whose position leaves the prompt's listing (the label
    /// positions that do not take the next job of the ranking, or a step answer that is not the
    /// first job its state lists): the decisions the prompt does not give away. 1 is the plain
    /// loss; the validation loss stays plain.
    #[arg(long, value_name = "W", default_value_t = 1.0)]
    pub deviation_weight: f32,
    /// What the answer is trained towards. `label`: the record's answer (cross-entropy).
    /// `values` (step records built with `dataset build --targets values`): a soft target over
    /// the candidates of each state, candidate c weighing exp(-regret_rel(c) / T) with
    /// regret_rel its regret over the state's best value and T --temperature; records without
    /// values keep the label. The validation loss stays the label's. Not with
    /// --deviation-weight.
    #[arg(long, value_enum, default_value = "label")]
    pub targets: TargetsArg,
    /// With --targets values: the temperature T, in relative regret (0.01: a candidate 1%
    /// worse than the best weighs e^-1 of it).
    #[arg(long, value_name = "T", default_value_t = 0.01)]
    pub temperature: f64,
    /// Peak learning rate [default: 1e-3 from scratch, 2e-4 with LoRA].
    #[arg(long)]
    pub lr: Option<f64>,
    /// Records per batch (batches group records of similar length).
    #[arg(long, default_value_t = 8)]
    pub batch: usize,
    /// Steps of linear warmup before the cosine decay.
    #[arg(long, default_value_t = 20)]
    pub warmup: usize,
    /// Largest global gradient norm (0: no clipping).
    #[arg(long, default_value_t = 1.0)]
    pub clip: f64,
    /// AdamW weight decay (decoupled, applied to every trained weight).
    #[arg(long, default_value_t = 0.01)]
    pub weight_decay: f64,
    /// Seed of the initial weights (from scratch) or the adapters' `A` (LoRA), the batch
    /// order and the held-out sampling: the same seed and data give the same run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// BPE vocabulary size of a model trained from scratch.
    #[arg(long, default_value_t = 1024)]
    pub vocab: usize,
    /// GPT layers (from scratch).
    #[arg(long, default_value_t = 4)]
    pub layers: usize,
    /// GPT width (from scratch).
    #[arg(long, default_value_t = 128)]
    pub width: usize,
    /// GPT attention heads (from scratch).
    #[arg(long, default_value_t = 4)]
    pub heads: usize,
    /// GPT context in tokens (from scratch); longer records are left out.
    #[arg(long, default_value_t = 1024)]
    pub context: usize,
    /// LoRA rank.
    #[arg(long, default_value_t = 8)]
    pub lora_rank: usize,
    /// LoRA alpha (the update is scaled by alpha / rank).
    #[arg(long, default_value_t = 16.0)]
    pub lora_alpha: f64,
    /// Projections LoRA adapts: any of q,k,v,o,gate,up,down.
    #[arg(long, value_delimiter = ',', default_value = "q,v")]
    pub lora_targets: Vec<String>,
    /// Continue the checkpoint in --out from where it stopped (mid-epoch included): the run
    /// takes the same steps as one that never stopped, and curve.csv keeps its rows up to the
    /// checkpoint. The training options are the run's own (train_state.json); only --epochs,
    /// --steps, --eval-every and --eval-records, when given, replace theirs.
    #[arg(long)]
    pub resume: bool,
    /// Also write base and adapters folded together (merged.safetensors) after training.
    #[arg(long)]
    pub merge: bool,
    /// Where to train: `cpu`, or `cuda` / `cuda:N` for an NVIDIA GPU in a build with the
    /// `cuda` feature (docs/finetune.md, "GPUs"). The run directory is the same either way and
    /// loads on any device.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    #[command(flatten)]
    pub progress: crate::io::ProgressArgs,
}

/// `--targets` of `finetune`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetsArg {
    Label,
    Values,
}

fn spec(args: &FinetuneArgs, vocab_size: usize) -> Result<ModelSpec> {
    let lora = LoraConfig {
        rank: args.lora_rank,
        alpha: args.lora_alpha,
        targets: args.lora_targets.clone(),
    };
    Ok(match args.model.as_str() {
        "gpt-tiny" => ModelSpec::Gpt {
            config: GptConfig {
                vocab_size,
                context: args.context,
                layers: args.layers,
                width: args.width,
                heads: args.heads,
            },
        },
        m => match m.split_once(':') {
            Some(("gguf", path)) => ModelSpec::Lora {
                base: Base::Gguf(path.into()),
                lora,
            },
            Some(("hf", id)) => ModelSpec::Lora {
                base: Base::Hf(id.into()),
                lora,
            },
            _ => bail!("--model `{m}`: write gpt-tiny, gguf:PATH or hf:DIR|ORG/NAME[@REVISION]"),
        },
    })
}

fn options(args: &FinetuneArgs) -> TrainOptions {
    let lora = args.model != "gpt-tiny";
    let defaults = TrainOptions::default();
    TrainOptions {
        epochs: args.epochs.unwrap_or(defaults.epochs),
        steps: args.steps,
        eval_every: args.eval_every.unwrap_or(defaults.eval_every),
        eval_records: args.eval_records.unwrap_or(defaults.eval_records),
        curriculum: args.curriculum,
        deviation_weight: args.deviation_weight,
        value_temperature: (args.targets == TargetsArg::Values).then_some(args.temperature),
        lr: args.lr.unwrap_or(if lora { 2e-4 } else { 1e-3 }),
        batch: args.batch,
        warmup: args.warmup,
        weight_decay: args.weight_decay,
        clip: args.clip,
        seed: args.seed,
        progress: args.progress.shown(),
        ..defaults
    }
}

/// On --resume: the run's options, with the length and evaluation options given.
fn resumed_options(args: &FinetuneArgs, o: &mut TrainOptions) {
    if let Some(e) = args.epochs {
        o.epochs = e;
    }
    if args.steps.is_some() {
        o.steps = args.steps;
    }
    if let Some(k) = args.eval_every {
        o.eval_every = k;
    }
    if let Some(m) = args.eval_records {
        o.eval_records = m;
    }
    if args.curriculum && !o.curriculum {
        eprintln!("finetune: --curriculum ignored: the resumed run trains without it");
    }
    o.progress = args.progress.shown();
}

fn start(args: &FinetuneArgs, device: &Device) -> Result<Trainer> {
    if args.resume && args.out.join(STATE_FILE).is_file() {
        args.progress
            .say(format_args!("finetune: resuming {}", args.out.display()));
        let mut t = Trainer::resume(&args.out, None, device)?;
        resumed_options(args, &mut t.state.options);
        return Ok(t);
    }
    let records = read_records(&args.train)?.all()?;
    let tokenizer = if args.model == "gpt-tiny" {
        let texts: Vec<String> = records
            .iter()
            .flat_map(|r| [r.prompt.clone(), r.completion.clone()])
            .collect();
        Some(TextTokenizer::train_bpe(&texts, args.vocab)?)
    } else {
        None
    };
    let vocab_size = tokenizer.as_ref().map_or(0, TextTokenizer::vocab_size);
    let mut loaded = build(&spec(args, vocab_size)?, tokenizer, args.seed, device)?;
    loaded.task = task_of(&records, &args.train)?;
    loaded.trained_on = Some(TrainingDistribution::of(&records));
    Ok(Trainer::new(loaded, options(args), device)?)
}

/// What the training records teach: whole orders, or one decision each (step records). A
/// file that mixes both is refused, naming the first record of the minority kind.
fn task_of(records: &[Record], path: &Path) -> Result<Task> {
    let Some(first) = records.first() else {
        return Ok(Task::default());
    };
    if let Some(other) = records.iter().find(|r| r.kind() != first.kind()) {
        bail!(
            "{}: record {} is {} but record {} is {}: train on one kind of record",
            path.display(),
            first.id,
            first.kind().name(),
            other.id,
            other.kind().name()
        );
    }
    if let Some(other) = records.iter().find(|r| r.template != first.template) {
        bail!(
            "{}: record {} has template {} but record {} has {}: train on one template",
            path.display(),
            first.id,
            first.template,
            other.id,
            other.template
        );
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
fn load_examples(
    path: &Path,
    trainer: &Trainer,
    deviation: f32,
    temperature: Option<f64>,
) -> Result<(Vec<Example>, Vec<Record>)> {
    let records = read_records(path)?.all()?;
    if temperature.is_some() && !records.iter().any(|r| r.values.is_some()) {
        bail!(
            "--targets values: no record of {} carries values (build it with `dataset build \
             --records steps --targets values`)",
            path.display()
        );
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
        eprintln!(
            "finetune: {}: left out {skipped} of {} records longer than {context} tokens",
            path.display(),
            records.len()
        );
    }
    Ok((ex, records))
}

/// Prints the epochs and evaluation points of this session.
fn report(trainer: &Trainer, done: usize) -> Result<()> {
    for log in &trainer.state.history[done..] {
        let val = log.val_loss.map_or("-".to_string(), |v| format!("{v:.4}"));
        outln!(
            "epoch {:>3}  steps {:>5}  train loss {:.4}  val loss {val}  {:.0} tok/s",
            log.epoch,
            log.steps,
            log.train_loss,
            log.tokens_per_s
        )?;
    }
    for p in &trainer.points {
        outln!("{}", p.line())?;
    }
    Ok(())
}

pub fn run(args: &FinetuneArgs) -> Result<()> {
    let device = schedlm_finetune::device::parse(&args.device)?;
    let mut trainer = start(args, &device)?;
    let weight = trainer.state.options.deviation_weight;
    if !(weight.is_finite() && weight > 0.0) {
        bail!("--deviation-weight {weight}: give a positive weight (1 for the plain loss)");
    }
    let temperature = trainer.state.options.value_temperature;
    if let Some(t) = temperature {
        if !(t.is_finite() && t > 0.0) {
            bail!("--temperature {t}: give a positive temperature (e.g. 0.01)");
        }
        if weight != 1.0 {
            bail!(
                "--targets values spreads each answer over its candidates: drop --deviation-weight"
            );
        }
    }
    let (train, _) = load_examples(&args.train, &trainer, weight, temperature)?;
    let val = match &args.val {
        Some(p) => load_examples(p, &trainer, 1.0, None)?,
        None => (Vec::new(), Vec::new()),
    };
    let held_out = trainer.set_held_out(&val.1)?;
    let tokens: usize = train.iter().map(|e| e.tokens.len()).sum();
    args.progress.say(format_args!(
        "finetune: {} training records ({tokens} tokens), {} validation records, \
         {held_out} answered at each evaluation point",
        train.len(),
        val.0.len()
    ));
    let done = trainer.state.history.len();
    trainer.fit(&train, &val.0, Some(&args.out))?;
    report(&trainer, done)?;
    if args.merge {
        let path = save_merged(&trainer.loaded, &args.out)?;
        args.progress
            .say(format_args!("finetune: wrote {}", path.display()));
    }
    args.progress.say(format_args!(
        "finetune: run saved in {}",
        args.out.display()
    ));
    Ok(())
}
