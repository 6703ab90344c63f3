//! End-to-end tests of `schedlm eval`: a dataset built by `schedlm dataset build`, rules,
//! solvers and a predictions file with valid, garbage and missing answers, the report's files,
//! and errors that name the bad line or policy.

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
            r["messages"][2]["content"].clone()
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
    // Wins and losses coloured; example answers of the text policy beside the labels.
    assert!(html.contains("<td class=\"win\">") && html.contains("<td class=\"loss\">"));
    assert!(
        md.contains("## Example answers") && md.contains("no idea"),
        "{md}"
    );
    let examples = summary["examples"].as_array().unwrap();
    assert!(examples
        .iter()
        .any(|e| e["valid"] == false && e["answer"] == "no idea"));
    assert!(examples.iter().any(|e| e["optimal"] == true));
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
    let trace = common::tiny_trace(dir.path());
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
    // Each column brings its equal-compute baseline: local search in the same time as the
    // greedy answer, the ranking plus 2 random transpositions for the best of 2.
    let ls = format!("ls@model:{model}");
    let swaps = format!("ranking+2swaps@model:{model} (best-of)");
    assert_eq!(
        names,
        vec![
            "fcfs",
            policies[5..].as_ref(),
            best.as_str(),
            ls.as_str(),
            swaps.as_str()
        ]
    );
    // The decoding is said, and the unconstrained answers were decoded beside.
    let greedy = policy(&summary, &format!("model:{model}"));
    assert_eq!(greedy["decoding"], "constrained greedy");
    assert!(greedy["unconstrained_valid_share"].is_number(), "{greedy}");
    assert_eq!(
        policy(&summary, &best)["decoding"],
        "constrained, best of 2 samples at temperature 1"
    );
    let answers = read_jsonl(&report.join("answers.jsonl"));
    assert!(answers.iter().all(|a| a["decoding"]
        .as_str()
        .unwrap()
        .starts_with("constrained greedy; best-of: constrained, best of 2")));
    assert!(answers.iter().all(|a| a["unconstrained"].is_string()));
    // Every best-of verdict names its same-N baseline.
    let verdict = summary["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["policy"] == best.as_str() && v["against"] == swaps.as_str());
    assert!(verdict.is_some(), "{}", summary["verdicts"]);
    let md = fs::read_to_string(report.join("report.md")).unwrap();
    assert!(
        md.contains("the ranking plus 2 random transpositions (same dispatcher evaluations)"),
        "{md}"
    );
    // Every model row was timed.
    let csv = fs::read_to_string(report.join("instances.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let seconds = header.iter().position(|h| *h == "seconds").unwrap();
    for line in csv.lines().filter(|l| l.starts_with("model:")) {
        assert!(!line.split(',').nth(seconds).unwrap().is_empty(), "{line}");
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

    let pct = |x: f64| schedlm_eval::report::pct(Some(x));
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(name) && l.contains(": mean gap"))
            .unwrap_or_else(|| panic!("no sentence for {name} in:\n{stdout}"))
            .to_string()
    };
    let ql = line(&qname);
    assert!(
        ql.contains(&format!(
            "mean gap {}; worse than the best rule per instance ({}), worse than the best \
             single rule sjf ({}), level with FCFS ({});",
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
    assert!(rl.contains("worse than FCFS ("), "{rl}");
    // Rules get no such sentence; the reports carry the same one.
    assert!(!stdout.contains("fcfs: mean gap"), "{stdout}");
    let md = fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains(&format!("**{qname}** (decoding: ")), "{md}");
    assert!(md.contains("## Against the rules"), "{md}");
    assert!(md.contains("## Verdicts (paired comparisons)"), "{md}");
    assert!(md.contains("best rule per instance (reference)"), "{md}");
    let html = fs::read_to_string(report.join("report.html")).unwrap();
    assert!(html.contains("level with FCFS"));
    assert!(html.contains("best rule per instance (reference)"));
    let baselines = fs::read_to_string(report.join("baselines.csv")).unwrap();
    assert!(
        baselines.starts_with("record,line,source,fcfs,sjf,"),
        "{baselines}"
    );
    assert_eq!(baselines.lines().count(), 1 + records.len());
}

/// An endpoint that only echoes the prompt's ranking (`J1 ... Jn` in compact-v2) on `hpc`
/// snapshots, where the best rule is optimal almost everywhere: it is level with the best rule
/// per instance and with SJF, never "better", and the headline does not crown it alone.
#[test]
fn an_endpoint_echoing_the_ranking_is_level_with_the_rules_never_better() {
    let dir = tempdir();
    let out = path_str(&dir.path().join("data"));
    run(&[
        "dataset",
        "build",
        "-q",
        "--family",
        "hpc",
        "-n",
        "200",
        "--queue",
        "8..12",
        "--split",
        "0/0/100",
        "--node-limit",
        "20000",
        "--seed",
        "17",
        "-o",
        &out,
    ])
    .ok();
    let data = format!("{out}/test.jsonl");
    let (url, _) = serve(|_, user| (200, queue_order_body(user)));
    let echo = format!("openai:{url}#echo");
    let report = dir.path().join("out");
    let r = run(&[
        "eval",
        "--data",
        &data,
        "--policies",
        &format!("fcfs,sjf,{echo}"),
        "--report",
        &path_str(&report),
        "--concurrency",
        "4",
        "--quiet",
    ])
    .ok();
    let stdout = r.stdout_text();
    let sentence = stdout
        .lines()
        .find(|l| l.starts_with(&echo) && l.contains(": mean gap"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        sentence.contains("level with the best rule per instance")
            && sentence.contains("level with the best single rule sjf"),
        "{sentence}"
    );
    assert!(!sentence.contains("better than the best"), "{sentence}");
    // It is identical to the ranking; the best line names it only beside what it is level with.
    assert!(
        sentence.contains("to the best rule's order on 100.0%"),
        "{sentence}"
    );
    let best = stdout.lines().find(|l| l.starts_with("Best: ")).unwrap();
    assert!(best.contains("level with"), "{best}");
    assert!(best.contains("sjf") && best.contains(&echo), "{best}");
    // Its equal-compute baseline: local search in the same time, judged too.
    let summary: Value =
        serde_json::from_str(&fs::read_to_string(report.join("summary.json")).unwrap()).unwrap();
    let against: Vec<&str> = summary["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["policy"] == echo.as_str())
        .map(|v| v["against"].as_str().unwrap())
        .collect();
    let ls = format!("ls@{echo}");
    assert_eq!(
        against,
        vec!["best rule per instance", "ect", "sjf", "fcfs", ls.as_str()]
    );
}

/// Retried requests are counted per policy, with their reasons, on stderr, in summary.json and
/// in the report.
#[test]
fn retries_are_counted_and_reported() {
    let dir = tempdir();
    let data = dataset(dir.path());
    // Every third request fails once with a 503; the retry succeeds.
    let (url, calls) = serve(|n, user| {
        if n % 3 == 1 {
            (503, r#"{"error": {"message": "busy"}}"#.into())
        } else {
            (200, queue_order_body(user))
        }
    });
    let name = format!("openai:{url}#m");
    let report = dir.path().join("out");
    let r = run(&[
        "eval",
        "--data",
        &data,
        "--policies",
        &format!("fcfs,{name}"),
        "--report",
        &path_str(&report),
        "--backoff",
        "10ms",
        "--quiet",
    ])
    .ok();
    let asked = calls.load(std::sync::atomic::Ordering::SeqCst);
    let retried = asked - 16;
    assert!(retried >= 4, "{asked} requests");
    assert!(
        r.stderr
            .contains(&format!("{name}: {retried} requests retried"))
            && r.stderr.contains("HTTP 503"),
        "{}",
        r.stderr
    );
    let summary: Value =
        serde_json::from_str(&fs::read_to_string(report.join("summary.json")).unwrap()).unwrap();
    let p = policy(&summary, &name);
    assert_eq!(p["retries"], retried);
    assert_eq!(p["retry_reasons"][0][0], "HTTP 503 X");
    assert_eq!(p["failed"], 0);
    let md = fs::read_to_string(report.join("report.md")).unwrap();
    assert!(
        md.contains(&format!("{retried} requests were retried")),
        "{md}"
    );
    let answers = read_jsonl(&report.join("answers.jsonl"));
    let logged: u64 = answers
        .iter()
        .map(|a| a["retries"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(logged, retried as u64);
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

/// A tiny OpenAI-compatible server for the command under test: answers each request with
/// `reply(n, user message)` (status, body) and counts requests. Runs until the test ends.
fn serve(
    reply: impl Fn(usize, &str) -> (u16, String) + Send + Sync + 'static,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let (reply, seen) = (Arc::new(reply), count.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let user = request["messages"][1]["content"].as_str().unwrap_or("");
            let (status, text) = reply(seen.fetch_add(1, Ordering::SeqCst), user);
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (url, count)
}

/// The queue order `J1 ... Jn` of a compact prompt, as a chat-completions body.
fn queue_order_body(user: &str) -> String {
    let jobs = (1..100)
        .take_while(|k| user.contains(&format!("J{k} ")))
        .count();
    let ids: Vec<String> = (1..=jobs).map(|k| format!("J{k}")).collect();
    json!({"choices": [{"message": {"content": ids.join(" ")}, "finish_reason": "stop"}]})
        .to_string()
}

#[test]
fn a_dead_endpoint_fails_the_command_and_is_never_best() {
    let dir = tempdir();
    let data = dataset(dir.path());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = format!("openai:http://127.0.0.1:{port}/v1#x");
    let report = dir.path().join("out");
    let args = |extra: &[&str]| {
        let mut a: Vec<String> = [
            "eval",
            "--data",
            &data,
            "--policies",
            &format!("{dead},fcfs"),
            "--report",
            &path_str(&report),
            "--retries",
            "0",
            "--quiet",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let r = run(&args(&[])).failed();
    assert!(
        r.stderr
            .contains(&format!("warning: {dead}: 16 of 16 answers failed"))
            && r.stderr.contains("transport")
            && r.stderr.contains("--keep-going"),
        "{}",
        r.stderr
    );
    let out = r.stdout_text();
    assert!(out.starts_with("Best: fcfs,"), "{out}");
    assert!(out.contains("all 16 answers failed"), "{out}");
    // The report is written all the same, with every failed answer and its reason.
    let md = fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("all 16 answers failed"), "{md}");
    let answers = read_jsonl(&report.join("answers.jsonl"));
    assert_eq!(answers.len(), 16);
    assert!(answers.iter().all(|a| a["error"].is_string()));
    let summary: Value =
        serde_json::from_str(&fs::read_to_string(report.join("summary.json")).unwrap()).unwrap();
    assert_eq!(policy(&summary, &dead)["failed"], 16);
    // Asked to keep going, the same run exits 0.
    run(&args(&["--keep-going"])).ok();
}

#[test]
fn interrupted_llm_evaluations_resume_asking_only_for_what_is_missing() {
    let dir = tempdir();
    let data = dataset(dir.path());
    let report = path_str(&dir.path().join("out"));
    // The first server fails every third request (HTTP 500, not retried with --retries 0)
    // and answers the queue order otherwise.
    let (url, first) = serve(|n, user| {
        if n % 3 == 2 {
            (500, r#"{"error": {"message": "GPU fell over"}}"#.into())
        } else {
            (200, queue_order_body(user))
        }
    });
    let policy_name = format!("openai:{url}#m");
    let eval = |policies: &str, extra: &[&str]| {
        let mut a = vec![
            "eval",
            "--data",
            &data,
            "--policies",
            policies,
            "--report",
            &report,
            "--retries",
            "0",
            "--quiet",
        ];
        a.extend_from_slice(extra);
        run(&a)
    };
    let r = eval(&format!("fcfs,{policy_name}"), &["--limit", "12"]).ok();
    assert!(
        r.stderr.contains("4 of 12 answers failed") && r.stderr.contains("GPU fell over"),
        "{}",
        r.stderr
    );
    assert!(!r.stdout_text().starts_with(&format!("Best: {policy_name}")));
    assert_eq!(first.load(std::sync::atomic::Ordering::SeqCst), 12);

    // The same endpoint, now healthy, under the same name: a resumed run asks only for the
    // 4 failed answers and the 4 records past the old limit.
    let again = Path::new(&report).join("answers.jsonl");
    let kept = fs::read_to_string(&again).unwrap();
    let (url2, second) = serve(|_, user| (200, queue_order_body(user)));
    let renamed = kept.replace(&url, &url2);
    fs::write(&again, renamed).unwrap();
    let policy2 = format!("openai:{url2}#m");
    // `--quiet` keeps the "resuming with 8 answers" notice off stderr; what is asked shows it.
    let r = eval(&format!("fcfs,{policy2}"), &["--resume"]).ok();
    assert!(!r.stderr.contains("resuming"), "{}", r.stderr);
    assert_eq!(second.load(std::sync::atomic::Ordering::SeqCst), 8);
    let summary: Value =
        serde_json::from_str(&fs::read_to_string(Path::new(&report).join("summary.json")).unwrap())
            .unwrap();
    let p = policy(&summary, &policy2);
    assert_eq!(
        (p["instances"].as_u64(), p["failed"].as_u64()),
        (Some(16), Some(0))
    );
    assert_eq!(p["valid_share"], 1.0);
}

/// `schedlm extract --llm`: the agent reads a file the parsers do not, its checked answer
/// fills an empty field (cited, weakest source), a wrong one is rejected; with --cache an
/// unchanged job makes no call; a dead endpoint fails the command after writing the parsers'
/// facts.
#[test]
fn extract_asks_the_llm_agent_for_what_the_parsers_miss() {
    let dir = tempdir();
    let job = dir.path().join("job");
    fs::create_dir(&job).unwrap();
    fs::write(job.join("run.sh"), "#!/bin/bash\n#SBATCH --gres=gpu:4\n").unwrap();
    fs::write(
        job.join("notes.txt"),
        "Fine-tunes gpt2-medium on wikitext.\nThree epochs.\n",
    )
    .unwrap();
    let (url, calls) = serve(|_, user| {
        let content = if user.contains("1: Fine-tunes") {
            r#"answer {"model": {"value": "gpt2-medium", "source": "notes.txt:1"}, "epochs": {"value": 3, "source": "notes.txt:2"}}"#
        } else {
            "read_file notes.txt"
        };
        let body = json!({"choices": [{"message": {"content": content}, "finish_reason": "stop"}],
                          "usage": {"prompt_tokens": 50, "completion_tokens": 5}});
        (200, body.to_string())
    });
    let llm = format!("openai:{url}#tiny");
    let cache = path_str(&dir.path().join("facts.cache"));
    let args = |llm: &str| {
        vec![
            "extract".to_string(),
            path_str(&job),
            "--llm".into(),
            llm.to_string(),
            "--llm-samples".into(),
            "1".into(),
            "--cache".into(),
            cache.clone(),
        ]
    };
    let first = run(&args(&llm)).ok();
    let v: Value = serde_json::from_str(first.stdout_text().trim()).unwrap();
    assert_eq!(v["facts"]["model"]["value"], "gpt2-medium");
    assert_eq!(v["facts"]["model"]["source"], "notes.txt:1");
    assert_eq!(v["facts"]["model"]["strength"], "agent");
    assert_eq!(
        v["facts"]["gpus_per_node"]["strength"], "header",
        "parsers keep theirs"
    );
    assert!(
        v["facts"].get("epochs").is_none(),
        "\"Three\" is not 3: rejected"
    );
    assert_eq!(v["agent"]["calls"], 2);
    assert_eq!(v["agent"]["prompt_tokens"], 100);
    assert!(v["agent"]["rejected"][0]
        .as_str()
        .unwrap()
        .starts_with("epochs:"));
    let seen = calls.load(std::sync::atomic::Ordering::SeqCst);

    let second = run(&args(&llm)).ok();
    let again: Value = serde_json::from_str(second.stdout_text().trim()).unwrap();
    assert_eq!(again["facts"], v["facts"]);
    assert_eq!(again["agent"]["calls"], 0);
    assert_eq!(again["agent"]["reused"], true);
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        seen,
        "no call"
    );

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = run(&[
        "extract",
        &path_str(&job),
        "--llm",
        &format!("openai:http://127.0.0.1:{port}/v1#x"),
        "--llm-samples",
        "1",
    ])
    .failed();
    assert!(
        dead.stderr.contains("every LLM agent run failed"),
        "{}",
        dead.stderr
    );
    let parsers: Value = serde_json::from_str(dead.stdout_text().trim()).unwrap();
    assert_eq!(parsers["facts"]["gpus_per_node"]["value"], 4);
}
