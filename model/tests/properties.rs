//! Property tests of the dispatcher against a brute-force reading of SPEC sections 2-4.
//!
//! The checks here deliberately do not reuse the dispatcher's profiles: they recompute the
//! usage of every server at every integer instant from the instance itself.

use std::collections::{BTreeSet, HashMap};

use proptest::prelude::*;
use proptest::sample::Index;
use schedlm_model::{
    dispatch, Dispatcher, Instance, Objective, Placement, Problem, QueuedJob, RunningJob, Schedule,
    Server, Time, Variant,
};

const NOW: Time = 1000;

/// Builds an instance from raw draws, making it valid: running jobs are cut down to what is
/// left on their server, queued demands to their home server's capacity (so every job fits
/// somewhere), and a queued job only depends on jobs of lower `rank` (so there is no cycle).
#[allow(clippy::type_complexity)]
fn build(
    caps: Vec<Vec<i64>>,
    running: Vec<(usize, Vec<i64>, Time)>,
    jobs: Vec<(usize, Vec<i64>, Time, Time, u8)>,
    deps: Vec<Vec<bool>>,
    rank: Vec<usize>,
    with_deps: bool,
) -> Instance {
    let r = caps[0].len();
    let mut used = vec![vec![0; r]; caps.len()];
    let running: Vec<RunningJob> = running
        .into_iter()
        .enumerate()
        .map(|(k, (s, raw, end))| {
            let demand: Vec<i64> = (0..r)
                .map(|q| raw[q].min(caps[s][q] - used[s][q]))
                .collect();
            for q in 0..r {
                used[s][q] += demand[q];
            }
            RunningJob {
                id: format!("r{k}"),
                server: format!("n{s}"),
                demand,
                end: NOW + end,
            }
        })
        .collect();
    let nq = jobs.len();
    let nr = running.len();
    let queue = jobs
        .into_iter()
        .enumerate()
        .map(|(i, (s, raw, walltime, ago, weight))| {
            let demand = (0..r).map(|q| raw[q].min(caps[s][q])).collect();
            let mut job = QueuedJob::new(format!("j{i}"), NOW - ago, demand, walltime);
            job.weight = f64::from(weight);
            if with_deps {
                for k in 0..nq {
                    if rank[k] < rank[i] && deps[i][k] {
                        job.deps.push(format!("j{k}"));
                    }
                }
                for k in 0..nr {
                    if deps[i][nq + k] {
                        job.deps.push(format!("r{k}"));
                    }
                }
            }
            job
        })
        .collect();
    Instance {
        now: NOW,
        resources: (0..r).map(|q| format!("res{q}")).collect(),
        servers: caps
            .into_iter()
            .enumerate()
            .map(|(s, capacity)| Server {
                id: format!("n{s}"),
                capacity,
            })
            .collect(),
        running,
        queue,
    }
}

/// A length in 1..=`max`, half of the time one of 5, 10, 15, 20, so that ends and starts
/// often coincide exactly and holes are often exactly as long as a job (where half-open
/// intervals matter).
fn round_or_any(max: Time) -> impl Strategy<Value = Time> {
    prop_oneof![1..=max, prop::sample::select(vec![5, 10, 15, 20])]
}

/// Random valid instances: 1..=`max_servers` servers, R = 1-3, 0-4 running jobs, 1-8 queued
/// jobs, capacities 0-4 per resource (so jobs contend), walltimes 1-100, optional acyclic deps.
fn instances(min_servers: usize, max_servers: usize) -> impl Strategy<Value = Instance> {
    (
        min_servers..=max_servers,
        1..=3usize,
        0..=4usize,
        1..=8usize,
    )
        .prop_flat_map(|(ns, r, nr, nq)| {
            let caps = prop::collection::vec(prop::collection::vec(0i64..=4, r), ns);
            let running = prop::collection::vec(
                (0..ns, prop::collection::vec(0i64..=4, r), round_or_any(60)),
                nr,
            );
            let jobs = prop::collection::vec(
                (
                    0..ns,
                    prop::collection::vec(0i64..=4, r),
                    round_or_any(100),
                    0i64..=50,
                    1u8..=3,
                ),
                nq,
            );
            let deps = prop::collection::vec(
                prop::collection::vec(prop::bool::weighted(0.2), nq + nr),
                nq,
            );
            let rank = Just((0..nq).collect::<Vec<_>>()).prop_shuffle();
            (caps, running, jobs, deps, rank, any::<bool>())
        })
        .prop_map(|(caps, running, jobs, deps, rank, with_deps)| {
            build(caps, running, jobs, deps, rank, with_deps)
        })
}

