//! The `hpc` family: rigid parallel jobs after Lublin & Feitelson (2003), "The workload on
//! parallel supercomputers: modeling the characteristics of rigid jobs", JPDC 63(11), with the
//! batch-job parameters of their published generator (`lublin99.c`).
//!
//! Resources: `["cores", "mem_gib"]`; servers are identical nodes of 32 cores and 128 GiB
//! (`servers` option, default 8). In this model a job runs on one server, so the model's
//! "nodes" become cores of one node and its largest size is a whole node.
//!
//! **Size** (cores): serial (1 core) with probability 0.2927; otherwise `par` is drawn from a
//! two-stage uniform: with probability 0.875 uniform on [ULow, UMed] = [1.2, 3], else on
//! [UMed, UHi] = [3, 5], where UHi = log2(32) and UMed = UHi - 2 (the published batch values
//! are UHi = 7, UMed = 5). With probability 0.6686 (the same uniform draw u as the serial
//! test: serial if u <= 0.2927, power of two if u <= 0.2927 + 0.6686) `par` is rounded, giving
//! a power of two; the size is round(2^par), so the rest are non-powers of two.
//!
//! **Run time**: log(runtime) follows a hyper-gamma distribution: with probability
//! p = clamp(-0.003 x size + 0.6986, 0, 1) Gamma(shape 6.57, scale 0.823), else
//! Gamma(shape 639.1, scale 0.0156); draws above 12 (exp(12) s, about 45 hours) are redrawn.
//! runtime = max(1, round(exp(x))) seconds. Larger jobs are more likely long.
//!
//! **Walltime** (requested time, >= runtime): real users overestimate. Following the shape
//! reported by Mu'alem & Feitelson (2001) for the accuracy a = runtime / request (roughly
//! uniform, with a spike near 0 from jobs that fail early and one at 1 from jobs that run to
//! their limit), a is uniform on [0.9, 1] with probability 0.2, log-uniform on [0.001, 0.05]
//! with probability 0.2 and uniform on [0.05, 0.9] otherwise. The request runtime / a is
//! rounded up to 5, 15 or 30 minutes or 1, 2, 4, 8, 12, 24, 48 or 72 hours and capped at the
//! 72-hour queue limit (run times never exceed 45 hours, so walltime >= runtime always holds).
//!
//! **Memory**: cores x (1, 2, 4 or 8 GiB with probabilities 0.3, 0.35, 0.25, 0.1), at most
//! 128 GiB. Memory-heavy jobs can leave cores idle.
//!
//! **Queue arrivals**: working back from `now`, gaps between submissions are exp(x) seconds
//! with x ~ Gamma(shape 6.0415 x 1.0519, scale 0.8531) (the published batch inter-arrival
//! parameters with their all-day ratio ARAR; median about 3 minutes, heavy tail), x redrawn
//! above 13 as in `lublin99.c`. The daily cycle of the original is left out.
//!
//! **Users**: u0..u15 with Zipf-like weights 1/(k+1).
//!
//! **Running jobs** (`load` option, default: 70% of all cores busy): each is one of 4 jobs
//! drawn as above, picked with probability proportional to its run time (a job seen running
//! at a random instant is more likely a long one); it has run a uniform part of its run time,
//! and `end` = `now` + walltime - elapsed (the scheduler only knows the request). Jobs are
//! placed on a uniformly chosen node with room; see [`crate::family::draft`] for how the
//! busy target is met exactly when fragmentation allows.
//!
//! **`now`**: 1 to 6 days plus a uniform time of day, moved later by whole days if the queue
//! or a running job would reach back before time 0.

use rand::Rng;
use rand_distr::{Distribution, Gamma};

use crate::family::draft::{
    draw_now_base, fill, log_uniform, pick_by_runtime, round_up_walltime, running_drafts,
    shrink_proportional, weighted_index, zipf_user, Draft, DraftJob, Target, WALLTIME_STEPS,
};
use crate::{Config, Load};

