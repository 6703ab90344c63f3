//! Online replay of `dl` training jobs in which a share of the jobs leave their configuration
//! (GPU count, batch size) out: the cluster runs them with a user default, or with the
//! configuration [`crate::advice::advise`] fills in at submission. Mean job completion time
//! (JCT) and bounded slowdown, under FIFO and SJF.
//!
//! The world is the generator's `dl` family (`schedlm_generator::family::dl`): a job's true
//! run time in a configuration is the family's run-time model ([`ideal_runtime`]) with the
//! GPU count and global batch of that configuration, times the job's own noise factor (its
//! `runtime` over the noise-free time of the configuration it was drawn with). The advisor
//! does not know that model: it learns throughputs from past runs ([`knowledge_of`]: the jobs of
//! another snapshot, each seen once in its user's configuration) and predicts queue waits
//! from the running jobs' predicted ends.
//!
//! Rules of the replay (docs/knowledge.md):
//!
//! - the cluster is a pool of GPUs (every job fits one 8-GPU node, so a pool of nodes x 8 GPUs
//!   ignores only fragmentation across nodes);
//! - the replay runs on the model crate's simulator ([`schedlm_model::sim`], strict start
//!   rule), each job configured at its arrival through [`schedlm_model::sim::Policy::arrive`];
//! - jobs start in policy order while the next one fits (no backfilling): FIFO by submission,
//!   SJF by predicted run time (the advisor's prediction for the chosen configuration, for
//!   every job), ties by submission;
//! - a job that leaves its configuration out gets, as the user default, the model's fewest
//!   GPUs with the smallest per-GPU batch of the catalogue, or the advised configuration:
//!   GPUs in {1, 2, 4, 8}, a per-GPU batch seen in the past runs, predicted to fit, least
//!   predicted wait + run; the work (epochs x samples) is the same either way;
//! - which jobs leave their configuration out is a seeded hash of the job id.

use std::collections::HashMap;

use schedlm_generator::family::dl::{ideal_runtime, DlJob, STAGE_S_PER_GB, STARTUP_S};
use schedlm_generator::similar::kind_of;
use schedlm_generator::{generate_one, Config, Family, Load};
use schedlm_model::instance::{Instance, Server};
use schedlm_model::sim::{Policy as SimPolicy, SimError, SimJob, SimState, Simulation, StartRule};
use serde::Serialize;

use crate::advice::{advise, Knowledge, Request, Run};

/// Why a replay could not be set up or run (the job is named).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ReplayError {
    /// The simulator refused a job (a configuration that fits no server: more GPUs than the
    /// pool).
    #[error(transparent)]
    Sim(#[from] SimError),
    /// A queued job is not a `dl` job with the family's `meta` and a true run time.
    #[error("job {job}: {message}")]
    Job {
        /// The job's id.
        job: String,
        /// What is missing or wrong.
        message: String,
    },
}

/// One job of the replay.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayJob {
    /// Its id.
    pub id: String,
    /// Submission time.
    pub submit: i64,
    /// The job in the configuration its user gave (GPUs, global batch).
    pub job: DlJob,
    /// Its run-time noise: true run time over the noise-free one.
    pub noise: f64,
    /// Its true run time in its user's configuration (the snapshot's `runtime`).
    pub runtime: i64,
    /// Whether it leaves its configuration out.
    pub leaves_out: bool,
}

/// How the jobs that leave their configuration out are configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Filling {
    /// The user default: fewest GPUs, smallest per-GPU batch.
    Default,
    /// The advisor's configuration.
    Advised,
}

/// The order jobs start in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// First come, first served.
    Fifo,
    /// Shortest predicted run time first.
    Sjf,
}

/// What one replay gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayResult {
    /// The policy.
    pub policy: Policy,
    /// How missing configurations were filled.
    pub filling: Filling,
    /// Jobs replayed.
    pub jobs: usize,
    /// Jobs that left their configuration out.
    pub left_out: usize,
    /// Mean completion time (end - submit), seconds.
    pub mean_jct: f64,
    /// Mean bounded slowdown max(1, (end - submit) / max(run, 10)).
    pub mean_bsld: f64,
    /// Mean GPUs of the jobs that left their configuration out.
    pub mean_gpus_left_out: f64,
}

