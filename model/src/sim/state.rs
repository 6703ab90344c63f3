//! The state of a replay between events ([`SimState`], what a policy sees), and the sorted
//! queue of static-key policies.

use std::borrow::Cow;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeSet, BinaryHeap};

use crate::instance::{Instance, QueuedJob, RunningJob, Server, Time};
use crate::objective::job_bsld;

use super::{JobRecord, Series, SimJob, SimResult, Simulation, Summary};

/// A job in the sorted queue of a static-key policy: ordered by (key, submit, input index).
#[derive(Debug, Clone, Copy)]
pub(super) struct Keyed {
    pub(super) key: f64,
    pub(super) submit: Time,
    pub(super) job: usize,
}

impl PartialEq for Keyed {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Keyed {}
impl PartialOrd for Keyed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Keyed {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key
            .total_cmp(&other.key)
            .then(self.submit.cmp(&other.submit))
            .then(self.job.cmp(&other.job))
    }
}

/// A running job as a policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunningView {
    /// Index into [`SimState::jobs`].
    pub job: usize,
    /// 0-based index of the server it runs on, into [`SimState::servers`].
    pub server: usize,
    /// When the job started, in seconds.
    pub start: Time,
    /// start + walltime: when the job is killed at the latest (its end in a SPEC trace
    /// snapshot).
    pub walltime_end: Time,
    /// When the scheduler expects the job to end: start + estimate while that is after now,
    /// else `walltime_end` (equal to `walltime_end` for a job without an estimate).
    pub planned_end: Time,
}

/// The state of a replay between events, as a [`Policy`](super::Policy) sees it.
pub struct SimState<'a> {
    pub(super) sim: &'a Simulation,
    /// The jobs as given, with the configurations a policy chose at arrival
    /// ([`super::Policy::arrive`]); borrowed from the simulation until one is chosen.
    pub(super) input: Cow<'a, [SimJob]>,
    /// The jobs as the scheduler sees them ([`SimJob::plan`] as the walltime).
    pub(super) planning: Cow<'a, [SimJob]>,
    pub(super) r: usize,
    pub(super) now: Time,
    /// Free capacity, `r` entries per server.
    pub(super) free: Vec<i64>,
    /// Per server, the running jobs as (planned end, job).
    pub(super) by_wend: Vec<BTreeSet<(Time, usize)>>,
    /// Planned end of each running job.
    pub(super) pend: Vec<Time>,
    /// (start + estimate, job) of running jobs that will outlive their estimate.
    pub(super) overrun: BinaryHeap<Reverse<(Time, usize)>>,
    pub(super) running: Vec<usize>,
    /// Position of each running job in `running`.
    pub(super) slot: Vec<usize>,
    /// Waiting jobs in arrival order (only without static keys).
    pub(super) waiting: Vec<usize>,
    /// Waiting jobs in key order (only with static keys).
    pub(super) keyed_queue: BTreeSet<Keyed>,
    pub(super) keys: Vec<f64>,
    pub(super) keyed: bool,
    /// Per resource, how many waiting jobs demand none of it.
    pub(super) zero_waiting: Vec<usize>,
    pub(super) start: Vec<Time>,
    pub(super) server: Vec<usize>,
    pub(super) series: Series,
    pub(super) total: Vec<i64>,
    pub(super) used: Vec<i64>,
    pub(super) steps: usize,
}

