//! Every summary number of a snapshot evaluation, computed from the rows alone (so each can
//! be traced to, and recomputed from, `instances.csv`).
//!
//! Definitions (docs/eval.md repeats them):
//! - means are arithmetic means over the policy's rows;
//! - gap statistics are over rows with a defined gap (`undefined` counts the others: a zero
//!   reference with a non-zero value); the median and p90 are percentiles by
//!   [`schedlm_model::quantile`] (linear between the closest ranks, NumPy's default; the
//!   median is the middle value, or the mean of the two middle values);
//! - shares are fractions in [0, 1];
//! - policy A *wins* against B on a record when A's value is lower by more than the
//!   tolerance of [`crate::snapshot::TOLERANCE`] (relative, floor 1), *ties* within it;
//! - the queue-length groups are the exact lengths when there are at most 12 distinct ones,
//!   else 8 equal-width ranges;
//! - against the rules ([`crate::baseline`]): a policy's wins, ties and losses against the
//!   best rule per instance compare its value with the row's `best_rule_value`; the shares of
//!   answers identical to the queue order and to the best rule's order are over all the
//!   policy's rows (an invalid answer is never identical); the gaps of the best rule per
//!   instance and of FCFS take every record once (`best_rule_value`, `fcfs_value` against the
//!   record's reference); the best single rule is the classic rule with the lowest mean gap
//!   among the classic rules evaluated as policies, or, when none was, among every classic
//!   rule's values on the records (their baselines).

use std::collections::{BTreeMap, HashSet};

use schedlm_model::quantile::{median, quantile};
use schedlm_solver::rules::Rule;
use serde::{Deserialize, Serialize};

use crate::baseline::RecordRules;
use crate::listing::ListingTrace;
use crate::snapshot::{gap_to, Row};
use crate::verdict::{compare, Comparison, VerdictRule};

/// Gap statistics of one policy or group.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GapStats {
    /// Mean of the defined gaps, a fraction (0.05 = 5%); `None` when no gap is defined.
    pub mean: Option<f64>,
    /// Median of the defined gaps (the middle value, or the mean of the two middle values);
    /// `None` when no gap is defined.
    pub median: Option<f64>,
    /// 90th percentile of the defined gaps ([`schedlm_model::quantile`]: linear between the
    /// closest ranks, NumPy's default); `None` when no gap is defined.
    pub p90: Option<f64>,
    /// Largest defined gap; `None` when no gap is defined.
    pub max: Option<f64>,
    /// Rows whose gap is undefined (zero reference, non-zero value).
    pub undefined: usize,
}

/// The headline numbers of one policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyStats {
    /// The policy's report name, as in the `policy` column of `instances.csv`.
    pub policy: String,
    /// Number of the policy's rows (records scored).
    pub instances: usize,
    /// Mean of `value` over the policy's rows (the FCFS fallback's for invalid answers), in the
    /// objective's unit: what the ranking uses.
    pub mean_value: f64,
    /// Mean of the leniently repaired answers' values.
    pub mean_lenient_value: f64,
    /// Statistics of the policy's gaps to the records' references.
    pub gap: GapStats,
    /// Share of rows solved optimally (value within the tolerance of the reference).
    pub optimal_share: f64,
    /// Share of rows whose answer was valid, a fraction in [0, 1] (1 for rules and solvers).
    pub valid_share: f64,
    /// Answers that never came (request or model failed, prediction missing); scored by the
    /// FCFS fallback like other invalid answers, and counted apart.
    #[serde(default)]
    pub failed: usize,
    /// Answers cut off at the token limit (`finish_reason: length`).
    #[serde(default)]
    pub truncated: usize,
    /// Mean decision time in seconds over the rows that measured one.
    pub mean_seconds: Option<f64>,
    /// Record by record against the best rule per instance (each record's best classic rule).
    pub vs_best_rule: Tally,
    /// Share of rows whose placed order is the queue order's (invalid answers never are).
    pub same_as_queue_order: f64,
    /// Share of rows whose placed order is the best rule per instance's (invalid answers never
    /// are).
    pub same_as_best_rule_order: f64,
    /// Record by record against `ect`, the earliest-completion rule (the listing of the step
    /// prompts followed at every state); `None` when the rows do not carry its value.
    #[serde(default)]
    pub vs_ect: Option<Tally>,
    /// Share of rows whose placed order is `ect`'s.
    #[serde(default)]
    pub same_as_ect_order: f64,
    /// The answers read as step decisions against the earliest-completion listing, summed
    /// over the rows that were read ([`crate::listing`]); `None` when none was.
    #[serde(default)]
    pub listing: Option<ListingTrace>,
    /// Statistics of the gaps to each record's best known value (the least of its label's
    /// value and every valid answer in the evaluation), beside [`PolicyStats::gap`], which
    /// is to the reference (a lower bound where the label is unproven).
    #[serde(default)]
    pub gap_to_best_known: GapStats,
    /// How the policy's answers were decoded (text policies; see [`Row::decoding`]).
    #[serde(default)]
    pub decoding: Option<String>,
    /// A constrained model: share of its unconstrained greedy answers that are valid orders.
    #[serde(default)]
    pub unconstrained_valid_share: Option<f64>,
    /// Records outside the model's training distribution, when the model records it.
    #[serde(default)]
    pub outside_training: Option<usize>,
    /// Requests retried in all (endpoints).
    #[serde(default)]
    pub retries: usize,
    /// Why, with how often: (reason, count), most frequent first.
    #[serde(default)]
    pub retry_reasons: Vec<(String, usize)>,
}

