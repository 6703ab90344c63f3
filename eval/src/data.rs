//! Reading dataset records (JSON Lines, one [`Record`] per line) for evaluation.

use std::collections::HashMap;
use std::path::Path;

use schedlm_dataset::BuildError;
use schedlm_dataset::Record;
use schedlm_model::{Objective, Problem, Variant};

use crate::error::EvalError;

/// A record with its line and its compiled problem.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// 1-based line of the record in its file.
    pub line: usize,
    /// The record as read (instance, prompt, label, lower bound, baselines), its label checked.
    pub record: Record,
    /// The record's instance compiled for the dispatcher ([`Problem::new`]), valid.
    pub problem: Problem,
}

/// The records of one file: every record has the same objective and variant.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// The records evaluated, in file order (blank lines and later step records left out).
    pub records: Vec<Loaded>,
    /// Step records after the first step of their instance, left out (a steps build is
    /// evaluated as its instances, through the step-0 record of each).
    pub later_steps: usize,
    /// The objective every record shares (`bsld`, `wait`, `flow`, `makespan`): every value and
    /// gap of the evaluation is of it.
    pub objective: Objective,
    /// The dispatcher variant every record shares (`serial`, or `strict`: no overtaking).
    pub variant: Variant,
}

impl Dataset {
    /// Keeps the first `n` records (`--limit`); true when that left some out. 0 is refused.
    pub fn keep_first(&mut self, n: usize) -> Result<bool, EvalError> {
        if n == 0 {
            return Err(EvalError::Input(
                "--limit 0 leaves no record to evaluate".into(),
            ));
        }
        let cut = n < self.records.len();
        self.records.truncate(n);
        Ok(cut)
    }
}

/// Loads a dataset file for evaluation (records read by [`schedlm_dataset::read_records`]).
/// Blank lines are skipped; any other line must be a valid record with a
/// valid instance and a consistent label ([`Record::check_label`]: its order scores its
/// value under the dispatcher, `0 <= lower_bound <= value`). Ids must be unique, and every record must share
/// the first record's objective and variant (means over different objectives mean nothing).
/// Of step records (`dataset build --records steps`) only each instance's first step is kept:
/// it carries the whole instance, its label, bound and baselines.
pub fn load_dataset(path: &Path) -> Result<Dataset, EvalError> {
    let data_error = |e: BuildError| match e {
        BuildError::Io { source, .. } => EvalError::io(path, source),
        BuildError::Record { line, reason, .. } => EvalError::line(
            path,
            line as usize,
            format!("not a dataset record: {reason}"),
        ),
        other => EvalError::Input(other.to_string()),
    };
    let mut records = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut later_steps = 0;
    for item in schedlm_dataset::read_records(path).map_err(data_error)? {
        let (line_no, record) = item.map_err(data_error)?;
        if !record.is_first_step() {
            later_steps += 1;
            continue;
        }
        let line_no = line_no as usize;
        let loaded = load(path, line_no, record)?;
        if let Some(first) = seen.insert(loaded.record.id.clone(), line_no) {
            return Err(EvalError::line(
                path,
                line_no,
                format!("record id {} already on line {first}", loaded.record.id),
            ));
        }
        records.push(loaded);
    }
    let Some(first) = records.first() else {
        return Err(EvalError::Input(format!("{}: no record", path.display())));
    };
    let (objective, variant) = (first.record.objective, first.record.variant);
    if let Some(odd) = records
        .iter()
        .find(|r| r.record.objective != objective || r.record.variant != variant)
    {
        return Err(EvalError::line(
            path,
            odd.line,
            format!(
                "objective {} / variant {} differs from the first record's {} / {}",
                odd.record.objective.name(),
                odd.record.variant.name(),
                objective.name(),
                variant.name()
            ),
        ));
    }
    Ok(Dataset {
        records,
        later_steps,
        objective,
        variant,
    })
}

fn load(path: &Path, line: usize, record: Record) -> Result<Loaded, EvalError> {
    let problem = Problem::new(&record.instance).map_err(|e| {
        EvalError::line(
            path,
            line,
            format!("record {}: field `instance`: {e}", record.id),
        )
    })?;
    if record.template().is_none() {
        return Err(EvalError::line(
            path,
            line,
            format!(
                "record {}: field `template`: unknown template {}",
                record.id, record.template
            ),
        ));
    }
    // Gaps are measured against the label, so a label that its own order contradicts would
    // make every number of the report wrong.
    record.check_label(&problem).map_err(|e| {
        EvalError::line(
            path,
            line,
            format!("record {}: inconsistent label: {e}", record.id),
        )
    })?;
    Ok(Loaded {
        line,
        record,
        problem,
    })
}
