//! `schedlm submit fill`: job facts at submission (docs/slurm.md), for the Slurm plugin
//! `slurm/job_submit.lua`, which applies the answer and writes the comment into the job. The
//! fill itself is [`schedlm_history::submit`]; this module reads its flags and prints it.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use schedlm_history::filter_conf::FilterConf;
use schedlm_history::submit::{fill, Submission};
use schedlm_knowledge::user_dir::{self, Reader, Submitter};

#[derive(Debug, Subcommand)]
pub enum SubmitCommand {
    /// Fill a submitted job's time limit (from the history) and GPU count and batch size (from
    /// past runs of its model), and print them as one JSON object: `time_limit_min`, `gpus`,
    /// `batch_per_gpu` (each null when not filled), `comment` (what was filled and from what,
    /// for the job's comment), `notes` (what could not be filled, and why) and `unchanged`
    /// (null, or why the job is to be left as submitted: timeout, lock). Used by the Slurm
    /// job_submit plugin `slurm/job_submit.lua` (docs/slurm.md).
    Fill(FillArgs),
    /// (Internal: the directory reader `submit fill` starts with the submitter's rights.)
    #[command(hide = true)]
    ReadDir(ReadDirArgs),
}

#[derive(Debug, Args)]
pub struct FillArgs {
    /// The job's working directory. Read only with the submitting user's rights (`--uid`; as
    /// root, by a child process that has dropped to them), at most 256 entries, 3 levels,
    /// regular files of at most 256 KiB and 2 MiB in all, no link followed.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// The job script as Slurm passes it (the job_submit plugin's `job_desc.script`, written
    /// to a file): read first, at most 1 MiB.
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,

    /// The submitting user: the directory is read with this uid's rights (and its groups).
    #[arg(long, value_name = "UID")]
    pub uid: Option<u32>,

    /// The submission's group (the primary group of the reader when the user belongs to it).
    #[arg(long, value_name = "GID", requires = "uid")]
    pub gid: Option<u32>,

    /// The filter's settings file (`schedlm-submit.conf`, `key = value` lines: db, runs,
    /// margin, max_time, budget_ms, gpus_per_node; docs/slurm.md), what the plugin passes. A
    /// flag given here wins over the file; a bad line or an unknown key is an error.
    #[arg(long, value_name = "FILE")]
    pub conf: Option<PathBuf>,

    /// The job history (SQLite, `schedlm history add`) the time limit is predicted from. Read
    /// only, through its index; a history locked by a writer leaves the job unchanged at once.
    /// Needed here or as `db` in --conf.
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,

    /// Past runs (`model,nodes,gpus,local_batch,step_time_s,outcome`, as `advise fill` reads
    /// them) the GPU count and batch size are filled from; without it they are not filled.
    #[arg(long, value_name = "FILE")]
    pub runs: Option<PathBuf>,

    /// The time limit is the prediction times this margin (a job killed at its limit loses
    /// its work; the history's prediction errs both ways, docs/knowledge.md) [default: 1.5].
    #[arg(long)]
    pub margin: Option<f64>,

    /// The longest time limit filled in [default: 7d].
    #[arg(long, value_parser = humantime::parse_duration)]
    pub max_time: Option<Duration>,

    /// The submission already has a time limit: leave it.
    #[arg(long)]
    pub has_time: bool,

    /// The submission already requests GPUs: leave them (and the batch size).
    #[arg(long)]
    pub has_gpus: bool,

    /// GPUs per node of the cluster (a filled GPU count never exceeds it) [default: 8].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub gpus_per_node: Option<u32>,

    /// The whole fill's budget, milliseconds: half of it for the directory, the rest for the
    /// history; past it the job is left unchanged (`unchanged`: timeout) [default: 100].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub budget_ms: Option<u64>,

    /// How the answer is printed: `json` (one object) or `lines` (`format<TAB>schedlm-fill-1`,
    /// then one `key<TAB>value` line per field that is set and a `note` line per note, tabs
    /// and line breaks in values made spaces: what the plugin reads).
    #[arg(long, value_enum, default_value = "json")]
    pub output: FillOutput,
}

/// How `submit fill` prints its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FillOutput {
    /// One JSON object.
    Json,
    /// `key<TAB>value` lines.
    Lines,
}

impl FillArgs {
    /// The fill's settings: each flag, else its line in --conf, else its default.
    fn settings(&self) -> Result<FilterConf> {
        let flags = FilterConf {
            db: self.db.clone(),
            runs: self.runs.clone(),
            margin: self.margin,
            max_time: self.max_time,
            budget_ms: self.budget_ms,
            gpus_per_node: self.gpus_per_node,
            ..FilterConf::default()
        };
        let s = FilterConf::resolve(self.conf.as_deref(), flags)?;
        s.db()?;
        Ok(s)
    }
}

#[derive(Debug, Args)]
pub struct ReadDirArgs {
    /// The directory.
    #[arg(long)]
    pub dir: PathBuf,
    /// Time left, milliseconds.
    #[arg(long)]
    pub time_ms: u64,
}

pub fn run(command: &SubmitCommand) -> Result<()> {
    match command {
        SubmitCommand::Fill(args) => {
            let job = Submission {
                script: args.script.clone(),
                dir: args.dir.clone(),
                who: args.uid.map(|uid| Submitter { uid, gid: args.gid }),
                has_time: args.has_time,
                has_gpus: args.has_gpus,
            };
            let reader = Reader {
                program: std::env::current_exe().context("cannot find schedlm's own executable")?,
                args: vec!["submit".into(), "read-dir".into()],
            };
            let filled = fill(&job, &args.settings()?, &reader)?;
            match args.output {
                FillOutput::Json => outln!("{}", serde_json::to_string(&filled)?),
                FillOutput::Lines => outln!("{}", filled.lines()),
            }
        }
        SubmitCommand::ReadDir(args) => {
            user_dir::serve(&args.dir, args.time_ms, &mut std::io::stdout().lock())?;
            Ok(())
        }
    }
}
