//! `schedlm replay`: replay an SWF trace online (SPEC section 5) with a priority rule and a
//! start rule, over the whole trace or windows of it.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use schedlm_generator::cut::window_jobs;
use schedlm_generator::estimate::{completions, predict_online, Estimator, Predictor};
use schedlm_generator::swf::{cluster, read_swf_with_waits, ClusterShape, SwfOptions, Trace};
use schedlm_model::sim::{SimResult, Simulation, StartRule, Summary};
use schedlm_model::Server;
use schedlm_solver::policy::{random_windows, RulePolicy};
use schedlm_solver::rules::{Rule, RuleContext};
use serde_json::json;

/// A window of the trace: `START:COUNT`, COUNT jobs from index START in submit order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: usize,
    pub count: usize,
}

impl FromStr for Window {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not a window: write START:COUNT, e.g. 5000:1024");
        let (a, b) = s.split_once(':').ok_or_else(bad)?;
        let start = a.trim().parse().map_err(|_| bad())?;
        let count: usize = b.trim().parse().map_err(|_| bad())?;
        if count == 0 {
            return Err(format!("window `{s}` has no job: COUNT must be at least 1"));
        }
        Ok(Window { start, count })
    }
}

/// Random windows: `NxLEN`, N windows of LEN jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RandomWindows {
    pub count: usize,
    pub len: usize,
}

impl FromStr for RandomWindows {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not a window set: write NxLEN, e.g. 10x1024");
        let (a, b) = s.split_once(['x', 'X']).ok_or_else(bad)?;
        let count: usize = a.trim().parse().map_err(|_| bad())?;
        let len: usize = b.trim().parse().map_err(|_| bad())?;
        if count == 0 || len == 0 {
            return Err(format!("`{s}`: N and LEN must be at least 1"));
        }
        Ok(RandomWindows { count, len })
    }
}

/// The machine layout: `pool` or `nodes:N:K`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape(pub ClusterShape);

impl FromStr for Shape {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "pool" {
            return Ok(Shape(ClusterShape::Pool));
        }
        let bad = || {
            format!("`{s}` is not a cluster: write `pool` or `nodes:N:K` (N servers of K cores)")
        };
        let rest = s.strip_prefix("nodes:").ok_or_else(bad)?;
        let (n, k) = rest.split_once(':').ok_or_else(bad)?;
        Ok(Shape(ClusterShape::Nodes {
            nodes: n.trim().parse().map_err(|_| bad())?,
            cores: k.trim().parse().map_err(|_| bad())?,
        }))
    }
}

impl Shape {
    fn name(&self) -> String {
        match self.0 {
            ClusterShape::Pool => "pool".into(),
            ClusterShape::Nodes { nodes, cores } => format!("nodes:{nodes}:{cores}"),
        }
    }
}

/// Replay an SWF trace online (SPEC section 5): jobs arrive at their submit time and run their
/// true run time, killed at their requested time; at every event the priority rule orders the
/// waiting queue and the start rule starts jobs (strict, EASY or conservative backfilling).
///
/// Each window is replayed alone from an empty cluster. Writes DIR/jobs.csv (one row per job),
/// DIR/series.csv (queue length and used fraction after every event), DIR/summary.json (per
/// window and overall, with the trace's cleaning report) and prints a table. See
/// docs/validation.md for the published numbers this reproduces.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// SWF trace, plain or gzipped.
    #[arg(long, value_name = "FILE")]
    pub trace: PathBuf,
    /// Priority rule that orders the waiting queue (F1's t_origin is the trace's first submit).
    #[arg(long, value_enum, default_value_t = Rule::Fcfs)]
    pub policy: Rule,
    /// How jobs are started from the ordered queue.
    #[arg(long, value_enum, default_value_t = StartRule::Easy)]
    pub start_rule: StartRule,
    /// A window START:COUNT (COUNT jobs from index START in submit order, 0-based); repeat
    /// for several. Without windows the whole trace is one window.
    #[arg(
        long = "window",
        value_name = "START:COUNT",
        conflicts_with = "windows"
    )]
    pub window: Vec<Window>,
    /// N random windows of LEN jobs (NxLEN, e.g. 10x1024), starts drawn uniformly from
    /// 0..=jobs-LEN with ChaCha8 seeded by --seed.
    #[arg(long, value_name = "NxLEN")]
    pub windows: Option<RandomWindows>,
    /// Seed of --windows and of the `random` policy.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Machine layout: `pool` (one server with MaxProcs cores) or `nodes:N:K` (N servers of K
    /// cores; a job runs on one server).
    #[arg(long, value_name = "pool|nodes:N:K", default_value = "pool")]
    pub cluster: Shape,
    /// Skip and count malformed lines instead of stopping at the first one.
    #[arg(long)]
    pub skip_bad_lines: bool,
    /// Plan with a run-time estimate instead of the requested walltime (reservations,
    /// backfill tests and rule scores; jobs are still killed at their walltime). `user`,
    /// `last2`, `model`: predicted at each job's submission from the jobs completed before
    /// it on the trace's own timeline (submit + wait + run), over the whole trace; `oracle`:
    /// the true run time. See docs/validation.md.
    #[arg(long, value_enum)]
    pub estimate: Option<PlanEstimate>,
    /// Output directory (created if missing).
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: PathBuf,
}

