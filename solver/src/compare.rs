//! Every priority rule against the proven optimum on the same snapshots: the comparison table
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
