//! Online replay (SPEC section 5) on tiny hand-made traces. Every expected start below was
//! worked out by hand; the reasoning is in the comment above each case. The last tests check
//! invariants on seeded random traces (capacity, arrival, the static-key fast path against the
//! generic policy path, snapshots).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use schedlm_model::sim::{
    Fcfs, OrderFn, Policy, SimError, SimJob, SimResult, SimState, Simulation, StartRule,
};
use schedlm_model::{job_bsld, Problem, Server, Time};

fn pool(cores: i64) -> Vec<Server> {
    vec![Server {
        id: "pool".into(),
        capacity: vec![cores],
    }]
}

/// (id, submit, cores, walltime, runtime)
type J = (&'static str, Time, i64, Time, Time);

fn jobs(list: &[J]) -> Vec<SimJob> {
    list.iter()
        .map(|&(id, submit, cores, wall, run)| SimJob::new(id, submit, vec![cores], wall, run))
        .collect()
}

fn replay(servers: Vec<Server>, list: &[J], rule: StartRule) -> SimResult {
    let sim = Simulation::new(vec!["cores".into()], servers, jobs(list)).unwrap();
    sim.run(&mut Fcfs, rule).unwrap()
}

fn starts(result: &SimResult) -> Vec<(String, Time)> {
    result
        .jobs
        .iter()
        .map(|j| (j.id.clone(), j.start))
        .collect()
}

fn expect(result: &SimResult, expected: &[(&str, Time)]) {
    let want: Vec<(String, Time)> = expected.iter().map(|&(i, t)| (i.to_string(), t)).collect();
    assert_eq!(starts(result), want);
}

// Pool of 4 cores, FCFS.
// a (4 cores, wall 100, run 50) starts at 0 and ends at 50, before its walltime.
// b (2 cores) arrives at 10, c (2 cores, wall 5, run 30) at 20: no room until 50.
// At 50 a ends: b starts, and c fits beside it. c is killed at its walltime: ends at 55.
const BASIC: &[J] = &[
    ("a", 0, 4, 100, 50),
    ("b", 10, 2, 100, 100),
    ("c", 20, 2, 5, 30),
];

#[test]
fn basic_trace_every_rule_and_records() {
    for rule in StartRule::ALL {
        let r = replay(pool(4), BASIC, rule);
        expect(&r, &[("a", 0), ("b", 50), ("c", 50)]);
        let c = &r.jobs[2];
        assert!(c.killed, "{rule}");
        assert_eq!((c.end, c.run, c.wait), (55, 5, 30));
        // bsld: a (0 + 50) / 50 = 1, b (40 + 100) / 100 = 1.4, c (30 + 5) / max(5, 10) = 3.5.
        let bslds: Vec<f64> = r.jobs.iter().map(|j| j.bsld).collect();
        assert_eq!(bslds, vec![1.0, 1.4, 3.5]);
        assert!(!r.jobs[0].killed && !r.jobs[1].killed);
        let s = &r.summary;
        assert_eq!(s.jobs, 3);
        assert!((s.mean_bsld - (1.0 + 1.4 + 3.5) / 3.0).abs() < 1e-12);
        assert!((s.mean_wait - 70.0 / 3.0).abs() < 1e-12);
        // used core-seconds 4*50 + 2*100 + 2*5 = 410 over 4 cores * (150 - 0).
        assert_eq!((s.makespan, s.first_submit, s.last_end), (150, 0, 150));
        assert!((s.utilization - 410.0 / 600.0).abs() < 1e-12);
        assert_eq!(s.killed, 1);
        // One step per event instant: 0, 10, 20, 50, 55, 150.
        assert_eq!(r.series.time, vec![0, 10, 20, 50, 55, 150]);
        assert_eq!(r.series.queue, vec![0, 1, 2, 0, 0, 0]);
        assert_eq!(r.series.running, vec![1, 1, 1, 2, 1, 0]);
        let used: Vec<f64> = (0..r.series.len())
            .map(|k| r.series.used_at(k)[0])
            .collect();
        assert_eq!(used, vec![1.0, 1.0, 1.0, 1.0, 0.5, 0.0]);
    }
}

// Pool of 2. a ends at 10 exactly when b arrives: the completion is processed first, so b
// starts at 10 with no wait, and the step at 10 shows one job running on a full pool.
#[test]
fn completion_before_arrival_at_one_instant() {
    let list: &[J] = &[("a", 0, 2, 10, 10), ("b", 10, 2, 10, 10)];
    for rule in StartRule::ALL {
        let r = replay(pool(2), list, rule);
        expect(&r, &[("a", 0), ("b", 10)]);
        assert_eq!(r.jobs[1].wait, 0);
        assert_eq!(r.series.time, vec![0, 10, 20]);
        assert_eq!(r.series.queue, vec![0, 0, 0]);
        assert_eq!(r.series.used_at(1), &[1.0]);
    }
}

// Jobs killed at their walltime free their cores at start + walltime.
// Pool 1. a (wall 10, run 1000) is killed at 10; b (arrives 5) starts at 10.
#[test]
fn killed_at_walltime() {
    let r = replay(
        pool(1),
        &[("a", 0, 1, 10, 1000), ("b", 5, 1, 10, 3)],
        StartRule::Easy,
    );
    expect(&r, &[("a", 0), ("b", 10)]);
    assert!(r.jobs[0].killed);
    assert_eq!((r.jobs[0].end, r.jobs[0].run), (10, 10));
    assert!(!r.jobs[1].killed);
    assert_eq!(r.jobs[1].end, 13);
    // b: wait 5, run 3: (5 + 3) / max(3, 10) = 0.8, bounded below by 1.
    assert_eq!(r.jobs[1].bsld, 1.0);
    assert_eq!(job_bsld(5, 3), 1.0);
    assert_eq!(job_bsld(90, 10), 10.0);
}

// Pool of 4.
// a: 0, 2 cores, wall 100            -> 0..100
// b: 1, 4 cores, wall 10             -> blocked by a; reservation at 100 (a's walltime end)
// c: 2, 2 cores, wall 50             -> strict: may not pass b; b runs 100..110, c at 110.
//                                       easy: fits now and ends at 52 <= 100: starts at 2.
// d: 3, 2 cores, wall 200            -> no room while a and c run. easy: at 52, c ends, but d
//                                       would end at 252 > 100 and the extra at 100 is
//                                       4 - 4 = 0, so d waits; b at 100, d at 110 (b ends).
//                                       strict: at 110 c and d both start.
const STRICT_VS_EASY: &[J] = &[
    ("a", 0, 2, 100, 100),
    ("b", 1, 4, 10, 10),
    ("c", 2, 2, 50, 50),
    ("d", 3, 2, 200, 200),
];

#[test]
fn strict_never_overtakes() {
    let r = replay(pool(4), STRICT_VS_EASY, StartRule::Strict);
    expect(&r, &[("a", 0), ("b", 100), ("c", 110), ("d", 110)]);
}

#[test]
fn easy_backfills_short_job_before_the_reservation() {
    let r = replay(pool(4), STRICT_VS_EASY, StartRule::Easy);
    expect(&r, &[("a", 0), ("b", 100), ("c", 2), ("d", 110)]);
}

// Pool of 4.
// a: 0, 3 cores, wall 100            -> 0..100
// b: 1, 4 cores, wall 10             -> head; reservation at 100, extra 4 - 4 = 0
// c: 2, 1 core,  wall 500            -> fits now (1 free) but would run past 100 and the
//                                       extra is 0: starting it would delay b. It waits.
// d: 3, 1 core,  wall 97             -> fits now and ends at exactly 100: starts at 3.
// b starts at 100 as reserved (d's core is free at 100), c after b at 110.
#[test]
fn easy_backfill_never_delays_the_reservation() {
    let list: &[J] = &[
        ("a", 0, 3, 100, 100),
        ("b", 1, 4, 10, 10),
        ("c", 2, 1, 500, 500),
        ("d", 3, 1, 97, 97),
    ];
    let r = replay(pool(4), list, StartRule::Easy);
    expect(&r, &[("a", 0), ("b", 100), ("c", 110), ("d", 3)]);
}

// Pool of 4.
// a: 0, 3 cores, wall 100            -> 0..100
// b: 1, 2 cores, wall 10             -> head (1 free); at 100, 4 free: reservation at 100
//                                       with extra 4 - 2 = 2
// c: 2, 1 core, wall 500             -> runs past 100 but fits in the extra: starts at 2,
//                                       extra left 1
// d: 3, 2 cores, wall 500            -> no room now (0 free)
// At 100: b starts (4 - 1 = 3 free >= 2) on time; d fits beside it (1 free? no: 3 - 2 = 1 < 2)
// so d waits for b to end at 110.
#[test]
fn easy_backfill_into_extra_capacity() {
    let list: &[J] = &[
        ("a", 0, 3, 100, 100),
        ("b", 1, 2, 10, 10),
        ("c", 2, 1, 500, 500),
        ("d", 3, 2, 500, 500),
    ];
    let r = replay(pool(4), list, StartRule::Easy);
    expect(&r, &[("a", 0), ("b", 100), ("c", 2), ("d", 110)]);
}

// The reservation comes from walltime ends, not true run times.
// Pool of 4. a: 0, 3 cores, wall 100 but runs 40. b: 1, 4 cores: reservation at 100 (extra 0).
// c: 2, 1 core, wall 80: ends at 82 <= 100, so EASY starts it at 2. a really ends at 40, when
// b could have started, but c holds a core until 82: b starts at 82.
#[test]
fn easy_reservation_uses_walltime_ends() {
    let list: &[J] = &[
        ("a", 0, 3, 100, 40),
        ("b", 1, 4, 10, 10),
        ("c", 2, 1, 80, 80),
    ];
    let r = replay(pool(4), list, StartRule::Easy);
    expect(&r, &[("a", 0), ("b", 82), ("c", 2)]);
    // Strict keeps c behind b: b at 40 (a's true end), c at 50.
    let r = replay(pool(4), list, StartRule::Strict);
    expect(&r, &[("a", 0), ("b", 40), ("c", 50)]);
}

// Where EASY and conservative differ: EASY protects only the first waiting job.
// Pool of 4, runtime = walltime.
// a: 0, 2 cores, wall 100 and x: 0, 1 core, wall 200  -> both start at 0, 1 core free
// b: 1, 2 cores, wall 100   -> head; reservation at 100 (3 free), extra 1
// c: 2, 4 cores, wall 100   -> needs the whole pool
// d: 3, 1 core,  wall 250   -> easy: fits now, ends 253 > 100 but fits the extra (1): starts
//                              at 3. Then b 100..200; c needs 4 cores: x and b end at 200 but
//                              d holds one until 253: c at 253.
//                              conservative: c is reserved at 200 (after x and b), and d's
//                              [3, 253) would overlap it, so d is reserved after c: c at 200,
//                              d at 300.
const EASY_VS_CONSERVATIVE: &[J] = &[
    ("a", 0, 2, 100, 100),
    ("x", 0, 1, 200, 200),
    ("b", 1, 2, 100, 100),
    ("c", 2, 4, 100, 100),
    ("d", 3, 1, 250, 250),
];

#[test]
fn easy_delays_the_second_job_conservative_does_not() {
    let easy = replay(pool(4), EASY_VS_CONSERVATIVE, StartRule::Easy);
    expect(
        &easy,
        &[("a", 0), ("x", 0), ("b", 100), ("c", 253), ("d", 3)],
    );
    let cons = replay(pool(4), EASY_VS_CONSERVATIVE, StartRule::Conservative);
    expect(
        &cons,
        &[("a", 0), ("x", 0), ("b", 100), ("c", 200), ("d", 300)],
    );
}

// Conservative still backfills what fits in a hole: pool of 4.
// a: 0, 3 cores, wall 100; b: 1, 4 cores, wall 10 -> reserved at 100..110.
// c: 2, 1 core, wall 98 -> [2, 100) fits beside a and ends before b: starts at 2.
// d: 3, 1 core, wall 200 -> would overlap b: reserved at 110.
// And jobs that end early pull reservations forward: e (3 cores... ) is not needed; instead a
// runs only 50 (wall 100): at 50, b is re-planned but c still holds a core until 100.
#[test]
fn conservative_backfills_holes_and_replans() {
    let list: &[J] = &[
        ("a", 0, 3, 100, 100),
        ("b", 1, 4, 10, 10),
        ("c", 2, 1, 98, 98),
        ("d", 3, 1, 200, 200),
    ];
    let r = replay(pool(4), list, StartRule::Conservative);
    expect(&r, &[("a", 0), ("b", 100), ("c", 2), ("d", 110)]);

    // a ends at 50 instead of 100; c (wall 40) ends at 42 so at 50 the pool is empty and b
    // starts at 50; d, reserved after b, starts at 60.
    let list: &[J] = &[
        ("a", 0, 3, 100, 50),
        ("b", 1, 4, 10, 10),
        ("c", 2, 1, 40, 40),
        ("d", 3, 1, 200, 200),
    ];
    let r = replay(pool(4), list, StartRule::Conservative);
    expect(&r, &[("a", 0), ("b", 50), ("c", 2), ("d", 60)]);
}

// Two servers: n0 with 2 cores, n1 with 4. A job runs on one server, the first with room.
// a: 0, 4 cores, wall 100 -> only n1 can hold it: n1 at 0.
// b: 1, 4 cores, wall 10  -> head; only n1: reservation n1 at 100, extra 0.
// c: 2, 2 cores, wall 1000 -> fits now on n0, which is not the reservation server: starts at 2
//                             on n0 however long it runs.
// d: 3, 1 core, wall 5     -> n0 full, n1 full: waits; at 100 b starts on n1 (4 cores), d
//                             waits for b: 110 on n1.
#[test]
fn several_servers_first_with_room() {
    let servers = vec![
        Server {
            id: "n0".into(),
            capacity: vec![2],
        },
        Server {
            id: "n1".into(),
            capacity: vec![4],
        },
    ];
    let list: &[J] = &[
        ("a", 0, 4, 100, 100),
        ("b", 1, 4, 10, 10),
        ("c", 2, 2, 1000, 1000),
        ("d", 3, 1, 5, 5),
    ];
    let r = replay(servers.clone(), list, StartRule::Easy);
    expect(&r, &[("a", 0), ("b", 100), ("c", 2), ("d", 110)]);
    let on: Vec<usize> = r.jobs.iter().map(|j| j.server).collect();
    assert_eq!(on, vec![1, 1, 0, 1]);
    // Strict: c may not pass b; at 100 b takes n1 and c takes n0 (first server with room);
    // d then has no room anywhere until b ends at 110.
    let r = replay(servers, list, StartRule::Strict);
    expect(&r, &[("a", 0), ("b", 100), ("c", 100), ("d", 110)]);
}

/// A policy that sorts by walltime (SJF) through `order`, never `static_key`.
fn sjf_dynamic() -> impl Policy {
    OrderFn(|state: &SimState<'_>, waiting: &[usize]| {
        let jobs = state.jobs();
        let mut order: Vec<usize> = (0..waiting.len()).collect();
        order.sort_by_key(|&i| {
            (
                jobs[waiting[i]].walltime,
                jobs[waiting[i]].submit,
                waiting[i],
            )
        });
        order
    })
}

