//! Snapshot evaluation end to end on small data: the report's files, and every number of
//! summary.json recomputed here from instances.csv alone.

mod common;

use std::collections::HashMap;
use std::path::Path;

use schedlm_eval::data::load_dataset;
use schedlm_eval::policy::parse_list;
use schedlm_eval::report::{snapshot_summary, write_snapshot_report};
use schedlm_eval::snapshot::{evaluate, SnapshotOptions};
use schedlm_generator::Family;
use schedlm_model::{dispatch, repair, Problem};
use schedlm_solver::canonical::ranking;
use schedlm_solver::rules::Rule;
use serde_json::{json, Value};

/// One CSV row as text cells by column name.
type Cells = HashMap<String, String>;

fn read_csv(path: &Path) -> Vec<Cells> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            header
                .iter()
                .cloned()
                .zip(r.iter().map(String::from))
                .collect()
        })
        .collect()
}

fn f(c: &Cells, k: &str) -> f64 {
    c[k].parse().unwrap()
}

fn close(a: f64, b: &Value, what: &str) {
    let b = b
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: {b} is not a number"));
    assert!(
        (a - b).abs() <= 1e-9 * a.abs().max(1.0),
        "{what}: {a} != {b}"
    );
}

fn run(dir: &Path, threads: usize) -> (Value, Vec<Cells>) {
    let data_path = dir.join("test.jsonl");
    let data = load_dataset(&data_path).unwrap();
    let preds = dir.join("predictions.jsonl");
    let policies = format!("fcfs,sjf,f1,ls,optimal,predictions:{}", preds.display());
    let specs = parse_list(&policies).unwrap();
    let options = SnapshotOptions {
        node_limit: Some(20_000),
        time_limit: std::time::Duration::from_secs(30),
        work_limit: None,
        ..SnapshotOptions::default()
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let eval = pool.install(|| evaluate(&data, &specs, &options)).unwrap();
    let summary = snapshot_summary(&data_path, &data, &eval, &options);
    let out = dir.join(format!("out{threads}"));
    write_snapshot_report(&out, &summary, &eval).unwrap();
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    (json, read_csv(&out.join("instances.csv")))
}

#[test]
fn summary_numbers_recompute_from_the_csv() {
    let dir = tempfile::tempdir().unwrap();
    let records = common::mixed();
    common::write_records(&dir.path().join("test.jsonl"), &records);
    std::fs::write(
        dir.path().join("predictions.jsonl"),
        common::predictions(&records),
    )
    .unwrap();
    let (summary, rows) = run(dir.path(), 1);
    let n = records.len();
    assert_eq!(summary["records"], n);
    assert_eq!(summary["proven"], n - 1);
    let preds = format!(
        "predictions:{}",
        dir.path().join("predictions.jsonl").display()
    );
    let names: Vec<&str> = summary["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["policy"].as_str().unwrap())
        .collect();
    let best_of = format!("{preds} (best-of)");
    assert_eq!(
        names,
        vec![
            "fcfs",
            "sjf",
            "f1",
            "ls",
            "optimal",
            preds.as_str(),
            best_of.as_str()
        ]
    );
    assert_eq!(rows.len(), n * names.len());

    for p in summary["policies"].as_array().unwrap() {
        let name = p["policy"].as_str().unwrap();
        let mine: Vec<&Cells> = rows.iter().filter(|r| r["policy"] == name).collect();
        assert_eq!(p["instances"], mine.len());
        let mean = |k: &str| mine.iter().map(|r| f(r, k)).sum::<f64>() / mine.len() as f64;
        close(mean("value"), &p["mean_value"], name);
        close(mean("lenient_value"), &p["mean_lenient_value"], name);
        let share =
            |k: &str| mine.iter().filter(|r| r[k] == "true").count() as f64 / mine.len() as f64;
        close(share("optimal"), &p["optimal_share"], name);
        close(share("valid"), &p["valid_share"], name);
        // Gaps from value and reference, not from the gap column.
        let mut gaps: Vec<f64> = mine
            .iter()
            .map(|r| (f(r, "value") - f(r, "reference")).max(0.0) / f(r, "reference"))
            .collect();
        gaps.sort_by(f64::total_cmp);
        let k = gaps.len();
        close(gaps.iter().sum::<f64>() / k as f64, &p["gap"]["mean"], name);
        let median = if k % 2 == 1 {
            gaps[k / 2]
        } else {
            (gaps[k / 2 - 1] + gaps[k / 2]) / 2.0
        };
        close(median, &p["gap"]["median"], name);
        // NumPy's percentile: linear between the closest ranks, at position 0.9 (k - 1).
        let pos = 0.9 * (k - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        let p90 = gaps[lo] + (gaps[hi] - gaps[lo]) * (pos - lo as f64);
        close(p90, &p["gap"]["p90"], name);
        close(gaps[k - 1], &p["gap"]["max"], name);
    }

    // Wins, ties and losses of every pair.
    for pair in summary["pairs"].as_array().unwrap() {
        let (a, b) = (pair["a"].as_str().unwrap(), pair["b"].as_str().unwrap());
        let value = |p: &str, id: &str| {
            rows.iter()
                .find(|r| r["policy"] == p && r["record"] == id)
                .map(|r| f(r, "value"))
                .unwrap()
        };
        let (mut w, mut t, mut l) = (0, 0, 0);
        for r in &records {
            let (x, y) = (value(a, &r.id), value(b, &r.id));
            if (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0) {
                t += 1;
            } else if x < y {
                w += 1;
            } else {
                l += 1;
            }
        }
        assert_eq!(
            (
                pair["wins"].as_u64(),
                pair["ties"].as_u64(),
                pair["losses"].as_u64()
            ),
            (Some(w), Some(t), Some(l)),
            "{a} vs {b}"
        );
    }

    // Against the rules: every number from the CSV's best-rule and same-order columns.
    let tied = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0);
    for p in summary["policies"].as_array().unwrap() {
        let name = p["policy"].as_str().unwrap();
        let mine: Vec<&Cells> = rows.iter().filter(|r| r["policy"] == name).collect();
        // Wins, ties and losses of `value` against another column, as the summary has them.
        let tally = |column: &str, v: &Value, what: &str| {
            let (mut w, mut t, mut l) = (0u64, 0u64, 0u64);
            for r in &mine {
                let (x, y) = (f(r, "value"), f(r, column));
                if tied(x, y) {
                    t += 1;
                } else if x < y {
                    w += 1;
                } else {
                    l += 1;
                }
            }
            assert_eq!(
                (v["wins"].as_u64(), v["ties"].as_u64(), v["losses"].as_u64()),
                (Some(w), Some(t), Some(l)),
                "{name} {what}"
            );
        };
        tally(
            "best_rule_value",
            &p["vs_best_rule"],
            "against the best rule",
        );
        for k in ["same_as_queue_order", "same_as_best_rule_order"] {
            let same = mine.iter().filter(|r| r[k] == "true").count();
            close(same as f64 / mine.len() as f64, &p[k], name);
            // An invalid answer is never identical.
            assert!(mine.iter().all(|r| r[k] == "false" || r["valid"] == "true"));
        }
        // Against ect: the tally and the share from the `ect_value` and order columns; the
        // listing sums from the decision columns.
        tally("ect_value", &p["vs_ect"], "against ect");
        let same = mine
            .iter()
            .filter(|r| r["same_as_ect_order"] == "true")
            .count();
        close(
            same as f64 / mine.len() as f64,
            &p["same_as_ect_order"],
            name,
        );
        let sum = |k: &str| -> u64 {
            mine.iter()
                .filter(|r| !r[k].is_empty())
                .map(|r| r[k].parse::<u64>().unwrap())
                .sum()
        };
        for k in ["decisions", "leaving", "leaving_right"] {
            assert_eq!(p["listing"][k].as_u64(), Some(sum(k)), "{name} {k}");
        }
        for r in &mine {
            // Two independent computations: ect's order never leaves the listing, and an
            // answer that leaves it is not ect's order; a right departure is a departure.
            let count = |k: &str| r[k].parse::<u64>().unwrap();
            if r["valid"] == "true" {
                assert_eq!(
                    r["same_as_ect_order"] == "true",
                    count("leaving") == 0,
                    "{name}"
                );
                assert!(count("leaving_right") <= count("leaving"));
                assert!(count("leaving") <= count("decisions"));
            }
        }
        // Gaps to the best known value, which no valid answer of the run beats.
        let mean_known = mine
            .iter()
            .map(|r| (f(r, "value") - f(r, "best_known")).max(0.0) / f(r, "best_known"))
            .sum::<f64>()
            / mine.len() as f64;
        close(mean_known, &p["gap_to_best_known"]["mean"], name);
        if name == "fcfs" {
            // The generated queues are listed by submit time: FCFS is the queue order.
            close(1.0, &p["same_as_queue_order"], name);
            assert_eq!(p["vs_best_rule"]["wins"], 0);
        }
    }
    for r in rows.iter().filter(|r| r["valid"] == "true") {
        let same_record = rows.iter().filter(|o| o["record"] == r["record"]);
        for o in same_record {
            assert_eq!(
                o["best_known"], r["best_known"],
                "one best known per record"
            );
        }
        assert!(f(r, "best_known") <= f(r, "value") + 1e-9, "{r:?}");
    }
    let fcfs_rows: Vec<&Cells> = rows.iter().filter(|r| r["policy"] == "fcfs").collect();
    let mean_gap = |column: &str| {
        fcfs_rows
            .iter()
            .map(|r| (f(r, column) - f(r, "reference")).max(0.0) / f(r, "reference"))
            .sum::<f64>()
            / n as f64
    };
    close(
        mean_gap("best_rule_value"),
        &summary["best_rule_per_instance_gap"]["mean"],
        "best rule per instance",
    );
    close(
        mean_gap("fcfs_value"),
        &summary["fcfs_gap"]["mean"],
        "fcfs gap",
    );
    close(
        mean_gap("value"),
        &summary["fcfs_gap"]["mean"],
        "fcfs policy",
    );
    // The best single rule: the listed classic rule (fcfs, sjf, f1) with the lowest mean gap.
    let gap_of = |name: &str| {
        summary["policies"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["policy"] == name)
            .and_then(|p| p["gap"]["mean"].as_f64())
            .unwrap()
    };
    let single = ["fcfs", "sjf", "f1"]
        .into_iter()
        .min_by(|a, b| gap_of(a).total_cmp(&gap_of(b)))
        .unwrap();
    assert_eq!(summary["best_single_rule"]["rule"], single);
    assert_eq!(summary["best_single_rule"]["source"], "policies");
    // baselines.csv: the best rule value is the lowest classic rule's, as in instances.csv.
    let baselines = read_csv(&dir.path().join("out1").join("baselines.csv"));
    assert_eq!(baselines.len(), n);
    for (b, r) in baselines.iter().zip(&fcfs_rows) {
        assert_eq!(b["record"], r["record"]);
        assert_eq!(b["source"], "record");
        let lowest = Rule::CLASSIC
            .iter()
            .map(|rule| f(b, rule.name()))
            .fold(f64::INFINITY, f64::min);
        assert_eq!(lowest, f(r, "best_rule_value"));
        assert_eq!(b["best_rule"], r["best_rule"]);
    }

    // Rules and solvers are valid; the exact solver is optimal on every proven record.
    for r in rows
        .iter()
        .filter(|r| !r["policy"].starts_with("predictions:"))
    {
        assert_eq!(r["valid"], "true");
    }
    for r in rows
        .iter()
        .filter(|r| r["policy"] == "optimal" && r["proven"] == "true")
    {
        assert_eq!(r["optimal"], "true", "{}", r["record"]);
    }
    // Predictions: labels valid and optimal, garbage and missing invalid and scored by FCFS.
    let p: Vec<&Cells> = rows.iter().filter(|r| r["policy"] == preds).collect();
    assert_eq!(p[0]["valid"], "true");
    assert_eq!(p[3]["valid"], "false");
    assert_eq!(p[3]["value"], p[3]["fcfs_value"]);
    assert_eq!(p[n - 1]["defects"], "missing prediction");
    assert_eq!(p[n - 1]["value"], p[n - 1]["fcfs_value"]);
    let notes = summary["notes"].to_string();
    assert!(
        notes.contains("1 of 12 records have no prediction"),
        "{notes}"
    );
    assert!(notes.contains("not-in-data"), "{notes}");

    // Every per-family and per-queue-length group from the rows of that group.
    for (key, column) in [("by_family", "family"), ("by_queue", "queue")] {
        for g in summary[key].as_array().unwrap() {
            let label = g["group"].as_str().unwrap();
            let members: Vec<&Cells> = rows
                .iter()
                .filter(|r| r["policy"] == g["policy"].as_str().unwrap() && r[column] == label)
                .collect();
            assert_eq!(g["instances"], members.len(), "{key} {label}");
            let gaps: Vec<f64> = members.iter().map(|r| f(r, "gap")).collect();
            let what = format!("{key} {label}");
            close(
                gaps.iter().sum::<f64>() / gaps.len() as f64,
                &g["gap"]["mean"],
                &what,
            );
            let valid = members.iter().filter(|r| r["valid"] == "true").count();
            close(
                valid as f64 / members.len() as f64,
                &g["valid_share"],
                &what,
            );
        }
    }
    // Mean decision time over the rows that measured one.
    for p in summary["policies"].as_array().unwrap() {
        let name = p["policy"].as_str().unwrap();
        let times: Vec<f64> = rows
            .iter()
            .filter(|r| r["policy"] == name && !r["seconds"].is_empty())
            .map(|r| f(r, "seconds"))
            .collect();
        if times.is_empty() {
            assert!(p["mean_seconds"].is_null(), "{name}");
        } else {
            close(
                times.iter().sum::<f64>() / times.len() as f64,
                &p["mean_seconds"],
                name,
            );
        }
    }

    // Per-group counts add up.
    let groups = summary["by_family"].as_array().unwrap();
    let hpc = groups
        .iter()
        .find(|g| g["group"] == "hpc" && g["policy"] == "fcfs")
        .unwrap();
    assert_eq!(hpc["instances"], 8);

    // Every verdict: its counts and mean difference recomputed from the CSV's gaps, its word
    // from its interval and the margin.
    let margin = summary["verdict_rule"]["margin"].as_f64().unwrap();
    let verdicts = summary["verdicts"].as_array().unwrap();
    assert!(verdicts.len() >= 3, "{verdicts:?}");
    let gap_of = |value: f64, reference: f64| -> Option<f64> {
        if value <= reference + 1e-9 * reference.abs().max(1.0) {
            Some(0.0)
        } else if reference > 0.0 {
            Some((value - reference) / reference)
        } else {
            None
        }
    };
    let gap = |who: &str, record: &str| -> Option<f64> {
        let row = |p: &str| {
            rows.iter()
                .find(|r| r["policy"] == p && r["record"] == record)
                .unwrap()
        };
        match who {
            "best rule per instance" => {
                let r = row(names[0]);
                gap_of(f(r, "best_rule_value"), f(r, "reference"))
            }
            "fcfs" => {
                let r = row(names[0]);
                gap_of(f(r, "fcfs_value"), f(r, "reference"))
            }
            "ect" => {
                let r = row(names[0]);
                gap_of(f(r, "ect_value"), f(r, "reference"))
            }
            p => row(p)["gap"].parse().ok(),
        }
    };
    let records_ids: Vec<String> = rows
        .iter()
        .filter(|r| r["policy"] == names[0])
        .map(|r| r["record"].clone())
        .collect();
    for v in verdicts {
        let (a, b) = (
            v["policy"].as_str().unwrap(),
            v["against"].as_str().unwrap(),
        );
        let pairs: Vec<(f64, f64)> = records_ids
            .iter()
            .filter_map(|id| Some((gap(a, id)?, gap(b, id)?)))
            .collect();
        assert_eq!(v["records"], pairs.len(), "{a} vs {b}");
        let tie = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0);
        let wins = pairs.iter().filter(|&&(x, y)| x < y && !tie(x, y)).count();
        let losses = pairs.iter().filter(|&&(x, y)| x > y && !tie(x, y)).count();
        assert_eq!(
            (v["wins"].as_u64(), v["losses"].as_u64()),
            (Some(wins as u64), Some(losses as u64)),
            "{a} vs {b}"
        );
        let mean = pairs
            .iter()
            .map(|&(x, y)| if tie(x, y) { 0.0 } else { x - y })
            .sum::<f64>()
            / pairs.len().max(1) as f64;
        close(
            mean,
            &v["mean_difference"],
            &format!("{a} vs {b}: mean difference"),
        );
        let (lo, hi) = (
            v["interval"][0].as_f64().unwrap(),
            v["interval"][1].as_f64().unwrap(),
        );
        assert!(
            lo <= mean + 1e-12 && mean <= hi + 1e-12,
            "{a} vs {b}: {mean} not in [{lo}, {hi}]"
        );
        let expected = if hi < 0.0 && mean <= -margin && wins + losses > 0 {
            "better"
        } else if lo > 0.0 && mean >= margin && wins + losses > 0 {
            "worse"
        } else {
            "level"
        };
        assert_eq!(v["verdict"], expected, "{a} vs {b}");
    }

    // The same bytes with another thread count, timing aside.
    let (summary4, rows4) = run(dir.path(), 4);
    let strip = |rows: &[Cells]| -> Vec<Vec<(String, String)>> {
        rows.iter()
            .map(|r| {
                let mut v: Vec<(String, String)> = r
                    .iter()
                    .filter(|(k, _)| k.as_str() != "seconds")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                v.sort();
                v
            })
            .collect()
    };
    assert_eq!(strip(&rows), strip(&rows4));
    assert_eq!(summary["pairs"], summary4["pairs"]);

    // The reports exist and carry the headline and the plots.
    let out = dir.path().join("out1");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Best: **ls**"), "{md}");
    assert!(md.contains("of answers valid"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    // Both plots, each with a panel zoomed on the band of the best policies (FCFS is far out).
    assert_eq!(html.matches("<svg").count(), 4);
    assert!(html.contains("zoomed on 0 to"), "no zoomed panel");
    assert!(!html.contains("NaN"));
    assert!(
        !html.contains("src=") && !html.contains("<link"),
        "self-contained"
    );
}

/// The prompt ids of a queue order: `J3 J1 J2`.
fn answer(order: &[usize]) -> String {
    order
        .iter()
        .map(|j| format!("J{}", j + 1))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A predictions file that answers the queue order, the best rule's order, the label or the
/// queue order with extra words (invalid) in turn: wins, ties and losses against the best rule
/// per instance and both "identical" shares are exactly what this test computes by itself
/// from the records (with the solver's ranking rule, the dispatcher and the records' baselines).
#[test]
fn text_answers_against_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    let records = common::records(Family::Uniform, 16, 41);
    common::write_records(&dir.path().join("test.jsonl"), &records);
    let n = records.len();
    let (mut wins, mut ties, mut losses, mut queue, mut best) = (0, 0, 0, 0, 0);
    let mut preds = String::new();
    let tied = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0);
    for (i, r) in records.iter().enumerate() {
        let problem = Problem::new(&r.instance).unwrap();
        let (obj, variant) = (r.objective, r.variant);
        let all: Vec<usize> = (0..problem.jobs()).collect();
        let queue_order = repair(&problem, &all);
        // The ranking rule (ties to sjf first), as compact-v2 lists it, placed.
        let best_order = dispatch(&problem, &ranking(&problem, obj, variant).order, variant)
            .unwrap()
            .order;
        let label: Vec<usize> = r.order_indices().unwrap();
        let (text, order) = match i % 4 {
            0 => (answer(&all), Some(all.clone())),
            1 => (answer(&best_order), Some(best_order.clone())),
            2 => (answer(&label), Some(label)),
            _ => (format!("{}\nI am sure.", answer(&all)), None),
        };
        preds += &format!("{}\n", json!({"id": r.id, "output": text}));
        let run = |o: &[usize]| {
            let s = dispatch(&problem, o, variant).unwrap();
            (s.order.clone(), obj.value(&problem, &s.start))
        };
        let (placed, value) = run(order.as_deref().unwrap_or(&all));
        let lowest = Rule::CLASSIC
            .iter()
            .map(|rule| r.baselines[rule.name()])
            .fold(f64::INFINITY, f64::min);
        if tied(value, lowest) {
            ties += 1;
        } else if value < lowest {
            wins += 1;
        } else {
            losses += 1;
        }
        if order.is_some() {
            queue += usize::from(placed == queue_order);
            best += usize::from(placed == best_order);
        }
    }
    let preds_path = dir.path().join("p.jsonl");
    std::fs::write(&preds_path, preds).unwrap();
    let data = load_dataset(&dir.path().join("test.jsonl")).unwrap();
    let name = format!("predictions:{}", preds_path.display());
    let specs = parse_list(&format!("fcfs,sjf,{name}")).unwrap();
    let options = SnapshotOptions::default();
    let eval = evaluate(&data, &specs, &options).unwrap();
    let summary = snapshot_summary(&preds_path, &data, &eval, &options);
    let p = summary
        .stats
        .policies
        .iter()
        .find(|p| p.policy == name)
        .unwrap();
    // The data set makes every count matter: some of each, and the shares differ.
    assert!(wins > 0 && ties > 0 && losses > 0, "{wins} {ties} {losses}");
    assert!(queue != best && queue < n && best < n, "{queue} {best}");
    assert_eq!(
        (
            p.vs_best_rule.wins,
            p.vs_best_rule.ties,
            p.vs_best_rule.losses
        ),
        (wins, ties, losses)
    );
    assert_eq!(p.same_as_queue_order, queue as f64 / n as f64);
    assert_eq!(p.same_as_best_rule_order, best as f64 / n as f64);
    assert_eq!(p.valid_share, 0.75);
    // The headline says so, with the same numbers.
    let lines = schedlm_eval::report::markdown::headline(&summary);
    let sentence = lines
        .iter()
        .find(|l| l.starts_with(&format!("**{name}**")) && l.contains(": mean gap"))
        .unwrap();
    let share = |k: usize| schedlm_eval::report::pct(Some(k as f64 / n as f64));
    assert!(
        sentence.contains(&format!(
            "identical to the queue order on {}, to the best rule's order on {}.",
            share(queue),
            share(best)
        )),
        "{sentence}"
    );
}

/// A record whose label its own order contradicts, or whose bound is impossible, is refused
/// with its line: gaps are measured against the label.
#[test]
fn inconsistent_labels_are_refused_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let base = common::records(Family::Hpc, 2, 4);
    type Spoil = fn(&mut schedlm_dataset::Record);
    let cases: [(&str, Spoil); 4] = [
        ("field `value`", |r| r.value = 0.5),
        ("is negative", |r| {
            r.lower_bound = -1.0;
            r.proven_optimal = false
        }),
        ("above the label's value", |r| {
            r.lower_bound = r.value * 2.0;
            r.proven_optimal = false
        }),
        ("field `order`: the order lists", |r| {
            r.order[1] = r.order[0].clone()
        }),
    ];
    for (expected, spoil) in cases {
        let mut records = base.clone();
        spoil(&mut records[1]);
        let path = dir.path().join("bad.jsonl");
        common::write_records(&path, &records);
        let err = load_dataset(&path).unwrap_err().to_string();
        assert!(
            err.contains("line 2") && err.contains("inconsistent label") && err.contains(expected),
            "{expected}: {err}"
        );
    }
    common::write_records(&dir.path().join("good.jsonl"), &base);
    assert!(load_dataset(&dir.path().join("good.jsonl")).is_ok());
}
