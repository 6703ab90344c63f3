//! `schedlm schedule` checked against SPEC sections 2, 3, 4 and 6, recomputed independently by
//! `common::reference` (which shares no code with the crates under test).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::reference::{self as spec, Instance};
use common::{
    generate_file, path_str, read_jsonl, reported_lines, run, run_stdin, tempdir, POLICIES,
};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// The reference itself, on schedules computed by hand.

fn inst(v: Value) -> Instance {
    Instance::from_json(&v)
}

#[test]
fn reference_dispatcher_on_hand_computed_cases() {
    // One 4-core server; r holds 2 cores until 100.
    let i = inst(json!({
        "now": 0, "resources": ["cores"],
        "servers": [{"id": "n0", "capacity": [4]}],
        "running": [{"id": "r", "server": "n0", "demand": [2], "end": 100}],
        "queue": [
            {"id": "a", "submit": 0, "demand": [4], "walltime": 10},
            {"id": "b", "submit": 0, "demand": [2], "walltime": 50},
            {"id": "c", "submit": 0, "demand": [2], "walltime": 200}
        ]
    }));
    // Serial: a waits for r (100..110); b backfills at 0 (ends 50 <= 100); c (200 s) would
    // overlap a at 100, so it waits until a ends at 110.
    let p = spec::dispatch(&i, &[0, 1, 2], false);
    assert_eq!(p.start, vec![100, 0, 110]);
    // Strict: nothing starts before the previous start.
    // b cannot run beside a on [100, 110), so it starts at 110, and c with it.
    let p = spec::dispatch(&i, &[0, 1, 2], true);
    assert_eq!(p.start, vec![100, 110, 110]);
    // A job ending at t frees its resources at t.
    let p = spec::dispatch(&i, &[1, 0, 2], false);
    assert_eq!(p.start, vec![100, 0, 110]);

    // Two servers: the first in instance order wins a tie; a job that fits only the second
    // goes there.
    let i = inst(json!({
        "now": 10, "resources": ["cores", "gpus"],
        "servers": [{"id": "s0", "capacity": [4, 0]}, {"id": "s1", "capacity": [4, 1]}],
        "queue": [
            {"id": "g", "submit": 0, "demand": [1, 1], "walltime": 5},
            {"id": "x", "submit": 0, "demand": [4, 0], "walltime": 5},
            {"id": "y", "submit": 0, "demand": [4, 0], "walltime": 5},
            {"id": "z", "submit": 0, "demand": [4, 0], "walltime": 5}
        ]
    }));
    let p = spec::dispatch(&i, &[0, 1, 2, 3], false);
    assert_eq!(p.server, vec![1, 0, 0, 1]);
    assert_eq!(p.start, vec![10, 10, 15, 15]);

    // Dependencies: on a running job (released at its end) and on a queued job.
    let i = inst(json!({
        "now": 0, "resources": ["cores"],
        "servers": [{"id": "n0", "capacity": [10]}],
        "running": [{"id": "r", "server": "n0", "demand": [1], "end": 30}],
        "queue": [
            {"id": "a", "submit": 0, "demand": [1], "walltime": 10, "deps": ["r"]},
            {"id": "b", "submit": 0, "demand": [1], "walltime": 10, "deps": ["a"]},
            {"id": "c", "submit": 0, "demand": [1], "walltime": 10}
        ]
    }));
    assert_eq!(spec::dispatch(&i, &[0, 1, 2], false).start, vec![30, 40, 0]);
    assert_eq!(spec::dispatch(&i, &[0, 1, 2], true).start, vec![30, 40, 40]);
    // Repair of SPEC section 2.
    assert_eq!(spec::repair(&i, &[1, 2, 0]), vec![2, 0, 1]);
    assert_eq!(spec::repair(&i, &[1, 0, 2]), vec![0, 1, 2]);

    // Objectives: a 5 s job waiting 10 s has bsld (10 + 5) / 10 = 1.5.
    let i = inst(json!({
        "now": 100, "resources": ["cores"],
        "servers": [{"id": "n0", "capacity": [1]}],
        "queue": [
            {"id": "a", "submit": 90, "demand": [1], "walltime": 5, "weight": 3},
            {"id": "b", "submit": 100, "demand": [1], "walltime": 100}
        ]
    }));
    let o = spec::objectives(&i, &[100, 105]);
    assert_eq!(o.bsld, (1.5 + 1.05) / 2.0);
    assert_eq!(o.wait, (10.0 + 5.0) / 2.0);
    assert_eq!(o.flow, (3.0 * 15.0 + 105.0) / 4.0);
    assert_eq!(o.makespan, 105.0);
}

