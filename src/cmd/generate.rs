//! `schedlm generate`: seeded snapshots to JSON Lines.

use anyhow::{Context, Result};
use schedlm_generator::{generate, Config, Family, Load};
use schedlm_model::Instance;

use crate::args::{GenerateArgs, QueueRange};
use crate::io::{create_output, write_jsonl};

pub fn run(args: &GenerateArgs) -> Result<()> {
    let load = match (args.running, args.load) {
        (Some(n), _) => Some(Load::Jobs(n)),
        (None, Some(f)) => Some(Load::Fraction(f)),
        (None, None) => None,
    };
    let mut config = config(args.family, args.queue, args.seed);
    config.servers = args.servers;
    config.load = load;
    config.dep_prob = args.deps;
    let instances = generate(&config, args.count).context("cannot generate snapshots")?;
    let mut out = create_output(args.output.as_deref())?;
    write_jsonl(&mut out, &instances)?;
    if let Some(path) = &args.output {
        eprintln!(
            "wrote {} {} snapshots to {}",
            instances.len(),
            args.family.name(),
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
