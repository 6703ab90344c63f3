//! A record written in one form (`messages`, or `prompt` and `completion`) reads back as the
//! record with both, for every template, with and without the plan line, and for step records:
//! no reader can tell which form a file was written in.

use schedlm_dataset::record::step_records;
use schedlm_dataset::testing::{compact_options, quick_solve, solved};
use schedlm_dataset::{make_record, AnswerOrder, Record, RecordFormat, RecordOptions, Template};
use schedlm_generator::{Config, Family};

fn records() -> Vec<Record> {
    let mut out = Vec::new();
    for family in [Family::Hpc, Family::Dl, Family::Uniform] {
        let mut config = Config::new(family, 3);
        (config.queue_min, config.queue_max) = (3, 6);
        for (i, (instance, problem, solution)) in solved(&config, 2, &quick_solve())
            .unwrap()
            .iter()
            .enumerate()
        {
            for template in Template::ALL {
                for plan in [false, true] {
                    let options = RecordOptions {
                        answer: AnswerOrder::Canonical,
                        template,
                        plan,
                        ..compact_options()
                    };
                    let r = make_record(
                        i as u64,
                        family.name(),
                        instance,
                        problem,
                        solution,
                        "auto",
                        &options,
                    )
                    .unwrap();
                    if template == Template::CompactV2 && !plan {
                        out.extend(step_records(&r, problem).unwrap());
                    }
                    out.push(r);
                }
            }
        }
    }
    out
}

#[test]
fn each_form_reads_back_as_the_whole_record() {
    for original in records() {
        for format in [RecordFormat::Messages, RecordFormat::PromptCompletion] {
            let line = serde_json::to_string(&original.clone().into_format(format)).unwrap();
            let value: serde_json::Value = serde_json::from_str(&line).unwrap();
            let has = |key: &str| value.get(key).is_some();
            match format {
                RecordFormat::Messages => {
                    assert!(has("messages") && !has("prompt") && !has("completion"))
                }
                _ => assert!(!has("messages") && has("prompt") && has("completion")),
            }
            let mut read: Record = serde_json::from_str(&line).unwrap();
            read.fill_forms().unwrap();
            assert_eq!(
                read,
                original,
                "{} ({}, {})",
                original.id,
                original.template,
                format.name()
            );
        }
    }
}

#[test]
fn a_record_without_either_form_is_refused() {
    let mut r = records().remove(0).into_format(RecordFormat::Messages);
    r.messages.clear();
    let err = r.fill_forms().unwrap_err();
    assert!(err.contains("neither"), "{err}");
}
