//! The report of an online evaluation: `windows.csv` (one row per policy and window),
//! `jobs.csv` (one row per replayed job), `series.csv` (queue length and footprint after every
//! event), `summary.json`, `report.md` and `report.html` with the three views of the seed
//! study's figure: mean bsld over time, CDF of queue length, CDF of resource footprint.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::html::{escape, figure, page, table};
use super::markdown::table as table_md;
use super::plot::{svg, weighted_cdf, Chart, Line};
use super::{num, pct, write_rows};
use crate::error::EvalError;
use crate::online::{OnlineEvaluation, Replay, Window};

/// One line of `windows.csv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowRow {
    pub policy: String,
    pub window: usize,
    /// Index of the window's first job in the cleaned trace.
    pub start: usize,
    pub jobs: usize,
    pub mean_bsld: f64,
    pub mean_wait: f64,
    pub utilization: f64,
    pub killed: usize,
    pub decisions: usize,
    pub fallbacks: usize,
    pub seconds: f64,
}

/// One line of `jobs.csv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRow {
    pub policy: String,
    pub window: usize,
    pub id: String,
    pub submit: i64,
    pub start: i64,
    pub end: i64,
    pub wait: i64,
    pub run: i64,
    pub bsld: f64,
}

/// One line of `series.csv`: the state after one event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesRow {
    pub policy: String,
    pub window: usize,
    pub time: i64,
    pub queue: u32,
    /// Used fraction of the first resource (cores).
    pub used: f64,
}

/// One policy over all windows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnlinePolicyStats {
    pub policy: String,
    pub jobs: usize,
    /// Mean bsld over every job of every window.
    pub mean_bsld: f64,
    /// Mean over windows of each window's mean bsld.
    pub mean_window_bsld: f64,
    /// Mean wait over every job, seconds.
    pub mean_wait: f64,
    /// Mean over windows of each window's utilization.
    pub mean_utilization: f64,
    pub decisions: usize,
    pub fallbacks: usize,
    pub seconds: f64,
}

/// `summary.json` of an online evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnlineSummary {
    pub trace: String,
    pub jobs_in_trace: usize,
    pub start_rule: String,
    pub seed: u64,
    pub windows: Vec<Window>,
    /// Policies by mean bsld, best first.
    pub ranking: Vec<String>,
    pub policies: Vec<OnlinePolicyStats>,
    pub per_window: Vec<WindowRow>,
}

fn window_row(r: &Replay, windows: &[Window]) -> WindowRow {
    let s = &r.result.summary;
    WindowRow {
        policy: r.policy.clone(),
        window: r.window,
        start: windows.get(r.window).map_or(0, |w| w.start),
        jobs: s.jobs,
        mean_bsld: s.mean_bsld,
        mean_wait: s.mean_wait,
        utilization: s.utilization,
        killed: s.killed,
        decisions: r.decisions,
        fallbacks: r.fallbacks,
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
        decisions: rows.iter().map(|r| r.decisions).sum(),
        fallbacks: rows.iter().map(|r| r.fallbacks).sum(),
        seconds: rows.iter().map(|r| r.seconds).sum(),
    }
}

/// Builds the summary of an online evaluation.
pub fn online_summary(eval: &OnlineEvaluation, start_rule: &str, seed: u64) -> OnlineSummary {
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
        start_rule: start_rule.to_string(),
        seed,
        windows: eval.windows.clone(),
        ranking: ranking.iter().map(|p| p.policy.clone()).collect(),
        policies,
        per_window,
    }
}

fn job_rows(eval: &OnlineEvaluation) -> Vec<JobRow> {
    eval.replays
        .iter()
        .flat_map(|r| {
            r.result.jobs.iter().map(|j| JobRow {
                policy: r.policy.clone(),
                window: r.window,
                id: j.id.clone(),
                submit: j.submit,
                start: j.start,
                end: j.end,
                wait: j.wait,
                run: j.run,
                bsld: j.bsld,
            })
        })
        .collect()
}

fn series_rows(eval: &OnlineEvaluation) -> Vec<SeriesRow> {
    eval.replays
        .iter()
        .flat_map(|r| {
            let s = &r.result.series;
            (0..s.len()).map(move |i| SeriesRow {
                policy: r.policy.clone(),
                window: r.window,
                time: s.time[i],
                queue: s.queue[i],
                used: s.used_at(i).first().copied().unwrap_or(0.0),
            })
        })
        .collect()
}

