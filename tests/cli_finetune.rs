//! `schedlm finetune` trains a small GPT on generated records and `schedlm predict` answers
//! held-out records with valid orders (constrained decoding).

mod common;

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use schedlm_dataset::{
    make_record, parse_answer, render, AnswerOrder, Mode, RecordOptions, SplitSpec, Template,
};
use schedlm_generator::{generate, Config, Family, Load};
use schedlm_model::{Objective, Problem, Variant};
use schedlm_solver::portfolio::{solve, SolveOptions};

use common::{path_str, read_jsonl, run, tempdir};

fn write_records(path: &Path, seed: u64, count: usize) -> Vec<schedlm_dataset::Record> {
    let mut config = Config::new(Family::Hpc, seed);
    (config.queue_min, config.queue_max, config.servers) = (3, 5, Some(1));
    config.load = Some(Load::Jobs(1));
    let options = RecordOptions {
        answer: AnswerOrder::Solver,
        template: Template::Compact,
        objective: Objective::Bsld,
        variant: Variant::Serial,
        plan: false,
        split: SplitSpec::default(),
    };
    let solve_options = SolveOptions {
        time_limit: Duration::from_millis(200),
        ..SolveOptions::default()
    };
    let mut file = std::fs::File::create(path).unwrap();
    let mut records = Vec::new();
    for (i, instance) in generate(&config, count).unwrap().iter().enumerate() {
        let problem = Problem::new(instance).unwrap();
        let solution = solve(&problem, &solve_options).unwrap();
        let r = make_record(
            i as u64, "hpc", instance, &problem, &solution, "auto", &options,
        )
        .unwrap();
        writeln!(file, "{}", serde_json::to_string(&r).unwrap()).unwrap();
        records.push(r);
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
