//! `schedlm schedule`: order each queue with a priority rule and dispatch it.

use anyhow::{bail, Result};
use clap::Args;
use rayon::prelude::*;
use schedlm_model::{Objectives, Problem, Schedule, Variant};
use schedlm_solver::compare::schedule_with;
use schedlm_solver::rules::{Rule, RuleContext};
use serde::Serialize;
use serde_json::{Map, Value};
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

/// One line of `schedule` output.
#[derive(Debug, Serialize)]
pub struct ScheduleRecord {
    pub line: usize,
    pub policy: &'static str,
    pub variant: &'static str,
    pub order: Vec<String>,
    pub starts: Map<String, Value>,
    pub ends: Map<String, Value>,
    pub servers: Map<String, Value>,
    pub objectives: Objectives,
}

pub fn run(args: &ScheduleArgs) -> Result<()> {
    let variant = args.dispatcher.variant();
    let lines = read_instance_lines(&args.file, args.instances)?;
    let results: Vec<Result<ScheduleRecord, String>> = lines
        .par_iter()
        .enumerate()
        .map(|(k, line)| {
            let (_, problem) = line.instance()?;
            let ctx = RuleContext {
                origin: args.origin,
                seed: args.seed,
                stream: k as u64,
            };
            let schedule = schedule_with(args.policy, &problem, variant, &ctx);
            Ok(record(
                line.number,
                args.policy,
                variant,
                &problem,
                &schedule,
            ))
        })
        .collect();
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

fn record(
    line: usize,
    rule: Rule,
    variant: Variant,
    problem: &Problem,
    schedule: &Schedule,
) -> ScheduleRecord {
    let id = |j: usize| problem.job_id(j).to_string();
    let per_job = |f: &dyn Fn(usize) -> Value| -> Map<String, Value> {
        (0..problem.jobs()).map(|j| (id(j), f(j))).collect()
    };
    ScheduleRecord {
        line,
        policy: rule.name(),
        variant: variant.name(),
        order: schedule.order.iter().map(|&j| id(j)).collect(),
        starts: per_job(&|j| schedule.start[j].into()),
        ends: per_job(&|j| schedule.end(problem, j).into()),
        servers: per_job(&|j| problem.server_id(schedule.server[j]).into()),
        objectives: Objectives::of(problem, &schedule.start),
    }
}
