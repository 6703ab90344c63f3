//! Hand-computed cases for the dispatcher of SPEC section 3, the order repair of section 2 and
//! the objectives of section 4. Every expected start and server below was worked out by hand
//! from SPEC; the reasoning is in the comment above each case.

use schedlm_model::{
    bounded_slowdown, dispatch, order_from_ids, repair, Dispatcher, Instance, Objective,
    Objectives, OrderError, Placement, Problem, Schedule, Time, Variant, TAU,
};

fn problem(json: &str) -> Problem {
    let instance = Instance::from_json(json).expect("test instance parses");
    Problem::new(&instance).expect("test instance is valid")
}

fn order(p: &Problem, ids: &[&str]) -> Vec<usize> {
    order_from_ids(p, ids).expect("test order is a permutation")
}

fn run(p: &Problem, ids: &[&str], variant: Variant) -> Schedule {
    dispatch(p, &order(p, ids), variant).expect("dispatch succeeds")
}

/// Asserts that job `id` starts at `start` on server `server`.
fn assert_at(p: &Problem, s: &Schedule, id: &str, start: Time, server: &str) {
    let j = p.job_index(id).unwrap();
    assert_eq!(
        (s.start[j], p.server_id(s.server[j])),
        (start, server),
        "job {id}: (start, server)"
    );
}

fn ids_of(p: &Problem, order: &[usize]) -> Vec<String> {
    order.iter().map(|&j| p.job_id(j).to_string()).collect()
}

// One server with 4 cores; r holds all 4 until 10.
// a (4 cores, p=5): r occupies [0,10), half-open, so r's cores are free at 10 itself: a starts
// at 10, not 11. b (4 cores, p=3) placed after a: a occupies [10,15), so b starts at 15 exactly.
const HALF_OPEN: &str = r#"{
  "now": 0, "resources": ["cores"],
  "servers": [{"id": "n0", "capacity": [4]}],
  "running": [{"id": "r", "server": "n0", "demand": [4], "end": 10}],
  "queue": [{"id": "a", "submit": 0, "demand": [4], "walltime": 5},
            {"id": "b", "submit": 0, "demand": [4], "walltime": 3}]
}"#;

#[test]
fn half_open_intervals_running_and_placed() {
    let p = problem(HALF_OPEN);
    for variant in [Variant::Serial, Variant::Strict] {
        let s = run(&p, &["a", "b"], variant);
        assert_at(&p, &s, "a", 10, "n0");
        assert_at(&p, &s, "b", 15, "n0");
        assert_eq!(s.end(&p, 0), 15);
        assert_eq!(s.end(&p, 1), 18);
    }
    // Reversed order: b takes [10,13) first, then a starts at 13 when b ends.
    let s = run(&p, &["b", "a"], Variant::Serial);
    assert_at(&p, &s, "b", 10, "n0");
    assert_at(&p, &s, "a", 13, "n0");
    // Through the incremental API: before anything is placed both jobs could start at 10.
    let mut d = Dispatcher::new(&p, Variant::Serial);
    assert_eq!(
        d.earliest(1),
        Placement {
            start: 10,
            server: 0
        }
    );
    assert_eq!(
        d.place(0),
        Placement {
            start: 10,
            server: 0
        }
    );
    assert_eq!(
        d.earliest(1),
        Placement {
            start: 15,
            server: 0
        }
    );
}

// One server with 4 cores; r holds all 4 until 10.
// Order A, B, D, C:
// - A (2 cores, p=5): earliest at 10 (r frees everything) -> [10,15), 2 cores used.
// - B (4 cores, p=10): at 10 only 2 are free; at 15 (end of A) all 4 -> [15,25).
// - D (2 cores, p=6): at 10, [10,15) has 2 free but [15,16) overlaps B (4 used) -> no;
//   at 15 B blocks; at 25 (end of B) free -> 25. D does not fit into the hole before B.
// - C (2 cores, p=5): at 10, [10,15) has 2 free, and C ends at 15 = start of B (half-open)
//   -> C backfills into the hole at 10, before the later-ending B and D.
const HOLE: &str = r#"{
  "now": 0, "resources": ["cores"],
  "servers": [{"id": "n0", "capacity": [4]}],
  "running": [{"id": "r", "server": "n0", "demand": [4], "end": 10}],
  "queue": [{"id": "A", "submit": 0, "demand": [2], "walltime": 5},
            {"id": "B", "submit": 0, "demand": [4], "walltime": 10},
            {"id": "C", "submit": 0, "demand": [2], "walltime": 5},
            {"id": "D", "submit": 0, "demand": [2], "walltime": 6}]
}"#;