#[test]
fn reference_rules_on_hand_computed_cases() {
    // now = 1000; (submit, cores, walltime): a (100, 4, 400), b (500, 1, 100),
    // c (900, 16, 50), d (100, 2, 3600), e (1000, 0, 100).
    let i = inst(json!({
        "now": 1000, "resources": ["cores"],
        "servers": [{"id": "n0", "capacity": [16]}],
        "queue": [
            {"id": "a", "submit": 100, "demand": [4], "walltime": 400},
            {"id": "b", "submit": 500, "demand": [1], "walltime": 100},
            {"id": "c", "submit": 900, "demand": [16], "walltime": 50},
            {"id": "d", "submit": 100, "demand": [2], "walltime": 3600},
            {"id": "e", "submit": 1000, "demand": [0], "walltime": 100}
        ]
    }));
    let order = |rule| spec::rule_order(&i, rule, 0);
    assert_eq!(order("fcfs"), vec![0, 3, 1, 2, 4]);
    assert_eq!(order("sjf"), vec![2, 1, 4, 0, 3]); // b and e tie at 100: b submitted first
    assert_eq!(order("saf"), vec![4, 1, 2, 0, 3]); // areas 1600, 100, 800, 7200, 0
    assert_eq!(order("ljf"), vec![3, 0, 1, 4, 2]);
    // WFP3 -(w/r)^3 n: a -45.56, b -125, c -128, d -0.03, e -0 (ties nothing: 0 is last).
    assert_eq!(order("wfp3"), vec![2, 1, 0, 3, 4]);
    // UNICEP -w/(log2(n+1) r): a -0.969, b -5, c -0.489, d -0.158, e -0 (n = 0 -> 1).
    assert_eq!(order("unicep"), vec![1, 0, 2, 3, 4]);
    // F1 log10(r) n + 870 log10(s): a 1750.4, b 2350.2, c 2597.2, d 1747.1, e 2610 + 0.
    assert_eq!(order("f1"), vec![3, 0, 1, 2, 4]);
    // With origin 100, a and d have s' = 1: scores 10.4 and 7.1.
    assert_eq!(spec::rule_order(&i, "f1", 100), vec![3, 0, 1, 2, 4]);
    assert!((spec::score(&i, "f1", 100, 0) - 4.0 * 400f64.log10()).abs() < 1e-12);
    // Exact ties in WFP3 go to submit, then position: (w/r)^3 n equal for 2 jobs.
    let t = inst(json!({
        "now": 100, "resources": ["cores"],
        "servers": [{"id": "n0", "capacity": [16]}],
        "queue": [
            {"id": "late", "submit": 70, "demand": [8], "walltime": 30},
            {"id": "early", "submit": 40, "demand": [1], "walltime": 30}
        ]
    }));
    // late: (30/30)^3 * 8 = 8; early: (60/30)^3 * 1 = 8: a tie, so early (submit 40) first.
    assert_eq!(spec::rule_order(&t, "wfp3", 0), vec![1, 0]);
}

// ---------------------------------------------------------------------------------------------
// Checking the binary's output.

fn as_map<'a>(record: &'a Value, field: &str) -> &'a serde_json::Map<String, Value> {
    record[field]
        .as_object()
        .unwrap_or_else(|| panic!("`{field}` is not an object: {record}"))
}

