//! The report of an online evaluation: `windows.csv` (one row per policy and window),
//! `jobs.csv` (one row per replayed job), `series.csv` (queue length and footprint after every
//! event), `summary.json`, `report.md` and `report.html` with the three views of the seed
//! study's figure: mean bsld over time, CDF of queue length, CDF of resource footprint.

use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};

use schedlm_generator::trace::swf::CleaningReport;
use serde::{Deserialize, Serialize};

use super::html::{escape, figure, page, table};
use super::markdown::table as table_md;
use super::plot::{svg, weighted_cdf, Chart, Line};
use super::{num, pct, write_rows};
use crate::error::EvalError;
use crate::online::{OnlineEvaluation, Replay};
use crate::replay::Window;

/// One line of `windows.csv`: one policy on one window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowRow {
    /// The policy's report name (the spec as written).
    pub policy: String,
    /// Index of the window in the summary's `windows`, from 0.
    pub window: usize,
    /// Index of the window's first job in the cleaned trace.
    pub start: usize,
    /// SWF job number of the window's first job.
    pub first_job: i64,
    /// Number of jobs replayed in the window.
    pub jobs: usize,
    /// Mean bounded slowdown of the window's jobs, each max((wait + run) / max(run, 10), 1).
    pub mean_bsld: f64,
    /// Largest bounded slowdown of a job of the window.
    pub max_bsld: f64,
    /// Seconds.
    pub mean_wait: f64,
    /// Seconds.
    pub max_wait: i64,
    /// Used core-seconds / (cores x makespan).
    pub utilization: f64,
    /// Last end - first submit, seconds.
    pub makespan: i64,
    /// Jobs killed at their walltime.
    pub killed: usize,
    /// Distinct event instants simulated.
    pub steps: usize,
    /// Times the policy was asked for an order.
    pub decisions: usize,
    /// Decisions that fell back to FCFS.
    pub fallbacks: usize,
    /// Requests to an endpoint that were retried.
    #[serde(default)]
    pub retries: usize,
    /// Decisions asked outside the text policy's training distribution.
    #[serde(default)]
    pub outside_training: usize,
    /// Wall-clock seconds of the replay.
    pub seconds: f64,
}

/// One policy over all windows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnlinePolicyStats {
    /// The policy's report name (the spec as written).
    pub policy: String,
    /// Number of jobs replayed, over all windows.
    pub jobs: usize,
    /// Mean bsld over every job of every window.
    pub mean_bsld: f64,
    /// Mean over windows of each window's mean bsld (RLScheduler's figure).
    pub mean_window_bsld: f64,
    /// Mean wait over every job, seconds.
    pub mean_wait: f64,
    /// Mean over windows of each window's utilization.
    pub mean_utilization: f64,
    /// Jobs killed at their walltime, over all windows.
    pub killed: usize,
    /// Times the policy was asked for an order, over all windows (0 for static rules, which
    /// keep a sorted queue).
    pub decisions: usize,
    /// Decisions that fell back to FCFS (invalid answer, solver error), over all windows.
    pub fallbacks: usize,
    /// Requests to an endpoint that were retried, over all windows.
    #[serde(default)]
    pub retries: usize,
    /// Decisions asked outside the text policy's training distribution (a shown queue of a
    /// length it was not trained on, ...), over all windows.
    #[serde(default)]
    pub outside_training: usize,
    /// Wall-clock seconds of all the policy's replays.
    pub seconds: f64,
}

/// `summary.json` of an online evaluation (and of `schedlm replay`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnlineSummary {
    /// The trace file, as given (`--trace`).
    pub trace: String,
    /// Jobs in the trace after cleaning (the windows are cut from these).
    pub jobs_in_trace: usize,
    /// `pool` or `nodes:N:K`.
    pub cluster: String,
    /// The planning estimate; `null` when jobs are planned with their walltimes.
    pub estimate: Option<String>,
    /// The start rule (`strict`, `easy`, `conservative`; `--start-rule`).
    pub start_rule: String,
    /// Seed of the random windows, of `random` and of local search (`--seed`).
    pub seed: u64,
    /// F1's t_origin: the trace's first submit.
    pub f1_origin: i64,
    /// The windows replayed, in order: `start` (index in the cleaned trace), `count`,
    /// `first_job` (SWF job number).
    pub windows: Vec<Window>,
    /// Policies by mean bsld, best first.
    pub ranking: Vec<String>,
    /// Each policy's numbers over every window, in command-line order.
    pub policies: Vec<OnlinePolicyStats>,
    /// The rows of `windows.csv`: one per policy and window, policy-major.
    pub per_window: Vec<WindowRow>,
    /// What the trace's cleaning kept and skipped (docs/traces.md).
    pub cleaning: CleaningReport,
}

