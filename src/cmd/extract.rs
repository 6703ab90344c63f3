//! `schedlm extract`: facts about one training job from its directory, launch command and logs.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

use schedlm_knowledge::Cache;

use crate::io::create_output;

#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// The job's working directory: its job scripts (`*.sh`, `*.slurm`, `*.sbatch`, `*.pbs`,
    /// ..., or any file starting with `#!`, up to four folders deep) are read for scheduler
    /// headers (`#SBATCH`, `#PBS`) and launch commands (`torchrun`, `deepspeed`,
    /// `accelerate launch`, `python`), its `*.json`, `*.yaml`, `*.yml` and `*.toml` files for
    /// training settings (DeepSpeed, recipes, accelerate, Hugging Face `config.json`), and its
    /// `*.py` files for literal defaults (`add_argument(..., default=...)`,
    /// `TrainingArguments(...)`, config assignments).
    pub dir: PathBuf,

    /// The command that launched the job, as typed (it wins over the scripts), e.g.
    /// `--cmd "torchrun --nproc_per_node 8 train.py --lr 3e-4"`.
    #[arg(long)]
    pub cmd: Option<String>,

    /// A log of the job (repeatable): progress (tqdm bars, `step k/N`, Megatron and DeepSpeed
    /// lines) and the failure class with its evidence line (`cuda_oom`, `nccl_timeout`,
    /// `nan_loss`, `oom_killed`, `missing_module`, `disk_quota`, `preempted`).
    #[arg(long = "log", value_name = "FILE")]
    pub logs: Vec<PathBuf>,

    /// A cache of per-file facts (JSON), read if it exists and rewritten: files whose content
    /// (SHA-256) is unchanged are not parsed again, a changed file re-derives only its own
    /// facts. Standard error says how many files were parsed and reused. A cache that cannot
    /// be read is reported and rebuilt.
    #[arg(long, value_name = "FILE")]
    pub cache: Option<PathBuf>,

    /// Output file [default: standard output].
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}

/// Writes one JSON object: `dir`, `facts` (field -> `{value, source, confidence, strength,
/// also}`; a field the files do not determine is absent), `read` (the files read) and
/// `skipped` (files left out, with the reason). docs/knowledge.md lists the fields.
pub fn run(args: &ExtractArgs) -> Result<()> {
    let mut cache = match &args.cache {
        Some(path) => load_cache(path),
        None => Cache::default(),
    };
    let extraction =
        schedlm_knowledge::extract_cached(&args.dir, args.cmd.as_deref(), &args.logs, &mut cache)?;
    if let Some(path) = &args.cache {
        save_cache(path, &cache)?;
    }
    let mut out = create_output(args.output.as_deref())?;
    let text = serde_json::to_string(&extraction).context("cannot serialise the facts")?;
    writeln!(out, "{text}").context("cannot write the facts")?;
    for skipped in &extraction.skipped {
        eprintln!(
            "extract: skipped {}/{}: {}",
            args.dir.display(),
            skipped.file,
            skipped.reason
        );
    }
    eprintln!(
        "extract: {} fact(s) from {} file(s){}; {} script(s)/config(s) parsed, {} reused from the cache",
        extraction.facts.iter().count(),
        extraction.read.len(),
        if args.cmd.is_some() { " and the command" } else { "" },
        extraction.parsed,
        extraction.reused,
    );
    Ok(())
}

/// The cache at `path`; an empty one when there is none yet, or (said on standard error) when
/// it cannot be read.
fn load_cache(path: &Path) -> Cache {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Cache::default(),
        Err(e) => {
            eprintln!(
                "extract: cannot read the cache {}: {e}; rebuilding it",
                path.display()
            );
            return Cache::default();
        }
    };
    serde_json::from_str(&text).unwrap_or_else(|e| {
        eprintln!(
            "extract: the cache {} is not valid ({e}); rebuilding it",
            path.display()
        );
        Cache::default()
    })
}

/// Writes the cache through a temporary file and a rename, so a killed run leaves the old one.
fn save_cache(path: &Path, cache: &Cache) -> Result<()> {
    let text = serde_json::to_string(cache).context("cannot serialise the cache")?;
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, text).with_context(|| format!("cannot write the cache {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("cannot write the cache {}", path.display()))
}