/// Checks one output record against the instance it came from.
fn check_record(inst: &Instance, record: &Value, policy: &str, strict: bool, origin: i64) {
    let line = record["line"].as_u64().unwrap();
    let ctx = format!("line {line}, policy {policy}, strict {strict}");
    assert_eq!(record["policy"], json!(policy), "{ctx}");
    assert_eq!(
        record["variant"],
        json!(if strict { "strict" } else { "serial" }),
        "{ctx}"
    );

    // The order: a permutation of the queue that respects the dependencies.
    let ids: Vec<String> = record["order"]
        .as_array()
        .expect("order")
        .iter()
        .map(|x| x.as_str().expect("order entries are ids").to_string())
        .collect();
    let order = inst.indices(&ids);
    assert!(spec::is_permutation(inst, &order), "{ctx}: order {ids:?}");
    assert!(
        spec::respects_deps(inst, &order),
        "{ctx}: order {ids:?} breaks a dependency"
    );

    // A priority rule's order is its SPEC section 6 order, repaired by SPEC section 2.
    if policy != "random" {
        let expected = spec::repair(inst, &spec::rule_order(inst, policy, origin));
        if order != expected {
            let show = |o: &[usize]| -> Vec<String> {
                o.iter()
                    .map(|&j| {
                        let job = &inst.queue[j];
                        format!(
                            "{}(score {:e}, s {})",
                            job.id,
                            spec::score(inst, policy, origin, j),
                            job.submit
                        )
                    })
                    .collect()
            };
            panic!(
                "{ctx}: order differs from SPEC section 6\n  got      {:?}\n  expected {:?}",
                show(&order),
                show(&expected)
            );
        }
    }

    // The schedule of SPEC section 3 from that order.
    let placed = spec::dispatch(inst, &order, strict);
    let (starts, ends, servers) = (
        as_map(record, "starts"),
        as_map(record, "ends"),
        as_map(record, "servers"),
    );
    for m in [starts, ends, servers] {
        assert_eq!(m.len(), inst.queue.len(), "{ctx}: one entry per queued job");
    }
    let mut out_start = vec![0; inst.queue.len()];
    let mut out_server = vec![0; inst.queue.len()];
    for (j, job) in inst.queue.iter().enumerate() {
        let s = starts[&job.id]
            .as_i64()
            .unwrap_or_else(|| panic!("{ctx}: start of {}", job.id));
        let e = ends[&job.id]
            .as_i64()
            .unwrap_or_else(|| panic!("{ctx}: end of {}", job.id));
        let srv = servers[&job.id].as_str().unwrap();
        assert_eq!(
            e,
            s + job.walltime,
            "{ctx}: end of {} is start + walltime",
            job.id
        );
        assert_eq!(
            (s, srv),
            (placed.start[j], inst.servers[placed.server[j]].id.as_str()),
            "{ctx}: job {} (start, server) differs from SPEC section 3",
            job.id
        );
        out_start[j] = s;
        out_server[j] = inst.servers.iter().position(|x| x.id == srv).unwrap();
    }
    // Independently of the reference dispatcher: the schedule is feasible.
    if let Some(e) = spec::feasibility_error(inst, &out_start, &out_server) {
        panic!("{ctx}: infeasible schedule: {e}");
    }
    if strict {
        for w in order.windows(2) {
            assert!(
                out_start[w[0]] <= out_start[w[1]],
                "{ctx}: strict overtaking"
            );
        }
    }

    // The objectives of SPEC section 4.
    let want = spec::objectives(inst, &out_start);
    let got = &record["objectives"];
    for (name, value) in [
        ("bsld", want.bsld),
        ("wait", want.wait),
        ("flow", want.flow),
        ("makespan", want.makespan),
    ] {
        let g = got[name]
            .as_f64()
            .unwrap_or_else(|| panic!("{ctx}: objective {name} missing: {got}"));
        assert!(
            spec::close(g, value),
            "{ctx}: {name} is {g}, SPEC gives {value}"
        );
    }
}

/// Runs `schedule` on `input` and checks every record; returns the records.
fn schedule_and_check(input: &Path, policy: &str, strict: bool, extra: &[&str]) -> Vec<Value> {
    let origin: i64 = extra
        .iter()
        .position(|&a| a == "--origin")
        .map(|k| extra[k + 1].parse().unwrap())
        .unwrap_or(0);
    let file = path_str(input);
    let mut args = vec!["schedule", "--policy", policy];
    if strict {
        args.push("--strict");
    }
    args.extend_from_slice(extra);
    args.push(&file);
    let out = run(&args).ok();
    let records = common::parse_jsonl(&out.stdout_text());
    let text = std::fs::read_to_string(input).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let expected_lines: Vec<u64> = (1..=lines.len() as u64)
        .filter(|&n| !lines[n as usize - 1].trim().is_empty())
        .collect();
    let got_lines: Vec<u64> = records
        .iter()
        .map(|r| r["line"].as_u64().unwrap())
        .collect();
    assert_eq!(
        got_lines, expected_lines,
        "{args:?}: one record per instance, in file order"
    );
    for record in &records {
        let n = record["line"].as_u64().unwrap() as usize;
        let v: Value = serde_json::from_str(lines[n - 1]).unwrap();
        check_record(&Instance::from_json(&v), record, policy, strict, origin);
    }
    records
}

