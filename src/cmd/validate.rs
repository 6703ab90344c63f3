//! `schedlm validate`: report every invalid instance with its line number.

use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;

use crate::io::{read_instance_lines, InstanceArgs};

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// JSON Lines file of instances (`-` for standard input).
    pub file: PathBuf,

    #[command(flatten)]
    pub instances: InstanceArgs,
}

pub fn run(args: &ValidateArgs) -> Result<()> {
    let lines = read_instance_lines(&args.file, args.instances)?;
    let mut invalid = 0;
    for line in &lines {
        if let Err(reason) = line.instance() {
            invalid += 1;
            eprintln!("{}:{}: {}", args.file.display(), line.number, reason);
        }
    }
    outln!(
        "{}: {} instances, {} valid, {} invalid",
        args.file.display(),
        lines.len(),
        lines.len() - invalid,
        invalid
    )?;
    if invalid > 0 {
        bail!("{invalid} invalid instance(s) in {}", args.file.display());
    }
    Ok(())
}
