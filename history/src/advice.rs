//! Configuration knowledge: which configurations of a training job fit in memory and how fast
//! each runs, learned from past runs; advice that fills the GPU count and batch size a user
//! left out with the configuration that finishes first, queue wait included.
//!
//! The knowledge is a list of past [`Run`]s (model, nodes, GPUs, local batch size, measured step
//! time, whether it fitted in memory). A configuration's throughput is predicted from the
//! nearest run of the same model that fitted, by [`schedlm_generator::similar`] over the sizes
//! GPUs, nodes and local batch (the matcher of the job history); whether it fits, by dominance
//! over the runs that fitted and those that ran out of memory ([`Knowledge::fits`]).
//! [`score`] measures the throughput error on held-out runs.
//!
//! ```
//! use schedlm_history::advice::{Knowledge, Run};
//!
//! let run = |gpus, local_batch, step_time_s| Run {
//!     model: "bert".into(), nodes: 1, gpus, local_batch, step_time_s, fits: true, line: 0,
//! };
//! let k = Knowledge::new(vec![run(1, 8, 0.5), run(4, 8, 0.6)]);
//! let t = k.throughput("bert", 1, 4, 8).unwrap();
//! assert!((t.samples_per_s - 4.0 * 8.0 / 0.6).abs() < 1e-9); // the 4-GPU run
//! assert!(k.throughput("gpt2", 1, 4, 8).is_none()); // no run of that model
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use schedlm_generator::similar::{self, kind_of, Descriptor, Match};
use serde::Serialize;

/// Why runs could not be read or advice given.
#[derive(Debug, thiserror::Error)]
pub enum AdviceError {
    /// The runs file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: csv::Error,
    },
    /// A row of the runs file is wrong (its line and field are named).
    #[error("{path}:{line}: {message}")]
    Row {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// What is wrong, naming the field.
        message: String,
    },
    /// Nothing is known about the model (no run of it fitted).
    #[error(
        "no past run of model \"{0}\" fitted in memory: nothing to predict its throughput from"
    )]
    UnknownModel(String),
    /// No candidate configuration is predicted to fit.
    #[error(
        "no configuration of \"{model}\" is predicted to fit in memory (the largest local batch \
         that fitted is {largest_fit})"
    )]
    NoCandidate {
        /// The model.
        model: String,
        /// The largest local batch of its runs that fitted.
        largest_fit: u32,
    },
}

/// One past run of a training job in one configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    /// Model (or job type) name.
    pub model: String,
    /// Nodes it ran on.
    pub nodes: u32,
    /// GPUs in all (one data-parallel replica each).
    pub gpus: u32,
    /// Samples per GPU per step.
    pub local_batch: u32,
    /// Measured seconds per step (0 for a run that did not fit).
    pub step_time_s: f64,
    /// Whether it fitted in memory (`ok`), or ran out of it (`oom`).
    pub fits: bool,
    /// 1-based line of the runs file (0 when not read from one).
    pub line: usize,
}

impl Run {
    /// Samples per second: GPUs x local batch / step time.
    pub fn samples_per_s(&self) -> f64 {
        f64::from(self.gpus) * f64::from(self.local_batch) / self.step_time_s
    }
}

