//! `schedlm pipeline`, `--help` of every subcommand, and bad arguments.

mod common;

use common::{generate_file, path_str, run, tempdir, FAMILIES, POLICIES};

#[test]
fn pipeline_prints_every_rule_for_every_family() {
    let out = run(&["pipeline", "-n", "5", "--table-only"]).ok();
    let text = out.stdout_text();
    // Split the table into one section per family.
    let mut sections: Vec<(String, Vec<&str>)> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("family ") {
            let name = rest.split_whitespace().next().unwrap().to_string();
            assert!(rest.contains("(5 snapshots, "), "{line}");
            sections.push((name, Vec::new()));
        } else if let Some((_, rows)) = sections.last_mut() {
            rows.push(line);
        }
    }
    let names: Vec<&str> = sections.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, FAMILIES, "one section per family:\n{text}");
    for (family, rows) in &sections {
        for rule in POLICIES {
            let row = rows
                .iter()
                .find(|r| r.split_whitespace().next() == Some(rule))
                .unwrap_or_else(|| panic!("{family}: no row for {rule}:\n{text}"));
            // rule, bsld, wait, flow, makespan, bsld gap, best share: finite numbers, bsld >= 1.
            let cells: Vec<&str> = row.split_whitespace().collect();
            assert_eq!(cells.len(), 7, "{family}/{rule}: {row}");
            let num = |k: usize| -> f64 {
                cells[k]
                    .trim_end_matches('%')
                    .parse()
                    .unwrap_or_else(|_| panic!("{family}/{rule}: `{}` in {row}", cells[k]))
            };
            assert!(
                num(1) >= 1.0 && num(1).is_finite(),
                "{family}/{rule}: bsld {row}"
            );
            for k in 2..6 {
                assert!(
                    num(k) >= 0.0 && num(k).is_finite(),
                    "{family}/{rule}: {row}"
                );
            }
            assert!((0.0..=100.0).contains(&num(6)), "{family}/{rule}: {row}");
        }
        // The optimum's row: its bsld is no worse than any rule's.
        let optimal = rows
            .iter()
            .find(|r| r.split_whitespace().next() == Some("optimal"))
            .unwrap_or_else(|| panic!("{family}: no optimal row:\n{text}"));
        let best: f64 = optimal.split_whitespace().nth(1).unwrap().parse().unwrap();
        for rule in POLICIES {
            let row = rows
                .iter()
                .find(|r| r.split_whitespace().next() == Some(rule))
                .unwrap();
            let bsld: f64 = row.split_whitespace().nth(1).unwrap().parse().unwrap();
            assert!(
                best <= bsld + 0.0005,
                "{family}: optimal {best} above {rule} {bsld}"
            );
        }
    }
}

/// The pipeline table as family -> rule -> [bsld, wait, flow, makespan, gap %, best %].
fn parse_table(
    text: &str,
) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, Vec<f64>>> {
    let mut table = std::collections::BTreeMap::new();
    let mut family: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("family ") {
            family = Some(rest.split_whitespace().next().unwrap().to_string());
            continue;
        }
        let cells: Vec<&str> = line.split_whitespace().collect();
        if let (Some(f), Some(rule)) = (&family, cells.first()) {
            if POLICIES.contains(rule) {
                let nums = cells[1..]
                    .iter()
                    .map(|c| c.trim_end_matches('%').parse().unwrap())
                    .collect();
                table
                    .entry(f.clone())
                    .or_insert_with(std::collections::BTreeMap::new)
                    .insert(rule.to_string(), nums);
            }
        }
    }
    table
}

#[test]
fn pipeline_table_agrees_with_generate_and_schedule() {
    // `pipeline -n 5 --seed 3` = `generate -n 5 --seed 3` then `schedule` with every rule
    // (random with the same seed): its means and best-bsld shares must match.
    let table = parse_table(
        &run(&["pipeline", "-n", "5", "--seed", "3", "--table-only"])
            .ok()
            .stdout_text(),
    );
    let dir = tempdir();
    for family in FAMILIES {
        let file = generate_file(
            dir.path(),
            &format!("{family}.jsonl"),
            &["--family", family, "-n", "5", "--seed", "3"],
        );
        let file = path_str(&file);
        let solved = run(&["solve", "--seed", "3", &file]).ok();
        let lower: Vec<f64> = common::parse_jsonl(&solved.stdout_text())
            .iter()
            .map(|r| {
                assert_eq!(r["proven_optimal"], serde_json::Value::Bool(true));
                r["lower_bound"].as_f64().unwrap()
            })
            .collect();
        // objectives[rule][instance] = [bsld, wait, flow, makespan]
        let objectives: Vec<Vec<[f64; 4]>> = POLICIES
            .iter()
            .map(|p| {
                let out = run(&["schedule", "--policy", p, "--seed", "3", &file]).ok();
                common::parse_jsonl(&out.stdout_text())
                    .iter()
                    .map(|r| {
                        let o = &r["objectives"];
                        ["bsld", "wait", "flow", "makespan"].map(|k| o[k].as_f64().unwrap())
                    })
                    .collect()
            })
            .collect();
        for (k, rule) in POLICIES.iter().enumerate() {
            let row = &table[family][*rule];
            for (q, tolerance) in [(0, 0.0005), (1, 0.5), (2, 0.5), (3, 0.5)] {
                let mean = objectives[k].iter().map(|o| o[q]).sum::<f64>() / 5.0;
                assert!(
                    (mean - row[q]).abs() <= tolerance + 1e-9 * mean.abs(),
                    "{family}/{rule}: objective {q}: table {} vs schedule mean {mean}",
                    row[q]
                );
            }
            let best = (0..5)
                .filter(|&i| {
                    let min = objectives
                        .iter()
                        .map(|r| r[i][0])
                        .fold(f64::INFINITY, f64::min);
                    objectives[k][i][0] <= min
                })
                .count() as f64
                / 5.0
                * 100.0;
            assert!(
                (best - row[5]).abs() <= 0.5,
                "{family}/{rule}: best {best} vs {}",
                row[5]
            );
            // Gap to the optimum's lower bound, from `solve` run separately (these small
            // snapshots are all proven, so the bound is the optimum and deterministic).
            let gap = (0..5)
                .map(|i| (objectives[k][i][0] - lower[i]).max(0.0) / lower[i])
                .sum::<f64>()
                / 5.0
                * 100.0;
            assert!(
                (gap - row[4]).abs() <= 0.006,
                "{family}/{rule}: gap {gap} vs {}",
                row[4]
            );
        }
    }
}

