//! `schedlm finetune` trains a small GPT on generated records and `schedlm predict` answers
//! held-out records with valid orders (constrained decoding).

mod common;

use schedlm_dataset::testing::{compact_options, quick_solve, solved_records};
use schedlm_dataset::{parse_answer, render, Mode, Template};
use schedlm_generator::{Config, Family, Load};
use std::io::Write;
use std::path::Path;

use common::{path_str, read_jsonl, run, tempdir};

fn write_records(path: &Path, seed: u64, count: usize) -> Vec<schedlm_dataset::Record> {
    let mut config = Config::new(Family::Hpc, seed);
    (config.queue_min, config.queue_max, config.servers) = (3, 5, Some(1));
    config.load = Some(Load::Jobs(1));
    let records = solved_records(&config, count, &quick_solve(), &compact_options()).unwrap();
    let mut file = std::fs::File::create(path).unwrap();
    for r in &records {
        writeln!(file, "{}", serde_json::to_string(r).unwrap()).unwrap();
    }
    records
}

#[test]
fn finetune_then_predict_gives_valid_orders() {
    let dir = tempdir();
    let (train, test) = (
        dir.path().join("train.jsonl"),
        dir.path().join("test.jsonl"),
    );
    write_records(&train, 1, 16);
    let held_out = write_records(&test, 2, 6);
    let out = dir.path().join("run");
    let args = [
        "finetune",
        "--train",
        &path_str(&train),
        "--val",
        &path_str(&test),
        "--out",
        &path_str(&out),
        "--epochs",
        "2",
        "--layers",
        "1",
        "--width",
        "32",
        "--vocab",
        "600",
        "--context",
        "768",
        "--batch",
        "8",
        "--quiet",
    ];
    let r = run(&args).ok();
    assert!(r.stdout_text().contains("epoch   2"), "{}", r.stdout_text());
    assert!(out.join("model.safetensors").is_file() && out.join("tokenizer.json").is_file());

    let predictions = dir.path().join("predictions.jsonl");
    run(&[
        "predict",
        "--model",
        &path_str(&out),
        &path_str(&test),
        "-o",
        &path_str(&predictions),
        "--best-of",
        "2",
    ])
    .ok();
    let lines = read_jsonl(&predictions);
    assert_eq!(lines.len(), held_out.len());
    for (line, record) in lines.iter().zip(&held_out) {
        assert_eq!(line["id"], record.id.as_str());
        let text = line["output"].as_str().unwrap();
        let ids = render(
            &record.instance,
            record.objective,
            record.variant,
            Template::Compact,
        )
        .ids;
        assert!(
            parse_answer(text, &ids, &record.instance, Mode::Strict).is_ok(),
            "{text:?}"
        );
        assert!(line["best_of"].is_string() && line["tokens"].as_u64().unwrap() > 0);
    }
}

/// `finetune --targets values` trains on step records built with `--targets values`, and
/// refuses records without values.
#[test]
fn finetune_trains_on_values() {
    let dir = tempdir();
    let data = dir.path().join("data");
    let plain = dir.path().join("plain");
    let build = |out: &Path, values: bool| {
        let d = path_str(out);
        let mut args = vec![
            "dataset",
            "build",
            "-q",
            "-o",
            &d,
            "--family",
            "uniform",
            "-n",
            "6",
            "--queue",
            "3..5",
            "--records",
            "steps",
            "--template",
            "step-v2",
            "--split",
            "100/0/0",
        ];
        if values {
            args.extend(["--targets", "values", "--value-work-limit", "5k"]);
        }
        run(&args).ok();
    };
    build(&data, true);
    build(&plain, false);
    let finetune = |train: &Path, out: &Path| {
        let (t, o) = (path_str(&train.join("train.jsonl")), path_str(out));
        run(&[
            "finetune",
            "--train",
            &t,
            "--out",
            &o,
            "--targets",
            "values",
            "--temperature",
            "0.02",
            "--steps",
            "3",
            "--layers",
            "1",
            "--width",
            "32",
            "--vocab",
            "600",
            "--context",
            "768",
            "--eval-records",
            "0",
            "--quiet",
        ])
    };
    let out = dir.path().join("run");
    finetune(&data, &out).ok();
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("train_state.json")).unwrap())
            .unwrap();
    assert_eq!(state["options"]["value_temperature"], 0.02);
    let refused = finetune(&plain, &dir.path().join("run2")).failed();
    assert!(refused.stderr.contains("no record"), "{}", refused.stderr);
}
