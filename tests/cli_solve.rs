//! `schedlm solve` and `schedlm import psplib` end to end; values recomputed by the independent
//! reference in `common::reference`.

mod common;

use common::reference::{self as spec, Instance};
use common::{generate_file, path_str, read_jsonl, reported_lines, run, tempdir};
use serde_json::Value;

/// Every record without its timing, which legitimately varies between runs.
fn without_time(records: &[Value]) -> Vec<Value> {
    records
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.as_object_mut()
                .expect("record is an object")
                .remove("time_ms");
            r
        })
        .collect()
}

fn objective_of(o: &spec::Objectives, name: &str) -> f64 {
    match name {
        "bsld" => o.bsld,
        "wait" => o.wait,
        "flow" => o.flow,
        "makespan" => o.makespan,
        other => panic!("unknown objective {other}"),
    }
}

#[test]
fn solve_is_thread_independent_and_agrees_with_spec() {
    let dir = tempdir();
    let input = generate_file(
        dir.path(),
        "in.jsonl",
        &[
            "--family", "dl", "-n", "24", "--queue", "6..9", "--deps", "0.2",
        ],
    );
    let instances: Vec<Instance> = read_jsonl(&input).iter().map(Instance::from_json).collect();
    for objective in ["bsld", "wait", "flow", "makespan"] {
        let mut outputs = Vec::new();
        for threads in ["1", "2"] {
            let out = dir.path().join(format!("s-{objective}-{threads}.jsonl"));
            run(&[
                "solve",
                "--objective",
                objective,
                "--node-limit",
                "100000",
                "-j",
                threads,
                &path_str(&input),
                "-o",
                &path_str(&out),
            ])
            .ok();
            outputs.push(read_jsonl(&out));
        }
        assert_eq!(
            without_time(&outputs[0]),
            without_time(&outputs[1]),
            "{objective}: threads change the result"
        );
        for (record, inst) in outputs[0].iter().zip(&instances) {
            let ids: Vec<String> = record["order"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            let order = inst.indices(&ids);
            assert!(spec::is_permutation(inst, &order) && spec::respects_deps(inst, &order));
            let placed = spec::dispatch(inst, &order, false);
            let value = objective_of(&spec::objectives(inst, &placed.start), objective);
            assert!(
                spec::close(value, record["value"].as_f64().unwrap()),
                "{objective}: value {value} vs {}",
                record["value"]
            );
            let lower = record["lower_bound"].as_f64().unwrap();
            assert!(lower <= value * (1.0 + 1e-9));
            for (rule, v) in record["baselines"].as_object().unwrap() {
                let rule_order = spec::repair(inst, &spec::rule_order(inst, rule, 0));
                let rule_value = objective_of(
                    &spec::objectives(inst, &spec::dispatch(inst, &rule_order, false).start),
                    objective,
                );
                assert!(
                    spec::close(rule_value, v.as_f64().unwrap()),
                    "{objective} {rule}"
                );
                assert!(
                    rule_value >= lower * (1.0 - 1e-9),
                    "{rule} below the lower bound"
                );
            }
            assert_eq!(
                record["proven_optimal"],
                Value::Bool(record["status"] == "optimal")
            );
        }
    }
}

#[test]
fn a_bad_line_is_reported_and_the_rest_are_solved() {
    let dir = tempdir();
    let good = generate_file(dir.path(), "good.jsonl", &["-n", "3", "--queue", "5"]);
    let lines: Vec<String> = std::fs::read_to_string(&good)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let mixed = dir.path().join("mixed.jsonl");
    std::fs::write(
        &mixed,
        format!("{}\n{{\"now\": 1}}\n{}\n{}\n", lines[0], lines[1], lines[2]),
    )
    .unwrap();
    let out = dir.path().join("out.jsonl");
    let result = run(&["solve", &path_str(&mixed), "-o", &path_str(&out)]).failed();
    assert_eq!(reported_lines(&result.stderr, &path_str(&mixed)), vec![2]);
    let lines_solved: Vec<u64> = read_jsonl(&out)
        .iter()
        .map(|r| r["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines_solved, vec![1, 3, 4]);
}

#[test]
fn psplib_imports_and_solves_to_the_published_optimum() {
    let dir = tempdir();
    let j30 = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data/psplib/j30");
    let files = [format!("{j30}/j301_8.sm"), format!("{j30}/j303_1.sm")];
    let imported = dir.path().join("j30.jsonl");
    run(&[
        "import",
        "psplib",
        &files[0],
        &files[1],
        "-o",
        &path_str(&imported),
    ])
    .ok();
    run(&["validate", &path_str(&imported)]).ok();
    let out = dir.path().join("solved.jsonl");
    run(&[
        "solve",
        "--solver",
        "bnb",
        "--objective",
        "makespan",
        "--node-limit",
        "1000000",
        &path_str(&imported),
        "-o",
        &path_str(&out),
    ])
    .ok();
    let values: Vec<f64> = read_jsonl(&out)
        .iter()
        .map(|r| r["value"].as_f64().unwrap())
        .collect();
    // Published optima (optimum.csv): j301_8 = 53, j303_1 = 72.
    assert_eq!(values, vec![53.0, 72.0]);
    assert!(read_jsonl(&out)
        .iter()
        .all(|r| r["proven_optimal"] == Value::Bool(true)));
}

/// A file of one instance gets every `-j` thread: branch and bound splits its subtrees over
/// them and still returns the order, value, bound and status of one thread (only `nodes` and
/// `time_ms` may differ). 14 uniform jobs on 4 servers take tens of thousands of nodes.
#[test]
fn one_instance_on_several_threads_gives_the_one_thread_answer() {
    let dir = tempdir();
    let file = generate_file(
        dir.path(),
        "one.jsonl",
        &[
            "--family",
            "uniform",
            "--servers",
            "4",
            "--queue",
            "14",
            "-n",
            "1",
            "--seed",
            "5",
        ],
    );
    let f = path_str(&file);
    let answer = |threads: &str| {
        let out = run(&[
            "solve",
            "--solver",
            "bnb",
            "--time-limit",
            "10m",
            "-j",
            threads,
            &f,
        ])
        .ok();
        let record = common::parse_jsonl(&out.stdout_text()).remove(0);
        assert_eq!(record["status"], "optimal", "{record}");
        let nodes = record["nodes"].as_u64().unwrap();
        let keep: Vec<Value> = ["order", "value", "lower_bound", "status"]
            .iter()
            .map(|k| record[*k].clone())
            .collect();
        (keep, nodes)
    };
    let (one, nodes) = answer("1");
    assert!(
        nodes > 1_000,
        "{nodes} nodes: the search must go deep enough to split"
    );
    for threads in ["2", "3"] {
        assert_eq!(answer(threads).0, one, "-j {threads}");
    }
}

/// `-q` leaves standard error empty; `--progress` draws the bar even when standard error is not
/// a terminal (here a pipe); by default a pipe gets the summary and no bar.
#[test]
fn quiet_and_progress_decide_what_goes_to_stderr() {
    let dir = tempdir();
    let file = generate_file(dir.path(), "g.jsonl", &["--family", "hpc", "-n", "3"]);
    let f = path_str(&file);
    let quiet = run(&["solve", "--solver", "ls", "-q", &f]).ok();
    assert!(quiet.stderr.is_empty(), "{}", quiet.stderr);
    let plain = run(&["solve", "--solver", "ls", &f]).ok();
    assert!(
        plain.stderr.contains("solved 3 instance(s)"),
        "{}",
        plain.stderr
    );
    assert!(!plain.stderr.contains("3/3 instances"), "{}", plain.stderr);
    let forced = run(&["solve", "--solver", "ls", "--progress", &f]).ok();
    assert!(forced.stderr.contains("3/3 instances"), "{}", forced.stderr);
    let both = run(&["solve", "-q", "--progress", &f]);
    assert_eq!(both.code, Some(2), "--quiet and --progress conflict");
}