/// SJF as a static key.
struct SjfKey;
impl Policy for SjfKey {
    fn order(&mut self, _: &SimState<'_>, _: &[usize]) -> Vec<usize> {
        unreachable!("static-key policies are never asked for an order")
    }
    fn static_key(&self, job: &SimJob) -> Option<f64> {
        Some(job.walltime as f64)
    }
}

// The policy order decides who is the head: with SJF, the short job c runs before b.
// Pool 4: a 0..100 (4 cores). b (4 cores, wall 50) and c (4 cores, wall 10) wait; at 100,
// SJF starts c (100..110), then b (110..160).
#[test]
fn policy_order_decides() {
    let list: &[J] = &[
        ("a", 0, 4, 100, 100),
        ("b", 1, 4, 50, 50),
        ("c", 2, 4, 10, 10),
    ];
    let sim = Simulation::new(vec!["cores".into()], pool(4), jobs(list)).unwrap();
    for rule in StartRule::ALL {
        let r = sim.run(&mut SjfKey, rule).unwrap();
        expect(&r, &[("a", 0), ("b", 110), ("c", 100)]);
        let r = sim.run(&mut sjf_dynamic(), rule).unwrap();
        expect(&r, &[("a", 0), ("b", 110), ("c", 100)]);
    }
}

