//! [`Problem`]: a validated instance compiled to flat arrays indexed by queue position.
//!
//! Everything downstream (dispatcher, rules, solvers) works on `Problem` so that hot loops
//! read contiguous integers instead of strings and nested vectors.

use std::collections::HashMap;

use crate::instance::{Instance, Time};
use crate::validate::{validate, InstanceError};

/// A validated instance in flat form. Job `j` is the `j`-th queued job of the instance.
#[derive(Debug, Clone)]
pub struct Problem {
    now: Time,
    resources: usize,
    capacity: Vec<i64>,
    demand: Vec<i64>,
    walltime: Vec<Time>,
    submit: Vec<Time>,
    weight: Vec<f64>,
    /// max(now, ends of running dependencies), per job.
    released: Vec<Time>,
    dep_offsets: Vec<usize>,
    dep_list: Vec<usize>,
    /// Per job and server, whether the demand fits the server's capacity.
    fits: Vec<bool>,
    running: Vec<Running>,
    job_ids: Vec<String>,
    server_ids: Vec<String>,
}

/// A running job in flat form: it holds `demand` on `server` over [now, end).
#[derive(Debug, Clone)]
pub struct Running {
    /// 0-based index of its server, in instance order.
    pub server: usize,
    /// When it frees its server, in seconds (> `now`).
    pub end: Time,
    /// Amount held per resource, R entries.
    pub demand: Vec<i64>,
}

impl Problem {
    /// Repairs and dispatches `order` (queue indices) and returns the placement order and its
    /// objective value; an order the dispatcher refuses (not a permutation) scores infinity.
    pub fn evaluate(
        &self,
        order: &[usize],
        objective: crate::Objective,
        variant: crate::Variant,
    ) -> (Vec<usize>, f64) {
        match self.schedule(order, objective, variant) {
            Ok((s, value)) => (s.order, value),
            Err(_) => (order.to_vec(), f64::INFINITY),
        }
    }

    /// Repairs and dispatches `order` (queue indices): the schedule and its objective value.
    pub fn schedule(
        &self,
        order: &[usize],
        objective: crate::Objective,
        variant: crate::Variant,
    ) -> Result<(crate::Schedule, f64), crate::OrderError> {
        let schedule = crate::dispatch(self, order, variant)?;
        let value = objective.value(self, &schedule.start);
        Ok((schedule, value))
    }

    /// The queued jobs in an order where every job comes after its queued dependencies: the
    /// repair (SPEC section 2) of queue order.
    pub fn topological_order(&self) -> Vec<usize> {
        let all: Vec<usize> = (0..self.jobs()).collect();
        crate::repair(self, &all)
    }

    /// Per queued job, the longest chain of walltimes of the queued jobs that depend on it,
    /// directly or not (0 without dependents): after the job ends, the makespan lasts at least
    /// that much longer.
    pub fn tails(&self) -> Vec<Time> {
        let mut tail = vec![0; self.jobs()];
        for &k in self.topological_order().iter().rev() {
            for &j in self.deps(k) {
                tail[j] = tail[j].max(self.walltime(k) + tail[k]);
            }
        }
        tail
    }

    /// Validates `instance` and compiles it.
    pub fn new(instance: &Instance) -> Result<Problem, InstanceError> {
        validate(instance)?;
        Ok(Problem::compile(instance))
    }

