//! `schedlm validate`: every bad line of a file is reported with its true line number (blank
//! lines count), good lines are not, and the exit status says whether all were valid.

mod common;

use common::{path_str, reported_lines, reports_for, run, run_stdin, tempdir};
use serde_json::{json, Value};

/// A small valid instance; `edit` changes it into an invalid one.
fn instance(edit: impl FnOnce(&mut Value)) -> String {
    let mut v = json!({
        "now": 1000,
        "resources": ["cores", "mem_gib"],
        "servers": [{"id": "n0", "capacity": [8, 32]}, {"id": "n1", "capacity": [4, 64]}],
        "running": [{"id": "r0", "server": "n0", "demand": [4, 8], "end": 1500}],
        "queue": [
            {"id": "a", "submit": 900, "demand": [4, 16], "walltime": 100},
            {"id": "b", "submit": 950, "demand": [2, 2], "walltime": 50, "deps": ["a", "r0"]},
            {"id": "c", "submit": 1000, "demand": [8, 8], "walltime": 10, "weight": 2.5}
        ]
    });
    edit(&mut v);
    serde_json::to_string(&v).unwrap()
}

/// (line text, expected words in the report or None if the line is valid or blank).
fn mixed_file() -> Vec<(String, Option<Vec<&'static str>>)> {
    vec![
        (instance(|_| {}), None), // 1
        (String::new(), None),    // 2 blank
        (
            // 3: duplicate id (queued job with a server's id)
            instance(|v| v["queue"][2]["id"] = json!("n1")),
            Some(vec!["\"n1\"", "twice"]),
        ),
        ("   \t".to_string(), None), // 4 whitespace only
        (
            "{\"now\": 5, \"resources\": [".to_string(),
            Some(vec!["not an instance"]),
        ), // 5 malformed
        (instance(|_| {}), None),    // 6
        (
            // 7: demand that fits no server (n0 lacks memory, n1 lacks cores)
            instance(|v| v["queue"][0]["demand"] = json!([6, 40])),
            Some(vec!["\"a\"", "demand", "fits on no server"]),
        ),
        (String::new(), None), // 8 blank
        (String::new(), None), // 9 blank
        (
            // 10: dependency cycle a -> b -> a
            instance(|v| v["queue"][0]["deps"] = json!(["b"])),
            Some(vec!["deps", "cycle"]),
        ),
        (
            // 11: unknown dependency
            instance(|v| v["queue"][2]["deps"] = json!(["ghost"])),
            Some(vec!["\"c\"", "deps", "\"ghost\""]),
        ),
        (
            // 12: submit after now
            instance(|v| v["queue"][1]["submit"] = json!(1001)),
            Some(vec!["\"b\"", "submit", "now"]),
        ),
        ("[1, 2, 3]".to_string(), Some(vec!["not an instance"])), // 13: JSON, not an instance
        (instance(|_| {}), None),                                 // 14
        (
            // 15: a required field missing
            instance(|v| {
                v["queue"][0].as_object_mut().unwrap().remove("walltime");
            }),
            Some(vec!["walltime"]),
        ),
        (String::new(), None), // 16 trailing blank line
    ]
}

fn write_mixed(dir: &std::path::Path) -> (String, Vec<usize>) {
    let lines = mixed_file();
    let text: String = lines.iter().map(|(l, _)| format!("{l}\n")).collect();
    let path = dir.join("mixed.jsonl");
    std::fs::write(&path, text).unwrap();
    let bad: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, (_, e))| e.is_some())
        .map(|(i, _)| i + 1)
        .collect();
    (path_str(&path), bad)
}

#[test]
fn the_valid_instance_is_valid() {
    let dir = tempdir();
    let path = dir.path().join("ok.jsonl");
    std::fs::write(
        &path,
        format!("{}\n\n{}\n", instance(|_| {}), instance(|_| {})),
    )
    .unwrap();
    let file = path_str(&path);
    let out = run(&["validate", &file]).ok();
    assert!(out.stderr.trim().is_empty(), "stderr: {}", out.stderr);
    assert!(out
        .stdout_text()
        .contains("2 instances, 2 valid, 0 invalid"));
}

#[test]
fn each_bad_line_is_reported_with_its_line_number() {
    let dir = tempdir();
    let (file, bad) = write_mixed(dir.path());
    assert_eq!(bad, vec![3, 5, 7, 10, 11, 12, 13, 15]);
    let out = run(&["validate", &file]).failed();
    // Exactly the bad lines are reported, in file order, each once.
    assert_eq!(
        reported_lines(&out.stderr, &file),
        bad,
        "stderr:\n{}",
        out.stderr
    );
    for (i, (_, expected)) in mixed_file().iter().enumerate() {
        let Some(words) = expected else { continue };
        let reports = reports_for(&out.stderr, &file, i + 1);
        assert_eq!(reports.len(), 1, "line {}: {reports:?}", i + 1);
        for w in words {
            assert!(
                reports[0].contains(w),
                "line {}: report {:?} should mention {w}",
                i + 1,
                reports[0]
            );
        }
    }
    // The summary counts non-blank lines.
    assert!(
        out.stdout_text()
            .contains("11 instances, 3 valid, 8 invalid"),
        "stdout: {}",
        out.stdout_text()
    );
}

