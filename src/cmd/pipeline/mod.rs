//! `schedlm pipeline`: the main job on embedded defaults. Generate snapshots of every family,
//! schedule them with every priority rule, solve them (bsld) with the `auto` portfolio, and
//! print a comparison table with each rule's gap to the proven optimum. Then the learning loop
//! on a small scale, through the same commands a user runs: `dataset build`, `finetune` (a tiny
//! GPT from scratch), and `eval` of rules, local search, the optimum and the model on the
//! held-out split, which writes the report. Last, the models the project ships for `uniform`
//! 16..20 (`models/b7-uniform`, a step scorer trained on action values, and
//! `models/b4-uniform`, a step GPT; each with the command that made it, docs/learning.md) on
//! snapshots of their training range that they never saw, against the best rule per instance,
//! `ect` and local search in the same time, in a second report.

use std::path::Path;

use anyhow::{Context, Result};
use clap::Parser;
use schedlm_generator::{generate, Config, Family, Shape};
use schedlm_model::Problem;
use schedlm_solver::compare::compare;

use crate::cmd::Cli;
use crate::io::{create_output, write_jsonl};

mod args;
pub use args::PipelineArgs;

const FAMILIES: [Family; 3] = [Family::Uniform, Family::Hpc, Family::Dl];

/// Queue lengths of the learning loop's dataset: where `uniform` snapshots leave headroom
/// over the best rule per instance (docs/learning.md, "Headroom").
const DATA_QUEUE: &str = "10..12";

/// The models shipped with the source, best first (docs/learning.md), each with the file
/// that must be there and what it is.
const SHIPPED_MODELS: [(&str, &str, &str); 2] = [
    (
        concat!(env!("CARGO_MANIFEST_DIR"), "/models/b7-uniform"),
        "scorer.safetensors",
        "the best shipped model (B7), a step scorer: a small network over each candidate's \
         numbers, trained on action values in minutes; it leaves the earliest-completion \
         listing where that costs, and beats `ect`",
    ),
    (
        concat!(env!("CARGO_MANIFEST_DIR"), "/models/b4-uniform"),
        "model.safetensors",
        "a step GPT (B4) trained for an hour on step-v2 labels; greedy, it answers as the \
         earliest-completion rule `ect` does",
    ),
];

/// The shipped models' training range (their unseen snapshots use generator seed 99; their
/// training data is seed 11).
const SHIPPED_QUEUE: &str = "16..20";

pub fn run(args: &PipelineArgs) -> Result<()> {
    outln!(
        "schedlm pipeline: {} snapshots per family, queues of {}..{} jobs, seed {}, serial dispatcher;",
        args.count, args.queue.min, args.queue.max, args.seed
    )?;
    outln!(
        "optimal = the `auto` solver on bsld, {} units of work per snapshot; gap = (value - proven lower bound) / bound;",
        crate::args::WorkLimit(Some(args.work_limit))
    )?;
    outln!(
        "brpi = the best rule per instance (the lowest bsld of the classic rules on each snapshot): its gap is the headroom a model can win"
    )?;
    for family in FAMILIES {
        let config = Config::shaped(
            family,
            args.queue.min,
            args.queue.max,
            args.seed,
            &Shape::default(),
        );
        let instances =
            generate(&config, args.count as usize).context("cannot generate snapshots")?;
        let problems: Vec<Problem> = instances
            .iter()
            .map(Problem::new)
            .collect::<Result<_, _>>()?;
        let table = compare(family.name(), &problems, args.seed, args.work_limit)?;
        out!("\n{table}")?;
        if !args.table_only {
            let path = args.out.join(format!("{}.jsonl", family.name()));
            write_jsonl(&mut create_output(Some(&path))?, &instances)?;
        }
    }
    if args.table_only {
        return Ok(());
    }
    outln!("\nsnapshots written under {}", args.out.display())?;
    learn(args)
}

/// A command line: the template's words with each `{name}` in them replaced by its value
/// (split before the values go in, so paths may hold spaces).
fn command(template: &str, values: &[(&str, String)]) -> Vec<String> {
    let fill = |word: &str| {
        let fill = |w: String, (k, v): &(&str, String)| w.replace(&format!("{{{k}}}"), v);
        values.iter().fold(word.to_string(), fill)
    };
    template.split_whitespace().map(fill).collect()
}

