//! Field accuracy of `extract` on the real setups of `tests/data/knowledge/` against their
//! hand-written ground truth: every field the files determine must be found with its value, and
//! no field where the files are silent may be given a value.

use std::path::PathBuf;

use schedlm_knowledge::facts::Field;
use serde_json::Value;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/knowledge")
}

/// Numbers compare as numbers (1e-4 and 0.0001 are one value); a precision compares by the
/// type it names, as `extract` writes it (the truth keeps the files' spelling: `bfloat16` is
/// `bf16`, `float16` is `fp16`).
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
        _ => a == b || precision(a).is_some_and(|p| Some(p) == precision(b)),
    }
}

fn precision(value: &Value) -> Option<&'static str> {
    match value.as_str()?.to_ascii_lowercase().as_str() {
        "bf16" | "bfloat16" | "torch.bfloat16" => Some("bf16"),
        "fp16" | "float16" | "half" | "torch.float16" => Some("fp16"),
        _ => None,
    }
}

/// The field a truth file names (a name outside the vocabulary is a broken truth file).
fn field_of(name: &str) -> Field {
    name.parse()
        .unwrap_or_else(|e| panic!("truth names {name}: {e}"))
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
            match facts.json(field_of(field)).as_ref() {
                Some(found) if same(found, expected) => right += 1,
                Some(found) => {
                    problems.push(format!("{name}: {field} = {found}, truth {expected}"))
                }
                None => problems.push(format!("{name}: {field} missing, truth {expected}")),
            }
        }
        for field in truth["silent"].as_array().unwrap() {
            let field = field.as_str().unwrap();
            if let Some(fact) = facts.get(field_of(field)) {
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
/// What the log reader got right on the excerpts under `corpus()/logs` against
/// `corpus()/logs-truth`: (right, labelled fields, problems). `failure_line` is the line of the
/// failure fact's source; rates compare within 3 % (logs print them rounded).
fn score_logs() -> (usize, usize, Vec<String>) {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(corpus().join("logs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let (mut right, mut total) = (0, 0);
    let mut problems = Vec::new();
    for log in &logs {
        let name = log.file_name().unwrap().to_string_lossy().into_owned();
        let stem = log.file_stem().unwrap().to_string_lossy().into_owned();
        let truth_file = corpus().join("logs-truth").join(format!("{stem}.json"));
        let truth: Value =
            serde_json::from_str(&std::fs::read_to_string(truth_file).unwrap()).unwrap();
        let text = String::from_utf8_lossy(&std::fs::read(log).unwrap()).into_owned();
        let mut facts = schedlm_knowledge::JobFacts::default();
        schedlm_knowledge::logs::read_log(&name, &text, &mut facts);
        let found = |field: &str| -> Option<Value> {
            if field == "failure_line" {
                return match facts.get(Field::Failure)?.source {
                    schedlm_knowledge::facts::Source::Line { line, .. } => Some(Value::from(line)),
                    _ => None,
                };
            }
            facts.json(field_of(field))
        };
        for (field, expected) in truth["fields"].as_object().unwrap() {
            total += 1;
            let ok = match (found(field), field.as_str()) {
                (Some(f), "iterations_per_s") => match (f.as_f64(), expected.as_f64()) {
                    (Some(a), Some(b)) => (a - b).abs() <= 0.03 * b.abs(),
                    _ => false,
                },
                (Some(f), _) => same(&f, expected),
                (None, _) => false,
            };
            if ok {
                right += 1;
            } else {
                problems.push(format!(
                    "{name}: {field} = {:?}, truth {expected}",
                    found(field)
                ));
            }
        }
        for field in truth["silent"].as_array().unwrap() {
            let field = field.as_str().unwrap();
            if let Some(v) = found(field) {
                problems.push(format!("{name}: {field} invented: {v}"));
            }
        }
    }
    (right, total, problems)
}

/// Real log excerpts: progress and failure labels. First scored at 31/55 before the parser saw
/// them (docs/knowledge.md); held at 48/55 since, with no value invented where an excerpt is
/// silent; 50/57 since the time-limit class (issue #33) labelled one kill.
#[test]
fn log_excerpts() {
    let (right, total, problems) = score_logs();
    eprintln!(
        "log excerpts: {right}/{total} labelled fields right\n{}",
        problems.join("\n")
    );
    assert!(total >= 50, "{total} labelled fields");
    let invented: Vec<&String> = problems.iter().filter(|p| p.contains("invented")).collect();
    assert!(invented.is_empty(), "{invented:?}");
    assert!(
        right >= 48,
        "{right}/{total}: a regression\n{}",
        problems.join("\n")
    );
}

/// The second set (`heldout/`, 14 setups): scored once at 62 of 111 fields before the extractor
/// saw it (docs/knowledge.md), 100 of 114 since (two truths amended, see their notes; names
/// bound to literals, then the later sets' rules, 2026-11-26). Held as a floor, nothing
/// invented (`--train_batch_size=1` alone is now read per device, as the script documents it).
#[test]
fn held_out_setups() {
    hold_floor("heldout", 104, 0);
}

/// Scores the setups under `set` and fails below `floor` right fields or above `invented`
/// values invented where the files are silent.
fn hold_floor(set: &str, floor: usize, invented: usize) {
    let (right, total, problems) = score(set);
    eprintln!(
        "{set}: {right}/{total} determined fields right\n{}",
        problems.join("\n")
    );
    assert!(total >= 100, "{total} determined fields");
    let made_up: Vec<&String> = problems.iter().filter(|p| p.contains("invented")).collect();
    assert!(made_up.len() <= invented, "{made_up:?}");
    assert!(
        right >= floor,
        "{right}/{total}: a regression\n{}",
        problems.join("\n")
    );
}

/// The third set (`heldout3/`, 12 setups from 11 repositories none of the others came from),
/// collected and labelled by two passes that did not read the extractor: scored once at 48 of
/// 113 fields (42 %, nothing invented) before the extractor saw it, 77 of 113 then 85 (rules
/// general in form, written for what it showed: wrappers, interpreter options, launchers, key
/// names; docs/knowledge.md), a development score now. Held as a floor, nothing invented.
#[test]
fn third_held_out_set() {
    hold_floor("heldout3", 85, 0);
}

/// The fourth set (`heldout4/`, 12 setups from 12 repositories none of the others came from),
/// collected and labelled by a pass that did not read the extractor (2026-11-26): scored once at
/// 60 of 111 fields (54 %, three values invented) before the extractor saw it; 99 of 111
/// since, nothing invented (rules general in form, written for what it showed: docs/knowledge.md),
/// a development score now.
#[test]
fn fourth_held_out_set() {
    hold_floor("heldout4", 99, 0);
}

/// The fifth set (`heldout5/`, 12 setups from 12 repositories none of the others came from),
/// collected and labelled by a pass that did not read the extractor (2026-11-26), scored once
/// at 78 of 114 fields (68 %, three values invented) with the rules the fourth set had brought,
/// before the extractor saw it; 103 of 114 since, then 104 with the sixth set's rules, nothing
/// invented (rules general in form, written for what it showed: docs/knowledge.md). A
/// development score now.
#[test]
fn fifth_held_out_set() {
    hold_floor("heldout5", 104, 0);
}

/// The sixth set (`heldout6/`, 12 setups from 12 repositories none of the others came from),
/// collected and labelled by a pass that did not read the extractor (2026-11-26), scored once
/// at 90 of 137 fields (66 %, two values invented) with the rules the fifth set had brought,
/// before the extractor saw it; 117 of 137 since, nothing invented (docs/knowledge.md). A
/// development score now.
#[test]
fn sixth_held_out_set() {
    hold_floor("heldout6", 119, 0);
}

/// The seventh set (`heldout7/`, 12 setups from 11 repositories none of the others came from),
/// collected and labelled by a pass that did not read the extractor (2026-11-26), scored once
/// at 76 of 126 fields (60 %, one value invented) with the rules the sixth set had brought,
/// before the extractor saw it; 99 of 126 since, nothing invented (docs/knowledge.md). A
/// development score now.
#[test]
fn seventh_held_out_set() {
    hold_floor("heldout7", 99, 0);
}

/// The eighth set (`heldout8/`, 12 setups from 10 repositories none of the others came from),
/// collected and labelled by a pass that did not read the extractor (2026-11-26), scored once
/// at 59 of 117 fields (50 %, two values invented) with the rules the seventh set had brought,
/// before the extractor saw it; 76 of 117 since, nothing invented (docs/knowledge.md). A
/// development score now.
#[test]
fn eighth_held_out_set() {
    hold_floor("heldout8", 83, 0);
}

/// The ninth set (`heldout9/`, 12 setups from 10 repositories none of the others came from),
/// collected and labelled by a pass that did not read the extractor (2026-11-26), scored once
/// at 105 of 130 fields (81 %, one value invented) with the rules the eighth set had brought,
/// before the extractor saw it; 110 of 130 since, nothing invented (docs/knowledge.md). A
/// development score now.
#[test]
fn ninth_held_out_set() {
    hold_floor("heldout9", 112, 0);
}

/// The tenth set (`heldout10/`, 12 setups from 10 repositories none of the others came from),
/// collected and labelled by a pass that did not read the extractor (2026-11-26), scored once
/// at 65 of 112 fields (58 %, six values invented) with the rules the ninth set had brought,
/// before the extractor saw it; 73 of 112 since (`--use_env` is a switch), still six values
/// counted as invented, each a value the files write but the truth reads as not the job's (an
/// RL job's second model's rate and batch, a flag the script parses and never uses, a micro
/// batch over all GPUs, a main rate beside a text encoder's): docs/knowledge.md.
#[test]
fn tenth_held_out_set() {
    hold_floor("heldout10", 79, 3);
}

/// The text of every file under a setup directory.
fn setup_text(setup: &str) -> String {
    let mut text = String::new();
    let mut stack = vec![corpus().join(setup)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{setup}: {e}")) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                text.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
                text.push('\n');
            }
        }
    }
    text
}

/// Every row of the reader's tables names a setup of the corpus that shows it (the name, with
/// `_` or `-`, or the launcher's words, are in its files), or where the name is documented;
/// few rows rest on documentation alone.
#[test]
fn vocabulary_rows_are_shown_by_their_setups() {
    use schedlm_knowledge::vocabulary::{LAUNCHERS, NAMES};
    let mut documented = 0;
    for &(name, field, _, shown_by) in NAMES {
        if shown_by.starts_with("documented: ") {
            documented += 1;
            continue;
        }
        let text = setup_text(shown_by).to_ascii_lowercase();
        assert!(
            text.contains(name) || text.contains(&name.replace('_', "-")),
            "{name} ({field}): not in {shown_by}"
        );
    }
    for launcher in LAUNCHERS {
        if launcher.shown_by.starts_with("documented: ") {
            documented += 1;
            continue;
        }
        let text = setup_text(launcher.shown_by);
        let words = launcher
            .words
            .iter()
            .filter(|w| **w != "python" && **w != "-m");
        for word in words {
            assert!(text.contains(word), "{word}: not in {}", launcher.shown_by);
        }
    }
    assert!(
        documented <= 5,
        "{documented} rows rest on documentation alone"
    );
}

/// The eleventh set (`heldout11/`, 13 setups from 13 repositories none of the others came
/// from), collected and labelled by a pass that did not read the extractor (2026-11-27), scored
/// once after the redesign of issue #33 (typed fields, one shell interpreter, vocabularies as
/// data, one precedence module) before the extractor saw it: 78 of 130 determined fields right
/// (60 %), 7 wrong, 45 missed, 4 values invented. 79 since (a backquoted command's words are no
/// longer read as the command's). A development score now; held as a floor.
#[test]
fn eleventh_held_out_set() {
    hold_floor("heldout11", 79, 3);
}
