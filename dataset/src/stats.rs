//! What a built dataset holds: counts, lengths, label quality and how good the rules already are.

use std::collections::BTreeMap;
use std::path::Path;

use schedlm_model::quantile::quantile;
use schedlm_model::Problem;
use schedlm_solver::portfolio::relative_gap;
use schedlm_solver::rules::{order, Rule, RuleContext};
use serde::{Deserialize, Serialize};

use crate::difficulty::{Difficulty, DifficultySummary, DifficultyTally};
use crate::error::BuildError;
use crate::record::{read_records, AnswerOrder, Record};
use crate::split::Split;

/// Min, mean, median, 90th percentile and max of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Summary {
    /// How many values the sample has (0 for an empty sample, whose other fields are all 0).
    pub count: usize,
    /// The smallest value.
    pub min: f64,
    /// The arithmetic mean.
    pub mean: f64,
    /// The 50th percentile, linear between the closest ranks.
    pub median: f64,
    /// The 90th percentile, linear between the closest ranks.
    pub p90: f64,
    /// The largest value.
    pub max: f64,
}

impl Summary {
    /// The summary of `values` (sorted in place); all zero when empty. Median and p90 by
    /// [`schedlm_model::quantile`] (linear between the closest ranks, NumPy's default).
    pub fn of(values: &mut [f64]) -> Summary {
        if values.is_empty() {
            return Summary::default();
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        Summary {
            count: n,
            min: values[0],
            mean: values.iter().sum::<f64>() / n as f64,
            median: quantile(values, 0.5).unwrap_or_default(),
            p90: quantile(values, 0.9).unwrap_or_default(),
            max: values[n - 1],
        }
    }
}

/// How often a rule's order is already as good as the label.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct RuleStats {
    /// Share of proven-optimal records on which the rule's value equals the optimum.
    pub optimal_share: f64,
    /// Mean relative gap of the rule to the label's value, over all records.
    pub mean_gap: f64,
    /// Share of the records on which the rule is optimal whose label is the rule's own order
    /// (after the dependency repair): how consistently the labels follow this rule where it
    /// is right. 1 for the ranking rule with canonical labels; low with solver labels.
    pub label_is_rule_order: f64,
}

/// Statistics of a dataset directory.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Stats {
    /// Records per split, for the split files present in the directory (every step record
    /// counts).
    pub records: BTreeMap<Split, u64>,
    /// Instances: the records, except that step records count once per instance (their first
    /// step). Shares of labels and rules are over instances.
    pub instances: u64,
    /// Records per split and family.
    pub families: BTreeMap<Split, BTreeMap<String, u64>>,
    /// Records per template name (e.g. `compact-v2`), over all splits.
    pub templates: BTreeMap<String, u64>,
    /// Queued jobs per instance.
    pub queue_length: Summary,
    /// Prompt length per record in characters (Unicode scalar values): system message, blank
    /// line, user message.
    pub prompt_chars: Summary,
    /// Answer (completion) length per record in characters, plan line included when present.
    pub completion_chars: Summary,
    /// Token counts, when a tokenizer was given.
    pub prompt_tokens: Option<Summary>,
    /// Answer (completion) length per record in tokens, when a tokenizer was given.
    pub completion_tokens: Option<Summary>,
    /// Share of instances, in [0, 1], whose label is proven optimal.
    pub proven_optimal_share: f64,
    /// Share of records whose label is the canonical order (`answer: canonical`).
    pub canonical_share: f64,
    /// Relative gap (value - lower bound) / lower bound of the records not proven optimal.
    pub gap_unproven: Summary,
    /// Per classic rule, by name (the keys of the records' `baselines`: `fcfs`, `sjf`, ...),
    /// how good its order already is.
    pub rules: BTreeMap<String, RuleStats>,
    /// How much the labels ask beyond the prompts' ranking (headroom over the best rule per
    /// instance, labels equal to the ranking, deviating positions), over all instances and
    /// per queue length; recomputed for records that do not store it.
    pub difficulty: DifficultySummary,
    /// How regret is spread over the candidates of step records built with `--targets
    /// values`; `None` when no record carries values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<ValueStats>,
}

