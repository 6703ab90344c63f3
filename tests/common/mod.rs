//! Helpers shared by the end-to-end tests of the `schedlm` binary: running it, temporary
//! files, JSON Lines, and (in `reference`) an independent implementation of SPEC sections 2-4
//! and 6 written for the tests only.
#![allow(dead_code)]

pub mod reference;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// What one run of the binary gave.
pub struct Run {
    pub args: Vec<String>,
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    pub fn stdout_text(&self) -> String {
        String::from_utf8(self.stdout.clone()).expect("stdout is UTF-8")
    }

    /// Panics unless the run exited 0.
    pub fn ok(self) -> Run {
        assert!(
            self.success(),
            "schedlm {:?} exited {:?}\nstderr:\n{}",
            self.args,
            self.code,
            self.stderr
        );
        self
    }

    /// Panics unless the run exited non-zero (and was not killed by a signal).
    pub fn failed(self) -> Run {
        assert!(
            matches!(self.code, Some(c) if c != 0),
            "schedlm {:?} should fail but exited {:?}\nstderr:\n{}",
            self.args,
            self.code,
            self.stderr
        );
        self
    }
}

/// A command for the binary under test.
pub fn command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_schedlm"))
}

fn finish(args: Vec<String>, output: Output) -> Run {
    Run {
        args,
        code: output.status.code(),
        stdout: output.stdout,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs the binary with `args` and the given extra environment variables.
pub fn run_env<S: AsRef<str>>(args: &[S], env: &[(&str, &str)]) -> Run {
    let args: Vec<String> = args.iter().map(|a| a.as_ref().to_string()).collect();
    let mut cmd = command();
    cmd.args(&args).stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output = cmd.output().expect("cannot run the schedlm binary");
    finish(args, output)
}

/// Runs the binary with `args`.
pub fn run<S: AsRef<str>>(args: &[S]) -> Run {
    run_env(args, &[])
}

/// Runs the binary with `args` and `input` on standard input.
pub fn run_stdin<S: AsRef<str>>(args: &[S], input: &str) -> Run {
    use std::io::Write;
    let args: Vec<String> = args.iter().map(|a| a.as_ref().to_string()).collect();
    let mut child = command()
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot run the schedlm binary");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    finish(args, output)
}

/// A fresh temporary directory (removed on drop).
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("schedlm-cli-test")
        .tempdir()
        .expect("cannot create a temporary directory")
}

pub fn path_str(p: &Path) -> String {
    p.to_str().expect("temporary paths are UTF-8").to_string()
}

/// Runs `schedlm generate <args> -o dir/name` and returns the file's path.
pub fn generate_file(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let mut all: Vec<String> = vec!["generate".into()];
    all.extend(args.iter().map(|a| a.to_string()));
    all.push("-o".into());
    all.push(path_str(&path));
    run(&all).ok();
    path
}

/// Every non-blank line of a JSON Lines text, parsed.
pub fn parse_jsonl(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("line {} is not JSON: {e}", i + 1))
        })
        .collect()
}

pub fn read_jsonl(path: &Path) -> Vec<Value> {
    parse_jsonl(&std::fs::read_to_string(path).expect("cannot read output"))
}

/// `stderr` lines that report line `n` of `file` (`file:n:` prefix).
pub fn reports_for<'a>(stderr: &'a str, file: &str, n: usize) -> Vec<&'a str> {
    let prefix = format!("{file}:{n}:");
    stderr.lines().filter(|l| l.starts_with(&prefix)).collect()
}

/// Line numbers that `stderr` reports for `file` (`file:N:` prefixes), in order.
pub fn reported_lines(stderr: &str, file: &str) -> Vec<usize> {
    let prefix = format!("{file}:");
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|rest| rest.split(':').next()?.parse().ok())
        .collect()
}

/// Every queue policy of `schedule`.
pub const POLICIES: [&str; 8] = [
    "fcfs", "sjf", "saf", "ljf", "wfp3", "unicep", "f1", "random",
];

/// The deterministic priority rules of SPEC section 6.
pub const RULES: [&str; 7] = ["fcfs", "sjf", "saf", "ljf", "wfp3", "unicep", "f1"];

pub const FAMILIES: [&str; 3] = ["uniform", "hpc", "dl"];

/// A small deterministic SWF trace of 40 jobs on 8 processors (submits 20 s apart, run times 30
/// to 330 s, requests 20 s longer), written to `dir/t.swf`.
pub fn tiny_trace(dir: &Path) -> PathBuf {
    let mut text = String::from("; MaxProcs: 8\n");
    for i in 1..=40u64 {
        let (submit, run, procs) = (i * 20, 30 + (i * 17) % 300, 1 + (i * 3) % 8);
        text += &format!(
            "{i} {submit} -1 {run} {procs} -1 -1 {procs} {} -1 1 1 -1 -1 -1 -1 -1 -1\n",
            run + 20
        );
    }
    let trace = dir.join("t.swf");
    std::fs::write(&trace, text).unwrap();
    trace
}