/// The pipeline's dataset, on its defaults, is data with headroom: at most half of its labels
/// are the prompt's ranking, and the test split's mean headroom over the best rule per instance
/// is at least 1% (issue #30).
#[test]
fn the_pipeline_dataset_has_headroom() {
    let dir = tempdir();
    let out_dir = dir.path().join("run");
    run(&[
        "pipeline",
        "-n",
        "2",
        "--queue",
        "3..4",
        "--epochs",
        "1",
        "--shipped-count",
        "2",
        "-o",
        &path_str(&out_dir),
    ])
    .ok();
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("data/manifest.json")).unwrap())
            .unwrap();
    let ranking = manifest["difficulty"]["all"]["label_is_ranking"]
        .as_f64()
        .unwrap();
    assert!(ranking <= 0.5, "{ranking} of the labels are the ranking");
    let test = common::read_jsonl(&out_dir.join("data/test.jsonl"));
    let headroom: Vec<f64> = test
        .iter()
        .map(|r| r["difficulty"]["headroom"].as_f64().unwrap())
        .collect();
    let mean = headroom.iter().sum::<f64>() / headroom.len() as f64;
    assert!(headroom.len() >= 50, "{} test records", headroom.len());
    assert!(mean >= 0.01, "mean headroom {mean}");
}

#[test]
fn pipeline_runs_end_to_end_to_a_report() {
    let dir = tempdir();
    let out_dir = dir.path().join("run");
    let out = run(&[
        "pipeline",
        "-n",
        "3",
        "--queue",
        "3..4",
        "--train-count",
        "30",
        "--epochs",
        "1",
        "--shipped-count",
        "2",
        "-o",
        &path_str(&out_dir),
    ])
    .ok();
    // The learning loop: dataset, model, report with the model among the policies.
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("report/summary.json")).unwrap(),
    )
    .unwrap();
    let text = summary.to_string();
    assert!(text.contains("model:"), "{text}");
    assert!(text.contains("optimal"), "{text}");
    for f in [
        "data/train.jsonl",
        "data/manifest.json",
        "report/report.html",
        "report/instances.csv",
    ] {
        assert!(out_dir.join(f).exists(), "{f} missing");
    }
    assert!(
        out.stdout_text().contains("report: "),
        "{}",
        out.stdout_text()
    );
    // The shipped models, on unseen snapshots of their own range, against ect and the rest,
    // and what each model is.
    let shipped: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("shipped-report/summary.json")).unwrap(),
    )
    .unwrap();
    let verdicts = shipped["verdicts"].as_array().unwrap();
    for model in ["b7-uniform", "b4-uniform"] {
        for against in ["best rule per instance", "ect"] {
            assert!(
                verdicts
                    .iter()
                    .any(|v| v["policy"].as_str().unwrap().contains(model)
                        && v["against"] == against),
                "{model} against {against}: {verdicts:?}"
            );
        }
    }
    let stdout = out.stdout_text();
    assert!(stdout.contains("the quick model"), "{stdout}");
    assert!(stdout.contains("the best shipped model (B7)"), "{stdout}");
    assert!(stdout.contains("a step GPT (B4)"), "{stdout}");
    for family in FAMILIES {
        let file = out_dir.join(format!("{family}.jsonl"));
        assert!(file.exists(), "{} missing", file.display());
        let v = run(&["validate", &path_str(&file)]).ok();
        assert!(
            v.stdout_text().contains("3 instances, 3 valid"),
            "{}",
            v.stdout_text()
        );
    }
}

#[test]
fn help_of_every_subcommand() {
    let cases: [(&str, &[&str]); 5] = [
        ("", &["pipeline", "generate", "validate", "schedule"]),
        ("pipeline", &["--count", "--queue", "--seed", "--out"]),
        (
            "generate",
            &[
                "--family",
                "--count",
                "--queue",
                "--servers",
                "--running",
                "--load",
                "--deps",
                "--seed",
                "--output",
                "uniform",
                "hpc",
                "dl",
            ],
        ),
        ("validate", &["<FILE>"]),
        (
            "schedule",
            &[
                "--policy", "--strict", "--seed", "--origin", "--output", "<FILE>", "fcfs", "sjf",
                "saf", "ljf", "wfp3", "unicep", "f1", "random",
            ],
        ),
    ];
    for (sub, words) in cases {
        let args: Vec<&str> = [sub, "--help"]
            .into_iter()
            .filter(|a| !a.is_empty())
            .collect();
        let out = run(&args).ok();
        let text = out.stdout_text();
        for w in words {
            assert!(
                text.contains(w),
                "`schedlm {sub} --help` does not mention {w}:\n{text}"
            );
        }
        // `help <sub>` says the same.
        if !sub.is_empty() {
            assert_eq!(run(&["help", sub]).ok().stdout_text(), text);
        }
    }
    let v = run(&["--version"]).ok();
    assert!(v.stdout_text().starts_with("schedlm "));
}

/// Runs and expects failure with every one of `words` in stderr.
fn fails_with(args: &[&str], words: &[&str]) {
    let out = run(args).failed();
    assert!(out.stdout.is_empty(), "{args:?} wrote to stdout");
    for w in words {
        assert!(
            out.stderr.contains(w),
            "`schedlm {}`: stderr does not mention {w:?}:\n{}",
            args.join(" "),
            out.stderr
        );
    }
}

#[test]
fn bad_arguments_fail_with_a_message_naming_the_problem() {
    let dir = tempdir();
    let good = generate_file(dir.path(), "g.jsonl", &["--family", "uniform", "-n", "1"]);
    let good = path_str(&good);
    let missing = path_str(&dir.path().join("missing.jsonl"));

    fails_with(&["generate", "--queue", "5..2"], &["5..2", "MIN <= MAX"]);
    fails_with(&["generate", "--queue", "0..3"], &["0..3"]);
    fails_with(&["generate", "--queue", "abc"], &["abc", "queue"]);
    fails_with(
        &["generate", "--family", "cloud"],
        &["cloud", "uniform", "hpc", "dl", "mixed"],
    );
    fails_with(&["generate", "--load", "1.5"], &["load", "1.5"]);
    fails_with(&["generate", "--load=-0.1"], &["load"]);
    fails_with(&["generate", "--deps", "2"], &["dep", "2"]);
    fails_with(&["generate", "--servers", "0"], &["servers"]);
    fails_with(
        &["generate", "--running", "3", "--load", "0.5"],
        &["--running", "--load"],
    );
    fails_with(&["generate", "-n", "many"], &["many"]);
    fails_with(&["generate", "--bogus"], &["--bogus"]);

    fails_with(
        &["schedule", "--policy", "bogus", &good],
        &["bogus", "fcfs", "f1"],
    );
    fails_with(&["schedule", &missing], &[&missing]);
    fails_with(&["schedule"], &["FILE"]);
    fails_with(&["schedule", "--seed", "x", &good], &["x", "seed"]);

    fails_with(&["validate", &missing], &[&missing]);
    fails_with(&["validate"], &["FILE"]);

    fails_with(&["pipeline", "--queue", "9..3"], &["9..3"]);
    fails_with(&["nonsense"], &["nonsense"]);
}

