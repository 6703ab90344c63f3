//! `schedlm submit fill`: job facts at submission (issue #36, docs/slurm.md). Reads a job's
//! directory as `schedlm extract` does and fills what the submission leaves out: the time limit
//! from the history's prediction (`history predict`, times a margin, capped), and the GPU count
//! and batch size per GPU from past runs of the job's model (`advise fill`). It prints one JSON
//! object for the Slurm plugin `slurm/job_submit.lua`, which applies it and writes the comment
//! into the job; anything it cannot do is said in `notes`, never guessed.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, Subcommand};
use schedlm_history::advice::{advise, read_runs, Knowledge, Request};
use schedlm_history::deployed::TimeFill;
use schedlm_history::history::HistoryError;
use schedlm_knowledge::facts::Field;
use serde::Serialize;

#[derive(Debug, Subcommand)]
pub enum SubmitCommand {
    /// Fill a submitted job's time limit (from the history) and GPU count and batch size (from
    /// past runs of its model), and print them as one JSON object: `time_limit_min`, `gpus`,
    /// `batch_per_gpu` (each null when not filled), `comment` (what was filled and from what,
    /// for the job's comment) and `notes` (what could not be filled, and why). Used by the
    /// Slurm job_submit plugin `slurm/job_submit.lua` (docs/slurm.md).
    Fill(FillArgs),
}

#[derive(Debug, Args)]
pub struct FillArgs {
    /// The job's working directory, read as `schedlm extract DIR` reads it (its script,
    /// configs; nothing outside it).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,

    /// The job history (SQLite, `schedlm history add`) the time limit is predicted from.
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,

    /// Past runs (`model,nodes,gpus,local_batch,step_time_s,outcome`, as `advise fill` reads
    /// them) the GPU count and batch size are filled from; without it they are not filled.
    #[arg(long, value_name = "FILE")]
    pub runs: Option<PathBuf>,

    /// The time limit is the prediction times this margin (a job killed at its limit loses
    /// its work; the history's prediction errs both ways, docs/knowledge.md).
    #[arg(long, default_value_t = 1.5)]
    pub margin: f64,

    /// The longest time limit filled in.
    #[arg(long, default_value = "7d", value_parser = humantime::parse_duration)]
    pub max_time: Duration,

    /// The submission already has a time limit: leave it.
    #[arg(long)]
    pub has_time: bool,

    /// The submission already requests GPUs: leave them (and the batch size).
    #[arg(long)]
    pub has_gpus: bool,

    /// GPUs per node of the cluster (a filled GPU count never exceeds it).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    pub gpus_per_node: u32,
}

/// What `submit fill` prints.
#[derive(Debug, Default, Serialize)]
pub struct Filled {
    /// The time limit to set, minutes.
    pub time_limit_min: Option<u64>,
    /// GPUs per node to request.
    pub gpus: Option<u32>,
    /// Samples per GPU per step (for the job to read from its comment).
    pub batch_per_gpu: Option<u32>,
    /// What was filled and from what, for the job's comment (empty when nothing was).
    pub comment: String,
    /// What could not be filled, and why.
    pub notes: Vec<String>,
}

pub fn run(command: &SubmitCommand) -> Result<()> {
    match command {
        SubmitCommand::Fill(args) => {
            let filled = fill(args)?;
            outln!("{}", serde_json::to_string(&filled)?)?;
            Ok(())
        }
    }
}

/// Fills what `args` says the submission leaves out.
pub fn fill(args: &FillArgs) -> Result<Filled> {
    let time_fill = TimeFill::new(args.margin, i64::try_from(args.max_time.as_secs())?)?;
    let extraction = schedlm_knowledge::extract(&args.dir, None, &[])?;
    let facts = &extraction.facts;
    let mut filled = Filled::default();
    let mut said = Vec::new();
    if !args.has_time {
        let past = crate::cmd::history::open_existing(&args.db)?.jobs()?;
        match time_fill.fill(&past, facts) {
            Ok(f) => {
                filled.time_limit_min = Some(f.minutes);
                let p = &f.prediction;
                let nearest = p.matches.first().map_or("", |m| m.name.as_str());
                said.push(format!(
                    "time {} = {} x {} s predicted ({}; nearest past job {nearest}){}",
                    clock(f.minutes * 60),
                    args.margin,
                    p.seconds,
                    p.basis,
                    if f.capped { ", capped" } else { "" }
                ));
            }
            Err(HistoryError::Nothing) => filled
                .notes
                .push("time: no completed past job to predict from".into()),
            Err(e) => filled.notes.push(format!("time: {e}")),
        }
    }
    if !args.has_gpus {
        fill_gpus(args, facts, &mut filled, &mut said)?;
    }
    if !said.is_empty() {
        filled.comment = format!("schedlm filled: {}", said.join("; "));
    }
    Ok(filled)
}

/// The GPU count and batch size per GPU of the fastest configuration of the job's model among
/// the past runs (no queue waits are known at submission: every count is taken as free now).
fn fill_gpus(
    args: &FillArgs,
    facts: &schedlm_knowledge::JobFacts,
    filled: &mut Filled,
    said: &mut Vec<String>,
) -> Result<()> {
    let Some(runs) = &args.runs else {
        filled.notes.push("gpus: no --runs given".into());
        return Ok(());
    };
    let Some(model) = facts.value(Field::Model).and_then(|v| v.as_str()) else {
        filled
            .notes
            .push("gpus: the job's files do not name its model".into());
        return Ok(());
    };
    let knowledge = Knowledge::new(read_runs(runs)?);
    let counts = [1u32, 2, 4, 8, 16, 32];
    let request = Request {
        model: model.to_string(),
        // The choice among configurations does not depend on the amount of work when no
        // configuration waits: any positive amount gives the same one.
        samples: 1e6,
        gpus: None,
        local_batch: None,
        gpus_per_node: args.gpus_per_node,
        waits: counts
            .into_iter()
            .filter(|&g| g <= args.gpus_per_node)
            .map(|g| (g, 0.0))
            .collect(),
    };
    match advise(&knowledge, &request) {
        Ok(candidates) => {
            let best = &candidates[0];
            filled.gpus = Some(best.gpus);
            filled.batch_per_gpu = Some(best.local_batch);
            said.push(format!(
                "gpus {}, batch {} per GPU (the fastest of the past runs of {model} that fit)",
                best.gpus, best.local_batch
            ));
        }
        Err(e) => filled.notes.push(format!("gpus: {e}")),
    }
    Ok(())
}

/// Seconds as `H:MM:SS`.
fn clock(seconds: u64) -> String {
    format!(
        "{}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}