/// The regret spread of step records with values ([`crate::values`]), over their states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ValueStats {
    /// Step records (states) with values.
    pub states: u64,
    /// Share of the states where taking the first listed candidate (`J1`; in step-v2 the
    /// earliest completion) costs something: regret above 0.
    pub first_costs_share: f64,
    /// What taking the first listed candidate costs where it costs, relative to the state's
    /// best value (regret / best).
    pub first_cost: Summary,
    /// Share of the states where the label's next job has regret 0.
    pub label_best_share: f64,
    /// What the label's next job costs where it costs, relative to the state's best value (an
    /// unproven label can be beaten by another candidate's search).
    pub label_cost: Summary,
    /// Candidates per state.
    pub candidates: Summary,
    /// Candidates with regret 0 per state.
    pub zero_regret: Summary,
    /// Share of the states where every candidate has regret 0 (the choice does not matter).
    pub all_zero_share: f64,
    /// Share of the candidates whose value is proven.
    pub proven_share: f64,
    /// Relative regret of every candidate that costs something (regret / best).
    pub regret: Summary,
}

/// Adds up [`ValueStats`].
#[derive(Default)]
struct ValueTally {
    states: u64,
    first_costs: u64,
    first_cost: Vec<f64>,
    label_best: u64,
    label_cost: Vec<f64>,
    candidates: Vec<f64>,
    zero: Vec<f64>,
    all_zero: u64,
    proven: u64,
    regret: Vec<f64>,
}

impl ValueTally {
    fn add(&mut self, r: &Record) {
        let Some(v) = &r.values else {
            return;
        };
        let Some(first) = v.candidates.first() else {
            return;
        };
        self.states += 1;
        if first.regret > 0.0 {
            self.first_costs += 1;
            self.first_cost.push(first.relative(v.best));
        }
        match v.get(&r.completion) {
            Some(c) if c.regret > 0.0 => self.label_cost.push(c.relative(v.best)),
            Some(_) => self.label_best += 1,
            None => {}
        }
        let zero = v.candidates.iter().filter(|c| c.regret == 0.0).count();
        self.candidates.push(v.candidates.len() as f64);
        self.zero.push(zero as f64);
        self.all_zero += u64::from(zero == v.candidates.len());
        self.proven += v.candidates.iter().filter(|c| c.proven).count() as u64;
        self.regret.extend(
            v.candidates
                .iter()
                .filter(|c| c.regret > 0.0)
                .map(|c| c.relative(v.best)),
        );
    }

    fn summary(mut self) -> Option<ValueStats> {
        if self.states == 0 {
            return None;
        }
        let candidates: f64 = self.candidates.iter().sum();
        Some(ValueStats {
            states: self.states,
            first_costs_share: share(self.first_costs, self.states),
            first_cost: Summary::of(&mut self.first_cost),
            label_best_share: share(self.label_best, self.states),
            label_cost: Summary::of(&mut self.label_cost),
            candidates: Summary::of(&mut self.candidates),
            zero_regret: Summary::of(&mut self.zero),
            all_zero_share: share(self.all_zero, self.states),
            proven_share: share(self.proven, candidates as u64),
            regret: Summary::of(&mut self.regret),
        })
    }
}

impl ValueStats {
    /// The lines of [`Stats::to_text`].
    pub fn to_text(&self) -> String {
        let pct = |s: &Summary| {
            format!(
                "mean {:.2}%, median {:.2}%, p90 {:.2}%, max {:.2}%",
                100.0 * s.mean,
                100.0 * s.median,
                100.0 * s.p90,
                100.0 * s.max
            )
        };
        let mut t = format!(
            "values of {} states: taking J1 costs on {:.1}% ({}); the label's job is a best \
             candidate on {:.1}%\n",
            self.states,
            100.0 * self.first_costs_share,
            pct(&self.first_cost),
            100.0 * self.label_best_share
        );
        t.push_str(&format!(
            "  candidates per state: mean {:.1}; with regret 0: mean {:.1}, median {:.0}; \
             every candidate regret 0 on {:.1}% of states; {:.1}% of values proven\n",
            self.candidates.mean,
            self.zero_regret.mean,
            self.zero_regret.median,
            100.0 * self.all_zero_share,
            100.0 * self.proven_share
        ));
        t.push_str(&format!(
            "  regret of the {} candidates that cost: {}\n",
            self.regret.count,
            pct(&self.regret)
        ));
        t
    }
}

