//! Parsing a model's raw reply into an order of the queue, with every defect classified.
//!
//! # The rule
//!
//! 1. The reply is split into lines; each line is trimmed. Blank lines are ignored.
//! 2. A line is *labelled* when the text before its first `:`, keeping only letters and spaces,
//!    is `order`, `answer`, `final order` or `final answer` (any case; so `**Answer:**` and
//!    `- order:` count). Its content is what follows the `:`.
//!    A line labelled `plan` whose content is a well-formed plan (`J<k>@<t>s/S<m>` items, as
//!    written by [`crate::prompt::plan_line`]) is a *plan line*: ignored, never a defect.
//! 3. The content is cut into tokens at every character that is not an ASCII letter or digit,
//!    so spaces, commas, brackets, quotes, arrows (`->`, `→`), backticks and periods all only
//!    separate. A token `J<k>` (either case) is a *job token*.
//! 4. The *answer line* is the last labelled line with a job token; if there is none, the last
//!    line (not a plan line) with a job token. With no such line the reply has no order.
//! 5. In the answer line, each job token names prompt id `J<k>`: a queued job the first time,
//!    [`Defect::Duplicate`] after that, [`Defect::UnknownId`] when `k` is out of range or
//!    malformed (`J0`, `J007`). Tokens `S<k>` and `R<k>` (servers and running jobs) are also
//!    unknown ids. Any other token (a word, a number) is [`Defect::ExtraText`], as is any
//!    other non-blank line of the reply, code fences included.
//!    A labelled line with no token at all (`Answer:` above the order) is not extra text.
//! 6. Queued jobs not named are [`Defect::Missing`].
//!
//! A clean answer is therefore the answer line (optionally labelled, with any separators),
//! optionally plan lines, and nothing else. [`Mode::Strict`] returns the defects as an error
//! unless the answer is clean. [`Mode::Lenient`] repairs: unknown ids and duplicates are
//! dropped, missing jobs are appended in FCFS order (submit time, then queue position); with no
//! order at all the whole queue comes in FCFS order. Either way [`Parsed::defects`] lists what
//! was found and repaired.

use schedlm_model::Instance;
use serde::{Deserialize, Serialize};

use crate::ids::IdMap;

/// One defect of a reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case", tag = "defect", content = "ids")]
pub enum Defect {
    /// No line of the reply names a queued job.
    #[error("no order found")]
    NoOrder,
    /// The answer names an id that is not a queued job (as written in the reply).
    #[error("unknown id {0:?}")]
    UnknownId(String),
    /// The answer names this job again.
    #[error("duplicate {0}")]
    Duplicate(String),
    /// These queued jobs are not in the answer (prompt ids, queue order).
    #[error("missing {}", .0.join(" "))]
    Missing(Vec<String>),
    /// Words or lines other than the answer line and plan lines.
    #[error("extra text")]
    ExtraText,
}

/// How to treat defects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Any defect rejects the reply.
    #[default]
    Strict,
    /// Repair the reply into a permutation of the queue and report the defects.
    Lenient,
}

/// A parsed reply: a permutation of the queue (queue indices) and the defects found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parsed {
    /// The order, best first, as 0-based indices into `instance.queue`: every queued job
    /// exactly once.
    pub order: Vec<usize>,
    /// Empty for a clean answer; in lenient mode, what was repaired.
    pub defects: Vec<Defect>,
}

impl Parsed {
    /// Whether the reply had no defect.
    pub fn is_clean(&self) -> bool {
        self.defects.is_empty()
    }
}

/// Why no order came out of a reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Strict mode and the reply has these defects.
    #[error("rejected: {}", list(.0))]
    Rejected(Vec<Defect>),
    /// The id map was not made for this instance's queue.
    #[error("the id map does not match the instance's queue")]
    IdMapMismatch,
}

