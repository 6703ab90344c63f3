//! `schedlm extract`: facts about one training job from its directory, launch command and logs.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use crate::io::create_output;

#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// The job's working directory: its job scripts (`*.sh`, `*.slurm`, `*.sbatch`, `*.pbs`,
    /// ..., or any file starting with `#!`, up to four folders deep) are read for scheduler
    /// headers (`#SBATCH`, `#PBS`) and launch commands (`torchrun`, `deepspeed`,
    /// `accelerate launch`, `python`).
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

    /// Output file [default: standard output].
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}

/// Writes one JSON object: `dir`, `facts` (field -> `{value, source, confidence, strength,
/// also}`; a field the files do not determine is absent), `read` (the files read) and
/// `skipped` (files left out, with the reason). docs/knowledge.md lists the fields.
pub fn run(args: &ExtractArgs) -> Result<()> {
    let extraction = schedlm_knowledge::extract(&args.dir, args.cmd.as_deref(), &args.logs)?;
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
        "extract: {} fact(s) from {} file(s){}",
        extraction.facts.iter().count(),
        extraction.read.len(),
        if args.cmd.is_some() {
            " and the command"
        } else {
            ""
        }
    );
    Ok(())
}
