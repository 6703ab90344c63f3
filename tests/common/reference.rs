//! A deliberately plain, slow reimplementation of SPEC sections 2, 3, 4 and 6, written for the
//! tests only. It shares no code with the `schedlm-model` or `schedlm-solver` crates: it reads
//! instances from `serde_json::Value`, places jobs by trying every candidate time of SPEC
//! section 3 and checking each server's capacity at every instant where its usage can rise,
//! and compares rule scores with exact integer arithmetic wherever the score is rational.

use std::cmp::Ordering;

use serde_json::Value;

/// SPEC section 4's bounded-slowdown threshold, in seconds.
pub const TAU: i64 = 10;

#[derive(Debug, Clone)]
pub struct Server {
    pub id: String,
    pub capacity: Vec<i64>,
}

#[derive(Debug, Clone)]
pub struct Running {
    pub id: String,
    /// Index into `Instance::servers`.
    pub server: usize,
    pub demand: Vec<i64>,
    pub end: i64,
}

#[derive(Debug, Clone)]
pub struct Job {
    pub id: String,
    pub submit: i64,
    pub demand: Vec<i64>,
    pub walltime: i64,
    pub deps: Vec<String>,
    pub weight: f64,
}

/// One instance of SPEC section 1 (assumed valid).
#[derive(Debug, Clone)]
pub struct Instance {
    pub now: i64,
    pub resources: usize,
    pub servers: Vec<Server>,
    pub running: Vec<Running>,
    pub queue: Vec<Job>,
}

fn int(v: &Value, what: &str) -> i64 {
    v.as_i64()
        .unwrap_or_else(|| panic!("{what} is not an integer: {v}"))
}

fn ints(v: &Value, what: &str) -> Vec<i64> {
    v.as_array()
        .unwrap_or_else(|| panic!("{what} is not an array: {v}"))
        .iter()
        .map(|x| int(x, what))
        .collect()
}

fn string(v: &Value, what: &str) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("{what} is not a string: {v}"))
        .to_string()
}

impl Instance {
    pub fn from_json(v: &Value) -> Instance {
        let servers: Vec<Server> = v["servers"]
            .as_array()
            .expect("servers")
            .iter()
            .map(|s| Server {
                id: string(&s["id"], "server id"),
                capacity: ints(&s["capacity"], "capacity"),
            })
            .collect();
        let running = v
            .get("running")
            .and_then(Value::as_array)
            .map(|a| a.as_slice())
            .unwrap_or(&[])
            .iter()
            .map(|r| {
                let server = string(&r["server"], "running server");
                Running {
                    id: string(&r["id"], "running id"),
                    server: servers
                        .iter()
                        .position(|s| s.id == server)
                        .expect("running job on an unknown server"),
                    demand: ints(&r["demand"], "running demand"),
                    end: int(&r["end"], "running end"),
                }
            })
            .collect();
        let queue = v["queue"]
            .as_array()
            .expect("queue")
            .iter()
            .map(|j| Job {
                id: string(&j["id"], "job id"),
                submit: int(&j["submit"], "submit"),
                demand: ints(&j["demand"], "demand"),
                walltime: int(&j["walltime"], "walltime"),
                deps: j
                    .get("deps")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().map(|d| string(d, "dep")).collect())
                    .unwrap_or_default(),
                weight: j.get("weight").and_then(Value::as_f64).unwrap_or(1.0),
            })
            .collect();
        Instance {
            now: int(&v["now"], "now"),
            resources: v["resources"].as_array().expect("resources").len(),
            servers,
            running,
            queue,
        }
    }

    pub fn queue_index(&self, id: &str) -> Option<usize> {
        self.queue.iter().position(|j| j.id == id)
    }

    pub fn running_job(&self, id: &str) -> Option<&Running> {
        self.running.iter().find(|r| r.id == id)
    }

    /// Queue indices of the queued jobs that job `j` depends on.
    pub fn queued_deps(&self, j: usize) -> Vec<usize> {
        self.queue[j]
            .deps
            .iter()
            .filter_map(|d| self.queue_index(d))
            .collect()
    }

    pub fn has_queued_deps(&self) -> bool {
        (0..self.queue.len()).any(|j| !self.queued_deps(j).is_empty())
    }

    /// Queue indices of the given ids (panics on an unknown id).
    pub fn indices(&self, ids: &[String]) -> Vec<usize> {
        ids.iter()
            .map(|id| {
                self.queue_index(id)
                    .unwrap_or_else(|| panic!("\"{id}\" is not a queued job"))
            })
            .collect()
    }
}

