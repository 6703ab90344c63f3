//! `schedlm schedule`: order each queue with a priority rule and dispatch it.

use anyhow::{bail, Result};
use clap::Args;
use schedlm_solver::compare::schedule_lines;
use schedlm_solver::rules::Rule;
use std::path::PathBuf;

use crate::args::DispatcherArgs;
use crate::io::{create_output, read_instance_lines, report_skipped, write_jsonl};

#[derive(Debug, Args)]
pub struct ScheduleArgs {
    /// Priority rule that orders each queue (SPEC section 6). `fcfs`: earliest submit first;
    /// `sjf`: shortest walltime; `saf`: smallest walltime x cores; `ljf`: longest walltime;
    /// `wfp3`, `unicep`, `f1`: published scoring rules; `random`: seeded shuffle. Ties go to the
    /// earlier submit, then the earlier queue position.
    #[arg(long, value_enum, default_value = "fcfs")]
    pub policy: Rule,

    #[command(flatten)]
    pub dispatcher: DispatcherArgs,

    /// Seed of the `random` policy; instance k of the file uses stream k of this seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// F1's t_origin in seconds: the first submit of the trace the snapshots come from.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub origin: i64,

    /// JSON Lines file of instances (`-` for standard input).
    pub file: PathBuf,

    #[command(flatten)]
    pub instances: crate::io::InstanceArgs,

    /// Output file: one JSON object per valid instance with `line`, `policy`, `variant`,
    /// `order` (queued ids in dispatch order), `starts`, `ends` and `servers` (id -> value) and
    /// `objectives` (`bsld`, `wait`, `flow`, `makespan`). Standard output when absent or `-`.
    #[arg(visible_alias = "out", long, short = 'o')]
    pub output: Option<PathBuf>,
}

pub fn run(args: &ScheduleArgs) -> Result<()> {
    let variant = args.dispatcher.variant();
    let lines = read_instance_lines(&args.file, args.instances)?;
    let results = schedule_lines(&lines, args.policy, variant, args.seed, args.origin);
    let (records, invalid) = report_skipped(&args.file, &lines, results);
    let mut out = create_output(args.output.as_deref())?;
    write_jsonl(&mut out, &records)?;
    if invalid > 0 {
        bail!(
            "{invalid} of {} instance(s) in {} are invalid and were not scheduled",
            lines.len(),
            args.file.display()
        );
    }
    Ok(())
}
