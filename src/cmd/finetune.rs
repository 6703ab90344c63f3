//! `schedlm finetune`: train a small GPT from scratch, or LoRA adapters on a pretrained model,
//! on a data set's records (see docs/finetune.md).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use schedlm_finetune::data::{examples, read_records};
use schedlm_finetune::model::{build, save_merged, Base, ModelSpec};
use schedlm_finetune::train::STATE_FILE;
use schedlm_finetune::Device;
use schedlm_finetune::{GptConfig, LoraConfig, TextTokenizer, TrainOptions, Trainer};

#[derive(Debug, Args)]
pub struct FinetuneArgs {
    /// Training records (JSON Lines, e.g. DIR/train.jsonl from `schedlm dataset build`).
    #[arg(long)]
    pub train: PathBuf,
    /// Validation records; their answer loss is reported after each epoch.
    #[arg(long)]
    pub val: Option<PathBuf>,
    /// `gpt-tiny` (from scratch), `gguf:PATH` (e.g. SmolLM2-135M-Instruct, see
    /// scripts/fetch-smollm2.sh) or `hf:DIR|ORG/NAME` (Hugging Face layout, offline).
    #[arg(long, default_value = "gpt-tiny")]
    pub model: String,
    /// Run directory: checkpoints after every epoch (model, tokenizer, optimizer, state).
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long, default_value_t = 10)]
    pub epochs: usize,
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
    #[arg(long, default_value_t = 0.01)]
    pub weight_decay: f64,
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
    /// Continue the checkpoint in --out (up to --epochs epochs in all).
    #[arg(long)]
    pub resume: bool,
    /// Also write base and adapters folded together (merged.safetensors) after training.
    #[arg(long)]
    pub merge: bool,
    /// Hide the progress bar.
    #[arg(long)]
    pub quiet: bool,
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
            _ => bail!("--model `{m}`: write gpt-tiny, gguf:PATH or hf:DIR|ORG/NAME"),
        },
    })
}

fn options(args: &FinetuneArgs) -> TrainOptions {
    let lora = args.model != "gpt-tiny";
    TrainOptions {
        epochs: args.epochs,
        lr: args.lr.unwrap_or(if lora { 2e-4 } else { 1e-3 }),
        batch: args.batch,
        warmup: args.warmup,
        weight_decay: args.weight_decay,
        clip: args.clip,
        seed: args.seed,
        progress: !args.quiet,
        ..TrainOptions::default()
    }
}

fn start(args: &FinetuneArgs, device: &Device) -> Result<Trainer> {
    if args.resume && args.out.join(STATE_FILE).is_file() {
        eprintln!("finetune: resuming {}", args.out.display());
        let mut t = Trainer::resume(&args.out, Some(args.epochs), device)?;
        t.state.options.progress = !args.quiet;
        return Ok(t);
    }
    let records = read_records(&args.train)?;
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
    let loaded = build(&spec(args, vocab_size)?, tokenizer, args.seed, device)?;
    Ok(Trainer::new(loaded, options(args), device)?)
}

fn load_examples(path: &Path, trainer: &Trainer) -> Result<Vec<schedlm_finetune::data::Example>> {
    let records = read_records(path).with_context(|| format!("reading {}", path.display()))?;
    let context = trainer.loaded.model.context();
    let (ex, skipped) = examples(&records, &trainer.loaded.tokenizer, context)?;
    if skipped > 0 {
        eprintln!(
            "finetune: {}: left out {skipped} of {} records longer than {context} tokens",
            path.display(),
            records.len()
        );
    }
    Ok(ex)
}

pub fn run(args: &FinetuneArgs) -> Result<()> {
    let device = Device::Cpu;
    let mut trainer = start(args, &device)?;
    let train = load_examples(&args.train, &trainer)?;
    let val = match &args.val {
        Some(p) => load_examples(p, &trainer)?,
        None => Vec::new(),
    };
    let tokens: usize = train.iter().map(|e| e.tokens.len()).sum();
    eprintln!(
        "finetune: {} training records ({tokens} tokens), {} validation records",
        train.len(),
        val.len()
    );
    let done = trainer.state.history.len();
    trainer.fit(&train, &val, Some(&args.out))?;
    for log in &trainer.state.history[done..] {
        let val = log.val_loss.map_or("-".to_string(), |v| format!("{v:.4}"));
        println!(
            "epoch {:>3}  steps {:>5}  train loss {:.4}  val loss {val}  {:.0} tok/s",
            log.epoch, log.steps, log.train_loss, log.tokens_per_s
        );
    }
    if args.merge {
        let path = save_merged(&trainer.loaded, &args.out)?;
        eprintln!("finetune: wrote {}", path.display());
    }
    eprintln!("finetune: run saved in {}", args.out.display());
    Ok(())
}