#[test]
fn backfilling_into_a_hole_before_a_later_job() {
    let p = problem(HOLE);
    let s = run(&p, &["A", "B", "D", "C"], Variant::Serial);
    assert_at(&p, &s, "A", 10, "n0");
    assert_at(&p, &s, "B", 15, "n0");
    assert_at(&p, &s, "D", 25, "n0");
    assert_at(&p, &s, "C", 10, "n0");
    assert_eq!(ids_of(&p, &s.order), ["A", "B", "D", "C"]);
    // Strict: each job starts no earlier than the previous one.
    // A 10, B 15 (as before), D >= 15: blocked by B until 25 -> 25, C >= 25: free -> 25.
    let s = run(&p, &["A", "B", "D", "C"], Variant::Strict);
    assert_at(&p, &s, "A", 10, "n0");
    assert_at(&p, &s, "B", 15, "n0");
    assert_at(&p, &s, "D", 25, "n0");
    assert_at(&p, &s, "C", 25, "n0");
}

// One server with 8 cores; r (2 cores) runs until 50, so 6 cores are free from now = 0.
// a depends on the running job r, b on the queued job a; c is free.
// Order [b, c, a] lists b before its dependency a. Repair (SPEC 2): remaining [b, c, a]:
// b waits for a, c is ready -> take c; remaining [b, a]: b still waits, a is ready (its only
// dependency is running, which does not count) -> a; then b. Repaired order: [c, a, b].
// - c (2 cores, p=5): 0 (6 cores free).
// - a (2 cores, p=10): lower bound = end of r = 50, capacity free -> 50, ends 60.
// - b (2 cores, p=5): lower bound = end of a = 60 -> 60.
// Without the dependencies everything would start at 0 (2 + 2 + 2 + 2 <= 8).
const DEPS: &str = r#"{
  "now": 0, "resources": ["cores"],
  "servers": [{"id": "n0", "capacity": [8]}],
  "running": [{"id": "r", "server": "n0", "demand": [2], "end": 50}],
  "queue": [{"id": "a", "submit": 0, "demand": [2], "walltime": 10, "deps": ["r"]},
            {"id": "b", "submit": 0, "demand": [2], "walltime": 5, "deps": ["a"]},
            {"id": "c", "submit": 0, "demand": [2], "walltime": 5}]
}"#;

#[test]
fn dependencies_on_running_and_queued_jobs_with_repair() {
    let p = problem(DEPS);
    assert_eq!(p.released(0), 50);
    assert_eq!(p.released(1), 0);
    assert_eq!(p.deps(1), &[0]);
    assert!(
        p.deps(0).is_empty(),
        "running dependencies are not queue deps"
    );
    let o = order(&p, &["b", "c", "a"]);
    assert_eq!(ids_of(&p, &repair(&p, &o)), ["c", "a", "b"]);
    for variant in [Variant::Serial, Variant::Strict] {
        let s = dispatch(&p, &o, variant).unwrap();
        assert_eq!(ids_of(&p, &s.order), ["c", "a", "b"]);
        assert_at(&p, &s, "c", 0, "n0");
        assert_at(&p, &s, "a", 50, "n0");
        assert_at(&p, &s, "b", 60, "n0");
    }
    // An order that already respects the dependencies is left alone: [a, c, b].
    // Serial: a 50, c 0 (backfills), b 60. Strict: a 50, c >= 50 -> 50, b 60.
    let o = order(&p, &["a", "c", "b"]);
    assert_eq!(repair(&p, &o), o);
    let s = dispatch(&p, &o, Variant::Serial).unwrap();
    assert_at(&p, &s, "c", 0, "n0");
    let s = dispatch(&p, &o, Variant::Strict).unwrap();
    assert_at(&p, &s, "a", 50, "n0");
    assert_at(&p, &s, "c", 50, "n0");
    assert_at(&p, &s, "b", 60, "n0");
}

