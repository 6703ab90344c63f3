//! `answers.jsonl`: every answer of a text policy, written the moment it arrives, so that an
//! interrupted evaluation loses nothing and `eval --resume` asks only for what is missing.
//!
//! One JSON object per line: `policy`, `id` (record id), `line` (its line in the data file),
//! `prompt_sha256` (of the system and user messages as sent), `decoding` (how the answer was
//! decoded: `constrained greedy`, `endpoint, temperature 0, unconstrained`, ...), `output`
//! (raw text or null),
//! `best_of`, `sampled`, `error` (why there is no output), `finish_reason`, `prompt_tokens`,
//! `completion_tokens`, `seconds`, and where they apply `best_of_seconds`, `unconstrained` (a
//! constrained model's answer without the constraint), `retries` and `retry_reasons`. On
//! resume, a line counts for the same policy, record, prompt and decoding only if it has no
//! `error`; later lines win over earlier ones. Failed answers are asked again.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::EvalError;
use crate::text_policy::Reply;

/// The file name inside the report directory.
pub const ANSWERS_FILE: &str = "answers.jsonl";

/// One line of `answers.jsonl`: whose answer to which prompt, and the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerLine {
    /// The policy's report name (`openai:URL#MODEL`, `model:DIR`): JSON field `policy`.
    pub policy: String,
    /// The record's id in the data file: JSON field `id`.
    pub id: String,
    /// The record's 1-based line in the data file: JSON field `line`.
    pub line: usize,
    /// SHA-256 (hex) of the prompt as sent ([`prompt_sha256`]): on resume, a kept answer is reused
    /// only for the same policy, record and prompt. JSON field `prompt_sha256`.
    pub prompt_sha256: String,
    /// How the answer was decoded ([`crate::text_policy::Decoding::line`]); an answer is reused
    /// on resume only under the same decoding. JSON field `decoding` (empty in files written
    /// before it was recorded).
    #[serde(default)]
    pub decoding: String,
    /// The answer: its fields (`output`, `best_of`, `sampled`, `error`, `finish_reason`,
    /// `prompt_tokens`, `completion_tokens`, `seconds`) at the top level of the line.
    #[serde(flatten)]
    pub reply: Reply,
}

impl AnswerLine {
    /// The line of `policy`'s answer `r` to record `id` (1-based data line `line`), whose prompt
    /// hashes to `prompt_sha256`, decoded as `decoding` says.
    pub fn new(
        policy: &str,
        id: &str,
        line: usize,
        prompt_sha256: String,
        decoding: &str,
        r: &Reply,
    ) -> Self {
        AnswerLine {
            policy: policy.to_string(),
            id: id.to_string(),
            line,
            prompt_sha256,
            decoding: decoding.to_string(),
            reply: r.clone(),
        }
    }
}