/// Resource names of the family.
pub const RESOURCES: [&str; 2] = ["cores", "mem_gib"];
/// Cores per node.
pub const NODE_CORES: i64 = 32;
/// Memory per node in GiB.
pub const NODE_MEM_GIB: i64 = 128;
/// Nodes when the `servers` option is absent.
pub const DEFAULT_SERVERS: usize = 8;
/// Busy fraction of all cores at `now` when the `load` option is absent.
pub const DEFAULT_LOAD: f64 = 0.7;
/// The queue's walltime limit (72 hours).
pub const MAX_WALLTIME: i64 = WALLTIME_STEPS[WALLTIME_STEPS.len() - 1];
/// Size of the user pool.
pub const USERS: usize = 16;
/// The smallest `max_walltime` (`--max-walltime`): the smallest walltime step, 5 minutes.
pub const MIN_WALLTIME_CAP: i64 = WALLTIME_STEPS[0];
/// Node types of `mixed_nodes` (`--mixed-nodes`), [cores, GiB], used in turn: the standard
/// node, a newer generation with twice of both, a large-memory node, an older small node.
pub const MIXED_NODES: [[i64; 2]; 4] = [[32, 128], [64, 256], [32, 512], [16, 64]];
/// Cores of a wide job (`wide`, `--wide`): half a node to a whole node.
pub const WIDE_CORES: (i64, i64) = (16, 32);
/// Cores of a memory-bound job (`mem_bound`, `--mem-bound`).
pub const MEM_BOUND_CORES: (i64, i64) = (1, 4);

/// The parameters of the Lublin–Feitelson model for one job class.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lublin {
    /// Probability of a serial (1-processor) job.
    pub serial_prob: f64,
    /// Probability of a power-of-two parallel job.
    pub pow2_prob: f64,
    /// Two-stage uniform for log2(size): [u_low, u_med] with probability u_prob, else
    /// [u_med, u_hi].
    pub u_low: f64,
    /// Middle bound of log2(size), shared by both stages (`UMed` in `lublin99.c`; 3 in
    /// [`BATCH`]).
    pub u_med: f64,
    /// Upper bound of log2(size) (`UHi`; 5 in [`BATCH`], log2 of the 32 cores of a node).
    pub u_hi: f64,
    /// Probability that log2(size) is drawn from the lower stage [u_low, u_med].
    pub u_prob: f64,
    /// Hyper-gamma for log(runtime): Gamma(a1, b1) with probability p = pa * size + pb,
    /// else Gamma(a2, b2) (shape, scale).
    pub a1: f64,
    /// Scale of the first gamma of log(runtime), the short jobs.
    pub b1: f64,
    /// Shape of the second gamma of log(runtime), the long jobs.
    pub a2: f64,
    /// Scale of the second gamma of log(runtime), the long jobs.
    pub b2: f64,
    /// Slope per core of the probability p of the first gamma; p is clamped to [0, 1]. It is
    /// negative in [`BATCH`], so larger jobs more often draw from the long second gamma.
    pub pa: f64,
    /// Intercept of the probability of the first gamma, p = pa * size + pb.
    pub pb: f64,
    /// Gamma (shape, scale) of log(inter-arrival time), shape already multiplied by ARAR.
    pub a_arr: f64,
    /// Scale of the gamma of log(inter-arrival time in seconds).
    pub b_arr: f64,
}

/// Log of the longest run time drawn (`TOO_MUCH_TIME` in `lublin99.c`).
pub const MAX_LOG_RUNTIME: f64 = 12.0;
/// Log of the longest inter-arrival time drawn (`TOO_MUCH_ARRIVE_TIME`).
pub const MAX_LOG_ARRIVAL: f64 = 13.0;

/// The published batch-job parameters, with the size range moved from a 128-node machine
/// (UHi = 7, UMed = 5) to a 32-core node (UHi = 5, UMed = 3).
pub const BATCH: Lublin = Lublin {
    serial_prob: 0.2927,
    pow2_prob: 0.6686,
    u_low: 1.2,
    u_med: 3.0,
    u_hi: 5.0,
    u_prob: 0.875,
    a1: 6.57,
    b1: 0.823,
    a2: 639.1,
    b2: 0.0156,
    pa: -0.003,
    pb: 0.6986,
    a_arr: 6.0415 * 1.0519,
    b_arr: 0.8531,
};

/// The distributions of [`BATCH`], built once per instance.
pub(crate) struct Model {
    p: Lublin,
    short: Gamma<f64>,
    long: Gamma<f64>,
    arrival: Gamma<f64>,
}

impl Model {
    pub(crate) fn new(p: Lublin) -> Model {
        // The constants are valid gamma parameters; `expect` cannot fire.
        let gamma = |shape, scale| Gamma::new(shape, scale).expect("positive gamma parameters");
        Model {
            p,
            short: gamma(p.a1, p.b1),
            long: gamma(p.a2, p.b2),
            arrival: gamma(p.a_arr, p.b_arr),
        }
    }

