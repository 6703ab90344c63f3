//! `schedlm submit fill`: job facts at submission (docs/slurm.md). Reads the job
//! script Slurm passes and, with the submitting user's rights only, a bounded part of the
//! job's directory ([`schedlm_knowledge::user_dir`]), extracts the job's facts from them as `schedlm
//! extract` does, and fills what the submission leaves out, within a fixed budget: the time limit
//! from the history's prediction (`history predict`, times a margin, capped), and the GPU count
//! and batch size per GPU from past runs of the job's model (`advise fill`). It prints one JSON
//! object for the Slurm plugin `slurm/job_submit.lua`, which applies it and writes the comment
//! into the job; anything it cannot do is said in `notes`, never guessed.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use schedlm_history::advice::{advise, read_runs, Knowledge, Request};
use schedlm_history::deployed::TimeFill;
use schedlm_history::filter_conf::FilterConf;
use schedlm_history::history::{History, HistoryError};
use schedlm_knowledge::facts::Field;
use serde::Serialize;

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
    /// Why the job is to be left as submitted (nothing else is then filled): the budget ran
    /// out (`timeout: ...`) or the history is locked (`lock: ...`).
    pub unchanged: Option<String>,
}

/// The first line of `--output lines`, `format<TAB>` this: a reader that finds another (or
/// none) has not been given an answer.
const LINES_FORMAT: &str = "schedlm-fill-1";

impl Filled {
    /// The answer as `key<TAB>value` lines (`--output lines`).
    fn lines(&self) -> String {
        let plain = |v: &str| v.replace(['\t', '\n', '\r'], " ");
        let mut out = Vec::new();
        let mut line = |key: &str, value: String| out.push(format!("{key}\t{}", plain(&value)));
        line("format", LINES_FORMAT.into());
        if let Some(cause) = &self.unchanged {
            line("unchanged", cause.clone());
        }
        if let Some(m) = self.time_limit_min {
            line("time_limit_min", m.to_string());
        }
        if let Some(g) = self.gpus {
            line("gpus", g.to_string());
        }
        if let Some(b) = self.batch_per_gpu {
            line("batch_per_gpu", b.to_string());
        }
        if !self.comment.is_empty() {
            line("comment", self.comment.clone());
        }
        for note in &self.notes {
            line("note", note.clone());
        }
        out.join("\n")
    }
}

pub fn run(command: &SubmitCommand) -> Result<()> {
    match command {
        SubmitCommand::Fill(args) => {
            let filled = fill(args)?;
            match args.output {
                FillOutput::Json => outln!("{}", serde_json::to_string(&filled)?)?,
                FillOutput::Lines => outln!("{}", filled.lines())?,
            }
            Ok(())
        }
        SubmitCommand::ReadDir(args) => {
            user_dir::serve(&args.dir, args.time_ms, &mut std::io::stdout().lock())?;
            Ok(())
        }
    }
}

/// The largest job script read.
const MAX_SCRIPT_BYTES: u64 = 1 << 20;

/// The name the job script gets among the directory's files when none of them holds it.
const SCRIPT_NAME: &str = "sbatch-script.sh";

/// The job left as submitted, for `cause`.
fn unchanged(cause: String) -> Filled {
    Filled {
        unchanged: Some(cause),
        ..Filled::default()
    }
}