#[test]
fn generate_to_an_unwritable_path_fails() {
    let dir = tempdir();
    let file = dir.path().join("f");
    std::fs::write(&file, "").unwrap();
    // A path below a regular file cannot be created.
    let target = path_str(&file.join("out.jsonl"));
    let out = run(&["generate", "-n", "1", "-o", &target]).failed();
    assert!(out.stderr.contains(&path_str(&file)), "{}", out.stderr);
}

#[test]
fn extreme_f1_origin_does_not_crash() {
    // `--origin` accepts any i64; F1 computes s' = max(s - origin, 1). An origin far from the
    // instance's times must either work or be refused with a message, never panic.
    let dir = tempdir();
    let path = dir.path().join("neg.jsonl");
    let line = r#"{"now":0,"resources":["cores"],"servers":[{"id":"n0","capacity":[4]}],"queue":[{"id":"a","submit":-5,"demand":[1],"walltime":10},{"id":"b","submit":-2,"demand":[2],"walltime":10}]}"#;
    std::fs::write(&path, format!("{line}\n")).unwrap();
    let generated = generate_file(dir.path(), "hpc.jsonl", &["--family", "hpc", "-n", "2"]);
    for (file, origin) in [
        (path_str(&generated), i64::MIN),
        (path_str(&path), i64::MAX),
        (path_str(&path), i64::MIN),
    ] {
        let origin_arg = format!("--origin={origin}");
        let out = common::run_env(
            &["schedule", "--policy", "f1", &origin_arg, &file],
            &[("RUST_BACKTRACE", "0")],
        );
        assert!(
            matches!(out.code, Some(0) | Some(1)) && !out.stderr.contains("panicked"),
            "schedule {origin_arg} exited {:?}:\n{}",
            out.code,
            out.stderr
        );
        if out.code == Some(1) {
            assert!(out.stderr.contains("origin"), "{}", out.stderr);
        }
    }
}

/// `bench solve --cpsat`: the script's summary reaches the comparison table and results.json,
/// and every way it can go wrong stops the run with a message. A shell script stands in for
/// `python benches/cpsat.py` (CI has no OR-Tools); it receives the same arguments.
#[test]
fn bench_solve_compares_with_cpsat_and_reports_its_failures() {
    let dir = tempdir();
    let out = dir.path().join("bench");
    let fake = dir.path().join("cpsat.sh");
    // Writes the summary to the path after --json, as benches/cpsat.py does.
    std::fs::write(
        &fake,
        r#"while [ "$1" != "--json" ]; do shift; done
echo '{"rows": [], "summary": [{"proven": 1, "median_ms": 20.0, "p90_ms": 30.0, "median_censored": false, "p90_censored": false, "bnb_open": 0, "closed": 0, "above_opt": 0}]}' > "$2"
echo "instance lines"
"#,
    )
    .unwrap();
    let base = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "solve",
            "--sizes",
            "6",
            "--count",
            "2",
            "--no-milp",
            "--load",
            "0.9",
        ];
        args.extend_from_slice(extra);
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let (out_s, fake_s) = (path_str(&out), path_str(&fake));
    let ok = run(&base(&[
        "--out",
        &out_s,
        "--cpsat",
        "sh",
        "--cpsat-script",
        &fake_s,
    ]))
    .ok();
    let text = ok.stdout_text();
    let row = text
        .lines()
        .find(|l| l.starts_with("| 6 | 2/2 | 1/2 |"))
        .unwrap_or_else(|| panic!("no CP-SAT row:\n{text}"));
    assert!(row.contains("| yes |"), "{row}");
    assert!(text.contains("proven at the root"), "{text}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["summary"][0]["cpsat"]["proven"], 1);
    assert_eq!(results["settings"]["load"], 0.9);

    let no_out = run(&base(&["--cpsat", "sh", "--cpsat-script", &fake_s])).failed();
    assert!(
        no_out.stderr.contains("--cpsat needs --out"),
        "{}",
        no_out.stderr
    );
    let wait = run(&base(&[
        "--out",
        &out_s,
        "--cpsat",
        "sh",
        "--cpsat-script",
        &fake_s,
        "--objective",
        "wait",
    ]))
    .failed();
    assert!(wait.stderr.contains("bsld only"), "{}", wait.stderr);
    std::fs::write(&fake, "echo 'needs OR-Tools' >&2; exit 3\n").unwrap();
    let broken = run(&base(&[
        "--out",
        &out_s,
        "--cpsat",
        "sh",
        "--cpsat-script",
        &fake_s,
    ]))
    .failed();
    assert!(
        broken.stderr.contains("needs OR-Tools") && broken.stderr.contains("exit status: 3"),
        "{}",
        broken.stderr
    );
    let bad_load = run(&[
        "bench", "solve", "--sizes", "6", "--count", "1", "--load", "1.5",
    ])
    .failed();
    assert!(
        bad_load.stderr.contains("bad --load"),
        "{}",
        bad_load.stderr
    );
}