/// Whether `order` lists every queued job exactly once.
pub fn is_permutation(inst: &Instance, order: &[usize]) -> bool {
    let mut sorted = order.to_vec();
    sorted.sort_unstable();
    sorted == (0..inst.queue.len()).collect::<Vec<_>>()
}

/// Whether every job comes after all its queued dependencies.
pub fn respects_deps(inst: &Instance, order: &[usize]) -> bool {
    order
        .iter()
        .enumerate()
        .all(|(pos, &j)| inst.queued_deps(j).iter().all(|d| order[..pos].contains(d)))
}

/// SPEC section 2: repeatedly take the first remaining job whose queued dependencies have all
/// been taken.
pub fn repair(inst: &Instance, order: &[usize]) -> Vec<usize> {
    let mut remaining = order.to_vec();
    let mut taken: Vec<usize> = Vec::new();
    while !remaining.is_empty() {
        let pos = remaining
            .iter()
            .position(|&j| inst.queued_deps(j).iter().all(|d| taken.contains(d)))
            .expect("a dependency cycle in a valid instance");
        taken.push(remaining.remove(pos));
    }
    taken
}

/// Something that holds resources on a server over [from, to).
#[derive(Debug, Clone)]
struct Hold {
    server: usize,
    /// `i64::MIN` for a running job (it started before `now`).
    from: i64,
    to: i64,
    demand: Vec<i64>,
}

/// Whether `demand` fits on `server` at every instant of [t, t + p), given `holds`.
/// Usage only rises where a hold begins, so checking `t` and every hold start inside the
/// window covers every instant.
fn fits_over(
    inst: &Instance,
    holds: &[Hold],
    server: usize,
    demand: &[i64],
    t: i64,
    p: i64,
) -> bool {
    let capacity = &inst.servers[server].capacity;
    let on_server: Vec<&Hold> = holds.iter().filter(|h| h.server == server).collect();
    let mut instants = vec![t];
    instants.extend(
        on_server
            .iter()
            .map(|h| h.from)
            .filter(|&f| f > t && f < t + p),
    );
    instants.iter().all(|&x| {
        (0..inst.resources).all(|q| {
            let used: i64 = on_server
                .iter()
                .filter(|h| h.from <= x && x < h.to)
                .map(|h| h.demand[q])
                .sum();
            used + demand[q] <= capacity[q]
        })
    })
}

/// A schedule: per queued job (queue index) its start and server index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    pub start: Vec<i64>,
    pub server: Vec<usize>,
}