    /// Job size in cores, 1..=[`NODE_CORES`].
    pub(crate) fn size<R: Rng>(&self, rng: &mut R) -> i64 {
        let p = &self.p;
        let u: f64 = rng.random();
        if u <= p.serial_prob {
            return 1;
        }
        let (lo, hi) = if rng.random::<f64>() <= p.u_prob {
            (p.u_low, p.u_med)
        } else {
            (p.u_med, p.u_hi)
        };
        let mut par = lo + rng.random::<f64>() * (hi - lo);
        if u <= p.serial_prob + p.pow2_prob {
            par = (par + 0.5).floor();
        }
        ((2f64.powf(par) + 0.5).floor() as i64).clamp(1, NODE_CORES)
    }

    /// Run time in seconds of a job of `size` cores, 1..=exp(12).
    pub(crate) fn runtime<R: Rng>(&self, rng: &mut R, size: i64) -> i64 {
        let p = (self.p.pa * size as f64 + self.p.pb).clamp(0.0, 1.0);
        loop {
            let x = if rng.random::<f64>() <= p {
                self.short.sample(rng)
            } else {
                self.long.sample(rng)
            };
            if x <= MAX_LOG_RUNTIME {
                return (x.exp().round() as i64).max(1);
            }
        }
    }

    /// One inter-arrival gap in seconds.
    pub(crate) fn gap<R: Rng>(&self, rng: &mut R) -> i64 {
        loop {
            let x = self.arrival.sample(rng);
            if x <= MAX_LOG_ARRIVAL {
                return x.exp().round() as i64;
            }
        }
    }
}

/// The requested walltime for a job with true run time `runtime` (see the module docs).
pub(crate) fn walltime<R: Rng>(rng: &mut R, runtime: i64) -> i64 {
    let accuracy = match weighted_index(rng, &[0.2, 0.2, 0.6]) {
        0 => rng.random_range(0.9..=1.0),
        1 => log_uniform(rng, 0.001, 0.05),
        _ => rng.random_range(0.05..0.9),
    };
    let raw = (runtime as f64 / accuracy).ceil() as i64;
    round_up_walltime(raw).min(MAX_WALLTIME).max(runtime)
}

/// Memory in GiB of a job of `cores` cores.
pub(crate) fn memory<R: Rng>(rng: &mut R, cores: i64) -> i64 {
    let per_core = [1, 2, 4, 8][weighted_index(rng, &[0.3, 0.35, 0.25, 0.1])];
    (cores * per_core).min(NODE_MEM_GIB)
}

/// A complete job: demand, run time and walltime.
struct Job {
    demand: Vec<i64>,
    runtime: i64,
    walltime: i64,
}

/// What shapes every job of an instance: the model and the settings of [`crate::Hard`].
struct Jobs<'a> {
    model: Model,
    hard: &'a crate::Hard,
    /// The largest node's memory (GiB), the most a memory-bound job asks for.
    max_mem: i64,
}

impl Jobs<'_> {
    /// A job within the partition's walltime limit (drawn again while over it).
    fn draw<R: Rng>(&self, rng: &mut R) -> Job {
        loop {
            let job = self.draw_any(rng);
            if self.hard.max_walltime.is_none_or(|cap| job.walltime <= cap) {
                return job;
            }
        }
    }

    fn draw_any<R: Rng>(&self, rng: &mut R) -> Job {
        let (cores, mem) = if self.hard.mem_bound > 0.0 && rng.random_bool(self.hard.mem_bound) {
            let cores = rng.random_range(MEM_BOUND_CORES.0..=MEM_BOUND_CORES.1);
            (cores, rng.random_range(self.max_mem / 2..=self.max_mem))
        } else {
            let cores = if self.hard.wide > 0.0 && rng.random_bool(self.hard.wide) {
                rng.random_range(WIDE_CORES.0..=WIDE_CORES.1)
            } else {
                self.model.size(rng)
            };
            (cores, memory(rng, cores))
        };
        let runtime = self.model.runtime(rng, cores);
        let walltime = walltime(rng, runtime);
        Job {
            demand: vec![cores, mem],
            runtime,
            walltime,
        }
    }
}

/// Server capacities: identical nodes, or [`MIXED_NODES`] in turn.
fn capacities(n_servers: usize, mixed: bool) -> Vec<Vec<i64>> {
    (0..n_servers)
        .map(|i| {
            if mixed {
                MIXED_NODES[i % MIXED_NODES.len()].to_vec()
            } else {
                vec![NODE_CORES, NODE_MEM_GIB]
            }
        })
        .collect()
}

/// Candidates drawn per running job for the length-biased pick.
const RUNNING_CANDIDATES: usize = 4;

