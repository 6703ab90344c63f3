//! `schedlm bench`: solver speed tables (being written).

use anyhow::Result;
use clap::Args;

#[derive(Debug, Args)]
pub struct BenchArgs {}

pub fn run(_args: &BenchArgs) -> Result<()> {
    Ok(())
}