/// `schedlm extract` on a job directory with a Slurm script, a launch command and a log: the
/// facts carry their sources; a missing directory or log fails with its name.
#[test]
fn extract_reads_a_job_directory() {
    let dir = tempdir();
    let job = dir.path().join("job");
    std::fs::create_dir(&job).unwrap();
    std::fs::write(
        job.join("run.slurm"),
        "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gres=gpu:4\n#SBATCH --time=12:00:00\nsrun torchrun --nproc_per_node 4 train.py --model_name_or_path gpt2 --per_device_train_batch_size 8\n",
    )
    .unwrap();
    let log = dir.path().join("out.log");
    std::fs::write(
        &log,
        " 40%|####  | 400/1000 [01:40<02:30,  4.00it/s]\nKilled\n",
    )
    .unwrap();
    let (job_s, log_s) = (path_str(&job), path_str(&log));
    let out = run(&[
        "extract",
        &job_s,
        "--cmd",
        "python train.py --lr 1e-4",
        "--log",
        &log_s,
    ])
    .ok();
    let v: serde_json::Value = serde_json::from_str(out.stdout_text().trim()).unwrap();
    let facts = &v["facts"];
    assert_eq!(facts["nodes"]["value"], 2);
    assert_eq!(facts["gpus_per_node"]["value"], 4);
    assert_eq!(facts["gpus_per_node"]["source"], "run.slurm:5");
    assert_eq!(facts["requested_time_s"]["value"], 43_200);
    assert_eq!(facts["model"]["value"], "gpt2");
    assert_eq!(facts["learning_rate"]["source"], "command");
    assert_eq!(facts["global_batch_size"]["value"], 64);
    assert_eq!(facts["current_step"]["value"], 400);
    assert_eq!(facts["failure"]["value"], "oom_killed");
    assert!(
        facts.get("epochs").is_none(),
        "no value where the files are silent"
    );

    // A second run with the cache parses nothing; a broken cache is said and rebuilt.
    let cache = path_str(&dir.path().join("facts.cache"));
    let first = run(&["extract", &job_s, "--cache", &cache]).ok();
    assert!(
        first
            .stderr
            .contains("1 script(s)/config(s) parsed, 0 reused"),
        "{}",
        first.stderr
    );
    let second = run(&["extract", &job_s, "--cache", &cache]).ok();
    assert!(
        second
            .stderr
            .contains("0 script(s)/config(s) parsed, 1 reused"),
        "{}",
        second.stderr
    );
    let facts_of = |r: &common::Run| -> serde_json::Value {
        serde_json::from_str::<serde_json::Value>(r.stdout_text().trim()).unwrap()["facts"].clone()
    };
    assert_eq!(facts_of(&first), facts_of(&second));
    std::fs::write(dir.path().join("facts.cache"), "{").unwrap();
    let broken = run(&["extract", &job_s, "--cache", &cache]).ok();
    assert!(broken.stderr.contains("is not valid"), "{}", broken.stderr);
    assert_eq!(facts_of(&broken), facts_of(&first));

    let missing = run(&["extract", &path_str(&dir.path().join("nope"))]).failed();
    assert!(missing.stderr.contains("nope"), "{}", missing.stderr);
    let no_log = run(&[
        "extract",
        &job_s,
        "--log",
        &path_str(&dir.path().join("gone.log")),
    ])
    .failed();
    assert!(no_log.stderr.contains("gone.log"), "{}", no_log.stderr);
}

/// `extract` on directories that hold nothing to read, hostile names and many files: an empty
/// directory is an error; names reach standard error escaped; `--max-entries` caps the walk and
/// the rest is counted, not listed.
#[test]
fn extract_refuses_empty_directories_and_escapes_names() {
    let dir = tempdir();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = run(&["extract", &path_str(&empty)]).failed();
    assert!(out.stderr.contains("nothing readable in"), "{}", out.stderr);
    // Files, none of them readable: the same error, with the files listed.
    std::fs::write(empty.join("model.gin"), "x = 1\n").unwrap();
    let out = run(&["extract", &path_str(&empty)]).failed();
    assert!(out.stderr.contains("nothing readable in"), "{}", out.stderr);
    assert!(out.stderr.contains("model.gin"), "{}", out.stderr);
    // A command alone is something to read.
    run(&[
        "extract",
        &path_str(&empty),
        "--cmd",
        "torchrun --nproc_per_node 2 t.py",
    ])
    .ok();

    let job = dir.path().join("job");
    std::fs::create_dir(&job).unwrap();
    std::fs::write(
        job.join("train.sh"),
        "torchrun --nproc_per_node 4 train.py\n",
    )
    .unwrap();
    std::fs::write(job.join("evil\n\u{1b}[2J\u{1b}[31mname.gin"), "x = 1\n").unwrap();
    for k in 0..50 {
        std::fs::write(job.join(format!("z{k:02}.gin")), "x = 1\n").unwrap();
    }
    let out = run(&["extract", &path_str(&job)]).ok();
    assert!(!out.stderr.contains('\u{1b}'), "{}", out.stderr);
    assert!(
        out.stderr.contains("evil\\n\\u{1b}[2J\\u{1b}[31mname.gin"),
        "{}",
        out.stderr
    );
    let out = run(&["extract", &path_str(&job), "--max-entries", "3"]).ok();
    assert!(out.stderr.contains("49 more entries of"), "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(out.stdout_text().trim()).unwrap();
    assert_eq!(v["not_walked"], 49);
    assert_eq!(v["facts"]["gpus_per_node"]["value"], 4);
    run(&["extract", &path_str(&job), "--max-entries", "0"]).failed();
}

/// `schedlm history`: jobs extracted from the corpus go into an SQLite file; the same setup
/// submitted again matches its past run at distance 0 and is predicted to take as long
/// (capped at its request); bad input fails with what is wrong.
#[test]
fn history_adds_matches_and_predicts() {
    let setups = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/knowledge/setups");
    let dir = tempdir();
    let db = path_str(&dir.path().join("jobs.sqlite"));
    let facts = |name: &str| {
        let out = run(&["extract", &format!("{setups}/{name}")]).ok();
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(&path, out.stdout).unwrap();
        path_str(&path)
    };
    let (small, big, handbook) = (
        facts("deepspeed-chat-opt-1.3b"),
        facts("deepspeed-chat-opt-66b"),
        facts("alignment-handbook-smollm-sft"),
    );
    let add = |job: &str, extra: &[&str]| {
        let mut args = vec!["history", "add", "--db", &db, "--job", job];
        args.extend_from_slice(extra);
        run(&args)
    };
    let id = |r: common::Run| r.ok().stdout_text().trim().to_string();
    assert_eq!(
        id(add(&small, &["--actual", "2h", "--outcome", "completed"])),
        "1"
    );
    assert_eq!(
        id(add(&big, &["--actual", "90000", "--outcome", "completed"])),
        "2"
    );
    assert_eq!(
        id(add(&big, &["--actual", "60", "--outcome", "failed"])),
        "3"
    );

    let listed = common::parse_jsonl(&run(&["history", "list", "--db", &db]).ok().stdout_text());
    assert_eq!(listed.len(), 3);
    let extracted: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&small).unwrap()).unwrap();
    assert_eq!(
        listed[0]["facts"], extracted["facts"],
        "facts stored as extracted"
    );
    assert_eq!(listed[2]["outcome"], "failed");

    // The 66B setup again: its completed run is at distance 0; the failed one is not matched.
    let found = common::parse_jsonl(
        &run(&["history", "match", "--db", &db, "--job", &big])
            .ok()
            .stdout_text(),
    );
    assert_eq!(found[0]["id"], 2);
    assert_eq!(found[0]["distance"], 0.0);
    assert!(found.iter().all(|m| m["id"] != 3));
    let predicted = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["history", "predict", "--db", &db, "--job", &big];
        args.extend_from_slice(extra);
        serde_json::from_str(run(&args).ok().stdout_text().trim()).unwrap()
    };
    assert_eq!(predicted(&[])["seconds"], 90_000);
    let capped = predicted(&["--requested", "24h"]);
    assert_eq!(
        (&capped["seconds"], &capped["basis"]),
        (
            &serde_json::json!(86_400),
            &serde_json::json!("nearest, capped at the request")
        )
    );

    // A setup with a request and no similar job still gets the nearest one's time.
    let p: serde_json::Value = serde_json::from_str(
        run(&[
            "history", "predict", "--db", &db, "--job", &handbook, "-k", "1",
        ])
        .ok()
        .stdout_text()
        .trim(),
    )
    .unwrap();
    assert_eq!(p["requested_s"], 259_200, "from #SBATCH --time");
    assert_eq!(p["matches"].as_array().unwrap().len(), 1);

    // Failures a user meets, each said with what is wrong.
    let no_actual = add(&small, &["--outcome", "completed"]).failed();
    assert!(
        no_actual.stderr.contains("--actual"),
        "{}",
        no_actual.stderr
    );
    let bad_outcome = add(&small, &["--outcome", "done", "--actual", "5"]).failed();
    assert!(
        bad_outcome.stderr.contains("done"),
        "{}",
        bad_outcome.stderr
    );
    let missing = run(&[
        "history",
        "predict",
        "--db",
        &path_str(&dir.path().join("none.sqlite")),
        "--job",
        &big,
    ])
    .failed();
    assert!(missing.stderr.contains("none.sqlite"), "{}", missing.stderr);
    assert!(
        !dir.path().join("none.sqlite").exists(),
        "reading creates nothing"
    );
    let not_facts = dir.path().join("x.json");
    std::fs::write(&not_facts, "{\"x\": 1}").unwrap();
    let bad_job = add(&path_str(&not_facts), &["--outcome", "failed"]).failed();
    assert!(bad_job.stderr.contains("x.json"), "{}", bad_job.stderr);
    assert_eq!(
        common::parse_jsonl(&run(&["history", "list", "--db", &db]).ok().stdout_text()).len(),
        3,
        "failed adds add nothing"
    );
}