impl PolicyStats {
    /// Whether every answer was a valid order (rules and solvers always; text policies
    /// when none was invalid or failed). Only such a policy can be called best.
    pub fn all_valid(&self) -> bool {
        self.valid_share >= 1.0 && self.failed == 0
    }

    /// Whether the policy answered nothing at all: every one of its (at least one) answers
    /// failed. It did not schedule; reports give it no numbers and no plot line.
    pub fn all_failed(&self) -> bool {
        self.instances > 0 && self.failed == self.instances
    }
}

/// Wins, ties and losses against a reference, record by record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// Records where the value is lower than the reference by more than the tolerance.
    pub wins: usize,
    /// Records where the value equals the reference within the tolerance ([`tied`]).
    pub ties: usize,
    /// Records where the value is higher than the reference by more than the tolerance.
    pub losses: usize,
}

impl Tally {
    /// Counts `value` against `reference` (lower is better; equal within the tolerance ties).
    pub fn add(&mut self, value: f64, reference: f64) {
        if tied(value, reference) {
            self.ties += 1;
        } else if value < reference {
            self.wins += 1;
        } else {
            self.losses += 1;
        }
    }
}

/// The classic rule with the lowest mean gap over the evaluated records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BestSingleRule {
    /// The rule's name (`sjf`, ...).
    pub rule: String,
    /// `policies`: chosen among the classic rules evaluated as policies; `baselines`: no
    /// classic rule was evaluated, so chosen among every classic rule's values on the records
    /// (their `baselines`, computed when missing).
    pub source: String,
    /// Statistics of the rule's gaps to the records' references, every record once.
    pub gap: GapStats,
}

/// Wins, ties and losses of `a` against `b` over the records both scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    /// The policy counted (its wins are records where it is better).
    pub a: String,
    /// The policy it is compared with.
    pub b: String,
    /// Records where `a`'s value is lower than `b`'s by more than the tolerance.
    pub wins: usize,
    /// Records where the two values are equal within the tolerance ([`tied`]: 1e-9 relative,
    /// floor 1).
    pub ties: usize,
    /// Records where `a`'s value is higher than `b`'s by more than the tolerance.
    pub losses: usize,
}

/// One policy's numbers on a group of records (a queue-length range or a family).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// The group's label: a queue length (`12`) or range (`10-19`) in `by_queue`, a family in
    /// `by_family`.
    pub group: String,
    /// The policy's report name.
    pub policy: String,
    /// Number of the policy's rows in the group.
    pub instances: usize,
    /// Mean of `value` over those rows (the FCFS fallback's for invalid answers).
    pub mean_value: f64,
    /// Statistics of those rows' gaps.
    pub gap: GapStats,
    /// Share of those rows solved optimally, a fraction in [0, 1].
    pub optimal_share: f64,
    /// Share of those rows with a valid answer, a fraction in [0, 1].
    pub valid_share: f64,
}

/// Every summary number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Policies by mean value, best first; ties by the larger optimal share, then the
    /// command-line order. Policies with invalid or failed answers come after every policy
    /// whose answers were all valid (their means hold FCFS fallbacks, not their own orders).
    pub ranking: Vec<String>,
    /// Each policy's headline numbers, in the order of the evaluation's policies (command-line
    /// order, a best-of column right after its policy).
    pub policies: Vec<PolicyStats>,
    /// Wins, ties and losses of every ordered pair (a, b) of distinct policies.
    pub pairs: Vec<Pair>,
    /// Per queue-length group and policy: the exact lengths when there are at most 12 distinct
    /// ones, else 8 equal-width ranges; groups by increasing length.
    pub by_queue: Vec<Group>,
    /// Per record family and policy.
    pub by_family: Vec<Group>,
    /// Gap of the best rule per instance, every record once (`best_rule_value` against the
    /// record's reference).
    pub best_rule_per_instance_gap: GapStats,
    /// The best rule per instance's gaps to each record's best known value.
    #[serde(default)]
    pub best_rule_per_instance_gap_to_best_known: GapStats,
    /// Mean value of the best rule per instance, every record once.
    pub best_rule_per_instance_mean_value: f64,
    /// Gap of FCFS, every record once (`fcfs_value` against the record's reference), whether
    /// or not `fcfs` was evaluated as a policy.
    pub fcfs_gap: GapStats,
    /// The classic rule with the lowest mean gap; `None` when no rule's values are known.
    pub best_single_rule: Option<BestSingleRule>,
    /// How verdicts ("better than", "level with", "worse than") are decided.
    #[serde(default)]
    pub verdict_rule: VerdictRule,
    /// The paired comparisons behind every verdict of the report: each text policy against
    /// the best rule per instance, the best single rule, FCFS and its equal-compute baselines
    /// ([`equal_compute_baselines`]); the best policy (and the best without `optimal`) against
    /// every other policy whose answers were all valid.
    #[serde(default)]
    pub verdicts: Vec<Comparison>,
}