/// Writes every file of an online report into `dir`; returns the paths written.
pub fn write_online_report(
    dir: &Path,
    summary: &OnlineSummary,
    eval: &OnlineEvaluation,
) -> Result<Vec<PathBuf>, EvalError> {
    std::fs::create_dir_all(dir).map_err(|e| EvalError::io(dir, e))?;
    let jobs = job_rows(eval);
    let series = series_rows(eval);
    write_rows(&dir.join("windows.csv"), &summary.per_window)?;
    write_rows(&dir.join("jobs.csv"), &jobs)?;
    write_rows(&dir.join("series.csv"), &series)?;
    let json = serde_json::to_string_pretty(summary)
        .map_err(|e| EvalError::Report(format!("summary.json: {e}")))?;
    let files = [
        ("summary.json", json + "\n"),
        ("report.md", markdown(summary)),
        ("report.html", html(summary, &jobs, &series)?),
    ];
    let mut written: Vec<PathBuf> = ["windows.csv", "jobs.csv", "series.csv"]
        .iter()
        .map(|n| dir.join(n))
        .collect();
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
fn html(s: &OnlineSummary, jobs: &[JobRow], series: &[SeriesRow]) -> Result<String, EvalError> {
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
    b.push_str(&figure(&bsld_over_time(s, jobs)?));
    b.push_str(&figure(&series_cdf(s, series, false)?));
    b.push_str(&figure(&series_cdf(s, series, true)?));
    b.push_str("</div>\n<h2>Mean bsld / utilization per window</h2>\n");
    b.push_str(&table(window_table(s)));
    Ok(page(&title, &b))
}

/// Mean bsld of the jobs submitted in each of 40 time bins (hours since their window's first
/// submit), over all windows.
fn bsld_over_time(s: &OnlineSummary, jobs: &[JobRow]) -> Result<String, EvalError> {
    const BINS: usize = 40;
    let first = |p: &str, w: usize| {
        jobs.iter()
            .filter(|j| j.policy == p && j.window == w)
            .map(|j| j.submit)
            .min()
            .unwrap_or(0)
    };
    let hours = |j: &JobRow, origin: i64| (j.submit - origin) as f64 / 3600.0;
    let mut span: f64 = 0.0;
    let mut offset: Vec<((String, usize), i64)> = Vec::new();
    for p in &s.policies {
        for k in 0..s.windows.len() {
            let o = first(&p.policy, k);
            offset.push(((p.policy.clone(), k), o));
            for j in jobs
                .iter()
                .filter(|j| j.policy == p.policy && j.window == k)
            {
                span = span.max(hours(j, o));
            }
        }
    }
    let width = (span / BINS as f64).max(1e-9);
    let lines: Vec<Line> = s
        .policies
        .iter()
        .map(|p| {
            let mut sum = vec![0.0; BINS];
            let mut count = vec![0usize; BINS];
            for j in jobs.iter().filter(|j| j.policy == p.policy) {
                let o = offset
                    .iter()
                    .find(|((q, w), _)| q == &p.policy && *w == j.window)
                    .map_or(0, |x| x.1);
                let b = ((hours(j, o) / width) as usize).min(BINS - 1);
                sum[b] += j.bsld;
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
    svg(&Chart {
        title: "Mean bsld over time",
        x_label: "hours since the window's first submit",
        y_label: "mean bsld of jobs submitted",
        lines: &lines,
        steps: false,
        integer_x: false,
    })
}

/// Time-weighted CDF of queue length (or of the used fraction of cores) over every window.
fn series_cdf(
    s: &OnlineSummary,
    series: &[SeriesRow],
    footprint: bool,
) -> Result<String, EvalError> {
    let lines: Vec<Line> = s
        .policies
        .iter()
        .map(|p| {
            let rows: Vec<&SeriesRow> = series.iter().filter(|r| r.policy == p.policy).collect();
            let weighted: Vec<(f64, f64)> = rows
                .windows(2)
                .filter(|w| w[0].window == w[1].window)
                .map(|w| {
                    let v = if footprint {
                        w[0].used * 100.0
                    } else {
                        w[0].queue as f64
                    };
                    (v, (w[1].time - w[0].time) as f64)
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
        title,
        x_label,
        y_label: "share of time with value <= x",
        lines: &lines,
        steps: true,
        integer_x: false,
    })
}