/// `schedlm extract --embed` and `history match --by text`: the OPT-1.3B setup's nearest
/// past job by text is the other DeepSpeed-Chat OPT setup, not the Alignment Handbook one;
/// a job without an embedding and a missing model fail with what to do. The matching part
/// needs the MiniLM model (scripts/fetch-minilm.sh) and is skipped without it.
#[test]
fn history_matches_by_text_embedding() {
    let setups = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/knowledge/setups");
    let model = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/target/models/all-MiniLM-L6-v2"
    );
    let dir = tempdir();
    let db = path_str(&dir.path().join("jobs.sqlite"));
    let no_model = run(&[
        "extract",
        &format!("{setups}/deepspeed-chat-opt-1.3b"),
        "--embed",
        &path_str(&dir.path().join("no-model")),
    ])
    .failed();
    assert!(
        no_model.stderr.contains("config.json") && no_model.stderr.contains("fetch-minilm.sh"),
        "{}",
        no_model.stderr
    );
    // A job extracted without --embed cannot be matched by text.
    let plain = dir.path().join("plain.json");
    let out = run(&["extract", &format!("{setups}/deepspeed-chat-opt-1.3b")]).ok();
    std::fs::write(&plain, out.stdout).unwrap();
    let add = |job: &str, actual: &str| {
        run(&[
            "history",
            "add",
            "--db",
            &db,
            "--job",
            job,
            "--actual",
            actual,
            "--outcome",
            "completed",
        ])
        .ok()
    };
    add(&path_str(&plain), "60");
    let unembedded = run(&[
        "history",
        "match",
        "--db",
        &db,
        "--job",
        &path_str(&plain),
        "--by",
        "text",
    ])
    .failed();
    assert!(
        unembedded.stderr.contains("--embed"),
        "{}",
        unembedded.stderr
    );

    if !std::path::Path::new(model)
        .join("model.safetensors")
        .exists()
    {
        schedlm_model::skips::skip(
            "minilm",
            &format!("the matching part: {model} is absent (run scripts/fetch-minilm.sh)"),
        );
        return;
    }
    let embedded = |name: &str| {
        let out = run(&["extract", &format!("{setups}/{name}"), "--embed", model]).ok();
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(&path, out.stdout).unwrap();
        path_str(&path)
    };
    for (name, actual) in [
        ("deepspeed-chat-opt-66b", "90000"),
        ("alignment-handbook-smollm-sft", "3600"),
    ] {
        add(&embedded(name), actual);
    }
    let listed = common::parse_jsonl(&run(&["history", "list", "--db", &db]).ok().stdout_text());
    let name = listed[1]["embedding_model"].as_str().unwrap();
    assert!(name.starts_with("all-MiniLM-L6-v2@"), "{name}");
    let query = embedded("deepspeed-chat-opt-1.3b");
    // With a cache, an unchanged job is embedded once: the second run loads no model.
    let cache = path_str(&dir.path().join("cache.json"));
    let opt = format!("{setups}/deepspeed-chat-opt-1.3b");
    let extract_cached = || run(&["extract", &opt, "--embed", model, "--cache", &cache]).ok();
    let first = extract_cached();
    assert!(
        !first.stderr.contains("embedding reused"),
        "{}",
        first.stderr
    );
    let again = extract_cached();
    assert!(
        again.stderr.contains("embedding reused from the cache"),
        "{}",
        again.stderr
    );
    let embedding = |r: &common::Run| -> serde_json::Value {
        serde_json::from_str::<serde_json::Value>(r.stdout_text().trim()).unwrap()["embedding"]
            .clone()
    };
    assert_eq!(embedding(&first), embedding(&again));
    assert!(embedding(&first)["vector"].is_array());
    let by_text = run(&[
        "history", "match", "--db", &db, "--job", &query, "--by", "text",
    ])
    .ok();
    let found = common::parse_jsonl(&by_text.stdout_text());
    assert_eq!(found.len(), 2, "the unembedded job is left out");
    assert_eq!(found[0]["name"], format!("{setups}/deepspeed-chat-opt-66b"));
    assert!(found[0]["similarity"].as_f64().unwrap() > found[1]["similarity"].as_f64().unwrap());
    assert!(
        by_text
            .stderr
            .contains("1 of 3 past job(s) have no embedding"),
        "{}",
        by_text.stderr
    );
}