#[test]
fn every_class_of_invalid_instance_names_the_job_and_field() {
    // (edit, words its report must contain). Each line breaks exactly one rule of SPEC 1.
    type Edit = fn(&mut Value);
    let cases: Vec<(Edit, Vec<&str>)> = vec![
        (
            |v| v["queue"][0]["deps"] = json!(["a"]),
            vec!["\"a\"", "deps", "cycle"],
        ),
        (
            |v| v["queue"][0]["deps"] = json!(["n0"]),
            vec!["\"a\"", "deps", "\"n0\""],
        ),
        (
            |v| v["running"][0]["demand"] = json!([9, 8]),
            vec!["\"n0\"", "capacity"],
        ),
        (
            |v| v["running"][0]["server"] = json!("nx"),
            vec!["\"r0\"", "server", "\"nx\""],
        ),
        (
            |v| v["running"][0]["end"] = json!(1000),
            vec!["\"r0\"", "end"],
        ),
        (
            |v| v["queue"][1]["demand"] = json!([1]),
            vec!["\"b\"", "demand"],
        ),
        (
            |v| v["servers"][1]["capacity"] = json!([4, 64, 1]),
            vec!["\"n1\"", "capacity"],
        ),
        (
            |v| v["queue"][2]["demand"] = json!([-1, 0]),
            vec!["\"c\"", "demand"],
        ),
        (
            |v| v["queue"][2]["walltime"] = json!(0),
            vec!["\"c\"", "walltime"],
        ),
        (
            |v| v["queue"][2]["weight"] = json!(0),
            vec!["\"c\"", "weight"],
        ),
        (
            |v| v["running"][0]["id"] = json!("a"),
            vec!["\"a\"", "twice"],
        ),
        (
            |v| v["resources"] = json!(["cores", "cores"]),
            vec!["resources", "cores"],
        ),
        (|v| v["queue"] = json!([]), vec!["queue"]),
        (|v| v["now"] = json!(1000.5), vec!["not an instance"]),
    ];
    let dir = tempdir();
    let path = dir.path().join("classes.jsonl");
    let mut text = String::new();
    for (edit, _) in &cases {
        text.push_str(&instance(*edit));
        text.push_str("\n\n"); // a blank line after each: bad lines are 1, 3, 5, ...
    }
    std::fs::write(&path, text).unwrap();
    let file = path_str(&path);
    let out = run(&["validate", &file]).failed();
    let expected: Vec<usize> = (0..cases.len()).map(|k| 2 * k + 1).collect();
    assert_eq!(
        reported_lines(&out.stderr, &file),
        expected,
        "{}",
        out.stderr
    );
    for (k, (_, words)) in cases.iter().enumerate() {
        let report = reports_for(&out.stderr, &file, 2 * k + 1);
        for w in words {
            assert!(
                report[0].contains(w),
                "case {k}: {:?} should mention {w}",
                report[0]
            );
        }
    }
}

#[test]
fn crlf_line_endings_are_accepted() {
    let dir = tempdir();
    let path = dir.path().join("crlf.jsonl");
    let bad = instance(|v| v["queue"][1]["submit"] = json!(2000));
    let good = instance(|_| {});
    std::fs::write(&path, format!("{good}\r\n\r\n{bad}\r\n{good}\r\n")).unwrap();
    let file = path_str(&path);
    let out = run(&["validate", &file]).failed();
    assert_eq!(
        reported_lines(&out.stderr, &file),
        vec![3],
        "{}",
        out.stderr
    );
    assert!(out
        .stdout_text()
        .contains("3 instances, 2 valid, 1 invalid"));
}

#[test]
fn validate_reads_standard_input() {
    let (good, bad) = (
        instance(|_| {}),
        instance(|v| v["queue"][1]["submit"] = json!(2000)),
    );
    let out = run_stdin(&["validate", "-"], &format!("{good}\n\n{bad}\n")).failed();
    assert_eq!(reported_lines(&out.stderr, "-"), vec![3], "{}", out.stderr);
    let out = run_stdin(&["validate", "-"], &format!("{good}\n")).ok();
    assert!(out
        .stdout_text()
        .contains("1 instances, 1 valid, 0 invalid"));
}

#[test]
fn every_problem_of_one_instance_is_named() {
    // Two independent problems in one line: both appear in its report.
    let dir = tempdir();
    let path = dir.path().join("two.jsonl");
    let line = instance(|v| {
        v["queue"][1]["submit"] = json!(5000);
        v["queue"][2]["demand"] = json!([100, 1]);
    });
    std::fs::write(&path, format!("{line}\n")).unwrap();
    let file = path_str(&path);
    let out = run(&["validate", &file]).failed();
    let report = reports_for(&out.stderr, &file, 1);
    assert_eq!(report.len(), 1, "{}", out.stderr);
    assert!(
        report[0].contains("\"b\"") && report[0].contains("submit"),
        "{}",
        report[0]
    );
    assert!(
        report[0].contains("\"c\"") && report[0].contains("demand"),
        "{}",
        report[0]
    );
}

#[test]
fn missing_file_is_an_error_naming_it() {
    let dir = tempdir();
    let file = path_str(&dir.path().join("does-not-exist.jsonl"));
    let out = run(&["validate", &file]).failed();
    assert!(out.stderr.contains(&file), "{}", out.stderr);
}
