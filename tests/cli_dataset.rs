//! End-to-end tests of `schedlm dataset build | merge | stats`: record contents recomputed
//! with the independent SPEC reference, optimal labels checked by brute force, byte-identical
//! output across threads, chunk sizes, shards and a SIGKILL in the middle of a build.

mod common;

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::reference::{self, close};
use common::{path_str, read_jsonl, run, tempdir};
use serde_json::Value;

const SPLITS: [&str; 3] = ["train", "val", "test"];

/// Runs `dataset build` with `args` into `dir`.
fn build(dir: &Path, args: &[&str]) -> common::Run {
    let mut all = vec!["dataset", "build", "-q", "-o"];
    let d = path_str(dir);
    all.push(&d);
    all.extend_from_slice(args);
    run(&all)
}

/// Every record of a dataset directory, with the split file it came from.
fn records(dir: &Path) -> Vec<(String, Value)> {
    SPLITS
        .iter()
        .flat_map(|s| {
            read_jsonl(&dir.join(format!("{s}.jsonl")))
                .into_iter()
                .map(move |r| (s.to_string(), r))
        })
        .collect()
}

/// The bytes of the four files of a dataset directory.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut names: Vec<String> = SPLITS.iter().map(|s| format!("{s}.jsonl")).collect();
    names.push("manifest.json".into());
    names
        .into_iter()
        .map(|n| {
            let bytes = fs::read(dir.join(&n)).unwrap_or_else(|e| panic!("{n}: {e}"));
            (n, bytes)
        })
        .collect()
}

