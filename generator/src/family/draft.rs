//! Pieces shared by the families: the per-instance random streams, the draft that a family
//! fills and that becomes an [`Instance`], the placement of running jobs, walltime rounding,
//! user pools and dependencies.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use schedlm_model::{Instance, QueuedJob, RunningJob, Server};

use crate::{Family, Load};

/// Seconds in a day.
pub const DAY: i64 = 86_400;

/// The requested walltimes users pick most, in seconds: 5, 15 and 30 minutes, then 1, 2, 4,
/// 8, 12, 24, 48 and 72 hours. Requests beyond the last value are rounded up to whole days.
pub const WALLTIME_STEPS: [i64; 11] = [
    300, 900, 1_800, 3_600, 7_200, 14_400, 28_800, 43_200, 86_400, 172_800, 259_200,
];

/// What a random stream is used for. Each purpose has its own ChaCha8 key, so that switching
/// one feature on (dependencies) leaves every other draw of the instance unchanged.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Purpose {
    /// Everything except dependencies.
    Main = 0,
    /// The dependency edges added when `dep_prob > 0`.
    Deps = 1,
}

/// The random stream of instance `index` of `family` under `seed`: ChaCha8 with the 32-byte
/// key (seed as 8 little-endian bytes, purpose as 4, family as 4, the tag
/// `"schedlm-gen-v1\0\0"`) and stream number `index`. It depends on nothing else, so the same
/// (seed, index) gives the same instance whatever the thread count or the order in which
/// instances are made, and the families draw independently of each other.
pub(crate) fn instance_rng(seed: u64, index: u64, family: Family, purpose: Purpose) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..12].copy_from_slice(&(purpose as u32).to_le_bytes());
    key[12..16].copy_from_slice(&(family as u32).to_le_bytes());
    key[16..].copy_from_slice(b"schedlm-gen-v1\0\0");
    let mut rng = ChaCha8Rng::from_seed(key);
    rng.set_stream(index);
    rng
}

/// A running job before ids and absolute times are fixed.
#[derive(Debug, Clone)]
pub(crate) struct DraftRunning {
    pub server: usize,
    pub demand: Vec<i64>,
    /// Seconds the job has been running at `now` (fixes the order of the ids).
    pub elapsed: i64,
    /// Seconds from `now` to `end` (>= 1).
    pub remaining: i64,
}

/// A queued job before ids and absolute times are fixed.
#[derive(Debug, Clone)]
pub(crate) struct DraftJob {
    /// Seconds between the submit time and `now` (>= 0).
    pub ago: i64,
    pub demand: Vec<i64>,
    pub walltime: i64,
    pub runtime: Option<i64>,
    pub user: String,
    pub meta: Option<serde_json::Value>,
}

/// What a family produces; [`Draft::into_instance`] turns it into an [`Instance`].
#[derive(Debug, Clone)]
pub(crate) struct Draft {
    /// Proposed snapshot time; moved later by whole days if the queue or a running job reaches
    /// back before time 0.
    pub now_base: i64,
    pub resources: &'static [&'static str],
    pub capacities: Vec<Vec<i64>>,
    pub running: Vec<DraftRunning>,
    pub queue: Vec<DraftJob>,
}

impl Draft {
    /// Scales the queue's arrival times down so that its oldest job waited at most `span`
    /// seconds (a burst of submissions); their order is kept. Nothing changes when the queue
    /// is already that young.
    pub fn compress_queue(&mut self, span: i64) {
        let oldest = self.queue.iter().map(|j| j.ago).max().unwrap_or(0);
        if oldest <= span || oldest <= 0 {
            return;
        }
        for j in &mut self.queue {
            j.ago = (i128::from(j.ago) * i128::from(span) / i128::from(oldest)) as i64;
        }
    }

    /// Fixes `now`, absolute times and ids: servers `n0..` in draft order, running jobs `r0..`
    /// by start time (oldest first), queued jobs `j0..` by submit time (oldest first). Both sorts
    /// are stable, so ties keep the order in which the family drew the jobs.
    pub fn into_instance(mut self) -> Instance {
        let reach = self
            .queue
            .iter()
            .map(|j| j.ago)
            .chain(self.running.iter().map(|r| r.elapsed))
            .max()
            .unwrap_or(0);
        let mut now = self.now_base.max(1);
        if now < reach {
            now += DAY * ((reach - now + DAY - 1) / DAY);
        }
        self.running.sort_by_key(|r| std::cmp::Reverse(r.elapsed));
        self.queue.sort_by_key(|j| std::cmp::Reverse(j.ago));
        let servers = self
            .capacities
            .into_iter()
            .enumerate()
            .map(|(i, capacity)| Server {
                id: format!("n{i}"),
                capacity,
            })
            .collect();
        let running = self
            .running
            .into_iter()
            .enumerate()
            .map(|(i, r)| RunningJob {
                id: format!("r{i}"),
                server: format!("n{}", r.server),
                demand: r.demand,
                end: now + r.remaining,
            })
            .collect();
        let queue = self
            .queue
            .into_iter()
            .enumerate()
            .map(|(i, j)| {
                let mut job = QueuedJob::new(format!("j{i}"), now - j.ago, j.demand, j.walltime);
                job.runtime = j.runtime;
                job.user = Some(j.user);
                job.meta = j.meta;
                job
            })
            .collect();
        Instance {
            now,
            resources: self.resources.iter().map(|r| r.to_string()).collect(),
            servers,
            running,
            queue,
        }
    }
}