/// SPEC section 3: place the jobs of `order` (which must respect the dependencies) one at a
/// time at the earliest candidate time where some server can hold them for their walltime,
/// on the first such server in instance order. `strict`: never before the previous start.
pub fn dispatch(inst: &Instance, order: &[usize], strict: bool) -> Placed {
    let n = inst.queue.len();
    let mut start: Vec<Option<i64>> = vec![None; n];
    let mut server = vec![usize::MAX; n];
    let mut holds: Vec<Hold> = inst
        .running
        .iter()
        .map(|r| Hold {
            server: r.server,
            from: i64::MIN,
            to: r.end,
            demand: r.demand.clone(),
        })
        .collect();
    let mut previous_start: Option<i64> = None;
    for &j in order {
        let job = &inst.queue[j];
        let mut lower = inst.now;
        let mut candidates = vec![inst.now];
        for dep in &job.deps {
            let end = if let Some(r) = inst.running_job(dep) {
                r.end
            } else {
                let q = inst.queue_index(dep).expect("unknown dependency");
                start[q].expect("a job placed before its dependency") + inst.queue[q].walltime
            };
            lower = lower.max(end);
            candidates.push(end);
        }
        if strict {
            if let Some(s) = previous_start {
                lower = lower.max(s);
                candidates.push(s);
            }
        }
        candidates.extend(holds.iter().map(|h| h.to));
        candidates.retain(|&t| t >= lower);
        candidates.sort_unstable();
        candidates.dedup();
        let (t, s) = candidates
            .iter()
            .find_map(|&t| {
                (0..inst.servers.len())
                    .find(|&s| fits_over(inst, &holds, s, &job.demand, t, job.walltime))
                    .map(|s| (t, s))
            })
            .unwrap_or_else(|| panic!("no candidate time fits job {}", job.id));
        start[j] = Some(t);
        server[j] = s;
        previous_start = Some(t);
        holds.push(Hold {
            server: s,
            from: t,
            to: t + job.walltime,
            demand: job.demand.clone(),
        });
    }
    Placed {
        start: start
            .into_iter()
            .map(|s| s.expect("order is not a permutation"))
            .collect(),
        server,
    }
}

/// Checks a schedule from first principles, independently of how it was built: every start
/// is >= now and >= the end of every dependency, and no server is ever over capacity.
/// Returns a description of the first violation.
pub fn feasibility_error(inst: &Instance, start: &[i64], server: &[usize]) -> Option<String> {
    for (j, job) in inst.queue.iter().enumerate() {
        if start[j] < inst.now {
            return Some(format!(
                "{} starts at {} < now {}",
                job.id, start[j], inst.now
            ));
        }
        for dep in &job.deps {
            let end = match inst.running_job(dep) {
                Some(r) => r.end,
                None => {
                    let q = inst.queue_index(dep).unwrap();
                    start[q] + inst.queue[q].walltime
                }
            };
            if start[j] < end {
                return Some(format!(
                    "{} starts at {} before its dependency {dep} ends at {end}",
                    job.id, start[j]
                ));
            }
        }
    }
    for (s, srv) in inst.servers.iter().enumerate() {
        let mut holds: Vec<(i64, i64, &[i64])> = inst
            .running
            .iter()
            .filter(|r| r.server == s)
            .map(|r| (i64::MIN, r.end, r.demand.as_slice()))
            .collect();
        holds.extend((0..inst.queue.len()).filter(|&j| server[j] == s).map(|j| {
            (
                start[j],
                start[j] + inst.queue[j].walltime,
                inst.queue[j].demand.as_slice(),
            )
        }));
        let mut instants: Vec<i64> = vec![inst.now];
        instants.extend(holds.iter().map(|h| h.0).filter(|&f| f != i64::MIN));
        for x in instants {
            for q in 0..inst.resources {
                let used: i64 = holds
                    .iter()
                    .filter(|h| h.0 <= x && x < h.1)
                    .map(|h| h.2[q])
                    .sum();
                if used > srv.capacity[q] {
                    return Some(format!(
                        "server {} uses {used} > {} of resource {q} at {x}",
                        srv.id, srv.capacity[q]
                    ));
                }
            }
        }
    }
    None
}

/// The objectives of SPEC section 4.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Objectives {
    pub bsld: f64,
    pub wait: f64,
    pub flow: f64,
    pub makespan: f64,
}

