//! Skipped tests, counted: a test whose prerequisite is missing (a model file, a Python
//! package, a GPU) calls [`skip`] and returns. The reason goes to standard error (shown with
//! `--nocapture`) and, when `SCHEDLM_SKIP_LOG` names a file, is appended to it as one line, so
//! that `scripts/test.sh` prints how many tests were skipped and why in its closing lines
//! instead of counting them as passed without a word.

use std::io::Write;

/// Notes that the calling test is skipped, and why. The test is named by its thread (the test
/// harness runs each test in a thread named after it).
pub fn skip(reason: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    eprintln!("skipped {test}: {reason}");
    let Some(log) = std::env::var_os("SCHEDLM_SKIP_LOG") else {
        return;
    };
    let line = format!("{test}: {}\n", reason.replace('\n', " "));
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
    {
        // One write of one line: lines of tests running in parallel do not interleave.
        let _ = file.write_all(line.as_bytes());
    }
}
