//! One module per subcommand; each turns parsed arguments into library calls.

pub mod bench;
pub mod dataset;
pub mod estimate;
pub mod eval;
pub mod finetune;
pub mod generate;
mod import;
mod pipeline;
pub mod predict;
pub mod replay;
mod schedule;
mod solve;
mod validate;

use anyhow::Result;

use crate::args::{Cli, Command, ImportCommand};

/// Runs the subcommand.
pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Pipeline(a) => pipeline::run(&a),
        Command::Generate(a) => generate::run(&a),
        Command::Validate(a) => validate::run(&a),
        Command::Schedule(a) => schedule::run(&a),
        Command::Solve(a) => solve::run(&a),
        Command::Bench(a) => bench::run(&a),
        Command::Dataset(a) => dataset::run(&a),
        Command::Eval(a) => eval::run(&a),
        Command::Replay(a) => replay::run(&a),
        Command::Estimate(a) => estimate::run(&a),
        Command::Finetune(a) => finetune::run(&a),
        Command::Predict(a) => predict::run(&a),
        Command::Import(ImportCommand::Psplib(a)) => import::psplib(&a),
    }
}
