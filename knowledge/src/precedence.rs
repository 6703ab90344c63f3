//! Which value of a field is the job's, when several sources give one: the rules, written
//! once.
//!
//! 1. **Source strength** ([`Strength`], strongest first): the launch command given with
//!    `--cmd`, a command line of the job's script, a scheduler header, a job step's options
//!    (`srun --nodes=1` runs one step of a two-node job), a configuration file, a
//!    default in the training code, a log, a value derived from others, the LLM agent. A
//!    stronger source's value wins; of two equal ones the later read wins (a later line
//!    overrides an earlier one, as in a shell script) ([`wins`]). Every loser is kept in the
//!    fact's `also`.
//! 2. **Values that say "not set"** give no fact at all ([`unset`]): null, `auto`, an empty
//!    text, a negative number (`max_steps: -1`), Hydra's `???`, an unresolved `${...}`.
//! 3. **Explicit unknowns**: a field a source gives as a variable the files do not resolve
//!    (`--num_machines $NUM_NODES`) is unknown, and that unknown overrides every weaker value
//!    of the field (a config's `num_machines: 1` is not the job's). A scheduler variable
//!    (`$SLURM_NNODES`), and any unknown node or GPU count of a launcher, is the allocation's:
//!    it overrides configs and code defaults, not the scheduler headers ([`resolve`]).
//! 4. **Code defaults against step counts**: a step count overrides the epoch count that the
//!    training code defaults to (Hugging Face's `max_steps`: "overrides num_train_epochs")
//!    ([`resolve`]).
//! 5. **Evaluation commands fill, never override**: a command that runs an evaluation script
//!    (`eval.py`, `validate.py`, ...) only fills fields no training command gave, unless it
//!    is the user's own `--cmd` ([`add_command`], which every reader of commands calls).

use serde_json::{json, Value};

use crate::facts::{FactValue, Field, JobFacts, Strength};
use crate::vocabulary::EVALUATION_WORDS;

/// Whether a value from a source of strength `new` replaces one from `old`: stronger, or as
/// strong and read later.
pub fn wins(new: Strength, old: Strength) -> bool {
    new <= old
}

/// Whether a written value says "not set" (rule 2 of the module docs).
pub fn unset(value: &Value) -> bool {
    value.is_null()
        || *value == json!("auto")
        || *value == json!("")
        || value.as_f64().is_some_and(|x| x < 0.0)
        || value
            .as_str()
            .is_some_and(|t| t.trim() == "???" || t.contains("${"))
}

/// Rule 5: the facts `found` in one command (read with `strength`) join the job's. A command
/// that runs an evaluation script only fills what no other command gave, unless it is the
/// user's own `--cmd` (what runs, whatever its script is called); any other command's values
/// take part in rule 1.
pub fn add_command(facts: &mut JobFacts, found: &JobFacts, strength: Strength) {
    let script = found.value(Field::Script).and_then(FactValue::as_str);
    if strength != Strength::Command && script.is_some_and(is_evaluation_script) {
        facts.fill(found);
    } else {
        facts.absorb(found);
    }
}

/// Whether a script's name says it evaluates, validates, tests or serves a model rather than
/// trains it: a word of its name (split at `_`, `-`, `.`) is one of [`EVALUATION_WORDS`] or
/// starts with `eval` (`eval.py`, `run_eval.py`, `lm_eval`, `validate.py`, `scripts/inference.py`).
pub fn is_evaluation_script(script: &str) -> bool {
    let name = crate::shell::program(script).to_ascii_lowercase();
    let stem = name.strip_suffix(".py").unwrap_or(&name);
    stem.split(['_', '-', '.'])
        .any(|word| word.starts_with("eval") || EVALUATION_WORDS.contains(&word))
}

/// Applies rules 3 and 4 of the module docs to the facts of one job, once every source has
/// been read.
pub fn resolve(facts: &mut JobFacts) {
    overridden_by_unknowns(facts);
    steps_over_default_epochs(facts);
}

/// Rule 3: a value that a stronger source gives as an unknown variable is taken out and noted
/// on the unknown's fact.
fn overridden_by_unknowns(facts: &mut JobFacts) {
    for &field in Field::ALL {
        let Some(marker) = field.unknown() else {
            continue;
        };
        let Some(unknown) = facts.get(marker) else {
            continue;
        };
        let written = unknown.value.as_str().unwrap_or_default();
        let scheduler = ["$SLURM_", "${SLURM_", "$PBS_", "${PBS_"]
            .iter()
            .any(|v| written.contains(v));
        let allocation = matches!(field, Field::Nodes | Field::GpusPerNode | Field::GpusTotal);
        let strength = if scheduler || allocation {
            unknown.strength.max(Strength::Header)
        } else {
            unknown.strength
        };
        if facts.get(field).is_some_and(|f| f.strength > strength) {
            if let Some(lost) = facts.remove(field) {
                let note = format!(
                    "{} @ {} (overridden by an unknown value)",
                    lost.value, lost.source
                );
                facts.note(marker, note);
            }
        }
    }
}

/// Rule 4: a step count overrides the epochs the code defaults to; kept as a note.
fn steps_over_default_epochs(facts: &mut JobFacts) {
    let code_epochs = facts
        .get(Field::Epochs)
        .is_some_and(|e| e.strength == Strength::Default);
    if code_epochs && facts.get(Field::MaxSteps).is_some() {
        if let Some(epochs) = facts.remove(Field::Epochs) {
            let note = format!(
                "epochs {} @ {} (a default the step count overrides)",
                epochs.value, epochs.source
            );
            facts.note(Field::MaxSteps, note);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::Source;

    #[test]
    fn unknowns_override_weaker_values_and_steps_override_default_epochs() {
        let mut facts = JobFacts::default();
        let set = |facts: &mut JobFacts, f: Field, v: Value, s: Strength| {
            facts.set(f, v, Source::line("x", 1), 1.0, s)
        };
        set(&mut facts, Field::Nodes, json!(1), Strength::Config);
        set(
            &mut facts,
            Field::NodesUnknown,
            json!("--nnodes $N"),
            Strength::Script,
        );
        set(
            &mut facts,
            Field::LearningRate,
            json!(1e-4),
            Strength::Header,
        );
        set(
            &mut facts,
            Field::LearningRateUnknown,
            json!("--lr $LR"),
            Strength::Config,
        );
        set(&mut facts, Field::Epochs, json!(3), Strength::Default);
        set(&mut facts, Field::MaxSteps, json!(500), Strength::Config);
        resolve(&mut facts);
        assert_eq!(facts.get(Field::Nodes), None);
        assert_eq!(facts.get(Field::LearningRate).unwrap().value, json!(1e-4));
        assert_eq!(facts.get(Field::Epochs), None);
        assert!(facts.get(Field::MaxSteps).unwrap().also[0].contains("default"));
        assert!(wins(Strength::Script, Strength::Config));
        assert!(wins(Strength::Config, Strength::Config));
        assert!(!wins(Strength::Default, Strength::Config));
        for v in [
            json!(null),
            json!("auto"),
            json!(""),
            json!(-1),
            json!("???"),
            json!("${a.b}"),
        ] {
            assert!(unset(&v), "{v}");
        }
        assert!(!unset(&json!(0)));
    }
}
