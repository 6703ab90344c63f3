//! Field accuracy of `extract` on the real setups of `tests/data/knowledge/` against their
//! hand-written ground truth: every field the files determine must be found with its value, and
//! no field where the files are silent may be given a value.

use std::path::PathBuf;

use serde_json::Value;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/knowledge")
}

/// Numbers compare as numbers (1e-4 and 0.0001 are one value).
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
        _ => a == b,
    }
}

/// What `extract` got right on the setups under `corpus()/set`: (right, determined fields,
/// problems).
fn score(set: &str) -> (usize, usize, Vec<String>) {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus().join(set))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let (mut right, mut total) = (0, 0);
    let mut problems = Vec::new();
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        // The truth lies outside the setup: `extract` reads every JSON file of the directory.
        let truth_file = corpus().join("truth").join(format!("{name}.json"));
        let truth: Value =
            serde_json::from_str(&std::fs::read_to_string(truth_file).unwrap()).unwrap();
        let extraction = schedlm_knowledge::extract(dir, None, &[]).unwrap();
        assert!(
            extraction.read.iter().all(|f| !f.contains("truth")),
            "{name}: the ground truth was read: {:?}",
            extraction.read
        );
        let facts = extraction.facts;
        for (field, expected) in truth["fields"].as_object().unwrap() {
            total += 1;
            match facts.value(field) {
                Some(found) if same(found, expected) => right += 1,
                Some(found) => {
                    problems.push(format!("{name}: {field} = {found}, truth {expected}"))
                }
                None => problems.push(format!("{name}: {field} missing, truth {expected}")),
            }
        }
        for field in truth["silent"].as_array().unwrap() {
            let field = field.as_str().unwrap();
            if let Some(fact) = facts.get(field) {
                problems.push(format!(
                    "{name}: {field} invented: {} from {}",
                    fact.value, fact.source
                ));
            }
        }
    }
    (right, total, problems)
}

#[test]
fn every_determined_field_is_found_and_nothing_is_invented() {
    let (right, total, problems) = score("setups");
    assert!(total >= 100, "{total} determined fields");
    eprintln!("knowledge corpus: {right}/{total} determined fields right");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
