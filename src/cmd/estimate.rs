//! `schedlm estimate`: score the run-time estimators on SWF traces.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use schedlm_generator::trace::estimate::{
    evaluate_transfer, evaluate_with, score_table, Split, Timeline,
};
use schedlm_generator::trace::swf::{read_swf_with_waits, SwfOptions, Trace};

/// Score the run-time estimators (user walltime, last-2 of the user, regression model) on
/// SWF traces, online and causally: each job is predicted at its submission from the jobs
/// completed by then. Prints the mean and median absolute percentage error and the share of
/// underestimated jobs per estimator (see docs/traces.md).
///
/// Either `--trace FILE [--split 0.5]` (the first half is history, the second is scored), or
/// `--train FILE --test FILE` (the whole first trace is history for the second).
#[derive(Debug, Args)]
pub struct EstimateArgs {
    /// SWF trace (plain or gzipped) to split into history and scored jobs.
    // Not `conflicts_with_all`: a conflict makes clap skip `--split`'s `requires = "trace"`
    // (clap-rs/clap#4520); `run` refuses --trace with --train/--test itself.
    #[arg(long, required_unless_present_all = ["train", "test"])]
    pub trace: Option<PathBuf>,
    /// Fraction of `--trace`'s jobs (in submit order) that are history only, in [0, 1).
    #[arg(long, default_value_t = 0.5, requires = "trace")]
    pub split: f64,
    /// SWF trace whose jobs are all history (with `--test`).
    #[arg(long, requires = "test")]
    pub train: Option<PathBuf>,
    /// SWF trace whose jobs are all scored, after `--train`.
    #[arg(long, requires = "train")]
    pub test: Option<PathBuf>,
    /// Completion times of the replay.
    #[arg(long, value_enum, default_value_t = Timeline::Trace)]
    pub timeline: Timeline,
    /// Skip and count malformed lines instead of stopping at the first one.
    #[arg(long)]
    pub skip_bad_lines: bool,
    /// Print the scores as JSON Lines instead of a table.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub progress: crate::io::ProgressArgs,
}

pub fn run(args: &EstimateArgs) -> Result<()> {
    let options = SwfOptions {
        skip_bad_lines: args.skip_bad_lines,
        ..SwfOptions::default()
    };
    let (title, scores) = match (&args.trace, &args.train, &args.test) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            bail!("give --trace FILE, or --train FILE --test FILE, not both")
        }
        (Some(path), None, None) => {
            let (trace, ends) = load(path, &options, args)?;
            let split = Split::Fraction(args.split);
            let from = split.index(trace.jobs.len())?;
            let scores = evaluate_with(&trace, &ends, split)?;
            let title = format!(
                "{}: jobs {}..{} of {} scored (split {}), timeline {}",
                path.display(),
                from + 1,
                trace.jobs.len(),
                trace.jobs.len(),
                args.split,
                args.timeline.describe()
            );
            (title, scores)
        }
        (None, Some(train), Some(test)) => {
            let (train_trace, train_ends) = load(train, &options, args)?;
            let (test_trace, test_ends) = load(test, &options, args)?;
            let scores = evaluate_transfer(&train_trace, &train_ends, &test_trace, &test_ends)?;
            let title = format!(
                "{} scored after {} as history, timeline {}",
                test.display(),
                train.display(),
                args.timeline.describe()
            );
            (title, scores)
        }
        _ => bail!("give either --trace FILE, or both --train FILE and --test FILE"),
    };
    if args.json {
        for s in &scores {
            outln!("{}", serde_json::to_string(s)?)?;
        }
    } else {
        outln!("{title}")?;
        out!("{}", score_table(&scores))?;
    }
    Ok(())
}

/// Reads a trace, reports its cleaning on stderr, and returns it with its completion times.
fn load(path: &Path, options: &SwfOptions, args: &EstimateArgs) -> Result<(Trace, Vec<i64>)> {
    let start = Instant::now();
    let (trace, waits) = read_swf_with_waits(path, options).context("cannot read the trace")?;
    args.progress.say(format_args!(
        "read {} in {:.2?}:\n{}\n",
        path.display(),
        start.elapsed(),
        trace.report
    ));
    let ends = args.timeline.completions(&trace, &waits);
    Ok((trace, ends))
}