/// A token counter, e.g. a tokenizer's `encode(text).len()`.
pub type TokenCount<'a> = &'a dyn Fn(&str) -> usize;

/// Reads `DIR/{train,val,test}.jsonl` (those present) and computes their statistics.
pub fn stats(dir: &Path, tokens: Option<TokenCount<'_>>) -> Result<Stats, BuildError> {
    let mut s = Stats::default();
    let (mut queue, mut prompt, mut completion) = (Vec::new(), Vec::new(), Vec::new());
    let (mut prompt_tok, mut completion_tok, mut gaps) = (Vec::new(), Vec::new(), Vec::new());
    let mut rule_opt: BTreeMap<String, u64> = BTreeMap::new();
    let mut rule_gap: BTreeMap<String, f64> = BTreeMap::new();
    let mut rule_same: BTreeMap<String, u64> = BTreeMap::new();
    let (mut instances, mut proven, mut canonical) = (0u64, 0u64, 0u64);
    let mut difficulty = DifficultyTally::default();
    let mut values = ValueTally::default();
    for split in Split::ALL {
        let path = dir.join(split.file_name());
        if !path.exists() {
            continue;
        }
        s.records.insert(split, 0);
        for item in read_records(&path)? {
            let (_, r) = item?;
            *s.records.entry(split).or_default() += 1;
            *s.families
                .entry(split)
                .or_default()
                .entry(r.family.clone())
                .or_default() += 1;
            *s.templates.entry(r.template.clone()).or_default() += 1;
            prompt.push(r.prompt.chars().count() as f64);
            completion.push(r.completion.chars().count() as f64);
            if let Some(count) = tokens {
                prompt_tok.push(count(&r.prompt) as f64);
                completion_tok.push(count(&r.completion) as f64);
            }
            values.add(&r);
            if !r.is_first_step() {
                continue;
            }
            instances += 1;
            queue.push(r.instance.queue.len() as f64);
            if r.proven_optimal {
                proven += 1;
            } else {
                gaps.push(relative_gap(r.value, r.lower_bound));
            }
            canonical += u64::from(r.answer == AnswerOrder::Canonical);
            if let Some(d) = r.difficulty.clone().or_else(|| Difficulty::of_record(&r)) {
                difficulty.add(r.instance.queue.len(), &d);
            }
            let same = rules_with_label_order(&r);
            for (rule, v) in &r.baselines {
                let tol = 1e-9 * r.value.abs().max(1.0);
                if r.proven_optimal && *v <= r.value + tol {
                    *rule_opt.entry(rule.clone()).or_default() += 1;
                    if same.contains(&rule.as_str()) {
                        *rule_same.entry(rule.clone()).or_default() += 1;
                    }
                }
                *rule_gap.entry(rule.clone()).or_default() += relative_gap(*v, r.value);
            }
        }
    }
    s.queue_length = Summary::of(&mut queue);
    s.prompt_chars = Summary::of(&mut prompt);
    s.completion_chars = Summary::of(&mut completion);
    if tokens.is_some() {
        s.prompt_tokens = Some(Summary::of(&mut prompt_tok));
        s.completion_tokens = Some(Summary::of(&mut completion_tok));
    }
    s.instances = instances;
    s.proven_optimal_share = share(proven, instances);
    s.canonical_share = share(canonical, instances);
    s.gap_unproven = Summary::of(&mut gaps);
    s.difficulty = difficulty.summary();
    s.values = values.summary();
    for (rule, gap_sum) in rule_gap {
        let optimal = rule_opt.get(&rule).copied().unwrap_or(0);
        let same = rule_same.get(&rule).copied().unwrap_or(0);
        s.rules.insert(
            rule,
            RuleStats {
                label_is_rule_order: share(same, optimal),
                optimal_share: share(optimal, proven),
                mean_gap: if instances == 0 {
                    0.0
                } else {
                    gap_sum / instances as f64
                },
            },
        );
    }
    Ok(s)
}

