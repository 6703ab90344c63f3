//! Skipped tests, counted, and failed where their prerequisite is promised: a test whose
//! prerequisite is missing (a model file, a Python package, a GPU, a Slurm cluster) calls
//! [`skip`] with the prerequisite's name and returns. The reason goes to standard error (shown
//! with `--nocapture`) and, when `SCHEDLM_SKIP_LOG` names a file, is appended to it as one
//! line, so that `scripts/test.sh` prints how many tests were skipped and why in its closing
//! lines instead of counting them as passed without a word.
//!
//! `SCHEDLM_REQUIRE` lists prerequisites that are there (comma-separated names, or `all`):
//! a test that would skip for one of them fails instead. `scripts/test.sh` sets it to what its
//! setup provided (a Slurm cluster it started, the models it fetched, the Python packages it
//! installed), so a test that skips where its tool is installed is a failure, not a quiet `ok`.

use std::io::Write;

/// The environment variable of prerequisites that must not be skipped.
pub const REQUIRE_ENV: &str = "SCHEDLM_REQUIRE";

/// Notes that the calling test is skipped because `need` (a short name: `slurm`, `root`,
/// `minilm`, `smollm2`, `trl`, `datasets`, `procfs`, `cuda`) is missing, and why; panics
/// instead when [`REQUIRE_ENV`] lists `need`. The test is named by its thread (the test
/// harness runs each test in a thread named after it).
pub fn skip(need: &str, reason: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    let required = std::env::var(REQUIRE_ENV).unwrap_or_default();
    if is_required(&required, need) {
        panic!("{test} needs {need}, which {REQUIRE_ENV}={required} says is there, but: {reason}");
    }
    eprintln!("skipped {test}: {reason}");
    let Some(log) = std::env::var_os("SCHEDLM_SKIP_LOG") else {
        return;
    };
    let line = format!("{test}: {need}: {}\n", reason.replace('\n', " "));
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
    {
        // One write of one line: lines of tests running in parallel do not interleave.
        let _ = file.write_all(line.as_bytes());
    }
}

/// Whether the list `required` (comma-separated, or `all`) names `need`.
fn is_required(required: &str, need: &str) -> bool {
    required
        .split(',')
        .map(str::trim)
        .any(|r| r == need || r == "all")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_prerequisite_is_required() {
        assert!(is_required("slurm,minilm", "minilm"));
        assert!(is_required(" slurm , root", "root"));
        assert!(is_required("all", "cuda"));
        assert!(!is_required("", "slurm"));
        assert!(!is_required("slurmd", "slurm"));
    }
}
