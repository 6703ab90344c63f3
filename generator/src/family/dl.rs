//! The `dl` family: a GPU cluster running deep-learning training jobs whose run times follow
//! from their metadata.
//!
//! Resources: `["gpus", "cores", "mem_gib"]`; servers are identical 8-GPU nodes with 64 cores
//! and 512 GiB (`servers` option, default 4).
//!
//! **Jobs.** Each queued job trains one model of the catalogue [`MODELS`] (drawn by its
//! `popularity` weight) and carries `meta` = `{"model", "params_m", "seq_len" (text models
//! only), "gpus", "batch_size", "samples", "dataset_gb", "epochs"}`:
//!
//! - `gpus`: a power of two from {1, 2, 4, 8} with weights 0.4, 0.25, 0.2, 0.15 (most jobs
//!   use one GPU, as in Jeon et al. 2019, the Philly trace), restricted to `>= min_gpus` of
//!   the model (large models need several GPUs' memory).
//! - `batch_size`: the global batch, `gpus` x a per-GPU batch drawn uniformly from the
//!   model's list.
//! - `samples`: log-uniform on the model's range, rounded to 100; `dataset_gb` = samples x
//!   the model's KB per sample / 10^6, rounded to 0.1 GB.
//! - `epochs`: uniform on the model's range.
//!
//! **Run time** ([`ideal_runtime`]): 60 s start-up, plus 2 s per GB of data staged, plus
//! `epochs x samples x 3 x forward FLOPs per sample` (forward + backward = 3 forwards)
//! divided by `gpus x 312 TFLOP/s (A100 bf16 peak) x mfu x b / (b + b_half) x 0.95^log2(gpus)`,
//! where `mfu` is the model's utilisation at large batch, `b` the per-GPU batch and
//! `0.95^log2(gpus)` the data-parallel scaling efficiency. The true `runtime` is that time
//! times lognormal noise exp(0.2 z), z standard normal, rounded to seconds (at least 1).
//! Forward FLOPs per sample are 2 x parameters x sequence length for text models and
//! 2 x the published multiply-adds at 224 x 224 for vision models.
//!
//! **Walltime**: runtime x an overestimate factor log-uniform on [1.1, 4], rounded up to
//! 5/15/30 minutes, 1/2/4/8/12/24/48/72 hours or whole days beyond.
//!
//! **Demand**: `[gpus, gpus x c, gpus x m]` with c uniform on {4, 6, 8} cores per GPU and m
//! uniform on {16, 32, 48, 64} GiB per GPU, so every job fits one node.
//!
//! **Arrivals and users**: submissions form a Poisson process with mean gap 20 minutes,
//! except that with probability 0.3 a job is a hyper-parameter sweep variant of the previous
//! one: submitted 1 to 120 s after it by the same user with the same model, data and GPU
//! count, but a fresh per-GPU batch and epoch count. Users u0..u7 with Zipf-like weights
//! 1/(k+1).
//!
//! **Running jobs** (`load` option, default: 75% of all GPUs busy): drawn like queued jobs,
//! one of 4 candidates picked with probability proportional to its run time; each has run a
//! uniform part of its run time and `end` = `now` + walltime - elapsed. A job that must shrink
//! to fit keeps a power-of-two GPU count and its per-GPU cores and memory.
//!
//! **`now`**: 1 to 6 days plus a uniform time of day (moved later by whole days if needed).

use rand::Rng;
use rand_distr::{Distribution, Exp, StandardNormal};
use serde_json::Value;

use crate::family::draft::{
    draw_now_base, fill, log_uniform, pick_by_runtime, round_up_walltime, running_drafts,
    shrink_proportional, weighted_index, zipf_user, Draft, DraftJob, Target,
};
use crate::{Config, Load};

