//! Validation of an [`Instance`] against SPEC section 1.
//!
//! Every class of invalid instance has its own [`InstanceError`] variant, and every message
//! names the job (or server) and the field, so a user knows what to fix. Nothing is clamped
//! or dropped: an instance is either accepted as it is or rejected.

use std::collections::HashMap;

use crate::instance::{Instance, Time, UnknownField, UnknownFields};
use crate::lines::excerpt;

/// Largest magnitude accepted for a time, a walltime or a resource amount (2^40, about
/// 35,000 years in seconds). It keeps every sum the dispatcher forms inside `i64`.
pub const MAX_MAGNITUDE: i64 = 1 << 40;

/// Why an instance is invalid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InstanceError {
    #[error("`resources` is empty: an instance needs at least one resource")]
    /// `resources` is empty: there is nothing to measure capacity and demand in.
    NoResources,
    #[error("`resources` lists {} twice", excerpt(.0))]
    /// A name appears twice in `resources`; the field is that name.
    DuplicateResource(String),
    #[error("`servers` is empty: an instance needs at least one server")]
    /// `servers` is empty: no job could ever run.
    NoServers,
    #[error("`queue` is empty: an instance needs at least one queued job to order")]
    /// `queue` is empty: there is no order to decide.
    EmptyQueue,
    #[error("id {} is used twice (as {first} and as {second}); ids must be unique across servers, running and queue", excerpt(.id))]
    /// Two of the servers, running jobs and queued jobs share an id (SPEC section 1 wants
    /// ids unique across all three).
    DuplicateId {
        /// The repeated id.
        id: String,
        /// What carries the id first (servers, then running, then queue): `"a server"`,
        /// `"a running job"` or `"a queued job"`.
        first: &'static str,
        /// What carries it the second time, in the same words as `first`.
        second: &'static str,
    },
    #[error(
        "{kind} {}: `{field}` has {found} entries, expected {expected} (one per resource)", excerpt(.id)
    )]
    /// A capacity or demand vector does not have one entry per resource.
    WrongLength {
        /// What holds it: `"server"`, `"running job"` or `"job"` (a queued job).
        kind: &'static str,
        /// Id of that server or job.
        id: String,
        /// The vector: `"capacity"` (a server) or `"demand"` (a job).
        field: &'static str,
        /// The number of resources R.
        expected: usize,
        /// The vector's actual length.
        found: usize,
    },
    #[error("{kind} {}: `{field}[{index}]` is {value}; resource amounts must be non-negative integers", excerpt(.id))]
    /// An entry of a capacity or demand vector is below 0.
    NegativeAmount {
        /// What holds it: `"server"`, `"running job"` or `"job"` (a queued job).
        kind: &'static str,
        /// Id of that server or job.
        id: String,
        /// The vector: `"capacity"` (a server) or `"demand"` (a job).
        field: &'static str,
        /// 0-based position of the entry, i.e. the resource's index in `resources`.
        index: usize,
        /// The negative amount.
        value: i64,
    },
    #[error(
        "{}: `{field}` is {value}, outside the accepted range [{}, 2^40]",
        owner(.kind, .id),
        lowest(.field)
    )]
    /// A value exceeds [`MAX_MAGNITUDE`] (2^40): `now`, `end` or `submit` outside
    /// [-2^40, 2^40], or `walltime`, `runtime`, `capacity` or `demand` above 2^40. (Too-low
    /// walltimes, runtimes and amounts have their own variants.)
    OutOfRange {
        /// What holds the field: `"instance"` (for `now`), `"server"`, `"running job"` or
        /// `"job"` (a queued job).
        kind: &'static str,
        /// Id of that server or job; empty for the instance.
        id: String,
        /// The field: `"now"`, `"end"`, `"submit"`, `"walltime"`, `"runtime"`,
        /// `"capacity"` or `"demand"`.
        field: &'static str,
        /// The rejected value (seconds for a time, else a resource amount).
        value: i64,
    },
    #[error("job {}: `walltime` is {walltime}; it must be at least 1 second", excerpt(.job))]
    /// A queued job's `walltime` is below 1 second.
    WalltimeTooShort {
        /// Id of the queued job.
        job: String,
        /// The rejected walltime, in seconds.
        walltime: Time,
    },
    #[error("job {}: `runtime` is {runtime}; it must be non-negative", excerpt(.job))]
    /// A queued job's optional `runtime` (its true length) is negative.
    NegativeRuntime {
        /// Id of the queued job.
        job: String,
        /// The rejected runtime, in seconds.
        runtime: Time,
    },
    #[error("job {}: `submit` is {submit}, after `now` ({now}); queued jobs must have been submitted by now", excerpt(.job))]
    /// A queued job was submitted after the snapshot (SPEC section 1 wants `submit` <= `now`).
    SubmitAfterNow {
        /// Id of the queued job.
        job: String,
        /// The job's submit time, in seconds.
        submit: Time,
        /// The instance's snapshot time `now`, in seconds.
        now: Time,
    },
    #[error("running job {}: `end` is {end}, not after `now` ({now}); a running job must end after the snapshot", excerpt(.job))]
    /// A running job's `end` is at or before `now` (SPEC section 1 wants `end` > `now`).
    EndNotAfterNow {
        /// Id of the running job.
        job: String,
        /// The job's end time, in seconds.
        end: Time,
        /// The instance's snapshot time `now`, in seconds.
        now: Time,
    },
    #[error("job {}: `weight` is {weight}; it must be a finite number greater than 0", excerpt(.job))]
    /// A queued job's `weight` is not a finite number above 0 (zero, negative, NaN or infinite).
    BadWeight {
        /// Id of the queued job.
        job: String,
        /// The rejected weight.
        weight: f64,
    },
    #[error("running job {}: `server` {} is not a server of this instance", excerpt(.job), excerpt(.server))]
    /// A running job's `server` is not the id of a server of the instance.
    UnknownServer {
        /// Id of the running job.
        job: String,
        /// The id it gives as its server.
        server: String,
    },
    #[error("job {}: `deps` names {}, which is not a running or queued job", excerpt(.job), excerpt(.dep))]
    /// A queued job's `deps` names an id that is neither a running nor a queued job (an unknown
    /// id or a server's).
    UnknownDependency {
        /// Id of the queued job whose `deps` holds the id.
        job: String,
        /// The id that names no job.
        dep: String,
    },
    #[error("job {}: `deps` form a cycle: {}", excerpt(.job), chain(.cycle))]
    /// The queued jobs' `deps` form a cycle, so no order can respect them. Reported only when
    /// the instance has no other problem.
    DependencyCycle {
        /// Id of a queued job on the cycle, the first entry of `cycle`.
        job: String,
        /// Ids along the cycle, each job depending on the next, ending with the first id
        /// again (so `a -> b -> a` means a depends on b and b on a).
        cycle: Vec<String>,
    },
    #[error(
        "job {}: `demand` {demand:?} fits on no server (each server lacks some resource)", excerpt(.job)
    )]
    /// A queued job's `demand` exceeds, in some resource, the capacity of every server, so it could
    /// never start.
    FitsNoServer {
        /// Id of the queued job.
        job: String,
        /// The job's demand, one amount per resource.
        demand: Vec<i64>,
    },
    #[error("server {}: running jobs use {used} of resource {} but `capacity` is {capacity}", excerpt(.server), excerpt(.resource))]
    /// The running jobs on a server together use more of a resource than the server's
    /// capacity.
    ServerOverloaded {
        /// Id of the overloaded server.
        server: String,
        /// Name of the exceeded resource, from `resources`.
        resource: String,
        /// Sum of that resource over the running jobs on the server.
        used: i64,
        /// The server's capacity of that resource.
        capacity: i64,
    },
}

