//! Facts about one job, each with where it was read and how sure we are.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::field::{FactValue, Field, Kind};

/// How strong a source is: a stronger source's value wins over a weaker one's (docs/knowledge.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strength {
    /// The launch command given with `--cmd`.
    Command,
    /// A command line in the job's script.
    Script,
    /// A scheduler header (`#SBATCH`, `#PBS`): the job's allocation.
    Header,
    /// The options of a job step (`srun --nodes=1 ...` in a job script): what that step uses,
    /// and the job's request where no header gives one, but not above the allocation.
    Step,
    /// A configuration file (JSON, YAML).
    Config,
    /// A default in the training code (`add_argument(..., default=...)`, a literal keyword of
    /// `TrainingArguments(...)`, a Python config assignment): what holds unless a flag or a
    /// config says otherwise.
    Default,
    /// A log: what the job did, not what it asked for.
    Log,
    /// Computed from other facts (global batch size, GPUs per node from a total).
    Derived,
    /// Answered by the optional LLM agent, checked against the line it cites ([`crate::agent`]).
    Agent,
}

/// Where a fact was read: written and read back as text (`train.sh:3`, `command`,
/// `derived: gpus_total / nodes`, `meta`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// Line `line` (from 1) of `file`: a file of the job directory, relative to it, or a log
    /// as its path was given.
    Line {
        /// The file.
        file: String,
        /// The line, from 1.
        line: usize,
    },
    /// The launch command given with `--cmd`.
    Command,
    /// Computed from other facts by a rule of [`crate::derive`], named by its formula.
    Derived(String),
    /// A job's metadata (the `dl` family's `meta`), for a job known by its description alone.
    Meta,
}

impl Source {
    /// Line `line` (from 1) of `file`.
    pub fn line(file: impl Into<String>, line: usize) -> Source {
        Source::Line {
            file: file.into(),
            line,
        }
    }

    /// The rule of [`crate::derive`] that computed a fact, by its formula.
    pub fn derived(formula: &str) -> Source {
        Source::Derived(formula.to_string())
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Line { file, line } => write!(f, "{file}:{line}"),
            Source::Command => f.write_str("command"),
            Source::Derived(formula) => write!(f, "derived: {formula}"),
            Source::Meta => f.write_str("meta"),
        }
    }
}

impl FromStr for Source {
    type Err = String;

    /// The text [`Source`]'s `Display` writes; anything else is an error that quotes it.
    fn from_str(text: &str) -> Result<Source, String> {
        let line = || {
            let (file, line) = text.rsplit_once(':')?;
            let line = line.parse::<usize>().ok().filter(|&n| n > 0)?;
            (!file.is_empty()).then(|| Source::line(file, line))
        };
        match text {
            "command" => Ok(Source::Command),
            "meta" => Ok(Source::Meta),
            _ => match text.strip_prefix("derived: ") {
                Some(formula) => Ok(Source::derived(formula)),
                None => line().ok_or_else(|| {
                    format!("{text:?} is no source: expected FILE:LINE, command, derived: FORMULA or meta")
                }),
            },
        }
    }
}

/// A source equals the text that reads as it (`fact.source == "train.sh:3"`).
impl PartialEq<&str> for Source {
    fn eq(&self, other: &&str) -> bool {
        other.parse::<Source>().is_ok_and(|source| source == *self)
    }
}

impl Serialize for Source {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Source, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// One value, where it came from and how sure the extractor is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    /// The value, as its field's kind holds it.
    pub value: FactValue,
    /// Where it was read.
    pub source: Source,
    /// 1.0 for a literal value read by a parser; less for values derived from others or read
    /// from an ambiguous name (`batch_size` may be per device or global).
    pub confidence: f64,
    /// Which kind of source it came from.
    pub strength: Strength,
    /// Values of the same field from weaker sources that lost, as `value @ source`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<String>,
}

/// Everything known about one job: field -> fact, over the vocabulary of [`Field`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobFacts {
    fields: BTreeMap<Field, Fact>,
}

impl JobFacts {
    /// Records `value` for `field`, parsed as its [`Kind`] (a value that is none of the kind,
    /// such as a GPU count `0,1`, is no fact), unless a stronger source already gave it: the
    /// rule of [`crate::precedence::wins`]. The loser is kept in `also`.
    pub fn set(
        &mut self,
        field: Field,
        value: Value,
        source: Source,
        confidence: f64,
        strength: Strength,
    ) {
        let Some(value) = field.parse(value) else {
            return;
        };
        self.put(
            field,
            Fact {
                value,
                source,
                confidence,
                strength,
                also: Vec::new(),
            },
        );
    }