impl<'a> SimState<'a> {
    pub(super) fn new(sim: &'a Simulation, keyed: bool) -> SimState<'a> {
        let r = sim.resources.len();
        let n = sim.jobs.len();
        SimState {
            sim,
            input: Cow::Borrowed(&sim.jobs),
            planning: Cow::Borrowed(sim.planning_jobs()),
            r,
            now: sim.arrival.first().map_or(0, |&j| sim.jobs[j].submit),
            free: sim
                .servers
                .iter()
                .flat_map(|s| s.capacity.iter().copied())
                .collect(),
            by_wend: vec![BTreeSet::new(); sim.servers.len()],
            pend: vec![0; n],
            overrun: BinaryHeap::new(),
            running: Vec::new(),
            slot: vec![usize::MAX; n],
            waiting: Vec::new(),
            keyed_queue: BTreeSet::new(),
            keys: if keyed { vec![0.0; n] } else { Vec::new() },
            keyed,
            zero_waiting: vec![0; r],
            start: vec![Time::MIN; n],
            server: vec![usize::MAX; n],
            series: Series {
                resources: sim.resources.clone(),
                ..Series::default()
            },
            total: sim.total_capacity(),
            used: vec![0; r],
            steps: 0,
        }
    }

    /// The current time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Every job of the replay (indices are input positions), as the scheduler sees it:
    /// `walltime` is the planning length [`SimJob::plan`] (the estimate when the job has one).
    /// [`SimState::input_jobs`] has the jobs as given.
    pub fn jobs(&self) -> &[SimJob] {
        &self.planning
    }

    /// Every job of the replay as given to [`Simulation::new`] (requested walltimes).
    pub fn input_jobs(&self) -> &[SimJob] {
        &self.input
    }

    /// Replaces job `j` with the configuration a policy chose at its arrival (same id and
    /// submit time; demand, walltime, run time and estimate may differ), checked as
    /// [`super::Simulation::new`] checks jobs.
    pub(super) fn configure(&mut self, j: usize, job: SimJob) -> Result<(), super::SimError> {
        let given = &self.input[j];
        if job.id != given.id || job.submit != given.submit {
            return Err(super::SimError::Reconfigured {
                job: given.id.clone(),
            });
        }
        super::check_job(&job, self.r, &self.sim.servers)?;
        self.planning.to_mut()[j] = SimJob {
            walltime: job.plan(),
            ..job.clone()
        };
        self.input.to_mut()[j] = job;
        Ok(())
    }

    /// Names of the resources, in the order of every capacity and demand vector.
    pub fn resources(&self) -> &'a [String] {
        &self.sim.resources
    }

