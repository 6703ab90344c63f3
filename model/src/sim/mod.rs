//! Online simulation (trace replay) of SPEC section 5.
//!
//! Jobs arrive at their submit time and run for `min(runtime, walltime)`: a job that would run
//! longer than its walltime is killed at its walltime. Time advances from event to event; all
//! events at one instant form one step, in which completions are processed first (freeing their
//! capacity), then arrivals join the waiting queue, then the [`Policy`] orders the waiting queue
//! and the [`StartRule`] starts jobs. A step is taken at every instant where a job arrives or
//! ends, so "at every event" of SPEC holds, and simultaneous events never see each other in a
//! half-processed state.
//!
//! Start rules (SPEC section 5), with "fits now" meaning some server has the job's demand free
//! now in every resource (the first such server in server order takes it):
//!
//! - [`StartRule::Strict`]: start jobs in policy order while the next one fits now; stop at the
//!   first that does not.
//! - [`StartRule::Easy`]: as strict; then the first job that does not fit (the *head*) gets a
//!   reservation at the earliest time it fits, computed from the running jobs' walltime ends
//!   (start + walltime, what the scheduler knows), on the first server reaching that time. Every
//!   later job in policy order starts now if it fits now and does not delay the reservation:
//!   it runs on another server, or it ends (now + walltime) no later than the reservation, or it
//!   fits in what the reservation server has left over at the reservation time (the *extra*
//!   capacity, which such a job then uses up).
//! - [`StartRule::Conservative`]: every waiting job gets a reservation by the dispatcher of
//!   SPEC section 3 ([`crate::Dispatcher`], serial variant) in policy order, against the
//!   running jobs' walltime ends; the jobs whose reservation is now start, on the server the
//!   dispatcher chose. Reservations are recomputed at every step (they can only move earlier
//!   when jobs end before their walltime).
//!
//! Dependencies are not part of online replay: a [`SimJob`] has none.
//!
//! # Planning with estimates
//!
//! A job may carry a planning length [`SimJob::estimate`] (a run-time prediction). The
//! scheduler then plans with it everywhere it would use the requested walltime: a running
//! job's expected end is start + estimate (EASY reservations, the conservative dispatcher),
//! the EASY backfill test uses now + estimate, the policy sees the job with `walltime` =
//! estimate ([`SimState::jobs`], [`Policy::static_key`]; so SJF's r is the estimate), and
//! [`SimState::snapshot`] shows it. The job still runs min(runtime, walltime) and is killed at
//! its requested walltime. A running job that outlives its estimate is re-planned, from the
//! first step at or after start + estimate, to end at start + walltime (the correction of
//! Tsafrir, Etsion & Feitelson 2007: back to the user's request), so a planned end is
//! always after `now`. Without estimates nothing changes.
//!
//! A [`Policy`] sees the whole state ([`SimState`]: time, servers, free capacity, running
//! jobs with their walltime ends, the waiting queue with true run times) and can turn it into a
//! SPEC-section-1 [`Instance`](crate::Instance) with [`SimState::snapshot`], so a solver (rolling horizon: solve
//! the snapshot, return its order; with the conservative start rule exactly the jobs the
//! optimal schedule starts now are started) or a language model can drive the replay. A policy
//! whose order is a fixed score per job (FCFS, SJF, F1, ...) returns it from
//! [`Policy::static_key`]; the simulator then keeps the queue sorted itself and never calls
//! [`Policy::order`], which makes a full-trace replay take about a second.
//!
//! ```
//! use schedlm_model::sim::{Fcfs, SimJob, Simulation, StartRule};
//! use schedlm_model::Server;
//!
//! let servers = vec![Server { id: "pool".into(), capacity: vec![4] }];
//! let jobs = vec![
//!     SimJob::new("a", 0, vec![4], 100, 50),  // ends at 50, before its walltime
//!     SimJob::new("b", 10, vec![2], 100, 100),
//!     SimJob::new("c", 20, vec![2], 5, 30),   // killed at its walltime of 5
//! ];
//! let sim = Simulation::new(vec!["cores".into()], servers, jobs).unwrap();
//! let result = sim.run(&mut Fcfs, StartRule::Easy).unwrap();
//! let starts: Vec<i64> = result.jobs.iter().map(|j| j.start).collect();
//! assert_eq!(starts, vec![0, 50, 50]);
//! assert!(result.jobs[2].killed && result.jobs[2].end == 55);
//! ```