/// Resource names of the family.
pub const RESOURCES: [&str; 3] = ["gpus", "cores", "mem_gib"];
/// GPUs per node.
pub const NODE_GPUS: i64 = 8;
/// Cores per node.
pub const NODE_CORES: i64 = 64;
/// Memory per node in GiB.
pub const NODE_MEM_GIB: i64 = 512;
/// Nodes when the `servers` option is absent.
pub const DEFAULT_SERVERS: usize = 4;
/// Busy fraction of all GPUs at `now` when the `load` option is absent.
pub const DEFAULT_LOAD: f64 = 0.75;
/// Peak dense bf16 throughput of one GPU (NVIDIA A100), FLOP/s.
pub const PEAK_FLOPS: f64 = 312e12;
/// Fixed start-up time of a job, seconds.
pub const STARTUP_S: f64 = 60.0;
/// Seconds to stage one GB of training data.
pub const STAGE_S_PER_GB: f64 = 2.0;
/// Data-parallel efficiency kept per doubling of the GPU count.
pub const SCALING_PER_DOUBLING: f64 = 0.95;
/// Standard deviation of the log of the run-time noise.
pub const NOISE_SIGMA: f64 = 0.2;
/// Mean gap between independent submissions, seconds.
pub const MEAN_GAP_S: f64 = 1_200.0;
/// Probability that a job is a sweep variant of the previous one.
pub const SWEEP_PROB: f64 = 0.3;
/// Size of the user pool.
pub const USERS: usize = 8;

/// One model of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelSpec {
    /// Name written to `meta.model`.
    pub name: &'static str,
    /// Parameters in millions.
    pub params_m: f64,
    /// Forward FLOPs per training sample, in GFLOP.
    pub fwd_gflops: f64,
    /// Sequence length of text models (tokens per sample).
    pub seq_len: Option<i64>,
    /// Model FLOP utilisation at large per-GPU batch.
    pub mfu: f64,
    /// Per-GPU batch at which utilisation is half of `mfu`.
    pub batch_half: f64,
    /// Fewest GPUs the model trains on.
    pub min_gpus: i64,
    /// Per-GPU batch sizes users pick from.
    pub per_gpu_batch: &'static [i64],
    /// Range of the training-set size, samples (drawn log-uniformly).
    pub samples: (f64, f64),
    /// Size of one sample on disk, KB.
    pub kb_per_sample: f64,
    /// Range of the epoch count (uniform).
    pub epochs: (i64, i64),
    /// Relative frequency of the model among jobs.
    pub popularity: f64,
}

const IMAGENET: (f64, f64) = (50_000.0, 1_281_167.0);

/// The model catalogue.
pub const MODELS: [ModelSpec; 9] = [
    ModelSpec {
        name: "resnet18",
        params_m: 11.7,
        fwd_gflops: 3.6,
        seq_len: None,
        mfu: 0.18,
        batch_half: 8.0,
        min_gpus: 1,
        per_gpu_batch: &[64, 128, 256],
        samples: IMAGENET,
        kb_per_sample: 110.0,
        epochs: (10, 90),
        popularity: 2.0,
    },
    ModelSpec {
        name: "resnet50",
        params_m: 25.6,
        fwd_gflops: 8.2,
        seq_len: None,
        mfu: 0.22,
        batch_half: 8.0,
        min_gpus: 1,
        per_gpu_batch: &[64, 128, 256],
        samples: IMAGENET,
        kb_per_sample: 110.0,
        epochs: (10, 90),
        popularity: 3.0,
    },
    ModelSpec {
        name: "vit-b16",
        params_m: 86.6,
        fwd_gflops: 35.2,
        seq_len: None,
        mfu: 0.30,
        batch_half: 8.0,
        min_gpus: 1,
        per_gpu_batch: &[32, 64, 128],
        samples: IMAGENET,
        kb_per_sample: 110.0,
        epochs: (10, 100),
        popularity: 2.0,
    },
    ModelSpec {
        name: "bert-base",
        params_m: 110.0,
        fwd_gflops: 2.0 * 110.0 * 128.0 / 1_000.0,
        seq_len: Some(128),
        mfu: 0.35,
        batch_half: 4.0,
        min_gpus: 1,
        per_gpu_batch: &[16, 32, 64],
        samples: (10_000.0, 400_000.0),
        kb_per_sample: 0.5,
        epochs: (2, 10),
        popularity: 3.0,
    },
    ModelSpec {
        name: "bert-large",
        params_m: 340.0,
        fwd_gflops: 2.0 * 340.0 * 128.0 / 1_000.0,
        seq_len: Some(128),
        mfu: 0.35,
        batch_half: 4.0,
        min_gpus: 1,
        per_gpu_batch: &[8, 16, 32],
        samples: (10_000.0, 400_000.0),
        kb_per_sample: 0.5,
        epochs: (2, 5),
        popularity: 1.0,
    },
    ModelSpec {
        name: "t5-base",
        params_m: 220.0,
        fwd_gflops: 2.0 * 220.0 * 512.0 / 1_000.0,
        seq_len: Some(512),
        mfu: 0.30,
        batch_half: 2.0,
        min_gpus: 1,
        per_gpu_batch: &[8, 16, 32],
        samples: (10_000.0, 500_000.0),
        kb_per_sample: 2.0,
        epochs: (1, 5),
        popularity: 1.0,
    },
    ModelSpec {
        name: "gpt2-medium",
        params_m: 355.0,
        fwd_gflops: 2.0 * 355.0 * 1024.0 / 1_000.0,
        seq_len: Some(1024),
        mfu: 0.35,
        batch_half: 1.0,
        min_gpus: 1,
        per_gpu_batch: &[4, 8, 16],
        samples: (20_000.0, 1_000_000.0),
        kb_per_sample: 4.0,
        epochs: (1, 5),
        popularity: 2.0,
    },
    ModelSpec {
        name: "llama-7b",
        params_m: 6_738.0,
        fwd_gflops: 2.0 * 6_738.0 * 2048.0 / 1_000.0,
        seq_len: Some(2048),
        mfu: 0.40,
        batch_half: 0.5,
        min_gpus: 4,
        per_gpu_batch: &[1, 2, 4],
        samples: (5_000.0, 100_000.0),
        kb_per_sample: 8.0,
        epochs: (1, 3),
        popularity: 2.0,
    },
    ModelSpec {
        name: "llama-13b",
        params_m: 13_016.0,
        fwd_gflops: 2.0 * 13_016.0 * 2048.0 / 1_000.0,
        seq_len: Some(2048),
        mfu: 0.40,
        batch_half: 0.5,
        min_gpus: 8,
        per_gpu_batch: &[1, 2],
        samples: (5_000.0, 50_000.0),
        kb_per_sample: 8.0,
        epochs: (1, 3),
        popularity: 1.0,
    },
];

