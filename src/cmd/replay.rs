//! `schedlm replay`: replay an SWF trace online (SPEC section 5) with a priority rule and a
//! start rule, over the whole trace or windows of it. The replay loop and the report are the
//! library's (`schedlm_eval::online`, the loop of `eval --trace`); this file prints the table.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use schedlm_eval::online::{evaluate_online, OnlineOptions};
use schedlm_eval::report::online::{online_summary, replay_table, write_online_report};
use schedlm_eval::EvalPolicy;
use schedlm_solver::rules::Rule;

use crate::args::TraceReplayArgs;

/// Replay an SWF trace online (SPEC section 5): jobs arrive at their submit time and run their
/// true run time, killed at their requested time; at every event the priority rule orders the
/// waiting queue and the start rule starts jobs (strict, EASY or conservative backfilling).
///
/// Each window is replayed alone from an empty cluster. Writes the files of an online
/// evaluation (docs/eval.md): DIR/windows.csv (one row per window), DIR/jobs.csv (one row per
/// job), DIR/series.csv (queue length and used fraction after every event), DIR/summary.json
/// (per window and overall, with the trace's cleaning report), report.md and report.html, and
/// prints a table. See docs/validation.md for the published numbers this reproduces.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// SWF trace, plain or gzipped.
    #[arg(long, value_name = "FILE")]
    pub trace: PathBuf,
    /// Priority rule that orders the waiting queue (F1's t_origin is the trace's first submit).
    #[arg(long, value_enum, default_value_t = Rule::Fcfs)]
    pub policy: Rule,
    #[command(flatten)]
    pub replay: TraceReplayArgs,
    /// Seed of --windows and of the `random` policy (window k uses stream k).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output directory (created if missing).
    #[arg(
        visible_alias = "output",
        short = 'o',
        long = "out",
        value_name = "DIR"
    )]
    pub out: PathBuf,
}

pub fn run(args: &ReplayArgs) -> Result<()> {
    let options = OnlineOptions {
        start_rule: args.replay.start_rule,
        trace: args.replay.options(),
        windows: args.replay.windows(),
        seed: args.seed,
        ..OnlineOptions::default()
    };
    let eval = evaluate_online(&args.trace, &[EvalPolicy::Rule(args.policy)], &options)?;
    let summary = online_summary(&eval);
    write_online_report(&args.out, &summary, &eval)
        .with_context(|| format!("cannot write the report to {}", args.out.display()))?;
    out!("{}", replay_table(&summary))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlm_eval::replay::{Cluster, RandomWindows, Span};
    use schedlm_model::sim::StartRule;

    fn args(trace: PathBuf, out: PathBuf) -> ReplayArgs {
        ReplayArgs {
            trace,
            policy: Rule::Fcfs,
            replay: TraceReplayArgs {
                start_rule: StartRule::Easy,
                window: Vec::new(),
                windows: None,
                cluster: Cluster::default(),
                skip_bad_lines: false,
                estimate: None,
            },
            seed: 1,
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

    fn read(path: PathBuf) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn replays_a_trace_end_to_end() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.swf");
        std::fs::write(&trace, SWF).unwrap();
        let out = dir.path().join("out");
        run(&args(trace.clone(), out.clone())).unwrap();
        let jobs = read(out.join("jobs.csv"));
        let starts: Vec<(&str, &str)> = jobs
            .lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (f[2], f[4])
            })
            .collect();
        assert_eq!(
            starts,
            [("j1", "0"), ("j2", "100"), ("j3", "2"), ("j4", "110")]
        );
        assert!(jobs.starts_with("policy,window,id,submit,start,end,wait,run,bsld,killed,server\n"));
        assert!(jobs.lines().nth(1).unwrap().ends_with(",false,pool"));
        let series = read(out.join("series.csv"));
        assert!(series.starts_with("policy,window,time,queue,running,used_cores\n"));
        let summary: serde_json::Value =
            serde_json::from_str(&read(out.join("summary.json"))).unwrap();
        assert_eq!(summary["policies"][0]["jobs"], 4);
        assert_eq!(summary["cleaning"]["runtime_zero_skipped"], 1);
        assert_eq!(summary["per_window"][0]["makespan"], 310);

        // Two windows, each from an empty cluster: jobs 2..3 (b, c) then job 4 (d) alone.
        let mut a = args(trace.clone(), out.clone());
        a.replay.window = vec![Span { start: 1, count: 2 }, Span { start: 3, count: 1 }];
        run(&a).unwrap();
        let jobs = read(out.join("jobs.csv"));
        let rows: Vec<&str> = jobs.lines().skip(1).collect();
        assert_eq!(rows.len(), 3);
        assert!(rows[0].starts_with("fcfs,0,j2,1,1,11,"), "{}", rows[0]);
        assert!(rows[1].starts_with("fcfs,0,j3,2,11,61,"), "{}", rows[1]);
        assert!(rows[2].starts_with("fcfs,1,j4,3,3,203,"), "{}", rows[2]);

        // Windows past the end and random windows longer than the trace are errors.
        a.replay.window = vec![Span { start: 3, count: 2 }];
        assert!(run(&a).unwrap_err().to_string().contains("runs past"));
        a.replay.window.clear();
        a.replay.windows = Some(RandomWindows { count: 2, len: 5 });
        assert!(run(&a).is_err());
        a.replay.windows = Some(RandomWindows { count: 3, len: 2 });
        run(&a).unwrap();
        let summary: serde_json::Value =
            serde_json::from_str(&read(out.join("summary.json"))).unwrap();
        assert_eq!(summary["per_window"].as_array().unwrap().len(), 3);
        assert_eq!(summary["policies"][0]["jobs"], 6);
    }
}
