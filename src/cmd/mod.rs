//! The command line: [`Cli`] and its [`Command`]s, one module per subcommand holding its
//! arguments and turning them into library calls.

pub mod advise;
pub mod bench;
pub mod bench_train;
pub mod dataset;
pub mod estimate;
pub mod eval;
mod extract;
pub mod finetune;
pub mod generate;
pub mod history;
mod import;
mod pipeline;
pub mod predict;
pub mod replay;
pub mod rl;
mod schedule;
mod shell_docs;
mod solve;
mod submit;
mod validate;
mod version;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// Teach language models to schedule jobs on compute clusters, and measure how well they do.
///
/// schedlm samples cluster snapshots (a data center's servers, running jobs and queue),
/// orders their queues with priority rules and solvers, and turns solved snapshots into
/// fine-tuning data. Instances are JSON Lines, one snapshot per line, in the format of
/// SPEC section 1 (see docs/design.md). All times are integer seconds.
#[derive(Debug, Parser)]
#[command(
    name = "schedlm",
    version,
    long_version = version::LONG_VERSION,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the main job end to end on embedded defaults: generate snapshots of every family,
    /// schedule them with every priority rule and print a comparison table with the proven
    /// optimum; then build a small dataset, train a tiny GPT on it, and evaluate rules, local
    /// search, the optimum and the model on its test split, ending with a report.
    Pipeline(pipeline::PipelineArgs),
    /// Sample seeded cluster snapshots and write them as JSON Lines.
    Generate(generate::GenerateArgs),
    /// Check every instance of a JSON Lines file and report each invalid one with its line.
    Validate(validate::ValidateArgs),
    /// Order each instance's queue with a priority rule and dispatch it into a schedule.
    Schedule(schedule::ScheduleArgs),
    /// Find the best queue order of each instance, with a proof of optimality or a bound.
    Solve(solve::SolveArgs),
    /// Convert instances from other formats (PSPLIB) into schedlm instances.
    #[command(subcommand)]
    Import(import::ImportCommand),
    /// Replay an SWF trace online with a priority rule and a start rule (SPEC section 5).
    Replay(replay::ReplayArgs),
    /// Estimate job run times from history and report each estimator's error.
    Estimate(estimate::EstimateArgs),
    /// Measure solver speed on generated instances and print a table (see docs/benchmarks.md).
    Bench(bench::BenchArgs),
    /// Train a small GPT from scratch, or LoRA adapters on a pretrained model, on records.
    Finetune(finetune::FinetuneArgs),
    /// Answer records with a trained model (greedy, constrained to valid orders by default).
    Predict(predict::PredictArgs),
    /// Sharpen a trained model by reinforcement learning with the dispatcher as the reward
    /// (GRPO-style: sampled answers, group-relative advantages, a KL penalty).
    Rl(rl::RlArgs),
    /// Build fine-tuning datasets of solved snapshots, merge shards and print statistics.
    #[command(subcommand)]
    Dataset(dataset::DatasetCommand),
    /// Evaluate policies (rules, local search, the exact solver, language models) against
    /// the optimum and each other, and write a report with plots.
    Eval(eval::EvalArgs),
    /// Read facts about one training job (GPUs, nodes, model, batch size, steps, learning
    /// rate, progress, failure class) from its scripts, launch command and logs, each with the
    /// file and line it came from (docs/knowledge.md).
    Extract(extract::ExtractArgs),
    /// Keep past training jobs (their facts, requested and actual run times, outcome) in an
    /// SQLite file, find the most similar past jobs of a new one and predict its duration
    /// (docs/knowledge.md).
    #[command(subcommand)]
    History(history::HistoryCommand),
    /// Fill a training job's GPU count and batch size from past runs (which configurations fit
    /// in memory, how fast each runs) with the one that finishes first, queue wait included;
    /// score the throughput predictions on held-out runs (docs/knowledge.md).
    #[command(subcommand)]
    Advise(advise::AdviseCommand),
    /// Fill what a submitted job leaves out (time limit, GPUs, batch size) from the job
    /// history and past runs, for the Slurm job_submit plugin slurm/job_submit.lua
    /// (docs/slurm.md).
    #[command(subcommand)]
    Submit(submit::SubmitCommand),
    /// Print what was built: version, commit, build date, features (milp, cuda) and the
    /// versions of HiGHS and candle (`--json` for one JSON object).
    Version(version::VersionArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(shell_docs::CompletionsArgs),
    /// Print the manual page, or write one page per subcommand into a directory.
    Man(shell_docs::ManArgs),
}

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
        Command::Rl(a) => rl::run(&a),
        Command::Import(import::ImportCommand::Psplib(a)) => import::psplib(&a),
        Command::Extract(a) => extract::run(&a),
        Command::History(a) => history::run(&a),
        Command::Advise(a) => advise::run(&a),
        Command::Version(a) => version::run(&a),
        Command::Submit(a) => submit::run(&a),
        Command::Completions(a) => shell_docs::completions(&a),
        Command::Man(a) => shell_docs::man(&a),
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

#[cfg(test)]
mod tests;