// Queue x, y, z, w with z -> x (z depends on x) and y -> z. Order [y, z, w, x]:
// pass 1: y waits for z, z waits for x, w ready -> w;  remaining [y, z, x]
// pass 2: y waits, z waits, x ready -> x;             remaining [y, z]
// pass 3: y waits for z, z ready -> z;                 remaining [y]
// pass 4: y.  Result [w, x, z, y] (the first ready job each time, not a stable topo sort).
#[test]
fn repair_takes_the_first_ready_job_each_time() {
    let p = problem(
        r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [1]}],
            "queue": [{"id": "x", "submit": 0, "demand": [1], "walltime": 1},
                      {"id": "y", "submit": 0, "demand": [1], "walltime": 1, "deps": ["z"]},
                      {"id": "z", "submit": 0, "demand": [1], "walltime": 1, "deps": ["x"]},
                      {"id": "w", "submit": 0, "demand": [1], "walltime": 1}]}"#,
    );
    let o = order(&p, &["y", "z", "w", "x"]);
    assert_eq!(ids_of(&p, &repair(&p, &o)), ["w", "x", "z", "y"]);
    // One core, unit jobs placed back to back: w 0, x 1, z 2, y 3.
    let s = dispatch(&p, &o, Variant::Serial).unwrap();
    assert_eq!(s.start, vec![1, 3, 2, 0]);
}

// One server with 4 cores; r (3 cores) runs until 20.
// Order A, B, C. A (4 cores, p=10) must wait for r: [20,30).
// Serial: B (1 core, p=5) fits next to r at 0: 3 + 1 <= 4 -> 0, [0,5).
//         C (1 core, p=5): at 0, r + B = 4 -> no room; at 5 (end of B) r + C = 4 -> 5.
// Strict: B >= start of A = 20: [20,25) overlaps A (4 cores) -> no; at 30 (end of A) -> 30.
//         C >= start of B = 30: [30,35) holds B (1 core) + C = 2 <= 4 -> 30, i.e. t equal to
//         the previous start is allowed (>=, not >), and strict does not wait for B's end.
const STRICT: &str = r#"{
  "now": 0, "resources": ["cores"],
  "servers": [{"id": "n0", "capacity": [4]}],
  "running": [{"id": "r", "server": "n0", "demand": [3], "end": 20}],
  "queue": [{"id": "A", "submit": 0, "demand": [4], "walltime": 10},
            {"id": "B", "submit": 0, "demand": [1], "walltime": 5},
            {"id": "C", "submit": 0, "demand": [1], "walltime": 5}]
}"#;

#[test]
fn strict_variant_never_overtakes() {
    let p = problem(STRICT);
    let s = run(&p, &["A", "B", "C"], Variant::Serial);
    assert_at(&p, &s, "A", 20, "n0");
    assert_at(&p, &s, "B", 0, "n0");
    assert_at(&p, &s, "C", 5, "n0");
    let s = run(&p, &["A", "B", "C"], Variant::Strict);
    assert_at(&p, &s, "A", 20, "n0");
    assert_at(&p, &s, "B", 30, "n0");
    assert_at(&p, &s, "C", 30, "n0");
    // The lower bound seen through the incremental API.
    let mut d = Dispatcher::new(&p, Variant::Strict);
    assert_eq!(d.variant(), Variant::Strict);
    assert_eq!(d.lower_bound(1), 0);
    d.place(0);
    assert_eq!(d.lower_bound(1), 20);
    assert_eq!(
        d.earliest(1),
        Placement {
            start: 30,
            server: 0
        }
    );
}

