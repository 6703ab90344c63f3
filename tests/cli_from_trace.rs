//! `schedlm generate --from-trace`: snapshots cut from a trace replay validate with
//! `schedlm validate`, are byte-deterministic, and carry estimates with `--estimate`.

mod common;

use common::{path_str, read_jsonl, run, tempdir};

const SDSC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/data/traces/SDSC-SP2-1998-4.2-cln.swf"
);

/// A 4-processor machine: j1 holds it, j2..j5 queue behind it.
const SWF: &str = "\
; MaxProcs: 4
1 0 -1 100 4 -1 -1 4 200 -1 1 1 -1 -1 -1 -1 -1 -1
2 1 -1 10 4 -1 -1 4 10 -1 1 2 -1 -1 -1 -1 -1 -1
3 2 -1 50 2 -1 -1 2 60 -1 1 1 -1 -1 -1 -1 -1 -1
4 3 -1 20 2 -1 -1 2 300 -1 1 3 -1 -1 -1 -1 -1 -1
5 4 -1 30 1 -1 -1 1 40 -1 1 3 -1 -1 -1 -1 -1 -1
";

#[test]
fn from_trace_validates_end_to_end() {
    let dir = tempdir();
    let out = dir.path().join("cut.jsonl");
    let args = [
        "generate",
        "--from-trace",
        SDSC,
        "--policy",
        "fcfs",
        "--start-rule",
        "easy",
        "--sample",
        "12",
        "--queue",
        "8..12",
        "--seed",
        "4",
        "-o",
        &path_str(&out),
    ];
    let first = run(&args).ok();
    assert!(
        first.stderr.contains("events with a waiting queue"),
        "{}",
        first.stderr
    );
    let lines = read_jsonl(&out);
    assert!(!lines.is_empty() && lines.len() <= 12);
    for l in &lines {
        let q = l["queue"].as_array().unwrap();
        assert!((8..=12).contains(&q.len()));
        assert!(q[0]["id"].as_str().unwrap().starts_with('j'));
        assert!(q[0]["runtime"].is_i64());
    }
    run(&["validate", &path_str(&out)]).ok();
    let bytes = std::fs::read(&out).unwrap();
    run(&args).ok();
    assert_eq!(bytes, std::fs::read(&out).unwrap(), "two runs differ");

    // --every with --estimate and a count cap.
    let est = dir.path().join("est.jsonl");
    run(&[
        "generate",
        "--from-trace",
        SDSC,
        "--policy",
        "sjf",
        "--every",
        "500",
        "-n",
        "5",
        "--estimate",
        "last2",
        "-o",
        &path_str(&est),
    ])
    .ok();
    let lines = read_jsonl(&est);
    assert_eq!(lines.len(), 5);
    for l in &lines {
        for q in l["queue"].as_array().unwrap() {
            let req = q["meta"]["requested_walltime"].as_i64().unwrap();
            let w = q["walltime"].as_i64().unwrap();
            assert!(1 <= w && w <= req);
        }
    }
    run(&["validate", &path_str(&est)]).ok();
}

#[test]
fn from_trace_small_trace_and_errors() {
    let dir = tempdir();
    let trace = dir.path().join("t.swf");
    std::fs::write(&trace, SWF).unwrap();
    let out = dir.path().join("t.jsonl");
    run(&[
        "generate",
        "--from-trace",
        &path_str(&trace),
        "--queue",
        "2..3",
        "-o",
        &path_str(&out),
    ])
    .ok();
    let lines = read_jsonl(&out);
    // Events with a queue: 1 (only j2: too short), 2, 3, 4 (j2..j5), 100 (j1 ends; cut
    // before j2 starts), 110 (j2 ends; j3, j4, j5 wait), 160 (only j5: too short).
    let nows: Vec<i64> = lines.iter().map(|l| l["now"].as_i64().unwrap()).collect();
    assert_eq!(nows, vec![2, 3, 4, 100, 110]);
    assert_eq!(lines[3]["queue"].as_array().unwrap().len(), 3);
    assert!(lines[3]["running"].as_array().unwrap().is_empty());
    // At 4 the queue j2..j5 is cut to the 3 oldest.
    let ids: Vec<&str> = lines[2]["queue"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["j2", "j3", "j4"]);
    assert_eq!(lines[2]["running"][0]["end"], 200);
    assert_eq!(lines[2]["queue"][0]["user"], "u2");
    run(&["validate", &path_str(&out)]).ok();

    // Options of the family generator conflict; trace options need --from-trace.
    run(&[
        "generate",
        "--from-trace",
        &path_str(&trace),
        "--family",
        "dl",
    ])
    .failed();
    run(&["generate", "--every", "3"]).failed();
    run(&[
        "generate",
        "--from-trace",
        &path_str(&trace),
        "--every",
        "0",
    ])
    .failed();
    run(&["generate", "--from-trace", "/nonexistent.swf"]).failed();
}

/// `schedlm estimate` scores the four estimators; on the first 4,000 lines of CTC-SP2 (a trace
/// not used to choose the matcher's settings) the similar-job estimator is the most accurate.
#[test]
fn estimate_scores_the_similar_job_matcher_above_last2() {
    let ctc = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/traces/CTC-SP2-1996-3.1-cln.swf"
    );
    let text = std::fs::read_to_string(ctc).unwrap();
    let head: String = text.lines().take(4000).map(|l| format!("{l}\n")).collect();
    let dir = tempdir();
    let path = dir.path().join("ctc-head.swf");
    std::fs::write(&path, head).unwrap();
    let out = run(&["estimate", "--trace", &path_str(&path), "--json"]).ok();
    let scores = common::parse_jsonl(&out.stdout_text());
    let names: Vec<&str> = scores
        .iter()
        .map(|s| s["estimator"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["user", "last2", "model", "similar"]);
    let accuracy = |i: usize| scores[i]["accuracy"].as_f64().unwrap();
    assert!(
        accuracy(3) > accuracy(1) && accuracy(3) > accuracy(2),
        "similar {} vs last2 {} and model {}",
        accuracy(3),
        accuracy(1),
        accuracy(2)
    );
}