fn assert_same_files(a: &Path, b: &Path) {
    for ((name, x), (_, y)) in files(a).into_iter().zip(files(b)) {
        assert!(
            x == y,
            "{name} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

/// The best value over every order (repaired for dependencies), with the project's dispatcher.
fn brute_force(instance: &Value, objective: schedlm_model::Objective) -> f64 {
    let inst: schedlm_model::Instance = serde_json::from_value(instance.clone()).unwrap();
    let problem = schedlm_model::Problem::new(&inst).unwrap();
    let n = inst.queue.len();
    let mut order: Vec<usize> = (0..n).collect();
    let mut best = f64::INFINITY;
    permute(&mut order, 0, &mut |o| {
        let o = schedlm_model::repair(&problem, o);
        let s = schedlm_model::dispatch(&problem, &o, schedlm_model::Variant::Serial).unwrap();
        best = best.min(objective.value(&problem, &s.start));
    });
    best
}

fn permute(v: &mut Vec<usize>, k: usize, f: &mut dyn FnMut(&[usize])) {
    if k == v.len() {
        f(v);
        return;
    }
    for i in k..v.len() {
        v.swap(k, i);
        permute(v, k + 1, f);
        v.swap(k, i);
    }
}

#[test]
fn every_record_is_consistent_and_optimal_labels_survive_brute_force() {
    let dir = tempdir();
    let out = dir.path().join("ds");
    build(
        &out,
        &[
            "--family",
            "hpc,dl,uniform",
            "-n",
            "45",
            "--queue",
            "3..8",
            "--deps",
            "0.2",
            "--split",
            "60/20/20",
            "--plan",
            "--format",
            "both",
        ],
    )
    .ok();
    let recs = records(&out);
    let manifest: Value =
        serde_json::from_str(&fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        recs.len() as u64 + manifest["duplicates"].as_u64().unwrap(),
        45
    );
    let mut ids = std::collections::HashSet::new();
    let (mut brute_checked, mut families) = (0, std::collections::BTreeSet::new());
    for (split, r) in &recs {
        let id = r["id"].as_str().unwrap();
        assert!(ids.insert(id.to_string()), "id {id} twice");
        assert_eq!(r["split"], split.as_str());
        families.insert(r["family"].as_str().unwrap().to_string());
        let inst = reference::Instance::from_json(&r["instance"]);
        // The label: a permutation of the queue, its value recomputed by the reference.
        let order = inst.indices(&strings(&r["order"]));
        assert!(reference::is_permutation(&inst, &order), "{id}");
        let order = reference::repair(&inst, &order);
        let placed = reference::dispatch(&inst, &order, false);
        let value = reference::objectives(&inst, &placed.start).bsld;
        let label = r["value"].as_f64().unwrap();
        assert!(
            close(value, label),
            "{id}: value {label}, reference {value}"
        );
        assert!(r["lower_bound"].as_f64().unwrap() <= label + 1e-9);
        // Each baseline is its rule's value.
        for rule in ["fcfs", "sjf", "saf", "ljf", "wfp3", "unicep", "f1"] {
            let o = reference::repair(&inst, &reference::rule_order(&inst, rule, 0));
            let p = reference::dispatch(&inst, &o, false);
            let v = reference::objectives(&inst, &p.start).bsld;
            let b = r["baselines"][rule].as_f64().unwrap();
            assert!(close(v, b), "{id}: {rule} {b}, reference {v}");
            assert!(label <= b + 1e-9, "{id}: label worse than {rule}");
        }
        // Text fields agree with each other and with the label.
        let m = r["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3);
        let content = |i: usize| m[i]["content"].as_str().unwrap().to_string();
        assert_eq!(m[2]["role"], "assistant");
        assert_eq!(
            r["prompt"].as_str().unwrap(),
            format!("{}\n\n{}\n", content(0), content(1))
        );
        let completion = r["completion"].as_str().unwrap();
        assert_eq!(completion, content(2));
        // compact-v2 ranks the queue by the best rule (SPEC rules, ties to the first of the
        // preference list) and numbers the jobs in that ranking.
        let rule = ranking_rule(&content(1));
        assert_eq!(r["ranking_rule"], rule.as_str());
        let best = PREFERENCE
            .iter()
            .map(|&x| r["baselines"][x].as_f64().unwrap())
            .fold(f64::INFINITY, f64::min);
        let first_best = PREFERENCE
            .iter()
            .find(|&&x| close(r["baselines"][x].as_f64().unwrap(), best))
            .unwrap();
        assert_eq!(&rule, first_best, "{id}");
        let ranking = reference::rule_order(&inst, &rule, 0);
        // Canonical labels: the best rule's order whenever that rule is optimal.
        assert_eq!(r["answer"], "canonical");
        if close(best, label) {
            let ranked = reference::repair(&inst, &ranking);
            assert_eq!(order, ranked, "{id}: label is not the optimal {rule} order");
        }
        check_difficulty(
            id,
            &r["difficulty"],
            &inst,
            &ranking,
            &order,
            best,
            label,
            r,
        );
        let first_line: Vec<String> = order_ids(&inst, &ranking, &strings(&r["order"]));
        let mut lines = completion.lines();
        assert_eq!(lines.next().unwrap(), first_line.join(" "));
        assert!(lines.next().unwrap().starts_with("plan: "), "{completion}");
        // Optimal labels of short queues: nothing beats them.
        if !r["proven_optimal"].as_bool().unwrap() {
            assert_ne!(r["status"], "optimal");
        } else if inst.queue.len() <= 8 {
            let best = brute_force(&r["instance"], schedlm_model::Objective::Bsld);
            assert!(
                close(best, label),
                "{id}: label {label}, brute force {best}"
            );
            brute_checked += 1;
        }
    }
    assert!(brute_checked >= 30, "only {brute_checked} optimal labels");
    assert_eq!(families.len(), 3);
    for s in SPLITS {
        assert!(recs.iter().any(|(x, _)| x == s), "no {s} record");
    }
}

/// A record's `difficulty`, recomputed from the reference: BRPI's value is the lowest
/// baseline, the headroom its distance above the label (and above the lower bound), the label
/// is the ranking exactly when it is the repaired ranking, and a deviation is a label position
/// whose job is not the first job of the ranking that is unplaced and ready.
#[allow(clippy::too_many_arguments)]
fn check_difficulty(
    id: &str,
    d: &Value,
    inst: &reference::Instance,
    ranking: &[usize],
    label: &[usize],
    brpi: f64,
    value: f64,
    r: &Value,
) {
    assert!(close(d["brpi_value"].as_f64().unwrap(), brpi), "{id}: {d}");
    assert_eq!(d["ranking_rule"], r["ranking_rule"], "{id}");
    let gap = |v: f64, base: f64| {
        if v <= base {
            0.0
        } else {
            (v - base) / base
        }
    };
    let headroom = d["headroom"].as_f64().unwrap();
    assert!((headroom - gap(brpi, value)).abs() < 1e-9, "{id}: {d}");
    let bound = r["lower_bound"].as_f64().unwrap();
    assert!((d["headroom_bound"].as_f64().unwrap() - gap(brpi, bound)).abs() < 1e-9);
    let ranked = reference::repair(inst, ranking);
    assert_eq!(
        d["label_is_ranking"].as_bool().unwrap(),
        label == ranked,
        "{id}"
    );
    let mut placed = vec![false; inst.queue.len()];
    let mut deviations = 0;
    for &j in label {
        let next = ranking
            .iter()
            .copied()
            .find(|&k| !placed[k] && inst.queued_deps(k).iter().all(|&q| placed[q]));
        deviations += usize::from(next != Some(j));
        placed[j] = true;
    }
    assert_eq!(
        d["deviations"].as_u64().unwrap() as usize,
        deviations,
        "{id}"
    );
    assert_eq!(deviations == 0, label == ranked, "{id}");
}

/// Prompt ids of original job ids: J + position in `ranking` (queue indices).
fn order_ids(inst: &reference::Instance, ranking: &[usize], ids: &[String]) -> Vec<String> {
    ids.iter()
        .map(|id| {
            let q = inst.queue_index(id).unwrap();
            format!("J{}", ranking.iter().position(|&j| j == q).unwrap() + 1)
        })
        .collect()
}

/// The rules in the order that breaks ties for the ranking rule (docs/learning.md).
const PREFERENCE: [&str; 7] = ["sjf", "saf", "f1", "wfp3", "unicep", "fcfs", "ljf"];

/// The rule named in a compact-v2 queue header, `queue by sjf (8): ...`.
fn ranking_rule(user: &str) -> String {
    let line = user
        .lines()
        .find(|l| l.starts_with("queue by "))
        .unwrap_or_else(|| panic!("no ranked queue header in {user}"));
    line["queue by ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .to_string()
}

/// Deterministic labels: branch and bound with a node budget only.
const DETERMINISTIC: [&str; 10] = [
    "--family",
    "hpc,dl",
    "-n",
    "120",
    "--queue",
    "6..10",
    "--solver",
    "bnb",
    "--node-limit",
    "20000",
];

#[test]
fn same_bytes_with_any_threads_chunks_and_shards() {
    let dir = tempdir();
    let one = dir.path().join("one");
    let mut a = DETERMINISTIC.to_vec();
    a.extend(["-j", "1", "--chunk", "7"]);
    build(&one, &a).ok();
    let two = dir.path().join("two");
    let mut b = DETERMINISTIC.to_vec();
    b.extend(["-j", "2", "--chunk", "64"]);
    build(&two, &b).ok();
    assert_same_files(&one, &two);

    let mut parts = Vec::new();
    for k in 1..=3 {
        let part = dir.path().join(format!("part{k}"));
        let shard = format!("{k}/3");
        let mut c = DETERMINISTIC.to_vec();
        c.extend(["--shard", &shard, "-j", "2"]);
        build(&part, &c).ok();
        let n = records(&part).len();
        assert!(n > 10, "shard {k} holds only {n} records");
        parts.push(path_str(&part));
    }
    let merged = dir.path().join("merged");
    let mut m = vec![
        "dataset".to_string(),
        "merge".into(),
        "-o".into(),
        path_str(&merged),
    ];
    // The parts in another order: merge sorts by source index.
    m.extend(parts.iter().rev().cloned());
    run(&m).ok();
    assert_same_files(&one, &merged);
}

#[test]
fn min_headroom_keeps_only_instances_with_headroom_and_counts_the_others() {
    let dir = tempdir();
    let args = [
        "--family",
        "uniform",
        "-n",
        "90",
        "--queue",
        "7..9",
        "--solver",
        "bnb",
        "--node-limit",
        "200000",
        "--seed",
        "4",
    ];
    let all = dir.path().join("all");
    build(&all, &args).ok();
    let kept = dir.path().join("kept");
    let mut a = args.to_vec();
    a.extend(["--min-headroom", "1%", "--chunk", "16"]);
    // Without -q: the summary is what this test reads.
    let k = path_str(&kept);
    let mut loud = vec!["dataset", "build", "-o", &k];
    loud.extend_from_slice(&a);
    let report = run(&loud).ok();
    // Exactly the instances of the unfiltered build with at least 1% headroom, in its order.
    let hard: Vec<String> = records(&all)
        .iter()
        .filter(|(_, r)| r["difficulty"]["headroom"].as_f64().unwrap() >= 0.01)
        .map(|(_, r)| r["id"].as_str().unwrap().to_string())
        .collect();
    let ids: Vec<String> = records(&kept)
        .iter()
        .map(|(_, r)| r["id"].as_str().unwrap().to_string())
        .collect();
    let (mut a_sorted, mut b_sorted) = (hard.clone(), ids.clone());
    a_sorted.sort();
    b_sorted.sort();
    assert_eq!(a_sorted, b_sorted);
    assert!(!ids.is_empty() && ids.len() < 80, "kept {}", ids.len());
    let manifest: Value =
        serde_json::from_str(&fs::read_to_string(kept.join("manifest.json")).unwrap()).unwrap();
    let filtered = manifest["filtered"].as_u64().unwrap();
    let duplicates = manifest["duplicates"].as_u64().unwrap();
    assert_eq!(ids.len() as u64 + filtered + duplicates, 90);
    assert_eq!(manifest["args"]["min_headroom"], 0.01);
    let d = &manifest["difficulty"]["all"];
    assert_eq!(d["instances"].as_u64().unwrap(), ids.len() as u64);
    assert_eq!(d["label_is_ranking"], 0.0);
    assert!(d["headroom"]["min"].as_f64().unwrap() >= 0.01);
    // The build says how many candidates it drew per record kept.
    assert!(
        report.stderr.contains("candidates drawn per instance kept"),
        "{}",
        report.stderr
    );
    // Shards of a filtered build merge to the same bytes.
    let mut parts = Vec::new();
    for k in 1..=2 {
        let part = dir.path().join(format!("part{k}"));
        let shard = format!("{k}/2");
        let mut c = a.clone();
        c.extend(["--shard", &shard]);
        build(&part, &c).ok();
        parts.push(path_str(&part));
    }
    let merged = dir.path().join("merged");
    let mut m = vec!["dataset".to_string(), "merge".into(), "-o".into()];
    m.push(path_str(&merged));
    m.extend(parts);
    run(&m).ok();
    assert_same_files(&kept, &merged);
}

/// The hpc-hard setting of docs/generator.md (a short partition on 4 nodes, a burst of wide and
/// memory-bound jobs) leaves at least 2% mean headroom at 10..12 jobs, where the family's
/// defaults leave almost none.
#[test]
fn the_hpc_hard_setting_has_headroom_the_defaults_lack() {
    let dir = tempdir();
    let mean_headroom = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut a = vec![
            "--family",
            "hpc",
            "-n",
            "400",
            "--queue",
            "10..12",
            "--seed",
            "11",
            "--solver",
            "bnb",
            "--node-limit",
            "200000",
        ];
        a.extend_from_slice(extra);
        build(&out, &a).ok();
        let manifest: Value =
            serde_json::from_str(&fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
        let all = &manifest["difficulty"]["all"];
        (
            all["headroom"]["mean"].as_f64().unwrap(),
            all["label_is_ranking"].as_f64().unwrap(),
        )
    };
    let (plain, plain_ranking) = mean_headroom("plain", &[]);
    assert!(
        plain < 0.002 && plain_ranking > 0.8,
        "{plain} {plain_ranking}"
    );
    let (hard, ranking) = mean_headroom(
        "hard",
        &[
            "--servers",
            "4",
            "--max-walltime",
            "1h",
            "--queue-span",
            "0",
            "--wide",
            "0.5",
            "--mem-bound",
            "0.3",
        ],
    );
    assert!(hard >= 0.02, "mean headroom {hard}");
    assert!(ranking <= 0.5, "{ranking} of the labels are the ranking");
}

#[test]
fn a_build_whose_labels_are_mostly_the_ranking_warns() {
    let dir = tempdir();
    let out = dir.path().join("easy");
    // hpc at its defaults: the best rule is optimal on almost every instance.
    let easy = build(
        &out,
        &[
            "--family", "hpc", "-n", "40", "--queue", "10..12", "--seed", "3",
        ],
    )
    .ok();
    assert!(
        easy.stderr
            .contains("of the labels are the prompt's ranking")
            && easy.stderr.contains("--min-headroom"),
        "{}",
        easy.stderr
    );
    let stats = common::run(&["dataset", "stats", &path_str(&out)]).ok();
    let text = String::from_utf8_lossy(&stats.stdout);
    assert!(text.contains("label=ranking"), "{text}");
    assert!(text.contains("warning:"), "{text}");
    // A build with headroom does not warn.
    let hard = dir.path().join("hard");
    let harder = build(
        &hard,
        &[
            "--family", "uniform", "-n", "40", "--queue", "10..12", "--seed", "3",
        ],
    )
    .ok();
    assert!(!harder.stderr.contains("warning:"), "{}", harder.stderr);
}

#[test]
fn merge_refuses_incomplete_or_mismatched_parts() {
    let dir = tempdir();
    let part = |k: u32, n: u32, seed: &str| {
        let p = dir.path().join(format!("p{k}of{n}s{seed}"));
        let shard = format!("{k}/{n}");
        let mut a = DETERMINISTIC.to_vec();
        a[3] = "30";
        a.extend(["--shard", &shard, "--seed", seed]);
        build(&p, &a).ok();
        path_str(&p)
    };
    let (p1, p2, other) = (part(1, 2, "1"), part(2, 2, "1"), part(2, 2, "9"));
    let merge = |parts: &[&str], out: &str| {
        let o = path_str(&dir.path().join(out));
        let mut a = vec!["dataset", "merge", "-o", &o];
        a.extend_from_slice(parts);
        run(&a)
    };
    let e = merge(&[&p1], "m1").failed().stderr;
    assert!(e.contains("shard 2/2 missing"), "{e}");
    let e = merge(&[&p1, &p1], "m2").failed().stderr;
    assert!(e.contains("shard 1/2 given twice"), "{e}");
    let e = merge(&[&p1, &other], "m3").failed().stderr;
    assert!(e.contains("other arguments"), "{e}");
    // A merge says what it wrote, and nothing with -q.
    let said = merge(&[&p1, &p2], "m5").ok().stderr;
    assert!(said.contains("merged 2 parts into"), "{said}");
    let said = merge(&["-q", &p1, &p2], "m6").ok().stderr;
    assert_eq!(said, "");
    // A part that lost a record is caught by its manifest.
    let train = Path::new(&p2).join("train.jsonl");
    let text = fs::read_to_string(&train).unwrap();
    let cut: Vec<&str> = text.lines().skip(1).collect();
    fs::write(&train, cut.join("\n") + "\n").unwrap();
    let e = merge(&[&p1, &p2], "m4").failed().stderr;
    assert!(e.contains("incomplete or changed"), "{e}");
}

#[test]
fn a_build_killed_with_sigkill_resumes_to_the_same_bytes() {
    let dir = tempdir();
    let args = [
        "--family",
        "hpc",
        "-n",
        "1500",
        "--queue",
        "9..11",
        "--solver",
        "bnb",
        "--node-limit",
        "20000",
        "--chunk",
        "16",
    ];
    let full = dir.path().join("full");
    build(&full, &args).ok();

    let out = dir.path().join("killed");
    let parts = out.join("parts");
    let mut kills = 0;
    // Kill twice at different moments, then let it finish.
    for wanted in [2usize, 20] {
        let mut cmd = common::command();
        cmd.args(["dataset", "build", "-q", "-j", "1", "-o", &path_str(&out)])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let started = Instant::now();
        loop {
            let done = fs::read_dir(&parts).map_or(0, |d| {
                d.filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
                })
                .count()
            });
            if done >= wanted || started.elapsed() > Duration::from_secs(60) {
                break;
            }
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL
            kills += 1;
        }
        child.wait().unwrap();
    }
    eprintln!("killed the build {kills} times");
    assert!(kills >= 1, "the build finished before it could be killed");
    assert!(!out.join("manifest.json").exists());
    // A half-written temporary chunk, as a kill during a write leaves it, is ignored.
    fs::write(parts.join("chunk-00000093.tmp"), "{\"id\":").unwrap();
    let e = build(&out, &args).ok().stderr;
    assert!(e.is_empty() || !e.contains("error"), "{e}");
    assert_same_files(&full, &out);
    assert!(!parts.exists(), "parts/ left behind");
    // Run again: nothing to do, nothing changes.
    let again = common::run(&{
        let mut a = vec![
            "dataset".to_string(),
            "build".into(),
            "-o".into(),
            path_str(&out),
        ];
        a.extend(args.iter().map(|s| s.to_string()));
        a
    })
    .ok();
    assert!(
        again.stderr.contains("already holds this build"),
        "{}",
        again.stderr
    );
    assert_same_files(&full, &out);
    // Other arguments on the same directory are refused.
    let mut other = args.to_vec();
    other[3] = "1600";
    let e = build(&out, &other).failed().stderr;
    assert!(e.contains("other arguments"), "{e}");
}

#[test]
fn from_file_reports_bad_lines_and_counts_duplicates() {
    let dir = tempdir();
    let file = common::generate_file(dir.path(), "in.jsonl", &["-n", "6", "--queue", "4..6"]);
    let text = fs::read_to_string(&file).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    // The first instance again, renamed, reversed and shifted in time: a duplicate.
    let mut copy = first.clone();
    let queue = copy["queue"].as_array_mut().unwrap();
    queue.reverse();
    for (i, j) in queue.iter_mut().enumerate() {
        j["id"] = format!("renamed{i}").into();
        j["submit"] = (j["submit"].as_i64().unwrap() + 100).into();
    }
    copy["now"] = (copy["now"].as_i64().unwrap() + 100).into();
    for r in copy["running"].as_array_mut().unwrap() {
        r["end"] = (r["end"].as_i64().unwrap() + 100).into();
    }
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines.push(copy.to_string());
    lines.push(String::new());
    lines.push("{\"now\": 0, \"resources\": [\"cores\"]}".into());
    let input = dir.path().join("mixed.jsonl");
    fs::write(&input, lines.join("\n") + "\n").unwrap();
    let src = path_str(&input);

    let e = build(&dir.path().join("strict"), &["--from", &src])
        .failed()
        .stderr;
    assert!(e.contains("mixed.jsonl:9:"), "{e}");
    let out = dir.path().join("ds");
    build(&out, &["--from", &src, "--skip-invalid", "--label", "mine"]).ok();
    let m: Value =
        serde_json::from_str(&fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["duplicates"], 1);
    assert_eq!(m["skipped"][0]["index"], 9);
    assert_eq!(m["families"]["mine"], 6);
    let recs = records(&out);
    assert_eq!(recs.len(), 6);
    let mut indices: Vec<u64> = recs
        .iter()
        .map(|(_, r)| r["index"].as_u64().unwrap())
        .collect();
    indices.sort();
    assert_eq!(indices, vec![1, 2, 3, 4, 5, 6]);
}

#[test]
fn stats_reports_counts_and_rules() {
    let dir = tempdir();
    let out = dir.path().join("ds");
    build(&out, &["-n", "40", "--queue", "5..7", "--family", "hpc,dl"]).ok();
    let text = run(&["dataset", "stats", &path_str(&out)])
        .ok()
        .stdout_text();
    assert!(text.contains("records: 40"), "{text}");
    assert!(text.contains("proven optimal: 100.0%"), "{text}");
    let json: Value = serde_json::from_slice(
        &run(&["dataset", "stats", "--json", &path_str(&out)])
            .ok()
            .stdout,
    )
    .unwrap();
    // Recompute one number from the records: the share of labels fcfs already matches.
    let recs = records(&out);
    let fcfs = recs
        .iter()
        .filter(|(_, r)| {
            r["baselines"]["fcfs"].as_f64().unwrap() <= r["value"].as_f64().unwrap() + 1e-9
        })
        .count() as f64
        / recs.len() as f64;
    let reported = json["rules"]["fcfs"]["optimal_share"].as_f64().unwrap();
    assert!((fcfs - reported).abs() < 1e-12, "{fcfs} vs {reported}");
    assert_eq!(
        json["families"]["train"]["hpc"].as_u64().unwrap()
            + json["families"]
                .get("val")
                .map_or(0, |v| v["hpc"].as_u64().unwrap_or(0))
            + json["families"]
                .get("test")
                .map_or(0, |v| v["hpc"].as_u64().unwrap_or(0)),
        20
    );
}

/// `--format`: one form of prompt and answer per file, `messages` by default; every schedlm
/// reader takes either, and both give the same evaluation.
#[test]
fn one_form_per_file_and_both_read_the_same() {
    let dir = tempdir();
    let mut reports = Vec::new();
    for (format, keys) in [
        (None, ["messages", ""]),
        (Some("prompt-completion"), ["prompt", "completion"]),
    ] {
        let out = dir
            .path()
            .join(format!("ds-{}", format.unwrap_or("default")));
        let mut args = vec![
            "--family", "hpc", "-n", "12", "--queue", "3..5", "--split", "0/0/100",
        ];
        if let Some(f) = format {
            args.extend(["--format", f]);
        }
        build(&out, &args).ok();
        for r in read_jsonl(&out.join("test.jsonl")) {
            for key in ["prompt", "completion", "messages"] {
                assert_eq!(
                    r.get(key).is_some(),
                    keys.contains(&key),
                    "{format:?}: `{key}` in {r}"
                );
            }
        }
        let report = dir
            .path()
            .join(format!("report-{}", format.unwrap_or("default")));
        let data = path_str(&out.join("test.jsonl"));
        run(&[
            "eval",
            "--data",
            &data,
            "--policies",
            "fcfs,sjf",
            "-o",
            &path_str(&report),
        ])
        .ok();
        // Every column but the decision time.
        let csv = fs::read_to_string(report.join("instances.csv")).unwrap();
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let seconds = header.iter().position(|h| *h == "seconds").unwrap();
        let rows: Vec<String> = csv
            .lines()
            .map(|l| {
                let mut cells: Vec<&str> = l.split(',').collect();
                cells.remove(seconds);
                cells.join(",")
            })
            .collect();
        reports.push(rows);
    }
    assert_eq!(reports[0], reports[1]);
}

/// A build that fails (here on a bad input line) leaves its finished chunks; the temporary file
/// of a chunk it was writing is removed when a build resumes in that directory, even one that
/// fails again.
#[test]
fn temporary_chunks_of_a_failed_build_are_removed_on_resume() {
    let dir = tempdir();
    let good = common::generate_file(dir.path(), "g.jsonl", &["--family", "hpc", "-n", "6"]);
    let input = dir.path().join("in.jsonl");
    let mut text = fs::read_to_string(&good).unwrap();
    text.push_str("{\"not\": \"an instance\"}\n");
    fs::write(&input, text).unwrap();
    let out = dir.path().join("ds");
    let args = ["--from", &path_str(&input), "--chunk", "2", "-j", "1"];
    let e = build(&out, &args).failed().stderr;
    assert!(e.contains("in.jsonl:7"), "{e}");
    let parts = out.join("parts");
    let stale = parts.join("chunk-00000003.tmp");
    fs::write(&stale, "{\"id\":").unwrap();
    build(&out, &args).failed();
    assert!(
        !stale.exists(),
        "the temporary chunk of the failed build is still there"
    );
    assert!(parts.join("chunk-00000000.jsonl").exists());
}

/// The default budget (a work limit) on `uniform` 16..20, with a smaller limit to keep the test
/// short: some labels end unproven, so the limit decides them.
const DEFAULT_BUDGET: [&str; 8] = [
    "--family",
    "uniform",
    "-n",
    "24",
    "--queue",
    "16..20",
    "--work-limit",
    "500k",
];

/// Busy threads on every core while alive (the artificial load of the issue on budgets).
struct Load(
    Vec<std::thread::JoinHandle<()>>,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
);

impl Load {
    fn start(threads: usize) -> Load {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let handles = (0..threads)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 1u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_mul(6364136223846793005) ^ 7);
                    }
                })
            })
            .collect();
        Load(handles, stop)
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.1.store(true, std::sync::atomic::Ordering::Relaxed);
        for h in self.0.drain(..) {
            let _ = h.join();
        }
    }
}

