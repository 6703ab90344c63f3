//! Every input line accounted for, every output failure reported (issue #13): a line that is
//! not UTF-8 is one bad line with its number in every command that reads instances or records;
//! a byte-order mark is accepted; an empty input is said; a closed pipe ends a command quietly
//! and a full disk is an error with exit 1, never a panic; a second build into a directory
//! being built is refused.

mod common;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{command, generate_file, path_str, read_jsonl, reports_for, run, tempdir};

/// Three instances with a byte 0xFF inside the second line's text.
fn with_bad_byte(dir: &Path) -> PathBuf {
    let good = generate_file(
        dir,
        "g.jsonl",
        &["--family", "hpc", "-n", "3", "--queue", "3..5"],
    );
    let text = fs::read(&good).unwrap();
    let mut lines: Vec<Vec<u8>> = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    let at = lines[1].iter().position(|&b| b == b'q').unwrap();
    lines[1].insert(at, 0xFF);
    let bad = dir.join("bad.jsonl");
    fs::write(&bad, lines.join(&b'\n')).unwrap();
    bad
}

/// Runs `dataset build ARGS -o OUT` (its summary on stderr: no `-q`).
fn build(out: &Path, args: &[&str]) -> common::Run {
    let out = path_str(out);
    let mut all = vec!["dataset", "build"];
    all.extend_from_slice(args);
    all.extend(["-o", &out]);
    run(&all)
}