fn check_family(family: &str) {
    let dir = tempdir();
    let files = [
        generate_file(
            dir.path(),
            "plain.jsonl",
            &["--family", family, "-n", "12", "--seed", "21"],
        ),
        generate_file(
            dir.path(),
            "deps.jsonl",
            &[
                "--family", family, "-n", "12", "--seed", "22", "--deps", "0.3",
            ],
        ),
        generate_file(
            dir.path(),
            "small.jsonl",
            &[
                "--family",
                family,
                "-n",
                "12",
                "--seed",
                "23",
                "--queue",
                "3..5",
                "--servers",
                "2",
                "--load",
                "0.9",
                "--deps",
                "0.3",
            ],
        ),
    ];
    let mut repaired = 0;
    for file in &files {
        for policy in POLICIES {
            for strict in [false, true] {
                let records = schedule_and_check(file, policy, strict, &[]);
                // Count instances where the rule's own order broke a dependency, so that the
                // test knows the repair path was exercised.
                if policy != "random" {
                    for (r, v) in records.iter().zip(read_jsonl(file)) {
                        let i = Instance::from_json(&v);
                        let raw = spec::rule_order(&i, policy, 0);
                        let ids: Vec<String> = r["order"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|x| x.as_str().unwrap().to_string())
                            .collect();
                        if raw != i.indices(&ids) {
                            repaired += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(
        repaired > 0,
        "{family}: no rule order needed the dependency repair"
    );
}

#[test]
fn schedule_matches_spec_uniform() {
    check_family("uniform");
}

#[test]
fn schedule_matches_spec_hpc() {
    check_family("hpc");
}

#[test]
fn schedule_matches_spec_dl() {
    check_family("dl");
}

/// Hand-made instances for the corners the generator rarely reaches: weights, walltimes below
/// tau, zero first-resource demand (UNICEP's n = 0, WFP3's n = 0), submit = now, dependencies on
/// running jobs and on later queued jobs, exact score ties, jobs that fit only some servers.
fn corner_instances() -> Vec<Value> {
    vec![
        json!({
            "now": 1000, "resources": ["cores", "mem_gib"],
            "servers": [{"id": "small", "capacity": [4, 8]}, {"id": "big", "capacity": [16, 64]}],
            "running": [
                {"id": "r0", "server": "big", "demand": [12, 32], "end": 1300},
                {"id": "r1", "server": "small", "demand": [2, 2], "end": 1050}
            ],
            "queue": [
                {"id": "a", "submit": 100, "demand": [4], "walltime": 400, "weight": 2.0},
                {"id": "b", "submit": 500, "demand": [1, 1], "walltime": 5, "weight": 0.5,
                 "deps": ["r0"]},
                {"id": "c", "submit": 900, "demand": [16, 8], "walltime": 50},
                {"id": "d", "submit": 100, "demand": [2, 60], "walltime": 3600, "deps": ["e"]},
                {"id": "e", "submit": 700, "demand": [0, 4], "walltime": 100},
                {"id": "f", "submit": 1000, "demand": [0, 0], "walltime": 1},
                {"id": "g", "submit": 500, "demand": [1, 1], "walltime": 100, "deps": ["b", "r1"]}
            ]
        }),
        // Score ties everywhere: equal walltimes, equal areas, equal submits.
        json!({
            "now": 100, "resources": ["cores"],
            "servers": [{"id": "n0", "capacity": [8]}, {"id": "n1", "capacity": [8]}],
            "queue": [
                {"id": "late", "submit": 70, "demand": [8], "walltime": 30},
                {"id": "early", "submit": 40, "demand": [1], "walltime": 30},
                {"id": "same1", "submit": 40, "demand": [1], "walltime": 30},
                {"id": "wide", "submit": 70, "demand": [2], "walltime": 15},
                {"id": "now", "submit": 100, "demand": [3], "walltime": 9},
                {"id": "now2", "submit": 100, "demand": [3], "walltime": 9}
            ]
        }),
        // A long chain against the queue order, on a full machine.
        json!({
            "now": 0, "resources": ["cores"],
            "servers": [{"id": "n0", "capacity": [2]}],
            "running": [{"id": "r", "server": "n0", "demand": [2], "end": 7}],
            "queue": [
                {"id": "j3", "submit": 0, "demand": [1], "walltime": 3, "deps": ["j2"]},
                {"id": "j2", "submit": 0, "demand": [2], "walltime": 2, "deps": ["j1"]},
                {"id": "j1", "submit": 0, "demand": [1], "walltime": 8, "deps": ["r"]},
                {"id": "k", "submit": 0, "demand": [1], "walltime": 20},
                {"id": "m", "submit": 0, "demand": [1], "walltime": 1}
            ]
        }),
    ]
    .into_iter()
    .map(|mut v| {
        // "demand": [4] above is shorthand: pad to the resource count.
        let r = v["resources"].as_array().unwrap().len();
        for j in v["queue"].as_array_mut().unwrap() {
            let d = j["demand"].as_array_mut().unwrap();
            while d.len() < r {
                d.push(json!(1));
            }
        }
        v
    })
    .collect()
}

#[test]
fn schedule_matches_spec_on_corner_cases() {
    let dir = tempdir();
    let path = dir.path().join("corners.jsonl");
    let text: String = corner_instances()
        .iter()
        .map(|v| format!("{}\n", serde_json::to_string(v).unwrap()))
        .collect();
    std::fs::write(&path, &text).unwrap();
    run(&["validate", &path_str(&path)]).ok();
    for policy in POLICIES {
        for strict in [false, true] {
            schedule_and_check(&path, policy, strict, &[]);
        }
    }
    // F1 with an origin: s' = max(s - origin, 1).
    for origin in ["500", "-1000"] {
        schedule_and_check(&path, "f1", false, &["--origin", origin]);
    }
}

/// A tiny deterministic generator (SplitMix64), so the fuzz below needs no extra crate.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform on lo..=hi.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
}

/// A small valid instance with crowded times (many equal submits, ends and walltimes), zero
/// demands, heterogeneous servers, running jobs, and dependencies that point both forwards and
/// backwards in the queue (acyclic by a hidden random rank).
fn random_instance(rng: &mut Mix) -> Value {
    let resources = rng.range(1, 3) as usize;
    let now = 50;
    let servers: Vec<Vec<i64>> = (0..rng.range(1, 3))
        .map(|_| (0..resources).map(|_| rng.range(0, 6)).collect())
        .collect();
    let mut free = servers.clone();
    let mut running = Vec::new();
    for k in 0..rng.range(0, 4) {
        let s = rng.range(0, servers.len() as i64 - 1) as usize;
        let demand: Vec<i64> = free[s].iter().map(|&f| rng.range(0, f)).collect();
        for (f, d) in free[s].iter_mut().zip(&demand) {
            *f -= d;
        }
        running.push(json!({"id": format!("r{k}"), "server": format!("s{s}"),
                            "demand": demand, "end": rng.range(now + 1, now + 25)}));
    }
    let n = rng.range(1, 8) as usize;
    // rank[j]: a job may only depend on jobs of lower rank, so there is no cycle.
    let mut rank: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        rank.swap(i, rng.range(0, i as i64) as usize);
    }
    let queue: Vec<Value> = (0..n)
        .map(|j| {
            let s = rng.range(0, servers.len() as i64 - 1) as usize;
            let demand: Vec<i64> = servers[s].iter().map(|&c| rng.range(0, c)).collect();
            let mut deps: Vec<String> = Vec::new();
            for (k, &rk) in rank.iter().enumerate() {
                if rk < rank[j] && rng.range(0, 3) == 0 {
                    deps.push(format!("j{k}"));
                }
            }
            if !running.is_empty() && rng.range(0, 4) == 0 {
                deps.push(format!("r{}", rng.range(0, running.len() as i64 - 1)));
            }
            let mut job = json!({"id": format!("j{j}"), "submit": rng.range(now - 40, now),
                                 "demand": demand, "walltime": rng.range(1, 20)});
            if !deps.is_empty() {
                job["deps"] = json!(deps);
            }
            if rng.range(0, 2) == 0 {
                job["weight"] = json!(rng.range(1, 8) as f64 / 4.0);
            }
            job
        })
        .collect();
    let servers: Vec<Value> = servers
        .iter()
        .enumerate()
        .map(|(s, c)| json!({"id": format!("s{s}"), "capacity": c}))
        .collect();
    // Every queued demand was drawn within some server's capacity, so it fits one.
    json!({"now": now, "resources": (0..resources).map(|q| format!("q{q}")).collect::<Vec<_>>(),
           "servers": servers, "running": running, "queue": queue})
}

#[test]
fn schedule_matches_spec_on_random_small_instances() {
    let dir = tempdir();
    let path = dir.path().join("fuzz.jsonl");
    let mut rng = Mix(2024);
    let text: String = (0..300)
        .map(|_| {
            format!(
                "{}\n",
                serde_json::to_string(&random_instance(&mut rng)).unwrap()
            )
        })
        .collect();
    std::fs::write(&path, &text).unwrap();
    run(&["validate", &path_str(&path)]).ok();
    for policy in POLICIES {
        for strict in [false, true] {
            schedule_and_check(&path, policy, strict, &[]);
        }
    }
    schedule_and_check(&path, "f1", false, &["--origin", "30"]);
}

#[test]
fn f1_origin_is_used() {
    let dir = tempdir();
    let path = generate_file(
        dir.path(),
        "hpc.jsonl",
        &["--family", "hpc", "-n", "10", "--seed", "4"],
    );
    // An origin just below the earliest submit makes the log of the submit term much smaller,
    // so the size term matters more: the orders should change on some instance.
    let min_submit = read_jsonl(&path)
        .iter()
        .flat_map(|v| v["queue"].as_array().unwrap().clone())
        .map(|j| j["submit"].as_i64().unwrap())
        .min()
        .unwrap();
    let origin = (min_submit - 1).to_string();
    let base = schedule_and_check(&path, "f1", false, &[]);
    let shifted = schedule_and_check(&path, "f1", false, &["--origin", &origin]);
    assert!(
        base.iter()
            .zip(&shifted)
            .any(|(a, b)| a["order"] != b["order"]),
        "--origin {origin} changed no F1 order"
    );
}

#[test]
fn random_policy_is_seeded() {
    let dir = tempdir();
    let path = generate_file(
        dir.path(),
        "uniform.jsonl",
        &["--family", "uniform", "-n", "10"],
    );
    let file = path_str(&path);
    let order_of = |seed: &str| -> Vec<Value> {
        let out = run(&["schedule", "--policy", "random", "--seed", seed, &file]).ok();
        common::parse_jsonl(&out.stdout_text())
            .into_iter()
            .map(|r| r["order"].clone())
            .collect()
    };
    let a = order_of("5");
    assert_eq!(a, order_of("5"), "same seed, different orders");
    assert_ne!(
        a,
        order_of("6"),
        "seeds 5 and 6 give the same orders everywhere"
    );
    // Each instance gets its own stream: not every order is the queue order.
    let queue_order: Vec<Value> = read_jsonl(&path)
        .iter()
        .map(|v| {
            Value::Array(
                v["queue"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|j| j["id"].clone())
                    .collect(),
            )
        })
        .collect();
    assert_ne!(a, queue_order);
}

#[test]
fn output_file_and_stdin() {
    let dir = tempdir();
    let path = generate_file(
        dir.path(),
        "dl.jsonl",
        &["--family", "dl", "-n", "4", "--queue", "3..5"],
    );
    let file = path_str(&path);
    let out_path = dir.path().join("sub").join("out.jsonl");
    let to_file = run(&[
        "schedule",
        "--policy",
        "sjf",
        &file,
        "-o",
        &path_str(&out_path),
    ])
    .ok();
    assert!(to_file.stdout.is_empty());
    let to_stdout = run(&["schedule", "--policy", "sjf", &file]).ok();
    assert_eq!(std::fs::read(&out_path).unwrap(), to_stdout.stdout);
    let from_stdin = run_stdin(
        &["schedule", "--policy", "sjf", "-"],
        &std::fs::read_to_string(&path).unwrap(),
    )
    .ok();
    assert_eq!(from_stdin.stdout, to_stdout.stdout);
    // RAYON threads do not change the output.
    let one = common::run_env(
        &["schedule", "--policy", "wfp3", &file],
        &[("RAYON_NUM_THREADS", "1")],
    )
    .ok();
    let two = common::run_env(
        &["schedule", "--policy", "wfp3", &file],
        &[("RAYON_NUM_THREADS", "2")],
    )
    .ok();
    assert_eq!(one.stdout, two.stdout);
}

// ---------------------------------------------------------------------------------------------
// Invalid lines in the input.

#[test]
fn invalid_lines_are_reported_and_the_rest_is_scheduled() {
    let dir = tempdir();
    let good = generate_file(
        dir.path(),
        "good.jsonl",
        &[
            "--family", "hpc", "-n", "4", "--queue", "3..6", "--deps", "0.3",
        ],
    );
    let good_lines: Vec<String> = std::fs::read_to_string(&good)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let mut bad_instance: Value = serde_json::from_str(&good_lines[1]).unwrap();
    bad_instance["queue"][0]["submit"] = json!(bad_instance["now"].as_i64().unwrap() + 1);
    // Lines 1 good, 2 blank, 3 good, 4 malformed, 5 blank, 6 good, 7 invalid, 8 good.
    let lines = [
        good_lines[0].clone(),
        String::new(),
        good_lines[1].clone(),
        "{not json".to_string(),
        String::new(),
        good_lines[2].clone(),
        serde_json::to_string(&bad_instance).unwrap(),
        good_lines[3].clone(),
    ];
    let path = dir.path().join("mixed.jsonl");
    std::fs::write(
        &path,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    let file = path_str(&path);
    for policy in POLICIES {
        for strict in [false, true] {
            let mut args = vec!["schedule", "--policy", policy];
            if strict {
                args.push("--strict");
            }
            args.push(&file);
            let out = run(&args).failed();
            assert_eq!(
                reported_lines(&out.stderr, &file),
                vec![4, 7],
                "{}",
                out.stderr
            );
            assert!(out.stderr.contains("skipped") || out.stderr.contains("invalid"));
            let records = common::parse_jsonl(&out.stdout_text());
            let got: Vec<u64> = records
                .iter()
                .map(|r| r["line"].as_u64().unwrap())
                .collect();
            assert_eq!(got, vec![1, 3, 6, 8], "{args:?}");
            for r in &records {
                let v: Value =
                    serde_json::from_str(&lines[r["line"].as_u64().unwrap() as usize - 1]).unwrap();
                check_record(&Instance::from_json(&v), r, policy, strict, 0);
            }
            if policy != "random" {
                // The same schedules as for the good lines alone (random's stream depends on
                // the position in the file, so it may differ).
                let alone =
                    run(&[&args[..args.len() - 1], &[path_str(&good).as_str()]].concat()).ok();
                let alone = common::parse_jsonl(&alone.stdout_text());
                for (a, b) in alone.iter().zip(&records) {
                    let strip = |v: &Value| {
                        let mut v = v.clone();
                        v.as_object_mut().unwrap().remove("line");
                        v
                    };
                    assert_eq!(strip(a), strip(b));
                }
            }
        }
    }
    // With -o, the valid records still reach the file.
    let out_path = dir.path().join("out.jsonl");
    run(&["schedule", &file, "-o", &path_str(&out_path)]).failed();
    let got: Vec<u64> = read_jsonl(&out_path)
        .iter()
        .map(|r| r["line"].as_u64().unwrap())
        .collect();
    assert_eq!(got, vec![1, 3, 6, 8]);
}

#[test]
fn record_fields_are_as_documented() {
    let dir = tempdir();
    let path = generate_file(dir.path(), "u.jsonl", &["--family", "uniform", "-n", "2"]);
    let out = run(&["schedule", &path_str(&path)]).ok();
    for r in common::parse_jsonl(&out.stdout_text()) {
        let keys: BTreeMap<&str, ()> = r
            .as_object()
            .unwrap()
            .keys()
            .map(|k| (k.as_str(), ()))
            .collect();
        for k in [
            "line",
            "policy",
            "variant",
            "order",
            "starts",
            "ends",
            "servers",
            "objectives",
        ] {
            assert!(keys.contains_key(k), "missing {k} in {r}");
        }
        assert_eq!(r["policy"], json!("fcfs"), "default policy");
        assert_eq!(r["variant"], json!("serial"), "default variant");
    }
}
