//! `schedlm history replay`: what the schedulers gain from job knowledge. A `dl` workload is
//! replayed online (SPEC section 5) with each priority rule and start rule, planned with the
//! request, the history's prediction, the learned throughput and the truth
//! (`schedlm_history::planning`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use schedlm_history::deployed::{limits, simulation, workload, FillCount, Limit, TimeFill};
use schedlm_history::filter_conf::FilterConf;
use schedlm_history::planning::{plan_error, Plan, PlanError, Planner};
use schedlm_history::replay::dl_workload;
use schedlm_model::sim::{SimResult, Simulation, StartRule};
use schedlm_solver::policy::RulePolicy;
use schedlm_solver::rules::Rule;
use serde::Serialize;

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

/// One replay's figures.
#[derive(Debug, Serialize)]
struct Row {
    rule: &'static str,
    start: &'static str,
    plan: &'static str,
    jobs: usize,
    mean_wait: f64,
    mean_jct: f64,
    mean_bsld: f64,
    killed: usize,
    /// GPU-hours of the runs killed at their limit (their work is lost).
    lost_gpu_h: f64,
}

/// One plan's error.
#[derive(Debug, Serialize)]
struct PlanRow {
    plan: &'static str,
    #[serde(flatten)]
    error: PlanError,
}

pub fn run(args: &ReplayArgs) -> Result<()> {
    if args.db.is_some() || args.conf.is_some() {
        return run_recorded(args);
    }
    if !args.limits.is_empty()
        || args.margin.is_some()
        || args.max_time.is_some()
        || args.gpus_per_node.is_some()
    {
        bail!("--limits, --margin, --max-time and --gpus-per-node replay a history: give --db or --conf");
    }
    let snapshot = |seed: u64| {
        dl_workload(seed, args.jobs as usize, Some(args.servers as usize))
            .context("cannot generate the dl snapshot")
    };
    let planner = Planner::learn(&snapshot(args.seed)?)?;
    let workload = snapshot(args.seed.wrapping_add(1))?;
    let mut errors = Vec::new();
    let mut sims = Vec::new();
    for &plan in &args.plans {
        let jobs = planner.sim_jobs(&workload, plan)?;
        errors.push(PlanRow {
            plan: plan.name(),
            error: plan_error(&jobs),
        });
        let sim = Simulation::new(workload.resources.clone(), workload.servers.clone(), jobs)
            .context("cannot set up the replay")?;
        sims.push((plan.name(), sim));
    }
    let rows = replays(args, &sims)?;
    print(args, &planner, &errors, &rows)
}

