//! Verdicts: whether one policy is better than, level with or worse than another on the same
//! records.
//!
//! Mean gaps that differ in the fourth decimal are not a result. A verdict here needs two
//! things at once:
//!
//! 1. **A paired test.** The per-record differences `d_i = gap_a(i) - gap_b(i)` (records where
//!    both gaps are defined) are resampled with replacement ([`VerdictRule::resamples`] times,
//!    seeded, so the same inputs give the same verdict); the 95% percentile interval of their
//!    mean must exclude 0. The exact two-sided sign test on the records where the two differ
//!    (ties dropped) is reported beside it.
//! 2. **A practical margin.** The mean difference must be at least [`VerdictRule::margin`]
//!    (0.1 percentage points of gap by default) in the same direction.
//!
//! Then the verdict is *better* (negative differences: lower gaps) or *worse*; otherwise the two
//! are *level*. A policy that answers exactly what another answers on every record is level
//! with it, whatever the means say.
//!
//! ```
//! use schedlm_eval::verdict::{compare, Verdict, VerdictRule};
//!
//! let rule = VerdictRule::default();
//! // A policy 1 point better on every one of 50 records.
//! let pairs: Vec<(f64, f64)> = (0..50).map(|i| (0.01 * (i % 3) as f64, 0.01 + 0.01 * (i % 3) as f64)).collect();
//! assert_eq!(compare("a", "b", &pairs, &rule).verdict, Verdict::Better);
//! // Differences of 0.0005 points both ways: level, however many records.
//! let tiny: Vec<(f64, f64)> = (0..1000).map(|i| (0.01, 0.01 + if i % 2 == 0 { 5e-6 } else { -4e-6 })).collect();
//! assert_eq!(compare("a", "b", &tiny, &rule).verdict, Verdict::Level);
//! ```

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use schedlm_model::quantile::quantile;
use serde::{Deserialize, Serialize};

use crate::stats::tied;

/// How verdicts are decided.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VerdictRule {
    /// The smallest mean gap difference that counts, a fraction of gap (0.001 = 0.1
    /// percentage points).
    pub margin: f64,
    /// Confidence of the bootstrap interval (0.95).
    pub confidence: f64,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Seed of the resampling.
    pub seed: u64,
}

impl Default for VerdictRule {
    fn default() -> Self {
        VerdictRule {
            margin: 0.001,
            confidence: 0.95,
            resamples: 2000,
            seed: 1,
        }
    }
}

impl VerdictRule {
    /// The rule in words, for reports.
    pub fn describe(&self) -> String {
        format!(
            "\"better\" or \"worse\" only when the {:.0}% paired bootstrap interval of the mean \
             gap difference ({} resamples) excludes 0 and the difference is at least {} \
             percentage points; otherwise \"level with\"",
            100.0 * self.confidence,
            self.resamples,
            trim(100.0 * self.margin)
        )
    }
}

/// The outcome of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Lower gaps, by the test and by at least the margin.
    Better,
    /// Neither better nor worse by the rule.
    Level,
    /// Higher gaps, by the test and by at least the margin.
    Worse,
}

impl Verdict {
    /// `better than`, `level with`, `worse than`.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Better => "better than",
            Verdict::Level => "level with",
            Verdict::Worse => "worse than",
        }
    }
}

/// One policy set against another on the records both scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The policy judged.
    pub policy: String,
    /// What it is set against: a policy, or a reference such as the best rule per instance.
    pub against: String,
    /// Records with both gaps defined (the pairs the test uses).
    pub records: usize,
    /// Records where the policy's gap is lower (beyond the tolerance).
    pub wins: usize,
    /// Records where the two are equal within the tolerance.
    pub ties: usize,
    /// Records where the policy's gap is higher.
    pub losses: usize,
    /// Mean of `gap(policy) - gap(against)`, a fraction (negative: the policy is better).
    pub mean_difference: f64,
    /// The bootstrap interval of `mean_difference`, [low, high].
    pub interval: [f64; 2],
    /// Exact two-sided sign-test p-value over the records that differ (1 when none does).
    pub sign_test_p: f64,
    /// The verdict.
    pub verdict: Verdict,
}

/// Compares `policy` with `against` over `pairs` of (policy's gap, other's gap) on the same
/// records.
pub fn compare(
    policy: &str,
    against: &str,
    pairs: &[(f64, f64)],
    rule: &VerdictRule,
) -> Comparison {
    let (mut wins, mut ties, mut losses) = (0, 0, 0);
    let diffs: Vec<f64> = pairs
        .iter()
        .map(|&(a, b)| {
            if tied(a, b) {
                ties += 1;
                0.0
            } else {
                if a < b {
                    wins += 1;
                } else {
                    losses += 1;
                }
                a - b
            }
        })
        .collect();
    let n = diffs.len();
    let mean = if n == 0 {
        0.0
    } else {
        diffs.iter().sum::<f64>() / n as f64
    };
    let interval = bootstrap(&diffs, rule);
    let verdict = if n == 0 || wins + losses == 0 {
        Verdict::Level
    } else if interval[1] < 0.0 && mean <= -rule.margin {
        Verdict::Better
    } else if interval[0] > 0.0 && mean >= rule.margin {
        Verdict::Worse
    } else {
        Verdict::Level
    };
    Comparison {
        policy: policy.to_string(),
        against: against.to_string(),
        records: n,
        wins,
        ties,
        losses,
        mean_difference: mean,
        interval,
        sign_test_p: sign_test(wins, losses),
        verdict,
    }
}