// Servers n0 (4 cores), n1 (4 cores), n2 (8 cores); r0 holds n0 fully until 50, r1 holds 2
// cores of n1 until 20. Order a, b, c, d, e:
// - a (2, p=10): n0 -> 50; n1 -> 0 (2 + 2 <= 4); n2 -> 0. Earliest t = 0, first feasible
//   server there is n1: a later server (n1) beats n0 because it allows an earlier start, and
//   n1 beats n2 on the tie at 0 by instance order. a = n1 [0,10).
// - b (8, p=10): fits only n2 (n0, n1 have 4 cores) -> n2 at 0, [0,10).
// - c (4, p=5): n0 -> 50; n1: [0,10) r1+a = 4 used, [10,20) r1 = 2 used -> 20;
//   n2: b until 10 -> 10. c = n2 at 10, [10,15).
// - d (4, p=5): n0 50; n1 20; n2 at 10: c 4 + d 4 = 8 <= 8 -> n2 at 10.
// - e (2, p=30): n0 50; n1 at 10: [10,20) r1 2 + 2 = 4 ok, [20,40) free -> 10;
//   n2 at 10: c + d = 8 -> no; at 15 -> 15. e = n1 at 10.
const HETERO: &str = r#"{
  "now": 0, "resources": ["cores"],
  "servers": [{"id": "n0", "capacity": [4]},
              {"id": "n1", "capacity": [4]},
              {"id": "n2", "capacity": [8]}],
  "running": [{"id": "r0", "server": "n0", "demand": [4], "end": 50},
              {"id": "r1", "server": "n1", "demand": [2], "end": 20}],
  "queue": [{"id": "a", "submit": 0, "demand": [2], "walltime": 10},
            {"id": "b", "submit": 0, "demand": [8], "walltime": 10},
            {"id": "c", "submit": 0, "demand": [4], "walltime": 5},
            {"id": "d", "submit": 0, "demand": [4], "walltime": 5},
            {"id": "e", "submit": 0, "demand": [2], "walltime": 30}]
}"#;

#[test]
fn heterogeneous_servers_first_feasible_at_earliest_time() {
    let p = problem(HETERO);
    assert!(!p.fits(1, 0) && !p.fits(1, 1) && p.fits(1, 2));
    let s = run(&p, &["a", "b", "c", "d", "e"], Variant::Serial);
    assert_at(&p, &s, "a", 0, "n1");
    assert_at(&p, &s, "b", 0, "n2");
    assert_at(&p, &s, "c", 10, "n2");
    assert_at(&p, &s, "d", 10, "n2");
    assert_at(&p, &s, "e", 10, "n1");
}

// Two resources where the server order matters for ties: n0 (8 cores, 0 gpus), n1 (4, 2),
// n2 (8, 2); r holds all of n2 until 30. Order g, c, e, f:
// - g (2 cores, 1 gpu, p=10): n0 has no gpu; n1 at 0 -> n1 [0,10).
// - c (4, 0, p=10): n0 at 0 (first server) -> n0 [0,10).
// - e (8, 0, p=5): n0: c uses 4 until 10 -> 10; n1 has only 4 cores; n2: 30 -> n0 at 10.
// - f (4, 2, p=5): n0 no gpus; n1: g holds 2 cores and 1 gpu until 10 -> 10; n2: 30 -> n1 10.
#[test]
fn heterogeneous_servers_with_two_resources() {
    let p = problem(
        r#"{"now": 0, "resources": ["cores", "gpus"],
            "servers": [{"id": "n0", "capacity": [8, 0]},
                        {"id": "n1", "capacity": [4, 2]},
                        {"id": "n2", "capacity": [8, 2]}],
            "running": [{"id": "r", "server": "n2", "demand": [8, 2], "end": 30}],
            "queue": [{"id": "g", "submit": 0, "demand": [2, 1], "walltime": 10},
                      {"id": "c", "submit": 0, "demand": [4, 0], "walltime": 10},
                      {"id": "e", "submit": 0, "demand": [8, 0], "walltime": 5},
                      {"id": "f", "submit": 0, "demand": [4, 2], "walltime": 5}]}"#,
    );
    let s = run(&p, &["g", "c", "e", "f"], Variant::Serial);
    assert_at(&p, &s, "g", 0, "n1");
    assert_at(&p, &s, "c", 0, "n0");
    assert_at(&p, &s, "e", 10, "n0");
    assert_at(&p, &s, "f", 10, "n1");
}