fn window_row(r: &Replay, windows: &[Window]) -> WindowRow {
    let s = &r.result.summary;
    let w = windows.get(r.window);
    WindowRow {
        policy: r.policy.clone(),
        window: r.window,
        start: w.map_or(0, |w| w.start),
        first_job: w.map_or(-1, |w| w.first_job),
        jobs: s.jobs,
        mean_bsld: s.mean_bsld,
        max_bsld: s.max_bsld,
        mean_wait: s.mean_wait,
        max_wait: s.max_wait,
        utilization: s.utilization,
        makespan: s.makespan,
        killed: s.killed,
        steps: s.steps,
        decisions: r.decisions,
        fallbacks: r.fallbacks,
        retries: r.retries,
        outside_training: r.outside_training,
        seconds: r.seconds,
    }
}

fn policy_stats(policy: &str, rows: &[&WindowRow]) -> OnlinePolicyStats {
    let jobs: usize = rows.iter().map(|r| r.jobs).sum();
    let pooled = |f: fn(&WindowRow) -> f64| {
        rows.iter().map(|r| f(r) * r.jobs as f64).sum::<f64>() / jobs.max(1) as f64
    };
    let over_windows = |f: fn(&WindowRow) -> f64| {
        rows.iter().map(|r| f(r)).sum::<f64>() / rows.len().max(1) as f64
    };
    OnlinePolicyStats {
        policy: policy.to_string(),
        jobs,
        mean_bsld: pooled(|r| r.mean_bsld),
        mean_window_bsld: over_windows(|r| r.mean_bsld),
        mean_wait: pooled(|r| r.mean_wait),
        mean_utilization: over_windows(|r| r.utilization),
        killed: rows.iter().map(|r| r.killed).sum(),
        decisions: rows.iter().map(|r| r.decisions).sum(),
        fallbacks: rows.iter().map(|r| r.fallbacks).sum(),
        retries: rows.iter().map(|r| r.retries).sum(),
        outside_training: rows.iter().map(|r| r.outside_training).sum(),
        seconds: rows.iter().map(|r| r.seconds).sum(),
    }
}

/// Builds the summary of an online evaluation.
pub fn online_summary(eval: &OnlineEvaluation) -> OnlineSummary {
    let per_window: Vec<WindowRow> = eval
        .replays
        .iter()
        .map(|r| window_row(r, &eval.windows))
        .collect();
    let policies: Vec<OnlinePolicyStats> = eval
        .policies
        .iter()
        .map(|p| {
            let rows: Vec<&WindowRow> = per_window.iter().filter(|r| &r.policy == p).collect();
            policy_stats(p, &rows)
        })
        .collect();
    let mut ranking: Vec<&OnlinePolicyStats> = policies.iter().collect();
    ranking.sort_by(|a, b| a.mean_bsld.total_cmp(&b.mean_bsld));
    OnlineSummary {
        trace: eval.trace.clone(),
        jobs_in_trace: eval.jobs_in_trace,
        cluster: eval.cluster.clone(),
        estimate: eval.estimate.clone(),
        start_rule: eval.start_rule.name().to_string(),
        seed: eval.seed,
        f1_origin: eval.origin,
        windows: eval.windows.clone(),
        ranking: ranking.iter().map(|p| p.policy.clone()).collect(),
        policies,
        per_window,
        cleaning: eval.cleaning.clone(),
    }
}

/// A CSV file written field by field through the csv crate (which quotes what needs quoting:
/// policy names are the user's words, such as `openai:URL#MODEL`). A full-trace replay has
/// hundreds of thousands of rows: fields are formatted into one reused buffer.
struct CsvFile {
    path: PathBuf,
    out: csv::Writer<File>,
    field: String,
}

impl CsvFile {
    fn create(path: PathBuf) -> Result<CsvFile, EvalError> {
        let file = File::create(&path).map_err(|e| EvalError::io(&path, e))?;
        Ok(CsvFile {
            path,
            out: csv::WriterBuilder::new()
                .buffer_capacity(1 << 20)
                .from_writer(file),
            field: String::with_capacity(64),
        })
    }

    fn field(&mut self, value: impl std::fmt::Display) -> Result<(), EvalError> {
        self.field.clear();
        let _ = write!(self.field, "{value}");
        self.out.write_field(&self.field).map_err(|e| self.error(e))
    }