mod job;
mod policy;
mod result;
mod start;
mod state;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::instance::Server;
use crate::validate::MAX_MAGNITUDE;

pub use job::{SimError, SimJob};
pub use policy::{Fcfs, OrderFn, Policy};
pub use result::{JobRecord, Series, SimResult, Summary};
use start::Engine;
pub use start::StartRule;
pub use state::{RunningView, SimState};

/// A validated replay setup: resources, servers and jobs. Run it with [`Simulation::run`] as
/// often as needed (each run starts from an empty cluster).
#[derive(Debug, Clone)]
pub struct Simulation {
    resources: Vec<String>,
    servers: Vec<Server>,
    jobs: Vec<SimJob>,
    /// The jobs as the scheduler sees them (`walltime` = [`SimJob::plan`]), only when some
    /// job has an estimate.
    view: Option<Vec<SimJob>>,
    /// Job indices by (submit, input position).
    arrival: Vec<usize>,
}

impl Simulation {
    /// Checks the setup: one capacity and demand entry per resource, non-negative amounts,
    /// walltime >= 1, runtime >= 0, every job fits some server, unique ids.
    pub fn new(
        resources: Vec<String>,
        servers: Vec<Server>,
        jobs: Vec<SimJob>,
    ) -> Result<Simulation, SimError> {
        let r = resources.len();
        if r == 0 {
            return Err(SimError::NoResources);
        }
        if servers.is_empty() {
            return Err(SimError::NoServers);
        }
        let mut ids: HashMap<&str, ()> = HashMap::with_capacity(servers.len() + jobs.len());
        for s in &servers {
            if s.capacity.len() != r {
                return Err(SimError::ServerShape {
                    server: s.id.clone(),
                    expected: r,
                    found: s.capacity.len(),
                });
            }
            if !amount_ok(&s.capacity) {
                return Err(SimError::BadCapacity {
                    server: s.id.clone(),
                    capacity: s.capacity.clone(),
                });
            }
            if ids.insert(&s.id, ()).is_some() {
                return Err(SimError::DuplicateId(s.id.clone()));
            }
        }
        for j in &jobs {
            check_job(j, r, &servers)?;
            if ids.insert(&j.id, ()).is_some() {
                return Err(SimError::DuplicateId(j.id.clone()));
            }
        }
        drop(ids);
        let mut arrival: Vec<usize> = (0..jobs.len()).collect();
        arrival.sort_by_key(|&j| (jobs[j].submit, j));
        let view = jobs.iter().any(|j| j.estimate.is_some()).then(|| {
            jobs.iter()
                .map(|j| SimJob {
                    walltime: j.plan(),
                    ..j.clone()
                })
                .collect()
        });
        Ok(Simulation {
            resources,
            servers,
            jobs,
            view,
            arrival,
        })
    }

    /// The jobs as the scheduler sees them: as given, with `walltime` replaced by
    /// [`SimJob::plan`] (the same as [`Simulation::jobs`] when no job has an estimate).
    pub fn planning_jobs(&self) -> &[SimJob] {
        self.view.as_deref().unwrap_or(&self.jobs)
    }

    /// Names of the resources, in the order of every capacity and demand vector.
    pub fn resources(&self) -> &[String] {
        &self.resources
    }

    /// The servers as given, in server order (a job that fits now takes the first
    /// server with room).
    pub fn servers(&self) -> &[Server] {
        &self.servers
    }

    /// The jobs as given to [`Simulation::new`], in input order, with their requested
    /// walltimes (see [`Simulation::planning_jobs`] for the scheduler's view).
    pub fn jobs(&self) -> &[SimJob] {
        &self.jobs
    }