    /// The servers as given to [`Simulation::new`], in server order.
    pub fn servers(&self) -> &'a [Server] {
        &self.sim.servers
    }

    /// Free capacity of server `s` now, per resource.
    pub fn free(&self, s: usize) -> &[i64] {
        &self.free[s * self.r..(s + 1) * self.r]
    }

    /// The running jobs (in no particular order).
    pub fn running(&self) -> impl ExactSizeIterator<Item = RunningView> + '_ {
        self.running.iter().map(|&j| RunningView {
            job: j,
            server: self.server[j],
            start: self.start[j],
            walltime_end: self.start[j] + self.input[j].walltime,
            planned_end: self.pend[j],
        })
    }

    /// Number of waiting jobs.
    pub fn waiting_len(&self) -> usize {
        if self.keyed {
            self.keyed_queue.len()
        } else {
            self.waiting.len()
        }
    }

    /// The waiting jobs (indices into [`SimState::jobs`]) in arrival order.
    pub fn waiting(&self) -> Vec<usize> {
        if self.keyed {
            let mut w: Vec<usize> = self.keyed_queue.iter().map(|k| k.job).collect();
            w.sort_by_key(|&j| (self.input[j].submit, j));
            w
        } else {
            self.waiting.clone()
        }
    }

    /// The current state as a SPEC-section-1 instance: `now`, the servers, the running jobs
    /// (end = start + walltime) and the waiting queue in arrival order (with `runtime`, the
    /// true length, and `user`). Queue position `i` of the instance is `waiting()[i]`. Valid
    /// whenever some job waits (an instance needs a non-empty queue).
    ///
    /// With estimates, the snapshot is the scheduler's plan: a queued job's `walltime` is its
    /// planning length, with the requested walltime kept in `meta` as
    /// `{"requested_walltime": w}`, and a running job's `end` is its
    /// [`RunningView::planned_end`].
    pub fn snapshot(&self) -> Instance {
        self.snapshot_of(&self.waiting())
    }

    /// The current state as an instance whose queue is `queue` (indices into `jobs()`), in
    /// that order.
    pub fn snapshot_of(&self, queue: &[usize]) -> Instance {
        let jobs = &self.input;
        let servers = &self.sim.servers;
        Instance {
            now: self.now,
            resources: self.sim.resources.clone(),
            servers: servers.clone(),
            running: self
                .running()
                .map(|r| RunningJob {
                    id: jobs[r.job].id.clone(),
                    server: servers[r.server].id.clone(),
                    demand: jobs[r.job].demand.clone(),
                    end: r.planned_end,
                })
                .collect(),
            queue: queue
                .iter()
                .map(|&j| {
                    let job = &jobs[j];
                    let mut q =
                        QueuedJob::new(job.id.clone(), job.submit, job.demand.clone(), job.plan());
                    q.runtime = Some(job.runtime);
                    q.user = job.user.clone();
                    if job.estimate.is_some() {
                        q.meta = Some(serde_json::json!({ "requested_walltime": job.walltime }));
                    }
                    q
                })
                .collect(),
        }
    }

    pub(super) fn demand(&self, j: usize) -> &[i64] {
        &self.input[j].demand
    }

    pub(super) fn arrive(&mut self, j: usize, key: f64) {
        for (zero, &d) in self
            .zero_waiting
            .iter_mut()
            .zip(self.input[j].demand.iter())
        {
            if d == 0 {
                *zero += 1;
            }
        }
        if self.keyed {
            self.keys[j] = key;
            self.keyed_queue.insert(Keyed {
                key,
                submit: self.input[j].submit,
                job: j,
            });
        } else {
            self.waiting.push(j);
        }
    }

    /// First server with room for `j` now.
    pub(super) fn fits_now(&self, j: usize) -> Option<usize> {
        let d = self.demand(j);
        (0..self.sim.servers.len()).find(|&s| self.room(s, d))
    }

    #[inline]
    pub(super) fn room(&self, s: usize, d: &[i64]) -> bool {
        self.free[s * self.r..(s + 1) * self.r]
            .iter()
            .zip(d)
            .all(|(f, d)| d <= f)
    }

    /// Whether no waiting job can fit on any server now: every server lacks some resource
    /// that every waiting job needs.
    pub(super) fn closed(&self) -> bool {
        (0..self.sim.servers.len()).all(|s| {
            self.free[s * self.r..(s + 1) * self.r]
                .iter()
                .zip(&self.zero_waiting)
                .any(|(&f, &z)| f == 0 && z == 0)
        })
    }

    /// Starts waiting job `j` on server `s` now (does not touch the queue containers).
    pub(super) fn begin(
        &mut self,
        j: usize,
        s: usize,
        heap: &mut BinaryHeap<Reverse<(Time, usize)>>,
    ) {
        let job = &self.input[j];
        let r = self.r;
        for q in 0..r {
            self.free[s * r + q] -= job.demand[q];
            self.used[q] += job.demand[q];
            if job.demand[q] == 0 {
                self.zero_waiting[q] -= 1;
            }
        }
        self.start[j] = self.now;
        self.server[j] = s;
        self.slot[j] = self.running.len();
        self.running.push(j);
        let plan = job.plan();
        self.pend[j] = self.now + plan;
        self.by_wend[s].insert((self.now + plan, j));
        if job.run() > plan {
            self.overrun.push(Reverse((self.now + plan, j)));
        }
        heap.push(Reverse((self.now + job.run(), j)));
    }

    pub(super) fn finish(&mut self, j: usize) {
        let job = &self.input[j];
        let s = self.server[j];
        let r = self.r;
        for q in 0..r {
            self.free[s * r + q] += job.demand[q];
            self.used[q] -= job.demand[q];
        }
        self.by_wend[s].remove(&(self.pend[j], j));
        let k = self.slot[j];
        self.running.swap_remove(k);
        if let Some(&moved) = self.running.get(k) {
            self.slot[moved] = k;
        }
        self.slot[j] = usize::MAX;
    }

    /// Running jobs whose estimate has run out (start + estimate <= now) are planned to end
    /// at their walltime instead (Tsafrir et al. 2007 correct an exceeded prediction the
    /// same way, to the user's request).
    pub(super) fn replan(&mut self) {
        while let Some(&Reverse((t, j))) = self.overrun.peek() {
            if t > self.now {
                break;
            }
            self.overrun.pop();
            if self.slot[j] == usize::MAX {
                continue;
            }
            let s = self.server[j];
            self.by_wend[s].remove(&(self.pend[j], j));
            self.pend[j] = self.start[j] + self.input[j].walltime;
            self.by_wend[s].insert((self.pend[j], j));
        }
    }

    /// Removes started jobs from the queue containers.
    pub(super) fn dequeue(&mut self, started: &[usize]) {
        if started.is_empty() {
            return;
        }
        if self.keyed {
            for &j in started {
                self.keyed_queue.remove(&Keyed {
                    key: self.keys[j],
                    submit: self.input[j].submit,
                    job: j,
                });
            }
        } else {
            let start = &self.start;
            self.waiting.retain(|&j| start[j] == Time::MIN);
        }
    }

    /// Earliest time job `j` fits from the running jobs' walltime ends: (time, server, extra
    /// capacity left on that server at that time once `j` is counted).
    pub(super) fn reservation(&self, j: usize) -> (Time, usize, Vec<i64>) {
        let d = self.demand(j);
        let r = self.r;
        let mut best: Option<(Time, usize, Vec<i64>)> = None;
        let mut acc = vec![0i64; r];
        for (s, server) in self.sim.servers.iter().enumerate() {
            if !d.iter().zip(&server.capacity).all(|(d, c)| d <= c) {
                continue;
            }
            acc.copy_from_slice(self.free(s));
            let fits = |acc: &[i64]| acc.iter().zip(d).all(|(a, d)| d <= a);
            let mut found = if fits(&acc) { Some(self.now) } else { None };
            if found.is_none() {
                let mut iter = self.by_wend[s].iter().peekable();
                while let Some(&(t, k)) = iter.next() {
                    if best.as_ref().is_some_and(|b| t >= b.0) {
                        break;
                    }
                    for (a, x) in acc.iter_mut().zip(&self.input[k].demand) {
                        *a += x;
                    }
                    if iter.peek().is_some_and(|&&(t2, _)| t2 == t) {
                        continue;
                    }
                    if fits(&acc) {
                        found = Some(t);
                        break;
                    }
                }
            }
            if let Some(t) = found {
                if best.as_ref().is_none_or(|b| t < b.0) {
                    let extra = acc.iter().zip(d).map(|(a, d)| a - d).collect();
                    best = Some((t, s, extra));
                }
            }
        }
        // Every job fits some server, and with all running jobs gone it fits there.
        best.expect("a job that fits some server has a reservation")
    }

    pub(super) fn record(&mut self) {
        let queue = self.waiting_len() as u32;
        let running = self.running.len() as u32;
        let series = &mut self.series;
        // Zero-length jobs can make two steps at one instant: keep the last.
        if series.time.last() == Some(&self.now) {
            series.time.pop();
            series.queue.pop();
            series.running.pop();
            let len = series.used.len() - self.r;
            series.used.truncate(len);
        } else {
            self.steps += 1;
        }
        series.time.push(self.now);
        series.queue.push(queue);
        series.running.push(running);
        for q in 0..self.r {
            let frac = if self.total[q] > 0 {
                self.used[q] as f64 / self.total[q] as f64
            } else {
                0.0
            };
            series.used.push(frac);
        }
    }

    pub(super) fn finish_result(self) -> SimResult {
        let jobs = &self.input;
        let records: Vec<JobRecord> = jobs
            .iter()
            .enumerate()
            .map(|(j, job)| {
                let start = self.start[j];
                let run = job.run();
                let wait = start - job.submit;
                JobRecord {
                    id: job.id.clone(),
                    submit: job.submit,
                    start,
                    end: start + run,
                    wait,
                    run,
                    bsld: job_bsld(wait, run),
                    killed: job.killed(),
                    server: self.server[j],
                }
            })
            .collect();
        let summary = Summary::of(&records, jobs, &self.total, self.steps);
        SimResult {
            jobs: records,
            series: self.series,
            summary,
        }
    }
}
