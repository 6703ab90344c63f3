//! Facts about one job, each with where it was read and how sure we are.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::field::{Field, Kind};

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

/// One value, where it came from and how sure the extractor is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    /// The value (a number, a string or a boolean).
    pub value: Value,
    /// `file:line`, or `command` for the launch command.
    pub source: String,
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
        source: String,
        confidence: f64,
        strength: Strength,
    ) {
        let Some(value) = field.parse(value) else {
            return;
        };
        let new = Fact {
            value,
            source,
            confidence,
            strength,
            also: Vec::new(),
        };
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
            self.set(
                *field,
                fact.value.clone(),
                fact.source.clone(),
                fact.confidence,
                fact.strength,
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

    /// Notes on `field`'s fact a value that lost to it (its `also`).
    pub fn note(&mut self, field: Field, note: String) {
        if let Some(fact) = self.fields.get_mut(&field) {
            fact.also.push(note);
        }
    }

    /// The value recorded for `field`.
    pub fn value(&self, field: Field) -> Option<&Value> {
        self.fields.get(&field).map(|f| &f.value)
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
    fn stronger_sources_win_and_losers_are_kept() {
        let mut facts = JobFacts::default();
        facts.set(
            Field::Nodes,
            json!(2),
            "a.sbatch:2".into(),
            1.0,
            Strength::Header,
        );
        facts.set(
            Field::Nodes,
            json!(4),
            "a.sbatch:9".into(),
            1.0,
            Strength::Script,
        );
        facts.set(
            Field::Nodes,
            json!(8),
            "b.sbatch:2".into(),
            1.0,
            Strength::Header,
        );
        let fact = facts.get(Field::Nodes).unwrap();
        assert_eq!(fact.value, json!(4));
        assert_eq!(fact.source, "a.sbatch:9");
        assert_eq!(fact.also, vec!["2 @ a.sbatch:2", "8 @ b.sbatch:2"]);
    }
}
