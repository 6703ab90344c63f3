//! The replays of `schedlm history replay` and their tables: every (priority rule, start rule)
//! over a workload planned several ways ([`drawn`]: request, history, throughput, oracle) or a
//! recorded history run under several time limits ([`recorded`]: request, filter, history,
//! oracle). Each report prints as a table ([`std::fmt::Display`]) or as JSON Lines
//! ([`DrawnReport::json_lines`], [`RecordedReport::json_lines`]).

use std::fmt;

use schedlm_model::sim::{SimError, SimResult, Simulation, StartRule};
use schedlm_solver::policy::RulePolicy;
use schedlm_solver::rules::Rule;
use serde::Serialize;

use crate::deployed::{limits, simulation, workload, DeployedError, FillCount, Limit, TimeFill};
use crate::history::PastJob;
use crate::planning::{plan_error, Plan, PlanError, Planner};
use crate::replay::{dl_workload, ReplayError};

/// Why a replay table cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ReplayTableError {
    /// The drawn workload or its plans could not be made.
    #[error(transparent)]
    Workload(#[from] ReplayError),
    /// The drawn snapshot could not be generated.
    #[error("cannot generate the dl snapshot: {0}")]
    Generate(#[from] schedlm_generator::GenError),
    /// The recorded history cannot be replayed.
    #[error(transparent)]
    Deployed(#[from] DeployedError),
    /// The simulator refused the jobs of one setup.
    #[error("cannot set up the replay ({setup}): {source}")]
    Setup {
        /// The plan or limit.
        setup: &'static str,
        /// What the simulator said.
        source: SimError,
    },
    /// The recorded jobs do not fit the pool.
    #[error(
        "the jobs do not fit a pool of {gpus} GPUs (servers x GPUs per node; job h<N> is row N \
         of `schedlm history list`): {source}"
    )]
    Pool {
        /// GPUs of the pool.
        gpus: i64,
        /// What the replay said.
        source: DeployedError,
    },
    /// One replay failed.
    #[error("replay with {rule} and {start}: {source}")]
    Run {
        /// The priority rule.
        rule: &'static str,
        /// The start rule.
        start: &'static str,
        /// What the simulator said.
        source: SimError,
    },
}

/// The rules every setup is replayed with.
#[derive(Debug, Clone)]
pub struct Rules {
    /// Priority rules (SPEC section 6).
    pub priority: Vec<Rule>,
    /// Start rules.
    pub start: Vec<StartRule>,
}

/// One replay's figures.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayRow {
    /// The priority rule.
    pub rule: &'static str,
    /// The start rule.
    pub start: &'static str,
    /// The plan (drawn workload) or the limit (recorded history).
    pub plan: &'static str,
    /// Jobs replayed.
    pub jobs: usize,
    /// Mean wait (s).
    pub mean_wait: f64,
    /// Mean job completion time, end - submit (s).
    pub mean_jct: f64,
    /// Mean bounded slowdown (tau = 10 s).
    pub mean_bsld: f64,
    /// Runs killed at their limit.
    pub killed: usize,
    /// GPU-hours of the runs killed at their limit (their work is lost).
    pub lost_gpu_h: f64,
}

/// One plan's error against the true run times.
#[derive(Debug, Clone, Serialize)]
pub struct PlanRow {
    /// The plan.
    pub plan: &'static str,
    /// Its error.
    #[serde(flatten)]
    pub error: PlanError,
}

/// One limit's fill counts.
#[derive(Debug, Clone, Serialize)]
pub struct FillRow {
    /// The limit.
    pub limit: &'static str,
    /// How often the filter filled it.
    #[serde(flatten)]
    pub count: FillCount,
}

