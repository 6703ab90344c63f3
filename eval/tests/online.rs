//! Online evaluation end to end on a small SWF trace: the replays, the report's files, and
//! the summary's numbers recomputed from jobs.csv and windows.csv.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use schedlm_eval::online::{evaluate_online, OnlineOptions};
use schedlm_eval::policy::parse_list;
use schedlm_eval::replay::{RandomWindows, WindowChoice};
use schedlm_eval::report::online::{online_summary, write_online_report};
use serde_json::Value;

/// A bursty 80-job trace on a 16-processor machine (deterministic).
pub fn trace(dir: &Path) -> PathBuf {
    let mut text = String::from("; MaxProcs: 16\n");
    let mut submit = 0;
    for i in 1..=80u64 {
        submit += (i * 37) % 50;
        let run = 20 + (i * 91) % 400;
        let req = run + (i * 13) % 200;
        let procs = 1 + (i * 7) % 16;
        text += &format!(
            "{i} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 {} -1 -1 -1 -1 -1 -1\n",
            i % 5
        );
    }
    let path = dir.join("t.swf");
    std::fs::write(&path, text).unwrap();
    path
}

/// Random windows `(count, len)`, or the whole trace.
pub fn options(windows: Option<(usize, usize)>) -> OnlineOptions {
    OnlineOptions {
        windows: windows.map_or(WindowChoice::Whole, |(count, len)| {
            WindowChoice::Random(RandomWindows { count, len })
        }),
        seed: 4,
        // Short: with the node limit, `optimal` never reaches the MILP stage (needs 0.5 s).
        time_limit: std::time::Duration::from_millis(100),
        work_limit: None,
        node_limit: Some(500),
        ls_evaluations: 500,
        template: schedlm_dataset::Template::Compact,
        ..OnlineOptions::default()
    }
}

fn csv_rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    reader
        .records()
        .map(|r| {
            header
                .iter()
                .cloned()
                .zip(r.unwrap().iter().map(String::from))
                .collect()
        })
        .collect()
}

#[test]
fn online_report_numbers_recompute_from_the_csvs() {
    let dir = tempfile::tempdir().unwrap();
    let path = trace(dir.path());
    let specs = parse_list("fcfs,sjf,wfp3,ls,optimal,lookahead,rollout").unwrap();
    let eval = evaluate_online(&path, &specs, &options(Some((2, 20)))).unwrap();
    assert_eq!(eval.replays.len(), 14);
    let summary = online_summary(&eval);
    let out = dir.path().join("out");
    write_online_report(&out, &summary, &eval).unwrap();
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let jobs = csv_rows(&out.join("jobs.csv"));
    let windows = csv_rows(&out.join("windows.csv"));
    assert_eq!(jobs.len(), 7 * 2 * 20);
    for p in json["policies"].as_array().unwrap() {
        let name = p["policy"].as_str().unwrap();
        let mine: Vec<_> = jobs.iter().filter(|j| j["policy"] == name).collect();
        let mean = |k: &str| {
            mine.iter()
                .map(|j| j[k].parse::<f64>().unwrap())
                .sum::<f64>()
                / mine.len() as f64
        };
        let close = |a: f64, b: &Value| {
            let b = b.as_f64().unwrap();
            assert!(
                (a - b).abs() <= 1e-6 * a.abs().max(1.0),
                "{name}: {a} vs {b}"
            );
        };
        close(mean("bsld"), &p["mean_bsld"]);
        close(mean("wait"), &p["mean_wait"]);
        let util: Vec<f64> = windows
            .iter()
            .filter(|w| w["policy"] == name)
            .map(|w| w["utilization"].parse().unwrap())
            .collect();
        close(
            util.iter().sum::<f64>() / util.len() as f64,
            &p["mean_utilization"],
        );
        // bsld of each job from its wait and run (SPEC section 5, tau = 10 s).
        for j in &mine {
            let (wait, run): (f64, f64) = (j["wait"].parse().unwrap(), j["run"].parse().unwrap());
            let bsld = ((wait + run) / run.max(10.0)).max(1.0);
            assert!((bsld - j["bsld"].parse::<f64>().unwrap()).abs() < 1e-6);
        }
    }
    // Rolling-horizon solvers were consulted at events; static rules never needed to be.
    let stats = |n: &str| {
        json["policies"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["policy"] == n)
            .unwrap()
            .clone()
    };
    assert!(stats("optimal")["decisions"].as_u64().unwrap() > 0);
    assert_eq!(stats("optimal")["fallbacks"], 0);
    assert_eq!(stats("fcfs")["decisions"], 0);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 3);
    assert!(!html.contains("NaN"));

    // Deterministic (node and evaluation limits): the same jobs again.
    let again = evaluate_online(&path, &specs, &options(Some((2, 20)))).unwrap();
    for (a, b) in eval.replays.iter().zip(&again.replays) {
        assert_eq!(a.result.jobs, b.result.jobs, "{}", a.policy);
    }
}

