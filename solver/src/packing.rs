//! How much of a free capacity the queued jobs can use at once.
//!
//! Rigid jobs fill a free capacity only in sums of their demands: with 72 cores free and jobs
//! of 32 and 64 cores, at most 64 cores work. The largest sum of queued demands (each job at
//! most once) that fits in a free amount bounds the rate at which any set of queued jobs can
//! process energy, whichever of them run; pooled over several servers, the jobs on each server
//! are disjoint, so the bound on the pool still holds. The energy bound of branch and bound
//! uses it in place of the raw free capacity.

use schedlm_model::Problem;

/// Largest table (capacity x distinct demands) built per resource; beyond it the resource is
/// not rounded (the raw free capacity is a valid, weaker bound).
const MAX_WORK: usize = 1 << 24;

/// Per resource, the largest sum of queued demands at or below each free amount.
#[derive(Debug, Clone)]
pub(crate) struct UsableCapacity {
    /// `down[q][x]`: the largest achievable sum <= x; empty when resource `q` is not rounded.
    down: Vec<Vec<i64>>,
}

impl UsableCapacity {
    /// Tables for the queued jobs of `problem`, against the pooled capacity of its servers.
    pub(crate) fn new(problem: &Problem) -> Self {
        let down = (0..problem.resources())
            .map(|q| {
                let total: i64 = (0..problem.servers()).map(|s| problem.capacity(s)[q]).sum();
                let demands = (0..problem.jobs()).map(|j| problem.demand(j)[q]);
                round_down_table(total, demands)
            })
            .collect();
        UsableCapacity { down }
    }

    /// The most of `free` units of resource `q` that queued jobs can occupy at once.
    pub(crate) fn usable(&self, q: usize, free: i64) -> i64 {
        let table = &self.down[q];
        match usize::try_from(free) {
            Ok(x) if x < table.len() => table[x],
            _ => free,
        }
    }
}

/// `table[x]` = the largest sum of a sub-multiset of `demands` (positive ones) that is at most
/// `x`, for `x` in `0..=total`; empty when that would take more than [`MAX_WORK`] steps.
fn round_down_table(total: i64, demands: impl Iterator<Item = i64>) -> Vec<i64> {
    let Ok(cap) = usize::try_from(total) else {
        return Vec::new();
    };
    let mut counts: Vec<(usize, usize)> = Vec::new();
    let mut sorted: Vec<usize> = demands
        .filter_map(|d| usize::try_from(d).ok())
        .filter(|&d| d > 0 && d <= cap)
        .collect();
    sorted.sort_unstable();
    for d in sorted {
        match counts.last_mut() {
            Some((v, c)) if *v == d => *c += 1,
            _ => counts.push((d, 1)),
        }
    }
    if counts.len().saturating_mul(cap + 1) > MAX_WORK {
        return Vec::new();
    }
    // Bounded subset sum: reach[x] once some sub-multiset sums to x; `used[x]` counts the
    // copies of the current demand in the cheapest way to reach x.
    let mut reach = vec![false; cap + 1];
    reach[0] = true;
    let mut used = vec![0usize; cap + 1];
    for &(v, c) in &counts {
        used.fill(0);
        for x in v..=cap {
            if !reach[x] && reach[x - v] && used[x - v] < c {
                reach[x] = true;
                used[x] = used[x - v] + 1;
            }
        }
    }
    let mut best = 0;
    reach
        .iter()
        .enumerate()
        .map(|(x, &r)| {
            if r {
                best = x;
            }
            best as i64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sub-multiset sum by enumeration.
    fn brute(total: i64, demands: &[i64]) -> Vec<i64> {
        let mut sums = vec![false; total as usize + 1];
        for mask in 0u32..1 << demands.len() {
            let s: i64 = (0..demands.len())
                .filter(|&i| mask >> i & 1 == 1)
                .map(|i| demands[i])
                .sum();
            if s <= total {
                sums[s as usize] = true;
            }
        }
        let mut best = 0;
        sums.iter()
            .enumerate()
            .map(|(x, &r)| {
                if r {
                    best = x as i64;
                }
                best
            })
            .collect()
    }

    #[test]
    fn widths_of_32_and_64_use_64_of_72() {
        let table = round_down_table(240, [64, 64, 32, 32, 32].into_iter());
        assert_eq!(table[72], 64);
        assert_eq!(table[31], 0);
        assert_eq!(table[100], 96);
        assert_eq!(table[240], 224);
    }

    #[test]
    fn equals_enumeration_with_repeated_demands() {
        let mut seed = 7u64;
        for _ in 0..200 {
            let mut next = |m: u64| {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                (seed >> 33) % m
            };
            let total = 1 + next(60) as i64;
            let n = next(9) as usize;
            let demands: Vec<i64> = (0..n).map(|_| next(20) as i64).collect();
            let table = round_down_table(total, demands.iter().copied());
            assert_eq!(table, brute(total, &demands), "{total} {demands:?}");
        }
    }

    #[test]
    fn too_large_tables_are_not_built() {
        assert!(round_down_table(1 << 30, [3, 5].into_iter()).is_empty());
        assert!(round_down_table(-1, [3].into_iter()).is_empty());
    }
}
