//! `schedlm generate`: seeded snapshots to JSON Lines.

use clap::Args;
use std::path::Path;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use schedlm_generator::trace::cut::{cut_trace, CutConfig, Select};
use schedlm_generator::trace::swf::{read_swf, SwfOptions};
use schedlm_generator::{generate, Family};
use schedlm_solver::policy::RulePolicy;
use schedlm_solver::rules::{Rule, RuleContext};

use schedlm_history::snapshot::snapshot_of_dirs;

use crate::args::ShapeArgs;
use crate::io::{create_output, write_jsonl};

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Snapshot family. `uniform`: small heterogeneous clusters with 3 resources (cores,
    /// mem_gib, gpus) and uniform demands. `hpc`: Lublin-Feitelson-like rigid HPC jobs on
    /// identical multi-core nodes. `dl`: deep-learning training jobs on GPU servers, with model,
    /// batch size, GPU count and epochs in `meta`. docs/generator.md lists every distribution.
    /// [default: hpc]
    #[arg(long, value_enum)]
    pub family: Option<Family>,

    /// Number of snapshots to write.
    #[arg(long, short = 'n', default_value_t = 100)]
    pub count: usize,

    #[command(flatten)]
    pub shape: ShapeArgs,

    /// Output file (JSON Lines); standard output when absent or `-`.
    #[arg(visible_alias = "out", long, short = 'o')]
    pub output: Option<PathBuf>,

    #[command(flatten)]
    pub progress: crate::io::ProgressArgs,

    /// Cut snapshots from an online replay of this SWF trace (plain or gzipped) instead of
    /// sampling a family: at the selected events (instants with a waiting queue), the state
    /// after that instant's completions and arrivals and before the start rule starts jobs,
    /// on one pool server of the trace's MaxProcs cores. Queues longer than --queue's MAX are
    /// cut to the oldest jobs; shorter than MIN are skipped. -n caps the count. The cluster
    /// comes from the trace: --family, --servers, --running, --load and --deps are refused.
    /// See docs/traces.md.
    // Not `conflicts_with_all`: a conflict makes clap skip the `requires = "from_trace"` of
    // the options below (clap-rs/clap#4520); `generate` refuses them itself.
    #[arg(long, value_name = "FILE")]
    pub from_trace: Option<PathBuf>,

    /// With --from-trace: the priority rule that drives the replay.
    #[arg(long, value_enum, default_value = "fcfs", requires = "from_trace")]
    pub policy: Rule,

    /// With --from-trace: how the replay starts jobs from the ordered queue.
    #[arg(long, value_enum, default_value = "easy", requires = "from_trace")]
    pub start_rule: schedlm_model::sim::StartRule,

    /// With --from-trace: cut every N-th event (the default is every event).
    #[arg(
        long,
        value_name = "N",
        requires = "from_trace",
        conflicts_with = "sample"
    )]
    pub every: Option<usize>,

    /// With --from-trace: cut K events drawn uniformly without replacement (ChaCha8 seeded by
    /// --seed).
    #[arg(long, value_name = "K", requires = "from_trace")]
    pub sample: Option<usize>,

    /// With --from-trace: replace each queued walltime by this run-time estimate (made at the
    /// job's submission from the replay's earlier completions); the request is kept in
    /// `meta.requested_walltime`.
    #[arg(long, value_enum, requires = "from_trace")]
    pub estimate: Option<schedlm_generator::trace::estimate::Estimator>,

    /// Make one snapshot whose queue is these training jobs (job directories, read as
    /// `schedlm extract DIR` reads them) on --servers `dl` nodes (8 GPUs, 64 cores, 512 GiB;
    /// default 4): demand [GPUs, cores, GiB] from the scripts (1 GPU, 8 cores and 64 GiB per GPU
    /// where they are silent), walltime from --history or the requested time, `meta` with the
    /// model, dataset, GPUs, batch sizes, sequence length, epochs, steps, learning rate and
    /// precision. Each job's id is its directory's name. See docs/knowledge.md.
    #[arg(long, value_name = "DIR", num_args = 1.., conflicts_with = "from_trace")]
    pub from_jobs: Vec<PathBuf>,

    /// With --from-jobs: predict each walltime from this job history (`schedlm history`):
    /// the nearest completed job's run time, capped at the request.
    #[arg(long, value_name = "FILE", requires = "from_jobs")]
    pub history: Option<PathBuf>,
}

pub fn run(args: &GenerateArgs) -> Result<()> {
    if !args.from_jobs.is_empty() {
        return from_jobs(args);
    }
    if let Some(path) = &args.from_trace {
        refuse_shape_options(
            args,
            &[],
            "--from-trace takes the cluster and its jobs from the trace",
        )?;
        return from_trace(args, path);
    }
    let family = args.family.unwrap_or(Family::Hpc);
    let config = args.shape.config(family);
    let instances = generate(&config, args.count).context("cannot generate snapshots")?;
    let mut out = create_output(args.output.as_deref())?;
    write_jsonl(&mut out, &instances)?;
    if let Some(path) = &args.output {
        args.progress.say(format_args!(
            "wrote {} {} snapshots to {}",
            instances.len(),
            family.name(),
            path.display()
        ));
    }
    Ok(())
}

/// `generate --from-trace`: replay the trace with the rule and cut snapshots.
fn from_trace(args: &GenerateArgs, path: &Path) -> Result<()> {
    let trace = read_swf(path, &SwfOptions::default()).context("cannot read the trace")?;
    let queue = args.shape.queue();
    let mut config = CutConfig::new(queue.min, queue.max);
    config.select = Select::of(args.every, args.sample);
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
    args.progress
        .say(format_args!("{}: {}", path.display(), cut.report));
    Ok(())
}

/// Fails when `--family` or options that shape a sampled cluster (but those in `keep`) were
/// given to a source that does not sample one; `source` says why they mean nothing there.
fn refuse_shape_options(args: &GenerateArgs, keep: &[&str], source: &str) -> Result<()> {
    let mut given = args.shape.cluster.options_given();
    given.retain(|o| !keep.contains(o));
    if args.family.is_some() {
        given.insert(0, "--family");
    }
    if !given.is_empty() {
        bail!("{source}: drop {}", given.join(", "));
    }
    Ok(())
}

/// `generate --from-jobs`: one snapshot of extracted training jobs.
fn from_jobs(args: &GenerateArgs) -> Result<()> {
    refuse_shape_options(
        args,
        &["--servers"],
        "--from-jobs makes its queue from the jobs' files",
    )?;
    let history = match &args.history {
        Some(path) => Some(schedlm_history::history::History::open_existing(path)?.jobs()?),
        None => None,
    };
    let servers =
        (args.shape.cluster.servers).unwrap_or(schedlm_generator::family::dl::DEFAULT_SERVERS);
    let instance = snapshot_of_dirs(&args.from_jobs, history.as_deref(), servers)?;
    let mut out = create_output(args.output.as_deref())?;
    write_jsonl(&mut out, &[instance])?;
    Ok(())
}
