//! An optional LLM agent for the fields the parsers leave empty.
//!
//! The agent works in turns (ReAct style): each turn the model answers one line, an action
//! `list_dir PATH` or `read_file PATH` (tools confined to the job directory: absolute paths,
//! `..` and links that lead out are refused), or `answer {JSON}` mapping field names to
//! `{"value": ..., "source": "FILE:LINE"}`. The tool's result is appended to the transcript
//! and the model asked again, up to a step limit.
//!
//! Nothing the model says is taken on trust:
//!
//! - every answered value is **checked against the line it cites**: the file must be inside
//!   the directory, the line must exist, and the value must be written on it (a number equal
//!   to one of the line's numbers, a text contained in it); an answer that fails is rejected
//!   and reported with the reason;
//! - `samples` independent runs **vote**: a field is filled only when more than half of the
//!   runs gave the same checked value; its confidence is the share of runs that agreed, times
//!   0.8 (below any parser's).
//!
//! Only fields that no parser determined are asked about, and the agent's facts are the
//! weakest source ([`Strength::Agent`]). The model is behind the [`Chat`] trait (the binary
//! plugs in the eval crate's OpenAI-compatible client); calls and tokens are counted.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::confine::Confined;
use crate::facts::{Field, JobFacts, Source, Strength};

/// The longest file excerpt one `read_file` returns.
const READ_LIMIT: usize = 8_000;

/// One completion of a chat model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatReply {
    /// The text, when the call succeeded.
    pub text: Option<String>,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// Prompt tokens the server counted.
    pub prompt_tokens: u64,
    /// Completion tokens the server counted.
    pub completion_tokens: u64,
}

/// A chat model: one system and one user message in, one reply out.
pub trait Chat {
    /// Completes `user` under `system`; sample `sample` of the run (for models that vary
    /// their answers by sample, e.g. through the temperature).
    fn complete(&self, system: &str, user: &str, sample: usize) -> ChatReply;
}

/// Limits of the agent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgentOptions {
    /// Independent runs that vote.
    pub samples: usize,
    /// Turns per run.
    pub steps: usize,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            samples: 3,
            steps: 8,
        }
    }
}

/// What the agent did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentReport {
    /// Fields asked about (empty after the parsers).
    pub asked: Vec<String>,
    /// Fields filled (a checked majority).
    pub filled: Vec<String>,
    /// Answers rejected, as `field: reason`.
    pub rejected: Vec<String>,
    /// Calls to the model.
    pub calls: usize,
    /// Failed calls and runs that ended without an answer, with the reason.
    pub errors: Vec<String>,
    /// Prompt tokens used.
    pub prompt_tokens: u64,
    /// Completion tokens used.
    pub completion_tokens: u64,
    /// Whether the answers came from the cache (no call made in this run).
    #[serde(default)]
    pub reused: bool,
    /// Files of the job directory whose contents were sent to the endpoint (relative paths,
    /// sorted; the listing of the directory is always sent).
    #[serde(default)]
    pub sent: Vec<String>,
}

/// The cache key of an agent run: the job's files (names and SHA-256 from the extraction
/// cache), the model and the options. The same key means the same question to the same model.
pub fn cache_key(cache: &crate::extract::Cache, model: &str, options: AgentOptions) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for (name, file) in &cache.files {
        h.update(name.as_bytes());
        h.update([0]);
        h.update(file.sha256.as_bytes());
        h.update([0]);
    }
    h.update(format!("{model}\0{}\0{}", options.samples, options.steps).as_bytes());
    crate::extract::hex(&h.finalize())
}

