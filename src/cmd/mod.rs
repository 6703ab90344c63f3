//! One module per subcommand; each turns parsed arguments into library calls.

pub mod bench;
pub mod bench_train;
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

/// Tells the user that a steps file is read as its instances: `kept` first steps, `left`
/// later steps not answered (nothing is dropped without a word).
pub fn note_later_steps(command: &str, path: &std::path::Path, kept: usize, left: usize) {
    if left > 0 {
        eprintln!(
            "{command}: {} holds step records: answering its {kept} instances (the first step \
             of each), leaving out {left} later steps",
            path.display()
        );
    }
}
