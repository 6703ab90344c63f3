//! The SWF reader: every cleaning policy on tiny texts, gzip, errors, and the four traces in
//! `shared/data/traces/`.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use schedlm_generator::trace::swf::{
    cluster, job_id, parse_swf, parse_swf_with_waits, read_swf, read_swf_with_waits, ClusterShape,
    MachineSource, OverMachine, Overrun, SwfError, SwfOptions, Trace, ZeroRuntime, POOL,
};

const TRACES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data/traces/");

/// A job line from the fields that matter; the others are -1.
#[allow(clippy::too_many_arguments)]
fn line(
    number: i64,
    submit: i64,
    run: i64,
    alloc: i64,
    req_procs: i64,
    req_time: i64,
    status: i64,
    user: i64,
) -> String {
    format!("{number} {submit} 0 {run} {alloc} -1 -1 {req_procs} {req_time} -1 {status} {user} -1 -1 -1 -1 -1 -1\n")
}

fn parse(text: &str) -> Trace {
    parse_swf(text.as_bytes(), "t.swf", &SwfOptions::default()).unwrap()
}

fn parse_with(text: &str, options: &SwfOptions) -> Trace {
    parse_swf(text.as_bytes(), "t.swf", options).unwrap()
}

fn check_balance(trace: &Trace) {
    let r = &trace.report;
    assert_eq!(r.records, r.jobs_kept + r.skipped(), "{r:?}");
    assert_eq!(r.jobs_kept, trace.jobs.len());
    for job in &trace.jobs {
        assert!(
            job.runtime >= 1 && job.walltime >= 1 && job.procs >= 1,
            "{job:?}"
        );
    }
    assert!(trace
        .jobs
        .windows(2)
        .all(|w| (w[0].submit, w[0].number) < (w[1].submit, w[1].number)));
}

#[test]
fn plain_job_is_kept_as_is() {
    let t = parse(&line(7, 100, 50, 4, 4, 60, 1, 3));
    assert_eq!(t.jobs.len(), 1);
    let j = &t.jobs[0];
    assert_eq!(
        (j.number, j.submit, j.runtime, j.walltime, j.procs, j.user, j.status, j.line),
        (7, 100, 50, 60, 4, 3, 1, 1)
    );
    assert_eq!(job_id(j), "j7");
    assert_eq!(t.report.jobs_kept, 1);
    assert_eq!(t.report.skipped(), 0);
}

#[test]
fn decimal_cpu_time_is_accepted() {
    let text = "1 0 5 100 4 552.21 -1 4 200 -1 1 7 -1 -1 -1 -1 -1 -1\n\
                2 1 5 100 4 142.00 3.5 4 28800.00 -1 1 7 -1 -1 -1 -1 -1 -1\n";
    let t = parse(text);
    assert_eq!(t.jobs.len(), 2);
    assert_eq!(
        t.jobs[1].walltime, 28800,
        "an integral decimal is an integer"
    );
}

#[test]
fn requested_procs_missing_uses_allocated() {
    // CTC: field 8 is -1 everywhere.
    let t = parse(&(line(1, 0, 10, 16, -1, 60, 1, 1) + &line(2, 1, 10, 8, 0, 60, 1, 1)));
    assert_eq!(t.jobs[0].procs, 16);
    assert_eq!(t.jobs[1].procs, 8);
    assert_eq!(t.report.procs_from_allocated, 2);

    let off = SwfOptions {
        procs_from_allocated: false,
        ..SwfOptions::default()
    };
    let t = parse_with(&line(1, 0, 10, 16, -1, 60, 1, 1), &off);
    assert!(t.jobs.is_empty());
    assert_eq!(t.report.procs_missing_skipped, 1);
}

#[test]
fn both_procs_missing_is_skipped() {
    let t = parse(&(line(1, 0, 10, -1, -1, 60, 1, 1) + &line(2, 5, 10, 2, 2, 60, 1, 1)));
    assert_eq!(t.jobs.len(), 1);
    assert_eq!(t.report.procs_missing_skipped, 1);
    check_balance(&t);
}

#[test]
fn requested_time_missing_uses_runtime() {
    // lublin_256: field 9 is -1 everywhere.
    let t = parse(&line(1, 0, 1234, 2, -1, -1, 1, -1));
    assert_eq!(t.jobs[0].walltime, 1234);
    assert_eq!(t.report.walltime_from_runtime, 1);
    assert_eq!(t.report.procs_from_allocated, 1);
    assert_eq!(t.jobs[0].user, -1);

    let off = SwfOptions {
        walltime_from_runtime: false,
        ..SwfOptions::default()
    };
    let t = parse_with(&line(1, 0, 1234, 2, 2, -1, 1, 1), &off);
    assert!(t.jobs.is_empty());
    assert_eq!(t.report.walltime_missing_skipped, 1);
}