/// Fills what the parsers left empty in `extraction` with the agent, or with its cached
/// answers when the files, `model` and `options` are those of the cache's last run; keeps the
/// report in `extraction.agent` and a run that answered in `cache`. True when every agent
/// run failed (a dead endpoint, a model that never answers): such a run is not cached.
pub fn fill_cached(
    dir: &Path,
    extraction: &mut crate::extract::Extraction,
    cache: &mut crate::extract::Cache,
    model: &str,
    chat: &dyn Chat,
    options: AgentOptions,
) -> bool {
    let key = cache_key(cache, model, options);
    if let Some(cached) = cache.agent.as_ref().filter(|c| c.key == key) {
        extraction.facts.absorb(&cached.facts);
        extraction.agent = Some(AgentReport {
            calls: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            reused: true,
            ..cached.report.clone()
        });
        return false;
    }
    let (facts, report) = fill(dir, &extraction.facts, chat, options);
    extraction.facts.absorb(&facts);
    let failed = report.calls > 0 && report.errors.len() >= options.samples;
    cache.agent = (!failed).then(|| crate::extract::CachedAgent {
        key,
        facts,
        report: report.clone(),
    });
    extraction.agent = Some(report);
    failed
}

impl AgentReport {
    /// What the run did, for the user: the fields filled and rejected, the calls and tokens,
    /// what was sent to `to` (the listing of `dir`, the files read) and each error.
    pub fn lines(&self, dir: &Path, to: &str) -> Vec<String> {
        let mut lines =
            vec![format!(
            "the LLM agent filled {} of {} empty field(s), rejected {} answer(s); {} call(s), {} \
             prompt and {} completion tokens{}",
            self.filled.len(),
            self.asked.len(),
            self.rejected.len(),
            self.calls,
            self.prompt_tokens,
            self.completion_tokens,
            if self.reused { " (answers reused from the cache)" } else { "" }
        )];
        if !self.reused && self.calls > 0 {
            let files = if self.sent.is_empty() {
                String::new()
            } else {
                format!(" and the contents of {}", self.sent.join(", "))
            };
            lines.push(format!(
                "sent to {to}: the listing of {}{files}",
                dir.display()
            ));
        }
        lines.extend(self.errors.iter().map(|e| format!("LLM agent: {e}")));
        lines
    }
}

const SYSTEM: &str = "You read the files of one deep-learning training job to find its \
settings. Each turn, reply with exactly one line, one of:\n\
list_dir PATH      (PATH relative to the job directory; . is the directory)\n\
read_file PATH     (the file, with line numbers)\n\
answer JSON        (a JSON object: field -> {\"value\": V, \"source\": \"FILE:LINE\"})\n\
Answer only fields whose value is written in a file, citing the line it is written on; \
leave out the others. Numbers as numbers.";

/// Asks the model about the [`Field::SCHEDULING`] missing from `facts` (not those the files
/// leave to an unknown variable, `FIELD_unknown`: a value the model finds for one of them is
/// not the job's), and returns the checked majority answers as facts, with a report.
pub fn fill(
    dir: &Path,
    facts: &JobFacts,
    chat: &dyn Chat,
    options: AgentOptions,
) -> (JobFacts, AgentReport) {
    let mut report = AgentReport {
        asked: Field::SCHEDULING
            .iter()
            .filter(|&&f| {
                facts.get(f).is_none() && f.unknown().is_none_or(|m| facts.get(m).is_none())
            })
            .map(|f| f.to_string())
            .collect(),
        ..AgentReport::default()
    };
    let mut filled = JobFacts::default();
    if report.asked.is_empty() {
        return (filled, report);
    }
    // field -> (value text -> (votes, value, source))
    let mut votes: BTreeMap<String, BTreeMap<String, (usize, Value, Source)>> = BTreeMap::new();
    for sample in 0..options.samples.max(1) {
        let Some(answer) = run(
            dir,
            &report.asked.clone(),
            chat,
            options,
            sample,
            &mut report,
        ) else {
            continue;
        };
        for (field, given) in answer {
            if !report.asked.contains(&field) {
                report.rejected.push(format!("{field}: not asked"));
                continue;
            }
            match check(dir, &given) {
                Ok((value, source)) => {
                    let entry = votes
                        .entry(field)
                        .or_default()
                        .entry(value.to_string())
                        .or_insert((0, value, source));
                    entry.0 += 1;
                }
                Err(reason) => report.rejected.push(format!("{field}: {reason}")),
            }
        }
    }
    let runs = options.samples.max(1);
    for (field, values) in votes {
        let best = values.into_values().max_by_key(|(n, _, _)| *n);
        if let Some((n, value, source)) = best {
            if 2 * n > runs {
                let confidence = 0.8 * n as f64 / runs as f64;
                if let Ok(known) = field.parse::<Field>() {
                    filled.set(known, value, source, confidence, Strength::Agent);
                    report.filled.push(field);
                }
            } else {
                report
                    .rejected
                    .push(format!("{field}: no majority ({n} of {runs} runs)"));
            }
        }
    }
    (filled, report)
}