/// The default snapshot time: 1 to 6 whole days into the workload plus a uniform time of day.
pub(crate) fn draw_now_base<R: Rng>(rng: &mut R) -> i64 {
    DAY * rng.random_range(1..=6i64) + rng.random_range(0..DAY)
}

/// How many running jobs to place.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Target {
    /// Exactly this many jobs (fewer only if the cluster fills up first).
    Count(usize),
    /// Jobs until this many units of the first resource are busy.
    Busy(i64),
}

impl Target {
    /// The target of a configured load on servers with capacities `caps`: a job count, or the
    /// fraction of the cluster's first resource, rounded to whole units.
    pub(crate) fn of(load: Load, caps: &[Vec<i64>]) -> Target {
        match load {
            Load::Jobs(n) => Target::Count(n),
            Load::Fraction(f) => {
                let total: i64 = caps.iter().map(|c| c[0]).sum();
                Target::Busy((f * total as f64).round() as i64)
            }
        }
    }
}

/// A running job placed by [`fill`], with the family's own data `J`.
#[derive(Debug, Clone)]
pub(crate) struct Placed<J> {
    pub server: usize,
    pub demand: Vec<i64>,
    pub job: J,
}

/// Running jobs from [`fill`] whose data is (walltime, seconds elapsed at `now`).
pub(crate) fn running_drafts(placed: Vec<Placed<(i64, i64)>>) -> Vec<DraftRunning> {
    placed
        .into_iter()
        .map(|p| DraftRunning {
            server: p.server,
            demand: p.demand,
            elapsed: p.job.1,
            remaining: p.job.0 - p.job.1,
        })
        .collect()
}

/// One of `candidates` drawn with probability proportional to its run time (running jobs at a
/// random instant are long ones: length-biased sampling).
pub(crate) fn pick_by_runtime<R: Rng, T>(
    rng: &mut R,
    candidates: Vec<T>,
    runtime: impl Fn(&T) -> i64,
) -> T {
    let weights: Vec<f64> = candidates.iter().map(|j| runtime(j) as f64).collect();
    let k = weighted_index(rng, &weights);
    let mut candidates = candidates;
    candidates.swap_remove(k.min(candidates.len() - 1))
}

/// How often [`fill`] draws again before it shrinks a job that exceeds the busy target.
const REDRAWS: usize = 4;
/// How many jobs [`fill`] draws in a row that fit nowhere, even shrunk, before it stops.
const ATTEMPTS: usize = 16;

/// Places running jobs on servers with capacities `caps` until `target` is met.
///
/// Each job comes from `draw`. Under [`Target::Busy`] a job larger than the remaining target
/// is drawn again (up to 4 times) and then shrunk to the remaining target. A job goes to a
/// server chosen uniformly among those with room for it; when none has room it is shrunk
/// (by `shrink`, which must return a demand within the given limit with at least 1 unit of
/// the first resource, or `None`) onto the server where it keeps the most of the first
/// resource. A job that fits nowhere even shrunk is dropped and another drawn; after 16 such
/// jobs in a row the cluster counts as full and the loop stops. So the running jobs always fit
/// their servers together and the busy amount never exceeds the target.
pub(crate) fn fill<R: Rng, J>(
    rng: &mut R,
    caps: &[Vec<i64>],
    target: Target,
    mut draw: impl FnMut(&mut R) -> (Vec<i64>, J),
    shrink: impl Fn(&[i64], &[i64]) -> Option<Vec<i64>>,
) -> Vec<Placed<J>> {
    let width = caps.first().map_or(0, Vec::len);
    let mut free: Vec<Vec<i64>> = caps.to_vec();
    let mut busy = 0i64;
    let mut out: Vec<Placed<J>> = Vec::new();
    let mut misses = 0;
    while misses < ATTEMPTS {
        let remaining = match target {
            Target::Count(n) if out.len() >= n => break,
            Target::Busy(b) if busy >= b => break,
            Target::Count(_) => None,
            Target::Busy(b) => Some(b - busy),
        };
        let (mut demand, mut job) = draw(rng);
        if let Some(rem) = remaining {
            let mut tries = 0;
            while demand[0] > rem && tries < REDRAWS {
                (demand, job) = draw(rng);
                tries += 1;
            }
            if demand[0] > rem {
                let mut limit = vec![i64::MAX; width];
                limit[0] = rem;
                match shrink(&demand, &limit) {
                    Some(d) => demand = d,
                    None => {
                        misses += 1;
                        continue;
                    }
                }
            }
        }
        let fitting: Vec<usize> = (0..free.len())
            .filter(|&s| fits(&demand, &free[s]))
            .collect();
        let server = if fitting.is_empty() {
            let mut best: Option<(usize, Vec<i64>)> = None;
            for (s, f) in free.iter().enumerate() {
                if let Some(d) = shrink(&demand, f) {
                    if best.as_ref().is_none_or(|(_, b)| d[0] > b[0]) {
                        best = Some((s, d));
                    }
                }
            }
            match best {
                Some((s, d)) => {
                    demand = d;
                    s
                }
                None => {
                    misses += 1;
                    continue;
                }
            }
        } else {
            fitting[rng.random_range(0..fitting.len())]
        };
        debug_assert!(fits(&demand, &free[server]) && demand[0] >= 1);
        for (f, d) in free[server].iter_mut().zip(&demand) {
            *f -= d;
        }
        busy += demand[0];
        misses = 0;
        out.push(Placed {
            server,
            demand,
            job,
        });
    }
    out
}