// One server (8 cores, 16 GiB, 1 gpu); r holds (1, 1, 1) until 40. Order x, y, z:
// - x (1, 1, 1, p=10): cores and memory are free but the only gpu is r's -> 40, [40,50).
// - y (1, 16, 0, p=5): cores and gpus are fine but memory: at 0, r's 1 + 16 > 16; at 40,
//   x's 1 + 16 > 16; at 50 free -> 50.
// - z (7, 15, 0, p=5): at 0, cores 1 + 7 = 8, memory 1 + 15 = 16, gpus 1 + 0 = 1: exactly
//   full in every resource, allowed -> 0.
#[test]
fn one_resource_blocks_even_when_others_are_free() {
    let p = problem(
        r#"{"now": 0, "resources": ["cores", "mem_gib", "gpus"],
            "servers": [{"id": "n0", "capacity": [8, 16, 1]}],
            "running": [{"id": "r", "server": "n0", "demand": [1, 1, 1], "end": 40}],
            "queue": [{"id": "x", "submit": 0, "demand": [1, 1, 1], "walltime": 10},
                      {"id": "y", "submit": 0, "demand": [1, 16, 0], "walltime": 5},
                      {"id": "z", "submit": 0, "demand": [7, 15, 0], "walltime": 5}]}"#,
    );
    let s = run(&p, &["x", "y", "z"], Variant::Serial);
    assert_at(&p, &s, "x", 40, "n0");
    assert_at(&p, &s, "y", 50, "n0");
    assert_at(&p, &s, "z", 0, "n0");
}

/// `earliest` of every job (all ready: the instance has no dependencies).
fn all_earliest(d: &Dispatcher) -> Vec<Placement> {
    (0..d.problem().jobs()).map(|j| d.earliest(j)).collect()
}

#[test]
fn place_and_undo_return_to_the_identical_state() {
    let p = problem(HETERO);
    let o = order(&p, &["a", "b", "c", "d", "e"]);
    let full = dispatch(&p, &o, Variant::Serial).unwrap();
    let mut d = Dispatcher::new(&p, Variant::Serial);
    let empty = all_earliest(&d);
    let empty_schedule = d.schedule();
    assert!(d.is_empty());
    assert_eq!(d.undo(), None);
    for k in 0..o.len() {
        let before = all_earliest(&d);
        let schedule = d.schedule();
        // Place the rest, then undo back to k jobs.
        for &j in &o[k..] {
            d.place(j);
        }
        assert_eq!(d.schedule(), full);
        for &j in o[k..].iter().rev() {
            assert_eq!(d.undo(), Some(j));
        }
        assert_eq!(d.len(), k);
        assert_eq!(all_earliest(&d), before, "earliest after undo back to {k}");
        assert_eq!(d.schedule(), schedule);
        for &j in &o[k..] {
            assert!(!d.is_placed(j));
            assert_eq!(d.start(j), Time::MIN);
        }
        d.place(o[k]);
    }
    d.truncate(0);
    assert!(d.is_empty());
    assert_eq!(all_earliest(&d), empty);
    assert_eq!(d.schedule(), empty_schedule);
    // The values the state holds at a few points, checked by hand (see HETERO):
    // empty: a -> n1 at 0; b -> n2 at 0; c (4 cores): n0 50, n1 20 (r1 leaves only 2 cores
    // until 20), n2 0 -> n2 at 0.
    assert_eq!(
        empty[0],
        Placement {
            start: 0,
            server: 1
        }
    );
    assert_eq!(
        empty[1],
        Placement {
            start: 0,
            server: 2
        }
    );
    assert_eq!(
        empty[2],
        Placement {
            start: 0,
            server: 2
        }
    );
    // After a and b: c -> n2 at 10 (see the case above).
    d.place(0);
    d.place(1);
    assert_eq!(
        d.earliest(2),
        Placement {
            start: 10,
            server: 2
        }
    );
    // Put d on n2 over [10,15) (4 cores) and e on n2 over [12,42) (2 cores, not where the
    // dispatcher would put it). n2 then uses 8 on [0,10), 4 on [10,12), 6 on [12,15), 2 on
    // [15,42): c (4 cores, p=5) at 10 hits 6 + 4 > 8 on [12,15), moves to 15, and
    // [15,20) has 2 + 4 <= 8 -> n2 at 15 (n1 would give 20). Undo both: back to n2 at 10.
    let before = all_earliest(&d);
    let schedule = d.schedule();
    d.place_at(
        3,
        Placement {
            start: 10,
            server: 2,
        },
    );
    d.place_at(
        4,
        Placement {
            start: 12,
            server: 2,
        },
    );
    assert_eq!(
        d.earliest(2),
        Placement {
            start: 15,
            server: 2
        }
    );
    assert_eq!(d.undo(), Some(4));
    assert_eq!(d.undo(), Some(3));
    assert_eq!(all_earliest(&d), before);
    assert_eq!(d.schedule(), schedule);
}