/// An instance and a random permutation of its queue.
fn with_order(
    min_servers: usize,
    max_servers: usize,
) -> impl Strategy<Value = (Instance, Vec<usize>)> {
    instances(min_servers, max_servers).prop_flat_map(|inst| {
        let n = inst.queue.len();
        (Just(inst), Just((0..n).collect::<Vec<_>>()).prop_shuffle())
    })
}

fn variants() -> impl Strategy<Value = Variant> {
    prop_oneof![Just(Variant::Serial), Just(Variant::Strict)]
}

/// The instance in plain, independent form for the brute-force checks.
struct World<'a> {
    inst: &'a Instance,
    queue_index: HashMap<&'a str, usize>,
    running_end: HashMap<&'a str, Time>,
    server_index: HashMap<&'a str, usize>,
}

impl<'a> World<'a> {
    fn new(inst: &'a Instance) -> World<'a> {
        World {
            inst,
            queue_index: inst
                .queue
                .iter()
                .enumerate()
                .map(|(i, j)| (j.id.as_str(), i))
                .collect(),
            running_end: inst
                .running
                .iter()
                .map(|j| (j.id.as_str(), j.end))
                .collect(),
            server_index: inst
                .servers
                .iter()
                .enumerate()
                .map(|(i, s)| (s.id.as_str(), i))
                .collect(),
        }
    }

    fn walltime(&self, j: usize) -> Time {
        self.inst.queue[j].walltime
    }

    /// Queued dependencies of `j`, as queue indices.
    fn queued_deps(&self, j: usize) -> Vec<usize> {
        self.inst.queue[j]
            .deps
            .iter()
            .filter_map(|d| self.queue_index.get(d.as_str()).copied())
            .collect()
    }

    /// The lower bound of SPEC 3 from `now` and the ends of all dependencies.
    fn dep_bound(&self, j: usize, start: &[Time]) -> Time {
        self.inst.queue[j]
            .deps
            .iter()
            .map(|d| self.dep_end(d, start))
            .fold(self.inst.now, Time::max)
    }

    /// End of one dependency (running, or queued with the given starts).
    fn dep_end(&self, dep: &str, start: &[Time]) -> Time {
        match self.running_end.get(dep) {
            Some(&end) => end,
            None => {
                let k = self.queue_index[dep];
                start[k] + self.walltime(k)
            }
        }
    }

    /// Usage of server `s` at instant `u` (>= now) by the running jobs and by `placed`, given
    /// as (job, server, start).
    fn usage(&self, placed: &[(usize, usize, Time)], s: usize, u: Time) -> Vec<i64> {
        let r = self.inst.resources.len();
        let mut used = vec![0; r];
        for job in &self.inst.running {
            if self.server_index[job.server.as_str()] == s && u < job.end {
                for (x, d) in used.iter_mut().zip(&job.demand) {
                    *x += d;
                }
            }
        }
        for &(j, server, start) in placed {
            if server == s && start <= u && u < start + self.walltime(j) {
                for (x, d) in used.iter_mut().zip(&self.inst.queue[j].demand) {
                    *x += d;
                }
            }
        }
        used
    }

    /// Whether job `j` fits on server `s` at every integer instant of [t, t + p_j).
    fn fits_at(&self, placed: &[(usize, usize, Time)], j: usize, s: usize, t: Time) -> bool {
        let cap = &self.inst.servers[s].capacity;
        let demand = &self.inst.queue[j].demand;
        (t..t + self.walltime(j)).all(|u| {
            let used = self.usage(placed, s, u);
            (0..cap.len()).all(|q| used[q] + demand[q] <= cap[q])
        })
    }

    /// SPEC section 2, written out again: repeatedly take the first remaining job whose
    /// queued dependencies have all been taken.
    fn repair(&self, order: &[usize]) -> Vec<usize> {
        let mut remaining = order.to_vec();
        let mut taken = vec![false; self.inst.queue.len()];
        let mut out = Vec::new();
        while !remaining.is_empty() {
            let pos = remaining
                .iter()
                .position(|&j| self.queued_deps(j).iter().all(|&d| taken[d]))
                .expect("acyclic");
            let j = remaining.remove(pos);
            taken[j] = true;
            out.push(j);
        }
        out
    }
}

fn problem(inst: &Instance) -> Problem {
    Problem::new(inst).expect("generated instances are valid")
}

/// (a) The schedule is feasible: capacities at every instant where something starts, deps,
/// starts >= now.
fn check_feasible(w: &World, s: &Schedule) -> Result<(), TestCaseError> {
    let inst = w.inst;
    let n = inst.queue.len();
    let placed: Vec<(usize, usize, Time)> = (0..n).map(|j| (j, s.server[j], s.start[j])).collect();
    for j in 0..n {
        prop_assert!(s.start[j] >= inst.now, "job {j} starts before now");
        prop_assert!(s.server[j] < inst.servers.len(), "job {j} has no server");
        let bound = w.dep_bound(j, &s.start);
        prop_assert!(
            s.start[j] >= bound,
            "job {j} starts at {} before a dependency ends ({bound})",
            s.start[j]
        );
    }
    let instants: BTreeSet<Time> = std::iter::once(inst.now)
        .chain(s.start.iter().copied())
        .collect();
    for &u in &instants {
        for (k, server) in inst.servers.iter().enumerate() {
            let used = w.usage(&placed, k, u);
            for (q, (&x, &c)) in used.iter().zip(&server.capacity).enumerate() {
                prop_assert!(
                    x <= c,
                    "server {k} resource {q} at {u}: {x} used > capacity {c}"
                );
            }
        }
    }
    Ok(())
}

/// (b) Each job starts at the earliest time SPEC allows given the jobs placed before it, on
/// the first feasible server at that time; the order is the repaired one.
fn check_earliest(
    w: &World,
    order: &[usize],
    s: &Schedule,
    variant: Variant,
) -> Result<(), TestCaseError> {
    let inst = w.inst;
    let repaired = w.repair(order);
    prop_assert_eq!(&s.order, &repaired);
    let mut placed: Vec<(usize, usize, Time)> = Vec::new();
    for (k, &j) in repaired.iter().enumerate() {
        let mut lower = w.dep_bound(j, &s.start);
        if variant == Variant::Strict && k > 0 {
            lower = lower.max(s.start[repaired[k - 1]]);
        }
        // Candidates: now, dependency ends, ends of running and earlier placed jobs, and the
        // lower bound itself (in strict, the previous start).
        let mut candidates: BTreeSet<Time> = BTreeSet::from([inst.now, lower]);
        candidates.extend(inst.running.iter().map(|r| r.end));
        candidates.extend(placed.iter().map(|&(i, _, t)| t + w.walltime(i)));
        for d in &inst.queue[j].deps {
            candidates.insert(w.dep_end(d, &s.start));
        }
        let (start, server) = (s.start[j], s.server[j]);
        prop_assert!(
            start >= lower,
            "job {j}: start {start} < lower bound {lower}"
        );
        prop_assert!(
            candidates.contains(&start),
            "job {j}: start {start} is not a candidate time {candidates:?}"
        );
        prop_assert!(
            w.fits_at(&placed, j, server, start),
            "job {j} does not fit server {server} at {start}"
        );
        for earlier in 0..server {
            prop_assert!(
                !w.fits_at(&placed, j, earlier, start),
                "job {j} at {start}: server {earlier} is feasible and comes before {server}"
            );
        }
        for &t in candidates.range(lower..start) {
            for sv in 0..inst.servers.len() {
                prop_assert!(
                    !w.fits_at(&placed, j, sv, t),
                    "job {j} could start at {t} < {start} on server {sv}"
                );
            }
        }
        placed.push((j, server, start));
    }
    Ok(())
}

/// (c) Objectives recomputed from the starts with the plain formulas of SPEC 4.
fn check_objectives(inst: &Instance, p: &Problem, start: &[Time]) -> Result<(), TestCaseError> {
    let n = inst.queue.len() as f64;
    let mut bsld = 0.0;
    let mut wait = 0.0;
    let mut flow = 0.0;
    let mut weights = 0.0;
    let mut makespan = Time::MIN;
    for (j, job) in inst.queue.iter().enumerate() {
        let (s, pj) = (start[j], job.walltime);
        let wj = (s - job.submit) as f64;
        bsld += ((wj + pj as f64) / (pj.max(10) as f64)).max(1.0);
        wait += wj;
        flow += job.weight * (s + pj - job.submit) as f64;
        weights += job.weight;
        makespan = makespan.max(s + pj - inst.now);
    }
    let expected = [
        (Objective::Bsld, bsld / n),
        (Objective::Wait, wait / n),
        (Objective::Flow, flow / weights),
        (Objective::Makespan, makespan as f64),
    ];
    for (objective, value) in expected {
        let got = objective.value(p, start);
        prop_assert!(
            (got - value).abs() <= 1e-9 * value.abs().max(1.0),
            "{objective}: {got} != {value}"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn schedules_are_feasible_earliest_and_scored_right(
        (inst, order) in with_order(1, 4),
        variant in variants(),
    ) {
        let p = problem(&inst);
        let w = World::new(&inst);
        let s = dispatch(&p, &order, variant).unwrap();
        check_feasible(&w, &s)?;
        check_earliest(&w, &order, &s, variant)?;
        check_objectives(&inst, &p, &s.start)?;
    }

    /// `earliest_on` per server agrees with `earliest` (minimum start, first server on ties),
    /// and `pooled_usage` is the brute-force sum of every server's usage.
    #[test]
    fn per_server_earliest_and_pooled_usage_agree(
        (inst, order) in with_order(1, 4),
        variant in variants(),
    ) {
        let p = problem(&inst);
        let w = World::new(&inst);
        let r = inst.resources.len();
        let mut d = Dispatcher::new(&p, variant);
        let (mut times, mut usage) = (Vec::new(), Vec::new());
        for &j in &w.repair(&order) {
            let lower = d.lower_bound(j);
            let per_server: Vec<Option<Time>> =
                (0..p.servers()).map(|s| d.earliest_on(j, s, lower)).collect();
            for (s, t) in per_server.iter().enumerate() {
                prop_assert_eq!(t.is_some(), p.fits(j, s));
            }
            let best = per_server.iter().flatten().min().copied().unwrap();
            let server = per_server.iter().position(|&t| t == Some(best)).unwrap();
            prop_assert_eq!(d.earliest(j), Placement { start: best, server });
            d.place(j);
            let placed: Vec<(usize, usize, Time)> = d
                .placed_order()
                .map(|i| (i, d.server(i), d.start(i)))
                .collect();
            d.pooled_usage(&mut times, &mut usage);
            prop_assert_eq!(usage.len(), times.len() * r);
            prop_assert!(times.windows(2).all(|x| x[0] < x[1]));
            prop_assert_eq!(times[0], inst.now);
            for (i, &t) in times.iter().enumerate() {
                let mut total = vec![0; r];
                for s in 0..p.servers() {
                    for (x, u) in total.iter_mut().zip(w.usage(&placed, s, t)) {
                        *x += u;
                    }
                }
                prop_assert_eq!(&usage[i * r..(i + 1) * r], &total[..], "segment at {}", t);
            }
            // The last segment is empty, and usage only changes at breakpoints: every start
            // and end is one.
            prop_assert!(usage[usage.len() - r..].iter().all(|&x| x == 0));
            for &(i, _, t) in &placed {
                prop_assert!(times.binary_search(&t).is_ok());
                prop_assert!(times.binary_search(&(t + w.walltime(i))).is_ok());
            }
        }
    }

    #[test]
    fn on_one_server_serial_never_starts_later_than_strict(
        (inst, order) in with_order(1, 1),
    ) {
        let p = problem(&inst);
        let serial = dispatch(&p, &order, Variant::Serial).unwrap();
        let strict = dispatch(&p, &order, Variant::Strict).unwrap();
        prop_assert_eq!(&serial.order, &strict.order);
        for j in 0..p.jobs() {
            prop_assert!(
                serial.start[j] <= strict.start[j],
                "job {}: serial {} > strict {}", j, serial.start[j], strict.start[j]
            );
        }
    }

    #[test]
    fn undo_restores_the_state(
        (inst, order, other) in with_order(1, 4).prop_flat_map(|(inst, order)| {
            let n = inst.queue.len();
            (Just(inst), Just(order), Just((0..n).collect::<Vec<_>>()).prop_shuffle())
        }),
        prefix in any::<Index>(),
        more in any::<Index>(),
        variant in variants(),
    ) {
        let p = problem(&inst);
        let w = World::new(&inst);
        let order = w.repair(&order);
        let n = order.len();
        let fresh = dispatch(&p, &order, variant).unwrap();
        let mut d = Dispatcher::new(&p, variant);
        let a = prefix.index(n + 1);
        for &j in &order[..a] {
            d.place(j);
        }
        let ready = |d: &Dispatcher| -> Vec<(usize, Placement)> {
            (0..n)
                .filter(|&j| !d.is_placed(j) && d.is_ready(j))
                .map(|j| (j, d.earliest(j)))
                .collect()
        };
        let before = ready(&d);
        let schedule = d.schedule();
        // Place more jobs, from another order (repaired, restricted to the unplaced jobs, so
        // each is ready when placed), then undo them.
        let tail: Vec<usize> = w.repair(&other).into_iter().filter(|&j| !d.is_placed(j)).collect();
        let m = more.index(tail.len() + 1);
        for &j in &tail[..m] {
            prop_assert!(d.is_ready(j));
            d.place(j);
        }
        for &j in tail[..m].iter().rev() {
            prop_assert_eq!(d.undo(), Some(j));
        }
        prop_assert_eq!(d.len(), a);
        prop_assert_eq!(ready(&d), before);
        prop_assert_eq!(d.schedule(), schedule);
        for &j in &order[a..] {
            d.place(j);
        }
        prop_assert_eq!(d.schedule(), fresh);
    }
}

// Why property (d) holds on one server: by induction over the order, suppose jobs placed before
// j start no later under serial than under strict. Let T be j's strict start. Any earlier job
// running at an instant u >= T under serial started at S <= S_strict <= T (strict starts do not
// decrease) and ends at S + p <= S_strict + p, so it is running at u under strict too: on the
// only server, serial usage at every u >= T is at most strict usage, and j's serial lower bound
// (now, dependency ends) is at most T. So j fits at T under serial, and starts there or earlier.
//
// With several servers the argument breaks: an earlier start may be on another server. The
// smallest counterexample found (by a proptest search, then cut down by hand):
// n0 has (1 core, 1 gpu), n1 (1 core, 0 gpus); r0 holds all of n0 until 10, r1 n1's core until
// 5. Order P, X, Y, Z:
// - P (0 cores, 1 gpu, p=1): only n0 has a gpu -> n0 at 10, [10,11) (both variants).
// - X (1 core, p=9): serial: n0 at 10, n1 at 5 -> n1 [5,14).
//                    strict: t >= 10 (P's start): n0 is free at 10 -> n0 [10,19).
// - Y (1 core, p=10): serial: n0 at 10 (P uses only the gpu), n1 at 14 -> n0 [10,20).
//                     strict: t >= 10: n0 busy with X until 19, n1 free -> n1 [10,20).
// - Z (1 core, 1 gpu, p=1): only n0 fits. Serial: Y holds n0's core until 20 -> 20.
//                           Strict: t >= 10, X holds n0's core until 19 -> 19.
// Backfilling X onto n1 pushed Y onto the gpu server, where it runs 1 s longer than X would
// have: Z starts later under serial (20) than under strict (19).
#[test]
fn on_several_servers_serial_can_start_a_job_later_than_strict() {
    let inst = Instance::from_json(
        r#"{"now": 0, "resources": ["cores", "gpus"],
            "servers": [{"id": "n0", "capacity": [1, 1]}, {"id": "n1", "capacity": [1, 0]}],
            "running": [{"id": "r0", "server": "n0", "demand": [1, 1], "end": 10},
                        {"id": "r1", "server": "n1", "demand": [1, 0], "end": 5}],
            "queue": [{"id": "P", "submit": 0, "demand": [0, 1], "walltime": 1},
                      {"id": "X", "submit": 0, "demand": [1, 0], "walltime": 9},
                      {"id": "Y", "submit": 0, "demand": [1, 0], "walltime": 10},
                      {"id": "Z", "submit": 0, "demand": [1, 1], "walltime": 1}]}"#,
    )
    .unwrap();
    let p = problem(&inst);
    let serial = dispatch(&p, &[0, 1, 2, 3], Variant::Serial).unwrap();
    let strict = dispatch(&p, &[0, 1, 2, 3], Variant::Strict).unwrap();
    assert_eq!(serial.start, vec![10, 5, 10, 20]);
    assert_eq!(serial.server, vec![0, 1, 0, 0]);
    assert_eq!(strict.start, vec![10, 10, 10, 19]);
    assert_eq!(strict.server, vec![0, 0, 1, 0]);
    assert!(serial.start[3] > strict.start[3]);
}