/// Whether `demand` fits within `free` in every resource.
pub(crate) fn fits(demand: &[i64], free: &[i64]) -> bool {
    demand.iter().zip(free).all(|(d, f)| d <= f)
}

/// The usual shrink: the first resource goes down to `min(demand[0], limit[0])` (to a power of
/// two when `pow2_first`), every other resource in proportion (rounded up), then each is
/// capped at its limit. Gives `None` when less than 1 unit of the first resource is left, or a
/// resource the job needs would drop to 0.
pub(crate) fn shrink_proportional(
    demand: &[i64],
    limit: &[i64],
    pow2_first: bool,
) -> Option<Vec<i64>> {
    let d0 = demand[0];
    let mut first = d0.min(limit[0]);
    if pow2_first && first >= 1 {
        first = 1 << (63 - first.leading_zeros());
    }
    if first < 1 || d0 < 1 {
        return None;
    }
    let mut out = Vec::with_capacity(demand.len());
    out.push(first);
    for (&d, &l) in demand.iter().zip(limit).skip(1) {
        let scaled = ((d as i128 * first as i128 + d0 as i128 - 1) / d0 as i128) as i64;
        let v = scaled.min(d).min(l);
        if d > 0 && v < 1 {
            return None;
        }
        out.push(v);
    }
    Some(out)
}

/// Rounds a requested walltime up to the next of [`WALLTIME_STEPS`], or to whole days beyond
/// them. At least 1.
pub(crate) fn round_up_walltime(raw: i64) -> i64 {
    let raw = raw.max(1);
    WALLTIME_STEPS
        .iter()
        .copied()
        .find(|&s| s >= raw)
        .unwrap_or_else(|| DAY * ((raw + DAY - 1) / DAY))
}

/// Index drawn with probability proportional to `weights` (non-negative, not all zero).
pub(crate) fn weighted_index<R: Rng>(rng: &mut R, weights: &[f64]) -> usize {
    let total: f64 = weights.iter().sum();
    let mut u = rng.random::<f64>() * total;
    for (i, &w) in weights.iter().enumerate() {
        if u < w {
            return i;
        }
        u -= w;
    }
    // Rounding left a sliver: the last index with positive weight.
    weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
}

/// A user id `u0..u{pool-1}` with Zipf-like popularity: user k has weight 1 / (k + 1), so a
/// few users submit most jobs, as in real traces.
pub(crate) fn zipf_user<R: Rng>(rng: &mut R, pool: usize) -> String {
    let weights: Vec<f64> = (0..pool).map(|k| 1.0 / (k as f64 + 1.0)).collect();
    format!("u{}", weighted_index(rng, &weights))
}

/// A sample from the log-uniform distribution on `[lo, hi]` (0 < lo <= hi).
pub(crate) fn log_uniform<R: Rng>(rng: &mut R, lo: f64, hi: f64) -> f64 {
    (lo.ln() + rng.random::<f64>() * (hi.ln() - lo.ln())).exp()
}