    /// Compiles an instance already known to be valid.
    fn compile(instance: &Instance) -> Problem {
        let r = instance.resources.len();
        let server_index: HashMap<&str, usize> = instance
            .servers
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), i))
            .collect();
        let queue_index: HashMap<&str, usize> = instance
            .queue
            .iter()
            .enumerate()
            .map(|(i, j)| (j.id.as_str(), i))
            .collect();
        let running_end: HashMap<&str, Time> = instance
            .running
            .iter()
            .map(|j| (j.id.as_str(), j.end))
            .collect();
        let capacity: Vec<i64> = instance
            .servers
            .iter()
            .flat_map(|s| s.capacity.clone())
            .collect();
        let mut dep_offsets = vec![0];
        let mut dep_list = Vec::new();
        let mut released = Vec::with_capacity(instance.queue.len());
        for job in &instance.queue {
            let mut release = instance.now;
            for dep in &job.deps {
                if let Some(&end) = running_end.get(dep.as_str()) {
                    release = release.max(end);
                } else if let Some(&q) = queue_index.get(dep.as_str()) {
                    if !dep_list[dep_offsets[dep_offsets.len() - 1]..].contains(&q) {
                        dep_list.push(q);
                    }
                }
            }
            released.push(release);
            dep_offsets.push(dep_list.len());
        }
        let fits = instance
            .queue
            .iter()
            .flat_map(|j| {
                instance
                    .servers
                    .iter()
                    .map(move |s| j.demand.iter().zip(&s.capacity).all(|(d, c)| d <= c))
            })
            .collect();
        let running = instance
            .running
            .iter()
            .map(|j| Running {
                server: server_index[j.server.as_str()],
                end: j.end,
                demand: j.demand.clone(),
            })
            .collect();
        Problem {
            now: instance.now,
            resources: r,
            capacity,
            demand: instance
                .queue
                .iter()
                .flat_map(|j| j.demand.clone())
                .collect(),
            walltime: instance.queue.iter().map(|j| j.walltime).collect(),
            submit: instance.queue.iter().map(|j| j.submit).collect(),
            weight: instance.queue.iter().map(|j| j.weight).collect(),
            released,
            dep_offsets,
            dep_list,
            fits,
            running,
            job_ids: instance.queue.iter().map(|j| j.id.clone()).collect(),
            server_ids: instance.servers.iter().map(|s| s.id.clone()).collect(),
        }
    }

    /// The snapshot time.
    pub fn now(&self) -> Time {
        self.now
    }
    /// Number of queued jobs.
    pub fn jobs(&self) -> usize {
        self.walltime.len()
    }
    /// Number of servers.
    pub fn servers(&self) -> usize {
        self.server_ids.len()
    }
    /// Number of resources R.
    pub fn resources(&self) -> usize {
        self.resources
    }
    /// Capacity vector of server `s`.
    pub fn capacity(&self, s: usize) -> &[i64] {
        &self.capacity[s * self.resources..(s + 1) * self.resources]
    }
    /// Demand vector of job `j`.
    pub fn demand(&self, j: usize) -> &[i64] {
        &self.demand[j * self.resources..(j + 1) * self.resources]
    }
    /// Requested processing time p_j.
    pub fn walltime(&self, j: usize) -> Time {
        self.walltime[j]
    }
    /// Submit time of job `j`.
    pub fn submit(&self, j: usize) -> Time {
        self.submit[j]
    }
    /// Weight of job `j` (1 unless the instance says otherwise).
    pub fn weight(&self, j: usize) -> f64 {
        self.weight[j]
    }
    /// Earliest start allowed by `now` and the running jobs `j` depends on.
    pub fn released(&self, j: usize) -> Time {
        self.released[j]
    }
    /// Queued jobs that `j` depends on (indices, without repeats).
    pub fn deps(&self, j: usize) -> &[usize] {
        &self.dep_list[self.dep_offsets[j]..self.dep_offsets[j + 1]]
    }
    /// Whether any queued job depends on another queued job.
    pub fn has_queued_deps(&self) -> bool {
        !self.dep_list.is_empty()
    }
    /// Whether job `j` fits server `s` when the server is empty.
    pub fn fits(&self, j: usize, s: usize) -> bool {
        self.fits[j * self.server_ids.len() + s]
    }
    /// The running jobs.
    pub fn running(&self) -> &[Running] {
        &self.running
    }
    /// Id of queued job `j`.
    pub fn job_id(&self, j: usize) -> &str {
        &self.job_ids[j]
    }
    /// Id of server `s`.
    pub fn server_id(&self, s: usize) -> &str {
        &self.server_ids[s]
    }
    /// Index of the queued job with this id.
    pub fn job_index(&self, id: &str) -> Option<usize> {
        self.job_ids.iter().position(|x| x == id)
    }
}
