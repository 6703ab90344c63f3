//! Step-wise decision records (`dataset build --records steps`): every state a record shows
//! agrees with the independent SPEC reference dispatcher, the arguments that cannot apply are
//! refused, and a model trained on step records is rolled out to valid orders by `predict`
//! and `eval`.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::reference::{self, Instance};
use common::{path_str, read_jsonl, run, tempdir};
use serde_json::Value;

/// `dataset build -q -o DIR --records steps ARGS...`, which must succeed.
fn build_steps(dir: &Path, args: &[&str]) {
    let d = path_str(dir);
    // Both forms, so that the test can check they agree.
    let mut all = vec![
        "dataset",
        "build",
        "-q",
        "-o",
        &d,
        "--records",
        "steps",
        "--format",
        "both",
    ];
    all.extend_from_slice(args);
    run(&all).ok();
}

/// Step records grouped by instance (the id before `-s<k>`), each list in file order, with
/// the split file each came from.
fn by_instance(dir: &Path) -> BTreeMap<String, Vec<(String, Value)>> {
    let mut out: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
    for split in ["train", "val", "test"] {
        for r in read_jsonl(&dir.join(format!("{split}.jsonl"))) {
            let id = r["id"].as_str().unwrap().to_string();
            let (base, _) = id.rsplit_once("-s").expect("step ids end in -s<k>");
            out.entry(base.to_string())
                .or_default()
                .push((split.to_string(), r));
        }
    }
    out
}

/// The prompt's time unit in seconds.
fn unit_of(user: &str) -> i64 {
    let line = user.lines().find(|l| l.starts_with("unit: ")).unwrap();
    match &line["unit: ".len()..] {
        l if l.starts_with("1 h") => 3600,
        l if l.starts_with("1 min") => 60,
        "1 s" => 1,
        other => panic!("unknown unit {other}"),
    }
}

/// Seconds in `unit`s, rounded up.
fn up(seconds: i64, unit: i64) -> i64 {
    seconds.div_euclid(unit) + i64::from(seconds.rem_euclid(unit) != 0)
}

