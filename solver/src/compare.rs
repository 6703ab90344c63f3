//! A rule's schedule ([`schedule_with`], and as `schedlm schedule` writes it,
//! [`ScheduleRecord`]), and every priority rule against the proven optimum on the same snapshots: the comparison table
//! `schedlm pipeline` prints for each family. Each row is a rule's mean objectives, its mean
//! bsld gap to the optimum's lower bound (SPEC section 4) and how often it is the best rule;
//! then the best rule per instance (`brpi`, the headroom a model can win) and the optimum.

use std::fmt;

use rayon::prelude::*;
use schedlm_model::{dispatch, Objective, Objectives, Problem, Schedule, Variant};

use crate::portfolio::{self, relative_gap, Solution, SolveError, SolveOptions};
use crate::rules::{order, Rule, RuleContext};

/// The schedule a rule gives under a dispatcher variant.
pub fn schedule_with(
    rule: Rule,
    problem: &Problem,
    variant: Variant,
    ctx: &RuleContext,
) -> Schedule {
    let jobs = order(rule, problem, ctx);
    // A rule returns a permutation of the queue, which is all `dispatch` checks.
    match dispatch(problem, &jobs, variant) {
        Ok(schedule) => schedule,
        Err(e) => unreachable!("a rule returned a non-permutation: {e}"),
    }
}

/// A rule's schedule of one instance as `schedlm schedule` writes it: the input's line, the
/// rule and dispatcher, the queued ids in dispatch order, each job's start, end and server
/// (id -> value) and the objectives.
#[derive(Debug, serde::Serialize)]
pub struct ScheduleRecord {
    /// The input's line.
    pub line: usize,
    /// The rule.
    pub policy: &'static str,
    /// The dispatcher variant.
    pub variant: &'static str,
    /// Queued job ids in dispatch order.
    pub order: Vec<String>,
    /// Job id -> start.
    pub starts: serde_json::Map<String, serde_json::Value>,
    /// Job id -> end.
    pub ends: serde_json::Map<String, serde_json::Value>,
    /// Job id -> server id.
    pub servers: serde_json::Map<String, serde_json::Value>,
    /// The schedule's objectives.
    pub objectives: Objectives,
}

impl ScheduleRecord {
    /// The schedule `rule` gives `problem` (read from input line `line`) under `variant`.
    pub fn new(
        line: usize,
        rule: Rule,
        variant: Variant,
        problem: &Problem,
        ctx: &RuleContext,
    ) -> Self {
        let schedule = schedule_with(rule, problem, variant, ctx);
        let id = |j: usize| problem.job_id(j).to_string();
        let per_job = |f: &dyn Fn(usize) -> serde_json::Value| {
            (0..problem.jobs()).map(|j| (id(j), f(j))).collect()
        };
        ScheduleRecord {
            line,
            policy: rule.name(),
            variant: variant.name(),
            order: schedule.order.iter().map(|&j| id(j)).collect(),
            starts: per_job(&|j| schedule.start[j].into()),
            ends: per_job(&|j| schedule.end(problem, j).into()),
            servers: per_job(&|j| problem.server_id(schedule.server[j]).into()),
            objectives: Objectives::of(problem, &schedule.start),
        }
    }
}

/// Schedules every instance line of a file with `rule` under `variant` (line k with stream k
/// of `seed`, F1's origin `origin`), in parallel; a line that is not a valid instance gives its
/// reason.
pub fn schedule_lines(
    lines: &[schedlm_model::input::Line],
    rule: Rule,
    variant: Variant,
    seed: u64,
    origin: i64,
) -> Vec<Result<ScheduleRecord, String>> {
    let one = |(k, line): (usize, &schedlm_model::input::Line)| {
        let (_, problem) = line.instance()?;
        let ctx = RuleContext {
            origin,
            seed,
            stream: k as u64,
        };
        Ok(ScheduleRecord::new(
            line.number,
            rule,
            variant,
            &problem,
            &ctx,
        ))
    };
    lines.par_iter().enumerate().map(one).collect()
}

/// One snapshot: the objectives of each rule of [`Rule::ALL`] (serial dispatcher), and the
/// bsld optimum.
#[derive(Debug, Clone)]
pub struct Compared {
    /// Objectives under each rule, in the order of [`Rule::ALL`].
    pub rules: Vec<Objectives>,
    /// The `auto` portfolio's bsld solution.
    pub optimal: Solution,
}