/// The workload of the replays: a `dl` snapshot with `jobs` queued jobs (submitted as the
/// family draws them) and no running jobs, on `servers` nodes (the family's default when
/// `None`).
pub fn dl_workload(
    seed: u64,
    jobs: usize,
    servers: Option<usize>,
) -> Result<Instance, schedlm_generator::GenError> {
    let mut c = Config::new(Family::Dl, seed);
    c.queue_min = jobs;
    c.queue_max = jobs;
    c.servers = servers;
    c.load = Some(Load::Fraction(0.0));
    generate_one(&c, 0)
}

/// The jobs of a `dl` snapshot's queue; a share `share` of them (by a hash of `seed` and the
/// id) leave their configuration out.
pub fn jobs_of(instance: &Instance, share: f64, seed: u64) -> Result<Vec<ReplayJob>, ReplayError> {
    let mut jobs = Vec::new();
    for q in &instance.queue {
        let bad = |message: &str| ReplayError::Job {
            job: q.id.clone(),
            message: message.to_string(),
        };
        let meta = q
            .meta
            .as_ref()
            .ok_or_else(|| bad("no meta (not a dl job)"))?;
        let job = DlJob::from_meta(meta).map_err(|e| bad(&e))?;
        let runtime = q.runtime.ok_or_else(|| bad("no true runtime"))?;
        let h = kind_of(&format!("{seed}:{}", q.id));
        jobs.push(ReplayJob {
            id: q.id.clone(),
            submit: q.submit,
            job,
            noise: runtime as f64 / ideal_runtime(&job),
            runtime,
            leaves_out: ((h % 1_000_000) as f64) < share * 1_000_000.0,
        });
    }
    jobs.sort_by(|a, b| a.submit.cmp(&b.submit).then(a.id.cmp(&b.id)));
    Ok(jobs)
}

/// Past runs learned from the jobs of a `dl` snapshot: each job once, in its user's
/// configuration, with the throughput its true run time shows (the fixed start-up and staging
/// times taken out).
pub fn knowledge_of(past: &[ReplayJob]) -> Knowledge {
    let runs = past
        .iter()
        .filter_map(|p| {
            let j = &p.job;
            let run_s = ideal_runtime(j) * p.noise;
            let compute_s = run_s - STARTUP_S - STAGE_S_PER_GB * j.dataset_gb;
            let local = j.batch_size / j.gpus.max(1);
            (compute_s > 0.0 && local > 0).then(|| {
                let samples_per_s = (j.epochs * j.samples) as f64 / compute_s;
                Run {
                    model: j.model.name.to_string(),
                    nodes: 1,
                    gpus: j.gpus as u32,
                    local_batch: local as u32,
                    step_time_s: j.batch_size as f64 / samples_per_s,
                    fits: true,
                    line: 0,
                }
            })
        })
        .collect();
    Knowledge::new(runs)
}

/// A configuration and its predicted and true run times.
#[derive(Debug, Clone, Copy)]
struct Chosen {
    gpus: i64,
    predicted_s: f64,
    true_s: i64,
}

/// The true run time of `job` on `gpus` GPUs with `local` samples per GPU.
fn true_runtime(r: &ReplayJob, gpus: i64, local: i64) -> i64 {
    let job = DlJob {
        gpus,
        batch_size: gpus * local,
        ..r.job
    };
    ((ideal_runtime(&job) * r.noise).round() as i64).max(1)
}

/// The advisor's predicted run time of `job` in a configuration (start-up and staging added
/// to the predicted compute time).
pub(crate) fn predicted_runtime(
    k: &Knowledge,
    r: &ReplayJob,
    gpus: i64,
    local: i64,
) -> Option<f64> {
    let t = k.throughput(r.job.model.name, 1, gpus as u32, local as u32)?;
    let work = (r.job.epochs * r.job.samples) as f64;
    Some(STARTUP_S + STAGE_S_PER_GB * r.job.dataset_gb + work / t.samples_per_s)
}

