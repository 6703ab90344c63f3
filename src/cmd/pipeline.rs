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

use clap::Args;
use std::path::Path;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;
use rayon::prelude::*;
use schedlm_generator::Family;
use schedlm_model::{Objective, Objectives, Problem, Variant};
use schedlm_solver::portfolio::{self, relative_gap, Solution, SolveOptions};
use schedlm_solver::rules::{Rule, RuleContext};

use super::generate::snapshots;
use super::schedule::schedule_with;
use crate::args::QueueRange;
use crate::cmd::Cli;
use crate::io::{create_output, write_jsonl};

#[derive(Debug, Args)]
pub struct PipelineArgs {
    /// Snapshots per family (at least 1).
    #[arg(long, short = 'n', default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: u64,

    /// Queue length range of the snapshots (inclusive).
    #[arg(long, default_value = "8..12")]
    pub queue: QueueRange,

    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Counted work of the optimal solver per snapshot (units of `schedlm_solver::work`,
    /// about 2 CPU seconds at the default): the table is the same on every machine.
    #[arg(long, value_parser = crate::args::parse_work,
          default_value_t = schedlm_solver::work::DEFAULT_DATASET_WORK)]
    pub work_limit: u64,

    /// Directory that receives everything the pipeline makes: the snapshots of the table
    /// (`<family>.jsonl`), the dataset (`data/`), the trained model (`model/`) and the report
    /// (`report/report.html`, `report.md`, `summary.json`, `instances.csv`).
    #[arg(
        visible_alias = "output",
        long,
        short = 'o',
        default_value = "schedlm-out"
    )]
    pub out: PathBuf,

    /// Stop after the comparison table (nothing is written).
    #[arg(long)]
    pub table_only: bool,

    /// Snapshots of the dataset the tiny model is trained on and evaluated on: family
    /// `uniform`, queues of 10..12 jobs, where the best rule per instance leaves headroom (about
    /// 1.7% above the optimum on average, and the label is the prompt's ranking on about a fifth
    /// of the records; docs/learning.md); 75/5/20 split.
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u64).range(20..))]
    pub train_count: u64,

    /// Training epochs of the tiny GPT.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub epochs: u64,

    /// Snapshots the shipped step model is evaluated on: `uniform`, queues of 16..20 jobs (its
    /// training range), generator seed 99 (its training data is seed 11); 0 leaves it out.
    #[arg(long, default_value_t = 30)]
    pub shipped_count: u64,
}

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

/// The shipped model's training range, and a generator seed its data never used.
const SHIPPED_QUEUE: &str = "16..20";
const SHIPPED_SEED: &str = "99";

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
        let instances = snapshots(family, args.count as usize, args.queue, args.seed)?;
        let problems: Vec<Problem> = instances
            .iter()
            .map(Problem::new)
            .collect::<Result<_, _>>()?;
        // results[i][r]: objectives of instance i under rule r; optimal[i]: its bsld solution.
        let results: Vec<(Vec<Objectives>, Solution)> = problems
            .par_iter()
            .enumerate()
            .map(|(i, p)| {
                let ctx = RuleContext {
                    seed: args.seed,
                    stream: i as u64,
                    ..RuleContext::default()
                };
                let rules = Rule::ALL
                    .iter()
                    .map(|&rule| {
                        Objectives::of(p, &schedule_with(rule, p, Variant::Serial, &ctx).start)
                    })
                    .collect();
                let options = SolveOptions {
                    work_limit: Some(args.work_limit),
                    time_limit: None,
                    seed: args.seed,
                    ..SolveOptions::default()
                };
                let best = portfolio::solve(p, &options)
                    .map_err(|e| anyhow::anyhow!("snapshot {i}: {e}"))?;
                Ok((rules, best))
            })
            .collect::<Result<_>>()?;
        print_table(family, &results)?;
        if !args.table_only {
            write_family(&args.out, family, &instances)?;
        }
    }
    if args.table_only {
        return Ok(());
    }
    outln!("\nsnapshots written under {}", args.out.display())?;
    learn(args)
}

