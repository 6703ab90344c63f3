//! Small solved datasets for eval's tests and its demo example.
#![allow(dead_code)]

use std::path::Path;

use schedlm_dataset::testing::{compact_options, quick_solve, solved_records};
use schedlm_dataset::Record;
use schedlm_generator::{Config, Family};

/// `n` solved records of `family` with queues of 3 to 9 jobs (deterministic: node limit).
pub fn records(family: Family, n: usize, seed: u64) -> Vec<Record> {
    let mut config = Config::new(family, seed);
    (config.queue_min, config.queue_max) = (3, 9);
    solved_records(&config, n, &quick_solve(), &compact_options()).expect("solved records")
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