/// Reads a runs file: CSV with the header `model,nodes,gpus,local_batch,step_time_s,outcome`
/// (`outcome` is `ok` or `oom`; a run that did not fit may leave `step_time_s` empty).
pub fn read_runs(path: &Path) -> Result<Vec<Run>, AdviceError> {
    let shown = path.display().to_string();
    let mut reader = csv::Reader::from_path(path).map_err(|source| AdviceError::Read {
        path: shown.clone(),
        source,
    })?;
    let want = [
        "model",
        "nodes",
        "gpus",
        "local_batch",
        "step_time_s",
        "outcome",
    ];
    let header = reader.headers().map_err(|source| AdviceError::Read {
        path: shown.clone(),
        source,
    })?;
    if header.iter().collect::<Vec<_>>() != want {
        return Err(AdviceError::Row {
            path: shown,
            line: 1,
            message: format!("the header must be `{}`", want.join(",")),
        });
    }
    let mut runs = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let line = i + 2;
        let record = record.map_err(|source| AdviceError::Read {
            path: shown.clone(),
            source,
        })?;
        let bad = |message: String| AdviceError::Row {
            path: shown.clone(),
            line,
            message,
        };
        let count = |field: usize| -> Result<u32, AdviceError> {
            record[field]
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| {
                    bad(format!(
                        "{} must be a positive integer, got \"{}\"",
                        want[field], &record[field]
                    ))
                })
        };
        let fits = match record[5].trim() {
            "ok" => true,
            "oom" => false,
            other => return Err(bad(format!("outcome must be ok or oom, got \"{other}\""))),
        };
        let step = record[4].trim();
        let step_time_s = match (step.parse::<f64>(), fits) {
            (Ok(t), _) if t.is_finite() && t > 0.0 => t,
            (_, false) if step.is_empty() => 0.0,
            _ => {
                return Err(bad(format!(
                    "step_time_s must be a positive number of seconds, got \"{step}\""
                )))
            }
        };
        let (nodes, gpus) = (count(1)?, count(2)?);
        if nodes > gpus {
            return Err(bad(format!("{nodes} nodes for {gpus} GPUs")));
        }
        runs.push(Run {
            model: record[0].trim().to_string(),
            nodes,
            gpus,
            local_batch: count(3)?,
            step_time_s,
            fits,
            line,
        });
    }
    Ok(runs)
}

/// A predicted throughput and the run it came from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Throughput {
    /// Predicted samples per second.
    pub samples_per_s: f64,
    /// Line of the nearest run in the runs file.
    pub from_line: usize,
    /// Its distance to the configuration asked about.
    pub distance: f64,
}

/// Whether a configuration is predicted to fit in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fit {
    /// At or below the largest local batch that fitted.
    Yes,
    /// At or above the smallest local batch that ran out of memory.
    No,
    /// Between the two (or nothing known): not predicted.
    Unknown,
}

/// Past runs, indexed for matching.
#[derive(Debug, Clone)]
pub struct Knowledge {
    runs: Vec<Run>,
    descriptors: Vec<Descriptor>,
}

fn descriptor(model: &str, nodes: u32, gpus: u32, local_batch: u32) -> Descriptor {
    let mut d = Descriptor::EMPTY;
    d.kinds[0] = kind_of(model);
    d.set_size(0, f64::from(gpus));
    d.set_size(1, f64::from(nodes));
    d.set_size(2, f64::from(local_batch));
    d
}

impl Knowledge {
    /// Knowledge from `runs`.
    pub fn new(runs: Vec<Run>) -> Knowledge {
        let descriptors = runs
            .iter()
            .map(|r| descriptor(&r.model, r.nodes, r.gpus, r.local_batch))
            .collect();
        Knowledge { runs, descriptors }
    }

    /// The runs, in file order.
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// The throughput of `model` on `gpus` GPUs over `nodes` nodes with `local_batch` samples
    /// per GPU: that of the nearest run of the same model that fitted (the earliest in the
    /// file on ties); `None` when no run of the model fitted.
    pub fn throughput(
        &self,
        model: &str,
        nodes: u32,
        gpus: u32,
        local_batch: u32,
    ) -> Option<Throughput> {
        let query = descriptor(model, nodes, gpus, local_batch);
        let usable: Vec<usize> = (0..self.runs.len())
            .filter(|&i| self.runs[i].fits && self.runs[i].model == model)
            .collect();
        let mut nearest = [Match::NONE; 1];
        let found = similar::nearest(
            &query,
            usable.iter().map(|&i| &self.descriptors[i]),
            &mut nearest,
        );
        (found == 1).then(|| {
            let run = &self.runs[usable[nearest[0].index]];
            Throughput {
                // The nearest run's step time, scaled to this configuration's samples per step.
                samples_per_s: f64::from(gpus) * f64::from(local_batch) / run.step_time_s,
                from_line: run.line,
                distance: nearest[0].distance,
            }
        })
    }