    fn end_record(&mut self) -> Result<(), EvalError> {
        self.out
            .write_record(None::<&[u8]>)
            .map_err(|e| self.error(e))
    }

    fn error(&self, e: csv::Error) -> EvalError {
        EvalError::Report(format!("{}: {e}", self.path.display()))
    }

    fn finish(mut self) -> Result<PathBuf, EvalError> {
        self.out.flush().map_err(|e| EvalError::io(&self.path, e))?;
        Ok(self.path)
    }
}

/// `jobs.csv`: one row per replayed job, policy-major, then window, then trace order.
fn write_jobs(dir: &Path, eval: &OnlineEvaluation) -> Result<PathBuf, EvalError> {
    let mut csv = CsvFile::create(dir.join("jobs.csv"))?;
    let header = [
        "policy", "window", "id", "submit", "start", "end", "wait", "run", "bsld", "killed",
        "server",
    ];
    for name in header {
        csv.field(name)?;
    }
    csv.end_record()?;
    for r in &eval.replays {
        for j in &r.result.jobs {
            csv.field(&r.policy)?;
            csv.field(r.window)?;
            csv.field(&j.id)?;
            for t in [j.submit, j.start, j.end, j.wait, j.run] {
                csv.field(t)?;
            }
            csv.field(format_args!("{:.6}", j.bsld))?;
            csv.field(j.killed)?;
            csv.field(eval.servers.get(j.server).map_or("", String::as_str))?;
            csv.end_record()?;
        }
    }
    csv.finish()
}

/// `series.csv`: the state after every event: waiting and running jobs, used fraction of
/// each resource (`used_cores`, ...).
fn write_series(dir: &Path, eval: &OnlineEvaluation) -> Result<PathBuf, EvalError> {
    let mut csv = CsvFile::create(dir.join("series.csv"))?;
    for name in ["policy", "window", "time", "queue", "running"] {
        csv.field(name)?;
    }
    if let Some(r) = eval.replays.first() {
        for name in &r.result.series.resources {
            csv.field(format_args!("used_{name}"))?;
        }
    }
    csv.end_record()?;
    for r in &eval.replays {
        let s = &r.result.series;
        for i in 0..s.len() {
            csv.field(&r.policy)?;
            csv.field(r.window)?;
            csv.field(s.time[i])?;
            csv.field(s.queue[i])?;
            csv.field(s.running[i])?;
            for u in s.used_at(i) {
                csv.field(format_args!("{u:.6}"))?;
            }
            csv.end_record()?;
        }
    }
    csv.finish()
}

/// Writes every file of an online report into `dir`: `windows.csv`, `jobs.csv`,
/// `series.csv`, `summary.json`, `report.md`, `report.html`; returns the paths written.
pub fn write_online_report(
    dir: &Path,
    summary: &OnlineSummary,
    eval: &OnlineEvaluation,
) -> Result<Vec<PathBuf>, EvalError> {
    std::fs::create_dir_all(dir).map_err(|e| EvalError::io(dir, e))?;
    let windows = dir.join("windows.csv");
    write_rows(&windows, &summary.per_window)?;
    let mut written = vec![windows, write_jobs(dir, eval)?, write_series(dir, eval)?];
    let json = serde_json::to_string_pretty(summary)
        .map_err(|e| EvalError::Report(format!("summary.json: {e}")))?;
    let files = [
        ("summary.json", json + "\n"),
        ("report.md", markdown(summary)),
        ("report.html", html(summary, eval)?),
    ];
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| EvalError::io(&path, e))?;
        written.push(path);
    }
    Ok(written)
}

/// The headline sentences of an online report.
pub fn headline(s: &OnlineSummary) -> Vec<String> {
    let find = |name: &str| s.policies.iter().find(|p| p.policy == name);
    let mut out = Vec::new();
    if let Some(best) = s.ranking.first().and_then(|n| find(n)) {
        let mut line = format!(
            "Best online: **{}**, mean bsld {} (mean wait {} s, utilization {}).",
            best.policy,
            num(best.mean_bsld),
            num(best.mean_wait),
            pct(Some(best.mean_utilization))
        );
        if let Some(fcfs) = find("fcfs").filter(|f| f.policy != best.policy) {
            let _ = write!(line, " FCFS: mean bsld {}.", num(fcfs.mean_bsld));
        }
        out.push(line);
    }
    for p in s.policies.iter().filter(|p| p.fallbacks > 0) {
        out.push(format!(
            "**{}** fell back to FCFS at {} of {} decisions (invalid answer or solver error).",
            p.policy, p.fallbacks, p.decisions
        ));
    }
    for p in s.policies.iter().filter(|p| p.outside_training > 0) {
        out.push(format!(
            "**{}** was asked outside its training distribution at {} of {} decisions (queue \
             lengths or a template it was not trained on; see `--text-queue`).",
            p.policy, p.outside_training, p.decisions
        ));
    }
    for p in s.policies.iter().filter(|p| p.retries > 0) {
        out.push(format!(
            "**{}**: {} requests were retried over {} decisions.",
            p.policy, p.retries, p.decisions
        ));
    }
    out.push(format!(
        "{} window(s) of {} replayed with start rule {} (seed {}); each from an empty cluster.",
        s.windows.len(),
        s.trace,
        s.start_rule,
        s.seed
    ));
    out
}

