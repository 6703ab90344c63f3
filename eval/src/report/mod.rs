//! Report files: `summary.json` (every number), a per-instance CSV, `report.md` and a
//! self-contained `report.html` with inline SVG plots.
//!
//! Snapshot reports write `instances.csv` (one [`Row`] per policy and record) and
//! `baselines.csv` (every classic rule's value per record); online reports write
//! `windows.csv` (one row per policy and window). Every number of the Markdown and HTML
//! comes from `summary.json`, and every number of `summary.json` from the CSV
//! ([`crate::stats`] says how).

pub mod html;
pub mod markdown;
pub mod online;
pub mod plot;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use schedlm_solver::rules::Rule;

use crate::baseline::RecordRules;
use crate::data::Dataset;
use crate::error::EvalError;
use crate::snapshot::{AnswerExample, Evaluation, Row, SnapshotOptions};
use crate::stats::{summarize_with, Stats};

/// Settings of a snapshot run, recorded in the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Time budget of `optimal` per instance, in seconds (`--time-limit`).
    pub optimal_time_limit_s: f64,
    /// Node limit of `optimal`'s branch and bound (`--node-limit`); `null` when none.
    pub optimal_node_limit: Option<u64>,
    /// Seed of `random` and of local search (`--seed`).
    pub seed: u64,
    /// Candidate orders local search (`ls`) evaluates per instance (`--ls-evaluations`).
    pub ls_evaluations: u64,
}

/// `summary.json` of a snapshot evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotSummary {
    /// The data file evaluated, as given (`--data`).
    pub data: String,
    /// The records' objective (`bsld`, `wait`, `flow`, `makespan`): every value and gap is of it.
    pub objective: String,
    /// The records' dispatcher variant (`serial` or `strict`).
    pub variant: String,
    /// Number of records evaluated (each policy has one row per record).
    pub records: usize,
    /// Records whose reference is a proven optimum (the others: a lower bound).
    pub proven: usize,
    /// The limits and seed of the run.
    pub settings: Settings,
    /// Remarks on the inputs and answers: missing or unknown predictions, records whose
    /// baselines disagree with the evaluator's dispatch of the rules, failed and cut-off answers.
    pub notes: Vec<String>,
    /// A few answers of each text policy beside the label.
    #[serde(default)]
    pub examples: Vec<AnswerExample>,
    /// Every summary number ([`Stats`]: ranking, per-policy numbers, pairs, groups, the rules),
    /// at the top level of `summary.json`.
    #[serde(flatten)]
    pub stats: Stats,
}

impl SnapshotSummary {
    /// What gaps are measured against, in words.
    pub fn reference_words(&self) -> String {
        if self.proven == self.records {
            "the proven optimum".into()
        } else if self.proven == 0 {
            "the lower bound (no record is proven optimal; gaps are upper bounds)".into()
        } else {
            format!(
                "the proven optimum on {} of {} records, the lower bound on the rest (an upper \
                 bound on the true gap there)",
                self.proven, self.records
            )
        }
    }
}

/// Builds the summary of an evaluation.
pub fn snapshot_summary(
    data_path: &Path,
    data: &Dataset,
    eval: &Evaluation,
    options: &SnapshotOptions,
) -> SnapshotSummary {
    SnapshotSummary {
        data: data_path.display().to_string(),
        objective: data.objective.name().to_string(),
        variant: data.variant.name().to_string(),
        records: data.records.len(),
        proven: data
            .records
            .iter()
            .filter(|r| r.record.proven_optimal)
            .count(),
        settings: Settings {
            optimal_time_limit_s: options.time_limit.as_secs_f64(),
            optimal_node_limit: options.node_limit,
            seed: options.seed,
            ls_evaluations: options.ls_evaluations,
        },
        notes: eval.notes.iter().chain(&eval.warnings).cloned().collect(),
        examples: eval.examples.clone(),
        stats: summarize_with(&eval.policies, &eval.rows, &eval.rules, &options.verdict),
    }
}

/// Writes `instances.csv`, `summary.json`, `report.md`, `report.html` and `baselines.csv`
/// ([`write_baselines`]) into `dir`; returns the paths written.
pub fn write_snapshot_report(
    dir: &Path,
    summary: &SnapshotSummary,
    eval: &Evaluation,
) -> Result<Vec<PathBuf>, EvalError> {
    std::fs::create_dir_all(dir).map_err(|e| EvalError::io(dir, e))?;
    let (csv_path, rows) = (dir.join("instances.csv"), &eval.rows);
    write_rows(&csv_path, rows)?;
    let json = serde_json::to_string_pretty(summary)
        .map_err(|e| EvalError::Report(format!("summary.json: {e}")))?;
    let files = [
        ("summary.json", json + "\n"),
        ("report.md", markdown::snapshot(summary)),
        ("report.html", html::snapshot(summary, rows)?),
    ];
    let mut written = vec![csv_path];
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| EvalError::io(&path, e))?;
        written.push(path);
    }
    written.push(write_baselines(dir, &eval.rules)?);
    Ok(written)
}