/// The queue lines of a step prompt: (id, rest of the fields).
fn queue_lines(user: &str) -> Vec<Vec<String>> {
    user.lines()
        .skip_while(|l| !l.starts_with("queue by "))
        .skip(1)
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// Checks one instance's step records against the reference dispatcher.
fn check_instance(base: &str, steps: &[(String, Value)], strict: bool) {
    let first = &steps[0].1;
    let inst = Instance::from_json(&first["instance"]);
    let n = inst.queue.len();
    assert_eq!(
        steps.len(),
        n - 1,
        "{base}: one record per decision but the last"
    );
    let order = label_order(first, &inst);
    // Prompt ids of the label's jobs, from the completions; the last job is the one left.
    let mut prompt_of: Vec<String> = vec![String::new(); n];
    for (k, (split, r)) in steps.iter().enumerate() {
        assert_eq!(r["id"], format!("{base}-s{k}").as_str());
        assert_eq!(r["step"], k);
        assert_eq!(r["template"], "step-v1");
        assert_eq!(
            split, &steps[0].0,
            "{base}: an instance's steps share a split"
        );
        prompt_of[order[k]] = r["completion"].as_str().unwrap().to_string();
    }
    let last_user = steps[n - 2].1["messages"][1]["content"].as_str().unwrap();
    let left: Vec<String> = queue_lines(last_user)
        .into_iter()
        .map(|f| f[0].clone())
        .filter(|id| *id != prompt_of[order[n - 2]])
        .collect();
    assert_eq!(left.len(), 1, "{base}: {last_user}");
    prompt_of[order[n - 1]] = left[0].clone();

    for (k, (_, r)) in steps.iter().enumerate() {
        let user = r["messages"][1]["content"].as_str().unwrap();
        assert_eq!(
            r["prompt"].as_str().unwrap(),
            format!(
                "{}\n\n{user}\n",
                r["messages"][0]["content"].as_str().unwrap()
            )
        );
        let placed: Vec<&str> = order[..k].iter().map(|&j| prompt_of[j].as_str()).collect();
        if k == 0 {
            assert!(!user.contains("placed ("), "{user}");
        } else {
            let line = format!("placed ({k}): {}\n", placed.join(" "));
            assert!(
                user.contains(&line),
                "{base} step {k}: no {line:?} in\n{user}"
            );
        }
        let unit = unit_of(user);
        let lines = queue_lines(user);
        assert_eq!(lines.len(), n - k, "{base} step {k}: {user}");
        for fields in lines {
            let j = prompt_of.iter().position(|p| *p == fields[0]).unwrap();
            assert!(
                !order[..k].contains(&j),
                "{base} step {k}: placed job listed"
            );
            let job = &inst.queue[j];
            assert_eq!(fields[2], up(job.walltime, unit).to_string());
            if fields[3] == "after" {
                let waits = inst.queued_deps(j);
                assert!(waits.iter().any(|d| !order[..k].contains(d)));
                continue;
            }
            // The start the job gets when placed right after the prefix (the reference needs
            // a whole order: the rest of the label follows, which cannot move `j`).
            let mut whole = order[..k].to_vec();
            whole.push(j);
            whole.extend(order[k..].iter().filter(|&&q| q != j));
            let placed = reference::dispatch(&inst, &whole, strict);
            let start = up(placed.start[j] - inst.now, unit);
            assert_eq!(fields[3], start.to_string(), "{base} step {k}: {user}");
        }
    }
}

#[test]
fn every_step_state_agrees_with_the_reference_dispatcher() {
    let dir = tempdir();
    for strict in [false, true] {
        let out = dir.path().join(format!("ds-{strict}"));
        let mut args = vec![
            "--family",
            "hpc,dl,uniform",
            "-n",
            "30",
            "--queue",
            "3..7",
            "--deps",
            "0.2",
            "--split",
            "50/50/0",
        ];
        if strict {
            args.push("--strict");
        }
        build_steps(&out, &args);
        let instances = by_instance(&out);
        assert!(instances.len() >= 25, "{}", instances.len());
        for (base, steps) in &instances {
            check_instance(base, steps, strict);
        }
    }
}

/// The lines of a step-v2 prompt after its header: (id, need, time, start or `after`, ...).
fn listing_lines(user: &str) -> Vec<Vec<String>> {
    user.lines()
        .skip_while(|l| !l.starts_with("next by earliest end ("))
        .skip(1)
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// step-v2 records: every state lists exactly the unplaced jobs, the placeable ones first with
/// the start and server the reference dispatcher gives them if placed next, in order of the time
/// they would end (in seconds, before rounding), then the ones waiting for a dependency; the
/// label is never worse than the best classic rule.
#[test]
fn step_v2_states_list_the_placeable_jobs_by_their_end() {
    let dir = tempdir();
    let out = dir.path().join("ds");
    build_steps(
        &out,
        &[
            "--template",
            "step-v2",
            "--family",
            "hpc,dl,uniform",
            "-n",
            "30",
            "--queue",
            "3..8",
            "--deps",
            "0.2",
            "--split",
            "50/50/0",
        ],
    );
    let instances = by_instance(&out);
    assert!(instances.len() >= 25, "{}", instances.len());
    let mut deviations = 0;
    for (base, steps) in &instances {
        let first = &steps[0].1;
        let inst = Instance::from_json(&first["instance"]);
        let n = inst.queue.len();
        assert_eq!(steps.len(), n - 1, "{base}");
        let order = label_order(first, &inst);
        let value = first["value"].as_f64().unwrap();
        let brpi = first["baselines"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_f64().unwrap())
            .fold(f64::INFINITY, f64::min);
        assert!(
            value <= brpi + 1e-9 * brpi.max(1.0),
            "{base}: {value} > {brpi}"
        );
        // Prompt ids: from the first state, whose listing holds every job.
        let user0 = first["messages"][1]["content"].as_str().unwrap();
        let ids = first["instance"]["queue"].as_array().unwrap().len();
        assert_eq!(listing_lines(user0).len(), ids, "{base}: {user0}");
        for (k, (_, r)) in steps.iter().enumerate() {
            assert_eq!(r["template"], "step-v2");
            let user = r["messages"][1]["content"].as_str().unwrap();
            let unit = unit_of(user);
            let lines = listing_lines(user);
            assert_eq!(lines.len(), n - k, "{base} step {k}: {user}");
            let mut last_end = i64::MIN;
            let mut waiting = false;
            for fields in &lines {
                // A job's prompt id is J + its ranking position: find it by walltime and need
                // among the unplaced jobs whose start (or wait) the reference confirms.
                if fields[3] == "after" {
                    waiting = true;
                    continue;
                }
                assert!(
                    !waiting,
                    "{base} step {k}: a placeable job after a waiting one"
                );
                let start_units: i64 = fields[3].parse().unwrap();
                let matches: Vec<(usize, i64)> = (0..n)
                    .filter(|j| !order[..k].contains(j))
                    .filter(|&j| {
                        let d = inst.queue[j]
                            .demand
                            .iter()
                            .map(i64::to_string)
                            .collect::<Vec<_>>();
                        d.join("/") == fields[1]
                            && up(inst.queue[j].walltime, unit).to_string() == fields[2]
                    })
                    .filter_map(|j| {
                        let mut whole = order[..k].to_vec();
                        whole.push(j);
                        whole.extend(order[k..].iter().filter(|&&q| q != j));
                        let placed = reference::dispatch(&inst, &whole, false);
                        let start = placed.start[j];
                        let server = format!("S{}", placed.server[j] + 1);
                        (up(start - inst.now, unit) == start_units && fields[4] == server)
                            .then_some((j, start + inst.queue[j].walltime))
                    })
                    .collect();
                assert!(
                    !matches.is_empty(),
                    "{base} step {k}: {fields:?} in\n{user}"
                );
                let end = matches.iter().map(|m| m.1).min().unwrap();
                assert!(end >= last_end, "{base} step {k}: not by end\n{user}");
                last_end = end;
            }
            // The answer is a listed job; count how often it is not the first.
            let answer = r["completion"].as_str().unwrap();
            assert!(lines.iter().any(|f| f[0] == answer), "{base} step {k}");
            deviations += usize::from(lines[0][0] != answer);
        }
    }
    // The label follows the listing on most steps, not on all.
    let steps: usize = instances.values().map(Vec::len).sum();
    assert!(
        deviations > 0 && deviations * 3 < steps,
        "{deviations} of {steps}"
    );
}

#[test]
fn steps_refuse_other_templates_and_plans() {
    let dir = tempdir();
    let out = path_str(&dir.path().join("ds"));
    let base = [
        "dataset",
        "build",
        "-q",
        "-o",
        &out,
        "--family",
        "uniform",
        "-n",
        "2",
        "--records",
        "steps",
    ];
    let mut with_template = base.to_vec();
    with_template.extend(["--template", "compact-v1"]);
    let r = run(&with_template).failed();
    assert!(
        r.stderr.contains("--records steps") && r.stderr.contains("compact-v1"),
        "{}",
        r.stderr
    );
    let mut with_plan = base.to_vec();
    with_plan.push("--plan");
    let r = run(&with_plan).failed();
    assert!(r.stderr.contains("--plan"), "{}", r.stderr);
    let orders = [
        "dataset",
        "build",
        "-q",
        "-o",
        &out,
        "--family",
        "uniform",
        "-n",
        "2",
        "--template",
        "step-v1",
    ];
    let r = run(&orders).failed();
    assert!(r.stderr.contains("--records steps"), "{}", r.stderr);
}

#[test]
fn sharded_step_builds_merge_to_the_same_bytes() {
    let dir = tempdir();
    let args = [
        "--family",
        "uniform,hpc",
        "-n",
        "24",
        "--queue",
        "3..6",
        "--split",
        "60/20/20",
    ];
    let whole = dir.path().join("whole");
    build_steps(&whole, &args);
    let mut parts = Vec::new();
    for k in ["1/2", "2/2"] {
        let part = dir.path().join(format!("part-{}", &k[..1]));
        let mut with_shard = args.to_vec();
        with_shard.extend(["--shard", k]);
        build_steps(&part, &with_shard);
        parts.push(path_str(&part));
    }
    let merged = dir.path().join("merged");
    let mut merge = vec!["dataset", "merge", "-o"];
    let m = path_str(&merged);
    merge.push(&m);
    merge.extend(parts.iter().rev().map(String::as_str));
    run(&merge).ok();
    for split in ["train", "val", "test"] {
        let file = format!("{split}.jsonl");
        let (a, b) = (
            fs::read(whole.join(&file)).unwrap(),
            fs::read(merged.join(&file)).unwrap(),
        );
        assert!(a == b, "{file} differs after merging the shards");
    }
}

#[test]
fn a_step_model_rolls_out_to_valid_orders() {
    let dir = tempdir();
    let data = dir.path().join("ds");
    build_steps(
        &data,
        &[
            "--family", "uniform", "-n", "24", "--queue", "3..5", "--split", "75/0/25",
        ],
    );
    let run_dir = dir.path().join("run");
    let (train, test) = (data.join("train.jsonl"), data.join("test.jsonl"));
    run(&[
        "finetune",
        "--train",
        &path_str(&train),
        "--val",
        &path_str(&test),
        "--out",
        &path_str(&run_dir),
        "--steps",
        "4",
        "--eval-every",
        "4",
        "--eval-records",
        "3",
        "--layers",
        "1",
        "--width",
        "32",
        "--vocab",
        "400",
        "--context",
        "512",
        "--batch",
        "4",
        "--quiet",
    ])
    .ok();
    let task: Value =
        serde_json::from_str(&fs::read_to_string(run_dir.join("task.json")).unwrap()).unwrap();
    assert_eq!(task["records"], "steps");
    // The held-out gap of the curve comes from rollouts of whole instances.
    let curve = fs::read_to_string(run_dir.join("curve.csv")).unwrap();
    let point: Vec<&str> = curve.lines().nth(1).unwrap().split(',').collect();
    assert!(point[7].parse::<f64>().is_ok(), "{curve}");

    // predict answers each instance once, through its first step, with a valid order.
    let instances = by_instance(&data);
    let test_instances = instances
        .values()
        .filter(|steps| steps[0].0 == "test")
        .count();
    let predictions = dir.path().join("p.jsonl");
    let r = run(&[
        "predict",
        "--model",
        &path_str(&run_dir),
        &path_str(&test),
        "-o",
        &path_str(&predictions),
        "--best-of",
        "2",
    ])
    .ok();
    assert!(r.stderr.contains("holds step records"), "{}", r.stderr);
    let lines = read_jsonl(&predictions);
    assert_eq!(lines.len(), test_instances);
    assert!(
        r.stderr
            .contains(&format!("{test_instances} greedy answers valid")),
        "{}",
        r.stderr
    );
    for line in &lines {
        assert!(line["id"].as_str().unwrap().ends_with("-s0"));
        assert!(line["best_of"].is_string(), "{line}");
    }

    // eval scores the same instances, once each, and says so.
    let report = dir.path().join("report");
    let r = run(&[
        "eval",
        "--data",
        &path_str(&test),
        "--policies",
        &format!("sjf,model:{}", path_str(&run_dir)),
        "--report",
        &path_str(&report),
    ])
    .ok();
    assert!(r.stderr.contains("holds step records"), "{}", r.stderr);
    let rows = fs::read_to_string(report.join("instances.csv")).unwrap();
    let model_rows = rows.lines().filter(|l| l.starts_with("model:")).count();
    assert_eq!(model_rows, test_instances, "{rows}");
}

/// The label order of a step record's instance (its `order` field), repaired for dependencies
/// as the reference dispatcher places it.
fn label_order(record: &Value, inst: &Instance) -> Vec<usize> {
    let label: Vec<String> = record["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    reference::repair(inst, &inst.indices(&label))
}
