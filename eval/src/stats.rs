//! Every summary number of a snapshot evaluation, computed from the rows alone (so each can
//! be traced to, and recomputed from, `instances.csv`).
//!
//! Definitions (docs/eval.md repeats them):
//! - means are arithmetic means over the policy's rows;
//! - gap statistics are over rows with a defined gap (`undefined` counts the others: a zero
//!   reference with a non-zero value); the median is the middle value (the mean of the two
//!   middle values for an even count); p90 is the nearest-rank 90th percentile (the smallest
//!   value with at least 90% of the values at or below it);
//! - shares are fractions in [0, 1];
//! - policy A *wins* against B on a record when A's value is lower by more than the
//!   tolerance of [`crate::snapshot::TOLERANCE`] (relative, floor 1), *ties* within it;
//! - the queue-length groups are the exact lengths when there are at most 12 distinct ones,
//!   else 8 equal-width ranges.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::snapshot::{Row, TOLERANCE};

/// Gap statistics of one policy or group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GapStats {
    pub mean: Option<f64>,
    pub median: Option<f64>,
    pub p90: Option<f64>,
    pub max: Option<f64>,
    /// Rows whose gap is undefined (zero reference, non-zero value).
    pub undefined: usize,
}

/// The headline numbers of one policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyStats {
    pub policy: String,
    pub instances: usize,
    pub mean_value: f64,
    /// Mean of the leniently repaired answers' values.
    pub mean_lenient_value: f64,
    pub gap: GapStats,
    /// Share of rows solved optimally (value within the tolerance of the reference).
    pub optimal_share: f64,
    pub valid_share: f64,
    /// Mean decision time in seconds over the rows that measured one.
    pub mean_seconds: Option<f64>,
}

/// Wins, ties and losses of `a` against `b` over the records both scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    pub a: String,
    pub b: String,
    pub wins: usize,
    pub ties: usize,
    pub losses: usize,
}

/// One policy's numbers on a group of records (a queue-length range or a family).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub group: String,
    pub policy: String,
    pub instances: usize,
    pub mean_value: f64,
    pub gap: GapStats,
    pub optimal_share: f64,
    pub valid_share: f64,
}

/// Every summary number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Policies by mean value, best first; ties by the larger optimal share, then the
    /// command-line order.
    pub ranking: Vec<String>,
    pub policies: Vec<PolicyStats>,
    pub pairs: Vec<Pair>,
    pub by_queue: Vec<Group>,
    pub by_family: Vec<Group>,
}

/// Computes the statistics of `rows` for `policies` (in that order).
pub fn summarize(policies: &[String], rows: &[Row]) -> Stats {
    let of = |p: &str| -> Vec<&Row> { rows.iter().filter(|r| r.policy == p).collect() };
    let per: Vec<PolicyStats> = policies.iter().map(|p| policy_stats(p, &of(p))).collect();
    let mut ranking: Vec<&PolicyStats> = per.iter().collect();
    ranking.sort_by(|a, b| {
        a.mean_value
            .total_cmp(&b.mean_value)
            .then(b.optimal_share.total_cmp(&a.optimal_share))
    });
    let bins = queue_bins(rows);
    Stats {
        ranking: ranking.iter().map(|s| s.policy.clone()).collect(),
        pairs: pairs(policies, rows),
        by_queue: groups(policies, rows, |r| bin_label(&bins, r.queue)),
        by_family: groups(policies, rows, |r| r.family.clone()),
        policies: per,
    }
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
    let mut gaps: Vec<f64> = rows.iter().filter_map(|r| r.gap).collect();
    gaps.sort_by(f64::total_cmp);
    let n = gaps.len();
    let median = (n > 0).then(|| {
        if n % 2 == 1 {
            gaps[n / 2]
        } else {
            (gaps[n / 2 - 1] + gaps[n / 2]) / 2.0
        }
    });
    let p90 = (n > 0).then(|| gaps[(0.9 * n as f64).ceil() as usize - 1]);
    GapStats {
        mean: mean(gaps.iter().copied()),
        median,
        p90,
        max: gaps.last().copied(),
        undefined: rows.len() - n,
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
        mean_seconds: mean(rows.iter().filter_map(|r| r.seconds)),
    }
}

/// Whether two values are equal within the tolerance.
pub fn tied(a: f64, b: f64) -> bool {
    (a - b).abs() <= TOLERANCE * a.abs().max(b.abs()).max(1.0)
}

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
            lenient_value: value,
            fcfs_value: value,
            defects: String::new(),
            seconds: None,
        };
        Row {
            gap: (reference > 0.0).then(|| (value - reference) / reference),
            ..gap
        }
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
        assert_eq!(a.gap.p90, Some(1.0));
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