/// The catalogue entry named `name`.
pub fn model(name: &str) -> Option<&'static ModelSpec> {
    MODELS.iter().find(|m| m.name == name)
}

/// A training job, as its `meta` describes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DlJob {
    /// The catalogue entry of the trained model (`meta.model`, `meta.params_m`,
    /// `meta.seq_len`).
    pub model: &'static ModelSpec,
    /// GPUs used, a power of two in 1..=8 and at least the model's `min_gpus` (`meta.gpus`);
    /// also the job's first demand.
    pub gpus: i64,
    /// Global batch size (gpus x per-GPU batch).
    pub batch_size: i64,
    /// Training-set size in samples, a multiple of 100 (`meta.samples`).
    pub samples: i64,
    /// Size of the training data in GB, samples x the model's KB per sample / 10^6, rounded
    /// to 0.1 and at least 0.1; it is staged at 2 s per GB (`meta.dataset_gb`).
    pub dataset_gb: f64,
    /// Passes over the training set, in the model's epoch range (`meta.epochs`).
    pub epochs: i64,
}

impl DlJob {
    /// The job's `meta` object.
    pub fn meta(&self) -> Value {
        let meta = DlMeta {
            model: self.model.name.to_string(),
            params_m: self.model.params_m,
            seq_len: self.model.seq_len,
            gpus: self.gpus,
            batch_size: self.batch_size,
            samples: self.samples,
            dataset_gb: self.dataset_gb,
            epochs: self.epochs,
        };
        serde_json::to_value(meta).expect("a struct of numbers and strings is JSON")
    }

    /// The job a `meta` object describes (as [`DlJob::meta`] writes it); the error names the
    /// field that is missing or of the wrong type, or the model outside the catalogue.
    pub fn from_meta(meta: &Value) -> Result<DlJob, String> {
        let m: DlMeta = serde_json::from_value(meta.clone()).map_err(|e| format!("meta: {e}"))?;
        let spec = model(&m.model)
            .ok_or_else(|| format!("model {} is not in the dl catalogue", m.model))?;
        Ok(DlJob {
            model: spec,
            gpus: m.gpus,
            batch_size: m.batch_size,
            samples: m.samples,
            dataset_gb: m.dataset_gb,
            epochs: m.epochs,
        })
    }
}