/// Fills what `args` says the submission leaves out.
pub fn fill(args: &FillArgs) -> Result<Filled> {
    let started = Instant::now();
    let s = args.settings()?;
    let budget = Duration::from_millis(s.budget_ms());
    let deadline = started + budget;
    let time_fill = TimeFill::new(s.margin(), i64::try_from(s.max_time().as_secs())?)?;
    let db = s.db()?;
    if !args.has_time && !db.exists() {
        bail!(
            "{}: no such history (`schedlm history add` creates it)",
            db.display()
        );
    }
    let mut filled = Filled::default();
    let job = tempfile::Builder::new()
        .prefix("schedlm-submit-")
        .tempdir()
        .context("cannot make a private folder for the job's files")?;
    let script = match &args.script {
        Some(path) => read_script(path, &mut filled.notes)?,
        None => None,
    };
    if let Some(dir) = &args.dir {
        let who = args.uid.map(|uid| Submitter { uid, gid: args.gid });
        let reader = Reader {
            program: std::env::current_exe().context("cannot find schedlm's own executable")?,
            args: vec!["submit".into(), "read-dir".into()],
        };
        let walk = user_dir::read_as(dir, who, started + budget / 2, &reader)?;
        if let Some(refused) = &walk.refused {
            filled.notes.push(format!("dir: not read: {refused}"));
        }
        filled.notes.extend(walk.summary());
        user_dir::materialise(&walk, job.path())?;
        let known = walk.files.iter().any(|(rel, b)| {
            Some(b) == script.as_ref() && schedlm_knowledge::extract::reads(Path::new(rel), b)
        });
        if let (Some(script), false) = (&script, known) {
            write_script(job.path(), script)?;
        }
    } else if let Some(script) = &script {
        write_script(job.path(), script)?;
    }
    if Instant::now() >= deadline {
        return Ok(unchanged(timeout(&s, "reading the job")));
    }
    // The extractor runs beside this thread, which waits for it until the deadline only (a
    // script made to be slow to interpret does not hold the submission).
    let (send, receive) = std::sync::mpsc::channel();
    let folder = job.path().to_path_buf();
    std::thread::spawn(move || {
        let _ = send.send(schedlm_knowledge::extract(&folder, None, &[]));
    });
    let Ok(extraction) = receive.recv_timeout(deadline.saturating_duration_since(Instant::now()))
    else {
        return Ok(unchanged(timeout(&s, "extracting the job's facts")));
    };
    let extraction = extraction?;
    let facts = &extraction.facts;
    let mut said = Vec::new();
    if !args.has_time {
        let time = History::open_for_lookup(db, Some(deadline))
            .and_then(|history| time_fill.fill_indexed(&history, facts));
        match time {
            Ok(f) => {
                filled.time_limit_min = Some(f.minutes);
                let p = &f.prediction;
                let nearest = p.matches.first().map_or("", |m| m.name.as_str());
                said.push(format!(
                    "time {} = {} x {} s predicted ({}; nearest past job {nearest}){}",
                    clock(f.minutes * 60),
                    s.margin(),
                    p.seconds,
                    p.basis,
                    if f.capped { ", capped" } else { "" }
                ));
            }
            Err(HistoryError::Busy { path }) => {
                return Ok(unchanged(format!(
                    "lock: the history {path} is locked by a writer (not waited for)"
                )))
            }
            Err(HistoryError::Deadline { .. }) => {
                return Ok(unchanged(timeout(&s, "looking up the history")))
            }
            Err(HistoryError::Nothing) => filled
                .notes
                .push("time: no completed past job to predict from".into()),
            Err(e) => filled.notes.push(format!("time: {e}")),
        }
    }
    if !args.has_gpus {
        fill_gpus(&s, facts, &mut filled, &mut said)?;
    }
    if Instant::now() >= deadline {
        return Ok(unchanged(timeout(&s, "filling")));
    }
    if !said.is_empty() {
        filled.comment = format!("schedlm filled: {}", said.join("; "));
    }
    Ok(filled)
}

/// The cause of a job left unchanged at the budget, in `stage`.
fn timeout(s: &FilterConf, stage: &str) -> String {
    format!(
        "timeout: the filter's budget of {} ms ran out while {stage}",
        s.budget_ms()
    )
}

/// The job script at `path` (at most [`MAX_SCRIPT_BYTES`]; a longer one is not read, and
/// said so).
fn read_script(path: &Path, notes: &mut Vec<String>) -> Result<Option<Vec<u8>>> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read the job script {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_SCRIPT_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read the job script {}", path.display()))?;
    if bytes.len() as u64 > MAX_SCRIPT_BYTES {
        notes.push("script: not read: size: over 1 MiB".into());
        return Ok(None);
    }
    Ok(Some(bytes))
}

/// Writes the job script into the job's private folder.
fn write_script(into: &Path, script: &[u8]) -> Result<()> {
    let path = into.join(SCRIPT_NAME);
    std::fs::write(&path, script).with_context(|| format!("cannot write {}", path.display()))
}

/// The GPU count and batch size per GPU of the fastest configuration of the job's model among
/// the past runs (no queue waits are known at submission: every count is taken as free now).
fn fill_gpus(
    args: &FilterConf,
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
        gpus_per_node: args.gpus_per_node(),
        waits: counts
            .into_iter()
            .filter(|&g| g <= args.gpus_per_node())
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