/// The SHA-256 (hex) of a prompt as sent: system message, a NUL byte, user message.
pub fn prompt_sha256(system: &str, user: &str) -> String {
    let mut h = Sha256::new();
    h.update(system.as_bytes());
    h.update([0]);
    h.update(user.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// What a kept answer is looked up by: policy, record id, prompt hash, decoding.
type Key = (String, String, String, String);

/// Where answers are written, and the answers of an earlier run kept for resuming.
#[derive(Debug)]
pub struct AnswerLog {
    path: PathBuf,
    file: Mutex<File>,
    /// (policy, record id, prompt hash, decoding) -> reply of an earlier run without error.
    kept: HashMap<Key, Reply>,
}

impl AnswerLog {
    /// Opens `dir/answers.jsonl`: on `resume`, reads the answers already there and appends;
    /// otherwise starts the file anew.
    pub fn open(dir: &Path, resume: bool) -> Result<AnswerLog, EvalError> {
        std::fs::create_dir_all(dir).map_err(|e| EvalError::io(dir, e))?;
        let path = dir.join(ANSWERS_FILE);
        let kept = if resume && path.exists() {
            read_kept(&path)?
        } else {
            HashMap::new()
        };
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .append(resume)
            .truncate(!resume)
            .open(&path)
            .map_err(|e| EvalError::io(&path, e))?;
        Ok(AnswerLog {
            path,
            file: Mutex::new(file),
            kept,
        })
    }

    /// The path of the `answers.jsonl` being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The kept answer of `policy` to record `id` with this prompt and decoding, if an earlier
    /// run got one.
    pub fn kept(
        &self,
        policy: &str,
        id: &str,
        prompt_sha256: &str,
        decoding: &str,
    ) -> Option<&Reply> {
        self.kept.get(&(
            policy.to_string(),
            id.to_string(),
            prompt_sha256.to_string(),
            decoding.to_string(),
        ))
    }

    /// How many answers an earlier run left to resume from.
    pub fn kept_count(&self) -> usize {
        self.kept.len()
    }

    /// Appends one answer and flushes it to the file.
    pub fn write(&self, answer: &AnswerLine) -> Result<(), EvalError> {
        let mut text = serde_json::to_string(answer)
            .map_err(|e| EvalError::Report(format!("{}: {e}", self.path.display())))?;
        text.push('\n');
        let mut file = self.file.lock().map_err(|_| {
            EvalError::Report(format!("{}: a writer panicked", self.path.display()))
        })?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|e| EvalError::io(&self.path, e))
    }
}

/// The answers without error of an earlier run; a line that is not an answer is an error
/// naming it (a truncated last line, from a run killed mid-write, is skipped with a message).
fn read_kept(path: &Path) -> Result<HashMap<Key, Reply>, EvalError> {
    let file = File::open(path).map_err(|e| EvalError::io(path, e))?;
    let lines: Vec<_> = schedlm_model::text_lines(BufReader::new(file))
        .collect::<Result<_, _>>()
        .map_err(|e| EvalError::io(path, e))?;
    let mut kept = HashMap::new();
    for (i, line) in lines.iter().enumerate() {
        if line.is_blank() {
            continue;
        }
        let parsed = match &line.text {
            Ok(text) => serde_json::from_str::<AnswerLine>(text).map_err(|e| e.to_string()),
            Err(not_text) => Err(not_text.clone()),
        };
        let answer: AnswerLine = match parsed {
            Ok(a) => a,
            Err(_) if i + 1 == lines.len() => {
                eprintln!(
                    "eval: {} line {}: incomplete last line (an interrupted write), asked again",
                    path.display(),
                    i + 1
                );
                continue;
            }
            Err(e) => {
                return Err(EvalError::line(
                    path,
                    i + 1,
                    format!("not an answer: {}", schedlm_model::lines::bounded(&e)),
                ))
            }
        };
        let AnswerLine {
            policy,
            id,
            prompt_sha256,
            decoding,
            reply,
            ..
        } = answer;
        let key = (policy, id, prompt_sha256, decoding);
        if reply.error.is_none() {
            kept.insert(key, reply);
        } else {
            kept.remove(&key);
        }
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(output: Option<&str>, error: Option<&str>) -> Reply {
        Reply {
            output: output.map(str::to_string),
            error: error.map(str::to_string),
            finish_reason: Some("stop".into()),
            ..Reply::default()
        }
    }

    #[test]
    fn resume_keeps_answers_and_asks_failures_again() {
        let dir = tempfile::tempdir().unwrap();
        let sha = prompt_sha256("s", "u");
        {
            let log = AnswerLog::open(dir.path(), false).unwrap();
            let ok = reply(Some("J1 J2"), None);
            let failed = reply(None, Some("HTTP 500"));
            log.write(&AnswerLine::new("p", "a", 1, sha.clone(), "", &ok))
                .unwrap();
            log.write(&AnswerLine::new("p", "b", 2, sha.clone(), "", &failed))
                .unwrap();
        }
        // A run killed mid-write leaves half a line.
        let path = dir.path().join(ANSWERS_FILE);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"policy\":\"p\",\"id\":\"c\"");
        std::fs::write(&path, text).unwrap();

        let log = AnswerLog::open(dir.path(), true).unwrap();
        assert_eq!(log.kept_count(), 1);
        assert_eq!(
            log.kept("p", "a", &sha, "")
                .and_then(|r| r.output.as_deref()),
            Some("J1 J2")
        );
        assert!(
            log.kept("p", "b", &sha, "").is_none(),
            "failed answers are asked again"
        );
        assert!(log
            .kept("p", "a", &prompt_sha256("s", "other"), "")
            .is_none());
        // Another decoding asks again.
        assert!(log.kept("p", "a", &sha, "unconstrained greedy").is_none());
        assert!(log.kept("q", "a", &sha, "").is_none());
    }

    #[test]
    fn a_fresh_run_starts_the_file_anew() {
        let dir = tempfile::tempdir().unwrap();
        let sha = prompt_sha256("s", "u");
        let log = AnswerLog::open(dir.path(), false).unwrap();
        log.write(&AnswerLine::new(
            "p",
            "a",
            1,
            sha,
            "",
            &reply(Some("J1"), None),
        ))
        .unwrap();
        drop(log);
        let log = AnswerLog::open(dir.path(), false).unwrap();
        assert_eq!(log.kept_count(), 0);
        drop(log);
        assert_eq!(
            std::fs::read_to_string(dir.path().join(ANSWERS_FILE)).unwrap(),
            ""
        );
    }

    #[test]
    fn a_broken_line_in_the_middle_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(ANSWERS_FILE), "garbage\n{}\n").unwrap();
        let err = AnswerLog::open(dir.path(), true).unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
    }
}