/// The comparison of one named set of snapshots.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The set's name (a family).
    pub name: String,
    /// Each snapshot.
    pub snapshots: Vec<Compared>,
}

/// A snapshot the solver failed on.
#[derive(Debug, thiserror::Error)]
#[error("snapshot {snapshot}: {source}")]
pub struct CompareError {
    /// Its position in the set (from 0).
    pub snapshot: usize,
    /// What the solver said.
    pub source: SolveError,
}

/// Schedules every problem with every rule and solves it on bsld in `work_limit` units of
/// counted work, in parallel; the same table on every machine.
pub fn compare(
    name: &str,
    problems: &[Problem],
    seed: u64,
    work_limit: u64,
) -> Result<Comparison, CompareError> {
    let snapshots = problems
        .par_iter()
        .enumerate()
        .map(|(i, p)| {
            let ctx = RuleContext {
                seed,
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
                work_limit: Some(work_limit),
                time_limit: None,
                seed,
                ..SolveOptions::default()
            };
            let optimal = portfolio::solve(p, &options).map_err(|source| CompareError {
                snapshot: i,
                source,
            })?;
            Ok(Compared { rules, optimal })
        })
        .collect::<Result<_, CompareError>>()?;
    Ok(Comparison {
        name: name.to_string(),
        snapshots,
    })
}

impl Comparison {
    fn mean(&self, f: impl Fn(&Compared) -> f64) -> f64 {
        self.snapshots.iter().map(f).sum::<f64>() / self.snapshots.len().max(1) as f64
    }

    /// The lowest bsld of the classic rules on a snapshot.
    fn brpi(c: &Compared) -> f64 {
        Rule::ALL
            .iter()
            .zip(&c.rules)
            .filter(|(r, _)| Rule::CLASSIC.contains(r))
            .map(|(_, o)| o.bsld)
            .fold(f64::INFINITY, f64::min)
    }

    /// Share of snapshots where rule `r` reaches the lowest bsld of all rules.
    fn best_share(&self, r: usize) -> f64 {
        let best = |c: &Compared| {
            let min = c.rules.iter().map(|o| o.bsld).fold(f64::INFINITY, f64::min);
            c.rules[r].bsld <= min
        };
        self.mean(|c| f64::from(u8::from(best(c))))
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let proven = self.snapshots.iter().filter(|c| c.optimal.proven_optimal);
        writeln!(
            f,
            "family {} ({} snapshots, {} with a proven optimum): mean of each objective, lower is better",
            self.name,
            self.snapshots.len(),
            proven.count()
        )?;
        writeln!(
            f,
            "{:<8} {:>10} {:>10} {:>10} {:>10} {:>12} {:>12}",
            "rule", "bsld", "wait [s]", "flow [s]", "makespan", "bsld gap", "best bsld"
        )?;
        for (r, rule) in Rule::ALL.iter().enumerate() {
            let mean = |o: Objective| self.mean(|c| c.rules[r].get(o));
            let gap = self.mean(|c| relative_gap(c.rules[r].bsld, c.optimal.lower_bound));
            writeln!(
                f,
                "{:<8} {:>10.3} {:>10.0} {:>10.0} {:>10.0} {:>11.2}% {:>11.0}%",
                rule.name(),
                mean(Objective::Bsld),
                mean(Objective::Wait),
                mean(Objective::Flow),
                mean(Objective::Makespan),
                100.0 * gap,
                100.0 * self.best_share(r)
            )?;
        }
        let brpi_gap = self.mean(|c| relative_gap(Self::brpi(c), c.optimal.lower_bound));
        writeln!(
            f,
            "{:<8} {:>10.3} {:>10} {:>10} {:>10} {:>11.2}% {:>12}",
            "brpi",
            self.mean(Self::brpi),
            "-",
            "-",
            "-",
            100.0 * brpi_gap,
            "(per inst.)"
        )?;
        writeln!(
            f,
            "{:<8} {:>10.3} {:>10} {:>10} {:>10} {:>11.2}% {:>12}",
            "optimal",
            self.mean(|c| c.optimal.value),
            "-",
            "-",
            "-",
            100.0 * self.mean(|c| c.optimal.gap()),
            "(bsld)"
        )
    }
}