    /// Records fact `new` of `field` by the rule of [`crate::precedence::wins`], the loser
    /// kept in `also`.
    fn put(&mut self, field: Field, new: Fact) {
        let strength = new.strength;
        match self.fields.get_mut(&field) {
            None => {
                self.fields.insert(field, new);
            }
            Some(old) if crate::precedence::wins(strength, old.strength) => {
                let mut also = std::mem::take(&mut old.also);
                if old.value != new.value {
                    also.push(format!("{} @ {}", old.value, old.source));
                }
                *old = Fact { also, ..new };
            }
            Some(old) => {
                if old.value != new.value {
                    old.also.push(format!("{} @ {}", new.value, new.source));
                }
            }
        }
    }

    /// Takes in the facts of `other` only for the fields not set yet (a weaker reading that may
    /// fill gaps but never overrides, whatever its strength).
    pub fn fill(&mut self, other: &JobFacts) {
        for (field, fact) in &other.fields {
            if !self.fields.contains_key(field) {
                self.fields.insert(*field, fact.clone());
            }
        }
    }

    /// Takes in the facts of one more source (a file read on its own, or from the cache), as
    /// if its values had been set here one by one: the same precedence, and its own losers
    /// kept in `also`.
    pub fn absorb(&mut self, other: &JobFacts) {
        for (field, fact) in &other.fields {
            self.put(
                *field,
                Fact {
                    also: Vec::new(),
                    ..fact.clone()
                },
            );
            if let Some(mine) = self.fields.get_mut(field) {
                mine.also.extend(fact.also.iter().cloned());
            }
        }
    }

    /// The fact recorded for `field`.
    pub fn get(&self, field: Field) -> Option<&Fact> {
        self.fields.get(&field)
    }

    /// Takes `field`'s fact out (a value that another fact overrides).
    pub fn remove(&mut self, field: Field) -> Option<Fact> {
        self.fields.remove(&field)
    }

    /// Cites `source` for `field`'s fact, its value and notes kept (the line a key given twice
    /// was taken from).
    pub fn cite(&mut self, field: Field, source: Source) {
        if let Some(fact) = self.fields.get_mut(&field) {
            fact.source = source;
        }
    }

    /// Notes on `field`'s fact a value that lost to it (its `also`).
    pub fn note(&mut self, field: Field, note: String) {
        if let Some(fact) = self.fields.get_mut(&field) {
            fact.also.push(note);
        }
    }

    /// The value recorded for `field`.
    pub fn value(&self, field: Field) -> Option<&FactValue> {
        self.fields.get(&field).map(|f| &f.value)
    }

    /// The value recorded for `field`, as JSON.
    pub fn json(&self, field: Field) -> Option<Value> {
        self.value(field).map(FactValue::to_json)
    }

    /// The value of `field` as a positive whole number (`None` when unknown); the fact itself
    /// when its value is something else, for the caller's error message.
    pub fn positive_count(&self, field: Field) -> Result<Option<i64>, &Fact> {
        match self.fields.get(&field) {
            None => Ok(None),
            Some(fact) => fact.value.as_i64().filter(|&n| n > 0).map(Some).ok_or(fact),
        }
    }

    /// Fields and facts, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (Field, &Fact)> {
        self.fields.iter().map(|(k, v)| (*k, v))
    }

    /// Whether nothing is known.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sources_are_written_and_read_back_as_text() {
        for (source, text) in [
            (Source::line("a:b/train.sh", 3), "a:b/train.sh:3"),
            (Source::Command, "command"),
            (
                Source::derived("gpus_total / nodes"),
                "derived: gpus_total / nodes",
            ),
            (Source::Meta, "meta"),
        ] {
            assert_eq!(source.to_string(), text);
            assert_eq!(text.parse::<Source>(), Ok(source.clone()));
            let json = serde_json::to_string(&source).unwrap();
            assert_eq!(serde_json::from_str::<Source>(&json).unwrap(), source);
        }
        for bad in ["train.sh", "train.sh:0", "train.sh:x", ":3", ""] {
            let error = bad.parse::<Source>().unwrap_err();
            assert!(error.contains("is no source"), "{bad}: {error}");
        }
    }

    #[test]
    fn stronger_sources_win_and_losers_are_kept() {
        let mut facts = JobFacts::default();
        facts.set(
            Field::Nodes,
            json!(2),
            Source::line("a.sbatch", 2),
            1.0,
            Strength::Header,
        );
        facts.set(
            Field::Nodes,
            json!(4),
            Source::line("a.sbatch", 9),
            1.0,
            Strength::Script,
        );
        facts.set(
            Field::Nodes,
            json!(8),
            Source::line("b.sbatch", 2),
            1.0,
            Strength::Header,
        );
        let fact = facts.get(Field::Nodes).unwrap();
        assert_eq!(fact.value, json!(4));
        assert_eq!(fact.source, "a.sbatch:9");
        assert_eq!(fact.also, vec!["2 @ a.sbatch:2", "8 @ b.sbatch:2"]);
    }
}
