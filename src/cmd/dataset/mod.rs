//! `schedlm dataset build | merge | stats`: fine-tuning records from solved snapshots.

use std::time::Instant;

use anyhow::{bail, Context, Result};

use schedlm_dataset::build::{self, BuildTuning};
use schedlm_dataset::manifest::{BuildArgs, Source};
use schedlm_dataset::{merge::merge, stats::stats, Targets};
use schedlm_generator::Family;

mod args;
pub use args::{BuildCmd, DatasetCommand, MergeCmd, StatsCmd};

pub fn run(command: &DatasetCommand) -> Result<()> {
    match command {
        DatasetCommand::Build(a) => run_build(a),
        DatasetCommand::Merge(a) => run_merge(a),
        DatasetCommand::Stats(a) => run_stats(a),
    }
}

/// The build arguments that decide the output.
pub fn build_args(a: &BuildCmd) -> Result<BuildArgs> {
    let variant = a.dispatcher.variant();
    let (records, targets) = (a.records, a.targets);
    if targets == Targets::Label && a.value_work_limit.is_some() {
        bail!("--value-work-limit budgets the values of --targets values: add --targets values or drop it");
    }
    let source = match &a.from {
        Some(path) => {
            let mut given = a.shape.cluster.options_given();
            if a.shape.queue.is_some() {
                given.insert(0, "--queue");
            }
            if !a.family.is_empty() {
                given.insert(0, "--family");
            }
            if !given.is_empty() {
                bail!(
                    "--from reads its snapshots from {}: drop {} (they shape generated \
                     snapshots only)",
                    path.display(),
                    given.join(", ")
                );
            }
            if a.instances.allow_unknown_fields {
                crate::io::warn_unknown_fields_in(path)?;
            }
            Source::file(path, a.label.clone(), a.instances.unknown())
        }
        None => {
            let families = if a.family.is_empty() {
                vec![Family::Hpc]
            } else {
                a.family.clone()
            };
            let configs = families.iter().map(|&f| a.shape.config(f)).collect();
            Source::Generate {
                configs,
                count: a.count,
            }
        }
    };
    let args = BuildArgs {
        source,
        solver: a.solver,
        objective: a.objective,
        variant,
        work_limit: a.work_limit.0,
        time_limit_ms: a.time_limit.map(|t| t.as_millis() as u64),
        node_limit: a.node_limit,
        solver_seed: a.shape.seed,
        template: a.template,
        answer: a.answer,
        plan: a.plan,
        records,
        targets,
        value_work_limit: (targets == Targets::Values).then(|| {
            a.value_work_limit
                .unwrap_or(schedlm_solver::values::DEFAULT_VALUE_WORK)
        }),
        format: a.format,
        split: a.split,
        skip_invalid: a.skip_invalid,
        min_headroom: a.min_headroom,
    };
    args.check()?;
    Ok(args)
}

fn run_build(a: &BuildCmd) -> Result<()> {
    let args = build_args(a)?;
    let shard = a.shard.unwrap_or_default();
    let total = build::source_len(&args.source)?;
    let bar = a.progress.bar(
        total,
        "{bar:40} {pos}/{len} snapshots, {per_sec}, elapsed {elapsed}, ETA {eta}",
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.unwrap_or(0))
        .build()
        .context("cannot start worker threads")?;
    let started = Instant::now();
    let tuning = BuildTuning { chunk: a.chunk };
    let report = pool.install(|| build::build(&args, shard, &a.out, tuning, &|n| bar.inc(n)))?;
    bar.finish_and_clear();
    for line in report.summary(&args, &a.out, started.elapsed().as_secs_f64()) {
        a.progress.say(format_args!("{line}"));
    }
    for warning in report.warnings(&args) {
        eprintln!("{warning}");
    }
    match report.empty(&a.out) {
        Some(why) => bail!("{why}"),
        None => Ok(()),
    }
}

fn run_merge(a: &MergeCmd) -> Result<()> {
    let m = merge(&a.parts, &a.out)?;
    a.progress.say(format_args!(
        "merged {} parts into {}: {} records, {} proven optimal",
        a.parts.len(),
        a.out.display(),
        m.total(),
        m.proven_optimal
    ));
    Ok(())
}

fn run_stats(a: &StatsCmd) -> Result<()> {
    let tokenizer = match &a.tokenizer {
        Some(path) => Some(
            tokenizers::Tokenizer::from_file(path)
                .map_err(|e| anyhow::anyhow!("cannot read tokenizer {}: {e}", path.display()))?,
        ),
        None => None,
    };
    let count = |text: &str| {
        tokenizer
            .as_ref()
            .and_then(|t| t.encode(text, false).ok())
            .map_or(0, |e| e.len())
    };
    let s = stats(&a.dir, tokenizer.as_ref().map(|_| &count as _))?;
    if s.records.values().sum::<u64>() == 0 {
        return Err(crate::io::empty_input(&a.dir, "record").into());
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&s)?)?;
    } else {
        out!("{}", s.to_text())?;
    }
    Ok(())
}