/// Builds a dataset, trains a tiny model on it and evaluates it against the rules and the
/// optimum, by running the subcommands with these arguments; then the shipped models.
fn learn(args: &PipelineArgs) -> Result<()> {
    let shipped: Vec<(&Path, &str)> = shipped_models(args)?;
    let models = shipped
        .iter()
        .map(|(d, _)| format!(",model:{}", d.display()));
    let out = args.out.display().to_string();
    let values = [
        ("seed", args.seed.to_string()),
        ("queue", DATA_QUEUE.to_string()),
        ("shipped_queue", SHIPPED_QUEUE.to_string()),
        ("count", args.train_count.to_string()),
        ("epochs", args.epochs.to_string()),
        ("shipped_count", args.shipped_count.to_string()),
        ("work", args.work_limit.to_string()),
        ("models", models.collect()),
        ("out", out.clone()),
    ];
    let steps = if shipped.is_empty() {
        &STEPS[..3]
    } else {
        &STEPS[..]
    };
    for (what, template) in steps {
        let argv = command(template, &values);
        outln!("\n== {what}: schedlm {}", argv.join(" "))?;
        let cli = Cli::try_parse_from(std::iter::once("schedlm".to_string()).chain(argv))
            .map_err(|e| anyhow::anyhow!("pipeline step `{what}`: {e}"))?;
        super::run(cli).with_context(|| format!("pipeline step `{what}`"))?;
    }
    let model = args.out.join("model");
    outln!(
        "\nthe models:\n- {}: the quick model, a tiny GPT trained here from scratch for {} \
         epoch(s) on uniform {DATA_QUEUE} snapshots; it shows the loop, not what a model can learn",
        model.display(),
        args.epochs
    )?;
    for (dir, what) in &shipped {
        outln!(
            "- {}: {what}; trained on uniform {SHIPPED_QUEUE} snapshots, evaluated on unseen \
             ones of that range (docs/learning.md)",
            dir.display()
        )?;
    }
    let report = args.out.join("report");
    outln!(
        "\nreport: {}/report.html (and report.md, summary.json, instances.csv)",
        report.display()
    )?;
    if !shipped.is_empty() {
        outln!("shipped model's report: {out}/shipped-report/report.html")?;
    }
    Ok(())
}

/// The shipped models that are there (none with --shipped-count 0), each with what it is.
fn shipped_models(args: &PipelineArgs) -> Result<Vec<(&'static Path, &'static str)>> {
    let mut shipped = Vec::new();
    if args.shipped_count == 0 {
        return Ok(shipped);
    }
    for (dir, file, what) in SHIPPED_MODELS {
        if Path::new(dir).join(file).exists() {
            shipped.push((Path::new(dir), what));
        } else {
            outln!("\nnote: the shipped model {dir} is not there; it is left out")?;
        }
    }
    Ok(shipped)
}

/// The learning loop's commands; the last two evaluate the shipped models on snapshots of
/// their training range that they never saw, against SJF, `ect`, the best rule per instance
/// (always in a report) and local search in each model's own time (added by `eval`).
const STEPS: [(&str, &str); 5] = [
    (
        "building the dataset",
        concat!(
            "dataset build --family uniform --queue {queue} --count {count} --split 75/5/20 ",
            "--seed {seed} -o {out}/data"
        ),
    ),
    (
        "training a tiny GPT from scratch",
        concat!(
            "finetune --model gpt-tiny --train {out}/data/train.jsonl --val {out}/data/val.jsonl ",
            "--epochs {epochs} --lr 2e-3 --seed {seed} --out {out}/model"
        ),
    ),
    (
        "evaluating on the test split",
        concat!(
            "eval --data {out}/data/test.jsonl --policies ",
            "fcfs,sjf,saf,f1,wfp3,unicep,ljf,ect,ls,optimal,model:{out}/model --seed {seed} ",
            "--out {out}/report"
        ),
    ),
    (
        "building unseen snapshots in the shipped models' range",
        concat!(
            "dataset build --family uniform --queue {shipped_queue} --count {shipped_count} ",
            "--split 0/0/100 --seed 99 --work-limit {work} -o {out}/shipped-data"
        ),
    ),
    (
        "evaluating the shipped models",
        concat!(
            "eval --data {out}/shipped-data/test.jsonl --policies sjf,ect{models} --seed {seed} ",
            "--out {out}/shipped-report"
        ),
    ),
];

#[cfg(test)]
mod tests {
    use super::command;

    #[test]
    fn a_template_is_split_before_its_values_go_in() {
        let values = [("out", "my runs".to_string()), ("seed", "7".to_string())];
        let argv = command(
            "eval --data {out}/data/test.jsonl --seed {seed} -o {out}",
            &values,
        );
        assert_eq!(
            argv,
            [
                "eval",
                "--data",
                "my runs/data/test.jsonl",
                "--seed",
                "7",
                "-o",
                "my runs"
            ]
        );
    }
}
