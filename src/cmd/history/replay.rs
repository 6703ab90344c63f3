//! `schedlm history replay`: what the schedulers gain from job knowledge. A `dl` workload is
//! replayed online (SPEC section 5) with each priority rule and start rule, planned with the
//! request, the history's prediction, the learned throughput and the truth
//! (`schedlm_history::planning`).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use schedlm_history::deployed::{Limit, TimeFill};
use schedlm_history::filter_conf::FilterConf;
use schedlm_history::planning::Plan;
use schedlm_history::replay_table::{drawn, recorded, Rules};
use schedlm_model::sim::StartRule;
use schedlm_solver::rules::Rule;

/// Replay a `dl` workload planned four ways and print what each rule gains from knowing the
/// jobs.
///
/// Two `dl` snapshots are drawn (docs/generator.md): the past (seed S), whose jobs with their
/// true run times are the history and the configuration knowledge, and the workload (seed
/// S + 1), whose jobs arrive at their submit times on --servers nodes of 8 GPUs, 64 cores and
/// 512 GiB. Every job runs its true run time (never longer than its request). The scheduler
/// plans each job's length with one of four plans.
///
/// `request`: the walltime the user asked for.
///
/// `history`: the actual run time of the most similar past job by metadata (model, GPUs,
/// global batch, sequence length, epochs; as `history predict`), capped at the request.
///
/// `throughput`: the job's work (epochs x samples) over the throughput of the nearest past run
/// of its model, scaled to its configuration (as `advise`), plus start-up and staging.
///
/// `oracle`: the true run time.
///
/// The plan is what SJF and SAF score and what EASY reserves and backfills with; FCFS under
/// `strict` does not use it. One line per (rule, start rule, plan): mean wait, mean JCT (end -
/// submit), mean bounded slowdown (tau = 10 s); above the table each plan's error against the
/// true run times. See docs/knowledge.md for figures.
///
/// With --db, the workload is a recorded history instead, the one the Slurm filter reads
/// (docs/slurm.md): its jobs arrive at their recorded submit times on one pool of --servers x
/// --gpus-per-node GPUs and run their recorded run times, each under a time limit that is also
/// what the scheduler plans with (--limits): `request` (the user's; the longest limit when none),
/// `filter` (what the deployed filter leaves: a stated limit kept, a missing one filled from
/// the jobs that had ended by the job's submission, prediction x margin, capped), `history`
/// (the filter's limit for every job) and `oracle` (the recorded run time). A job whose run
/// time exceeds its limit is killed there (`killed`). Margin, cap and GPUs per node are read
/// from the filter's schedlm-submit.conf with --conf.
///
/// Examples: `schedlm history replay --jobs 2000 --servers 4 --seed 1`;
/// `schedlm history replay --db /var/lib/schedlm/history.sqlite --conf
/// /etc/slurm/schedlm-submit.conf --servers 64`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Replay this recorded history (SQLite, `schedlm history add` with --submit, --start and
    /// --gpus, or `history synth`) instead of a drawn `dl` workload.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["jobs", "seed", "plans"])]
    pub db: Option<PathBuf>,

    /// With --db: the limits, comma-separated: request, filter, history, oracle [default: all
    /// four].
    #[arg(long, value_delimiter = ',')]
    pub limits: Vec<Limit>,

    /// With --db: the filter's settings file (`schedlm-submit.conf`: `key = value` lines;
    /// `margin`, `max_time`, `gpus_per_node` and, without --db, `db` are read). Options given
    /// on the command line win.
    #[arg(long, value_name = "FILE")]
    pub conf: Option<PathBuf>,

    /// With --db: the filter's margin [default: 1.5, or the --conf file's].
    #[arg(long)]
    pub margin: Option<f64>,

    /// With --db: the longest limit the filter sets [default: 7d, or the --conf file's].
    #[arg(long, value_parser = humantime::parse_duration)]
    pub max_time: Option<std::time::Duration>,

    /// With --db: GPUs per node [default: 8, or the --conf file's].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub gpus_per_node: Option<u32>,

    /// Jobs in the workload (and in the past).
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u32).range(2..=20000))]
    pub jobs: u32,

    /// 8-GPU nodes of the cluster.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub servers: u32,

    /// Priority rules, comma-separated (SPEC section 6).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "fcfs,sjf,saf"
    )]
    pub rules: Vec<Rule>,

    /// Start rules, comma-separated: strict, easy, conservative.
    #[arg(
        long = "start",
        value_enum,
        value_delimiter = ',',
        default_value = "strict,easy"
    )]
    pub start_rules: Vec<StartRule>,

    /// Plans, comma-separated: request, history, throughput, oracle.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "request,history,throughput,oracle"
    )]
    pub plans: Vec<Plan>,

    /// Seed of the past (the workload uses the next seed).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Print JSON Lines (one object per replay, then one per plan's error; with --db, each
    /// replay keyed by `limit`, then one object per limit with its fill counts) instead of a
    /// table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &ReplayArgs) -> Result<()> {
    let rules = Rules {
        priority: args.rules.clone(),
        start: args.start_rules.clone(),
    };
    if args.db.is_some() || args.conf.is_some() {
        return run_recorded(args, &rules);
    }
    if !args.limits.is_empty()
        || args.margin.is_some()
        || args.max_time.is_some()
        || args.gpus_per_node.is_some()
    {
        bail!("--limits, --margin, --max-time and --gpus-per-node replay a history: give --db or --conf");
    }
    let report = drawn(
        args.seed,
        args.jobs as usize,
        args.servers,
        &args.plans,
        &rules,
    )
    .context("cannot replay the dl workload")?;
    if args.json {
        return outln!("{}", report.json_lines()?.join("\n"));
    }
    out!("{report}")
}

/// `history replay --db`: the recorded history under each limit.
fn run_recorded(args: &ReplayArgs, rules: &Rules) -> Result<()> {
    let flags = FilterConf {
        db: args.db.clone(),
        margin: args.margin,
        max_time: args.max_time,
        gpus_per_node: args.gpus_per_node,
        ..FilterConf::default()
    };
    let conf = FilterConf::resolve(args.conf.as_deref(), flags)?;
    let fill = TimeFill::new(conf.margin(), i64::try_from(conf.max_time().as_secs())?)?;
    let db = conf.db()?;
    let history = schedlm_history::history::History::open_existing(db)?.jobs()?;
    let gpus = i64::from(args.servers) * i64::from(conf.gpus_per_node());
    let name = db.display().to_string();
    let report = recorded(&name, &history, gpus, fill, &args.limits, rules)
        .with_context(|| format!("cannot replay {name}"))?;
    if let Some(left_out) = &report.left_out {
        eprintln!("history replay: {left_out}");
    }
    if args.json {
        return outln!("{}", report.json_lines()?.join("\n"));
    }
    out!("{report}")
}