fn list(defects: &[Defect]) -> String {
    defects
        .iter()
        .map(Defect::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses a model's reply into an order of `instance`'s queue; see the module docs for the rule.
/// Never panics.
pub fn parse_answer(
    text: &str,
    ids: &IdMap,
    instance: &Instance,
    mode: Mode,
) -> Result<Parsed, ParseError> {
    let n = instance.queue.len();
    if ids.jobs() != n
        || ids
            .job_originals()
            .iter()
            .zip(&instance.queue)
            .any(|(a, b)| *a != b.id)
    {
        return Err(ParseError::IdMapMismatch);
    }
    let lines: Vec<Line> = text.lines().filter_map(Line::classify).collect();
    let chosen = lines
        .iter()
        .rposition(|l| l.kind == Kind::Labelled && l.has_job_token())
        .or_else(|| {
            lines
                .iter()
                .rposition(|l| l.kind != Kind::Plan && l.has_job_token())
        });
    let mut defects = Vec::new();
    let mut order = Vec::with_capacity(n);
    let mut extra = lines
        .iter()
        .enumerate()
        .any(|(i, l)| Some(i) != chosen && l.kind != Kind::Plan && !l.is_bare_label());
    match chosen {
        None if n > 0 => {
            defects.push(Defect::NoOrder);
            extra = false;
        }
        None => {}
        Some(i) => {
            let mut seen = vec![false; n];
            for token in lines[i].tokens() {
                if is_id_token(token, b"Jj") {
                    let upper = token.to_ascii_uppercase();
                    match ids.job_index(&upper) {
                        Some(j) if seen[j] => defects.push(Defect::Duplicate(upper)),
                        Some(j) => {
                            seen[j] = true;
                            order.push(j);
                        }
                        None => defects.push(Defect::UnknownId(token.to_string())),
                    }
                } else if is_id_token(token, b"SsRr") {
                    defects.push(Defect::UnknownId(token.to_string()));
                } else {
                    extra = true;
                }
            }
            let missing: Vec<String> = (0..n).filter(|&j| !seen[j]).map(|j| ids.job(j)).collect();
            if !missing.is_empty() {
                defects.push(Defect::Missing(missing));
            }
        }
    }
    if extra {
        defects.push(Defect::ExtraText);
    }
    match mode {
        Mode::Strict if !defects.is_empty() => Err(ParseError::Rejected(defects)),
        _ => {
            if order.len() < n {
                let mut seen = vec![false; n];
                for &j in &order {
                    seen[j] = true;
                }
                let mut rest: Vec<usize> = (0..n).filter(|&j| !seen[j]).collect();
                rest.sort_by_key(|&j| (instance.queue[j].submit, j));
                order.extend(rest);
            }
            Ok(Parsed { order, defects })
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    Labelled,
    Plan,
}

/// One non-blank line and the part of it that may hold ids.
struct Line<'a> {
    kind: Kind,
    content: &'a str,
}

impl<'a> Line<'a> {
    fn classify(raw: &'a str) -> Option<Line<'a>> {
        let line = raw.trim();
        if line.is_empty() {
            return None;
        }
        if let Some(colon) = line.find(':') {
            let label: String = line[..colon]
                .chars()
                .filter(|c| c.is_ascii_alphabetic() || c.is_whitespace())
                .collect::<String>()
                .to_ascii_lowercase();
            let label = label.split_whitespace().collect::<Vec<_>>().join(" ");
            let content = &line[colon + 1..];
            match label.as_str() {
                "order" | "answer" | "final order" | "final answer" => {
                    return Some(Line {
                        kind: Kind::Labelled,
                        content,
                    })
                }
                "plan" if is_plan(content) => {
                    return Some(Line {
                        kind: Kind::Plan,
                        content,
                    })
                }
                _ => {}
            }
        }
        Some(Line {
            kind: Kind::Plain,
            content: line,
        })
    }

    fn tokens(&self) -> impl Iterator<Item = &'a str> {
        self.content
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|t| !t.is_empty())
    }

    /// A label with nothing after it (`Answer:` with the order on the next line).
    fn is_bare_label(&self) -> bool {
        self.kind == Kind::Labelled && self.tokens().next().is_none()
    }

    fn has_job_token(&self) -> bool {
        self.tokens().any(|t| is_id_token(t, b"Jj"))
    }
}

/// A letter from `letters` followed by one or more ASCII digits.
fn is_id_token(token: &str, letters: &[u8]) -> bool {
    let b = token.as_bytes();
    b.len() >= 2 && letters.contains(&b[0]) && b[1..].iter().all(u8::is_ascii_digit)
}

/// Plan content: one or more `J<k>@<t>s/S<m>` items separated by whitespace.
fn is_plan(content: &str) -> bool {
    let mut items = content.split_whitespace().peekable();
    items.peek().is_some()
        && items.all(|item| {
            let Some((job, rest)) = item.split_once('@') else {
                return false;
            };
            let Some((time, server)) = rest.split_once("s/") else {
                return false;
            };
            let time = time.strip_prefix('-').unwrap_or(time);
            is_id_token(job, b"J")
                && is_id_token(server, b"S")
                && !time.is_empty()
                && time.bytes().all(|b| b.is_ascii_digit())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance() -> Instance {
        Instance::from_json(
            r#"{"now": 100, "resources": ["cores"],
                "servers": [{"id": "n0", "capacity": [8]}],
                "queue": [{"id": "a", "submit": 50, "demand": [2], "walltime": 10},
                          {"id": "b", "submit": 20, "demand": [2], "walltime": 10},
                          {"id": "c", "submit": 20, "demand": [2], "walltime": 10}]}"#,
        )
        .unwrap()
    }

    fn parse(text: &str, mode: Mode) -> Result<Parsed, ParseError> {
        let inst = instance();
        parse_answer(text, &IdMap::new(&inst), &inst, mode)
    }

    fn clean(text: &str) -> Vec<usize> {
        let p = parse(text, Mode::Strict).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert!(p.is_clean());
        p.order
    }

    #[test]
    fn clean_forms() {
        assert_eq!(clean("J3 J1 J2"), vec![2, 0, 1]);
        assert_eq!(clean("  J3 J1 J2  \n\n"), vec![2, 0, 1]);
        assert_eq!(clean("order: J3, J1, J2"), vec![2, 0, 1]);
        assert_eq!(clean("Answer: [\"J3\", \"J1\", \"J2\"]"), vec![2, 0, 1]);
        assert_eq!(clean("**Final answer:** J3 -> J1 → J2."), vec![2, 0, 1]);
        assert_eq!(clean("j3 j1 j2"), vec![2, 0, 1]);
        assert_eq!(
            clean("J3 J1 J2\nplan: J3@0s/S1 J1@10s/S1 J2@20s/S1"),
            vec![2, 0, 1]
        );
    }

    #[test]
    fn prose_and_fences() {
        let text = "Let me think. J1 is short, so J1 first.\n```\nJ2 J1 J3\n```\n";
        assert_eq!(
            parse(text, Mode::Strict),
            Err(ParseError::Rejected(vec![Defect::ExtraText]))
        );
        assert_eq!(parse(text, Mode::Lenient).unwrap().order, vec![1, 0, 2]);
        // A labelled line wins over a later unlabelled line.
        let text = "order: J2 J3 J1\nI considered J1 J2 J3 too.";
        assert_eq!(parse(text, Mode::Lenient).unwrap().order, vec![1, 2, 0]);
        // A label with the order on the next line is clean.
        assert_eq!(clean("Answer:\nJ2 J3 J1"), vec![1, 2, 0]);
        // Prose in a "plan:" line makes it a plain line, here the last one with a job.
        let p = parse("J2 J1 J3\nplan: first J1", Mode::Lenient).unwrap();
        assert_eq!(p.order, vec![0, 1, 2]);
        let missing = Defect::Missing(vec!["J2".into(), "J3".into()]);
        assert_eq!(p.defects, vec![missing, Defect::ExtraText]);
    }

    #[test]
    fn defects_and_repairs() {
        let p = parse("J3 J9 J3 S1 J0", Mode::Lenient).unwrap();
        assert_eq!(
            p.defects,
            vec![
                Defect::UnknownId("J9".into()),
                Defect::Duplicate("J3".into()),
                Defect::UnknownId("S1".into()),
                Defect::UnknownId("J0".into()),
                Defect::Missing(vec!["J1".into(), "J2".into()]),
            ]
        );
        // Missing jobs in FCFS order: b (submit 20), c (20, later in the queue), a (50).
        assert_eq!(p.order, vec![2, 1, 0]);
        let p = parse("I cannot decide.", Mode::Lenient).unwrap();
        assert_eq!(p.defects, vec![Defect::NoOrder]);
        assert_eq!(p.order, vec![1, 2, 0]);
        assert_eq!(
            parse("", Mode::Strict),
            Err(ParseError::Rejected(vec![Defect::NoOrder]))
        );
        let plan_only = "plan: J1@0s/S1";
        assert_eq!(
            parse(plan_only, Mode::Strict),
            Err(ParseError::Rejected(vec![Defect::NoOrder]))
        );
    }

    #[test]
    fn mismatched_ids() {
        let inst = instance();
        let mut other = inst.clone();
        other.queue.pop();
        let ids = IdMap::new(&other);
        assert_eq!(
            parse_answer("J1 J2", &ids, &inst, Mode::Lenient),
            Err(ParseError::IdMapMismatch)
        );
    }

    #[test]
    fn empty_queue() {
        let mut inst = instance();
        inst.queue.clear();
        let ids = IdMap::new(&inst);
        let p = parse_answer("", &ids, &inst, Mode::Strict).unwrap();
        assert!(p.order.is_empty() && p.is_clean());
        assert!(parse_answer("hello", &ids, &inst, Mode::Strict).is_err());
    }
}
