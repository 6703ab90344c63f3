//! `schedlm generate`: byte determinism (also across thread counts), seeds, and that every
//! family and option produces valid instances that `schedlm validate` accepts.

mod common;

use common::{generate_file, path_str, read_jsonl, run, run_env, tempdir, FAMILIES};
use serde_json::Value;

fn generate_stdout(args: &[&str], threads: Option<&str>) -> Vec<u8> {
    let mut all = vec!["generate"];
    all.extend_from_slice(args);
    let env: Vec<(&str, &str)> = threads
        .map(|t| ("RAYON_NUM_THREADS", t))
        .into_iter()
        .collect();
    run_env(&all, &env).ok().stdout
}

#[test]
fn same_arguments_give_identical_bytes() {
    for family in FAMILIES {
        let args = [
            "--family", family, "-n", "12", "--seed", "7", "--deps", "0.3",
        ];
        let first = generate_stdout(&args, None);
        assert!(!first.is_empty());
        assert_eq!(
            first,
            generate_stdout(&args, None),
            "{family}: two runs differ"
        );
        assert!(
            first.ends_with(b"\n"),
            "{family}: output must end with a newline"
        );
        assert_eq!(
            first.iter().filter(|&&b| b == b'\n').count(),
            12,
            "{family}: one line per instance"
        );
    }
}

#[test]
fn thread_count_does_not_change_the_bytes() {
    for family in FAMILIES {
        let args = [
            "--family", family, "-n", "24", "--seed", "3", "--queue", "3..9",
        ];
        let one = generate_stdout(&args, Some("1"));
        let two = generate_stdout(&args, Some("2"));
        let four = generate_stdout(&args, Some("4"));
        assert_eq!(one, two, "{family}: 1 vs 2 threads");
        assert_eq!(one, four, "{family}: 1 vs 4 threads");
    }
}

#[test]
fn file_output_equals_stdout() {
    let dir = tempdir();
    let args = ["--family", "dl", "-n", "5", "--seed", "11"];
    let path = generate_file(dir.path(), "dl.jsonl", &args);
    assert_eq!(std::fs::read(&path).unwrap(), generate_stdout(&args, None));
}

#[test]
fn different_seeds_give_different_instances() {
    for family in FAMILIES {
        let a = generate_stdout(&["--family", family, "-n", "5", "--seed", "1"], None);
        let b = generate_stdout(&["--family", family, "-n", "5", "--seed", "2"], None);
        assert_ne!(a, b, "{family}: seeds 1 and 2 give the same bytes");
        // Not merely one differing instance: every line differs.
        let (la, lb): (Vec<&[u8]>, Vec<&[u8]>) = (
            a.split(|&c| c == b'\n').collect(),
            b.split(|&c| c == b'\n').collect(),
        );
        for (k, (x, y)) in la
            .iter()
            .zip(&lb)
            .enumerate()
            .filter(|(_, (x, _))| !x.is_empty())
        {
            assert_ne!(
                x, y,
                "{family}: instance {k} is the same under seeds 1 and 2"
            );
        }
    }
}

#[test]
fn count_prefix_is_stable() {
    // Instance k depends only on (options, k): a longer run extends a shorter one.
    let short = generate_stdout(&["--family", "hpc", "-n", "3", "--seed", "5"], None);
    let long = generate_stdout(&["--family", "hpc", "-n", "6", "--seed", "5"], None);
    assert!(long.starts_with(&short));
}

/// Structural checks that do not depend on the generator's internals.
fn check_instance(v: &Value, family: &str, what: &str) {
    let resources = v["resources"].as_array().expect("resources").len();
    assert!(resources >= 1, "{what}: no resources");
    let first = v["resources"][0].as_str().unwrap();
    let expected_first = if family == "dl" { "gpus" } else { "cores" };
    assert_eq!(first, expected_first, "{what}: first resource");
    let now = v["now"].as_i64().expect("now");
    for j in v["queue"].as_array().unwrap() {
        assert!(
            j["submit"].as_i64().unwrap() <= now,
            "{what}: submit after now"
        );
        assert!(j["walltime"].as_i64().unwrap() >= 1, "{what}: walltime");
        assert_eq!(j["demand"].as_array().unwrap().len(), resources);
    }
    for r in v["running"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        assert!(
            r["end"].as_i64().unwrap() > now,
            "{what}: running job ended"
        );
    }
}

struct Case {
    family: &'static str,
    args: Vec<&'static str>,
    queue: (usize, usize),
    servers: Option<usize>,
    running: Option<usize>,
}