/// The `meta` object of a `dl` job, written by the generator ([`DlJob::meta`]) and read back
/// by whoever replays the job ([`DlJob::from_meta`]; `schedlm_history::replay`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DlMeta {
    /// The catalogue's name of the trained model.
    pub model: String,
    /// Its parameters, millions.
    pub params_m: f64,
    /// Its sequence length (text models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq_len: Option<i64>,
    /// GPUs used.
    pub gpus: i64,
    /// Global batch size.
    pub batch_size: i64,
    /// Training-set size in samples.
    pub samples: i64,
    /// Size of the training data in GB.
    pub dataset_gb: f64,
    /// Passes over the training set.
    pub epochs: i64,
}

/// Noise-free run time of `job` in seconds (see the module docs). Linear in `epochs` and in
/// `samples`, decreasing in `gpus` (for a fixed per-GPU batch).
pub fn ideal_runtime(job: &DlJob) -> f64 {
    let m = job.model;
    let gpus = job.gpus.max(1) as f64;
    let per_gpu_batch = job.batch_size as f64 / gpus;
    let batch_eff = per_gpu_batch / (per_gpu_batch + m.batch_half);
    let scaling = SCALING_PER_DOUBLING.powf(gpus.log2());
    let flops = job.epochs as f64 * job.samples as f64 * 3.0 * m.fwd_gflops * 1e9;
    let rate = gpus * PEAK_FLOPS * m.mfu * batch_eff * scaling;
    STARTUP_S + STAGE_S_PER_GB * job.dataset_gb + flops / rate
}

/// True run time for a given noise factor: `ideal_runtime x noise`, rounded, at least 1.
pub fn runtime_with_noise(job: &DlJob, noise: f64) -> i64 {
    ((ideal_runtime(job) * noise).round() as i64).max(1)
}

/// GPU counts of a wide job (`wide`, `--wide`).
pub const WIDE_GPUS: [i64; 2] = [4, 8];
/// Node types of `mixed_nodes` (`--mixed-nodes`), [GPUs, cores, GiB], used in turn: the
/// default 8-GPU node and a 4-GPU node with half of everything.
pub const MIXED_NODES: [[i64; 3]; 2] = [[8, 64, 512], [4, 32, 256]];

/// Powers of two a job may use, and their weights.
const GPU_CHOICES: [(i64, f64); 4] = [(1, 0.4), (2, 0.25), (4, 0.2), (8, 0.15)];

fn draw_gpus<R: Rng>(rng: &mut R, min_gpus: i64) -> i64 {
    let allowed: Vec<(i64, f64)> = GPU_CHOICES
        .iter()
        .copied()
        .filter(|&(g, _)| g >= min_gpus && g <= NODE_GPUS)
        .collect();
    let weights: Vec<f64> = allowed.iter().map(|&(_, w)| w).collect();
    allowed[weighted_index(rng, &weights)].0
}

fn draw_epochs_and_batch<R: Rng>(rng: &mut R, m: &ModelSpec, gpus: i64) -> (i64, i64) {
    let per_gpu = m.per_gpu_batch[rng.random_range(0..m.per_gpu_batch.len())];
    let epochs = rng.random_range(m.epochs.0..=m.epochs.1);
    (epochs, per_gpu * gpus)
}

/// A job's description; with probability `wide` its GPU count is 4 or 8 (at least the model's
/// minimum), drawn uniformly, instead of the Philly-like weights.
fn draw_dl_job<R: Rng>(rng: &mut R, wide: f64) -> DlJob {
    let weights: Vec<f64> = MODELS.iter().map(|m| m.popularity).collect();
    let m = &MODELS[weighted_index(rng, &weights)];
    let gpus = if wide > 0.0 && rng.random_bool(wide) {
        let choices: Vec<i64> = WIDE_GPUS.into_iter().filter(|&g| g >= m.min_gpus).collect();
        choices[rng.random_range(0..choices.len())]
    } else {
        draw_gpus(rng, m.min_gpus)
    };
    let samples =
        ((log_uniform(rng, m.samples.0, m.samples.1) / 100.0).round() as i64 * 100).max(100);
    let dataset_gb = ((samples as f64 * m.kb_per_sample / 1e5).round() / 10.0).max(0.1);
    let (epochs, batch_size) = draw_epochs_and_batch(rng, m, gpus);
    DlJob {
        model: m,
        gpus,
        batch_size,
        samples,
        dataset_gb,
        epochs,
    }
}

