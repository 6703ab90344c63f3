//! The classic priority rules as a reference on every record: each classic rule's value, the
//! best rule per instance (its value and its order) and the queue order, so a report can say
//! whether a policy beats the rules and how often it just repeats one of them.
//!
//! Definitions (docs/eval.md repeats them):
//! - the classic rules are [`Rule::CLASSIC`] (fcfs, sjf, saf, ljf, wfp3, unicep, f1; F1's
//!   origin is 0, as everywhere on snapshots);
//! - each rule's value on a record is the record's `baselines` entry when the record has a
//!   finite value for every classic rule, else the value of the rule's order under the
//!   dispatcher (computed here);
//! - the *best rule per instance* is the classic rule with the lowest value on the record;
//!   its value is the minimum of those values; the rule and its order (for "identical"
//!   comparisons) are the *ranking rule* of [`schedlm_solver::canonical::ranking`], the same
//!   rule that orders compact-v2 prompts and canonical labels: ties go to the first rule of
//!   [`schedlm_solver::canonical::PREFERENCE`] (sjf first); its placed order;
//! - `ect`, the earliest-completion rule ([`schedlm_solver::greedy::ect`]): the listing of the
//!   step prompts followed at every state, ties by the ranking; what a step model that never
//!   leaves its listing answers;
//! - the *queue order* is the instance's queue listing order (`J1 J2 ... Jn` in the prompt;
//!   the FCFS order when the queue is listed by submit time, as generated datasets are).
//!
//! Orders are compared as *placed orders*: after the dependency repair of SPEC section 2, the
//! order the dispatcher places the jobs in. Two answers with the same placed order give the
//! same schedule.

use schedlm_model::{repair, Objective, Variant};
use schedlm_solver::canonical::ranking;
use schedlm_solver::greedy::earliest_completion;
use schedlm_solver::rules::{self, Rule, RuleContext};

use crate::data::Loaded;
use crate::stats::tied;

/// The classic rules on one record.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordRules {
    /// Record id.
    pub record: String,
    /// 1-based line of the record in the data file.
    pub line: usize,
    /// Each classic rule's value, in [`Rule::CLASSIC`] order.
    pub values: Vec<(Rule, f64)>,
    /// Whether `values` are the record's `baselines` (else computed by dispatching).
    pub from_record: bool,
    /// The best rule per instance (the rule whose order is `best_order`).
    pub best_rule: Rule,
    /// The best rule per instance's value: the minimum of `values`.
    pub best_value: f64,
    /// The ranking rule's placed order.
    pub best_order: Vec<usize>,
    /// The ranking of [`schedlm_solver::canonical::ranking`] (queue indices), which breaks
    /// the listing's ties.
    pub rank: Vec<usize>,
    /// `ect`'s placed order.
    pub ect_order: Vec<usize>,
    /// `ect`'s value.
    pub ect_value: f64,
    /// The queue listing order (queue indices 0..n) after the dependency repair.
    pub queue_order: Vec<usize>,
    /// Whether the record's baselines give a best value that differs (beyond the tolerance)
    /// from the evaluator's own dispatch of the rules.
    pub disagrees: bool,
}

/// The classic rules on record `r`.
pub fn record_rules(r: &Loaded, objective: Objective, variant: Variant) -> RecordRules {
    let problem = &r.problem;
    let computed: Vec<(Rule, f64)> = Rule::CLASSIC
        .into_iter()
        .map(|rule| {
            let order = rules::order(rule, problem, &RuleContext::default());
            (rule, problem.evaluate(&order, objective, variant).1)
        })
        .collect();
    let best = ranking(problem, objective, variant);
    let (best_order, computed_best) = problem.evaluate(&best.order, objective, variant);
    let best_rule = best.rule;
    let recorded: Option<Vec<(Rule, f64)>> = Rule::CLASSIC
        .iter()
        .map(|&rule| {
            r.record
                .baselines
                .get(rule.name())
                .copied()
                .filter(|v| v.is_finite())
                .map(|v| (rule, v))
        })
        .collect();
    let from_record = recorded.is_some();
    let values = recorded.unwrap_or(computed);
    let best_value = values.iter().map(|&(_, v)| v).fold(f64::INFINITY, f64::min);
    let best_value = if best_value.is_finite() {
        best_value
    } else {
        computed_best
    };
    let all: Vec<usize> = (0..problem.jobs()).collect();
    let ect = earliest_completion(problem, variant, &best.order);
    let (ect_order, ect_value) = problem.evaluate(&ect, objective, variant);
    RecordRules {
        record: r.record.id.clone(),
        line: r.line,
        values,
        from_record,
        best_rule,
        best_value,
        best_order,
        rank: best.order,
        ect_order,
        ect_value,
        queue_order: repair(problem, &all),
        disagrees: from_record && !tied(best_value, computed_best),
    }
}