/// The configuration `r` runs with, chosen at `now` with `running` (predicted end, GPUs).
fn choose(
    k: &Knowledge,
    r: &ReplayJob,
    filling: Filling,
    now: i64,
    running: &[(f64, i64)],
    free: i64,
) -> Chosen {
    let user = |gpus: i64, local: i64| Chosen {
        gpus,
        predicted_s: predicted_runtime(k, r, gpus, local).unwrap_or(f64::INFINITY),
        true_s: true_runtime(r, gpus, local),
    };
    let m = r.job.model;
    let smallest_batch = m.per_gpu_batch.iter().copied().min().unwrap_or(1);
    let default = || user(m.min_gpus.max(1), smallest_batch);
    if !r.leaves_out {
        return user(r.job.gpus, r.job.batch_size / r.job.gpus.max(1));
    }
    if filling == Filling::Default {
        return default();
    }
    let waits: Vec<(u32, f64)> = [1i64, 2, 4, 8]
        .into_iter()
        .map(|g| (g as u32, wait_for(g, now, running, free)))
        .collect();
    let request = Request {
        model: m.name.to_string(),
        samples: (r.job.epochs * r.job.samples) as f64,
        gpus: None,
        local_batch: None,
        gpus_per_node: 8,
        waits,
    };
    match advise(k, &request) {
        Ok(c) => user(i64::from(c[0].gpus), i64::from(c[0].local_batch)),
        Err(_) => default(),
    }
}

/// Predicted seconds until `gpus` GPUs are free, from the running jobs' predicted ends.
fn wait_for(gpus: i64, now: i64, running: &[(f64, i64)], free: i64) -> f64 {
    let mut ends: Vec<(f64, i64)> = running.to_vec();
    ends.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut available = free;
    if available >= gpus {
        return 0.0;
    }
    for (end, g) in ends {
        available += g;
        if available >= gpus {
            return (end - now as f64).max(0.0);
        }
    }
    f64::INFINITY
}

/// Replays `jobs` on `gpus` GPUs under `policy`, the missing configurations filled by
/// `filling` from knowledge `k`, on the model crate's simulator (one server of `gpus` GPUs,
/// the strict start rule: jobs start in policy order while the next one fits); each job is
/// configured at its arrival (the `Advisor` policy, through `Policy::arrive`).
pub fn replay(
    jobs: &[ReplayJob],
    k: &Knowledge,
    gpus: i64,
    policy: Policy,
    filling: Filling,
) -> Result<ReplayResult, ReplayError> {
    let sim_jobs: Vec<SimJob> = jobs
        .iter()
        .map(|r| {
            let run = r.runtime.max(1);
            SimJob::new(r.id.clone(), r.submit, vec![r.job.gpus], run, run)
        })
        .collect();
    let pool = Server {
        id: "gpus".into(),
        capacity: vec![gpus],
    };
    let sim = Simulation::new(vec!["gpu".into()], vec![pool], sim_jobs)?;
    let mut advisor = Advisor {
        jobs,
        k,
        policy,
        filling,
        chosen: vec![None; jobs.len()],
        index: jobs
            .iter()
            .enumerate()
            .map(|(i, r)| (r.id.as_str(), i))
            .collect(),
    };
    let result = sim.run(&mut advisor, StartRule::Strict)?;
    let (mut jct_sum, mut bsld_sum) = (0.0, 0.0);
    for record in &result.jobs {
        let jct = (record.end - record.submit) as f64;
        jct_sum += jct;
        bsld_sum += (jct / ((record.end - record.start).max(10) as f64)).max(1.0);
    }
    let left: Vec<i64> = jobs
        .iter()
        .zip(&advisor.chosen)
        .filter(|(r, _)| r.leaves_out)
        .filter_map(|(_, c)| c.map(|c| c.gpus))
        .collect();
    let n = jobs.len().max(1) as f64;
    Ok(ReplayResult {
        policy,
        filling,
        jobs: jobs.len(),
        left_out: left.len(),
        mean_jct: jct_sum / n,
        mean_bsld: bsld_sum / n,
        mean_gpus_left_out: if left.is_empty() {
            0.0
        } else {
            left.iter().sum::<i64>() as f64 / left.len() as f64
        },
    })
}