/// Checks an instance and returns its first problem, if any.
pub fn validate(instance: &Instance) -> Result<(), InstanceError> {
    match problems(instance).into_iter().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Parses one JSON line as an instance and validates it: the one instance parser of every
/// command that reads instances. The error is `not an instance: ...` for JSON that does not
/// fit the schema, every unknown field with its job (`queue job "j3": unknown field "dep"
/// (known: ...)`), else every problem found, `; `-separated.
pub fn parse_valid(text: &str) -> Result<Instance, String> {
    parse_valid_with(text, UnknownFields::Reject).map(|(instance, _)| instance)
}

/// [`parse_valid`] with fields the schema does not know rejected or ignored as `unknown`
/// says; the ignored ones are returned, for a warning.
pub fn parse_valid_with(
    text: &str,
    unknown: UnknownFields,
) -> Result<(Instance, Vec<UnknownField>), String> {
    let (instance, ignored) = Instance::from_json_with(text, unknown).map_err(|e| e.to_string())?;
    let found = problems(&instance);
    if !found.is_empty() {
        let reasons: Vec<String> = found.iter().map(|e| e.to_string()).collect();
        return Err(reasons.join("; "));
    }
    Ok((instance, ignored))
}

/// Every problem of an instance, in a stable order (structure, then values, then references).
pub fn problems(instance: &Instance) -> Vec<InstanceError> {
    let mut out = Vec::new();
    check_resources(instance, &mut out);
    if instance.servers.is_empty() {
        out.push(InstanceError::NoServers);
    }
    if instance.queue.is_empty() {
        out.push(InstanceError::EmptyQueue);
    }
    let ids = check_ids(instance, &mut out);
    let shapes_ok = check_shapes(instance, &mut out);
    check_times(instance, &mut out);
    check_references(instance, &ids, &mut out);
    if shapes_ok {
        check_capacity(instance, &mut out);
    }
    if out.is_empty() {
        check_cycles(instance, &mut out);
    }
    out
}

fn check_resources(instance: &Instance, out: &mut Vec<InstanceError>) {
    if instance.resources.is_empty() {
        out.push(InstanceError::NoResources);
    }
    for (i, name) in instance.resources.iter().enumerate() {
        if instance.resources[..i].contains(name) {
            out.push(InstanceError::DuplicateResource(name.clone()));
        }
    }
}

/// Where an id lives.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Owner {
    Server,
    Running,
    Queued,
}

