//! Import of the PSPLIB j30 sample in `shared/data/psplib/j30/`.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use schedlm_generator::psplib::{parse_sm, read_optimum_csv, PsplibError, POOL};
use schedlm_model::{validate, Problem};

const J30: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data/psplib/j30");

fn sm_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(J30)
        .unwrap_or_else(|e| panic!("cannot read {J30}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sm"))
        .collect();
    files.sort();
    files
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn all_60_j30_files_import_and_validate() {
    let files = sm_files();
    assert_eq!(files.len(), 60);
    for path in &files {
        let instance = parse_sm(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        validate(&instance).unwrap();
        Problem::new(&instance).unwrap();
        assert_eq!(instance.now, 0);
        assert_eq!(instance.resources, ["R1", "R2", "R3", "R4"]);
        assert_eq!(instance.servers.len(), 1);
        assert_eq!(instance.servers[0].id, POOL);
        assert!(instance.running.is_empty());
        assert_eq!(instance.queue.len(), 30, "{}", path.display());
        let ids: Vec<String> = instance.queue.iter().map(|j| j.id.clone()).collect();
        let expected: Vec<String> = (2..=31).map(|j| format!("j{j}")).collect();
        assert_eq!(ids, expected);
        let known: HashSet<&str> = ids.iter().map(String::as_str).collect();
        let mut with_deps = 0;
        for job in &instance.queue {
            assert_eq!(job.submit, 0);
            assert!(job.walltime >= 1);
            assert_eq!(job.demand.len(), 4);
            // Edges from the source and into the sink are gone; all others stay.
            assert!(job.deps.iter().all(|d| known.contains(d.as_str())));
            with_deps += usize::from(!job.deps.is_empty());
        }
        assert!(with_deps > 0 && with_deps < 30);
    }
}

#[test]
fn j301_1_matches_the_file() {
    let instance = parse_sm(&read(&Path::new(J30).join("j301_1.sm"))).unwrap();
    assert_eq!(instance.servers[0].capacity, [12, 13, 4, 12]);
    let job = |id: &str| instance.queue.iter().find(|j| j.id == id).unwrap();
    // Job 2: duration 8, requests 4 0 0 0, successor of the source only.
    assert_eq!(job("j2").walltime, 8);
    assert_eq!(job("j2").demand, [4, 0, 0, 0]);
    assert!(job("j2").deps.is_empty());
    // Job 20 follows 5, 11 and 18; job 22 follows 16, 17 and 18.
    assert_eq!(job("j20").deps, ["j5", "j11", "j18"]);
    assert_eq!(job("j22").deps, ["j16", "j17", "j18"]);
    // Job 31 (a predecessor of the sink) has duration 2 and requests 0 0 2 0.
    assert_eq!(job("j31").walltime, 2);
    assert_eq!(job("j31").demand, [0, 0, 2, 0]);
    assert_eq!(job("j31").deps, ["j26", "j28"]);
}

#[test]
fn optimum_csv_lists_the_60_files() {
    let table = read_optimum_csv(&read(&Path::new(J30).join("optimum.csv"))).unwrap();
    assert_eq!(table.len(), 60);
    let names: HashSet<String> = sm_files()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for (name, optimum) in &table {
        assert!(names.contains(name), "{name} has no file");
        assert!(*optimum > 0);
    }
    assert_eq!(table[0], ("j301_1.sm".to_string(), 43));
}

/// Replaces line `n` (1-based) of `text`.
fn with_line(text: &str, n: usize, line: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| if i + 1 == n { line } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

fn line_of(e: &PsplibError) -> usize {
    match e {
        PsplibError::Syntax { line, .. }
        | PsplibError::ZeroDuration { line, .. }
        | PsplibError::DummyRequest { line, .. }
        | PsplibError::NonrenewableExceeded { line, .. }
        | PsplibError::Unsupported { line, .. } => *line,
        PsplibError::Invalid(e) => panic!("expected a line-numbered error, got {e}"),
    }
}

#[test]
fn malformed_files_give_line_numbered_errors() {
    let text = read(&Path::new(J30).join("j301_1.sm"));
    let line = |n: usize| text.lines().nth(n - 1).unwrap();
    assert!(line(20).starts_with("   2        1          3"));
    assert!(line(56).starts_with("  2      1     8"));
    assert!(line(90).starts_with("   12   13"));

    // (line to replace, its new text, a piece of the expected message)
    let cases: [(usize, &str, &str); 9] = [
        // A successor count that disagrees with the list.
        (
            20,
            "   2        1          4           6  11  15",
            "expected 4 successors",
        ),
        // A successor that is not a job.
        (
            20,
            "   2        1          3           6  11  45",
            "between 1 and 32",
        ),
        // A word where a number belongs.
        (56, "  2      1     x       4    0    0    0", "\"x\""),
        // A missing request column.
        (
            56,
            "  2      1     8       4    0    0",
            "request row of job 2",
        ),
        // A row out of order.
        (
            56,
            "  3      1     8       4    0    0    0",
            "request row of job 2",
        ),
        // A real job with duration 0.
        (
            56,
            "  2      1     0       4    0    0    0",
            "job 2 has duration 0",
        ),
        // Only three capacities.
        (90, "   12   13    4", "4 resource availabilities"),
        // A broken header count.
        (9, "  - renewable                 :  four   R", "renewable"),
        // A job count the file cannot hold (and must not allocate for).
        (
            6,
            "jobs (incl. supersource/sink ):  99999999999",
            "job count no larger",
        ),
    ];
    for (n, replacement, message) in cases {
        let bad = with_line(&text, n, replacement);
        let e = parse_sm(&bad).expect_err(replacement);
        let shown = e.to_string();
        assert_eq!(line_of(&e), n, "{shown}");
        assert!(shown.starts_with(&format!("line {n}: ")), "{shown}");
        assert!(shown.contains(message), "{shown} lacks {message:?}");
    }

    // A file cut short names the line after the end and what was still due.
    let cut: String = text.lines().take(40).collect::<Vec<_>>().join("\n");
    let e = parse_sm(&cut).unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 41: expected the precedence row of job 23: `23 1 <#successors> <successors>`, \
         found end of file"
    );

    // A request above the capacity is caught by SPEC validation, naming the job.
    let bad = with_line(&text, 56, "  2      1     8      40    0    0    0");
    let e = parse_sm(&bad).unwrap_err();
    assert!(matches!(e, PsplibError::Invalid(_)), "{e}");
    assert!(e.to_string().contains("\"j2\""), "{e}");

    // A precedence cycle (job 30 -> job 6, while 6 -> 30) is caught as well.
    let bad = with_line(&text, 48, "  30        1          2          32   6");
    let e = parse_sm(&bad).unwrap_err();
    assert!(e.to_string().contains("cycle"), "{e}");
}