/// What the replay plans with (`--estimate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlanEstimate {
    User,
    Last2,
    Model,
    /// The true run time min(runtime, walltime) (an upper reference).
    Oracle,
}

/// Each trace job's planning length, or `None` to plan with walltimes.
fn estimates(
    trace: &Trace,
    waits: &[Option<i64>],
    choice: Option<PlanEstimate>,
) -> Result<Option<Vec<i64>>> {
    let estimator = match choice {
        None | Some(PlanEstimate::User) => return Ok(None),
        Some(PlanEstimate::Oracle) => {
            return Ok(Some(
                trace
                    .jobs
                    .iter()
                    .map(|j| j.runtime.min(j.walltime).max(1))
                    .collect(),
            ))
        }
        Some(PlanEstimate::Last2) => Estimator::Last2,
        Some(PlanEstimate::Model) => Estimator::Model,
    };
    let mut predictor = Predictor::new(estimator);
    let done = completions(trace, Some(waits));
    Ok(Some(predict_online(&mut predictor, &trace.jobs, &done, 0)?))
}

/// One replayed window.
struct Replayed {
    window: Window,
    result: SimResult,
    seconds: f64,
}

pub fn run(args: &ReplayArgs) -> Result<()> {
    let options = SwfOptions {
        skip_bad_lines: args.skip_bad_lines,
        ..SwfOptions::default()
    };
    let read_start = Instant::now();
    let (trace, waits) =
        read_swf_with_waits(&args.trace, &options).context("cannot read the trace")?;
    let plans = estimates(&trace, &waits, args.estimate)?;
    let read_seconds = read_start.elapsed().as_secs_f64();
    let n = trace.jobs.len();
    if n == 0 {
        bail!("{}: no job left after cleaning", args.trace.display());
    }
    let (resources, servers) = cluster(&trace, args.cluster.0).with_context(|| {
        format!(
            "cannot lay out {} as {}",
            args.trace.display(),
            args.cluster.name()
        )
    })?;
    let windows = windows(args, n)?;
    let origin = trace.jobs[0].submit;
    let ctx = RuleContext {
        origin,
        seed: args.seed,
        stream: 0,
    };

    let mut replayed = Vec::with_capacity(windows.len());
    for (k, &w) in windows.iter().enumerate() {
        let jobs = window_jobs(&trace, w.start..w.start + w.count, plans.as_deref());
        let sim = Simulation::new(resources.clone(), servers.clone(), jobs)
            .with_context(|| format!("window {k} ({}:{})", w.start, w.count))?;
        let mut policy = RulePolicy::new(
            args.policy,
            RuleContext {
                stream: k as u64,
                ..ctx
            },
        );
        let t = Instant::now();
        let result = sim
            .run(&mut policy, args.start_rule)
            .with_context(|| format!("window {k} ({}:{})", w.start, w.count))?;
        replayed.push(Replayed {
            window: w,
            result,
            seconds: t.elapsed().as_secs_f64(),
        });
    }

    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    write_jobs(&args.out.join("jobs.csv"), &replayed, &servers)?;
    write_series(&args.out.join("series.csv"), &replayed)?;
    let summary = summary_json(args, &trace, &replayed, origin, read_seconds);
    let path = args.out.join("summary.json");
    std::fs::write(&path, serde_json::to_string_pretty(&summary)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    out!("{}", table(args, &trace, &replayed))?;
    Ok(())
}

/// The windows to replay, checked against the trace length.
fn windows(args: &ReplayArgs, n: usize) -> Result<Vec<Window>> {
    if let Some(rw) = args.windows {
        if rw.len > n {
            bail!(
                "--windows {}x{}: the trace has only {n} jobs",
                rw.count,
                rw.len
            );
        }
        return Ok(random_windows(n, rw.count, rw.len, args.seed)
            .into_iter()
            .map(|start| Window {
                start,
                count: rw.len,
            })
            .collect());
    }
    if args.window.is_empty() {
        return Ok(vec![Window { start: 0, count: n }]);
    }
    for w in &args.window {
        if w.start + w.count > n {
            bail!(
                "--window {}:{} runs past the trace's {n} jobs (last index {})",
                w.start,
                w.count,
                n - 1
            );
        }
    }
    Ok(args.window.clone())
}

fn create(path: &Path) -> Result<std::io::BufWriter<std::fs::File>> {
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    Ok(std::io::BufWriter::with_capacity(1 << 20, file))
}

fn write_jobs(path: &Path, replayed: &[Replayed], servers: &[Server]) -> Result<()> {
    let mut out = create(path)?;
    let mut buf = String::with_capacity(1 << 16);
    buf.push_str("window,id,submit,start,end,wait,run,bsld,killed,server\n");
    for (k, r) in replayed.iter().enumerate() {
        for j in &r.result.jobs {
            let _ = writeln!(
                buf,
                "{k},{},{},{},{},{},{},{:.6},{},{}",
                j.id,
                j.submit,
                j.start,
                j.end,
                j.wait,
                j.run,
                j.bsld,
                j.killed,
                servers[j.server].id
            );
            if buf.len() > 1 << 16 {
                out.write_all(buf.as_bytes())
                    .with_context(|| format!("cannot write {}", path.display()))?;
                buf.clear();
            }
        }
    }
    out.write_all(buf.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    out.flush()
        .with_context(|| format!("cannot write {}", path.display()))
}

fn write_series(path: &Path, replayed: &[Replayed]) -> Result<()> {
    let mut out = create(path)?;
    let mut buf = String::with_capacity(1 << 16);
    buf.push_str("window,time,queue,running");
    if let Some(r) = replayed.first() {
        for name in &r.result.series.resources {
            let _ = write!(buf, ",used_{name}");
        }
    }
    buf.push('\n');
    for (k, r) in replayed.iter().enumerate() {
        let s = &r.result.series;
        for i in 0..s.len() {
            let _ = write!(buf, "{k},{},{},{}", s.time[i], s.queue[i], s.running[i]);
            for u in s.used_at(i) {
                let _ = write!(buf, ",{u:.6}");
            }
            buf.push('\n');
            if buf.len() > 1 << 16 {
                out.write_all(buf.as_bytes())
                    .with_context(|| format!("cannot write {}", path.display()))?;
                buf.clear();
            }
        }
    }
    out.write_all(buf.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    out.flush()
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Aggregates over all windows.
struct Overall {
    jobs: usize,
    /// Mean bsld over every job of every window.
    mean_bsld: f64,
    /// Mean over windows of each window's mean bsld (RLScheduler's figure).
    mean_of_window_bsld: f64,
    mean_wait: f64,
    mean_utilization: f64,
    total_makespan: i64,
    killed: usize,
    seconds: f64,
}

fn overall(replayed: &[Replayed]) -> Overall {
    let jobs: usize = replayed.iter().map(|r| r.result.summary.jobs).sum();
    let w = replayed.len().max(1) as f64;
    let pooled = |f: &dyn Fn(&Summary) -> f64| {
        if jobs == 0 {
            0.0
        } else {
            replayed
                .iter()
                .map(|r| f(&r.result.summary) * r.result.summary.jobs as f64)
                .sum::<f64>()
                / jobs as f64
        }
    };
    Overall {
        jobs,
        mean_bsld: pooled(&|s| s.mean_bsld),
        mean_of_window_bsld: replayed
            .iter()
            .map(|r| r.result.summary.mean_bsld)
            .sum::<f64>()
            / w,
        mean_wait: pooled(&|s| s.mean_wait),
        mean_utilization: replayed
            .iter()
            .map(|r| r.result.summary.utilization)
            .sum::<f64>()
            / w,
        total_makespan: replayed.iter().map(|r| r.result.summary.makespan).sum(),
        killed: replayed.iter().map(|r| r.result.summary.killed).sum(),
        seconds: replayed.iter().map(|r| r.seconds).sum(),
    }
}

fn summary_json(
    args: &ReplayArgs,
    trace: &Trace,
    replayed: &[Replayed],
    origin: i64,
    read_seconds: f64,
) -> serde_json::Value {
    let o = overall(replayed);
    json!({
        "trace": args.trace.display().to_string(),
        "jobs_in_trace": trace.jobs.len(),
        "policy": args.policy.name(),
        "start_rule": args.start_rule.name(),
        "cluster": args.cluster.name(),
        "seed": args.seed,
        "estimate": args.estimate.map(|e| format!("{e:?}").to_lowercase()),
        "f1_origin": origin,
        "windows": replayed.iter().enumerate().map(|(k, r)| json!({
            "window": k,
            "start": r.window.start,
            "count": r.window.count,
            "first_job": r.result.jobs.first().map(|j| j.id.clone()),
            "summary": r.result.summary,
            "replay_seconds": r.seconds,
        })).collect::<Vec<_>>(),
        "overall": {
            "windows": replayed.len(),
            "jobs": o.jobs,
            "mean_bsld": o.mean_bsld,
            "mean_of_window_mean_bsld": o.mean_of_window_bsld,
            "mean_wait": o.mean_wait,
            "mean_utilization": o.mean_utilization,
            "total_makespan": o.total_makespan,
            "killed": o.killed,
            "replay_seconds": o.seconds,
            "read_seconds": read_seconds,
        },
        "cleaning": trace.report,
        "cleaning_text": trace.report.to_string(),
    })
}

fn table(args: &ReplayArgs, trace: &Trace, replayed: &[Replayed]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: {} jobs after cleaning; policy {}, start rule {}, cluster {}{}",
        args.trace.display(),
        trace.jobs.len(),
        args.policy,
        args.start_rule,
        args.cluster.name(),
        args.estimate
            .map(|e| format!(", planning with {e:?} estimates").to_lowercase())
            .unwrap_or_default()
    );
    let _ = writeln!(
        s,
        "{:>6} {:>8} {:>7} {:>11} {:>11} {:>6} {:>11} {:>7} {:>8}",
        "window", "start", "jobs", "mean bsld", "mean wait", "util", "makespan", "killed", "time s"
    );
    for (k, r) in replayed.iter().enumerate() {
        let m = &r.result.summary;
        let _ = writeln!(
            s,
            "{:>6} {:>8} {:>7} {:>11.2} {:>11.1} {:>6.3} {:>11} {:>7} {:>8.3}",
            k,
            r.window.start,
            m.jobs,
            m.mean_bsld,
            m.mean_wait,
            m.utilization,
            m.makespan,
            m.killed,
            r.seconds
        );
    }
    if replayed.len() > 1 {
        let o = overall(replayed);
        let _ = writeln!(
            s,
            "{:>6} {:>8} {:>7} {:>11.2} {:>11.1} {:>6.3} {:>11} {:>7} {:>8.3}",
            "all",
            "",
            o.jobs,
            o.mean_bsld,
            o.mean_wait,
            o.mean_utilization,
            o.total_makespan,
            o.killed,
            o.seconds
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_arguments() {
        assert_eq!(
            "5:10".parse::<Window>().unwrap(),
            Window {
                start: 5,
                count: 10
            }
        );
        assert!("5:0".parse::<Window>().is_err());
        assert!("5".parse::<Window>().is_err());
        assert_eq!(
            "10x1024".parse::<RandomWindows>().unwrap(),
            RandomWindows {
                count: 10,
                len: 1024
            }
        );
        assert!("10x0".parse::<RandomWindows>().is_err());
        assert_eq!("pool".parse::<Shape>().unwrap(), Shape(ClusterShape::Pool));
        assert_eq!(
            "nodes:120:2".parse::<Shape>().unwrap(),
            Shape(ClusterShape::Nodes {
                nodes: 120,
                cores: 2
            })
        );
        assert!("nodes:3".parse::<Shape>().is_err());
    }

    fn args(trace: PathBuf, out: PathBuf) -> ReplayArgs {
        ReplayArgs {
            trace,
            policy: Rule::Fcfs,
            start_rule: StartRule::Easy,
            window: Vec::new(),
            windows: None,
            seed: 1,
            cluster: Shape(ClusterShape::Pool),
            skip_bad_lines: false,
            estimate: None,
            out,
        }
    }

    /// A 4-processor machine and the trace of the EASY hand case of model/tests/sim.rs:
    /// a (2 procs, 100 s), b (4, 10 s) blocked until 100, c (2, 50 s) backfilled at 2,
    /// d (2, 200 s) after b at 110. Job 5 ran 0 s and is cleaned away.
    const SWF: &str = "\
; MaxProcs: 4
1 0 -1 100 2 -1 -1 2 100 -1 1 1 -1 -1 -1 -1 -1 -1
2 1 -1 10 4 -1 -1 4 10 -1 1 2 -1 -1 -1 -1 -1 -1
3 2 -1 50 2 -1 -1 2 50 -1 1 1 -1 -1 -1 -1 -1 -1
4 3 -1 200 2 -1 -1 2 200 -1 1 3 -1 -1 -1 -1 -1 -1
5 4 -1 0 1 -1 -1 1 10 -1 1 3 -1 -1 -1 -1 -1 -1
";

    #[test]
    fn replays_a_trace_end_to_end() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.swf");
        std::fs::write(&trace, SWF).unwrap();
        let out = dir.path().join("out");
        run(&args(trace.clone(), out.clone())).unwrap();
        let jobs = std::fs::read_to_string(out.join("jobs.csv")).unwrap();
        let starts: Vec<(String, String)> = jobs
            .lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (f[1].to_string(), f[3].to_string())
            })
            .collect();
        let want = [("j1", "0"), ("j2", "100"), ("j3", "2"), ("j4", "110")];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(starts, want);
        assert!(jobs.starts_with("window,id,submit,start,end,wait,run,bsld,killed,server\n"));
        let series = std::fs::read_to_string(out.join("series.csv")).unwrap();
        assert!(series.starts_with("window,time,queue,running,used_cores\n"));
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(summary["overall"]["jobs"], 4);
        assert_eq!(summary["cleaning"]["runtime_zero_skipped"], 1);
        assert_eq!(summary["windows"][0]["summary"]["makespan"], 310);

        // Two windows, each from an empty cluster: jobs 2..3 (b, c) then job 4 (d) alone.
        let mut a = args(trace.clone(), out.clone());
        a.window = vec![Window { start: 1, count: 2 }, Window { start: 3, count: 1 }];
        run(&a).unwrap();
        let jobs = std::fs::read_to_string(out.join("jobs.csv")).unwrap();
        let rows: Vec<&str> = jobs.lines().skip(1).collect();
        assert_eq!(rows.len(), 3);
        assert!(rows[0].starts_with("0,j2,1,1,11,"), "{}", rows[0]);
        assert!(rows[1].starts_with("0,j3,2,11,61,"), "{}", rows[1]);
        assert!(rows[2].starts_with("1,j4,3,3,203,"), "{}", rows[2]);

        // Windows past the end and random windows longer than the trace are errors.
        a.window = vec![Window { start: 3, count: 2 }];
        assert!(run(&a).unwrap_err().to_string().contains("runs past"));
        a.window.clear();
        a.windows = Some(RandomWindows { count: 2, len: 5 });
        assert!(run(&a).is_err());
        a.windows = Some(RandomWindows { count: 3, len: 2 });
        run(&a).unwrap();
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(summary["overall"]["windows"], 3);
        assert_eq!(summary["overall"]["jobs"], 6);
    }
}