/// A seeded random trace on `servers` servers with 2 resources.
fn random_sim(seed: u64, n: usize, servers: usize) -> Simulation {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let servers: Vec<Server> = (0..servers)
        .map(|s| Server {
            id: format!("n{s}"),
            capacity: vec![rng.random_range(4..=16), rng.random_range(8..=32)],
        })
        .collect();
    let max_cores = servers.iter().map(|s| s.capacity[0]).max().unwrap();
    let max_mem = servers.iter().map(|s| s.capacity[1]).max().unwrap();
    let mut t = 0;
    let jobs = (0..n)
        .map(|i| {
            // Bursts: a quarter of the jobs arrive with the previous one.
            if rng.random_bool(0.75) {
                t += rng.random_range(0..40);
            }
            let wall = rng.random_range(1..=300);
            let run = if rng.random_bool(0.1) {
                wall + rng.random_range(1..100) // killed
            } else {
                rng.random_range(0..=wall)
            };
            let mut job = SimJob::new(
                format!("j{i}"),
                t,
                vec![
                    rng.random_range(0..=max_cores),
                    rng.random_range(0..=max_mem),
                ],
                wall,
                run,
            );
            // Keep every job placeable on some server.
            let fits = servers
                .iter()
                .any(|s| job.demand.iter().zip(&s.capacity).all(|(d, c)| d <= c));
            if !fits {
                job.demand = vec![1, 1];
            }
            job
        })
        .collect();
    Simulation::new(vec!["cores".into(), "mem".into()], servers, jobs).unwrap()
}