#[test]
fn cancelled_jobs() {
    let text = line(1, 0, -1, -1, 4, 60, 5, 1) // cancelled, never ran
        + &line(2, 1, 0, 4, 4, 60, 5, 1) // cancelled with run 0
        + &line(3, 2, 30, 4, 4, 60, 5, 1) // cancelled after running: kept
        + &line(4, 3, 30, 4, 4, 60, 1, 1);
    let t = parse(&text);
    assert_eq!(t.report.cancelled_skipped, 2);
    assert_eq!(t.report.cancelled_kept, 1);
    assert_eq!(t.jobs.iter().map(|j| j.number).collect::<Vec<_>>(), [3, 4]);
    assert_eq!(t.jobs[0].status, 5);
    check_balance(&t);
}

#[test]
fn missing_and_zero_runtime() {
    let text = line(1, 0, -1, 4, 4, 60, 1, 1)
        + &line(2, 1, 0, 4, 4, 60, 0, 1)
        + &line(3, 2, 9, 4, 4, 60, 1, 1);
    let t = parse(&text);
    assert_eq!(t.report.runtime_missing_skipped, 1);
    assert_eq!(t.report.runtime_zero_skipped, 1);
    assert_eq!(t.jobs.len(), 1);
    check_balance(&t);

    let one = SwfOptions {
        zero_runtime: ZeroRuntime::One,
        ..SwfOptions::default()
    };
    let t = parse_with(&text, &one);
    assert_eq!(t.report.runtime_zero_to_one, 1);
    assert_eq!(t.report.runtime_zero_skipped, 0);
    assert_eq!(t.jobs[0].runtime, 1);
    check_balance(&t);
}

#[test]
fn submit_missing_and_duplicates_are_skipped() {
    let text = line(1, -1, 5, 4, 4, 60, 1, 1)
        + &line(2, 1, 5, 4, 4, 60, 1, 1)
        + &line(2, 3, 5, 4, 4, 60, 1, 1);
    let t = parse(&text);
    assert_eq!(t.report.submit_missing_skipped, 1);
    assert_eq!(t.report.duplicate_skipped, 1);
    assert_eq!(t.jobs.len(), 1);
    assert_eq!(t.jobs[0].line, 2);
    check_balance(&t);
}

#[test]
fn each_skipped_job_counts_once() {
    // Cancelled, no run time and no processors: counted as cancelled only.
    let t = parse(&line(1, 0, -1, -1, -1, -1, 5, 1));
    assert_eq!(t.report.cancelled_skipped, 1);
    assert_eq!(t.report.skipped(), 1);
    assert_eq!(
        t.report.procs_missing_skipped + t.report.runtime_missing_skipped,
        0
    );
}

#[test]
fn procs_over_machine_skip_or_cap() {
    let text = format!(
        "; MaxProcs: 8\n{}{}",
        line(1, 0, 5, 4, 16, 60, 1, 1),
        line(2, 1, 5, 4, 8, 60, 1, 1)
    );
    let t = parse(&text);
    assert_eq!(t.report.procs_over_machine, 1);
    assert_eq!(t.jobs.len(), 1);
    assert_eq!(t.report.machine_procs, Some(8));
    assert_eq!(t.report.machine_source, MachineSource::MaxProcs);
    check_balance(&t);

    let cap = SwfOptions {
        over_machine: OverMachine::Cap,
        ..SwfOptions::default()
    };
    let t = parse_with(&text, &cap);
    assert_eq!(t.report.procs_over_machine, 1);
    assert_eq!(t.jobs.len(), 2);
    assert_eq!(t.jobs[0].procs, 8);
    assert!(
        t.report
            .to_string()
            .contains("above the machine, capped: 1"),
        "{}",
        t.report
    );
    check_balance(&t);

    // An option overrides the header.
    let small = SwfOptions {
        machine_procs: Some(4),
        ..SwfOptions::default()
    };
    let t = parse_with(&text, &small);
    assert_eq!(t.report.procs_over_machine, 2);
    assert_eq!(t.report.machine_source, MachineSource::Option);
}