pub fn objectives(inst: &Instance, start: &[i64]) -> Objectives {
    let n = inst.queue.len() as f64;
    let mut bsld = 0.0;
    let mut wait = 0.0;
    let mut weighted_flow = 0.0;
    let mut weights = 0.0;
    let mut makespan = i64::MIN;
    for (j, job) in inst.queue.iter().enumerate() {
        let p = job.walltime;
        let w = start[j] - job.submit;
        let c = start[j] + p;
        bsld += f64::max((w + p) as f64 / p.max(TAU) as f64, 1.0);
        wait += w as f64;
        weighted_flow += job.weight * (c - job.submit) as f64;
        weights += job.weight;
        makespan = makespan.max(c - inst.now);
    }
    Objectives {
        bsld: bsld / n,
        wait: wait / n,
        flow: weighted_flow / weights,
        makespan: makespan as f64,
    }
}

/// Whether `a` and `b` agree to 1e-9 relative (absolute near 0).
pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The score of job `j` under a rule of SPEC section 6, as a float (for messages, and for
/// the rules whose scores involve logarithms). r = walltime, n = demand of the first
/// resource, s = submit, w = now - s.
pub fn score(inst: &Instance, rule: &str, origin: i64, j: usize) -> f64 {
    let job = &inst.queue[j];
    let r = job.walltime as f64;
    let n = job.demand[0] as f64;
    let s = job.submit;
    let w = (inst.now - s) as f64;
    match rule {
        "fcfs" => s as f64,
        "sjf" => r,
        "saf" => r * n,
        "ljf" => -r,
        "wfp3" => -((w / r).powi(3)) * n,
        "unicep" => {
            let n = if n == 0.0 { 1.0 } else { n };
            -w / ((n + 1.0).log2() * r)
        }
        "f1" => {
            let since = (s - origin).max(1) as f64;
            r.log10() * n + 870.0 * since.log10()
        }
        other => panic!("no score for rule {other}"),
    }
}

/// Compares the scores of jobs `a` and `b`; exact (integer) wherever the score is rational.
pub fn compare_scores(inst: &Instance, rule: &str, origin: i64, a: usize, b: usize) -> Ordering {
    let (ja, jb) = (&inst.queue[a], &inst.queue[b]);
    let (ra, rb) = (ja.walltime as i128, jb.walltime as i128);
    let (na, nb) = (ja.demand[0] as i128, jb.demand[0] as i128);
    match rule {
        "fcfs" => ja.submit.cmp(&jb.submit),
        "sjf" => ra.cmp(&rb),
        "saf" => (ra * na).cmp(&(rb * nb)),
        "ljf" => rb.cmp(&ra),
        "wfp3" => {
            // -(wa/ra)^3 na < -(wb/rb)^3 nb  <=>  wa^3 na rb^3 > wb^3 nb ra^3 (r >= 1).
            let (wa, wb) = (
                (inst.now - ja.submit) as i128,
                (inst.now - jb.submit) as i128,
            );
            let side = |w: i128, n: i128, r_other: i128| -> Option<i128> {
                w.checked_pow(3)?
                    .checked_mul(n)?
                    .checked_mul(r_other.checked_pow(3)?)
            };
            match (side(wa, na, rb), side(wb, nb, ra)) {
                (Some(x), Some(y)) => y.cmp(&x),
                _ => score(inst, rule, origin, a).total_cmp(&score(inst, rule, origin, b)),
            }
        }
        "unicep" | "f1" => {
            let (x, y) = (score(inst, rule, origin, a), score(inst, rule, origin, b));
            x.partial_cmp(&y).expect("scores are not NaN")
        }
        other => panic!("no score for rule {other}"),
    }
}

/// The order of SPEC section 6: ascending score, ties by submit, then queue position. (Before
/// the dependency repair of section 2.)
pub fn rule_order(inst: &Instance, rule: &str, origin: i64) -> Vec<usize> {
    let mut jobs: Vec<usize> = (0..inst.queue.len()).collect();
    jobs.sort_by(|&a, &b| {
        compare_scores(inst, rule, origin, a, b)
            .then(inst.queue[a].submit.cmp(&inst.queue[b].submit))
            .then(a.cmp(&b))
    });
    jobs
}
