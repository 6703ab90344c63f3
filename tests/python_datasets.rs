//! The dataset format is accepted as is by Hugging Face `datasets`, and TRL's SFTTrainer
//! fine-tunes a tiny model on both `--format`s with the answer and the end-of-sequence token in
//! the loss (when Python has them; scripts/setup-tests.sh installs them with pip).

mod common;

use std::process::Command;

use common::{path_str, run, tempdir};

fn python_has(module: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn trl_fine_tunes_on_both_formats() {
    if !python_has("trl") {
        schedlm_model::skips::skip(
            "trl",
            "python3 with `trl` is not installed (scripts/setup-tests.sh installs it)",
        );
        return;
    }
    let dir = tempdir();
    for format in ["messages", "prompt-completion"] {
        let out = dir.path().join(format);
        build(&out, format);
        let stdout = python(&dir.path().join("hf"), "check_trl.py", &out);
        let ok = format!("ok {format} ");
        assert!(stdout.lines().any(|l| l.starts_with(&ok)), "{stdout}");
    }
}

#[test]
fn hugging_face_datasets_loads_a_built_set() {
    if !python_has("datasets") {
        schedlm_model::skips::skip(
            "datasets",
            "python3 with the `datasets` package is not installed (pip install datasets)",
        );
        return;
    }
    let dir = tempdir();
    for format in ["messages", "prompt-completion"] {
        let out = dir.path().join(format);
        build(&out, format);
        check(&dir.path().join("hf"), &out);
    }
}

/// Builds a small data set of every family in `format` into `out`.
fn build(out: &std::path::Path, format: &str) {
    // Every family (dl has `meta`), dependencies and weights vary between rows.
    run(&[
        "dataset",
        "build",
        "-q",
        "-n",
        "60",
        "--family",
        "hpc,dl,uniform",
        "--queue",
        "3..6",
        "--deps",
        "0.3",
        "--split",
        "50/25/25",
        "--format",
        format,
        "-o",
        &path_str(out),
    ])
    .ok();
}

/// Loads `out` with `datasets` through tests/python/check_dataset.py.
fn check(hf_home: &std::path::Path, out: &std::path::Path) {
    let stdout = python(hf_home, "check_dataset.py", out);
    assert!(stdout.starts_with("ok"), "{stdout}");
}

/// Runs tests/python/SCRIPT on `out` offline; its standard output, after checking it exited 0.
fn python(hf_home: &std::path::Path, script: &str, out: &std::path::Path) -> String {
    let script = format!("{}/tests/python/{script}", env!("CARGO_MANIFEST_DIR"));
    let output = Command::new("python3")
        .args([&script, &path_str(out)])
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", path_str(hf_home))
        .env("TOKENIZERS_PARALLELISM", "false")
        .output()
        .expect("cannot run python3");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{script} failed on {}:\n{stdout}\n{}",
        out.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!("{stdout}");
    stdout
}