impl Stats {
    /// The comparison of `policy` against `against`, when the summary made one.
    pub fn verdict(&self, policy: &str, against: &str) -> Option<&Comparison> {
        self.verdicts
            .iter()
            .find(|c| c.policy == policy && c.against == against)
    }
}

/// The reference name of the best rule per instance in [`Comparison::against`].
pub const BRPI: &str = "best rule per instance";

/// The equal-compute baselines of `policy` among `policies`: the policies named `ls@POLICY`
/// (local search given the policy's decision time on each record) and
/// `ranking+Nswaps@POLICY` (the best of the ranking and N random transpositions of it, for a
/// best-of-N column).
pub fn equal_compute_baselines<'a>(policy: &str, policies: &'a [String]) -> Vec<&'a String> {
    policies
        .iter()
        .filter(|b| baseline_of(b) == Some(policy))
        .collect()
}

/// The policy an equal-compute baseline is matched to (`ls@P` and `ranking+Nswaps@P` give P).
pub fn baseline_of(name: &str) -> Option<&str> {
    let (kind, of) = name.split_once('@')?;
    let is_swaps = kind
        .strip_prefix("ranking+")
        .and_then(|k| k.strip_suffix("swaps"))
        .is_some_and(|n| n.parse::<usize>().is_ok());
    (kind == "ls" || is_swaps).then_some(of)
}

/// Whether a policy answers in text (its validity matters): `model:`, `openai:`,
/// `predictions:` and their best-of columns.
pub fn is_text(policy: &str) -> bool {
    ["model:", "openai:", "predictions:"]
        .iter()
        .any(|p| policy.starts_with(p))
}

/// Computes the statistics of `rows` for `policies` (in that order); the best single rule
/// only among the classic rules evaluated as policies; verdicts by the default rule.
pub fn summarize(policies: &[String], rows: &[Row]) -> Stats {
    summarize_with(policies, rows, &[], &VerdictRule::default())
}

/// [`summarize`], with every classic rule's values on the records (`rules`) to choose the
/// best single rule from when no classic rule was evaluated as a policy, and the rule of the
/// verdicts.
pub fn summarize_with(
    policies: &[String],
    rows: &[Row],
    rules: &[RecordRules],
    verdict_rule: &VerdictRule,
) -> Stats {
    let of = |p: &str| -> Vec<&Row> { rows.iter().filter(|r| r.policy == p).collect() };
    let per: Vec<PolicyStats> = policies.iter().map(|p| policy_stats(p, &of(p))).collect();
    let mut ranking: Vec<&PolicyStats> = per.iter().collect();
    ranking.sort_by(|a, b| {
        b.all_valid()
            .cmp(&a.all_valid())
            .then(a.mean_value.total_cmp(&b.mean_value))
            .then(b.optimal_share.total_cmp(&a.optimal_share))
    });
    let bins = queue_bins(rows);
    let records = per_record(rows);
    let best_single_rule = best_single_rule(&per, &records, rules);
    let ranked: Vec<String> = ranking.iter().map(|s| s.policy.clone()).collect();
    let verdicts = verdicts(
        &Gaps::new(rows, rules),
        policies,
        &per,
        &ranked,
        best_single_rule.as_ref(),
        verdict_rule,
    );
    Stats {
        ranking: ranked,
        pairs: pairs(policies, rows),
        by_queue: groups(policies, rows, |r| bin_label(&bins, r.queue)),
        by_family: groups(policies, rows, |r| r.family.clone()),
        best_rule_per_instance_gap: gap_stats_of(
            records
                .iter()
                .map(|r| gap_to(r.best_rule_value, r.reference).1),
        ),
        best_rule_per_instance_gap_to_best_known: gap_stats_of(records.iter().map(|r| {
            r.best_known
                .and_then(|known| gap_to(r.best_rule_value, known).1)
        })),
        best_rule_per_instance_mean_value: mean(records.iter().map(|r| r.best_rule_value))
            .unwrap_or(f64::NAN),
        fcfs_gap: gap_stats_of(records.iter().map(|r| gap_to(r.fcfs_value, r.reference).1)),
        best_single_rule,
        policies: per,
        verdict_rule: *verdict_rule,
        verdicts,
    }
}

/// Every gap by record: each policy's (from its rows), the best rule per instance's, FCFS's and
/// each classic rule's (from the records' rule values), for the paired comparisons.
struct Gaps<'a> {
    /// Record ids in order of first appearance.
    records: Vec<&'a str>,
    /// (name, record) -> gap; names are policies, [`BRPI`], `fcfs (reference)` and
    /// `rule:NAME`.
    gaps: BTreeMap<(String, &'a str), Option<f64>>,
}