    /// Whether `local_batch` samples per GPU of `model` on `gpus` GPUs fit in memory, by
    /// dominance: memory per GPU does not grow with more GPUs (data parallel, or sharded) and
    /// grows with the local batch, so the configuration fits if a run with at most as many GPUs
    /// and at least as large a local batch fitted, and does not if a run with at least as many
    /// GPUs and at most as large a local batch ran out of memory.
    pub fn fits(&self, model: &str, gpus: u32, local_batch: u32) -> Fit {
        let of_model = self.runs.iter().filter(|r| r.model == model);
        let dominated_fit = of_model
            .clone()
            .any(|r| r.fits && r.gpus <= gpus && r.local_batch >= local_batch);
        let dominated_oom = of_model
            .clone()
            .any(|r| !r.fits && r.gpus >= gpus && r.local_batch <= local_batch);
        if dominated_fit {
            Fit::Yes
        } else if dominated_oom {
            Fit::No
        } else {
            Fit::Unknown
        }
    }
}

/// What the advisor weighs for one configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// GPUs.
    pub gpus: u32,
    /// Nodes (GPUs over GPUs per node, rounded up).
    pub nodes: u32,
    /// Samples per GPU per step.
    pub local_batch: u32,
    /// Predicted samples per second.
    pub samples_per_s: f64,
    /// Predicted wait in the queue for that many GPUs, seconds.
    pub wait_s: f64,
    /// Predicted run time: samples / throughput, seconds.
    pub run_s: f64,
    /// wait + run.
    pub completion_s: f64,
    /// Line of the past run the throughput came from.
    pub from_line: usize,
}

/// A job whose configuration is to be filled.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Model (job type) name, as in the runs.
    pub model: String,
    /// Samples to process (epochs x dataset size, or steps x global batch).
    pub samples: f64,
    /// The GPU count, when the user fixed it.
    pub gpus: Option<u32>,
    /// The local batch size, when the user fixed it.
    pub local_batch: Option<u32>,
    /// GPUs per node of the cluster.
    pub gpus_per_node: u32,
    /// GPU counts that can be requested, each with its predicted queue wait in seconds.
    pub waits: Vec<(u32, f64)>,
}

/// Every candidate configuration of `request` predicted to fit, nearest completion first (then
/// fewer GPUs, then the smaller local batch). Candidate GPU counts are those of
/// `request.waits` (or the fixed count, with wait 0 unless listed); candidate local batches
/// are those of the model's fitting runs (or the fixed one).
pub fn advise(k: &Knowledge, request: &Request) -> Result<Vec<Candidate>, AdviceError> {
    let model = &request.model;
    let fitting = batches_that_fit(k, model);
    let Some(&largest_fit) = fitting.last() else {
        return Err(AdviceError::UnknownModel(model.clone()));
    };
    let batches = match request.local_batch {
        Some(b) => vec![b],
        None => fitting,
    };
    let waits: BTreeMap<u32, f64> = request.waits.iter().copied().collect();
    let gpu_options: Vec<(u32, f64)> = match request.gpus {
        Some(g) => vec![(g, waits.get(&g).copied().unwrap_or(0.0))],
        None => waits.into_iter().collect(),
    };
    let mut out = Vec::new();
    for &(gpus, wait_s) in &gpu_options {
        let nodes = gpus.div_ceil(request.gpus_per_node.max(1));
        for &local_batch in &batches {
            if k.fits(model, gpus, local_batch) != Fit::Yes {
                continue;
            }
            let Some(t) = k.throughput(model, nodes, gpus, local_batch) else {
                continue;
            };
            let run_s = request.samples / t.samples_per_s;
            out.push(Candidate {
                gpus,
                nodes,
                local_batch,
                samples_per_s: t.samples_per_s,
                wait_s,
                run_s,
                completion_s: wait_s + run_s,
                from_line: t.from_line,
            });
        }
    }
    if out.is_empty() {
        return Err(AdviceError::NoCandidate {
            model: model.clone(),
            largest_fit,
        });
    }
    out.sort_by(|a, b| {
        a.completion_s
            .total_cmp(&b.completion_s)
            .then(a.gpus.cmp(&b.gpus))
            .then(a.local_batch.cmp(&b.local_batch))
    });
    Ok(out)
}