/// Adds dependencies to the queue of `instance`, in place.
///
/// For each queued job in submit order: with probability `p` it depends on one job drawn
/// uniformly from the running jobs and the queued jobs submitted before it; then, with
/// probability `p` again, on a second, different one. Edges only point to running jobs or to
/// earlier queued jobs, so no cycle can form.
pub(crate) fn add_deps<R: Rng>(instance: &mut Instance, p: f64, rng: &mut R) {
    if p <= 0.0 {
        return;
    }
    let running: Vec<String> = instance.running.iter().map(|r| r.id.clone()).collect();
    let mut earlier: Vec<String> = Vec::with_capacity(instance.queue.len());
    for job in &mut instance.queue {
        let candidates = running.len() + earlier.len();
        let pick = |k: usize| -> String {
            if k < running.len() {
                running[k].clone()
            } else {
                earlier[k - running.len()].clone()
            }
        };
        if candidates > 0 && rng.random_bool(p) {
            let first = rng.random_range(0..candidates);
            job.deps.push(pick(first));
            if candidates > 1 && rng.random_bool(p) {
                let mut second = rng.random_range(0..candidates - 1);
                if second >= first {
                    second += 1;
                }
                job.deps.push(pick(second));
            }
        }
        earlier.push(job.id.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walltime_rounding() {
        assert_eq!(round_up_walltime(-5), 300);
        assert_eq!(round_up_walltime(1), 300);
        assert_eq!(round_up_walltime(300), 300);
        assert_eq!(round_up_walltime(301), 900);
        assert_eq!(round_up_walltime(3_601), 7_200);
        assert_eq!(round_up_walltime(259_200), 259_200);
        assert_eq!(round_up_walltime(259_201), 4 * DAY);
    }

    #[test]
    fn shrink_keeps_proportions_and_limits() {
        assert_eq!(
            shrink_proportional(&[8, 64, 512], &[3, 100, 1000], true),
            Some(vec![2, 16, 128])
        );
        assert_eq!(
            shrink_proportional(&[10, 40], &[5, 100], false),
            Some(vec![5, 20])
        );
        assert_eq!(
            shrink_proportional(&[10, 40], &[5, 7], false),
            Some(vec![5, 7])
        );
        assert_eq!(shrink_proportional(&[10, 40], &[0, 100], false), None);
        assert_eq!(shrink_proportional(&[10, 40], &[5, 0], false), None);
        // A resource the job does not use stays 0 even with no room left.
        assert_eq!(
            shrink_proportional(&[4, 8, 0], &[2, 8, 0], false),
            Some(vec![2, 4, 0])
        );
    }

    #[test]
    fn fill_respects_capacity_and_target() {
        let caps = vec![vec![8, 16], vec![4, 16]];
        for seed in 0..50 {
            let mut rng = instance_rng(seed, 0, Family::Uniform, Purpose::Main);
            let placed = fill(
                &mut rng,
                &caps,
                Target::Busy(10),
                |r| {
                    let c = r.random_range(1..=8i64);
                    (vec![c, 2 * c], ())
                },
                |d, l| shrink_proportional(d, l, false),
            );
            let mut used = vec![vec![0i64; 2]; 2];
            for p in &placed {
                for (u, d) in used[p.server].iter_mut().zip(&p.demand) {
                    *u += d;
                }
            }
            for (u, c) in used.iter().zip(&caps) {
                assert!(fits(u, c));
            }
            let busy: i64 = placed.iter().map(|p| p.demand[0]).sum();
            assert!(busy <= 10);
            assert!(busy >= 8, "seed {seed}: busy {busy}");
        }
    }

    #[test]
    fn fill_count_stops_when_full() {
        let caps = vec![vec![2, 2]];
        let mut rng = instance_rng(1, 0, Family::Uniform, Purpose::Main);
        let placed = fill(
            &mut rng,
            &caps,
            Target::Count(10),
            |_| (vec![1, 1], ()),
            |d, l| shrink_proportional(d, l, false),
        );
        assert_eq!(placed.len(), 2);
    }

    #[test]
    fn streams_differ_by_index_and_purpose() {
        let draw = |seed, index, family, purpose| -> u64 {
            instance_rng(seed, index, family, purpose).random()
        };
        let a = draw(7, 0, Family::Hpc, Purpose::Main);
        assert_ne!(a, draw(7, 1, Family::Hpc, Purpose::Main));
        assert_ne!(a, draw(8, 0, Family::Hpc, Purpose::Main));
        assert_ne!(a, draw(7, 0, Family::Hpc, Purpose::Deps));
        assert_ne!(a, draw(7, 0, Family::Dl, Purpose::Main));
        assert_eq!(a, draw(7, 0, Family::Hpc, Purpose::Main));
    }

    #[test]
    fn weighted_index_follows_weights() {
        let mut rng = instance_rng(3, 0, Family::Uniform, Purpose::Main);
        let mut counts = [0usize; 3];
        for _ in 0..30_000 {
            counts[weighted_index(&mut rng, &[1.0, 0.0, 3.0])] += 1;
        }
        assert_eq!(counts[1], 0);
        let share = counts[2] as f64 / 30_000.0;
        assert!((share - 0.75).abs() < 0.02, "{share}");
    }
}