impl Owner {
    fn name(self) -> &'static str {
        match self {
            Owner::Server => "a server",
            Owner::Running => "a running job",
            Owner::Queued => "a queued job",
        }
    }
}

fn check_ids<'a>(instance: &'a Instance, out: &mut Vec<InstanceError>) -> HashMap<&'a str, Owner> {
    let mut ids: HashMap<&str, Owner> = HashMap::new();
    let all = instance
        .servers
        .iter()
        .map(|s| (s.id.as_str(), Owner::Server))
        .chain(
            instance
                .running
                .iter()
                .map(|r| (r.id.as_str(), Owner::Running)),
        )
        .chain(
            instance
                .queue
                .iter()
                .map(|q| (q.id.as_str(), Owner::Queued)),
        );
    for (id, owner) in all {
        if let Some(first) = ids.get(id) {
            out.push(InstanceError::DuplicateId {
                id: id.to_string(),
                first: first.name(),
                second: owner.name(),
            });
        } else {
            ids.insert(id, owner);
        }
    }
    ids
}

/// Checks vector lengths and signs; returns whether every vector has length R.
fn check_shapes(instance: &Instance, out: &mut Vec<InstanceError>) -> bool {
    let r = instance.resources.len();
    let mut ok = true;
    let vectors = instance
        .servers
        .iter()
        .map(|s| ("server", &s.id, "capacity", &s.capacity))
        .chain(
            instance
                .running
                .iter()
                .map(|j| ("running job", &j.id, "demand", &j.demand)),
        )
        .chain(
            instance
                .queue
                .iter()
                .map(|j| ("job", &j.id, "demand", &j.demand)),
        );
    for (kind, id, field, v) in vectors {
        if v.len() != r {
            ok = false;
            out.push(InstanceError::WrongLength {
                kind,
                id: id.clone(),
                field,
                expected: r,
                found: v.len(),
            });
        }
        for (index, &value) in v.iter().enumerate() {
            if value < 0 {
                out.push(InstanceError::NegativeAmount {
                    kind,
                    id: id.clone(),
                    field,
                    index,
                    value,
                });
            } else if value > MAX_MAGNITUDE {
                out.push(InstanceError::OutOfRange {
                    kind,
                    id: id.clone(),
                    field,
                    value,
                });
            }
        }
    }
    ok
}