/// The distinct local batches of `model`'s runs that fitted, ascending.
fn batches_that_fit(k: &Knowledge, model: &str) -> Vec<u32> {
    let mut batches: Vec<u32> = k
        .runs()
        .iter()
        .filter(|r| r.model == model && r.fits)
        .map(|r| r.local_batch)
        .collect();
    batches.sort_unstable();
    batches.dedup();
    batches
}

/// Throughput error on held-out runs, for one model or all.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Score {
    /// The model, or `all`.
    pub model: String,
    /// Held-out runs scored.
    pub runs: usize,
    /// Mean of |predicted - measured| / measured throughput.
    pub mape: f64,
    /// Median of the same.
    pub median_ape: f64,
}

/// The scores as a table, one model per line.
pub fn score_table(scores: &[Score]) -> String {
    let mut text = format!(
        "{:<10} {:>6} {:>10} {:>14}",
        "model", "runs", "MAPE %", "median APE %"
    );
    for s in scores {
        let (mape, median) = (100.0 * s.mape, 100.0 * s.median_ape);
        text += &format!(
            "\n{:<10} {:>6} {mape:>10.1} {median:>14.1}",
            s.model, s.runs
        );
    }
    text
}

/// Parses a queue wait `GPUS=SECONDS` (`--wait` of `advise fill`).
pub fn parse_wait(s: &str) -> Result<(u32, f64), String> {
    let (gpus, seconds) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not GPUS=SECONDS"))?;
    let gpus: u32 = (gpus.trim().parse().ok())
        .filter(|&g| g > 0)
        .ok_or_else(|| format!("`{s}`: GPUS must be a positive integer"))?;
    let seconds: f64 = (seconds.trim().parse().ok())
        .filter(|w: &f64| w.is_finite() && *w >= 0.0)
        .ok_or_else(|| format!("`{s}`: SECONDS must be a number >= 0"))?;
    Ok((gpus, seconds))
}

/// Holds out each fitting run with probability `fraction` (a hash of `seed` and its index, so
/// the split is the same on every machine), learns from the others, and scores the predicted
/// throughput of the held-out ones: one [`Score`] per model (name order), then `all`.
pub fn score(runs: &[Run], fraction: f64, seed: u64) -> Vec<Score> {
    let held_out = |i: usize| {
        let h = kind_of(&format!("{seed}:{i}"));
        (h % 1_000_000) as f64 / 1_000_000.0 < fraction
    };
    let mut train = Vec::new();
    let mut test = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        if r.fits && held_out(i) {
            test.push(r);
        } else {
            train.push(r.clone());
        }
    }
    let k = Knowledge::new(train);
    let mut errors: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in &test {
        if let Some(t) = k.throughput(&r.model, r.nodes, r.gpus, r.local_batch) {
            let measured = r.samples_per_s();
            errors
                .entry(&r.model)
                .or_default()
                .push((t.samples_per_s - measured).abs() / measured);
        }
    }
    let all: Vec<f64> = errors.values().flatten().copied().collect();
    let mut scores: Vec<Score> = errors.iter().map(|(model, e)| summary(model, e)).collect();
    scores.push(summary("all", &all));
    scores
}