#[test]
fn overrun_policies() {
    let text = line(1, 0, 100, 4, 4, 60, 1, 1);
    let t = parse(&text);
    assert_eq!((t.jobs[0].runtime, t.jobs[0].walltime), (100, 60));
    assert_eq!(t.report.runtime_over_walltime, 1);
    let cap = parse_with(
        &text,
        &SwfOptions {
            overrun: Overrun::CapRuntime,
            ..SwfOptions::default()
        },
    );
    assert_eq!((cap.jobs[0].runtime, cap.jobs[0].walltime), (60, 60));
    let raise = parse_with(
        &text,
        &SwfOptions {
            overrun: Overrun::RaiseWalltime,
            ..SwfOptions::default()
        },
    );
    assert_eq!((raise.jobs[0].runtime, raise.jobs[0].walltime), (100, 100));
}

#[test]
fn jobs_are_sorted_by_submit_then_number() {
    let text = line(3, 50, 5, 1, 1, 9, 1, 1)
        + &line(1, 10, 5, 1, 1, 9, 1, 1)
        + &line(2, 10, 5, 1, 1, 9, 1, 1);
    let (t, waits) =
        parse_swf_with_waits(text.as_bytes(), "t.swf", &SwfOptions::default()).unwrap();
    assert_eq!(
        t.jobs.iter().map(|j| j.number).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(t.jobs.iter().map(|j| j.line).collect::<Vec<_>>(), [2, 3, 1]);
    assert_eq!(t.report.reordered, 1);
    assert_eq!(waits, [Some(0), Some(0), Some(0)]);
}

#[test]
fn headers() {
    let text = "\
; Version: 2.2
;   Computer: nothing
; MaxNodes: 338 (batch partition; 512 total)
; maxprocs:   338
; UnixStartTime: 835823160
; Note: MaxProcs: in a note is not a header
;
";
    let t = parse(text);
    assert_eq!(t.header.max_nodes, Some(338));
    assert_eq!(t.header.max_procs, Some(338));
    assert_eq!(t.header.unix_start_time, Some(835823160));
    assert_eq!(t.header.comments.len(), 7);
    assert_eq!(t.header.comments[0], " Version: 2.2");
    assert_eq!(t.header.comments[6], "");
    assert_eq!(t.report.comment_lines, 7);
    assert_eq!(t.report.records, 0);

    // MaxNodes stands in for a missing MaxProcs; with neither, the largest job.
    let t = parse(&format!(
        "; MaxNodes: 256\n{}",
        line(1, 0, 5, 4, 4, 9, 1, 1)
    ));
    assert_eq!(t.report.machine_procs, Some(256));
    assert_eq!(t.report.machine_source, MachineSource::MaxNodes);
    let t = parse(&(line(1, 0, 5, 4, 4, 9, 1, 1) + &line(2, 0, 5, 12, -1, 9, 1, 1)));
    assert_eq!(t.report.machine_procs, Some(12));
    assert_eq!(t.report.machine_source, MachineSource::LargestJob);
    assert!(t
        .report
        .to_string()
        .contains("machine: 12 processors, from the largest job"));

    let err = parse_swf(
        "; MaxProcs: many\n".as_bytes(),
        "h.swf",
        &SwfOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "h.swf:1: header MaxProcs must start with an integer, found \"many\""
    );
}

#[test]
fn bad_lines_are_errors_with_file_and_line() {
    let good = line(1, 0, 5, 4, 4, 9, 1, 1);
    let text = format!("; c\n{good}\n1 2 3\n");
    let err = parse_swf(text.as_bytes(), "x.swf", &SwfOptions::default()).unwrap_err();
    assert!(
        matches!(
            err,
            SwfError::FieldCount {
                line: 4,
                found: 3,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "x.swf:4: expected 18 whitespace-separated fields, found 3: \"1 2 3\""
    );

    let text = format!("{good}2 0 5 abc 4 -1 -1 4 9 -1 1 1 -1 -1 -1 -1 -1 -1\n");
    let err = parse_swf(text.as_bytes(), "x.swf", &SwfOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "x.swf:2: field 4 (run time) must be an integer, found \"abc\""
    );

    let text = format!("{good}2 0 5 4.5 4 -1 -1 4 9 -1 1 1 -1 -1 -1 -1 -1 -1\n");
    let err = parse_swf(text.as_bytes(), "x.swf", &SwfOptions::default()).unwrap_err();
    assert!(err
        .to_string()
        .contains("field 4 (run time) must be an integer, found \"4.5\""));

    let text = format!("{good}2 0 5 99999999999999999999 4 -1 -1 4 9 -1 1 1 -1 -1 -1 -1 -1 -1\n");
    let err = parse_swf(text.as_bytes(), "x.swf", &SwfOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("out of range"),
        "an integer too large is out of range, not \"not an integer\": {err}"
    );

    let text = format!("{good}2 0 5 4 4 x -1 4 9 -1 1 1 -1 -1 -1 -1 -1 -1\n");
    let err = parse_swf(text.as_bytes(), "x.swf", &SwfOptions::default()).unwrap_err();
    assert!(err
        .to_string()
        .contains("field 6 (average CPU time) must be a number, found \"x\""));

    let text = format!("{good}2 0 5 4 4 -1 -1 4 9 -1 1 1 -1 -1 -1 -1 -1 -1 7\n");
    let err = parse_swf(text.as_bytes(), "x.swf", &SwfOptions::default()).unwrap_err();
    assert!(err
        .to_string()
        .starts_with("x.swf:2: expected 18 whitespace-separated fields, found 19"));
}

#[test]
fn skip_bad_lines_counts_them() {
    let text = format!(
        "{}1 2 3\n{}2 0 5 abc 4 -1 -1 4 9 -1 1 1 -1 -1 -1 -1 -1 -1\n; MaxProcs: many\n\n",
        line(1, 0, 5, 4, 4, 9, 1, 1),
        line(3, 0, 5, 4, 4, 9, 1, 1)
    );
    let options = SwfOptions {
        skip_bad_lines: true,
        ..SwfOptions::default()
    };
    let t = parse_with(&text, &options);
    assert_eq!(t.report.bad_lines_skipped, 3);
    assert_eq!(t.report.blank_lines, 1);
    assert_eq!(t.report.lines_read, 6);
    assert_eq!(t.jobs.len(), 2);
    assert_eq!(t.header.max_procs, None);
    assert!(t.report.to_string().contains("bad lines skipped: 3"));
    check_balance(&t);
}

#[test]
fn report_display_lists_nonzero_counters_only() {
    let t = parse(&(line(1, 0, 5, 4, -1, 9, 1, 1) + &line(2, 1, -1, 4, 4, 9, 1, 1)));
    let shown = t.report.to_string();
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(
        lines,
        [
            "lines read: 2",
            "job records: 2",
            "jobs kept: 1",
            "run time missing, skipped: 1",
            "requested processors missing, allocated used: 1",
            "machine: 4 processors, from the largest job (no MaxProcs or MaxNodes header)",
        ]
    );
}

#[test]
fn gzip_is_detected_by_magic_bytes() {
    let text = format!(
        "; MaxProcs: 32\n{}{}",
        line(1, 0, 5, 4, 4, 9, 1, 1),
        line(2, 3, 7, 2, 2, 9, 1, 2)
    );
    let dir = tempfile::tempdir().unwrap();
    // A gzip file whose name does not say so, and a plain one.
    let gz_path = dir.path().join("trace.swf");
    let mut encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz_path).unwrap(),
        flate2::Compression::default(),
    );
    encoder.write_all(text.as_bytes()).unwrap();
    encoder.finish().unwrap();
    let plain_path = dir.path().join("plain.swf.gz");
    std::fs::write(&plain_path, &text).unwrap();
    let from_gz = read_swf(&gz_path, &SwfOptions::default()).unwrap();
    let from_plain = read_swf(&plain_path, &SwfOptions::default()).unwrap();
    assert_eq!(from_gz, from_plain);
    assert_eq!(from_gz.jobs.len(), 2);
    assert_eq!(from_gz.header.max_procs, Some(32));

    // Errors name the file.
    let bad = dir.path().join("bad.swf");
    std::fs::write(&bad, "1 2\n").unwrap();
    let err = read_swf(&bad, &SwfOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!("{}:1: expected 18", bad.display())),
        "{err}"
    );
    let missing = read_swf(&dir.path().join("none.swf"), &SwfOptions::default()).unwrap_err();
    assert!(matches!(missing, SwfError::Io { .. }));
}

