//! `schedlm import`: instances from other formats.

use clap::{Args, Subcommand};
use std::path::PathBuf;

use anyhow::Result;
use schedlm_generator::psplib::import_files;

use crate::io::{create_output, write_jsonl};

#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// PSPLIB single-mode RCPSP files (`.sm`, e.g. the j30 set) as one-server instances: one
    /// server "pool" with the renewable capacities R1..R4, every non-dummy activity queued at
    /// now = 0 with submit 0, walltime = duration, demand = requests and deps = predecessors.
    /// The dummy source and sink (duration 0) are dropped, their precedences passed through.
    /// Solve with `--objective makespan` to compare with published optima.
    Psplib(ImportPsplibArgs),
}

#[derive(Debug, Args)]
pub struct ImportPsplibArgs {
    /// `.sm` files, or directories whose `.sm` files are read in name order.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,

    /// Output file (JSON Lines, one instance per input file, in input order); standard output
    /// when absent or `-`.
    #[arg(visible_alias = "out", long, short = 'o')]
    pub output: Option<PathBuf>,

    #[command(flatten)]
    pub progress: crate::io::ProgressArgs,
}

pub fn psplib(args: &ImportPsplibArgs) -> Result<()> {
    let instances = import_files(&args.inputs)?;
    let mut out = create_output(args.output.as_deref())?;
    write_jsonl(&mut out, &instances)?;
    let n = instances.len();
    args.progress
        .say(format_args!("imported {n} PSPLIB instance(s)"));
    Ok(())
}