/// Every (rule, start rule) over each named setup, in that order.
pub fn replay_rows(
    rules: &Rules,
    setups: &[(&'static str, Simulation)],
) -> Result<Vec<ReplayRow>, ReplayTableError> {
    let mut rows = Vec::new();
    for &rule in &rules.priority {
        for &start in &rules.start {
            for (name, sim) in setups {
                let mut policy = RulePolicy::for_trace(rule, sim.jobs());
                let result =
                    sim.run(&mut policy, start)
                        .map_err(|source| ReplayTableError::Run {
                            rule: rule.name(),
                            start: start.name(),
                            source,
                        })?;
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
) -> ReplayRow {
    let gpu = sim.resources().iter().position(|r| r == "gpus");
    let lost: i64 = result
        .jobs
        .iter()
        .zip(sim.jobs())
        .filter(|(r, _)| r.killed)
        .map(|(r, j)| r.run * gpu.map_or(0, |g| j.demand[g]))
        .sum();
    let n = result.jobs.len().max(1) as f64;
    let jct: f64 = result.jobs.iter().map(|j| (j.end - j.submit) as f64).sum();
    ReplayRow {
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

/// A drawn `dl` workload planned several ways.
#[derive(Debug, Clone)]
pub struct DrawnReport {
    /// 8-GPU nodes of the cluster.
    pub servers: u32,
    /// Seed of the past (the workload used the next one).
    pub seed: u64,
    /// Past jobs the planner learned from.
    pub past_jobs: usize,
    /// Each plan's error.
    pub errors: Vec<PlanRow>,
    /// Each replay.
    pub rows: Vec<ReplayRow>,
}

/// Draws the past (seed `seed`) and the workload (the next seed) of `jobs` `dl` jobs on
/// `servers` 8-GPU nodes, plans the workload each way and replays it with every rule.
pub fn drawn(
    seed: u64,
    jobs: usize,
    servers: u32,
    plans: &[Plan],
    rules: &Rules,
) -> Result<DrawnReport, ReplayTableError> {
    let snapshot = |seed: u64| dl_workload(seed, jobs, Some(servers as usize));
    let planner = Planner::learn(&snapshot(seed)?)?;
    let workload = snapshot(seed.wrapping_add(1))?;
    let mut errors = Vec::new();
    let mut setups = Vec::new();
    for &plan in plans {
        let jobs = planner.sim_jobs(&workload, plan)?;
        errors.push(PlanRow {
            plan: plan.name(),
            error: plan_error(&jobs),
        });
        let sim = Simulation::new(workload.resources.clone(), workload.servers.clone(), jobs)
            .map_err(|source| ReplayTableError::Setup {
                setup: plan.name(),
                source,
            })?;
        setups.push((plan.name(), sim));
    }
    Ok(DrawnReport {
        servers,
        seed,
        past_jobs: planner.past_jobs(),
        errors,
        rows: replay_rows(rules, &setups)?,
    })
}

impl DrawnReport {
    /// One JSON object per replay, then one per plan's error.
    pub fn json_lines(&self) -> Result<Vec<String>, serde_json::Error> {
        let rows = self.rows.iter().map(serde_json::to_string);
        rows.chain(self.errors.iter().map(serde_json::to_string))
            .collect()
    }
}

impl fmt::Display for DrawnReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let jobs = self.rows.first().map_or(0, |r| r.jobs);
        writeln!(
            f,
            "{jobs} dl jobs on {} nodes of 8 GPUs; {} past jobs learned (seed {})",
            self.servers, self.past_jobs, self.seed
        )?;
        writeln!(
            f,
            "{:<11} {:>9} {:>12} {:>8}",
            "plan", "MAPE %", "median APE %", "under %"
        )?;
        for e in &self.errors {
            let (mape, median, under) = (e.error.mape, e.error.median_ape, e.error.under);
            writeln!(
                f,
                "{:<11} {mape:>9.1} {median:>12.1} {:>8.1}",
                e.plan,
                under * 100.0
            )?;
        }
        writeln!(
            f,
            "\n{:<6} {:<13} {:<11} {:>11} {:>11} {:>10}",
            "rule", "start", "plan", "mean wait", "mean JCT", "mean bsld"
        )?;
        for r in &self.rows {
            writeln!(
                f,
                "{:<6} {:<13} {:<11} {:>11.0} {:>11.0} {:>10.2}",
                r.rule, r.start, r.plan, r.mean_wait, r.mean_jct, r.mean_bsld
            )?;
        }
        Ok(())
    }
}

/// A recorded history replayed under several time limits.
#[derive(Debug, Clone)]
pub struct RecordedReport {
    /// The history's name in the report (its path).
    pub source: String,
    /// GPUs of the pool.
    pub gpus: i64,
    /// The filter that filled the limits.
    pub fill: TimeFill,
    /// Each limit's fill counts.
    pub fills: Vec<FillRow>,
    /// Each replay.
    pub rows: Vec<ReplayRow>,
    /// Which jobs of the history were not replayed: how many, "N with REASON" for each
    /// reason, and the first such job; `None` when every job was.
    pub left_out: Option<String>,
}

/// Replays the jobs of `history` (named `source` in the report) on a pool of `gpus` GPUs
/// under each limit (all four when `chosen` is empty), the filter's limits set by `fill`.
pub fn recorded(
    source: &str,
    history: &[PastJob],
    gpus: i64,
    fill: TimeFill,
    chosen: &[Limit],
    rules: &Rules,
) -> Result<RecordedReport, ReplayTableError> {
    let work = workload(history);
    if work.jobs.is_empty() {
        return Err(DeployedError::Empty.into());
    }
    let chosen = if chosen.is_empty() {
        &Limit::ALL
    } else {
        chosen
    };
    let mut setups = Vec::new();
    let mut fills = Vec::new();
    for &limit in chosen {
        let (jobs, count) = limits(&work, &fill, limit);
        fills.push(FillRow {
            limit: limit.name(),
            count,
        });
        let sim =
            simulation(gpus, jobs).map_err(|source| ReplayTableError::Pool { gpus, source })?;
        setups.push((limit.name(), sim));
    }
    Ok(RecordedReport {
        source: source.to_string(),
        gpus,
        fill,
        fills,
        rows: replay_rows(rules, &setups)?,
        left_out: left_out_summary(source, &work.left_out),
    })
}

fn left_out_summary(source: &str, left_out: &[crate::deployed::LeftOut]) -> Option<String> {
    let first = left_out.first()?;
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
    Some(format!(
        "{} jobs of {source} not replayed ({}; the first: id {}, {})",
        left_out.len(),
        said.join(", "),
        first.id,
        first.name
    ))
}

impl RecordedReport {
    /// One JSON object per replay (keyed by `limit`), then one per limit's fill counts.
    pub fn json_lines(&self) -> Result<Vec<String>, serde_json::Error> {
        let mut lines = Vec::new();
        for r in &self.rows {
            let mut value = serde_json::to_value(r)?;
            if let Some(object) = value.as_object_mut() {
                if let Some(limit) = object.remove("plan") {
                    object.insert("limit".into(), limit);
                }
            }
            lines.push(serde_json::to_string(&value)?);
        }
        for f in &self.fills {
            lines.push(serde_json::to_string(f)?);
        }
        Ok(lines)
    }
}

impl fmt::Display for RecordedReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} jobs of {} on a pool of {} GPUs; filter: prediction x {}, at most {} s",
            self.rows.first().map_or(0, |r| r.jobs),
            self.source,
            self.gpus,
            self.fill.margin(),
            self.fill.max_time_s()
        )?;
        let head = ("limit", "filled", "unpredicted", "capped");
        writeln!(
            f,
            "{:<9} {:>7} {:>12} {:>7}",
            head.0, head.1, head.2, head.3
        )?;
        for r in &self.fills {
            let c = r.count;
            writeln!(
                f,
                "{:<9} {:>7} {:>12} {:>7}",
                r.limit, c.filled, c.unpredicted, c.capped
            )?;
        }
        writeln!(
            f,
            "\n{:<6} {:<13} {:<9} {:>11} {:>11} {:>10} {:>7} {:>11}",
            "rule", "start", "limit", "mean wait", "mean JCT", "mean bsld", "killed", "lost GPU-h"
        )?;
        for r in &self.rows {
            writeln!(
                f,
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
}

/// `schedlm advise replay`: a drawn `dl` workload in which a share of the jobs leave their
/// configuration out, filled with the defaults or with the advice, under FIFO and SJF.
#[derive(Debug, Clone)]
pub struct AdviceReplay {
    /// Jobs replayed.
    pub jobs: usize,
    /// GPUs of the pool.
    pub gpus: i64,
    /// Past runs learned.
    pub past_runs: usize,
    /// One result per (policy, filling).
    pub results: Vec<crate::replay::ReplayResult>,
}

/// Learns from the past (seed `seed`, every configuration stated) and replays the workload
/// (the next seed, a share `share` of the jobs leaving their configuration out) of `jobs` jobs
/// on `servers` 8-GPU nodes.
pub fn advice_replay(
    seed: u64,
    jobs: usize,
    servers: u32,
    share: f64,
) -> Result<AdviceReplay, ReplayTableError> {
    use crate::replay::{jobs_of, knowledge_of, replay, Filling, Policy};
    let past = jobs_of(&dl_workload(seed, jobs, None)?, 0.0, seed)?;
    let knowledge = knowledge_of(&past);
    let workload = jobs_of(&dl_workload(seed.wrapping_add(1), jobs, None)?, share, seed)?;
    let gpus = i64::from(servers) * 8;
    let mut results = Vec::new();
    for policy in [Policy::Fifo, Policy::Sjf] {
        for filling in [Filling::Default, Filling::Advised] {
            results.push(replay(&workload, &knowledge, gpus, policy, filling)?);
        }
    }
    Ok(AdviceReplay {
        jobs: workload.len(),
        gpus,
        past_runs: knowledge.runs().len(),
        results,
    })
}

impl fmt::Display for AdviceReplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let left_out = self.results.first().map_or(0, |r| r.left_out);
        writeln!(
            f,
            "{} jobs on {} GPUs, {left_out} leave their configuration out; {} past runs learned",
            self.jobs, self.gpus, self.past_runs
        )?;
        let head = (
            "policy",
            "filling",
            "mean JCT s",
            "mean bsld",
            "mean GPUs (left out)",
        );
        writeln!(
            f,
            "{:<7} {:<9} {:>12} {:>10} {:>22}",
            head.0, head.1, head.2, head.3, head.4
        )?;
        for r in &self.results {
            writeln!(
                f,
                "{:<7} {:<9} {:>12.0} {:>10.2} {:>22.2}",
                format!("{:?}", r.policy).to_lowercase(),
                format!("{:?}", r.filling).to_lowercase(),
                r.mean_jct,
                r.mean_bsld,
                r.mean_gpus_left_out
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployed::LeftOut;

    #[test]
    fn jobs_left_out_are_counted_per_reason_with_the_first() {
        assert_eq!(left_out_summary("h.sqlite", &[]), None);
        let job = |id: i64, reason: &'static str| LeftOut {
            id,
            name: format!("j{id}"),
            reason,
        };
        let left = [
            job(4, "no submit time"),
            job(7, "no GPUs"),
            job(9, "no submit time"),
        ];
        assert_eq!(
            left_out_summary("h.sqlite", &left).as_deref(),
            Some(
                "3 jobs of h.sqlite not replayed (2 with no submit time, 1 with no GPUs; the \
                 first: id 4, j4)"
            )
        );
    }
}
