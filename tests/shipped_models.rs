//! The models shipped in `models/` load with this build and answer snapshots of the kind they
//! were trained on with valid orders (the recipes and figures are in each one's README and in
//! docs/learning.md); each stays within the 20 MB that issue #11 allows.

mod common;

use std::path::{Path, PathBuf};

use common::{path_str, read_jsonl, run, tempdir};

const TRACES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data/traces");

fn model_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models")
        .join(name)
}

/// Predicts every record of `data/test.jsonl` with `model` (with `extra` arguments) and checks
/// each answer is valid.
fn answers_validly(model: &Path, data: &Path, extra: &[&str]) {
    let bytes = std::fs::metadata(model.join("model.safetensors"))
        .unwrap()
        .len();
    assert!(bytes <= 20 << 20, "{}: {bytes} bytes", model.display());
    let out = data.join("p.jsonl");
    let (m, d, o) = (
        path_str(model),
        path_str(&data.join("test.jsonl")),
        path_str(&out),
    );
    let mut args = vec!["predict", "--model", &m, &d, "-o", &o];
    args.extend_from_slice(extra);
    let r = run(&args).ok();
    let n = read_jsonl(&out).len();
    assert!(n >= 3, "{n} predictions");
    assert!(
        r.stderr.contains(&format!("{n} greedy answers valid")),
        "{}",
        r.stderr
    );
}

#[test]
fn b1_uniform_answers_uniform_snapshots() {
    let dir = tempdir();
    let data = dir.path().join("ds");
    run(&[
        "dataset",
        "build",
        "-q",
        "--family",
        "uniform",
        "-n",
        "4",
        "--queue",
        "6..8",
        "--seed",
        "99",
        "--split",
        "0/0/100",
        "-o",
        &path_str(&data),
    ])
    .ok();
    answers_validly(&model_dir("b1-uniform"), &data, &[]);
    // Its claim is validity without the constraint (99.5% on 600 unseen instances).
    answers_validly(&model_dir("b1-uniform"), &data, &["--unconstrained"]);
}

#[test]
fn b2_sites_answers_hpc2n_snapshots() {
    let trace = Path::new(TRACES).join("HPC2N-2002-2.2-cln.swf.gz");
    let dir = tempdir();
    let snaps = dir.path().join("snaps.jsonl");
    run(&[
        "generate",
        "--from-trace",
        &path_str(&trace),
        "--policy",
        "fcfs",
        "--start-rule",
        "easy",
        "--sample",
        "40",
        "-n",
        "4",
        "--queue",
        "6..8",
        "--seed",
        "23",
        "-o",
        &path_str(&snaps),
    ])
    .ok();
    let data = dir.path().join("ds");
    run(&[
        "dataset",
        "build",
        "-q",
        "--from",
        &path_str(&snaps),
        "--split",
        "0/0/100",
        "-o",
        &path_str(&data),
    ])
    .ok();
    answers_validly(&model_dir("b2-sites"), &data, &[]);
}
