//! Small solved datasets for eval's tests and its demo example.
#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use schedlm_dataset::{make_record, AnswerOrder, Record, RecordOptions, SplitSpec, Template};
use schedlm_generator::{generate, Config, Family};
use schedlm_model::{Objective, Problem, Variant};
use schedlm_solver::portfolio::{solve, SolveOptions};

/// `n` solved records of `family` with queues of 3 to 9 jobs (deterministic: node limit).
pub fn records(family: Family, n: usize, seed: u64) -> Vec<Record> {
    let mut config = Config::new(family, seed);
    config.queue_min = 3;
    config.queue_max = 9;
    let options = RecordOptions {
        answer: AnswerOrder::Solver,
        template: Template::Compact,
        objective: Objective::Bsld,
        variant: Variant::Serial,
        plan: false,
        split: SplitSpec::default(),
    };
    let solve_options = SolveOptions {
        time_limit: Duration::from_secs(60),
        node_limit: Some(50_000),
        ..SolveOptions::default()
    };
    generate(&config, n)
        .expect("generator config")
        .iter()
        .enumerate()
        .map(|(i, instance)| {
            let problem = Problem::new(instance).expect("generated instance");
            let solution = solve(&problem, &solve_options).expect("solve");
            make_record(
                i as u64,
                family.name(),
                instance,
                &problem,
                &solution,
                "auto",
                &options,
            )
            .expect("record")
        })
        .collect()
}

/// Eight hpc and four dl records; the last one's label is made unproven with a bound 10%
/// below its value, so reports have both kinds of reference.
pub fn mixed() -> Vec<Record> {
    let mut all = records(Family::Hpc, 8, 11);
    all.extend(records(Family::Dl, 4, 12));
    if let Some(last) = all.last_mut() {
        last.proven_optimal = false;
        last.status = "time_limit".into();
        last.lower_bound = last.value * 0.9;
    }
    all
}

/// Writes records as JSON Lines.
pub fn write_records(path: &Path, records: &[Record]) {
    let text: String = records
        .iter()
        .map(|r| serde_json::to_string(r).expect("record json") + "\n")
        .collect();
    std::fs::write(path, text).expect("write records");
}

/// A predictions file for `records`: the label for even positions, a reversed label for
/// positions 1 mod 4, garbage for 3 mod 4, and no line for the last record; plus one line for
/// a record that is not in the data.
pub fn predictions(records: &[Record]) -> String {
    let mut out = String::new();
    for (i, r) in records
        .iter()
        .enumerate()
        .take(records.len().saturating_sub(1))
    {
        let output = match i % 4 {
            0 | 2 => r.completion.clone(),
            1 => {
                let ids: Vec<&str> = r.completion.split_whitespace().rev().collect();
                ids.join(" ")
            }
            _ => "I would run the big job first, obviously.".to_string(),
        };
        let line = serde_json::json!({"id": r.id, "output": output, "best_of": r.completion});
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out.push_str("{\"id\": \"not-in-data\", \"output\": \"J1\"}\n");
    out
}