/// `schedlm advise`: on the Pollux throughput measurements (real runs of four models) the
/// held-out throughput error stays under CoTune's 9.4 %, and `fill` picks the configuration
/// that finishes first, waiting for GPUs only when that pays.
#[test]
fn advise_scores_and_fills_configurations() {
    let runs = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/knowledge/runs/pollux-throughput.csv"
    );
    let table = run(&["advise", "score", "--runs", runs, "--seed", "1"])
        .ok()
        .stdout_text();
    let all: Vec<&str> = table
        .lines()
        .find(|l| l.starts_with("all"))
        .unwrap()
        .split_whitespace()
        .collect();
    let (scored, mape): (usize, f64) = (all[1].parse().unwrap(), all[2].parse().unwrap());
    assert!(scored > 500, "{table}");
    assert!(mape < 9.4, "throughput MAPE {mape} %\n{table}");

    let fill = |samples: &str| -> serde_json::Value {
        let args = [
            "advise",
            "fill",
            "--runs",
            runs,
            "--model",
            "bert",
            "--samples",
            samples,
            "--wait",
            "1=0",
            "--wait",
            "4=600",
        ];
        serde_json::from_str(run(&args).ok().stdout_text().trim()).unwrap()
    };
    assert_eq!(fill("1000")["best"]["gpus"], 1, "a short job starts now");
    let long = fill("176000");
    assert_eq!(long["best"]["gpus"], 4, "a long job waits for 4 GPUs");
    assert_eq!(
        long["best"]["local_batch"], 12,
        "the largest batch that fitted"
    );
    let candidates = long["candidates"].as_array().unwrap();
    assert!(candidates
        .windows(2)
        .all(|w| w[0]["completion_s"].as_f64() <= w[1]["completion_s"].as_f64()));

    let unknown = run(&[
        "advise",
        "fill",
        "--runs",
        runs,
        "--model",
        "gpt9",
        "--samples",
        "5",
        "--wait",
        "1=0",
    ])
    .failed();
    assert!(unknown.stderr.contains("gpt9"), "{}", unknown.stderr);
    let too_big = run(&[
        "advise",
        "fill",
        "--runs",
        runs,
        "--model",
        "bert",
        "--samples",
        "5",
        "--gpus",
        "2",
        "--batch",
        "64",
    ])
    .failed();
    assert!(too_big.stderr.contains("is 12"), "{}", too_big.stderr);
}

/// `schedlm generate --from-jobs`: real job directories become one valid snapshot whose
/// demands, walltimes and `meta` come from their files, or from the job history; a job that
/// cannot be timed is named.
#[test]
fn generate_from_jobs_makes_a_snapshot_of_real_setups() {
    let setups = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/knowledge/setups");
    let job = |name: &str| format!("{setups}/{name}");
    let (slurm, handbook) = (
        job("openrlhf-slurm-torchrun"),
        job("alignment-handbook-smollm-sft"),
    );
    let out = run(&[
        "generate",
        "--from-jobs",
        &slurm,
        &handbook,
        "--servers",
        "2",
    ])
    .ok();
    let instance = &common::parse_jsonl(&out.stdout_text())[0];
    let validated = common::run_stdin(&["validate", "-"], &out.stdout_text()).ok();
    assert!(
        validated.stdout_text().contains("1 valid"),
        "{}",
        validated.stdout_text()
    );
    let queue = instance["queue"].as_array().unwrap();
    assert_eq!(queue[0]["id"], "openrlhf-slurm-torchrun");
    assert_eq!(queue[0]["walltime"], 1_800, "#SBATCH --time=00:30:00");
    assert_eq!(queue[1]["demand"], serde_json::json!([8, 64, 512]));
    assert_eq!(queue[1]["meta"]["model"], "HuggingFaceTB/SmolLM-360M");
    assert_eq!(queue[1]["meta"]["walltime_from"], "request");

    // With a history, the walltime is the nearest completed run's time, capped at the request.
    let dir = tempdir();
    let db = path_str(&dir.path().join("jobs.sqlite"));
    let facts = dir.path().join("h.json");
    std::fs::write(&facts, run(&["extract", &handbook]).ok().stdout).unwrap();
    run(&[
        "history",
        "add",
        "--db",
        &db,
        "--job",
        &path_str(&facts),
        "--actual",
        "20000",
        "--outcome",
        "completed",
    ])
    .ok();
    let predicted = run(&["generate", "--from-jobs", &handbook, "--history", &db]).ok();
    let q = &common::parse_jsonl(&predicted.stdout_text())[0]["queue"][0];
    assert_eq!(q["walltime"], 20_000);
    assert_eq!(q["meta"]["walltime_from"], "history (nearest)");

    let untimed = run(&["generate", "--from-jobs", &job("deepspeed-chat-opt-1.3b")]).failed();
    assert!(
        untimed.stderr.contains("job deepspeed-chat-opt-1.3b"),
        "{}",
        untimed.stderr
    );
    let refused = run(&["generate", "--from-jobs", &slurm, "--load", "0.5"]).failed();
    assert!(refused.stderr.contains("--load"), "{}", refused.stderr);
}

/// `schedlm advise replay`: with no job leaving its configuration out the two fillings are the
/// same replay; with every job leaving it out, the advised configurations finish sooner.
#[test]
fn advise_replay_compares_defaults_with_advice() {
    let replay = |share: &str| {
        let out = run(&[
            "advise", "replay", "--jobs", "60", "--seed", "2", "--share", share, "--json",
        ])
        .ok();
        common::parse_jsonl(&out.stdout_text())
    };
    let none = replay("0");
    assert_eq!(none.len(), 4);
    for pair in none.chunks(2) {
        assert_eq!(pair[0]["mean_jct"], pair[1]["mean_jct"]);
        assert_eq!(pair[0]["left_out"], 0);
    }
    let all = replay("1");
    assert_eq!(all[0]["left_out"], 60);
    let jct = |i: usize| all[i]["mean_jct"].as_f64().unwrap();
    assert!(
        jct(1) < jct(0),
        "FIFO advised {} vs default {}",
        jct(1),
        jct(0)
    );
    assert!(
        jct(3) < jct(2),
        "SJF advised {} vs default {}",
        jct(3),
        jct(2)
    );
    let bad = run(&["advise", "replay", "--share", "1.5"]).failed();
    assert!(bad.stderr.contains("--share"), "{}", bad.stderr);
}