/// The percentile interval of the mean of `diffs` over seeded bootstrap resamples.
fn bootstrap(diffs: &[f64], rule: &VerdictRule) -> [f64; 2] {
    let n = diffs.len();
    if n == 0 || diffs.iter().all(|&d| d == diffs[0]) {
        let v = diffs.first().copied().unwrap_or(0.0);
        return [v, v];
    }
    let mut rng = ChaCha8Rng::seed_from_u64(rule.seed);
    let mut means: Vec<f64> = (0..rule.resamples.max(1))
        .map(|_| (0..n).map(|_| diffs[rng.random_range(0..n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let tail = (1.0 - rule.confidence) / 2.0;
    [
        quantile(&means, tail).unwrap_or(0.0),
        quantile(&means, 1.0 - tail).unwrap_or(0.0),
    ]
}

/// Exact two-sided sign test: the probability, with wins and losses equally likely, of a split
/// at least as uneven as this one.
pub fn sign_test(wins: usize, losses: usize) -> f64 {
    let n = wins + losses;
    if n == 0 {
        return 1.0;
    }
    let k = wins.min(losses);
    // log C(n, i) by sums of logs; 0.5^n in log space too.
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut ln_c = 0.0; // log C(n, 0)
    let mut tail = 0.0;
    for i in 0..=k {
        if i > 0 {
            ln_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        tail += (ln_c + ln_half_n).exp();
    }
    (2.0 * tail).min(1.0)
}

/// A number of percentage points without trailing zeros (`0.1`, `0.25`).
fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_test_by_hand() {
        // 10 wins, 0 losses: 2 * 0.5^10.
        assert!((sign_test(10, 0) - 2.0 / 1024.0).abs() < 1e-12);
        // 5/5: every split is at least as uneven.
        assert_eq!(sign_test(5, 5), 1.0);
        // 1 win, 4 losses: 2 * (1 + 5) / 32.
        assert!((sign_test(1, 4) - 12.0 / 32.0).abs() < 1e-12);
        assert_eq!(sign_test(0, 0), 1.0);
        // Large n stays finite and in (0, 1].
        let p = sign_test(5_000, 5_200);
        assert!(p > 0.0 && p <= 1.0);
    }

    #[test]
    fn identical_answers_are_level_whatever_the_count() {
        let pairs = vec![(0.02, 0.02); 500];
        let c = compare("a", "b", &pairs, &VerdictRule::default());
        assert_eq!(
            (c.verdict, c.ties, c.interval),
            (Verdict::Level, 500, [0.0, 0.0])
        );
    }

    #[test]
    fn a_clear_difference_below_the_margin_is_level() {
        // 0.05 points better on every record: the test says so, the margin does not.
        let pairs: Vec<(f64, f64)> = (0..400).map(|_| (0.0100, 0.0105)).collect();
        let c = compare("a", "b", &pairs, &VerdictRule::default());
        assert!(c.interval[1] < 0.0);
        assert_eq!(c.verdict, Verdict::Level);
        let strict = VerdictRule {
            margin: 0.0001,
            ..VerdictRule::default()
        };
        assert_eq!(compare("a", "b", &pairs, &strict).verdict, Verdict::Better);
    }

    #[test]
    fn a_large_but_noisy_difference_is_level() {
        // Mean 0.5 points worse, but from 2 records out of 10 with big swings both ways.
        let mut pairs = vec![(0.01, 0.01); 8];
        pairs.push((0.10, 0.0));
        pairs.push((0.0, 0.05));
        let c = compare("a", "b", &pairs, &VerdictRule::default());
        assert!(c.mean_difference > 0.001);
        assert!(c.interval[0] < 0.0);
        assert_eq!(c.verdict, Verdict::Level);
    }

    #[test]
    fn worse_is_the_mirror_of_better_and_the_rule_is_deterministic() {
        let pairs: Vec<(f64, f64)> = (0..60)
            .map(|i| (0.03 + 0.001 * (i % 7) as f64, 0.01 + 0.001 * (i % 5) as f64))
            .collect();
        let rule = VerdictRule::default();
        let a = compare("a", "b", &pairs, &rule);
        assert_eq!(a.verdict, Verdict::Worse);
        assert_eq!(a, compare("a", "b", &pairs, &rule));
        let mirrored: Vec<(f64, f64)> = pairs.iter().map(|&(x, y)| (y, x)).collect();
        assert_eq!(compare("b", "a", &mirrored, &rule).verdict, Verdict::Better);
        assert!(rule.describe().contains("0.1 percentage points"));
    }
}