#[test]
fn every_family_and_option_gives_valid_instances() {
    let dir = tempdir();
    let mut cases = Vec::new();
    for family in FAMILIES {
        let base = |extra: &[&'static str], queue, servers, running| Case {
            family,
            args: extra.to_vec(),
            queue,
            servers,
            running,
        };
        cases.push(base(&[], (8, 12), None, None));
        cases.push(base(&["--queue", "3..5"], (3, 5), None, None));
        cases.push(base(&["--queue", "4"], (4, 4), None, None));
        cases.push(base(&["--queue", "1..=2"], (1, 2), None, None));
        cases.push(base(
            &["--queue", "3..5", "--servers", "3"],
            (3, 5),
            Some(3),
            None,
        ));
        cases.push(base(
            &["--queue", "3..5", "--running", "2"],
            (3, 5),
            None,
            Some(2),
        ));
        cases.push(base(
            &["--queue", "3..5", "--running", "0"],
            (3, 5),
            None,
            Some(0),
        ));
        cases.push(base(
            &["--queue", "3..5", "--load", "0.5"],
            (3, 5),
            None,
            None,
        ));
        cases.push(base(
            &["--queue", "3..5", "--load", "0"],
            (3, 5),
            None,
            Some(0),
        ));
        cases.push(base(
            &["--queue", "3..5", "--load", "0.95"],
            (3, 5),
            None,
            None,
        ));
        cases.push(base(
            &["--queue", "3..5", "--deps", "0.3"],
            (3, 5),
            None,
            None,
        ));
        cases.push(base(
            &["--queue", "6..9", "--deps", "1"],
            (6, 9),
            None,
            None,
        ));
        cases.push(base(
            &[
                "--queue",
                "3..5",
                "--servers",
                "2",
                "--running",
                "3",
                "--deps",
                "0.3",
                "--seed",
                "9",
            ],
            (3, 5),
            Some(2),
            Some(3),
        ));
    }
    let mut deps_seen = 0;
    for (k, case) in cases.iter().enumerate() {
        let count = 15;
        let mut args = vec!["--family", case.family, "-n", "15"];
        args.extend(&case.args);
        let what = format!("generate {args:?}");
        let path = generate_file(dir.path(), &format!("case{k}.jsonl"), &args);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), count, "{what}: line count");
        assert!(
            text.lines().all(|l| !l.trim().is_empty()),
            "{what}: blank line"
        );
        let file = path_str(&path);
        let validate = run(&["validate", &file]);
        assert!(
            validate.success(),
            "{what}: validate exited {:?}:\n{}",
            validate.code,
            validate.stderr
        );
        assert!(
            validate
                .stdout_text()
                .contains(&format!("{count} instances, {count} valid, 0 invalid")),
            "{what}: validate summary: {}",
            validate.stdout_text()
        );
        let mut lengths = std::collections::BTreeSet::new();
        for (i, v) in read_jsonl(&path).iter().enumerate() {
            let what = format!("{what}, instance {i}");
            check_instance(v, case.family, &what);
            let q = v["queue"].as_array().unwrap().len();
            lengths.insert(q);
            assert!(
                (case.queue.0..=case.queue.1).contains(&q),
                "{what}: queue length {q} outside {:?}",
                case.queue
            );
            if let Some(s) = case.servers {
                assert_eq!(v["servers"].as_array().unwrap().len(), s, "{what}: servers");
            }
            let running = v["running"].as_array().map(Vec::len).unwrap_or(0);
            if let Some(r) = case.running {
                assert!(
                    running <= r,
                    "{what}: {running} running jobs, asked for {r}"
                );
                if r == 0 {
                    assert_eq!(running, 0);
                }
            }
            deps_seen += v["queue"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|j| {
                    j.get("deps")
                        .and_then(Value::as_array)
                        .is_some_and(|d| !d.is_empty())
                })
                .count();
        }
        if case.queue.1 > case.queue.0 {
            // 15 draws from a range of 2 or more lengths: both ends should be reached at
            // least once in practice for ranges this small (probability of missing one
            // end < 15 * (2/3)^15 ~ 0.03 for 3..5; the seed is fixed so this is stable).
            assert!(
                lengths.len() >= 2,
                "{what}: every queue has the same length {lengths:?}"
            );
        }
        if case.args.contains(&"--deps") {
            let with_deps: usize = read_jsonl(&path)
                .iter()
                .flat_map(|v| v["queue"].as_array().unwrap().clone())
                .filter(|j| {
                    j.get("deps")
                        .and_then(Value::as_array)
                        .is_some_and(|d| !d.is_empty())
                })
                .count();
            assert!(with_deps > 0, "{what}: --deps produced no dependency");
        }
    }
    assert!(deps_seen > 0);
}

#[test]
fn load_zero_means_idle_and_load_raises_busy_share() {
    // --load is a fraction of the first resource kept busy at `now`. Idle at 0; busier at
    // 0.9 than at 0.2 on average.
    for family in FAMILIES {
        let busy = |load: &str| -> f64 {
            let out = generate_stdout(
                &[
                    "--family", family, "-n", "10", "--queue", "3..5", "--load", load,
                ],
                None,
            );
            let all = common::parse_jsonl(std::str::from_utf8(&out).unwrap());
            let mut share = 0.0;
            for v in &all {
                let total: i64 = v["servers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s["capacity"][0].as_i64().unwrap())
                    .sum();
                let used: i64 = v["running"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
                    .iter()
                    .map(|r| r["demand"][0].as_i64().unwrap())
                    .sum();
                share += used as f64 / total as f64;
            }
            share / all.len() as f64
        };
        assert_eq!(
            busy("0"),
            0.0,
            "{family}: --load 0 must leave the cluster idle"
        );
        let (low, high) = (busy("0.2"), busy("0.9"));
        assert!(
            high > low,
            "{family}: busy share {high} at 0.9 vs {low} at 0.2"
        );
        assert!(
            (0.1..=0.3).contains(&low),
            "{family}: --load 0.2 gives a busy share of {low}"
        );
    }
}