    /// Total capacity over all servers, per resource.
    pub fn total_capacity(&self) -> Vec<i64> {
        let mut total = vec![0; self.resources.len()];
        for s in &self.servers {
            for (t, c) in total.iter_mut().zip(&s.capacity) {
                *t += c;
            }
        }
        total
    }

    /// Replays every job with `policy` and `rule`, from an empty cluster.
    pub fn run<P: Policy + ?Sized>(
        &self,
        policy: &mut P,
        rule: StartRule,
    ) -> Result<SimResult, SimError> {
        let keyed = self
            .arrival
            .first()
            .is_some_and(|&j| policy.static_key(&self.planning_jobs()[j]).is_some());
        let mut state = SimState::new(self, keyed);
        let mut engine = Engine {
            heap: BinaryHeap::with_capacity(64),
            next_arrival: 0,
            order: Vec::new(),
            started: Vec::new(),
        };
        loop {
            let next_end = engine.heap.peek().map(|Reverse((t, _))| *t);
            let next_submit = self
                .arrival
                .get(engine.next_arrival)
                .map(|&j| self.jobs[j].submit);
            let now = match (next_end, next_submit) {
                (None, None) => break,
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
            };
            state.now = now;
            // Completions first.
            while let Some(&Reverse((t, j))) = engine.heap.peek() {
                if t != now {
                    break;
                }
                engine.heap.pop();
                state.finish(j);
            }
            // Running jobs that outlived their estimate are now planned to their walltime.
            state.replan();
            // Then arrivals.
            while let Some(&j) = self.arrival.get(engine.next_arrival) {
                if self.jobs[j].submit != now {
                    break;
                }
                engine.next_arrival += 1;
                if let Some(job) = policy.arrive(&state, j) {
                    state.configure(j, job)?;
                }
                let key = if keyed {
                    policy.static_key(&state.jobs()[j]).unwrap_or(f64::INFINITY)
                } else {
                    0.0
                };
                state.arrive(j, key);
            }
            // Then the policy and the start rule.
            if state.waiting_len() > 0 {
                engine.pass(&mut state, policy, rule)?;
            }
            state.record();
        }
        Ok(state.finish_result())
    }
}

/// Whether every amount is in [0, 2^40].
fn amount_ok(amounts: &[i64]) -> bool {
    amounts.iter().all(|&x| (0..=MAX_MAGNITUDE).contains(&x))
}

/// Checks one job against the resources (`r` of them) and servers: one demand entry per
/// resource, amounts, walltime, runtime, estimate and submit time in range, and a server it
/// fits on.
fn check_job(j: &SimJob, r: usize, servers: &[Server]) -> Result<(), SimError> {
    if j.demand.len() != r {
        return Err(SimError::DemandShape {
            job: j.id.clone(),
            expected: r,
            found: j.demand.len(),
        });
    }
    if !amount_ok(&j.demand) {
        return Err(SimError::BadDemand {
            job: j.id.clone(),
            demand: j.demand.clone(),
        });
    }
    if !(1..=MAX_MAGNITUDE).contains(&j.walltime) {
        return Err(SimError::BadWalltime {
            job: j.id.clone(),
            walltime: j.walltime,
        });
    }
    if !(0..=MAX_MAGNITUDE).contains(&j.runtime) {
        return Err(SimError::BadRuntime {
            job: j.id.clone(),
            runtime: j.runtime,
        });
    }
    if let Some(estimate) = j.estimate {
        if !(1..=MAX_MAGNITUDE).contains(&estimate) {
            return Err(SimError::BadEstimate {
                job: j.id.clone(),
                estimate,
            });
        }
    }
    if !(-MAX_MAGNITUDE..=MAX_MAGNITUDE).contains(&j.submit) {
        return Err(SimError::BadSubmit {
            job: j.id.clone(),
            submit: j.submit,
        });
    }
    let fits = servers
        .iter()
        .any(|s| j.demand.iter().zip(&s.capacity).all(|(d, c)| d <= c));
    if !fits {
        return Err(SimError::FitsNoServer {
            job: j.id.clone(),
            demand: j.demand.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod estimate_tests;
