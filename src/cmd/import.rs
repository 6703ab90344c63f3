//! `schedlm import`: instances from other formats.

use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use schedlm_generator::psplib::parse_sm;

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
    let files = expand(&args.inputs, "sm")?;
    if files.is_empty() {
        let first = args.inputs.first().cloned().unwrap_or_default();
        return Err(crate::io::empty_input(&first, "PSPLIB file (.sm)").into());
    }
    let mut instances = Vec::with_capacity(files.len());
    for file in &files {
        let text = schedlm_model::lines::read_bounded(file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let instance = parse_sm(&text).with_context(|| format!("{}", file.display()))?;
        instances.push(instance);
    }
    let mut out = create_output(args.output.as_deref())?;
    write_jsonl(&mut out, &instances)?;
    args.progress.say(format_args!(
        "imported {} PSPLIB instance(s)",
        instances.len()
    ));
    Ok(())
}

/// The files named, with each directory replaced by its files of this extension, by name.
fn expand(inputs: &[PathBuf], extension: &str) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(input)
                .with_context(|| format!("cannot list {}", input.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == extension))
                .collect();
            found.sort_by_key(|a| natural_key(a));
            files.extend(found);
        } else {
            files.push(input.clone());
        }
    }
    Ok(files)
}

/// Sorts `j301_2` before `j301_10`: digit runs compare as numbers.
fn natural_key(path: &Path) -> Vec<(u64, String)> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut key = Vec::new();
    let mut rest = name.as_str();
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits > 0 {
            key.push((rest[..digits].parse().unwrap_or(u64::MAX), String::new()));
            rest = &rest[digits..];
        } else {
            let text = rest
                .find(|c: char| c.is_ascii_digit())
                .unwrap_or(rest.len());
            key.push((0, rest[..text].to_string()));
            rest = &rest[text..];
        }
    }
    key
}
