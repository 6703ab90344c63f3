//! `schedlm pipeline`: the main job on embedded defaults. For now: generate snapshots of every
//! family, schedule them with every priority rule, and print a comparison table.

use std::path::Path;

use anyhow::Result;
use rayon::prelude::*;
use schedlm_generator::Family;
use schedlm_model::{Objective, Objectives, Problem, Variant};
use schedlm_solver::rules::{Rule, RuleContext};

use super::generate::snapshots;
use super::schedule::schedule_with;
use crate::args::PipelineArgs;
use crate::io::{create_output, write_jsonl};

const FAMILIES: [Family; 3] = [Family::Uniform, Family::Hpc, Family::Dl];

pub fn run(args: &PipelineArgs) -> Result<()> {
    println!(
        "schedlm pipeline: {} snapshots per family, queues of {}..{} jobs, seed {}, serial dispatcher",
        args.count, args.queue.min, args.queue.max, args.seed
    );
    for family in FAMILIES {
        let instances = snapshots(family, args.count as usize, args.queue, args.seed)?;
        let problems: Vec<Problem> = instances
            .iter()
            .map(Problem::new)
            .collect::<Result<_, _>>()?;
        // results[i][r]: objectives of instance i under rule r.
        let results: Vec<Vec<Objectives>> = problems
            .par_iter()
            .enumerate()
            .map(|(i, p)| {
                let ctx = RuleContext {
                    seed: args.seed,
                    stream: i as u64,
                    ..RuleContext::default()
                };
                Rule::ALL
                    .iter()
                    .map(|&rule| {
                        Objectives::of(p, &schedule_with(rule, p, Variant::Serial, &ctx).start)
                    })
                    .collect()
            })
            .collect();
        print_table(family, &results);
        if let Some(dir) = &args.out {
            write_family(dir, family, &instances)?;
        }
    }
    if let Some(dir) = &args.out {
        println!("snapshots written under {}", dir.display());
    }
    Ok(())
}

fn print_table(family: Family, results: &[Vec<Objectives>]) {
    let n = results.len() as f64;
    println!();
    println!(
        "family {} ({} snapshots): mean of each objective, lower is better",
        family.name(),
        results.len()
    );
    println!(
        "{:<8} {:>10} {:>10} {:>10} {:>10} {:>12}",
        "rule", "bsld", "wait [s]", "flow [s]", "makespan", "best bsld"
    );
    for (r, rule) in Rule::ALL.iter().enumerate() {
        let mean = |o: Objective| results.iter().map(|row| row[r].get(o)).sum::<f64>() / n;
        // Share of snapshots where this rule reaches the lowest bsld of all rules.
        let best = results
            .iter()
            .filter(|row| {
                let min = row.iter().map(|o| o.bsld).fold(f64::INFINITY, f64::min);
                row[r].bsld <= min
            })
            .count() as f64
            / n;
        println!(
            "{:<8} {:>10.3} {:>10.0} {:>10.0} {:>10.0} {:>11.0}%",
            rule.name(),
            mean(Objective::Bsld),
            mean(Objective::Wait),
            mean(Objective::Flow),
            mean(Objective::Makespan),
            100.0 * best
        );
    }
}

fn write_family(dir: &Path, family: Family, instances: &[schedlm_model::Instance]) -> Result<()> {
    let path = dir.join(format!("{}.jsonl", family.name()));
    let mut out = create_output(Some(&path))?;
    write_jsonl(&mut out, instances)
}