#[test]
fn a_line_that_is_not_utf8_is_one_bad_line_everywhere() {
    let dir = tempdir();
    let bad = with_bad_byte(dir.path());
    let file = path_str(&bad);
    let check = |stderr: &str| {
        let reports = reports_for(stderr, &file, 2);
        assert_eq!(reports.len(), 1, "{stderr}");
        assert!(reports[0].contains("not UTF-8 text: byte 0xFF"), "{stderr}");
        assert!(
            reports_for(stderr, &file, 1).is_empty() && reports_for(stderr, &file, 3).is_empty()
        );
    };
    let r = run(&["validate", &file]).failed();
    check(&r.stderr);
    assert!(r.stdout_text().contains("3 instances, 2 valid, 1 invalid"));

    let out = dir.path().join("solved.jsonl");
    let r = run(&["solve", &file, "--time-limit", "1s", "-o", &path_str(&out)]).failed();
    check(&r.stderr);
    assert_eq!(
        read_jsonl(&out).len(),
        2,
        "the valid lines are solved and written"
    );

    let out = dir.path().join("scheduled.jsonl");
    let r = run(&["schedule", &file, "-o", &path_str(&out)]).failed();
    check(&r.stderr);
    assert_eq!(read_jsonl(&out).len(), 2);

    let r = build(&dir.path().join("data"), &["--from", &file]).failed();
    assert!(
        r.stderr.contains(&format!("{file}:2: not UTF-8 text")),
        "{}",
        r.stderr
    );
    let data = dir.path().join("data2");
    let r = build(
        &data,
        &["--from", &file, "--skip-invalid", "--split", "0/0/100"],
    )
    .ok();
    assert!(
        r.stderr.contains("2 records") && r.stderr.contains("1 skipped"),
        "{}",
        r.stderr
    );

    // eval --data: a record line that is not text is an error naming it.
    let test = data.join("test.jsonl");
    let mut bytes = fs::read(&test).unwrap();
    bytes.extend_from_slice(b"{\"id\": \"\xFF\"}\n");
    fs::write(&test, bytes).unwrap();
    let report = path_str(&dir.path().join("report"));
    let r = run(&[
        "eval",
        "--data",
        &path_str(&test),
        "--policies",
        "fcfs",
        "--report",
        &report,
    ])
    .failed();
    assert!(
        r.stderr.contains("line 3") && r.stderr.contains("not UTF-8 text"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_byte_order_mark_is_accepted_and_an_empty_input_is_refused() {
    let dir = tempdir();
    let good = generate_file(dir.path(), "g.jsonl", &["--family", "hpc", "-n", "2"]);
    let bom = dir.path().join("bom.jsonl");
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(fs::read(&good).unwrap());
    // CRLF line ends too.
    let crlf: Vec<u8> = bytes
        .split(|&b| b == b'\n')
        .collect::<Vec<_>>()
        .join(&b"\r\n"[..]);
    fs::write(&bom, crlf).unwrap();
    let r = run(&["validate", &path_str(&bom)]).ok();
    assert!(
        r.stdout_text().contains("2 instances, 2 valid"),
        "{}",
        r.stderr
    );

    let empty = dir.path().join("empty.jsonl");
    fs::write(&empty, "").unwrap();
    let data = dir.path().join("data");
    let r = build(&data, &["--from", &path_str(&empty)]).failed();
    assert!(
        r.stderr.contains("is empty; nothing was written"),
        "{}",
        r.stderr
    );
    assert!(!data.join("train.jsonl").exists());
}

/// The one rule for empty input (docs/design.md): every command refuses an input with nothing
/// to work on, names it and exits 1, writing nothing.
#[test]
fn every_command_refuses_an_empty_input() {
    let dir = tempdir();
    let d = |name: &str| path_str(&dir.path().join(name));
    let empty = d("empty.jsonl");
    fs::write(&empty, "").unwrap();
    fs::write(dir.path().join("empty.swf"), "; MaxProcs: 8\n").unwrap();
    fs::create_dir(dir.path().join("nothing")).unwrap();
    let swf = d("empty.swf");
    let out = d("out");
    let nothing = d("nothing");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["validate", &empty], "no instance"),
        (vec!["schedule", &empty], "no instance"),
        (vec!["solve", &empty], "no instance"),
        (vec!["import", "psplib", &nothing], "no PSPLIB file"),
        (
            vec!["dataset", "build", "--from", &empty, "-o", &out],
            "is empty",
        ),
        (vec!["dataset", "stats", &nothing], "no record"),
        (
            vec!["eval", "--data", &empty, "--policies", "sjf", "-o", &out],
            "no record",
        ),
        (vec!["replay", "--trace", &swf, "-o", &out], "no job"),
        (vec!["generate", "--from-trace", &swf], "no job"),
    ];
    for (args, says) in cases {
        let r = run(&args).failed();
        assert_eq!(r.code, Some(1), "{args:?}");
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{args:?} wrote output");
    }
    assert!(!dir.path().join("out").exists(), "nothing was written");
}

#[test]
fn a_full_disk_is_an_error_and_a_closed_pipe_is_quiet() {
    let dir = tempdir();
    let good = generate_file(dir.path(), "g.jsonl", &["--family", "hpc", "-n", "2"]);
    if Path::new("/dev/full").exists() {
        for args in [
            vec!["validate", path_str(&good).leak()],
            vec!["generate", "--family", "hpc", "-n", "50"],
        ] {
            let full = fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap();
            let out = command()
                .args(&args)
                .stdout(full)
                .stderr(Stdio::piped())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
            assert!(
                stderr.contains("No space left") && !stderr.contains("panicked"),
                "{args:?}: {stderr}"
            );
        }
    }
    // A reader that stops after a few bytes: the writer ends quietly with status 0.
    let mut child = command()
        .args([
            "generate", "--family", "hpc", "-n", "3000", "--queue", "20..30",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_second_build_into_a_directory_being_built_is_refused() {
    let dir = tempdir();
    let data = dir.path().join("data");
    fs::create_dir_all(&data).unwrap();
    // Another build holds the lock.
    let lock = fs::File::create(data.join(".build.lock")).unwrap();
    lock.try_lock().unwrap();
    let args = ["--family", "hpc", "-n", "4"];
    let r = build(&data, &args).failed();
    assert!(
        r.stderr
            .contains("another `schedlm dataset build` is writing to"),
        "{}",
        r.stderr
    );
    assert!(!data.join("manifest.json").exists());
    drop(lock);
    build(&data, &args).ok();
    assert!(data.join("manifest.json").exists());
}

#[test]
fn a_build_whose_every_line_is_skipped_is_an_error() {
    let dir = tempdir();
    let input = dir.path().join("bad.jsonl");
    fs::write(&input, "{\"a\": 1}\n[]\n").unwrap();
    let out = dir.path().join("data");
    let r = build(&out, &["--skip-invalid", "--from", &path_str(&input)]).failed();
    assert!(
        r.stderr
            .contains("is empty: all 2 input lines were skipped"),
        "{}",
        r.stderr
    );
}

/// A bad trace line is quoted in the error as a bounded, escaped excerpt with its length, in
/// every command that reads traces: a 2 MB line does not flood the terminal, and terminal
/// control bytes in it are not written raw.
#[test]
fn bad_trace_lines_are_quoted_bounded_and_escaped() {
    let dir = tempdir();
    let trace = common::tiny_trace(dir.path());
    let good = fs::read_to_string(&trace).unwrap();
    let long = dir.path().join("long.swf");
    fs::write(&long, format!("{good}{}\n", "x".repeat(2 << 20))).unwrap();
    let control = dir.path().join("control.swf");
    let fields = "41 820 -1 \u{1b}[2J\u{7} 1 -1 -1 1 60 -1 1 1 -1 -1 -1 -1 -1 -1";
    fs::write(&control, format!("{good}{fields}\n")).unwrap();
    let out = dir.path().join("out");
    for file in [&long, &control] {
        let t = path_str(file);
        for args in [
            vec!["replay", "--trace", &t, "-o", &path_str(&out)],
            vec!["estimate", "--trace", &t],
            vec!["generate", "--from-trace", &t],
        ] {
            let failed = run(&args).failed();
            let err = &failed.stderr;
            assert!(err.len() < 2_000, "{args:?}: {} bytes of errors", err.len());
            assert!(
                !err.contains('\u{1b}') && !err.contains('\u{7}'),
                "{args:?}: {err}"
            );
            assert!(err.contains(":42:"), "{args:?}: the line is named: {err}");
            if file == &long {
                assert!(err.contains("(2097152 bytes)"), "{args:?}: {err}");
            } else {
                assert!(err.contains("\\u{1b}[2J"), "{args:?}: {err}");
            }
        }
    }
}

/// A JSON line whose bad value is a 1 MB string: the parser's message is cut, its end (the
/// column) kept, in every command that reads instances.
#[test]
fn bad_json_values_are_quoted_bounded() {
    let dir = tempdir();
    let file = dir.path().join("big.jsonl");
    fs::write(&file, format!("{{\"now\": \"{}\"}}\n", "x".repeat(1 << 20))).unwrap();
    let f = path_str(&file);
    for args in [
        vec!["validate", &f],
        vec!["schedule", &f],
        vec!["solve", &f],
    ] {
        let failed = run(&args).failed();
        assert!(
            failed.stderr.len() < 2_000,
            "{args:?}: {} bytes",
            failed.stderr.len()
        );
        assert!(
            failed.stderr.contains("column"),
            "{args:?}: {}",
            failed.stderr
        );
    }
}

/// The first instance of a small generated file, as JSON, with its path's directory.
fn one_instance(dir: &Path) -> serde_json::Value {
    let file = generate_file(
        dir,
        "one.jsonl",
        &[
            "--family", "hpc", "-n", "1", "--queue", "3..3", "--seed", "5",
        ],
    );
    read_jsonl(&file).remove(0)
}

fn write_line(dir: &Path, name: &str, value: &serde_json::Value) -> String {
    let path = dir.join(name);
    fs::write(&path, format!("{value}\n")).unwrap();
    path_str(&path)
}

/// SPEC section 1: nothing is silently dropped. A field the schema does not know (a typo
/// `dep` for `deps`) is an error that names it and its job in every command that reads
/// instances; `--allow-unknown-fields` accepts it with one warning naming it; `meta` is free.
#[test]
fn an_unknown_field_is_an_error_naming_it_and_its_job() {
    let dir = tempdir();
    let mut instance = one_instance(dir.path());
    instance["queue"][0]["meta"] = serde_json::json!({"anything": [1, {"goes": true}]});
    let good = write_line(dir.path(), "good.jsonl", &instance);
    run(&["validate", &good]).ok();
    let id = instance["queue"][1]["id"].as_str().unwrap().to_string();
    let other = instance["queue"][2]["id"].clone();
    instance["queue"][1]["dep"] = serde_json::json!([other]);
    let typo = write_line(dir.path(), "typo.jsonl", &instance);
    let says = format!("queue job \"{id}\": unknown field \"dep\" (known: id, submit, demand,");
    let out = path_str(&dir.path().join("out"));
    let data = path_str(&dir.path().join("data"));
    let commands: Vec<Vec<&str>> = vec![
        vec!["validate", &typo],
        vec!["schedule", &typo, "-o", &out],
        vec!["solve", &typo, "--time-limit", "1s", "-o", &out],
        vec![
            "dataset",
            "build",
            "--from",
            &typo,
            "--time-limit",
            "1s",
            "-o",
            &data,
        ],
    ];
    for args in &commands {
        let r = run(args).failed();
        assert!(r.stderr.contains(&says), "{args:?}: {}", r.stderr);
    }
    let allowed = format!(
        "{typo}: ignored unknown fields (--allow-unknown-fields): queue job field \"dep\" (line 1)"
    );
    // A build directory remembers how its input was read: the accepting build gets another.
    let data2 = path_str(&dir.path().join("data2"));
    for args in &commands {
        let mut args: Vec<&str> = args
            .iter()
            .map(|a| if *a == data { data2.as_str() } else { a })
            .collect();
        args.push("--allow-unknown-fields");
        let r = run(&args).ok();
        let warnings: Vec<&str> = r
            .stderr
            .lines()
            .filter(|l| l.contains("unknown field"))
            .collect();
        assert_eq!(warnings.len(), 1, "{args:?}: {}", r.stderr);
        assert!(warnings[0].ends_with(&allowed), "{args:?}: {}", r.stderr);
    }
    // Top level, servers and running jobs too.
    let mut instance = one_instance(dir.path());
    instance["extra"] = serde_json::json!(1);
    instance["servers"][0]["cap"] = serde_json::json!([1]);
    let file = write_line(dir.path(), "more.jsonl", &instance);
    let r = run(&["validate", &file]).failed();
    assert!(
        r.stderr.contains("the instance: unknown field \"extra\" (known: now, resources, servers, running, queue)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("unknown field \"cap\" (known: id, capacity)"),
        "{}",
        r.stderr
    );
}

/// Inputs that never end a line: each reader stops at the line bound (here 1 MiB through
/// `SCHEDLM_MAX_LINE_BYTES`; 64 MiB by default) with an error naming the file and the line.
#[test]
fn endless_inputs_are_refused_at_the_line_bound() {
    let dir = tempdir();
    let long = dir.path().join("long.jsonl");
    fs::write(&long, format!("{{\"now\": \"{}\"}}\n", "x".repeat(2 << 20))).unwrap();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    let out = path_str(&dir.path().join("out"));
    let mut inputs = vec![(
        "/dev/zero".to_string(),
        "line 1 is longer than 1048576 bytes",
    )];
    inputs.push((path_str(&long), "line 1 is longer than 1048576 bytes"));
    if made.is_ok_and(|s| s.success()) {
        inputs.push((path_str(&fifo), "line 1 is longer than 1048576 bytes"));
    }
    for (input, says) in &inputs {
        let file = input.as_str();
        let commands: Vec<Vec<&str>> = vec![
            vec!["validate", file],
            vec!["schedule", file],
            vec!["solve", file],
            vec!["dataset", "build", "--from", file, "-o", &out],
            vec!["eval", "--data", file, "--policies", "sjf", "-o", &out],
            vec!["import", "psplib", file],
            vec!["generate", "--from-trace", file],
        ];
        for args in commands {
            // A writer that never ends its line, for as long as the FIFO has a reader.
            let writer = (file == path_str(&fifo)).then(|| {
                let fifo = fifo.clone();
                std::thread::spawn(move || {
                    use std::io::Write;
                    if let Ok(mut w) = fs::OpenOptions::new().write(true).open(fifo) {
                        let chunk = [b'x'; 1 << 16];
                        while w.write_all(&chunk).is_ok() {}
                    }
                })
            });
            let r = common::run_env(&args, &[("SCHEDLM_MAX_LINE_BYTES", "1M")]).failed();
            let says = if args[0] == "import" {
                "the file is longer than 1048576 bytes"
            } else {
                says
            };
            assert!(
                r.stderr.contains(file) && r.stderr.contains(says),
                "{args:?}: {}",
                r.stderr
            );
            assert!(r.stderr.len() < 2_000, "{args:?}: {} bytes", r.stderr.len());
            if let Some(w) = writer {
                // A command that failed before opening the FIFO leaves the writer waiting for
                // a reader: be one for a moment, so that it opens, then fails to write.
                use std::os::unix::fs::OpenOptionsExt;
                const O_NONBLOCK: i32 = 0o4000;
                while !w.is_finished() {
                    let reader = fs::OpenOptions::new()
                        .read(true)
                        .custom_flags(O_NONBLOCK)
                        .open(&fifo);
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    drop(reader);
                }
                w.join().unwrap();
            }
        }
    }
    // The default bound, and a bound that is not a size.
    let r = run(&["validate", "/dev/zero"]).failed();
    assert!(
        r.stderr
            .contains("/dev/zero: line 1 is longer than 67108864 bytes (64 MiB)"),
        "{}",
        r.stderr
    );
    let r = common::run_env(
        &["validate", "/dev/zero"],
        &[("SCHEDLM_MAX_LINE_BYTES", "lots")],
    )
    .failed();
    assert!(
        r.stderr.contains("SCHEDLM_MAX_LINE_BYTES is not a size"),
        "{}",
        r.stderr
    );
}

/// An id quoted in an error is an escaped excerpt of at most 80 characters with its length:
/// a 5 MB id does not flood the terminal, and ESC and BEL in an id are not written raw.
#[test]
fn ids_in_errors_are_bounded_and_escaped() {
    let dir = tempdir();
    let mut instance = one_instance(dir.path());
    let huge = "y".repeat(5 << 20);
    instance["queue"][0]["id"] = serde_json::json!(huge);
    instance["queue"][0]["walltime"] = serde_json::json!(0);
    instance["queue"][1]["id"] = serde_json::json!("bad\u{1b}[2J\u{7}");
    instance["queue"][1]["deps"] = serde_json::json!(["no\u{1b}such"]);
    let file = write_line(dir.path(), "ids.jsonl", &instance);
    for args in [
        vec!["validate", &file],
        vec!["solve", &file],
        vec!["schedule", &file],
    ] {
        let r = run(&args).failed();
        let err = &r.stderr;
        assert!(err.len() < 2_000, "{args:?}: {} bytes", err.len());
        assert!(
            !err.contains('\u{1b}') && !err.contains('\u{7}'),
            "{args:?}: {err}"
        );
        assert!(
            err.contains(&format!("…\" ({} bytes)", 5 << 20)),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("job \"bad\\u{1b}[2J\\u{7}\": `deps` names \"no\\u{1b}such\""),
            "{args:?}: {err}"
        );
    }
}

fn only_warnings(stderr: &str, what: &str) {
    for line in stderr.lines() {
        assert!(
            line.starts_with("warning: ") || line.contains(": warning: "),
            "{what}: {stderr}"
        );
    }
}

/// `-q` leaves nothing on stderr but warnings and errors, in every command that takes it
/// (`generate` and `eval` included); `--progress` into a pipe writes whole lines, never a
/// redraw joined to the next by a carriage return.
#[test]
fn quiet_is_quiet_and_progress_into_a_pipe_is_lines() {
    let dir = tempdir();
    let d = |name: &str| path_str(&dir.path().join(name));
    let snapshots = d("s.jsonl");
    let r = run(&[
        "generate", "-q", "--family", "hpc", "-n", "3", "--queue", "3..4", "-o", &snapshots,
    ])
    .ok();
    assert_eq!(r.stderr, "", "generate -q");
    let data = d("data");
    let r = run(&[
        "dataset",
        "build",
        "--from",
        &snapshots,
        "--time-limit",
        "1s",
        "--split",
        "0/0/100",
        "-q",
        "-o",
        &data,
    ])
    .ok();
    only_warnings(&r.stderr, "dataset build -q");
    let test = path_str(&dir.path().join("data").join("test.jsonl"));
    let r = run(&[
        "eval",
        "--data",
        &test,
        "--policies",
        "fcfs,sjf",
        "-q",
        "-o",
        &d("report"),
    ])
    .ok();
    only_warnings(&r.stderr, "eval -q");
    let r = run(&[
        "eval",
        "--data",
        &test,
        "--policies",
        "fcfs,sjf",
        "-o",
        &d("report2"),
    ])
    .ok();
    assert!(
        r.stderr.contains("wrote "),
        "eval without -q says what it wrote: {}",
        r.stderr
    );

    let r = run(&[
        "dataset",
        "build",
        "--from",
        &snapshots,
        "--time-limit",
        "1s",
        "--progress",
        "-o",
        &d("data2"),
    ])
    .ok();
    assert!(!r.stderr.contains('\r'), "{:?}", r.stderr);
    let bars: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains(" snapshots, "))
        .collect();
    assert!(!bars.is_empty(), "no progress line: {:?}", r.stderr);
    for line in bars {
        assert_eq!(line.matches("snapshots, ").count(), 1, "{:?}", r.stderr);
        assert!(!line.contains("wrote"), "{:?}", r.stderr);
    }
}