impl SnapshotSummary {
    /// The policies whose every answer failed: they did not schedule.
    pub fn dead_policies(&self) -> Vec<&str> {
        let dead = self.stats.policies.iter().filter(|p| p.all_failed());
        dead.map(|p| p.policy.as_str()).collect()
    }
}

/// Writes `baselines.csv` into `dir`: per record (file order) its id and line, where the rule
/// values come from (`record`: its `baselines`; `computed`: dispatched here), every classic
/// rule's value (one column per rule of [`Rule::CLASSIC`]), and the best rule per instance
/// with its value. Returns the path written.
pub fn write_baselines(dir: &Path, rules: &[RecordRules]) -> Result<PathBuf, EvalError> {
    std::fs::create_dir_all(dir).map_err(|e| EvalError::io(dir, e))?;
    let path = dir.join("baselines.csv");
    let bad = |e: csv::Error| EvalError::Report(format!("{}: {e}", path.display()));
    let mut w = csv::Writer::from_path(&path).map_err(bad)?;
    let mut header = vec!["record".to_string(), "line".into(), "source".into()];
    header.extend(Rule::CLASSIC.iter().map(|r| r.name().to_string()));
    header.extend(["best_rule".to_string(), "best_rule_value".into()]);
    w.write_record(&header).map_err(bad)?;
    for r in rules {
        let mut cells = vec![
            r.record.clone(),
            r.line.to_string(),
            if r.from_record { "record" } else { "computed" }.to_string(),
        ];
        cells.extend(Rule::CLASSIC.iter().map(|rule| {
            r.values
                .iter()
                .find(|(x, _)| x == rule)
                .map(|(_, v)| v.to_string())
                .unwrap_or_default()
        }));
        cells.extend([r.best_rule.name().to_string(), r.best_value.to_string()]);
        w.write_record(&cells).map_err(bad)?;
    }
    w.flush().map_err(|e| EvalError::io(&path, e))?;
    Ok(path)
}

/// Writes rows as CSV with a header (empty cells for absent numbers).
pub fn write_rows<T: Serialize>(path: &Path, rows: &[T]) -> Result<(), EvalError> {
    let mut w = csv::Writer::from_path(path)
        .map_err(|e| EvalError::Report(format!("{}: {e}", path.display())))?;
    for row in rows {
        w.serialize(row)
            .map_err(|e| EvalError::Report(format!("{}: {e}", path.display())))?;
    }
    w.flush().map_err(|e| EvalError::io(path, e))
}

/// Reads rows written by [`write_rows`]; errors name the CSV record.
pub fn read_rows(path: &Path) -> Result<Vec<Row>, EvalError> {
    let mut r = csv::Reader::from_path(path)
        .map_err(|e| EvalError::Report(format!("{}: {e}", path.display())))?;
    r.deserialize()
        .enumerate()
        .map(|(i, row)| row.map_err(|e| EvalError::line(path, i + 2, e.to_string())))
        .collect()
}

/// A number for people: 4 significant digits, no exponent for ordinary magnitudes.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    if a == 0.0 || (1e-3..1e6).contains(&a) {
        let decimals = if a >= 1000.0 {
            1
        } else if a >= 1.0 {
            3
        } else {
            4
        };
        format!("{v:.decimals$}")
    } else {
        format!("{v:.3e}")
    }
}

/// A share or gap as a percentage.
pub fn pct(v: Option<f64>) -> String {
    match v {
        // Two decimals below 10%, where models and the best rules sit; one above.
        Some(x) if x.is_finite() && x.abs() < 0.1 => format!("{:.2}%", x * 100.0),
        Some(x) if x.is_finite() => format!("{:.1}%", x * 100.0),
        _ => "n/a".into(),
    }
}

/// Seconds, adapted to the magnitude.
pub fn secs(v: Option<f64>) -> String {
    match v {
        Some(s) if s < 1e-5 => format!("{:.1} µs", s * 1e6),
        Some(s) if s < 1e-3 => format!("{:.0} µs", s * 1e6),
        Some(s) if s < 1.0 => format!("{:.1} ms", s * 1e3),
        Some(s) => format!("{s:.2} s"),
        None => "n/a".into(),
    }
}
