//! The fill of a job at submission (`schedlm submit fill`, run by the Slurm filter): reads the
//! job script and, with the submitting user's rights only, a bounded part of the job's
//! directory ([`schedlm_knowledge::user_dir`]), extracts the job's facts as `schedlm extract`
//! does, and fills what the submission leaves out within a fixed budget: the time limit from
//! the history's prediction ([`crate::deployed::TimeFill`]), and the GPU count and batch size
//! per GPU from past runs of the job's model ([`crate::advice`]). Anything it cannot do is said
//! in [`Filled::notes`], never guessed; a budget that runs out leaves the job unchanged.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use schedlm_knowledge::facts::Field;
use schedlm_knowledge::user_dir::{self, Reader, Submitter, UserDirError};
use schedlm_knowledge::{ExtractError, JobFacts};
use serde::Serialize;

use crate::advice::{advise, read_runs, AdviceError, Knowledge, Request};
use crate::deployed::{DeployedError, TimeFill};
use crate::filter_conf::{ConfError, FilterConf};
use crate::history::{History, HistoryError};

/// Why a fill cannot answer at all (what it cannot fill is a note instead).
#[derive(Debug, thiserror::Error)]
pub enum FillError {
    /// The settings are wrong.
    #[error(transparent)]
    Conf(#[from] ConfError),
    /// The longest time limit does not fit in seconds.
    #[error("max_time of {0} s is too long")]
    MaxTime(u64),
    /// The margin or the cap is out of range.
    #[error(transparent)]
    Deployed(#[from] DeployedError),
    /// The history file is not there.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// A file of the fill could not be read or written.
    #[error("{what} {path}: {error}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// The job's directory could not be read.
    #[error(transparent)]
    UserDir(#[from] UserDirError),
    /// The extractor failed.
    #[error(transparent)]
    Extract(#[from] ExtractError),
    /// The past runs could not be read.
    #[error(transparent)]
    Advice(#[from] AdviceError),
}

/// What the submission gives the fill.
#[derive(Debug, Clone)]
pub struct Submission {
    /// The job script Slurm passes.
    pub script: Option<PathBuf>,
    /// The job's directory.
    pub dir: Option<PathBuf>,
    /// Who submitted it (the directory is read with their rights).
    pub who: Option<Submitter>,
    /// The submission states a time limit (none is filled).
    pub has_time: bool,
    /// The submission states its GPUs (none are filled).
    pub has_gpus: bool,
}

/// What the fill answers.
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

/// The first line of [`Filled::lines`], `format<TAB>` this: a reader that finds another (or
/// none) has not been given an answer.
pub const LINES_FORMAT: &str = "schedlm-fill-1";

/// The largest job script read.
const MAX_SCRIPT_BYTES: u64 = 1 << 20;

/// The name the job script gets among the directory's files when none of them holds it.
const SCRIPT_NAME: &str = "sbatch-script.sh";

impl Filled {
    /// The answer as `key<TAB>value` lines, tabs and line breaks in values made spaces.
    pub fn lines(&self) -> String {
        let plain = |v: &str| v.replace(['\t', '\n', '\r'], " ");
        let mut out = Vec::new();
        let mut line = |key: &str, value: String| out.push(format!("{key}\t{}", plain(&value)));
        line("format", LINES_FORMAT.into());
        let numbers = [
            ("time_limit_min", self.time_limit_min),
            ("gpus", self.gpus.map(u64::from)),
            ("batch_per_gpu", self.batch_per_gpu.map(u64::from)),
        ];
        if let Some(cause) = &self.unchanged {
            line("unchanged", cause.clone());
        }
        for (key, value) in numbers {
            if let Some(v) = value {
                line(key, v.to_string());
            }
        }
        if !self.comment.is_empty() {
            line("comment", self.comment.clone());
        }
        for note in &self.notes {
            line("note", note.clone());
        }
        out.join("\n")
    }

    /// The job left as submitted, for `cause`.
    fn unchanged(cause: String) -> Filled {
        Filled {
            unchanged: Some(cause),
            ..Filled::default()
        }
    }
}

/// Fills what `job` leaves out under the settings `s` (whose `db` must be given); `reader`
/// reads the job's directory as another user.
pub fn fill(job: &Submission, s: &FilterConf, reader: &Reader) -> Result<Filled, FillError> {
    let started = Instant::now();
    let budget = Duration::from_millis(s.budget_ms());
    let deadline = started + budget;
    let max_time_s = i64::try_from(s.max_time().as_secs())
        .map_err(|_| FillError::MaxTime(s.max_time().as_secs()))?;
    let time_fill = TimeFill::new(s.margin(), max_time_s)?;
    let db = s.db()?;
    if !job.has_time && !db.exists() {
        return Err(HistoryError::Missing(db.to_path_buf()).into());
    }
    let mut filled = Filled::default();
    let folder = tempfile::Builder::new()
        .prefix("schedlm-submit-")
        .tempdir()
        .map_err(io("cannot make a private folder for", std::env::temp_dir()))?;
    gather(
        job,
        folder.path(),
        started + budget / 2,
        reader,
        &mut filled.notes,
    )?;
    if Instant::now() >= deadline {
        return Ok(Filled::unchanged(timeout(s, "reading the job")));
    }
    // The extractor runs beside this thread, which waits for it until the deadline only (a
    // script made to be slow to interpret does not hold the submission).
    let (send, receive) = std::sync::mpsc::channel();
    let path = folder.path().to_path_buf();
    std::thread::spawn(move || {
        let _ = send.send(schedlm_knowledge::extract(&path, None, &[]));
    });
    let Ok(extraction) = receive.recv_timeout(deadline.saturating_duration_since(Instant::now()))
    else {
        return Ok(Filled::unchanged(timeout(s, "extracting the job's facts")));
    };
    let facts = &extraction?.facts;
    let mut said = Vec::new();
    if !job.has_time {
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
                let cause =
                    format!("lock: the history {path} is locked by a writer (not waited for)");
                return Ok(Filled::unchanged(cause));
            }
            Err(HistoryError::Deadline { .. }) => {
                return Ok(Filled::unchanged(timeout(s, "looking up the history")))
            }
            Err(HistoryError::Nothing) => filled
                .notes
                .push("time: no completed past job to predict from".into()),
            Err(e) => filled.notes.push(format!("time: {e}")),
        }
    }
    if !job.has_gpus {
        fill_gpus(s, facts, &mut filled, &mut said)?;
    }
    if Instant::now() >= deadline {
        return Ok(Filled::unchanged(timeout(s, "filling")));
    }
    if !said.is_empty() {
        filled.comment = format!("schedlm filled: {}", said.join("; "));
    }
    Ok(filled)
}

fn io(what: &'static str, path: PathBuf) -> impl FnOnce(std::io::Error) -> FillError {
    move |error| FillError::Io { what, path, error }
}

/// Puts the job's files into `folder`: the directory's (read as the submitter until
/// `deadline`) and the script, unless the directory holds it already.
fn gather(
    job: &Submission,
    folder: &Path,
    deadline: Instant,
    reader: &Reader,
    notes: &mut Vec<String>,
) -> Result<(), FillError> {
    let script = match &job.script {
        Some(path) => read_script(path, notes)?,
        None => None,
    };
    let mut known = false;
    if let Some(dir) = &job.dir {
        let walk = user_dir::read_as(dir, job.who, deadline, reader)?;
        if let Some(refused) = &walk.refused {
            notes.push(format!("dir: not read: {refused}"));
        }
        notes.extend(walk.summary());
        user_dir::materialise(&walk, folder)?;
        known = walk.files.iter().any(|(rel, b)| {
            Some(b) == script.as_ref() && schedlm_knowledge::extract::reads(Path::new(rel), b)
        });
    }
    match script {
        Some(script) if !known => {
            let path = folder.join(SCRIPT_NAME);
            std::fs::write(&path, script).map_err(io("cannot write", path))
        }
        _ => Ok(()),
    }
}

/// The cause of a job left unchanged at the budget, in `stage`.
fn timeout(s: &FilterConf, stage: &str) -> String {
    let budget = s.budget_ms();
    format!("timeout: the filter's budget of {budget} ms ran out while {stage}")
}

/// The job script at `path` (at most [`MAX_SCRIPT_BYTES`]; a longer one is not read, and
/// said so).
fn read_script(path: &Path, notes: &mut Vec<String>) -> Result<Option<Vec<u8>>, FillError> {
    let failed = || io("cannot read the job script", path.to_path_buf());
    let file = std::fs::File::open(path).map_err(failed())?;
    let mut bytes = Vec::new();
    (file.take(MAX_SCRIPT_BYTES + 1).read_to_end(&mut bytes)).map_err(failed())?;
    if bytes.len() as u64 > MAX_SCRIPT_BYTES {
        notes.push("script: not read: size: over 1 MiB".into());
        return Ok(None);
    }
    Ok(Some(bytes))
}

/// The GPU count and batch size per GPU of the fastest configuration of the job's model among
/// the past runs (no queue waits are known at submission: every count is taken as free now).
fn fill_gpus(
    s: &FilterConf,
    facts: &JobFacts,
    filled: &mut Filled,
    said: &mut Vec<String>,
) -> Result<(), FillError> {
    let Some(runs) = &s.runs else {
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
    let per_node = s.gpus_per_node();
    let request = Request {
        model: model.to_string(),
        // The choice among configurations does not depend on the amount of work when no
        // configuration waits: any positive amount gives the same one.
        samples: 1e6,
        gpus: None,
        local_batch: None,
        gpus_per_node: per_node,
        waits: [1u32, 2, 4, 8, 16, 32]
            .into_iter()
            .filter(|&g| g <= per_node)
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
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    format!("{h}:{m:02}:{s:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_start_with_the_format_and_keep_each_value_on_its_line() {
        let filled = Filled {
            time_limit_min: Some(135),
            gpus: Some(8),
            comment: "schedlm filled:\ttime\n2:15:00".into(),
            notes: vec!["gpus: a\nb".into(), "dir: not read".into()],
            ..Filled::default()
        };
        let text = filled.lines();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("format\t{LINES_FORMAT}"));
        assert_eq!(lines[1], "time_limit_min\t135");
        assert_eq!(lines[2], "gpus\t8");
        assert_eq!(lines[3], "comment\tschedlm filled: time 2:15:00");
        assert_eq!(&lines[4..], ["note\tgpus: a b", "note\tdir: not read"]);
        let unchanged = Filled::unchanged("timeout: x".into()).lines();
        assert_eq!(
            unchanged,
            format!("format\t{LINES_FORMAT}\nunchanged\ttimeout: x")
        );
    }

    #[test]
    fn clock_is_hours_minutes_seconds() {
        assert_eq!(clock(8100), "2:15:00");
        assert_eq!(clock(59), "0:00:59");
        assert_eq!(clock(90061), "25:01:01");
    }
}