/// Who an out-of-range field belongs to: `job "a"`, or the instance itself (`now`).
fn owner(kind: &str, id: &str) -> String {
    if kind == "instance" {
        "the instance".to_string()
    } else {
        format!("{kind} {}", excerpt(id))
    }
}

/// Most ids of a dependency cycle its message lists ([`chain`]).
const CYCLE_IDS: usize = 12;

/// A cycle's ids as its message lists them, each an [`excerpt`], `->`-separated; a longer
/// cycle shows its first ids, `…`, the number of jobs and its last id.
fn chain(cycle: &[String]) -> String {
    let ids: Vec<String> = if cycle.len() <= CYCLE_IDS {
        cycle.iter().map(|id| excerpt(id)).collect()
    } else {
        let mut ids: Vec<String> = cycle[..CYCLE_IDS - 1]
            .iter()
            .map(|id| excerpt(id))
            .collect();
        ids.push(format!("… ({} jobs)", cycle.len() - 1));
        ids.extend(cycle.last().map(|id| excerpt(id)));
        ids
    };
    ids.join(" -> ")
}

/// The lowest accepted value of a field, as the range message writes it.
fn lowest(field: &str) -> &'static str {
    match field {
        "walltime" => "1",
        "runtime" | "capacity" | "demand" => "0",
        _ => "-2^40",
    }
}

fn in_range(value: i64) -> bool {
    (-MAX_MAGNITUDE..=MAX_MAGNITUDE).contains(&value)
}

fn check_times(instance: &Instance, out: &mut Vec<InstanceError>) {
    let now = instance.now;
    if !in_range(now) {
        out.push(InstanceError::OutOfRange {
            kind: "instance",
            id: String::new(),
            field: "now",
            value: now,
        });
    }
    for j in &instance.running {
        if !in_range(j.end) {
            out.push(out_of_range("running job", &j.id, "end", j.end));
        } else if j.end <= now {
            out.push(InstanceError::EndNotAfterNow {
                job: j.id.clone(),
                end: j.end,
                now,
            });
        }
    }
    for j in &instance.queue {
        if !in_range(j.submit) {
            out.push(out_of_range("job", &j.id, "submit", j.submit));
        } else if j.submit > now {
            out.push(InstanceError::SubmitAfterNow {
                job: j.id.clone(),
                submit: j.submit,
                now,
            });
        }
        if j.walltime < 1 {
            out.push(InstanceError::WalltimeTooShort {
                job: j.id.clone(),
                walltime: j.walltime,
            });
        } else if j.walltime > MAX_MAGNITUDE {
            out.push(out_of_range("job", &j.id, "walltime", j.walltime));
        }
        match j.runtime {
            Some(rt) if rt < 0 => out.push(InstanceError::NegativeRuntime {
                job: j.id.clone(),
                runtime: rt,
            }),
            Some(rt) if rt > MAX_MAGNITUDE => {
                out.push(out_of_range("job", &j.id, "runtime", rt));
            }
            _ => {}
        }
        if !(j.weight.is_finite() && j.weight > 0.0) {
            out.push(InstanceError::BadWeight {
                job: j.id.clone(),
                weight: j.weight,
            });
        }
    }
}

fn out_of_range(kind: &'static str, id: &str, field: &'static str, value: i64) -> InstanceError {
    InstanceError::OutOfRange {
        kind,
        id: id.to_string(),
        field,
        value,
    }
}

