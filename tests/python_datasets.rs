//! The dataset format is accepted as is by Hugging Face `datasets` (when Python has it; CI
//! installs it with pip in scripts/setup.sh).

mod common;

use std::process::Command;

use common::{path_str, run, tempdir};

fn python_has_datasets() -> bool {
    Command::new("python3")
        .args(["-c", "import datasets"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn hugging_face_datasets_loads_a_built_set() {
    if !python_has_datasets() {
        eprintln!(
            "skipped: python3 with the `datasets` package is not installed (pip install datasets)"
        );
        return;
    }
    let dir = tempdir();
    let out = dir.path().join("ds");
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
        "-o",
        &path_str(&out),
    ])
    .ok();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/check_dataset.py");
    let output = Command::new("python3")
        .args([script, &path_str(&out)])
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", path_str(&dir.path().join("hf")))
        .output()
        .expect("cannot run python3");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "datasets refused the files:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.starts_with("ok"), "{stdout}");
    eprintln!("{stdout}");
}