#[test]
fn history_replay_compares_plans() {
    let out = run(&[
        "history", "replay", "--jobs", "80", "--seed", "3", "--rules", "fcfs,sjf", "--json",
    ])
    .ok();
    let rows = common::parse_jsonl(&out.stdout_text());
    // 2 rules x 2 start rules x 4 plans, then one error line per plan.
    assert_eq!(rows.len(), 16 + 4, "{rows:?}");
    let (replays, errors) = rows.split_at(16);
    let plans: Vec<&str> = errors.iter().map(|e| e["plan"].as_str().unwrap()).collect();
    assert_eq!(plans, ["request", "history", "throughput", "oracle"]);
    assert_eq!(errors[3]["mape"], 0.0);
    assert_eq!(errors[0]["under"], 0.0);
    for r in replays {
        assert_eq!(r["jobs"], 80);
        assert_eq!(r["killed"], 0, "{r}");
    }
    // FCFS under `strict` never looks at a plan: the four plans replay alike.
    let wait = |i: usize| replays[i]["mean_wait"].as_f64().unwrap();
    assert_eq!(replays[0]["rule"], "fcfs");
    assert_eq!(replays[0]["start"], "strict");
    for i in 1..4 {
        assert_eq!(wait(i), wait(0));
    }
    // SJF with EASY does (its scores and reservations use the plan): here the request and the
    // oracle give different schedules.
    assert_eq!(replays[12]["rule"], "sjf");
    assert_eq!(replays[12]["start"], "easy");
    let sjf: Vec<f64> = (12..16).map(wait).collect();
    assert_ne!(sjf[0], sjf[3], "{sjf:?}");
    let table = run(&["history", "replay", "--jobs", "40"])
        .ok()
        .stdout_text();
    assert!(table.contains("median APE %"), "{table}");
    assert!(table.contains("throughput"), "{table}");
    let bad = run(&["history", "replay", "--plans", "guess"]).failed();
    assert!(
        bad.stderr.contains("`guess` is not a plan"),
        "{}",
        bad.stderr
    );
}

/// `history replay --db`: the workload is the recorded history the Slurm filter reads; jobs
/// added with their accounting (`--submit`, `--start`, `--gpus`) are replayed, others are named
/// as left out; a limit the filter fills comes only from jobs that had ended by then; the
/// filter's settings file is read.
#[test]
fn history_replay_reads_the_recorded_history() {
    let setups = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/knowledge/setups");
    let dir = tempdir();
    let db = path_str(&dir.path().join("h.sqlite"));
    let facts = dir.path().join("facts.json");
    let out = run(&["extract", &format!("{setups}/deepspeed-chat-opt-1.3b")]).ok();
    std::fs::write(&facts, out.stdout).unwrap();
    let facts = path_str(&facts);
    let add = |extra: &[&str]| {
        let mut args = vec![
            "history",
            "add",
            "--db",
            &db,
            "--job",
            &facts,
            "--outcome",
            "completed",
        ];
        args.extend_from_slice(extra);
        run(&args).ok();
    };
    // a: 1 h, ended at 01:00; b submitted at 00:30 (a still running): nothing to fill from;
    // c submitted at 02:00 as sacct prints it: filled from what had ended; d has no accounting.
    add(&[
        "--name",
        "a",
        "--actual",
        "3600",
        "--requested",
        "7200",
        "--submit",
        "0",
        "--start",
        "0",
        "--gpus",
        "4",
    ]);
    add(&[
        "--name", "b", "--actual", "3000", "--submit", "1800", "--start", "1800", "--gpus", "4",
    ]);
    add(&[
        "--name",
        "c",
        "--actual",
        "5000",
        "--submit",
        "1970-01-01T02:00:00",
        "--start",
        "7200",
        "--gpus",
        "8",
    ]);
    add(&["--name", "d", "--actual", "10"]);
    let listed = common::parse_jsonl(&run(&["history", "list", "--db", &db]).ok().stdout_text());
    assert_eq!(
        (listed[2]["submit"].as_i64(), listed[3]["submit"].as_i64()),
        (Some(7200), None)
    );

    let conf = dir.path().join("schedlm-submit.conf");
    std::fs::write(
        &conf,
        format!("db = {db}\nmargin = 1.5\nmax_time = 1d\ngpus_per_node = 8\n"),
    )
    .unwrap();
    let out = run(&[
        "history",
        "replay",
        "--conf",
        &path_str(&conf),
        "--servers",
        "1",
        "--rules",
        "fcfs",
        "--start",
        "easy",
        "--json",
    ])
    .ok();
    assert!(
        out.stderr.contains("1 jobs of")
            && out.stderr.contains("no submit time")
            && out.stderr.contains("id 4, d"),
        "{}",
        out.stderr
    );
    let rows = common::parse_jsonl(&out.stdout_text());
    let by = |limit: &str, key: &str| {
        rows.iter()
            .find(|r| r["limit"] == limit && r.get(key).is_some())
            .map(|r| r[key].clone())
            .unwrap()
    };
    // Under the filter, b (no past) gets the longest limit and c a filled one: killed.
    assert_eq!(by("filter", "killed"), 1);
    assert_eq!(by("request", "killed"), 0);
    assert_eq!(by("oracle", "killed"), 0);
    let fills: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r.get("filled").is_some()).collect();
    assert_eq!(fills.len(), 4);
    assert_eq!(
        (
            fills[1]["limit"].as_str(),
            fills[1]["filled"].as_i64(),
            fills[1]["unpredicted"].as_i64()
        ),
        (Some("filter"), Some(1), Some(1))
    );
    // c's nearest past job is b (ended at 4,800 s, the most recent of two equal matches): its
    // limit is 1.5 x 3,000 s and it held 8 GPUs that long before it was killed: 10 GPU-hours.
    assert_eq!(by("filter", "lost_gpu_h"), 10.0);

    // A table by default; --margin on the command line wins over the file's.
    let table = run(&[
        "history",
        "replay",
        "--conf",
        &path_str(&conf),
        "--margin",
        "2",
        "--rules",
        "fcfs",
        "--start",
        "easy",
    ])
    .ok()
    .stdout_text();
    assert!(table.contains("prediction x 2, at most 86400 s"), "{table}");
    // What cannot be replayed is said.
    let bad = run(&["history", "replay", "--margin", "2"]).failed();
    assert!(bad.stderr.contains("give --db or --conf"), "{}", bad.stderr);
    let empty = path_str(&dir.path().join("empty.sqlite"));
    let add_failed = |extra: &[&str]| {
        let mut args = vec!["history", "add", "--db", &empty, "--job", &facts];
        args.extend_from_slice(&["--outcome", "failed"]);
        args.extend_from_slice(extra);
        run(&args)
    };
    add_failed(&[]).ok();
    let bad = run(&["history", "replay", "--db", &empty]).failed();
    let said = |bad: &common::Run, what: &str| assert!(bad.stderr.contains(what), "{}", bad.stderr);
    said(&bad, "no job of the history can be replayed");
    said(
        &add_failed(&["--submit", "yesterday"]).failed(),
        "neither Unix seconds",
    );
    said(
        &add_failed(&["--submit", "10", "--start", "5"]).failed(),
        "before it was submitted",
    );
}