fn check_references(instance: &Instance, ids: &HashMap<&str, Owner>, out: &mut Vec<InstanceError>) {
    for j in &instance.running {
        if ids.get(j.server.as_str()) != Some(&Owner::Server) {
            out.push(InstanceError::UnknownServer {
                job: j.id.clone(),
                server: j.server.clone(),
            });
        }
    }
    for j in &instance.queue {
        for dep in &j.deps {
            match ids.get(dep.as_str()) {
                Some(Owner::Running) | Some(Owner::Queued) => {}
                _ => out.push(InstanceError::UnknownDependency {
                    job: j.id.clone(),
                    dep: dep.clone(),
                }),
            }
        }
    }
}

fn fits(demand: &[i64], capacity: &[i64]) -> bool {
    demand.iter().zip(capacity).all(|(d, c)| d <= c)
}

fn check_capacity(instance: &Instance, out: &mut Vec<InstanceError>) {
    for j in &instance.queue {
        if !instance.servers.is_empty()
            && !instance
                .servers
                .iter()
                .any(|s| fits(&j.demand, &s.capacity))
        {
            out.push(InstanceError::FitsNoServer {
                job: j.id.clone(),
                demand: j.demand.clone(),
            });
        }
    }
    for s in &instance.servers {
        for (k, &capacity) in s.capacity.iter().enumerate() {
            let used: i64 = instance
                .running
                .iter()
                .filter(|j| j.server == s.id)
                .map(|j| j.demand[k])
                // Saturating: out-of-range amounts (reported above) must not overflow here.
                .fold(0i64, i64::saturating_add);
            if used > capacity {
                out.push(InstanceError::ServerOverloaded {
                    server: s.id.clone(),
                    resource: instance.resources[k].clone(),
                    used,
                    capacity,
                });
            }
        }
    }
}

/// Finds a dependency cycle among queued jobs (running jobs have no deps, so a cycle can only
/// pass through the queue). Iterative (Kahn's algorithm), so a long chain cannot overflow the
/// stack. Reports one cycle, starting from the first job in queue order that lies on or behind one.
fn check_cycles(instance: &Instance, out: &mut Vec<InstanceError>) {
    let index: HashMap<&str, usize> = instance
        .queue
        .iter()
        .enumerate()
        .map(|(i, j)| (j.id.as_str(), i))
        .collect();
    let n = instance.queue.len();
    let deps: Vec<Vec<usize>> = instance
        .queue
        .iter()
        .map(|j| {
            j.deps
                .iter()
                .filter_map(|d| index.get(d.as_str()).copied())
                .collect()
        })
        .collect();
    let mut waiting: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (j, ds) in deps.iter().enumerate() {
        for &d in ds {
            dependents[d].push(j);
        }
    }
    let mut ready: Vec<usize> = (0..n).filter(|&j| waiting[j] == 0).collect();
    let mut done = vec![false; n];
    while let Some(v) = ready.pop() {
        done[v] = true;
        for &u in &dependents[v] {
            waiting[u] -= 1;
            if waiting[u] == 0 {
                ready.push(u);
            }
        }
    }
    let Some(start) = (0..n).find(|&j| !done[j]) else {
        return;
    };
    // Every job left has a dependency left: follow them until one repeats.
    let mut seen_at = vec![usize::MAX; n];
    let mut walk = Vec::new();
    let mut v = start;
    while seen_at[v] == usize::MAX {
        seen_at[v] = walk.len();
        walk.push(v);
        v = deps[v].iter().copied().find(|&d| !done[d]).unwrap_or(v);
    }
    let mut cycle: Vec<String> = walk[seen_at[v]..]
        .iter()
        .map(|&i| instance.queue[i].id.clone())
        .collect();
    cycle.push(instance.queue[v].id.clone());
    out.push(InstanceError::DependencyCycle {
        job: cycle[0].clone(),
        cycle,
    });
}