/// One run of the agent: turns until an answer or the step limit.
fn run(
    dir: &Path,
    asked: &[String],
    chat: &dyn Chat,
    options: AgentOptions,
    sample: usize,
    report: &mut AgentReport,
) -> Option<serde_json::Map<String, Value>> {
    let mut transcript = format!(
        "Fields to find: {}.\nThe job directory's files:\n{}\n",
        asked.join(", "),
        list_dir(dir, ".").unwrap_or_else(|e| e)
    );
    for _ in 0..options.steps {
        let reply = chat.complete(SYSTEM, &transcript, sample);
        report.calls += 1;
        report.prompt_tokens += reply.prompt_tokens;
        report.completion_tokens += reply.completion_tokens;
        let Some(text) = reply.text else {
            report.errors.push(format!(
                "run {}: {}",
                sample + 1,
                reply.error.unwrap_or_else(|| "no reply".into())
            ));
            return None;
        };
        let line = text.trim();
        let (action, argument) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let argument = argument.trim();
        let observation = match action {
            "answer" => match serde_json::from_str::<Value>(argument) {
                Ok(Value::Object(map)) => return Some(map),
                _ => "the answer is not a JSON object".to_string(),
            },
            "list_dir" => list_dir(dir, argument).unwrap_or_else(|e| e),
            "read_file" => match read_file(dir, argument) {
                Ok(text) => {
                    if let Err(at) = report.sent.binary_search_by(|f| f.as_str().cmp(argument)) {
                        report.sent.insert(at, argument.to_string());
                    }
                    text
                }
                Err(e) => e,
            },
            _ => format!("unknown action `{action}`: use list_dir, read_file or answer"),
        };
        transcript.push_str(&format!("\n> {line}\n{observation}\n"));
    }
    report.errors.push(format!(
        "run {}: no answer in {} steps",
        sample + 1,
        options.steps
    ));
    None
}

/// `rel` resolved inside `dir`, or why not.
fn inside(dir: &Path, rel: &str) -> Result<PathBuf, String> {
    let rel_path = Path::new(rel);
    if rel_path.is_absolute()
        || rel_path
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
    {
        return Err(format!("{rel}: outside the job directory"));
    }
    let root = dir
        .canonicalize()
        .map_err(|e| format!("the job directory: {e}"))?;
    let path = root
        .join(rel_path)
        .canonicalize()
        .map_err(|_| format!("{rel}: no such file or directory"))?;
    if !path.starts_with(&root) {
        return Err(format!("{rel}: outside the job directory"));
    }
    Ok(path)
}

fn list_dir(dir: &Path, rel: &str) -> Result<String, String> {
    let path = inside(dir, if rel.is_empty() { "." } else { rel })?;
    let mut names: Vec<String> = fs::read_dir(&path)
        .map_err(|e| format!("{rel}: {e}"))?
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.path().is_dir() {
                format!("{name}/")
            } else {
                name
            }
        })
        .collect();
    names.sort();
    Ok(names.join("\n"))
}