/// `history synth` writes a replayable history, once.
#[test]
fn history_synth_writes_a_replayable_history() {
    let dir = tempdir();
    let db = path_str(&dir.path().join("sim.sqlite"));
    let out = run(&[
        "history",
        "synth",
        "--db",
        &db,
        "--jobs",
        "60",
        "--servers",
        "2",
    ])
    .ok();
    assert_eq!(out.stdout_text().trim(), "60");
    let out = run(&["history", "replay", "--db", &db, "--servers", "2", "--json"]).ok();
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    let rows = common::parse_jsonl(&out.stdout_text());
    assert_eq!(rows.len(), 3 * 2 * 4 + 4);
    assert!(rows[..24].iter().all(|r| r["jobs"] == 60));
    let again = run(&["history", "synth", "--db", &db, "--jobs", "60"]).failed();
    assert!(
        again.stderr.contains("already holds jobs"),
        "{}",
        again.stderr
    );
}

/// `--version` says what was built (commit, features, libraries) and `version --json` says it
/// as one object whose features agree with the build.
#[test]
fn version_says_what_was_built() {
    let long = run(&["--version"]).ok().stdout_text();
    let first = long.lines().next().unwrap_or_default();
    assert!(first.starts_with("schedlm 0."), "{long}");
    let commit = first
        .split('(')
        .nth(1)
        .and_then(|c| c.split_whitespace().next())
        .unwrap_or_default();
    let hex = commit.trim_end_matches("-dirty");
    assert!(
        hex == "unknown" || (hex.len() == 12 && hex.chars().all(|c| c.is_ascii_hexdigit())),
        "{long}"
    );
    assert!(
        long.contains("features: ") && long.contains("candle "),
        "{long}"
    );
    let json: serde_json::Value =
        serde_json::from_str(run(&["version", "--json"]).ok().stdout_text().trim()).unwrap();
    assert_eq!(json["commit"], commit, "{json}");
    assert_eq!(json["milp"], cfg!(feature = "milp"), "{json}");
    assert_eq!(json["cuda"], false, "{json}");
    assert_eq!(json["highs"].is_string(), cfg!(feature = "milp"), "{json}");
    assert!(long.contains(if cfg!(feature = "milp") {
        "milp"
    } else {
        "none"
    }));
}

/// Completions and manual pages come from the same definitions as `--help`: every
/// subcommand and its options are in them.
#[test]
fn completions_and_man_pages_cover_every_subcommand() {
    let bash = run(&["completions", "bash"]).ok().stdout_text();
    assert!(bash.contains("_schedlm()"), "{bash}");
    for word in [
        "solve",
        "dataset",
        "--time-limit",
        "--objective",
        "completions",
    ] {
        assert!(bash.contains(word), "bash completions lack {word}");
    }
    let zsh = run(&["completions", "zsh"]).ok().stdout_text();
    assert!(zsh.contains("#compdef schedlm"), "{zsh}");
    let page = run(&["man"]).ok().stdout_text();
    assert!(page.contains(".TH schedlm 1"), "{page}");
    let dir = tempdir();
    run(&["man", "-o", &path_str(dir.path())]).ok();
    let solve = std::fs::read_to_string(dir.path().join("schedlm-solve.1")).unwrap();
    assert!(
        solve.contains("time\\-limit") || solve.contains("time-limit"),
        "{solve}"
    );
    let pages = std::fs::read_dir(dir.path()).unwrap().count();
    let help = run(&["--help"]).ok().stdout_text();
    let commands = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| !l.trim_start().starts_with("help"))
        .count();
    assert!(pages > commands, "{pages} pages for {commands} commands");
}

/// `submit fill --conf`: the filter's settings file is read by the filler (what the Slurm
/// plugin passes), a flag wins over it, the answer comes as `key<TAB>value` lines, and a bad
/// line stops the fill with the file and line.
#[test]
fn submit_fill_reads_the_filters_settings_file_and_answers_in_lines() {
    let dir = tempdir();
    let d = dir.path();
    let runs = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/knowledge/runs/pollux-throughput.csv"
    );
    let script = d.join("job.sh");
    std::fs::write(
        &script,
        "#!/bin/bash\npython train.py --model_name_or_path bert --num_train_epochs 2\n",
    )
    .unwrap();
    let conf = d.join("schedlm-submit.conf");
    std::fs::write(
        &conf,
        format!(
            "# the test cluster\ndb = {}\nruns = {runs}\ngpus_per_node = 4\nbudget_ms = 10000\n",
            path_str(&d.join("history.sqlite"))
        ),
    )
    .unwrap();
    let fill = |extra: &[&str]| {
        let (c, s) = (path_str(&conf), path_str(&script));
        let mut args = vec![
            "submit",
            "fill",
            "--conf",
            &c,
            "--script",
            &s,
            "--has-time",
            "--output",
            "lines",
        ];
        args.extend_from_slice(extra);
        run(&args).ok().stdout_text()
    };
    let lines = fill(&[]);
    assert!(lines.starts_with("format\tschedlm-fill-1\n"), "{lines}");
    let field = |text: &str, key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}\t")).map(str::to_string))
    };
    // The fastest BERT configuration of the runs is 8 GPUs; the file allows 4 per node.
    assert_eq!(field(&lines, "gpus").as_deref(), Some("4"), "{lines}");
    assert!(field(&lines, "comment")
        .unwrap()
        .starts_with("schedlm filled: gpus 4"));
    assert!(lines.lines().all(|l| l.split('\t').count() == 2), "{lines}");
    let flagged = fill(&["--gpus-per-node", "8"]);
    assert_eq!(field(&flagged, "gpus").as_deref(), Some("8"), "{flagged}");

    std::fs::write(&conf, "db = h.sqlite\nmargn = 2\n").unwrap();
    let (c, s) = (path_str(&conf), path_str(&script));
    let bad = run(&["submit", "fill", "--conf", &c, "--script", &s, "--has-time"]).failed();
    assert!(
        bad.stderr.contains("schedlm-submit.conf:2") && bad.stderr.contains("`margn`"),
        "{}",
        bad.stderr
    );
}