/// Checks what every replay must satisfy: starts at or after submit, ends = start + run, no
/// server ever over capacity, series consistent with the records.
fn check_invariants(sim: &Simulation, r: &SimResult) {
    let jobs = sim.jobs();
    assert_eq!(r.jobs.len(), jobs.len());
    let mut events: Vec<(Time, i32, usize)> = Vec::new();
    for (k, (rec, job)) in r.jobs.iter().zip(jobs).enumerate() {
        assert!(
            rec.start >= job.submit,
            "{} starts before its submit",
            rec.id
        );
        assert_eq!(rec.run, job.runtime.min(job.walltime));
        assert_eq!(rec.end, rec.start + rec.run);
        assert_eq!(rec.killed, job.runtime > job.walltime);
        assert_eq!(rec.wait, rec.start - rec.submit);
        assert!(rec.server < sim.servers().len());
        events.push((rec.start, 1, k));
        events.push((rec.end, -1, k));
    }
    // Ends before starts at one instant.
    events.sort();
    let mut used = vec![vec![0i64; 2]; sim.servers().len()];
    for (_, sign, k) in events {
        let s = r.jobs[k].server;
        let capacity = &sim.servers()[s].capacity;
        for ((u, &d), &c) in used[s].iter_mut().zip(&jobs[k].demand).zip(capacity) {
            *u += sign as i64 * d;
            assert!(*u <= c, "server {s} over capacity");
        }
    }
    // The series ends with an idle cluster and an empty queue.
    let last = r.series.len() - 1;
    assert_eq!(r.series.queue[last], 0);
    assert_eq!(r.series.used_at(last), &[0.0, 0.0]);
    assert!(r.series.time.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn random_traces_keep_invariants_and_fast_path_matches_generic() {
    for seed in 0..12 {
        let sim = random_sim(seed, 250, 1 + (seed as usize % 3));
        for rule in StartRule::ALL {
            let fast = sim.run(&mut Fcfs, rule).unwrap();
            check_invariants(&sim, &fast);
            // FCFS through the generic path: identity order at every step.
            let mut generic = OrderFn(|_: &SimState<'_>, w: &[usize]| (0..w.len()).collect());
            let slow = sim.run(&mut generic, rule).unwrap();
            assert_eq!(
                fast.jobs, slow.jobs,
                "seed {seed} {rule}: fcfs fast vs generic"
            );
            assert_eq!(fast.series, slow.series);
            let fast = sim.run(&mut SjfKey, rule).unwrap();
            let slow = sim.run(&mut sjf_dynamic(), rule).unwrap();
            check_invariants(&sim, &fast);
            assert_eq!(
                fast.jobs, slow.jobs,
                "seed {seed} {rule}: sjf fast vs generic"
            );
        }
        // Strict FCFS never lets a later submit start first.
        let strict = sim.run(&mut Fcfs, StartRule::Strict).unwrap();
        let mut by_arrival: Vec<usize> = (0..sim.jobs().len()).collect();
        by_arrival.sort_by_key(|&j| (sim.jobs()[j].submit, j));
        assert!(by_arrival
            .windows(2)
            .all(|w| strict.jobs[w[0]].start <= strict.jobs[w[1]].start));
    }
}

// A policy can turn every step into a valid SPEC instance (for a solver or a language model):
// running jobs end at start + walltime, the queue is the waiting jobs with their true runtime.
#[test]
fn snapshots_are_valid_instances() {
    let sim = random_sim(99, 150, 2);
    let mut steps = 0;
    let mut policy = OrderFn(|state: &SimState<'_>, waiting: &[usize]| {
        let instance = state.snapshot();
        let problem = Problem::new(&instance).expect("snapshot is valid");
        assert_eq!(problem.jobs(), waiting.len());
        assert_eq!(instance.now, state.now());
        assert_eq!(instance.running.len(), state.running().len());
        for (q, &j) in instance.queue.iter().zip(waiting) {
            assert_eq!(q.id, state.jobs()[j].id);
            assert_eq!(q.runtime, Some(state.jobs()[j].runtime));
        }
        for r in state.running() {
            assert!(r.walltime_end > state.now());
            assert_eq!(r.walltime_end, r.start + state.jobs()[r.job].walltime);
        }
        steps += 1;
        (0..waiting.len()).rev().collect()
    });
    let r = sim.run(&mut policy, StartRule::Conservative).unwrap();
    check_invariants(&sim, &r);
    assert!(steps > 10);
}

#[test]
fn bad_orders_and_bad_setups_are_errors() {
    let sim = Simulation::new(vec!["cores".into()], pool(4), jobs(BASIC)).unwrap();
    let mut short = OrderFn(|_: &SimState<'_>, _: &[usize]| Vec::new());
    let err = sim.run(&mut short, StartRule::Easy).unwrap_err();
    assert!(matches!(err, SimError::BadOrder { .. }), "{err}");
    let mut dup = OrderFn(|_: &SimState<'_>, w: &[usize]| vec![0; w.len()]);
    // One waiting job at a time until c arrives at 20 next to b.
    let err = sim.run(&mut dup, StartRule::Strict).unwrap_err();
    assert!(err.to_string().contains("twice"), "{err}");

    let err = Simulation::new(
        vec!["cores".into()],
        pool(4),
        jobs(&[("big", 0, 5, 10, 10)]),
    )
    .unwrap_err();
    assert!(err.to_string().contains("\"big\""), "{err}");
    let err =
        Simulation::new(vec!["cores".into()], pool(4), jobs(&[("z", 0, 1, 0, 1)])).unwrap_err();
    assert!(matches!(err, SimError::BadWalltime { .. }), "{err}");
    let err =
        Simulation::new(vec!["cores".into()], pool(4), jobs(&[("z", 0, 1, 5, -1)])).unwrap_err();
    assert!(matches!(err, SimError::BadRuntime { .. }), "{err}");
    let err = Simulation::new(
        vec!["cores".into()],
        pool(4),
        jobs(&[("z", 0, 1, 5, 1), ("z", 1, 1, 5, 1)]),
    )
    .unwrap_err();
    assert_eq!(err, SimError::DuplicateId("z".into()));
    let mut two = jobs(&[("z", 0, 1, 5, 1)]);
    two[0].demand = vec![1, 1];
    let err = Simulation::new(vec!["cores".into()], pool(4), two).unwrap_err();
    assert!(matches!(err, SimError::DemandShape { .. }), "{err}");
}

// Zero-length jobs and an empty trace are fine.
#[test]
fn zero_runtime_and_empty_trace() {
    let r = replay(
        pool(1),
        &[("a", 0, 1, 10, 0), ("b", 0, 1, 10, 5)],
        StartRule::Easy,
    );
    expect(&r, &[("a", 0), ("b", 0)]);
    assert_eq!(r.jobs[0].end, 0);
    assert_eq!(r.series.time, vec![0, 5]);
    let sim = Simulation::new(vec!["cores".into()], pool(1), Vec::new()).unwrap();
    let r = sim.run(&mut Fcfs, StartRule::Easy).unwrap();
    assert_eq!(r.summary.jobs, 0);
    assert!(r.series.is_empty());
}