/// The first [`HEAD_LIMIT`] bytes of a file (a job directory may hold multi-gigabyte
/// checkpoints; the model is shown the start of a file only).
fn head(dir: &Path, path: &Path, rel: &str) -> Result<String, String> {
    let mut confined = Confined::new(dir).map_err(|e| format!("the job directory: {e}"))?;
    let bytes = confined
        .head(path, HEAD_LIMIT)
        .map_err(|e| format!("{rel}: {e}"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// How much of a file the tools and the answer check read.
const HEAD_LIMIT: u64 = 1 << 20;

fn read_file(dir: &Path, rel: &str) -> Result<String, String> {
    let path = inside(dir, rel)?;
    let text = head(dir, &path, rel)?;
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        let numbered = format!("{}: {line}\n", i + 1);
        if out.len() + numbered.len() > READ_LIMIT {
            out.push_str("(cut here)\n");
            break;
        }
        out.push_str(&numbered);
    }
    Ok(out)
}

/// Checks one answered field against the line it cites; the value and the `file:line`.
fn check(dir: &Path, given: &Value) -> Result<(Value, Source), String> {
    let value = given
        .get("value")
        .cloned()
        .filter(|v| !v.is_null())
        .ok_or("no value")?;
    let source = given
        .get("source")
        .and_then(Value::as_str)
        .ok_or("no source")?;
    let (file, line) = source
        .rsplit_once(':')
        .ok_or_else(|| format!("source {source} is not FILE:LINE"))?;
    let number: usize = line
        .parse()
        .map_err(|_| format!("source {source} is not FILE:LINE"))?;
    let path = inside(dir, file)?;
    let text = head(dir, &path, file)?;
    let cited = text
        .lines()
        .nth(number.wrapping_sub(1))
        .ok_or_else(|| format!("{source}: no such line"))?;
    if written_on(&value, cited) {
        Ok((value, Source::line(file, number)))
    } else {
        Err(format!("{value} is not written on {source}"))
    }
}

/// Whether `value` is written on `line`: a number equal to one of its numbers, a text that it
/// contains (case-insensitive), every item of a list.
fn written_on(value: &Value, line: &str) -> bool {
    match value {
        Value::Number(n) => {
            let Some(x) = n.as_f64() else { return false };
            line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '+'))
                .filter_map(|w| w.parse::<f64>().ok())
                .any(|y| (x - y).abs() <= 1e-12 * x.abs().max(1.0))
        }
        Value::String(s) => !s.is_empty() && line.to_lowercase().contains(&s.to_lowercase()),
        Value::Bool(b) => line
            .to_lowercase()
            .contains(if *b { "true" } else { "false" }),
        Value::Array(items) => !items.is_empty() && items.iter().all(|i| written_on(i, line)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// Replies from a script, one per call, in order; the prompts seen are kept.
    struct Scripted {
        replies: Vec<&'static str>,
        seen: RefCell<Vec<String>>,
    }

    impl Chat for Scripted {
        fn complete(&self, _system: &str, user: &str, _sample: usize) -> ChatReply {
            let mut seen = self.seen.borrow_mut();
            let i = seen.len();
            seen.push(user.to_string());
            ChatReply {
                text: self.replies.get(i).map(|r| r.to_string()),
                error: self.replies.get(i).is_none().then(|| "script ended".into()),
                prompt_tokens: 10,
                completion_tokens: 2,
            }
        }
    }

    fn job() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("train.sh"),
            "#!/bin/bash\nMODEL=gpt2-medium\npython train.py --model $MODEL --lr 3e-4\n",
        )
        .unwrap();
        dir
    }

    #[test]
    fn checked_answers_fill_empty_fields_and_lies_are_rejected() {
        let dir = job();
        let chat = Scripted {
            replies: vec![
                "list_dir .",
                "read_file train.sh",
                r#"answer {"model": {"value": "gpt2-medium", "source": "train.sh:2"},
                           "learning_rate": {"value": 0.0003, "source": "train.sh:3"},
                           "epochs": {"value": 10, "source": "train.sh:3"}}"#,
            ],
            seen: RefCell::new(Vec::new()),
        };
        let options = AgentOptions {
            samples: 1,
            steps: 5,
        };
        let (facts, report) = fill(dir.path(), &JobFacts::default(), &chat, options);
        assert_eq!(
            facts.json(Field::Model),
            Some(serde_json::json!("gpt2-medium"))
        );
        assert_eq!(facts.get(Field::Model).unwrap().source, "train.sh:2");
        assert_eq!(facts.get(Field::Model).unwrap().strength, Strength::Agent);
        assert_eq!(
            facts.json(Field::LearningRate),
            Some(serde_json::json!(0.0003))
        );
        assert_eq!(facts.value(Field::Epochs), None, "10 is not on line 3");
        assert!(report.rejected.iter().any(|r| r.starts_with("epochs:")));
        assert_eq!((report.calls, report.prompt_tokens), (3, 30));
        let seen = chat.seen.borrow();
        assert!(seen[2].contains("3: python train.py"), "the file was shown");
    }

    #[test]
    fn tools_stay_inside_the_directory() {
        let dir = job();
        assert!(read_file(dir.path(), "../etc/passwd")
            .unwrap_err()
            .contains("outside"));
        assert!(read_file(dir.path(), "/etc/passwd")
            .unwrap_err()
            .contains("outside"));
        assert!(list_dir(dir.path(), "nope")
            .unwrap_err()
            .contains("no such"));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc", dir.path().join("link")).unwrap();
            assert!(list_dir(dir.path(), "link")
                .unwrap_err()
                .contains("outside"));
        }
        let bad_cite = serde_json::json!({"value": "x", "source": "../../x:1"});
        assert!(check(dir.path(), &bad_cite)
            .unwrap_err()
            .contains("outside"));
    }

    #[test]
    fn samples_vote_and_known_fields_are_not_asked() {
        let dir = job();
        // Two runs say gpt2-medium (checked), one says gpt2-large (not on the line).
        let chat = Scripted {
            replies: vec![
                r#"answer {"model": {"value": "gpt2-medium", "source": "train.sh:2"}}"#,
                r#"answer {"model": {"value": "gpt2-large", "source": "train.sh:2"}}"#,
                r#"answer {"model": {"value": "gpt2-medium", "source": "train.sh:2"}}"#,
            ],
            seen: RefCell::new(Vec::new()),
        };
        let mut known = JobFacts::default();
        known.set(
            Field::LearningRate,
            serde_json::json!(1),
            Source::line("x", 1),
            1.0,
            Strength::Script,
        );
        known.set(
            Field::NodesUnknown,
            serde_json::json!("--num_machines $NUM_NODES"),
            Source::line("x", 2),
            1.0,
            Strength::Script,
        );
        let (facts, report) = fill(dir.path(), &known, &chat, AgentOptions::default());
        assert!(!report.asked.contains(&"learning_rate".to_string()));
        assert!(
            !report.asked.contains(&"nodes".to_string()),
            "left to an unknown variable"
        );
        let model = facts.get(Field::Model).unwrap();
        assert!((model.confidence - 0.8 * 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(report.rejected.len(), 1);
        // A run that never answers is reported, not fatal.
        let silent = Scripted {
            replies: vec!["ponder", "ponder"],
            seen: RefCell::new(Vec::new()),
        };
        let options = AgentOptions {
            samples: 1,
            steps: 2,
        };
        let (none, report) = fill(dir.path(), &JobFacts::default(), &silent, options);
        assert!(none.is_empty());
        assert_eq!(report.errors, ["run 1: no answer in 2 steps"]);
    }

    #[test]
    fn values_must_be_written_on_the_cited_line() {
        assert!(written_on(&serde_json::json!(0.0003), "--lr 3e-4"));
        assert!(written_on(&serde_json::json!(8), "--nproc_per_node=8"));
        assert!(!written_on(&serde_json::json!(8), "--nproc_per_node=16"));
        assert!(written_on(
            &serde_json::json!("BF16"),
            "mixed_precision: bf16"
        ));
        assert!(!written_on(&serde_json::json!(""), "anything"));
    }
}