#[test]
fn cluster_shapes() {
    let t = parse(&format!(
        "; MaxProcs: 64\n{}{}",
        line(1, 0, 5, 4, 4, 9, 1, 1),
        line(2, 3, 7, 16, 16, 9, 1, 2)
    ));
    let (resources, servers) = cluster(&t, ClusterShape::Pool).unwrap();
    assert_eq!(resources, ["cores"]);
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].id, POOL);
    assert_eq!(servers[0].capacity, [64]);

    let (_, servers) = cluster(
        &t,
        ClusterShape::Nodes {
            nodes: 3,
            cores: 16,
        },
    )
    .unwrap();
    assert_eq!(
        servers.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        ["n0", "n1", "n2"]
    );
    assert!(servers.iter().all(|s| s.capacity == [16]));

    let err = cluster(&t, ClusterShape::Nodes { nodes: 3, cores: 8 }).unwrap_err();
    assert!(
        matches!(err, SwfError::JobTooLarge { ref job, procs: 16, cores: 8, .. } if job == "j2"),
        "{err}"
    );
    assert!(matches!(
        cluster(&t, ClusterShape::Nodes { nodes: 0, cores: 8 }),
        Err(SwfError::Shape(_))
    ));

    let empty = parse("; nothing\n");
    assert!(matches!(
        cluster(&empty, ClusterShape::Pool),
        Err(SwfError::NoMachineSize)
    ));
}