fn summary(model: &str, errors: &[f64]) -> Score {
    let mut sorted = errors.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    Score {
        model: model.to_string(),
        runs: n,
        mape: if n == 0 {
            0.0
        } else {
            sorted.iter().sum::<f64>() / n as f64
        },
        median_ape: schedlm_model::quantile::median(&sorted).unwrap_or(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(gpus: u32, local_batch: u32, step_time_s: f64, fits: bool) -> Run {
        Run {
            model: "m".into(),
            nodes: gpus.div_ceil(4),
            gpus,
            local_batch,
            step_time_s,
            fits,
            line: 0,
        }
    }

    #[test]
    fn fit_is_bounded_by_the_largest_fit_and_the_smallest_oom() {
        let k = Knowledge::new(vec![
            run(1, 8, 1.0, true),
            run(1, 32, 0.0, false),
            run(4, 64, 0.0, false),
        ]);
        assert_eq!(k.fits("m", 1, 8), Fit::Yes);
        assert_eq!(k.fits("m", 4, 4), Fit::Yes, "more GPUs, smaller batch");
        assert_eq!(k.fits("m", 1, 16), Fit::Unknown);
        assert_eq!(k.fits("m", 1, 64), Fit::No);
        assert_eq!(
            k.fits("m", 8, 64),
            Fit::Unknown,
            "more GPUs than the OOM run"
        );
        assert_eq!(k.fits("m", 2, 64), Fit::No);
        assert_eq!(k.fits("other", 1, 1), Fit::Unknown);
    }

    #[test]
    fn the_advice_trades_queue_wait_against_speed() {
        // 8 GPUs run 6x faster than 1; waiting an hour for them pays off only for long jobs.
        let k = Knowledge::new(vec![run(1, 16, 1.0, true), run(8, 16, 1.333_333, true)]);
        let request = |samples| Request {
            model: "m".into(),
            samples,
            gpus: None,
            local_batch: None,
            gpus_per_node: 4,
            waits: vec![(1, 0.0), (8, 3_600.0)],
        };
        let short = advise(&k, &request(16.0 * 1_000.0)).unwrap();
        assert_eq!(short[0].gpus, 1, "1,000 s now beats 3,600 s + 167 s");
        let long = advise(&k, &request(16.0 * 100_000.0)).unwrap();
        assert_eq!((long[0].gpus, long[0].nodes), (8, 2));
        assert!((long[0].run_s - 100_000.0 * 1.333_333 / 8.0).abs() < 1e-6);
        assert!(matches!(
            advise(
                &k,
                &Request {
                    model: "x".into(),
                    ..request(1.0)
                }
            ),
            Err(AdviceError::UnknownModel(_))
        ));
        let too_big = Request {
            local_batch: Some(64),
            ..request(1.0)
        };
        let e = advise(&k, &too_big).unwrap_err().to_string();
        assert!(e.contains("largest local batch that fitted is 16"), "{e}");
    }

    #[test]
    fn scoring_holds_out_runs_and_is_exact_on_duplicates() {
        // Every configuration twice with the same step time: a held-out run's twin predicts it.
        let mut runs = Vec::new();
        for gpus in [1, 2, 4, 8] {
            for b in [4, 8, 16] {
                let t = 0.1 * f64::from(b) + 0.05 * f64::from(gpus);
                runs.push(run(gpus, b, t, true));
                runs.push(run(gpus, b, t, true));
            }
        }
        let scores = score(&runs, 0.3, 7);
        let all = scores.last().unwrap();
        assert_eq!(all.model, "all");
        assert!(all.runs > 0 && all.runs < runs.len());
        assert!(all.mape < 0.2, "{all:?}");
        assert_eq!(score(&runs, 0.3, 7), scores, "deterministic");
    }

    #[test]
    fn bad_rows_name_their_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.csv");
        let head = "model,nodes,gpus,local_batch,step_time_s,outcome\n";
        for (row, expect) in [
            ("m,1,0,8,1.0,ok\n", "gpus"),
            ("m,1,1,8,-1,ok\n", "step_time_s"),
            ("m,1,1,8,1.0,maybe\n", "outcome"),
            ("m,2,1,8,1.0,ok\n", "2 nodes for 1 GPUs"),
        ] {
            std::fs::write(&path, format!("{head}m,1,1,8,1.0,ok\n{row}")).unwrap();
            let e = read_runs(&path).unwrap_err().to_string();
            assert!(e.contains(":3:") && e.contains(expect), "{e}");
        }
        std::fs::write(&path, format!("{head}m,1,1,8,,oom\n")).unwrap();
        assert!(!read_runs(&path).unwrap()[0].fits);
        std::fs::write(&path, "a,b\n").unwrap();
        assert!(read_runs(&path).unwrap_err().to_string().contains("header"));
    }
}