fn policy_table(s: &OnlineSummary) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "policy",
        "jobs",
        "mean bsld",
        "mean of window bsld",
        "mean wait (s)",
        "utilization",
        "decisions",
        "fallbacks",
        "retries",
        "replay (s)",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let rows = s
        .ranking
        .iter()
        .filter_map(|n| s.policies.iter().find(|p| &p.policy == n))
        .map(|p| {
            vec![
                p.policy.clone(),
                p.jobs.to_string(),
                num(p.mean_bsld),
                num(p.mean_window_bsld),
                num(p.mean_wait),
                pct(Some(p.mean_utilization)),
                p.decisions.to_string(),
                p.fallbacks.to_string(),
                p.retries.to_string(),
                format!("{:.2}", p.seconds),
            ]
        })
        .collect();
    (header, rows)
}

/// Mean bsld per window (rows) and policy (columns).
fn window_table(s: &OnlineSummary) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["window".to_string(), "first job (SWF number)".to_string()];
    header.extend(s.policies.iter().map(|p| p.policy.clone()));
    let rows = s
        .windows
        .iter()
        .enumerate()
        .map(|(k, w)| {
            let mut row = vec![k.to_string(), w.first_job.to_string()];
            row.extend(s.policies.iter().map(|p| {
                s.per_window
                    .iter()
                    .find(|r| r.window == k && r.policy == p.policy)
                    .map_or("-".into(), |r| {
                        format!("{} / {}", num(r.mean_bsld), pct(Some(r.utilization)))
                    })
            }));
            row
        })
        .collect();
    (header, rows)
}

/// `report.md` of an online evaluation.
pub fn markdown(s: &OnlineSummary) -> String {
    let mut md = format!("# schedlm online evaluation on {}\n\n", s.trace);
    for line in headline(s) {
        let _ = writeln!(md, "- {line}");
    }
    md.push_str("\n## Policies (best first)\n\n");
    md.push_str(&table_md(policy_table(s)));
    md.push_str("\n## Mean bsld / utilization per window\n\n");
    md.push_str(&table_md(window_table(s)));
    md.push_str(
        "\nEvery number comes from `summary.json`, computed from `windows.csv` and `jobs.csv` \
         (definitions: docs/eval.md); the plots of `report.html` from `jobs.csv` and \
         `series.csv`.\n",
    );
    md
}

/// `report.html` of an online evaluation.
fn html(s: &OnlineSummary, eval: &OnlineEvaluation) -> Result<String, EvalError> {
    let title = format!("schedlm online evaluation on {}", s.trace);
    let mut b = format!("<h1>{}</h1>\n<ul class=\"headline\">\n", escape(&title));
    for line in headline(s) {
        let bold: String = escape(&line)
            .split("**")
            .enumerate()
            .map(|(i, p)| {
                if i % 2 == 1 {
                    format!("<strong>{p}</strong>")
                } else {
                    p.to_string()
                }
            })
            .collect();
        let _ = writeln!(b, "<li>{bold}</li>");
    }
    b.push_str("</ul>\n<h2>Policies (best first)</h2>\n");
    b.push_str(&table(policy_table(s)));
    b.push_str("<h2>Views</h2>\n<div class=\"plots\">\n");
    b.push_str(&figure(&bsld_over_time(s, eval)?));
    b.push_str(&figure(&series_cdf(s, eval, false)?));
    b.push_str(&figure(&series_cdf(s, eval, true)?));
    b.push_str("</div>\n<h2>Mean bsld / utilization per window</h2>\n");
    b.push_str(&table(window_table(s)));
    Ok(page(&title, &b))
}