/// Builds a dataset, trains a tiny model on it and evaluates it against the rules and the
/// optimum, by running the subcommands with these arguments.
fn learn(args: &PipelineArgs) -> Result<()> {
    let out = |p: &str| args.out.join(p).display().to_string();
    let (data, model, report) = (out("data"), out("model"), out("report"));
    let seed = args.seed.to_string();
    let policies = format!("fcfs,sjf,saf,f1,wfp3,unicep,ljf,ect,ls,optimal,model:{model}");
    let mut steps: Vec<(&str, Vec<String>)> = vec![
        (
            "building the dataset",
            strings(&[
                "dataset",
                "build",
                "--family",
                "uniform",
                "--queue",
                DATA_QUEUE,
                "--count",
                &args.train_count.to_string(),
                "--split",
                "75/5/20",
                "--seed",
                &seed,
                "-o",
                &data,
            ]),
        ),
        (
            "training a tiny GPT from scratch",
            strings(&[
                "finetune",
                "--model",
                "gpt-tiny",
                "--train",
                &format!("{data}/train.jsonl"),
                "--val",
                &format!("{data}/val.jsonl"),
                "--epochs",
                &args.epochs.to_string(),
                "--lr",
                "2e-3",
                "--seed",
                &seed,
                "--out",
                &model,
            ]),
        ),
        (
            "evaluating on the test split",
            strings(&[
                "eval",
                "--data",
                &format!("{data}/test.jsonl"),
                "--policies",
                &policies,
                "--seed",
                &seed,
                "--out",
                &report,
            ]),
        ),
    ];
    let (shipped_data, shipped_report) = (out("shipped-data"), out("shipped-report"));
    let mut shipped = Vec::new();
    if args.shipped_count > 0 {
        for (dir, file, what) in SHIPPED_MODELS {
            if Path::new(dir).join(file).exists() {
                shipped.push((Path::new(dir), what));
            } else {
                outln!("\nnote: the shipped model {dir} is not there; it is left out")?;
            }
        }
    }
    let with_shipped = !shipped.is_empty();
    if with_shipped {
        let dirs: Vec<&Path> = shipped.iter().map(|s| s.0).collect();
        steps.extend(shipped_steps(args, &dirs, &shipped_data, &shipped_report));
    }
    for (what, argv) in steps {
        outln!("\n== {what}: schedlm {}", argv.join(" "))?;
        let cli = Cli::try_parse_from(std::iter::once("schedlm".to_string()).chain(argv))
            .map_err(|e| anyhow::anyhow!("pipeline step `{what}`: {e}"))?;
        super::run(cli).with_context(|| format!("pipeline step `{what}`"))?;
    }
    outln!("\nthe models:")?;
    outln!(
        "- {model}: the quick model, a tiny GPT trained here from scratch for {} epoch(s) on \
         uniform {DATA_QUEUE} snapshots; it shows the loop, not what a model can learn",
        args.epochs
    )?;
    for (dir, what) in &shipped {
        outln!(
            "- {}: {what}; trained on uniform {SHIPPED_QUEUE} snapshots, evaluated on unseen \
             ones of that range (docs/learning.md)",
            dir.display()
        )?;
    }
    outln!(
        "\nreport: {}/report.html (and report.md, summary.json, instances.csv)",
        report
    )?;
    if with_shipped {
        outln!("shipped model's report: {shipped_report}/report.html")?;
    }
    Ok(())
}