// now = 100, one server with 1 core, no running jobs; order a, b, c runs them back to back.
// - a: submit 100, p 5, weight 1:  S 100, C 105, wait 0,  bsld max((0 + 5) / max(5, 10), 1)
//   = max(0.5, 1) = 1 (both the tau and the max(., 1) matter here).
// - b: submit 50, p 20, weight 3:  S 105, C 125, wait 55, bsld (55 + 20) / 20 = 3.75.
// - c: submit 90, p 10, weight 2:  S 125, C 135, wait 35, bsld (35 + 10) / 10 = 4.5.
// bsld = (1 + 3.75 + 4.5) / 3 = 9.25 / 3;  wait = (0 + 55 + 35) / 3 = 30;
// flow = (1 * 5 + 3 * 75 + 2 * 45) / (1 + 3 + 2) = 320 / 6 (unweighted would be 125 / 3);
// makespan = 135 - 100 = 35.
const OBJECTIVES: &str = r#"{
  "now": 100, "resources": ["cores"],
  "servers": [{"id": "n0", "capacity": [1]}],
  "queue": [{"id": "a", "submit": 100, "demand": [1], "walltime": 5},
            {"id": "b", "submit": 50, "demand": [1], "walltime": 20, "weight": 3},
            {"id": "c", "submit": 90, "demand": [1], "walltime": 10, "weight": 2}]
}"#;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

#[test]
fn objectives_by_hand() {
    assert_eq!(TAU, 10);
    let p = problem(OBJECTIVES);
    let s = run(&p, &["a", "b", "c"], Variant::Serial);
    assert_eq!(s.start, vec![100, 105, 125]);
    assert_eq!(bounded_slowdown(&p, 0, 100), 1.0);
    assert_eq!(bounded_slowdown(&p, 1, 105), 3.75);
    assert_eq!(bounded_slowdown(&p, 2, 125), 4.5);
    let expected = [
        (Objective::Bsld, 9.25 / 3.0),
        (Objective::Wait, 30.0),
        (Objective::Flow, 320.0 / 6.0),
        (Objective::Makespan, 35.0),
    ];
    let all = Objectives::of(&p, &s.start);
    for (objective, value) in expected {
        let got = objective.value(&p, &s.start);
        assert!(close(got, value), "{objective}: {got} != {value}");
        assert_eq!(all.get(objective), got);
    }
    // A second order, c, b, a: c 100..110, b 110..130, a 130..135.
    // bsld: c (10 + 10) / 10 = 2; b (60 + 20) / 20 = 4; a (30 + 5) / 10 = 3.5 -> 9.5 / 3.
    // wait (10 + 60 + 30) / 3; flow (2 * 20 + 3 * 80 + 1 * 35) / 6 = 315 / 6; makespan 35.
    let s = run(&p, &["c", "b", "a"], Variant::Serial);
    assert_eq!(s.start, vec![130, 110, 100]);
    let all = Objectives::of(&p, &s.start);
    assert!(close(all.bsld, 9.5 / 3.0), "{}", all.bsld);
    assert!(close(all.wait, 100.0 / 3.0), "{}", all.wait);
    assert!(close(all.flow, 315.0 / 6.0), "{}", all.flow);
    assert_eq!(all.makespan, 35.0);
}

#[test]
fn orders_that_are_not_permutations_are_rejected() {
    let p = problem(OBJECTIVES);
    assert_eq!(
        dispatch(&p, &[0, 0, 1], Variant::Serial),
        Err(OrderError::Duplicate("a".into()))
    );
    assert_eq!(
        dispatch(&p, &[0, 1], Variant::Serial),
        Err(OrderError::Missing("c".into()))
    );
    assert_eq!(
        dispatch(&p, &[0, 1, 7], Variant::Serial),
        Err(OrderError::OutOfRange(7))
    );
    assert_eq!(
        order_from_ids(&p, &["a", "b", "zz"]),
        Err(OrderError::UnknownJob("zz".into()))
    );
}