impl<'a> Gaps<'a> {
    fn new(rows: &'a [Row], rules: &'a [RecordRules]) -> Self {
        let mut gaps = BTreeMap::new();
        let mut records = Vec::new();
        let mut reference: BTreeMap<&str, f64> = BTreeMap::new();
        for r in rows {
            if reference.insert(r.record.as_str(), r.reference).is_none() {
                records.push(r.record.as_str());
                let brpi = gap_to(r.best_rule_value, r.reference).1;
                gaps.insert((BRPI.to_string(), r.record.as_str()), brpi);
                let fcfs = gap_to(r.fcfs_value, r.reference).1;
                gaps.insert((FCFS_REFERENCE.to_string(), r.record.as_str()), fcfs);
                if let Some(ect) = r.ect_value {
                    let ect = gap_to(ect, r.reference).1;
                    gaps.insert((ECT.to_string(), r.record.as_str()), ect);
                }
            }
            gaps.insert((r.policy.clone(), r.record.as_str()), r.gap);
        }
        for rr in rules {
            let Some(&reference) = reference.get(rr.record.as_str()) else {
                continue;
            };
            for (rule, v) in &rr.values {
                let key = (format!("rule:{}", rule.name()), rr.record.as_str());
                gaps.insert(key, gap_to(*v, reference).1);
            }
        }
        Gaps { records, gaps }
    }

    /// (a's gap, b's gap) on every record where both are defined.
    fn pairs(&self, a: &str, b: &str) -> Vec<(f64, f64)> {
        self.records
            .iter()
            .filter_map(|&rec| {
                let ga = (*self.gaps.get(&(a.to_string(), rec))?)?;
                let gb = (*self.gaps.get(&(b.to_string(), rec))?)?;
                Some((ga, gb))
            })
            .collect()
    }

    fn has(&self, name: &str) -> bool {
        self.records
            .first()
            .is_some_and(|&rec| self.gaps.contains_key(&(name.to_string(), rec)))
    }
}

/// The name of the earliest-completion rule in comparisons (a policy of that name, evaluated
/// in the same run, has the same values).
pub const ECT: &str = "ect";

/// The reference name of FCFS (the fallback's values, known on every record) in comparisons.
pub const FCFS_REFERENCE: &str = "fcfs";

/// The comparisons behind the report's verdicts (see [`Stats::verdicts`]).
fn verdicts(
    gaps: &Gaps<'_>,
    policies: &[String],
    per: &[PolicyStats],
    ranking: &[String],
    single: Option<&BestSingleRule>,
    rule: &VerdictRule,
) -> Vec<Comparison> {
    let mut out = Vec::new();
    let mut judge = |policy: &str, against: &str, key: &str| {
        if gaps.has(key) {
            out.push(compare(policy, against, &gaps.pairs(policy, key), rule));
        }
    };
    for p in per.iter().filter(|p| is_text(&p.policy) && !p.all_failed()) {
        judge(&p.policy, BRPI, BRPI);
        judge(&p.policy, ECT, ECT);
        if let Some(b) = single.filter(|b| b.rule != "fcfs") {
            let key = if policies.contains(&b.rule) {
                b.rule.clone()
            } else {
                format!("rule:{}", b.rule)
            };
            judge(&p.policy, &b.rule, &key);
        }
        judge(&p.policy, FCFS_REFERENCE, FCFS_REFERENCE);
        for baseline in equal_compute_baselines(&p.policy, policies) {
            judge(&p.policy, baseline, baseline);
        }
    }
    // The best policy, and the best one without the exact solver, against the other policies
    // whose answers were all valid: the headline names those level with it.
    let valid: Vec<&String> = ranking
        .iter()
        .filter(|n| per.iter().any(|p| &&p.policy == n && p.all_valid()))
        .collect();
    let heads: Vec<&String> = valid
        .iter()
        .copied()
        .take(1)
        .chain(valid.iter().copied().find(|n| n.as_str() != "optimal"))
        .collect();
    let mut done: Vec<&String> = Vec::new();
    for head in heads {
        if done.contains(&head) {
            continue;
        }
        done.push(head);
        for other in valid.iter().filter(|&&o| o != head) {
            judge(head, other, other);
        }
    }
    out
}

/// The first row of every record, in order of first appearance.
fn per_record(rows: &[Row]) -> Vec<&Row> {
    let mut seen: HashSet<&str> = HashSet::new();
    rows.iter()
        .filter(|r| seen.insert(r.record.as_str()))
        .collect()
}

/// Whether a policy name is a classic rule.
fn classic(name: &str) -> bool {
    Rule::from_name(name).is_some_and(|r| Rule::CLASSIC.contains(&r))
}