/// The scheduler of [`replay`]: configures each job at its arrival ([`choose`], with the
/// waits its own predictions give: a running job is expected to end at its start plus its
/// predicted run time) and orders the queue by submission (FIFO) or predicted run time (SJF).
struct Advisor<'j> {
    jobs: &'j [ReplayJob],
    k: &'j Knowledge,
    policy: Policy,
    filling: Filling,
    /// The configuration each arrived job got.
    chosen: Vec<Option<Chosen>>,
    /// Each job's index by id (what `static_key` is given is the job, not its index).
    index: HashMap<&'j str, usize>,
}

impl SimPolicy for Advisor<'_> {
    fn order(&mut self, _state: &SimState<'_>, waiting: &[usize]) -> Vec<usize> {
        (0..waiting.len()).collect()
    }

    fn static_key(&self, job: &SimJob) -> Option<f64> {
        Some(match self.policy {
            Policy::Fifo => 0.0,
            Policy::Sjf => self
                .index
                .get(job.id.as_str())
                .and_then(|&i| self.chosen[i])
                .map_or(f64::INFINITY, |c| c.predicted_s),
        })
    }

    fn arrive(&mut self, state: &SimState<'_>, j: usize) -> Option<SimJob> {
        let running: Vec<(f64, i64)> = state
            .running()
            .filter_map(|r| {
                let c = self.chosen[r.job]?;
                Some((r.start as f64 + c.predicted_s, c.gpus))
            })
            .collect();
        let free = state.free(0)[0];
        let c = choose(
            self.k,
            &self.jobs[j],
            self.filling,
            state.now(),
            &running,
            free,
        );
        self.chosen[j] = Some(c);
        let run = c.true_s.max(1);
        let given = &state.input_jobs()[j];
        Some(SimJob {
            demand: vec![c.gpus],
            walltime: run,
            runtime: run,
            ..given.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dl(seed: u64, queue: usize) -> Instance {
        dl_workload(seed, queue, None).unwrap()
    }

    #[test]
    fn the_users_configuration_reproduces_the_true_runtime() {
        let instance = dl(3, 30);
        let jobs = jobs_of(&instance, 0.0, 1).unwrap();
        for (j, q) in jobs.iter().zip({
            let mut q = instance.queue.clone();
            q.sort_by(|a, b| a.submit.cmp(&b.submit).then(a.id.cmp(&b.id)));
            q
        }) {
            assert!(!j.leaves_out);
            let local = j.job.batch_size / j.job.gpus;
            assert_eq!(true_runtime(j, j.job.gpus, local), q.runtime.unwrap());
        }
    }

    #[test]
    fn with_no_job_leaving_its_configuration_out_both_fillings_agree() {
        let past = jobs_of(&dl(1, 60), 0.0, 1).unwrap();
        let k = knowledge_of(&past);
        let jobs = jobs_of(&dl(2, 40), 0.0, 1).unwrap();
        for policy in [Policy::Fifo, Policy::Sjf] {
            let a = replay(&jobs, &k, 16, policy, Filling::Default).unwrap();
            let b = replay(&jobs, &k, 16, policy, Filling::Advised).unwrap();
            assert_eq!((a.mean_jct, a.mean_bsld), (b.mean_jct, b.mean_bsld));
            assert_eq!(a.left_out, 0);
            assert!(a.mean_bsld >= 1.0);
        }
    }

    #[test]
    fn a_lone_job_completes_after_its_true_runtime() {
        let jobs = jobs_of(&dl(5, 8), 0.0, 1).unwrap();
        let one = &jobs[..1];
        let k = knowledge_of(&jobs);
        let r = replay(one, &k, 64, Policy::Fifo, Filling::Default).unwrap();
        let local = one[0].job.batch_size / one[0].job.gpus;
        assert_eq!(
            r.mean_jct,
            true_runtime(&one[0], one[0].job.gpus, local) as f64
        );
    }

    #[test]
    fn waits_come_from_the_running_jobs_predicted_ends() {
        let running = [(500.0, 4), (200.0, 2)];
        assert_eq!(wait_for(2, 100, &running, 2), 0.0);
        assert_eq!(wait_for(4, 100, &running, 2), 100.0);
        assert_eq!(wait_for(8, 100, &running, 2), 400.0);
        assert_eq!(wait_for(16, 100, &running, 2), f64::INFINITY);
    }
}
