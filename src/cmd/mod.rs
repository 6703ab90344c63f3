//! One module per subcommand; each turns parsed arguments into library calls.

mod generate;
mod pipeline;
mod schedule;
mod validate;

use anyhow::Result;

use crate::args::{Cli, Command};

/// Runs the subcommand.
pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Pipeline(a) => pipeline::run(&a),
        Command::Generate(a) => generate::run(&a),
        Command::Validate(a) => validate::run(&a),
        Command::Schedule(a) => schedule::run(&a),
    }
}
