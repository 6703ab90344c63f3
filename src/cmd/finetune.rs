//! `schedlm finetune`: train a small GPT from scratch, or LoRA adapters on a pretrained model,
//! on a data set's records (see docs/finetune.md). The flags become a
//! [`schedlm_finetune::session::SessionConfig`]; the session does the rest.

use schedlm_dataset::Targets;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use schedlm_finetune::session::{Resumed, Session, SessionConfig};
use schedlm_finetune::{GptConfig, LoraConfig, ModelSpec, TrainOptions};

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
    pub targets: Targets,
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

impl FinetuneArgs {
    /// The session these flags ask for.
    fn session(&self) -> Result<SessionConfig> {
        let gpt = GptConfig {
            vocab_size: 0, // the tokenizer's, once trained on the records
            context: self.context,
            layers: self.layers,
            width: self.width,
            heads: self.heads,
        };
        let lora = LoraConfig {
            rank: self.lora_rank,
            alpha: self.lora_alpha,
            targets: self.lora_targets.clone(),
        };
        let from_scratch = self.model == "gpt-tiny";
        let defaults = TrainOptions::default();
        let options = TrainOptions {
            epochs: self.epochs.unwrap_or(defaults.epochs),
            steps: self.steps,
            eval_every: self.eval_every.unwrap_or(defaults.eval_every),
            eval_records: self.eval_records.unwrap_or(defaults.eval_records),
            curriculum: self.curriculum,
            deviation_weight: self.deviation_weight,
            value_temperature: (self.targets == Targets::Values).then_some(self.temperature),
            lr: self.lr.unwrap_or(if from_scratch { 1e-3 } else { 2e-4 }),
            batch: self.batch,
            warmup: self.warmup,
            weight_decay: self.weight_decay,
            clip: self.clip,
            seed: self.seed,
            progress: self.progress.shown(),
            ..defaults
        };
        Ok(SessionConfig {
            train: self.train.clone(),
            val: self.val.clone(),
            out: self.out.clone(),
            resume: self.resume,
            spec: ModelSpec::parse(&self.model, gpt, lora)?,
            vocab: self.vocab,
            seed: self.seed,
            options,
            resumed: Resumed {
                epochs: self.epochs,
                steps: self.steps,
                eval_every: self.eval_every,
                eval_records: self.eval_records,
                curriculum: self.curriculum,
                progress: self.progress.shown(),
            },
            merge: self.merge,
        })
    }
}

pub fn run(args: &FinetuneArgs) -> Result<()> {
    let config = args.session()?;
    let device = schedlm_finetune::device::parse(&args.device)?;
    let mut session = Session::open(&config, &device)?;
    let say = |line: &str| args.progress.say(format_args!("finetune: {line}"));
    if session.resumed {
        say(&format!("resumed {}", args.out.display()));
    }
    session
        .notes
        .drain(..)
        .for_each(|n| eprintln!("finetune: {n}"));
    say(&session.summary());
    for line in session.fit()? {
        outln!("{line}")?;
    }
    session.notes.drain(..).for_each(|n| say(&n));
    say(&format!("run saved in {}", args.out.display()));
    Ok(())
}
