//! `schedlm generate`: seeded snapshots to JSON Lines.

use std::path::Path;

use anyhow::{bail, Context, Result};
use schedlm_generator::cut::{cut_trace, CutConfig, Select};
use schedlm_generator::swf::{read_swf, SwfOptions};
use schedlm_generator::{generate, Config, Family};
use schedlm_model::Instance;
use schedlm_solver::policy::RulePolicy;
use schedlm_solver::rules::RuleContext;

use crate::args::{GenerateArgs, QueueRange};
use crate::io::{create_output, write_jsonl};

pub fn run(args: &GenerateArgs) -> Result<()> {
    if let Some(path) = &args.from_trace {
        let mut given = args.shape.cluster_options_given();
        if args.family.is_some() {
            given.insert(0, "--family");
        }
        if !given.is_empty() {
            bail!(
                "--from-trace takes the cluster and its jobs from the trace: drop {}",
                given.join(", ")
            );
        }
        return from_trace(args, path);
    }
    let family = args.family.unwrap_or(Family::Hpc);
    let config = args.shape.config(family);
    let instances = generate(&config, args.count).context("cannot generate snapshots")?;
    let mut out = create_output(args.output.as_deref())?;
    write_jsonl(&mut out, &instances)?;
    if let Some(path) = &args.output {
        eprintln!(
            "wrote {} {} snapshots to {}",
            instances.len(),
            family.name(),
            path.display()
        );
    }
    Ok(())
}

/// A generator configuration with the family's defaults and the given queue range and seed.
pub fn config(family: Family, queue: QueueRange, seed: u64) -> Config {
    let mut config = Config::new(family, seed);
    config.queue_min = queue.min;
    config.queue_max = queue.max;
    config
}

/// Generates `count` snapshots of `family` with defaults.
pub fn snapshots(
    family: Family,
    count: usize,
    queue: QueueRange,
    seed: u64,
) -> Result<Vec<Instance>> {
    generate(&config(family, queue, seed), count).context("cannot generate snapshots")
}

/// `generate --from-trace`: replay the trace with the rule and cut snapshots.
fn from_trace(args: &GenerateArgs, path: &Path) -> Result<()> {
    let trace = read_swf(path, &SwfOptions::default()).context("cannot read the trace")?;
    let queue = args.shape.queue();
    let mut config = CutConfig::new(queue.min, queue.max);
    config.select = match (args.every, args.sample) {
        (_, Some(k)) => Select::Sample(k),
        (Some(n), None) => Select::Every(n),
        (None, None) => Select::Every(1),
    };
    config.count = Some(args.count);
    config.seed = args.shape.seed;
    config.estimate = args.estimate;
    config.start_rule = args.start_rule;
    let origin = trace.jobs.first().map_or(0, |j| j.submit);
    let mut policy = RulePolicy::new(
        args.policy,
        RuleContext {
            origin,
            seed: args.shape.seed,
            stream: 0,
        },
    );
    let cut = cut_trace(&trace, &config, &mut policy)
        .with_context(|| format!("cannot cut snapshots from {}", path.display()))?;
    let mut out = create_output(args.output.as_deref())?;
    write_jsonl(&mut out, &cut.instances)?;
    eprintln!("{}: {}", path.display(), cut.report);
    Ok(())
}