/// Builds shard `shard` into `part`, SIGKILLs it once its first chunk is written (a requeued
/// array task), then builds it again to the end.
fn build_requeued(part: &Path, args: &[&str]) {
    let mut cmd = common::command();
    cmd.args(["dataset", "build", "-q", "-j", "1", "-o", &path_str(part)])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() && started.elapsed() < Duration::from_secs(120) {
        let written = fs::read_dir(part.join("parts")).is_ok_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        });
        if written {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    child.wait().unwrap();
    build(part, &[args, &["-j", "2"]].concat()).ok();
}

/// The outcome of the issue on budgets: the default build's bytes do not depend on the load,
/// on -j, or on being built as four shards, one of them killed and requeued, and merged.
/// Every record states its budget, and the limit decides some labels.
#[test]
fn default_builds_are_the_same_under_load_with_any_threads_and_shards() {
    let dir = tempdir();
    let idle = dir.path().join("idle");
    build(
        &idle,
        &[&DEFAULT_BUDGET[..], &["-j", "1", "--chunk", "8"]].concat(),
    )
    .ok();
    let all = records(&idle);
    assert!(all.len() >= 20, "{} records", all.len());
    for (_, r) in &all {
        assert_eq!(r["budget"]["work_limit"], 500_000, "{r}");
        assert!(r["budget"].get("time_limit_ms").is_none(), "{r}");
        assert!(
            r["work"].as_u64().is_some_and(|w| w > 0 && w <= 625_000),
            "{}",
            r["work"]
        );
        assert_ne!(r["status"], "time_limit");
    }
    let decided = all
        .iter()
        .filter(|(_, r)| r["status"] == "work_limit")
        .count();
    assert!(decided > 0, "no label was stopped by the work limit");

    let _load = Load::start(4);
    let loaded = dir.path().join("loaded");
    build(
        &loaded,
        &[&DEFAULT_BUDGET[..], &["-j", "2", "--chunk", "8"]].concat(),
    )
    .ok();
    assert_same_files(&idle, &loaded);

    let mut parts = Vec::new();
    for k in 1..=4 {
        let part = dir.path().join(format!("part{k}"));
        let shard = format!("{k}/4");
        let args = [&DEFAULT_BUDGET[..], &["--shard", &shard, "--chunk", "8"]].concat();
        if k == 2 {
            build_requeued(&part, &args);
        } else {
            build(&part, &[&args[..], &["-j", "2"]].concat()).ok();
        }
        parts.push(path_str(&part));
    }
    let merged = dir.path().join("merged");
    let mut m = vec![
        "dataset".to_string(),
        "merge".into(),
        "-o".into(),
        path_str(&merged),
    ];
    m.extend(parts);
    run(&m).ok();
    assert_same_files(&idle, &merged);
}