/// A complete job: its description, demand, run time and walltime.
struct Job {
    dl: DlJob,
    demand: Vec<i64>,
    runtime: i64,
    walltime: i64,
}

fn complete<R: Rng>(rng: &mut R, dl: DlJob) -> Job {
    let cores_per_gpu = [4, 6, 8][rng.random_range(0..3usize)];
    let mem_per_gpu = [16, 32, 48, 64][rng.random_range(0..4usize)];
    let z: f64 = StandardNormal.sample(rng);
    let runtime = runtime_with_noise(&dl, (NOISE_SIGMA * z).exp());
    let factor = log_uniform(rng, 1.1, 4.0);
    let walltime = round_up_walltime((runtime as f64 * factor).ceil() as i64).max(runtime);
    Job {
        demand: vec![dl.gpus, dl.gpus * cores_per_gpu, dl.gpus * mem_per_gpu],
        dl,
        runtime,
        walltime,
    }
}

/// Candidates drawn per running job for the length-biased pick.
const RUNNING_CANDIDATES: usize = 4;

pub(crate) fn generate<R: Rng>(config: &Config, rng: &mut R) -> Draft {
    let n_servers = config.servers.unwrap_or(DEFAULT_SERVERS);
    let caps: Vec<Vec<i64>> = (0..n_servers)
        .map(|i| {
            if config.hard.mixed_nodes {
                MIXED_NODES[i % MIXED_NODES.len()].to_vec()
            } else {
                vec![NODE_GPUS, NODE_CORES, NODE_MEM_GIB]
            }
        })
        .collect();
    let wide = config.hard.wide;
    let now_base = draw_now_base(rng);

    let target = Target::of(config.load.unwrap_or(Load::Fraction(DEFAULT_LOAD)), &caps);
    let placed = fill(
        rng,
        &caps,
        target,
        |r| {
            let jobs: Vec<Job> = (0..RUNNING_CANDIDATES)
                .map(|_| {
                    let dl = draw_dl_job(r, wide);
                    complete(r, dl)
                })
                .collect();
            let job = pick_by_runtime(r, jobs, |j| j.runtime);
            let elapsed = r.random_range(0..job.runtime);
            (job.demand, (job.walltime, elapsed))
        },
        |d, l| shrink_proportional(d, l, true),
    );
    let running = running_drafts(placed);

    // Queue in submit order: arrival times from 0, then shifted so the last arrival lies an
    // exponential gap before `now`.
    let n_queue = rng.random_range(config.queue_min..=config.queue_max);
    let gap = Exp::new(1.0 / MEAN_GAP_S).expect("positive rate");
    let mut t = 0i64;
    let mut jobs: Vec<(i64, String, Job)> = Vec::with_capacity(n_queue);
    for k in 0..n_queue {
        let (user, dl) = match jobs.last() {
            Some((_, user, prev)) if rng.random_bool(SWEEP_PROB) => {
                t += rng.random_range(1..=120i64);
                let (epochs, batch_size) = draw_epochs_and_batch(rng, prev.dl.model, prev.dl.gpus);
                let dl = DlJob {
                    epochs,
                    batch_size,
                    ..prev.dl
                };
                (user.clone(), dl)
            }
            _ => {
                if k > 0 {
                    t += gap.sample(rng).round() as i64;
                }
                (zipf_user(rng, USERS), draw_dl_job(rng, wide))
            }
        };
        let job = complete(rng, dl);
        jobs.push((t, user, job));
    }
    let last = t + gap.sample(rng).round() as i64;
    let queue = jobs
        .into_iter()
        .map(|(t, user, job)| DraftJob {
            ago: last - t,
            demand: job.demand,
            walltime: job.walltime,
            runtime: Some(job.runtime),
            user,
            meta: Some(job.dl.meta()),
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
    use crate::{generate_one, Config, Family};

    fn job(name: &str, gpus: i64, per_gpu: i64, epochs: i64) -> DlJob {
        let m = model(name).unwrap();
        DlJob {
            model: m,
            gpus,
            batch_size: per_gpu * gpus,
            samples: 100_000,
            dataset_gb: 11.0,
            epochs,
        }
    }

    #[test]
    fn runtime_grows_with_epochs_for_every_model() {
        for m in &MODELS {
            let g = m.min_gpus;
            let b = m.per_gpu_batch[0];
            for noise in [0.7, 1.0, 1.4] {
                let mut prev = 0;
                for epochs in 1..=20 {
                    let rt = runtime_with_noise(&job(m.name, g, b, epochs), noise);
                    assert!(rt > prev, "{}: epochs {epochs}", m.name);
                    prev = rt;
                }
            }
        }
    }

    #[test]
    fn more_gpus_are_faster_bigger_models_slower() {
        let one = ideal_runtime(&job("resnet50", 1, 128, 30));
        let eight = ideal_runtime(&job("resnet50", 8, 128, 30));
        assert!(eight < one / 4.0);
        let small = ideal_runtime(&job("bert-base", 1, 32, 3));
        let large = ideal_runtime(&job("bert-large", 1, 32, 3));
        assert!(large > 2.0 * small);
    }

    #[test]
    fn plausible_runtimes() {
        // ResNet-50, ImageNet, 90 epochs on 8 GPUs: about one to two hours.
        let mut j = job("resnet50", 8, 256, 90);
        j.samples = 1_281_167;
        j.dataset_gb = 140.9;
        let t = ideal_runtime(&j);
        assert!((3_000.0..10_000.0).contains(&t), "{t}");
    }

    #[test]
    fn runtime_in_expectation_grows_with_epochs() {
        // Over generated jobs of one model, mean runtime per epoch group increases.
        let mut rng = instance_rng(4, 0, Family::Dl, Purpose::Main);
        let m = model("bert-base").unwrap();
        let mut sums = [0.0f64; 2];
        let mut counts = [0usize; 2];
        for _ in 0..4_000 {
            let (epochs, batch_size) = draw_epochs_and_batch(&mut rng, m, 1);
            let dl = DlJob {
                model: m,
                gpus: 1,
                batch_size,
                samples: 50_000,
                dataset_gb: 0.5,
                epochs,
            };
            let job = complete(&mut rng, dl);
            let group = usize::from(epochs > 6);
            sums[group] += job.runtime as f64;
            counts[group] += 1;
        }
        assert!(sums[1] / counts[1] as f64 > 1.5 * sums[0] / counts[0] as f64);
    }

    #[test]
    fn meta_matches_demand_and_runtime_is_consistent() {
        let config = Config::new(Family::Dl, 21);
        for index in 0..100 {
            let inst = generate_one(&config, index).unwrap();
            assert_eq!(inst.resources, ["gpus", "cores", "mem_gib"]);
            for j in &inst.queue {
                let meta = j.meta.as_ref().unwrap();
                let dl = DlJob::from_meta(meta).unwrap();
                assert_eq!(&dl.meta(), meta, "written and read back");
                let gpus = dl.gpus;
                assert_eq!(j.demand[0], gpus);
                assert_eq!(gpus.count_ones(), 1);
                assert!(gpus <= NODE_GPUS);
                assert!(gpus >= dl.model.min_gpus);
                assert_eq!(dl.batch_size % gpus, 0);
                let ratio = j.runtime.unwrap() as f64 / ideal_runtime(&dl);
                // exp(0.2 z) stays within [exp(-1.2), exp(1.2)] except with probability 2e-9.
                assert!((0.3..3.4).contains(&ratio), "{ratio}");
                assert!(j.walltime >= j.runtime.unwrap());
            }
        }
    }

    #[test]
    fn a_meta_that_is_not_a_dl_jobs_names_what_is_wrong() {
        let mut meta = DlJob::from_meta(
            &generate_one(&Config::new(Family::Dl, 3), 0).unwrap().queue[0]
                .meta
                .clone()
                .unwrap(),
        )
        .unwrap()
        .meta();
        meta["gpus"] = "four".into();
        assert!(DlJob::from_meta(&meta)
            .unwrap_err()
            .contains("invalid type"));
        meta.as_object_mut().unwrap().remove("gpus");
        assert!(DlJob::from_meta(&meta)
            .unwrap_err()
            .contains("missing field `gpus`"));
        let e = DlJob::from_meta(&serde_json::json!({"model": "gpt-9", "params_m": 1.0,
            "gpus": 1, "batch_size": 1, "samples": 100, "dataset_gb": 0.1, "epochs": 1}));
        assert!(e.unwrap_err().contains("gpt-9 is not in the dl catalogue"));
    }
}