/// (file, jobs in the README table, MaxProcs header, machine size)
const REAL: [(&str, usize, Option<i64>, i64); 4] = [
    ("SDSC-SP2-1998-4.2-cln.swf", 59_715, Some(128), 128),
    ("CTC-SP2-1996-3.1-cln.swf", 77_222, Some(338), 338),
    ("HPC2N-2002-2.2-cln.swf.gz", 202_871, Some(240), 240),
    ("lublin_256.swf", 10_000, None, 256),
];

#[test]
fn real_traces() {
    for (file, jobs, max_procs, machine) in REAL {
        let path = Path::new(TRACES).join(file);
        let start = Instant::now();
        let (t, waits) =
            read_swf_with_waits(&path, &SwfOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        let elapsed = start.elapsed();
        eprintln!(
            "{file}: {} jobs kept of {} in {elapsed:.2?}\n{}\n",
            t.jobs.len(),
            t.report.records,
            t.report
        );
        let r = &t.report;
        assert_eq!(r.records, jobs, "{file}");
        assert_eq!(r.jobs_kept + r.skipped(), jobs, "{file}");
        assert_eq!(r.bad_lines_skipped, 0, "{file}");
        assert_eq!(t.header.max_procs, max_procs, "{file}");
        assert_eq!(r.machine_procs, Some(machine), "{file}");
        assert_eq!(waits.len(), t.jobs.len());
        check_balance(&t);
        let (_, servers) = cluster(&t, ClusterShape::Pool).unwrap();
        assert_eq!(servers[0].capacity, [machine]);
        match file {
            "SDSC-SP2-1998-4.2-cln.swf" => {
                assert_eq!(r.cancelled_skipped, 5_681);
                assert_eq!(r.lines_read, 59_763);
                assert_eq!(r.comment_lines, 48);
            }
            "CTC-SP2-1996-3.1-cln.swf" => {
                assert_eq!(r.procs_from_allocated, r.jobs_kept);
                assert_eq!(r.runtime_zero_skipped, 17);
                assert_eq!(t.header.max_nodes, Some(338));
            }
            "HPC2N-2002-2.2-cln.swf.gz" => {
                assert_eq!(r.skipped(), 0);
                assert_eq!(r.lines_read, 202_902);
                assert!(elapsed.as_secs_f64() < 5.0, "HPC2N took {elapsed:?}");
            }
            "lublin_256.swf" => {
                assert_eq!(r.machine_source, MachineSource::MaxNodes);
                assert_eq!(r.walltime_from_runtime, 10_000);
                assert_eq!(r.procs_from_allocated, 10_000);
                assert!(waits.iter().all(Option::is_none));
            }
            _ => unreachable!(),
        }
    }
}

#[test]
fn parse_swf_reads_any_bufread() {
    let text = line(1, 0, 5, 4, 4, 9, 1, 1);
    let reader = std::io::BufReader::new(std::io::Cursor::new(text.into_bytes()));
    let t = parse_swf(reader, "cursor", &SwfOptions::default()).unwrap();
    assert_eq!(t.jobs.len(), 1);
}

#[test]
fn a_byte_order_mark_before_the_header_is_not_part_of_it() {
    let text = format!("\u{FEFF}; MaxProcs: 8\n{}", line(1, 0, 5, 4, 4, 9, 1, 1));
    let t = parse(&text);
    assert_eq!(t.jobs.len(), 1);
    assert_eq!(t.header.max_procs, Some(8));
    // Elsewhere it is an ordinary (bad) byte sequence.
    let text = format!("; MaxProcs: 8\n\u{FEFF}{}", line(1, 0, 5, 4, 4, 9, 1, 1));
    assert!(parse_swf(text.as_bytes(), "t.swf", &SwfOptions::default()).is_err());
}