/// Mean bsld of the jobs submitted in each of 40 time bins (hours since their window's first
/// submit), over all windows.
fn bsld_over_time(s: &OnlineSummary, eval: &OnlineEvaluation) -> Result<String, EvalError> {
    const BINS: usize = 40;
    // Hours since the window's first submit, per replayed job.
    fn hours(r: &Replay) -> impl Iterator<Item = (f64, f64)> + '_ {
        let first = r.result.jobs.iter().map(|j| j.submit).min().unwrap_or(0);
        r.result
            .jobs
            .iter()
            .map(move |j| ((j.submit - first) as f64 / 3600.0, j.bsld))
    }
    let span = eval
        .replays
        .iter()
        .flat_map(hours)
        .map(|(h, _)| h)
        .fold(0.0, f64::max);
    let width = (span / BINS as f64).max(1e-9);
    let lines: Vec<Line> = s
        .policies
        .iter()
        .map(|p| {
            let mut sum = vec![0.0; BINS];
            let mut count = vec![0usize; BINS];
            for (h, bsld) in eval
                .replays
                .iter()
                .filter(|r| r.policy == p.policy)
                .flat_map(hours)
            {
                let b = ((h / width) as usize).min(BINS - 1);
                sum[b] += bsld;
                count[b] += 1;
            }
            let points = (0..BINS)
                .filter(|&b| count[b] > 0)
                .map(|b| ((b as f64 + 0.5) * width, sum[b] / count[b] as f64))
                .collect();
            Line {
                name: p.policy.clone(),
                points,
                ..Line::default()
            }
        })
        .collect();
    svg(&Chart::new(
        "Mean bsld over time",
        "hours since the window's first submit",
        "mean bsld of jobs submitted",
        &lines,
    ))
}

/// Time-weighted CDF of queue length (or of the used fraction of cores) over every window.
fn series_cdf(
    s: &OnlineSummary,
    eval: &OnlineEvaluation,
    footprint: bool,
) -> Result<String, EvalError> {
    let lines: Vec<Line> = s
        .policies
        .iter()
        .map(|p| {
            // Each step's value, weighted by the time until the next step of its window.
            let weighted: Vec<(f64, f64)> = eval
                .replays
                .iter()
                .filter(|r| r.policy == p.policy)
                .flat_map(|r| {
                    let series = &r.result.series;
                    (1..series.len()).map(move |i| {
                        let v = if footprint {
                            series.used_at(i - 1).first().copied().unwrap_or(0.0) * 100.0
                        } else {
                            f64::from(series.queue[i - 1])
                        };
                        (v, (series.time[i] - series.time[i - 1]) as f64)
                    })
                })
                .collect();
            Line {
                name: p.policy.clone(),
                points: weighted_cdf(&weighted),
                ..Line::default()
            }
        })
        .collect();
    let (title, x_label) = if footprint {
        (
            "CDF of resource footprint (time-weighted)",
            "cores in use (%)",
        )
    } else {
        ("CDF of queue length (time-weighted)", "waiting jobs")
    };
    svg(&Chart {
        steps: true,
        ..Chart::new(title, x_label, "share of time with value <= x", &lines)
    })
}
/// The replay of one policy as a terminal table (`schedlm replay`): what was replayed, one
/// line per window, then `all` when there are several.
pub fn replay_table(s: &OnlineSummary) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{}: {} jobs after cleaning; policy {}, start rule {}, cluster {}{}",
        s.trace,
        s.jobs_in_trace,
        s.ranking.first().map_or("", String::as_str),
        s.start_rule,
        s.cluster,
        s.estimate
            .as_ref()
            .map(|e| format!(", planning with {e} estimates"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        t,
        "{:>6} {:>8} {:>7} {:>11} {:>11} {:>6} {:>11} {:>7} {:>8}",
        "window", "start", "jobs", "mean bsld", "mean wait", "util", "makespan", "killed", "time s"
    );
    for w in &s.per_window {
        let _ = writeln!(
            t,
            "{:>6} {:>8} {:>7} {:>11.2} {:>11.1} {:>6.3} {:>11} {:>7} {:>8.3}",
            w.window,
            w.start,
            w.jobs,
            w.mean_bsld,
            w.mean_wait,
            w.utilization,
            w.makespan,
            w.killed,
            w.seconds
        );
    }
    if let (true, Some(p)) = (s.per_window.len() > 1, s.policies.first()) {
        let _ = writeln!(
            t,
            "{:>6} {:>8} {:>7} {:>11.2} {:>11.1} {:>6.3} {:>11} {:>7} {:>8.3}",
            "all",
            "",
            p.jobs,
            p.mean_bsld,
            p.mean_wait,
            p.mean_utilization,
            "",
            p.killed,
            p.seconds
        );
    }
    t
}
