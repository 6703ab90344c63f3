//! End-to-end tests of `schedlm eval`: a dataset built by `schedlm dataset build`, rules,
//! solvers and a predictions file with valid, garbage and missing answers, the report's files,
//! and errors that name the bad line or scheduler.

mod common;

use std::fs;
use std::path::Path;

use common::{path_str, read_jsonl, run, tempdir};
use serde_json::{json, Value};

/// Builds a small all-test dataset in `dir`; returns the path of test.jsonl.
fn dataset(dir: &Path) -> String {
    let out = path_str(&dir.join("data"));
    run(&[
        "dataset",
        "build",
        "-q",
        "--family",
        "hpc,dl",
        "-n",
        "16",
        "--queue",
        "3..8",
        "--split",
        "0/0/100",
        "--node-limit",
        "20000",
        "--seed",
        "3",
        "-o",
        &out,
    ])
    .ok();
    format!("{out}/test.jsonl")
}

#[test]
fn snapshot_report_end_to_end() {
    let dir = tempdir();
    let data = dataset(dir.path());
    let records = read_jsonl(Path::new(&data));
    assert_eq!(records.len(), 16);
    // Predictions: the label, garbage, and no line for the last record.
    let mut preds = String::new();
    for (i, r) in records.iter().enumerate().take(15) {
        let output = if i % 3 == 2 {
            json!("no idea")
        } else {
            r["completion"].clone()
        };
        preds += &format!(
            "{}\n",
            json!({"id": r["id"], "output": output, "best_of": null})
        );
    }
    let preds_path = dir.path().join("preds.jsonl");
    fs::write(&preds_path, preds).unwrap();
    let report = dir.path().join("out");
    let policies = format!(
        "fcfs,sjf,saf,f1,wfp3,ls,optimal,predictions:{}",
        path_str(&preds_path)
    );
    let r = run(&[
        "eval",
        "--data",
        &data,
        "--policies",
        &policies,
        "--report",
        &path_str(&report),
        "--node-limit",
        "20000",
        "--time-limit",
        "20s",
    ])
    .ok();
    let out = r.stdout_text();
    assert!(out.starts_with("Best: "), "{out}");
    assert!(out.contains("of answers valid"), "{out}");
    assert!(out.contains("1 of 16 records have no prediction"), "{out}");

    let summary: Value =
        serde_json::from_str(&fs::read_to_string(report.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["records"], 16);
    let stats = |name: &str| policy(&summary, name);
    // Every label is proven optimal, so the exact solver is optimal everywhere.
    assert_eq!(stats("optimal")["optimal_share"], 1.0);
    assert_eq!(stats("optimal")["gap"]["max"], 0.0);
    let p = stats(&format!("predictions:{}", path_str(&preds_path)));
    // 5 garbage answers (positions 2, 5, 8, 11, 14) and 1 missing: 10 of 16 valid.
    assert_eq!(p["valid_share"], 10.0 / 16.0);
    let csv = fs::read_to_string(report.join("instances.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 16 * 8);
    assert!(csv.contains(",missing prediction,"));
    let md = fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("## Wins / ties / losses"));
    let html = fs::read_to_string(report.join("report.html")).unwrap();
    assert!(html.contains("<svg"));
}

#[test]
fn bad_inputs_are_named() {
    let dir = tempdir();
    let data = dataset(dir.path());
    let report = path_str(&dir.path().join("out"));
    let preds = dir.path().join("dup.jsonl");
    fs::write(
        &preds,
        "{\"id\":\"a\",\"output\":\"J1\"}\n{\"id\":\"a\",\"output\":\"J1\"}\n",
    )
    .unwrap();
    let dup = format!("fcfs,predictions:{}", path_str(&preds));
    let r = run(&[
        "eval",
        "--data",
        &data,
        "--policies",
        &dup,
        "--report",
        &report,
    ])
    .failed();
    assert!(
        r.stderr.contains("line 2: record id a already on line 1"),
        "{}",
        r.stderr
    );

    let r = run(&[
        "eval",
        "--data",
        &data,
        "--policies",
        "fcfs,model:runs/x",
        "--report",
        &report,
    ])
    .failed();
    assert!(r.stderr.contains("model:runs/x"), "{}", r.stderr);
    let r = run(&[
        "eval",
        "--data",
        &data,
        "--policies",
        "fcfs,best",
        "--report",
        &report,
    ])
    .failed();
    assert!(r.stderr.contains("`best`"), "{}", r.stderr);

    let bad = dir.path().join("bad.jsonl");
    let text = fs::read_to_string(&data).unwrap();
    let first = text.lines().next().unwrap();
    fs::write(&bad, format!("{first}\n{{\"id\": 3}}\n")).unwrap();
    let r = run(&[
        "eval",
        "--data",
        &path_str(&bad),
        "--policies",
        "fcfs",
        "--report",
        &report,
    ])
    .failed();
    assert!(r.stderr.contains("line 2"), "{}", r.stderr);
}

#[test]
fn online_report_end_to_end() {
    let dir = tempdir();
    let mut text = String::from("; MaxProcs: 8\n");
    for i in 1..=40u64 {
        let (submit, run, procs) = (i * 20, 30 + (i * 17) % 300, 1 + (i * 3) % 8);
        text += &format!(
            "{i} {submit} -1 {run} {procs} -1 -1 {procs} {} -1 1 1 -1 -1 -1 -1 -1 -1\n",
            run + 20
        );
    }
    let trace = dir.path().join("t.swf");
    fs::write(&trace, text).unwrap();
    let report = dir.path().join("online");
    let r = run(&[
        "eval",
        "--trace",
        &path_str(&trace),
        "--start-rule",
        "easy",
        "--windows",
        "2x15",
        "--seed",
        "3",
        "--policies",
        "fcfs,sjf,f1,optimal",
        "--node-limit",
        "500",
        "--time-limit",
        "200ms",
        "--report",
        &path_str(&report),
    ])
    .ok();
    assert!(
        r.stdout_text().starts_with("Best online: "),
        "{}",
        r.stdout_text()
    );
    let summary: Value =
        serde_json::from_str(&fs::read_to_string(report.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["windows"].as_array().unwrap().len(), 2);
    assert_eq!(summary["policies"][0]["jobs"], 30);
    for f in [
        "windows.csv",
        "jobs.csv",
        "series.csv",
        "report.md",
        "report.html",
    ] {
        assert!(report.join(f).exists(), "{f}");
    }
    // --data and --trace exclude each other; one is needed.
    let r = run(&["eval", "--policies", "fcfs", "--report", &path_str(&report)]).failed();
    assert!(r.stderr.contains("--data"), "{}", r.stderr);
}

#[test]
fn model_directory_greedy_and_best_of_reported_apart() {
    let dir = tempdir();
    let data = path_str(&dir.path().join("data"));
    run(&[
        "dataset", "build", "-q", "--family", "hpc", "-n", "30", "--queue", "3..4", "--split",
        "70/0/30", "--seed", "21", "-o", &data,
    ])
    .ok();
    let model = path_str(&dir.path().join("run"));
    run(&[
        "finetune",
        "--train",
        &format!("{data}/train.jsonl"),
        "--out",
        &model,
        "--epochs",
        "1",
        "--layers",
        "1",
        "--width",
        "32",
        "--vocab",
        "2000",
        "--quiet",
    ])
    .ok();
    let report = dir.path().join("out");
    let policies = format!("fcfs,model:{model}");
    run(&[
        "eval",
        "--data",
        &format!("{data}/test.jsonl"),
        "--policies",
        &policies,
        "--best-of",
        "2",
        "--max-new-tokens",
        "24",
        "--report",
        &path_str(&report),
    ])
    .ok();
    let summary: Value =
        serde_json::from_str(&fs::read_to_string(report.join("summary.json")).unwrap()).unwrap();
    let names: Vec<&str> = summary["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["policy"].as_str().unwrap())
        .collect();
    let best = format!("model:{model} (best-of)");
    assert_eq!(names, vec!["fcfs", policies[5..].as_ref(), best.as_str()]);
    // Every model row was timed.
    let csv = fs::read_to_string(report.join("instances.csv")).unwrap();
    for line in csv.lines().filter(|l| l.starts_with("model:")) {
        assert!(!line.ends_with(','), "{line}");
    }
}

/// A predictions file that answers the queue order (J1 J2 ... Jn) on every record, and one
/// that answers the longest jobs first: the headline sets each against the rules, says the first is the
/// queue order on 100% of the records and no better than FCFS, and says "worse than" where
/// the numbers say so.
#[test]
fn queue_order_answers_are_called_out() {
    let dir = tempdir();
    let out = path_str(&dir.path().join("data"));
    run(&[
        "dataset",
        "build",
        "-q",
        "--family",
        "uniform",
        "-n",
        "24",
        "--queue",
        "5..8",
        "--split",
        "0/0/100",
        "--node-limit",
        "20000",
        "--seed",
        "5",
        // Prompt ids in queue order, so that `J1 J2 ...` is the queue order.
        "--template",
        "compact-v1",
        "-o",
        &out,
    ])
    .ok();
    let data = format!("{out}/test.jsonl");
    let records = read_jsonl(Path::new(&data));
    let (mut queue, mut reversed) = (String::new(), String::new());
    for r in &records {
        let n = r["instance"]["queue"].as_array().unwrap().len();
        let ids: Vec<String> = (1..=n).map(|k| format!("J{k}")).collect();
        queue += &format!("{}\n", json!({"id": r["id"], "output": ids.join(" ")}));
        // Longest walltime first.
        let mut longest: Vec<usize> = (0..n).collect();
        longest.sort_by_key(|&k| {
            let walltime = r["instance"]["queue"][k]["walltime"].as_i64().unwrap();
            (-walltime, k)
        });
        let longest: Vec<String> = longest.iter().map(|k| ids[*k].clone()).collect();
        reversed += &format!("{}\n", json!({"id": r["id"], "output": longest.join(" ")}));
    }
    let (qp, rp) = (
        dir.path().join("queue.jsonl"),
        dir.path().join("longest.jsonl"),
    );
    fs::write(&qp, queue).unwrap();
    fs::write(&rp, reversed).unwrap();
    let (qname, rname) = (
        format!("predictions:{}", path_str(&qp)),
        format!("predictions:{}", path_str(&rp)),
    );
    let report = dir.path().join("out");
    let r = run(&[
        "eval",
        "--data",
        &data,
        "--policies",
        &format!("fcfs,sjf,{qname},{rname}"),
        "--report",
        &path_str(&report),
    ])
    .ok();
    let stdout = r.stdout_text();
    let summary: Value =
        serde_json::from_str(&fs::read_to_string(report.join("summary.json")).unwrap()).unwrap();
    let stats = |name: &str| policy(&summary, name);
    let gap = |p: &Value| p["gap"]["mean"].as_f64().unwrap();
    let (q, rev, fcfs, sjf) = (stats(&qname), stats(&rname), stats("fcfs"), stats("sjf"));
    let fcfs_gap = summary["fcfs_gap"]["mean"].as_f64().unwrap();
    assert_eq!(fcfs_gap, gap(&fcfs));
    // The queue order is FCFS's order here: same value on every record.
    assert_eq!(q["same_as_queue_order"], 1.0);
    assert_eq!(fcfs["same_as_queue_order"], 1.0);
    assert_eq!(gap(&q), fcfs_gap);
    assert_eq!(q["vs_best_rule"], fcfs["vs_best_rule"]);
    assert_eq!(q["vs_best_rule"]["wins"], 0);
    // This data set has SJF better than FCFS, and longest-first worse than FCFS.
    assert_eq!(summary["best_single_rule"]["rule"], "sjf");
    assert_eq!(summary["best_single_rule"]["source"], "policies");
    assert!(gap(&sjf) < fcfs_gap, "{summary}");
    assert!(gap(&rev) > fcfs_gap, "{summary}");
    let best = summary["best_rule_per_instance_gap"]["mean"]
        .as_f64()
        .unwrap();
    assert!(best <= gap(&sjf));

    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name}: mean gap")))
            .unwrap_or_else(|| panic!("no sentence for {name} in:\n{stdout}"))
            .to_string()
    };
    let ql = line(&qname);
    assert!(
        ql.contains(&format!(
            "mean gap {} (best rule per instance {}, best single rule sjf {}, FCFS {}), no \
             better than FCFS and worse than the best single rule sjf;",
            pct(gap(&q)),
            pct(best),
            pct(gap(&sjf)),
            pct(fcfs_gap)
        )),
        "{ql}"
    );
    assert!(
        ql.contains("answers identical to the queue order on 100.0%, to the best rule's order on"),
        "{ql}"
    );
    let rl = line(&rname);
    assert!(
        rl.contains("), worse than FCFS and worse than the best single rule sjf;"),
        "{rl}"
    );
    // Rules get no such sentence; the reports carry the same one.
    assert!(!stdout.contains("fcfs: mean gap"), "{stdout}");
    let md = fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains(&format!("**{qname}**: mean gap")), "{md}");
    assert!(md.contains("## Against the rules"), "{md}");
    assert!(md.contains("best rule per instance (reference)"), "{md}");
    let html = fs::read_to_string(report.join("report.html")).unwrap();
    assert!(html.contains("no better than FCFS and worse than the best single rule sjf"));
    assert!(html.contains("best rule per instance (reference)"));
    let baselines = fs::read_to_string(report.join("baselines.csv")).unwrap();
    assert!(
        baselines.starts_with("record,line,source,fcfs,sjf,"),
        "{baselines}"
    );
    assert_eq!(baselines.lines().count(), 1 + records.len());
}

/// The entry of `summary.json`'s `policies` named `name`.
fn policy(summary: &Value, name: &str) -> Value {
    summary["policies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["policy"] == name)
        .unwrap()
        .clone()
}