/// The classic rules whose placed order is the record's label (none for an invalid record).
fn rules_with_label_order(r: &Record) -> Vec<&'static str> {
    let (Ok(problem), Ok(label)) = (Problem::new(&r.instance), r.order_indices()) else {
        return Vec::new();
    };
    Rule::CLASSIC
        .into_iter()
        .filter(|&rule| {
            let o = order(rule, &problem, &RuleContext::default());
            problem.evaluate(&o, r.objective, r.variant).0 == label
        })
        .map(Rule::name)
        .collect()
}

/// The warning of a dataset whose labels are mostly the prompt's ranking.
pub fn ranking_warning(d: &DifficultySummary) -> String {
    format!(
        "warning: {:.1}% of the labels are the prompt's ranking (J1 J2 ... Jn in compact-v2), \
         with a mean headroom of {:.2}% over the best rule per instance: a model that copies \
         the ranking matches most labels. Ask for instances with headroom (--min-headroom, \
         longer queues, a harder family setting; docs/learning.md)",
        100.0 * d.all.label_is_ranking,
        100.0 * d.all.headroom.mean
    )
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

impl Stats {
    /// A plain-text report for a terminal.
    pub fn to_text(&self) -> String {
        let mut t = String::new();
        let total: u64 = self.records.values().sum();
        t.push_str(&format!("records: {total}"));
        for (split, n) in &self.records {
            t.push_str(&format!("  {split} {n}"));
        }
        if self.instances != total {
            t.push_str(&format!(
                "  (step records of {} instances; label and rule figures per instance)",
                self.instances
            ));
        }
        t.push('\n');
        for (split, fams) in &self.families {
            let list: Vec<String> = fams.iter().map(|(f, n)| format!("{f} {n}")).collect();
            t.push_str(&format!("  {split}: {}\n", list.join(", ")));
        }
        let templates: Vec<String> = self
            .templates
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        t.push_str(&format!("templates: {}\n", templates.join(", ")));
        t.push_str("                    min     mean   median      p90      max\n");
        let mut row = |name: &str, s: &Summary| {
            t.push_str(&format!(
                "{name:<16} {:>6.0} {:>8.1} {:>8.0} {:>8.0} {:>8.0}\n",
                s.min, s.mean, s.median, s.p90, s.max
            ));
        };
        row("queue length", &self.queue_length);
        row("prompt chars", &self.prompt_chars);
        row("answer chars", &self.completion_chars);
        if let Some(p) = &self.prompt_tokens {
            row("prompt tokens", p);
        }
        if let Some(c) = &self.completion_tokens {
            row("answer tokens", c);
        }
        t.push_str(&format!(
            "proven optimal: {:.1}%   canonical labels: {:.1}%\n",
            100.0 * self.proven_optimal_share,
            100.0 * self.canonical_share
        ));
        let g = &self.gap_unproven;
        if g.count > 0 {
            t.push_str(&format!(
                "gap of the {} unproven labels: mean {:.2}%, median {:.2}%, p90 {:.2}%, max {:.2}%\n",
                g.count,
                100.0 * g.mean,
                100.0 * g.median,
                100.0 * g.p90,
                100.0 * g.max
            ));
        }
        t.push_str(
            "rule      already optimal   mean gap to label   label is its order when optimal\n",
        );
        for (rule, r) in &self.rules {
            t.push_str(&format!(
                "{rule:<9} {:>14.1}%   {:>16.2}%   {:>30.1}%\n",
                100.0 * r.optimal_share,
                100.0 * r.mean_gap,
                100.0 * r.label_is_rule_order
            ));
        }
        t.push_str(&self.difficulty.to_text());
        if let Some(v) = &self.values {
            t.push_str(&v.to_text());
        }
        if self.difficulty.mostly_ranking() {
            t.push_str(&ranking_warning(&self.difficulty));
            t.push('\n');
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_by_hand() {
        let s = Summary::of(&mut [5.0, 1.0, 3.0, 2.0, 4.0, 10.0, 6.0, 7.0, 8.0, 9.0]);
        // numpy.percentile(range(1, 11), [50, 90]) = [5.5, 9.1]
        assert_eq!((s.min, s.max, s.median), (1.0, 10.0, 5.5));
        assert!((s.p90 - 9.1).abs() < 1e-12);
        assert!((s.mean - 5.5).abs() < 1e-12);
        assert_eq!(Summary::of(&mut []), Summary::default());
        assert_eq!(Summary::of(&mut [2.0]).p90, 2.0);
    }
}