pub(crate) fn generate<R: Rng>(config: &Config, rng: &mut R) -> Draft {
    let n_servers = config.servers.unwrap_or(DEFAULT_SERVERS);
    let caps = capacities(n_servers, config.hard.mixed_nodes);
    let jobs = Jobs {
        model: Model::new(BATCH),
        hard: &config.hard,
        max_mem: caps.iter().map(|c| c[1]).max().unwrap_or(NODE_MEM_GIB),
    };
    let now_base = draw_now_base(rng);

    let target = Target::of(config.load.unwrap_or(Load::Fraction(DEFAULT_LOAD)), &caps);
    let placed = fill(
        rng,
        &caps,
        target,
        |r| {
            let jobs: Vec<Job> = (0..RUNNING_CANDIDATES).map(|_| jobs.draw(r)).collect();
            let job = pick_by_runtime(r, jobs, |j| j.runtime);
            let elapsed = r.random_range(0..job.runtime);
            (job.demand, (job.walltime, elapsed))
        },
        |d, l| shrink_proportional(d, l, false),
    );
    let running = running_drafts(placed);

    let n_queue = rng.random_range(config.queue_min..=config.queue_max);
    let mut ago = 0i64;
    let queue = (0..n_queue)
        .map(|_| {
            ago += jobs.model.gap(rng);
            let job = jobs.draw(rng);
            DraftJob {
                ago,
                demand: job.demand,
                walltime: job.walltime,
                runtime: Some(job.runtime),
                user: zipf_user(rng, USERS),
                meta: None,
            }
        })
        .collect();

    Draft {
        now_base,
        resources: &RESOURCES,
        capacities: caps,
        running,
        queue,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::draft::{instance_rng, Purpose};
    use crate::{generate_one, Family};

    #[test]
    fn sizes_follow_the_model() {
        let model = Model::new(BATCH);
        let mut rng = instance_rng(5, 0, Family::Hpc, Purpose::Main);
        let n = 40_000;
        let mut serial = 0;
        let mut pow2 = 0;
        let mut other = 0;
        for _ in 0..n {
            let s = model.size(&mut rng);
            assert!((1..=NODE_CORES).contains(&s));
            if s == 1 {
                serial += 1;
            } else if s.count_ones() == 1 {
                pow2 += 1;
            } else {
                other += 1;
            }
        }
        let serial = serial as f64 / n as f64;
        assert!((serial - 0.2927).abs() < 0.015, "serial share {serial}");
        // Non-power-of-two draws may still land on a power of two, so pow2 >= 0.6686.
        let pow2 = pow2 as f64 / n as f64;
        assert!(pow2 > 0.66, "pow2 share {pow2}");
        assert!(other > 0);
    }

    #[test]
    fn runtimes_are_bimodal_and_bounded() {
        let model = Model::new(BATCH);
        let mut rng = instance_rng(6, 0, Family::Hpc, Purpose::Main);
        let mut short = 0;
        let mut long = 0;
        for _ in 0..20_000 {
            let rt = model.runtime(&mut rng, 1);
            assert!(rt >= 1 && rt as f64 <= MAX_LOG_RUNTIME.exp().ceil());
            if rt < 3_600 {
                short += 1;
            } else if rt > 10_000 {
                long += 1;
            }
        }
        // p = 0.6956 for serial jobs: most are short, a good share are hours long.
        assert!(short > 11_000 && long > 4_000, "short {short}, long {long}");
    }

    #[test]
    fn walltimes_overestimate_and_use_common_values() {
        let config = Config::new(Family::Hpc, 8);
        let mut small_accuracy = 0;
        let mut total = 0;
        for index in 0..100 {
            let inst = generate_one(&config, index).unwrap();
            assert_eq!(inst.resources, ["cores", "mem_gib"]);
            assert_eq!(inst.servers.len(), DEFAULT_SERVERS);
            for j in &inst.queue {
                let rt = j.runtime.unwrap();
                assert!(j.walltime >= rt);
                assert!(
                    WALLTIME_STEPS.contains(&j.walltime) || j.walltime == rt,
                    "walltime {}",
                    j.walltime
                );
                total += 1;
                if (rt as f64) < 0.25 * j.walltime as f64 {
                    small_accuracy += 1;
                }
            }
        }
        assert!(small_accuracy * 3 > total, "{small_accuracy} of {total}");
    }

    #[test]
    fn gaps_have_a_median_of_minutes() {
        let model = Model::new(BATCH);
        let mut rng = instance_rng(9, 0, Family::Hpc, Purpose::Main);
        let mut gaps: Vec<i64> = (0..10_001).map(|_| model.gap(&mut rng)).collect();
        gaps.sort_unstable();
        let median = gaps[5_000];
        assert!((60..=600).contains(&median), "median gap {median}");
    }
}