#[test]
fn online_refuses_what_cannot_replay() {
    let dir = tempfile::tempdir().unwrap();
    let path = trace(dir.path());
    let specs = parse_list("fcfs,predictions:p.jsonl").unwrap();
    let e = evaluate_online(&path, &specs, &options(None)).unwrap_err();
    assert!(
        e.to_string().contains("cannot drive an online replay"),
        "{e}"
    );
    let specs = parse_list("fcfs").unwrap();
    let e = evaluate_online(&path, &specs, &options(Some((1, 81)))).unwrap_err();
    assert!(e.to_string().contains("80 jobs"), "{e}");
    let whole = evaluate_online(&path, &specs, &options(None)).unwrap();
    assert_eq!(whole.replays[0].result.jobs.len(), 80);
}

#[test]
fn look_ahead_policies_decide_at_every_event_and_repeat_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = trace(dir.path());
    let specs = parse_list("saf,lookahead,rollout").unwrap();
    let run = || evaluate_online(&path, &specs, &options(None)).unwrap();
    let (a, b) = (run(), run());
    for (x, y) in a.replays.iter().zip(&b.replays) {
        assert_eq!(x.result, y.result, "{}", x.policy);
    }
    let saf = &a.replays[0].result;
    for teacher in &a.replays[1..] {
        assert!(
            teacher.decisions > 0 && teacher.fallbacks == 0,
            "{}",
            teacher.policy
        );
    }
    // The clairvoyant teacher leaves SAF somewhere on this bursty trace.
    let starts = |r: &schedlm_model::sim::SimResult| -> Vec<i64> {
        r.jobs.iter().map(|j| j.start).collect()
    };
    assert_ne!(starts(saf), starts(&a.replays[1].result));
}

/// A text policy that follows the prompt's listing (`J1 J2 ... Jn`, the best rule's ranking
/// under compact-v2) and remembers the longest queue it was shown.
struct Follower(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl schedlm_eval::text_policy::TextModel for Follower {
    fn answer(&self, ask: &schedlm_eval::text_policy::Ask<'_>) -> schedlm_eval::text_policy::Reply {
        let n = ask.instance.queue.len();
        self.0.fetch_max(n, std::sync::atomic::Ordering::Relaxed);
        let ids: Vec<String> = (1..=n).map(|k| format!("J{k}")).collect();
        schedlm_eval::text_policy::Reply {
            output: Some(ids.join(" ")),
            ..Default::default()
        }
    }
}

#[test]
fn text_queue_shows_a_model_at_most_k_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let path = trace(dir.path());
    let specs = parse_list("model:follower").unwrap();
    let longest = |shown: Option<usize>| {
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let loader_seen = seen.clone();
        let options = OnlineOptions {
            template: schedlm_dataset::Template::CompactV2,
            text_queue: shown,
            models: schedlm_eval::text_policy::ModelLoader(std::sync::Arc::new(move |_| {
                let model: Box<dyn schedlm_eval::text_policy::TextModel> =
                    Box::new(Follower(loader_seen.clone()));
                Ok(model)
            })),
            ..options(None)
        };
        let eval = evaluate_online(&path, &specs, &options).unwrap();
        let replay = &eval.replays[0];
        assert!(replay.decisions > 0);
        assert_eq!(replay.fallbacks, 0, "every answer parses");
        assert_eq!(replay.result.jobs.len(), 80);
        seen.load(std::sync::atomic::Ordering::Relaxed)
    };
    let whole = longest(None);
    assert!(
        whole > 3,
        "the trace never queues more than 3 jobs ({whole})"
    );
    assert_eq!(longest(Some(3)), 3);
}