/// The classic rule with the lowest mean gap (ties: the first, in command-line order or in
/// [`Rule::CLASSIC`] order): among the policies when some are classic rules, else from
/// `rules` (every record of `records` that has them).
fn best_single_rule(
    per: &[PolicyStats],
    records: &[&Row],
    rules: &[RecordRules],
) -> Option<BestSingleRule> {
    let lowest = |candidates: Vec<(String, GapStats)>, source: &str| {
        let mut best: Option<(String, GapStats)> = None;
        for (rule, gap) in candidates {
            let Some(m) = gap.mean else { continue };
            if best
                .as_ref()
                .and_then(|(_, b)| b.mean)
                .is_none_or(|b| m < b)
            {
                best = Some((rule, gap));
            }
        }
        best.map(|(rule, gap)| BestSingleRule {
            rule,
            source: source.to_string(),
            gap,
        })
    };
    let listed: Vec<(String, GapStats)> = per
        .iter()
        .filter(|p| classic(&p.policy))
        .map(|p| (p.policy.clone(), p.gap.clone()))
        .collect();
    if !listed.is_empty() {
        return lowest(listed, "policies");
    }
    let by_id: BTreeMap<&str, &RecordRules> =
        rules.iter().map(|r| (r.record.as_str(), r)).collect();
    let candidates = Rule::CLASSIC
        .iter()
        .map(|&rule| {
            let gaps = records.iter().filter_map(|row| {
                let values = &by_id.get(row.record.as_str())?.values;
                let &(_, v) = values.iter().find(|(r, _)| *r == rule)?;
                Some(gap_to(v, row.reference).1)
            });
            (rule.name().to_string(), gap_stats_of(gaps))
        })
        .collect();
    lowest(candidates, "baselines")
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

fn share(rows: &[&Row], f: impl Fn(&Row) -> bool) -> f64 {
    if rows.is_empty() {
        return 0.0;
    }
    rows.iter().filter(|r| f(r)).count() as f64 / rows.len() as f64
}

/// Gap statistics of rows.
pub fn gap_stats(rows: &[&Row]) -> GapStats {
    gap_stats_of(rows.iter().map(|r| r.gap))
}

/// Gap statistics of gaps (`None`: undefined).
pub fn gap_stats_of(gaps: impl IntoIterator<Item = Option<f64>>) -> GapStats {
    let all: Vec<Option<f64>> = gaps.into_iter().collect();
    let mut gaps: Vec<f64> = all.iter().filter_map(|g| *g).collect();
    gaps.sort_by(f64::total_cmp);
    let n = gaps.len();
    GapStats {
        mean: mean(gaps.iter().copied()),
        median: median(&gaps),
        p90: quantile(&gaps, 0.9),
        max: gaps.last().copied(),
        undefined: all.len() - n,
    }
}

fn policy_stats(policy: &str, rows: &[&Row]) -> PolicyStats {
    PolicyStats {
        policy: policy.to_string(),
        instances: rows.len(),
        mean_value: mean(rows.iter().map(|r| r.value)).unwrap_or(f64::NAN),
        mean_lenient_value: mean(rows.iter().map(|r| r.lenient_value)).unwrap_or(f64::NAN),
        gap: gap_stats(rows),
        optimal_share: share(rows, |r| r.optimal),
        valid_share: share(rows, |r| r.valid),
        failed: rows.iter().filter(|r| r.failed).count(),
        truncated: rows.iter().filter(|r| r.truncated).count(),
        mean_seconds: mean(rows.iter().filter_map(|r| r.seconds)),
        vs_best_rule: rows.iter().fold(Tally::default(), |mut t, r| {
            t.add(r.value, r.best_rule_value);
            t
        }),
        same_as_queue_order: share(rows, |r| r.same_as_queue_order),
        same_as_best_rule_order: share(rows, |r| r.same_as_best_rule_order),
        vs_ect: rows
            .iter()
            .map(|r| r.ect_value.map(|ect| (r.value, ect)))
            .collect::<Option<Vec<_>>>()
            .map(|pairs| {
                pairs.into_iter().fold(Tally::default(), |mut t, (v, ect)| {
                    t.add(v, ect);
                    t
                })
            }),
        same_as_ect_order: share(rows, |r| r.same_as_ect_order),
        listing: rows.iter().any(|r| r.decisions.is_some()).then(|| {
            rows.iter().fold(ListingTrace::default(), |mut t, r| {
                t.add(&ListingTrace {
                    decisions: r.decisions.unwrap_or(0),
                    leaving: r.leaving.unwrap_or(0),
                    leaving_right: r.leaving_right.unwrap_or(0),
                });
                t
            })
        }),
        gap_to_best_known: gap_stats_of(rows.iter().map(|r| r.gap_to_best_known)),
        decoding: rows
            .iter()
            .map(|r| r.decoding.as_str())
            .find(|d| !d.is_empty())
            .map(str::to_string),
        unconstrained_valid_share: {
            let checked: Vec<bool> = rows.iter().filter_map(|r| r.unconstrained_valid).collect();
            (!checked.is_empty())
                .then(|| checked.iter().filter(|&&v| v).count() as f64 / checked.len() as f64)
        },
        outside_training: rows.iter().any(|r| r.outside_training.is_some()).then(|| {
            rows.iter()
                .filter(|r| r.outside_training == Some(true))
                .count()
        }),
        retries: rows.iter().map(|r| r.retries as usize).sum(),
        retry_reasons: reasons(rows),
    }
}

/// The retry reasons of rows with how often each occurs, most frequent first (ties by the
/// reason's text).
fn reasons(rows: &[&Row]) -> Vec<(String, usize)> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in rows {
        for why in r.retry_reasons.split("; ").filter(|w| !w.is_empty()) {
            *counts.entry(why).or_default() += 1;
        }
    }
    let mut out: Vec<(String, usize)> = counts
        .into_iter()
        .map(|(w, n)| (w.to_string(), n))
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

pub use schedlm_model::tied;

fn pairs(policies: &[String], rows: &[Row]) -> Vec<Pair> {
    let mut values: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    for r in rows {
        values.insert((r.policy.as_str(), r.record.as_str()), r.value);
    }
    let mut out = Vec::new();
    for a in policies {
        for b in policies.iter().filter(|b| *b != a) {
            let mut pair = Pair {
                a: a.clone(),
                b: b.clone(),
                wins: 0,
                ties: 0,
                losses: 0,
            };
            for r in rows.iter().filter(|r| &r.policy == a) {
                let Some(&vb) = values.get(&(b.as_str(), r.record.as_str())) else {
                    continue;
                };
                if tied(r.value, vb) {
                    pair.ties += 1;
                } else if r.value < vb {
                    pair.wins += 1;
                } else {
                    pair.losses += 1;
                }
            }
            out.push(pair);
        }
    }
    out
}

/// Queue-length ranges `(lo, hi)`, inclusive.
pub fn queue_bins(rows: &[Row]) -> Vec<(usize, usize)> {
    let mut lengths: Vec<usize> = rows.iter().map(|r| r.queue).collect();
    lengths.sort_unstable();
    lengths.dedup();
    let (Some(&lo), Some(&hi)) = (lengths.first(), lengths.last()) else {
        return Vec::new();
    };
    if lengths.len() <= 12 {
        return lengths.iter().map(|&l| (l, l)).collect();
    }
    let width = (hi - lo + 1).div_ceil(8);
    (0..8)
        .map(|k| (lo + k * width, lo + (k + 1) * width - 1))
        .filter(|&(a, b)| lengths.iter().any(|&l| a <= l && l <= b))
        .collect()
}

/// The label of the range holding `len`: `12`, or `10-19`.
pub fn bin_label(bins: &[(usize, usize)], len: usize) -> String {
    match bins.iter().find(|&&(a, b)| a <= len && len <= b) {
        Some(&(a, b)) if a == b => format!("{a}"),
        Some(&(a, b)) => format!("{a}-{b}"),
        None => format!("{len}"),
    }
}

/// Per group (in order of first appearance in the rows) and policy.
fn groups(policies: &[String], rows: &[Row], key: impl Fn(&Row) -> String) -> Vec<Group> {
    let mut keys: Vec<String> = Vec::new();
    for r in rows {
        let k = key(r);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    sort_keys(&mut keys);
    let mut out = Vec::new();
    for k in &keys {
        for p in policies {
            let members: Vec<&Row> = rows
                .iter()
                .filter(|r| &r.policy == p && &key(r) == k)
                .collect();
            if members.is_empty() {
                continue;
            }
            out.push(Group {
                group: k.clone(),
                policy: p.clone(),
                instances: members.len(),
                mean_value: mean(members.iter().map(|r| r.value)).unwrap_or(f64::NAN),
                gap: gap_stats(&members),
                optimal_share: share(&members, |r| r.optimal),
                valid_share: share(&members, |r| r.valid),
            });
        }
    }
    out
}

/// Numeric labels (`12`, `10-19`) by their first number, others alphabetically.
fn sort_keys(keys: &mut [String]) {
    keys.sort_by(|a, b| {
        let num = |s: &str| s.split('-').next().and_then(|n| n.parse::<usize>().ok());
        match (num(a), num(b)) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => a.cmp(b),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(policy: &str, record: &str, queue: usize, value: f64, reference: f64) -> Row {
        let gap = crate::snapshot::Row {
            policy: policy.into(),
            record: record.into(),
            line: 1,
            family: "hpc".into(),
            queue,
            reference,
            proven: true,
            value,
            gap: None,
            optimal: tied(value, reference),
            valid: true,
            failed: false,
            truncated: false,
            lenient_value: value,
            fcfs_value: value,
            defects: String::new(),
            seconds: None,
            best_rule: "sjf".into(),
            best_rule_value: value,
            same_as_queue_order: false,
            same_as_best_rule_order: false,
            ect_value: Some(value),
            same_as_ect_order: false,
            decisions: None,
            leaving: None,
            leaving_right: None,
            best_known: Some(reference),
            gap_to_best_known: None,
            decoding: String::new(),
            unconstrained_valid: None,
            outside_training: None,
            retries: 0,
            retry_reasons: String::new(),
        };
        Row {
            gap: (reference > 0.0).then(|| (value - reference) / reference),
            ..gap
        }
    }

    /// Record `r1`..`r6`: (best rule value, FCFS value); every reference is 1.
    const RECORDS: [(f64, f64); 6] = [
        (1.0, 1.5),
        (1.2, 1.2),
        (1.5, 2.0),
        (1.1, 1.1),
        (2.0, 3.0),
        (1.3, 1.4),
    ];

    /// A row of a record of [`RECORDS`] (0-based `k`) with the given value and flags.
    fn rule_row(policy: &str, k: usize, value: f64, valid: bool, queue: bool, best: bool) -> Row {
        let (best_value, fcfs) = RECORDS[k];
        Row {
            valid,
            fcfs_value: fcfs,
            best_rule_value: best_value,
            same_as_queue_order: queue,
            same_as_best_rule_order: best,
            ..row(policy, &format!("r{}", k + 1), 4, value, 1.0)
        }
    }

    /// FCFS, SJF and two text policies on [`RECORDS`]: `predictions:p` answers FCFS's order
    /// on r1, r2 (where FCFS is the best rule) and r6, the best rule's order on r3, an invalid
    /// answer on r4 (scored by FCFS, never identical) and beats the best rule on r5;
    /// `model:m` answers FCFS's order everywhere.
    fn against_rules_rows() -> Vec<Row> {
        let mut rows = Vec::new();
        for (k, &(best, fcfs)) in RECORDS.iter().enumerate() {
            let fcfs_is_best = tied(fcfs, best);
            rows.push(rule_row("fcfs", k, fcfs, true, true, fcfs_is_best));
        }
        for (k, v) in [1.2, 1.3, 1.5, 1.2, 2.0, 1.3].into_iter().enumerate() {
            rows.push(rule_row("sjf", k, v, true, false, false));
        }
        let p = "predictions:p";
        rows.push(rule_row(p, 0, 1.5, true, true, false));
        rows.push(rule_row(p, 1, 1.2, true, true, true));
        rows.push(rule_row(p, 2, 1.5, true, false, true));
        rows.push(rule_row(p, 3, 1.1, false, false, false));
        rows.push(rule_row(p, 4, 1.5, true, false, false));
        rows.push(rule_row(p, 5, 1.4, true, true, false));
        for (k, &(best, fcfs)) in RECORDS.iter().enumerate() {
            rows.push(rule_row("model:m", k, fcfs, true, true, tied(fcfs, best)));
        }
        rows
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-12)
    }

    #[test]
    fn a_policy_with_invalid_answers_ranks_after_every_valid_one() {
        let mut rows = vec![
            row("fcfs", "a", 3, 10.0, 5.0),
            row("fcfs", "b", 3, 10.0, 5.0),
            row("llm", "a", 3, 5.0, 5.0),
            row("llm", "b", 3, 10.0, 5.0),
        ];
        // One of llm's answers failed (scored by FCFS); its mean is still the lowest.
        rows[3].valid = false;
        rows[3].failed = true;
        let policies = vec!["llm".to_string(), "fcfs".to_string()];
        let stats = summarize(&policies, &rows);
        assert_eq!(stats.ranking, vec!["fcfs", "llm"]);
        let llm = &stats.policies[0];
        assert_eq!((llm.failed, llm.all_valid()), (1, false));
    }

    #[test]
    fn text_policies_against_the_rules() {
        let rows = against_rules_rows();
        let names: Vec<String> = ["fcfs", "sjf", "predictions:p", "model:m"]
            .map(String::from)
            .to_vec();
        let s = summarize(&names, &rows);
        let p = &s.policies[2];
        assert_eq!(
            p.vs_best_rule,
            Tally {
                wins: 1,
                ties: 3,
                losses: 2
            }
        );
        assert_eq!(p.same_as_queue_order, 3.0 / 6.0);
        assert_eq!(p.same_as_best_rule_order, 2.0 / 6.0);
        let m = &s.policies[3];
        assert_eq!(
            m.vs_best_rule,
            Tally {
                wins: 0,
                ties: 2,
                losses: 4
            }
        );
        assert_eq!(
            (m.same_as_queue_order, m.same_as_best_rule_order),
            (1.0, 2.0 / 6.0)
        );
        // FCFS never beats the best rule per instance (it is one of the rules).
        assert_eq!(s.policies[0].vs_best_rule.wins, 0);
        // Every record once: best rule gaps 0 .2 .5 .1 1 .3, FCFS gaps .5 .2 1 .1 2 .4.
        assert!(close(s.best_rule_per_instance_gap.mean, 2.1 / 6.0));
        assert_eq!(s.best_rule_per_instance_gap.max, Some(1.0));
        assert!(close(Some(s.best_rule_per_instance_mean_value), 8.1 / 6.0));
        assert!(close(s.fcfs_gap.mean, 4.2 / 6.0));
        let single = s.best_single_rule.as_ref().unwrap();
        assert_eq!(
            (single.rule.as_str(), single.source.as_str()),
            ("sjf", "policies")
        );
        assert!(close(single.gap.mean, 2.5 / 6.0));

        // The headline says it in words.
        let summary = crate::report::SnapshotSummary {
            data: "d.jsonl".into(),
            objective: "bsld".into(),
            variant: "serial".into(),
            records: 6,
            proven: 6,
            settings: crate::report::Settings {
                optimal_time_limit_s: 1.0,
                optimal_node_limit: None,
                seed: 1,
                ls_evaluations: 1,
            },
            notes: Vec::new(),
            examples: Vec::new(),
            stats: s.clone(),
        };
        let lines = crate::report::markdown::headline(&summary);
        let line = |name: &str| {
            lines
                .iter()
                .find(|l| l.starts_with(&format!("**{name}**: mean gap")))
                .cloned()
                .unwrap_or_else(|| panic!("no sentence for {name}: {lines:?}"))
        };
        // Six records prove nothing: every verdict is "level with", whatever the means.
        assert_eq!(
            line("predictions:p"),
            "**predictions:p**: mean gap 36.7%; level with the best rule per instance (35.0%), \
             level with the best single rule sjf (41.7%), level with FCFS (70.0%); no \
             equal-compute baseline (its decision times are unknown); against the best rule \
             per instance: 1 win, 3 ties, 2 losses; answers identical to the queue order on \
             50.0%, to the best rule's order on 33.3%."
        );
        let m = line("model:m");
        assert!(
            m.contains("level with FCFS (70.0%)")
                && m.contains("0 wins, 2 ties, 4 losses")
                && m.contains("queue order on 100.0%"),
            "{m}"
        );
        // The comparisons behind the sentences: FCFS answers FCFS everywhere (all ties).
        let fcfs = s
            .verdicts
            .iter()
            .find(|c| c.policy == "model:m" && c.against == FCFS_REFERENCE)
            .unwrap();
        assert_eq!((fcfs.ties, fcfs.mean_difference), (6, 0.0));
        // Rules get no such sentence.
        assert!(!lines.iter().any(|l| l.starts_with("**fcfs**: mean gap")));
    }

    #[test]
    fn best_single_rule_from_the_baselines_without_rule_policies() {
        let rows: Vec<Row> = against_rules_rows()
            .into_iter()
            .filter(|r| r.policy == "model:m")
            .collect();
        // Per record: every classic rule at its FCFS value, but ljf at half the distance.
        let rules: Vec<RecordRules> = RECORDS
            .iter()
            .enumerate()
            .map(|(k, &(best, fcfs))| RecordRules {
                record: format!("r{}", k + 1),
                line: k + 1,
                values: Rule::CLASSIC
                    .iter()
                    .map(|&r| {
                        (
                            r,
                            if r == Rule::Ljf {
                                (1.0 + fcfs) / 2.0
                            } else {
                                fcfs
                            },
                        )
                    })
                    .collect(),
                from_record: true,
                best_rule: Rule::Ljf,
                best_value: best,
                best_order: Vec::new(),
                rank: Vec::new(),
                ect_order: Vec::new(),
                ect_value: fcfs,
                queue_order: Vec::new(),
                disagrees: false,
            })
            .collect();
        let s = summarize_with(
            &["model:m".to_string()],
            &rows,
            &rules,
            &VerdictRule::default(),
        );
        let single = s.best_single_rule.unwrap();
        assert_eq!(
            (single.rule.as_str(), single.source.as_str()),
            ("ljf", "baselines")
        );
        assert!(close(single.gap.mean, 2.1 / 6.0));
        assert!(summarize(&["model:m".to_string()], &rows)
            .best_single_rule
            .is_none());
    }

    #[test]
    fn statistics_follow_their_definitions() {
        let rows = vec![
            row("a", "x", 5, 2.0, 1.0),
            row("a", "y", 6, 1.0, 1.0),
            row("a", "z", 6, 1.5, 1.0),
            row("a", "w", 7, 3.0, 0.0),
            row("b", "x", 5, 1.0, 1.0),
            row("b", "y", 6, 1.0, 1.0),
            row("b", "z", 6, 2.0, 1.0),
        ];
        let s = summarize(&["a".into(), "b".into()], &rows);
        let a = &s.policies[0];
        assert_eq!(a.gap.median, Some(0.5));
        // numpy.percentile([0, 0.5, 1], 90) = 0.9
        assert!((a.gap.p90.unwrap() - 0.9).abs() < 1e-12);
        assert_eq!(a.gap.undefined, 1);
        assert_eq!(a.optimal_share, 0.25);
        assert_eq!(s.ranking, vec!["b".to_string(), "a".to_string()]);
        assert_eq!(
            (s.pairs[0].wins, s.pairs[0].ties, s.pairs[0].losses),
            (1, 1, 1)
        );
        let labels: Vec<&str> = s.by_queue.iter().map(|g| g.group.as_str()).collect();
        assert_eq!(labels, vec!["5", "5", "6", "6", "7"]);
    }
}
