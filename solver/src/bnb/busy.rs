//! The mean-busy-time bound (sum objectives): per resource, the unplaced jobs' energy poured
//! into the pooled free capacity, highest cost slope per unit of energy first.
//!
//! A job j that runs on [S_j, C_j) uses its demand d_jq of resource q at a constant rate, so
//! the mean of the times at which its energy is used (its *mean busy time* M_j) is
//! S_j + p_j / 2 = C_j - p_j / 2. The pooled free capacity of q over time (rounded down to what
//! queued demands can fill, `packing.rs`) bounds how fast all the unplaced jobs together use
//! energy, and no job uses any before its earliest start. Relaxing everything else (a job may
//! use any rate, be split, share the pool with anything), the least sum of slope_j x M_j is
//! reached by using the free capacity at every instant for the released job with the highest
//! slope per unit of energy (an exchange argument: moving a unit of a denser job earlier never
//! costs more; Goemans 1997 for one machine with release dates). With each cost at least
//! slope_j x C_j plus offset_j (`Cost::linear`), sum of (slope_j x (M_j + p_j / 2) plus
//! offset_j) bounds the unplaced jobs' total from below. It adds to the energy bound's
//! pairing what that pairing leaves out: that a job narrower than the whole pool still takes
//! its full walltime (the p_j / 2 against a share of it), and which jobs are cheap to delay.

use std::collections::BinaryHeap;

use schedlm_model::{Problem, Time};

use crate::cost::Cost;
use crate::packing::UsableCapacity;

/// Scratch of the bound, sized for one queue.
#[derive(Debug, Default)]
pub(super) struct BusyTime {
    /// Unplaced jobs with energy in the resource, by earliest start.
    order: Vec<usize>,
    remaining: Vec<f64>,
    moment: Vec<f64>,
    /// Released jobs: (slope per unit of energy as ordered bits, job).
    heap: BinaryHeap<(u64, usize)>,
}

/// What the bound reads: the queue, its costs and the pooled free capacity.
pub(super) struct Pool<'a> {
    pub(super) problem: &'a Problem,
    pub(super) cost: &'a Cost<'a>,
    /// Profile of the pooled usage: segment k covers [times[k], times[k + 1]) (the last one
    /// has no end) and uses `usage[k * r + q]` of resource q.
    pub(super) times: &'a [Time],
    pub(super) usage: &'a [i64],
    pub(super) total: &'a [i64],
    pub(super) usable: &'a UsableCapacity,
}

impl BusyTime {
    pub(super) fn new(n: usize) -> BusyTime {
        BusyTime {
            order: Vec::with_capacity(n),
            remaining: vec![0.0; n],
            moment: vec![0.0; n],
            heap: BinaryHeap::with_capacity(n),
        }
    }

    /// The bound on the total cost of the jobs `unplaced` (earliest starts `release`): the
    /// largest over the resources.
    pub(super) fn bound(&mut self, pool: &Pool, unplaced: &[usize], release: &[Time]) -> f64 {
        (0..pool.problem.resources())
            .map(|q| self.bound_in(pool, unplaced, release, q))
            .fold(f64::NEG_INFINITY, f64::max)
    }

    fn bound_in(&mut self, pool: &Pool, unplaced: &[usize], release: &[Time], q: usize) -> f64 {
        let p = pool.problem;
        let r = p.resources();
        let mut total = 0.0;
        self.order.clear();
        for &j in unplaced {
            let (slope, offset) = pool.cost.linear(j);
            let energy = (p.demand(j)[q] * p.walltime(j)) as f64;
            if energy > 0.0 {
                self.order.push(j);
                self.remaining[j] = energy;
                self.moment[j] = 0.0;
            } else {
                total += slope * (release[j] + p.walltime(j)) as f64 + offset;
            }
        }
        self.order.sort_unstable_by_key(|&j| (release[j], j));
        self.heap.clear();
        let times = pool.times;
        let free = |seg: usize| {
            pool.usable
                .usable(q, pool.total[q] - pool.usage[seg * r + q]) as f64
        };
        let mut next = 0; // next job of `order` to release
        let mut seg = 0;
        let mut t = times.first().map_or(0.0, |&t| t as f64);
        while next < self.order.len() || !self.heap.is_empty() {
            if self.heap.is_empty() {
                t = t.max(release[self.order[next]] as f64);
            }
            while next < self.order.len() && release[self.order[next]] as f64 <= t {
                let j = self.order[next];
                let density = pool.cost.linear(j).0 / self.remaining[j];
                self.heap.push((density.to_bits(), j));
                next += 1;
            }
            while seg + 1 < times.len() && times[seg + 1] as f64 <= t {
                seg += 1;
            }
            let Some(&(_, j)) = self.heap.peek() else {
                continue;
            };
            let segment_end = times.get(seg + 1).map_or(f64::INFINITY, |&e| e as f64);
            let rate = free(seg);
            if rate <= 0.0 {
                if segment_end.is_infinite() {
                    // No capacity ever again: these jobs cannot run (never for a valid
                    // instance); no bound.
                    return f64::NEG_INFINITY;
                }
                t = segment_end;
                continue;
            }
            let release_next = self
                .order
                .get(next)
                .map_or(f64::INFINITY, |&k| release[k] as f64);
            let until = segment_end.min(release_next);
            let room = (until - t) * rate;
            let used = self.remaining[j].min(room);
            let dt = used / rate;
            self.moment[j] += used * (t + dt / 2.0);
            self.remaining[j] -= used;
            t = if used < room { t + dt } else { until };
            if self.remaining[j] <= 0.0 || used < room {
                self.heap.pop();
                let (slope, offset) = pool.cost.linear(j);
                let energy = (p.demand(j)[q] * p.walltime(j)) as f64;
                let busy = self.moment[j] / energy;
                total += slope * (busy + p.walltime(j) as f64 / 2.0) + offset;
            }
        }
        total
    }
}
