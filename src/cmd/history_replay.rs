//! `schedlm history replay`: what the schedulers gain from job knowledge. A `dl` workload is
//! replayed online (SPEC section 5) with each priority rule and start rule, planned with the
//! request, the history's prediction, the learned throughput and the truth
//! (`schedlm_history::planning`).

use anyhow::{Context, Result};
use clap::Args;
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
/// Example: `schedlm history replay --jobs 2000 --servers 4 --seed 1`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
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

    /// Print JSON Lines (one object per replay, then one per plan's error) instead of a table.
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
}

/// One plan's error.
#[derive(Debug, Serialize)]
struct PlanRow {
    plan: &'static str,
    #[serde(flatten)]
    error: PlanError,
}

pub fn run(args: &ReplayArgs) -> Result<()> {
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
        sims.push((plan, sim));
    }
    let mut rows = Vec::new();
    for &rule in &args.rules {
        for &start in &args.start_rules {
            for (plan, sim) in &sims {
                let mut policy = RulePolicy::for_trace(rule, sim.jobs());
                let result = sim
                    .run(&mut policy, start)
                    .with_context(|| format!("replay with {} and {}", rule.name(), start.name()))?;
                rows.push(row(rule, start, *plan, &result));
            }
        }
    }
    print(args, &planner, &errors, &rows)
}

fn row(rule: Rule, start: StartRule, plan: Plan, result: &SimResult) -> Row {
    let n = result.jobs.len().max(1) as f64;
    let jct = result
        .jobs
        .iter()
        .map(|j| (j.end - j.submit) as f64)
        .sum::<f64>();
    Row {
        rule: rule.name(),
        start: start.name(),
        plan: plan.name(),
        jobs: result.jobs.len(),
        mean_wait: result.summary.mean_wait,
        mean_jct: jct / n,
        mean_bsld: result.summary.mean_bsld,
        killed: result.summary.killed,
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