/// The steps that evaluate the shipped models on snapshots of their training range that they
/// never saw: the best rule per instance (always in a report), SJF, `ect`, and local search in
/// each model's own time per snapshot (added by `eval` for every model).
fn shipped_steps<'a>(
    args: &PipelineArgs,
    shipped: &[&Path],
    data: &str,
    report: &str,
) -> [(&'a str, Vec<String>); 2] {
    [
        (
            "building unseen snapshots in the shipped models' range",
            strings(&[
                "dataset",
                "build",
                "--family",
                "uniform",
                "--queue",
                SHIPPED_QUEUE,
                "--count",
                &args.shipped_count.to_string(),
                "--split",
                "0/0/100",
                "--seed",
                SHIPPED_SEED,
                "--work-limit",
                &args.work_limit.to_string(),
                "-o",
                data,
            ]),
        ),
        (
            "evaluating the shipped models",
            strings(&[
                "eval",
                "--data",
                &format!("{data}/test.jsonl"),
                "--policies",
                &std::iter::once("sjf,ect".to_string())
                    .chain(shipped.iter().map(|d| format!("model:{}", d.display())))
                    .collect::<Vec<_>>()
                    .join(","),
                "--seed",
                &args.seed.to_string(),
                "--out",
                report,
            ]),
        ),
    ]
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn print_table(family: Family, results: &[(Vec<Objectives>, Solution)]) -> Result<()> {
    let n = results.len() as f64;
    let proven = results.iter().filter(|(_, s)| s.proven_optimal).count();
    outln!()?;
    outln!(
        "family {} ({} snapshots, {} with a proven optimum): mean of each objective, lower is better",
        family.name(),
        results.len(),
        proven
    )?;
    outln!(
        "{:<8} {:>10} {:>10} {:>10} {:>10} {:>12} {:>12}",
        "rule",
        "bsld",
        "wait [s]",
        "flow [s]",
        "makespan",
        "bsld gap",
        "best bsld"
    )?;
    for (r, rule) in Rule::ALL.iter().enumerate() {
        let mean = |o: Objective| results.iter().map(|(row, _)| row[r].get(o)).sum::<f64>() / n;
        // Mean gap of this rule's bsld to the optimum's lower bound (SPEC section 4).
        let gap = results
            .iter()
            .map(|(row, s)| relative_gap(row[r].bsld, s.lower_bound))
            .sum::<f64>()
            / n;
        // Share of snapshots where this rule reaches the lowest bsld of all rules.
        let best = results
            .iter()
            .filter(|(row, _)| {
                let min = row.iter().map(|o| o.bsld).fold(f64::INFINITY, f64::min);
                row[r].bsld <= min
            })
            .count() as f64
            / n;
        outln!(
            "{:<8} {:>10.3} {:>10.0} {:>10.0} {:>10.0} {:>11.2}% {:>11.0}%",
            rule.name(),
            mean(Objective::Bsld),
            mean(Objective::Wait),
            mean(Objective::Flow),
            mean(Objective::Makespan),
            100.0 * gap,
            100.0 * best
        )?;
    }
    // The best rule per instance: on each snapshot the classic rule with the lowest bsld (the
    // ranking a compact-v2 prompt lists); its gap is the headroom a model can win.
    let brpi: Vec<f64> = results
        .iter()
        .map(|(row, _)| {
            Rule::ALL
                .iter()
                .zip(row)
                .filter(|(r, _)| Rule::CLASSIC.contains(r))
                .map(|(_, o)| o.bsld)
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    let brpi_gap = results
        .iter()
        .zip(&brpi)
        .map(|((_, s), &v)| relative_gap(v, s.lower_bound))
        .sum::<f64>()
        / n;
    outln!(
        "{:<8} {:>10.3} {:>10} {:>10} {:>10} {:>11.2}% {:>12}",
        "brpi",
        brpi.iter().sum::<f64>() / n,
        "-",
        "-",
        "-",
        100.0 * brpi_gap,
        "(per inst.)"
    )?;
    let optimal_bsld = results.iter().map(|(_, s)| s.value).sum::<f64>() / n;
    let gap = results.iter().map(|(_, s)| s.gap()).sum::<f64>() / n;
    outln!(
        "{:<8} {:>10.3} {:>10} {:>10} {:>10} {:>11.2}% {:>12}",
        "optimal",
        optimal_bsld,
        "-",
        "-",
        "-",
        100.0 * gap,
        "(bsld)"
    )?;
    Ok(())
}

fn write_family(dir: &Path, family: Family, instances: &[schedlm_model::Instance]) -> Result<()> {
    let path = dir.join(format!("{}.jsonl", family.name()));
    let mut out = create_output(Some(&path))?;
    write_jsonl(&mut out, instances)
}