/// Every (rule, start rule) over each named setup, in that order.
fn replays(args: &ReplayArgs, sims: &[(&'static str, Simulation)]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for &rule in &args.rules {
        for &start in &args.start_rules {
            for (name, sim) in sims {
                let mut policy = RulePolicy::for_trace(rule, sim.jobs());
                let result = sim
                    .run(&mut policy, start)
                    .with_context(|| format!("replay with {} and {}", rule.name(), start.name()))?;
                rows.push(row(rule, start, name, &result, sim));
            }
        }
    }
    Ok(rows)
}

fn row(
    rule: Rule,
    start: StartRule,
    plan: &'static str,
    result: &SimResult,
    sim: &Simulation,
) -> Row {
    let gpu = sim.resources().iter().position(|r| r == "gpus");
    let lost: i64 = result
        .jobs
        .iter()
        .zip(sim.jobs())
        .filter(|(r, _)| r.killed)
        .map(|(r, j)| r.run * gpu.map_or(0, |g| j.demand[g]))
        .sum();
    let n = result.jobs.len().max(1) as f64;
    let jct = result
        .jobs
        .iter()
        .map(|j| (j.end - j.submit) as f64)
        .sum::<f64>();
    Row {
        rule: rule.name(),
        start: start.name(),
        plan,
        jobs: result.jobs.len(),
        mean_wait: result.summary.mean_wait,
        mean_jct: jct / n,
        mean_bsld: result.summary.mean_bsld,
        killed: result.summary.killed,
        lost_gpu_h: lost as f64 / 3600.0,
    }
}

fn print(args: &ReplayArgs, planner: &Planner, errors: &[PlanRow], rows: &[Row]) -> Result<()> {
    if args.json {
        for r in rows {
            outln!("{}", serde_json::to_string(r)?)?;
        }
        for e in errors {
            outln!("{}", serde_json::to_string(e)?)?;
        }
        return Ok(());
    }
    outln!(
        "{} dl jobs on {} nodes of 8 GPUs; {} past jobs learned (seed {})",
        rows.first().map_or(0, |r| r.jobs),
        args.servers,
        planner.past_jobs(),
        args.seed
    )?;
    outln!(
        "{:<11} {:>9} {:>12} {:>8}",
        "plan",
        "MAPE %",
        "median APE %",
        "under %"
    )?;
    for e in errors {
        outln!(
            "{:<11} {:>9.1} {:>12.1} {:>8.1}",
            e.plan,
            e.error.mape,
            e.error.median_ape,
            e.error.under * 100.0
        )?;
    }
    outln!()?;
    outln!(
        "{:<6} {:<13} {:<11} {:>11} {:>11} {:>10}",
        "rule",
        "start",
        "plan",
        "mean wait",
        "mean JCT",
        "mean bsld"
    )?;
    for r in rows {
        outln!(
            "{:<6} {:<13} {:<11} {:>11.0} {:>11.0} {:>10.2}",
            r.rule,
            r.start,
            r.plan,
            r.mean_wait,
            r.mean_jct,
            r.mean_bsld
        )?;
    }
    Ok(())
}

/// `history replay --db`: the recorded history under each limit.
fn run_recorded(args: &ReplayArgs) -> Result<()> {
    let flags = FilterConf {
        db: args.db.clone(),
        margin: args.margin,
        max_time: args.max_time,
        gpus_per_node: args.gpus_per_node,
        ..FilterConf::default()
    };
    let conf = FilterConf::resolve(args.conf.as_deref(), flags)?;
    let (margin, max_time, per_node) = (conf.margin(), conf.max_time(), conf.gpus_per_node());
    let db = conf.db()?.to_path_buf();
    let fill = TimeFill::new(margin, i64::try_from(max_time.as_secs())?)?;
    let history = crate::cmd::history::open_existing(&db)?.jobs()?;
    let work = workload(&history);
    report_left_out(&db, &work.left_out);
    if work.jobs.is_empty() {
        bail!(schedlm_history::deployed::DeployedError::Empty);
    }
    let gpus = i64::from(args.servers) * i64::from(per_node);
    let mut sims = Vec::new();
    let mut fills = Vec::new();
    let chosen = if args.limits.is_empty() {
        Limit::ALL.to_vec()
    } else {
        args.limits.clone()
    };
    for &limit in &chosen {
        let (jobs, count) = limits(&work, &fill, limit);
        fills.push((limit, count));
        let sim = simulation(gpus, jobs).with_context(|| {
            format!(
                "cannot replay {} on a pool of {gpus} GPUs (--servers x --gpus-per-node; job \
                 h<N> is row N of `schedlm history list`)",
                db.display()
            )
        })?;
        sims.push((limit.name(), sim));
    }
    let rows = replays(args, &sims)?;
    print_recorded(args, &db, &fill, gpus, &fills, &rows)
}

/// Says on standard error which jobs of the history are not replayed, and why.
fn report_left_out(db: &Path, left_out: &[schedlm_history::deployed::LeftOut]) {
    if left_out.is_empty() {
        return;
    }
    let mut reasons: Vec<(&str, usize)> = Vec::new();
    for l in left_out {
        match reasons.iter_mut().find(|(r, _)| *r == l.reason) {
            Some((_, n)) => *n += 1,
            None => reasons.push((l.reason, 1)),
        }
    }
    let said: Vec<String> = reasons
        .iter()
        .map(|(r, n)| format!("{n} with {r}"))
        .collect();
    eprintln!(
        "history replay: {} jobs of {} not replayed ({}; the first: id {}, {})",
        left_out.len(),
        db.display(),
        said.join(", "),
        left_out[0].id,
        left_out[0].name
    );
}

/// One limit's fill counts, in JSON.
#[derive(Debug, Serialize)]
struct FillRow {
    limit: &'static str,
    #[serde(flatten)]
    count: FillCount,
}

fn print_recorded(
    args: &ReplayArgs,
    db: &Path,
    fill: &TimeFill,
    gpus: i64,
    fills: &[(Limit, FillCount)],
    rows: &[Row],
) -> Result<()> {
    if args.json {
        for r in rows {
            // The same figures as the drawn workload's rows, keyed by the limit.
            let mut value = serde_json::to_value(r)?;
            if let Some(object) = value.as_object_mut() {
                if let Some(limit) = object.remove("plan") {
                    object.insert("limit".into(), limit);
                }
            }
            outln!("{}", serde_json::to_string(&value)?)?;
        }
        for (limit, count) in fills {
            let f = FillRow {
                limit: limit.name(),
                count: *count,
            };
            outln!("{}", serde_json::to_string(&f)?)?;
        }
        return Ok(());
    }
    outln!(
        "{} jobs of {} on a pool of {gpus} GPUs; filter: prediction x {}, at most {} s",
        rows.first().map_or(0, |r| r.jobs),
        db.display(),
        fill.margin(),
        fill.max_time_s()
    )?;
    outln!(
        "{:<9} {:>7} {:>12} {:>7}",
        "limit",
        "filled",
        "unpredicted",
        "capped"
    )?;
    for (limit, c) in fills {
        outln!(
            "{:<9} {:>7} {:>12} {:>7}",
            limit.name(),
            c.filled,
            c.unpredicted,
            c.capped
        )?;
    }
    outln!()?;
    outln!(
        "{:<6} {:<13} {:<9} {:>11} {:>11} {:>10} {:>7} {:>11}",
        "rule",
        "start",
        "limit",
        "mean wait",
        "mean JCT",
        "mean bsld",
        "killed",
        "lost GPU-h"
    )?;
    for r in rows {
        outln!(
            "{:<6} {:<13} {:<9} {:>11.0} {:>11.0} {:>10.2} {:>7} {:>11.1}",
            r.rule,
            r.start,
            r.plan,
            r.mean_wait,
            r.mean_jct,
            r.mean_bsld,
            r.killed,
            r.lost_gpu_h
        )?;
    }
    Ok(())
}