/// A wall-clock cap that stops solves is reported: the records say `time_limit`, the manifest
/// counts them and the build warns that it is not reproducible.
#[test]
fn a_time_cap_that_stops_labels_is_counted_and_warned_about() {
    let dir = tempdir();
    let out = dir.path().join("capped");
    let run = build(
        &out,
        &[
            "--family",
            "uniform",
            "-n",
            "12",
            "--queue",
            "30..30",
            "--work-limit",
            "1G",
            "--time-limit",
            "30ms",
        ],
    )
    .ok();
    let manifest: Value =
        serde_json::from_slice(&fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let capped = records(&out)
        .iter()
        .filter(|(_, r)| r["status"] == "time_limit")
        .count() as u64;
    assert!(capped > 0, "the cap stopped nothing");
    assert_eq!(manifest["time_limited"], capped);
    assert_eq!(manifest["args"]["time_limit_ms"], 30);
    assert!(run.stderr.contains("not reproducible"), "{}", run.stderr);
}

/// Step records with values (`--targets values`) on queues small enough to enumerate.
const VALUES: [&str; 16] = [
    "--family",
    "uniform",
    "-n",
    "10",
    "--queue",
    "4..6",
    "--seed",
    "4",
    "--records",
    "steps",
    "--template",
    "step-v2",
    "--split",
    "60/20/20",
    "--work-limit",
    "500k",
];

/// The best bsld over every dependency-respecting order that starts with `prefix`, by the SPEC
/// reference dispatcher.
fn best_after(inst: &reference::Instance, prefix: &[usize]) -> f64 {
    let mut rest: Vec<usize> = (0..inst.queue.len())
        .filter(|j| !prefix.contains(j))
        .collect();
    let mut best = f64::INFINITY;
    permute(&mut rest, 0, &mut |perm| {
        let order: Vec<usize> = prefix.iter().chain(perm).copied().collect();
        if reference::respects_deps(inst, &order) {
            let placed = reference::dispatch(inst, &order, false);
            best = best.min(reference::objectives(inst, &placed.start).bsld);
        }
    });
    best
}

/// The issue on action values: every step state's candidates carry values whose regrets are
/// consistent, a proven value is the optimum below its state (checked against every order with
/// the reference dispatcher), the records are the label build's plus the field `values`, and
/// the bytes are the same at any -j, chunk size and load, sharded and merged or not.
#[test]
fn step_values_are_exact_where_proven_and_the_same_bytes_anywhere() {
    let dir = tempdir();
    let labels = dir.path().join("labels");
    build(&labels, &VALUES).ok();
    let values_args = [
        &VALUES[..],
        &["--targets", "values", "--value-work-limit", "20k"],
    ]
    .concat();
    let one = dir.path().join("one");
    build(
        &one,
        &[&values_args[..], &["-j", "1", "--chunk", "3"]].concat(),
    )
    .ok();
    let with = records(&one);
    let without = records(&labels);
    assert_eq!(with.len(), without.len());
    let (mut proven, mut states) = (0, 0);
    for ((split, r), (split0, r0)) in with.iter().zip(&without) {
        assert_eq!(split, split0);
        let mut stripped = r.clone();
        let values = stripped.as_object_mut().unwrap().remove("values").unwrap();
        assert_eq!(&stripped, r0, "a values build changed the label record");
        assert_eq!(values["work_limit"], 20_000);
        let inst = reference::Instance::from_json(&r["instance"]);
        let label = inst.indices(&strings(&r["order"]));
        let k = r["step"].as_u64().unwrap() as usize;
        let cands = values["candidates"].as_array().unwrap();
        // Candidates: the listed jobs (rows with a server), J1.. in listing order.
        let user = r["messages"][1]["content"].as_str().unwrap();
        let listed: Vec<&str> = user
            .lines()
            .filter(|l| l.starts_with('J') && !l.contains(" after "))
            .map(|l| l.split(' ').next().unwrap())
            .collect();
        let ids: Vec<&str> = cands.iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert_eq!(ids, listed, "{}", r["id"]);
        let best = values["best"].as_f64().unwrap();
        let lowest = cands
            .iter()
            .map(|c| c["value"].as_f64().unwrap())
            .fold(f64::INFINITY, f64::min);
        assert_eq!(best, lowest);
        let own = r["messages"][2]["content"].as_str().unwrap();
        for c in cands {
            let (v, regret) = (c["value"].as_f64().unwrap(), c["regret"].as_f64().unwrap());
            assert!(regret >= 0.0 && (regret == 0.0 || close(regret, v - best)));
            assert_eq!(regret == 0.0, close(v, best), "{c}");
            states += usize::from(c["id"] == "J1");
            if c["id"] == own {
                // The label's own next job: never worse than the label, exactly the label when
                // the label is proven optimal.
                assert!(v <= r["value"].as_f64().unwrap() + 1e-9);
                if r["proven_optimal"] == true {
                    assert_eq!(regret, 0.0, "{}", r["id"]);
                    assert_eq!(v, r["value"].as_f64().unwrap());
                }
                if c["proven"] == true {
                    assert!(close(v, best_after(&inst, &label[..=k])), "{}", r["id"]);
                }
            }
            if c["proven"] == true {
                proven += 1;
                // Some job after the prefix reaches exactly this value.
                let reachable = (0..inst.queue.len())
                    .filter(|j| !label[..k].contains(j))
                    .any(|j| {
                        let mut prefix = label[..k].to_vec();
                        prefix.push(j);
                        close(best_after(&inst, &prefix), v)
                    });
                assert!(reachable, "{}: {c}", r["id"]);
            }
        }
    }
    assert!(
        states >= 20 && proven > states,
        "{states} states, {proven} proven"
    );
    // The same bytes at another -j and chunk size, under load, and as merged shards.
    let _load = Load::start(2);
    let two = dir.path().join("two");
    build(
        &two,
        &[&values_args[..], &["-j", "2", "--chunk", "64"]].concat(),
    )
    .ok();
    assert_same_files(&one, &two);
    let mut parts = Vec::new();
    for k in 1..=2 {
        let part = dir.path().join(format!("part{k}"));
        let shard = format!("{k}/2");
        build(
            &part,
            &[&values_args[..], &["--shard", &shard, "-j", "2"]].concat(),
        )
        .ok();
        parts.push(path_str(&part));
    }
    let merged = dir.path().join("merged");
    let mut m = vec![
        "dataset".to_string(),
        "merge".into(),
        "-o".into(),
        path_str(&merged),
    ];
    m.extend(parts);
    run(&m).ok();
    assert_same_files(&one, &merged);
    // Values need step records, and a budget needs values.
    let bad = dir.path().join("bad");
    let out = build(
        &bad,
        &["--family", "uniform", "-n", "2", "--targets", "values"],
    )
    .failed();
    assert!(out.stderr.contains("--records steps"), "{}", out.stderr);
    let out = build(&bad, &[&VALUES[..], &["--value-work-limit", "5k"]].concat()).failed();
    assert!(out.stderr.contains("--targets values"), "{}", out.stderr);
}
