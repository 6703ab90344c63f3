//! The time-indexed MILP against brute force over all orders.
#![cfg(feature = "milp")]

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use schedlm_model::{
    dispatch, Instance, Objective, Problem, QueuedJob, RunningJob, Server, Variant,
};
use schedlm_solver::milp::{solve, MilpError, MilpOptions};

/// The best objective over all permutations under the serial dispatcher, and one best order.
fn brute_force(problem: &Problem, objective: Objective) -> (f64, Vec<usize>) {
    let n = problem.jobs();
    let mut perm: Vec<usize> = (0..n).collect();
    let mut best = (f64::INFINITY, perm.clone());
    // Heap's algorithm.
    let mut c = vec![0; n];
    let mut visit = |perm: &[usize]| {
        let s = dispatch(problem, perm, Variant::Serial).unwrap();
        let v = objective.value(problem, &s.start);
        if v < best.0 {
            best = (v, perm.to_vec());
        }
    };
    visit(&perm);
    let mut i = 0;
    while i < n {
        if c[i] < i {
            if i % 2 == 0 {
                perm.swap(0, i);
            } else {
                perm.swap(c[i], i);
            }
            visit(&perm);
            c[i] += 1;
            i = 0;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
    best
}

struct Shape {
    jobs: usize,
    servers: usize,
    resources: usize,
    /// Times are multiples of this (1: arbitrary).
    unit: i64,
    running: usize,
    deps: bool,
}

/// A random valid instance of the given shape.
fn random_instance(seed: u64, shape: &Shape) -> Instance {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let now = 10_000;
    let u = shape.unit;
    let servers: Vec<Server> = (0..shape.servers)
        .map(|s| Server {
            id: format!("n{s}"),
            capacity: (0..shape.resources)
                .map(|_| rng.random_range(2..=6))
                .collect(),
        })
        .collect();
    let mut running = Vec::new();
    for r in 0..shape.running {
        let s = rng.random_range(0..shape.servers);
        // At most half of each resource, so running jobs always fit together (<= 2 per server).
        let demand: Vec<i64> = servers[s]
            .capacity
            .iter()
            .map(|&c| rng.random_range(0..=c / 2))
            .collect();
        if running
            .iter()
            .filter(|x: &&RunningJob| x.server == servers[s].id)
            .count()
            >= 2
        {
            continue;
        }
        running.push(RunningJob {
            id: format!("r{r}"),
            server: servers[s].id.clone(),
            demand,
            end: now + u * rng.random_range(1..=8),
        });
    }
    let mut queue = Vec::new();
    for j in 0..shape.jobs {
        let s = rng.random_range(0..shape.servers);
        let demand = servers[s]
            .capacity
            .iter()
            .map(|&c| rng.random_range(0..=c))
            .collect();
        let walltime = if u == 1 {
            rng.random_range(1..=60)
        } else {
            u * rng.random_range(1..=5)
        };
        let mut job = QueuedJob::new(
            format!("j{j}"),
            now - rng.random_range(0..=100),
            demand,
            walltime,
        );
        if shape.deps && j > 0 && rng.random_bool(0.3) {
            job.deps.push(format!("j{}", rng.random_range(0..j)));
        }
        if shape.deps && !running.is_empty() && rng.random_bool(0.2) {
            let r: &RunningJob = &running[rng.random_range(0..running.len())];
            job.deps.push(r.id.clone());
        }
        job.weight = rng.random_range(1..=3) as f64;
        queue.push(job);
    }
    Instance {
        now,
        resources: (0..shape.resources).map(|q| format!("r{q}")).collect(),
        servers,
        running,
        queue,
    }
}

/// Tests run in parallel threads of one process, and HiGHS takes one model at a time: every
/// test queues for it (`queue`), so that a short limit is not spent waiting for another test.
fn opts() -> MilpOptions {
    MilpOptions {
        time_limit: Some(Duration::from_secs(20)),
        queue: true,
        ..MilpOptions::default()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(1.0)
}

#[test]
fn one_server_grid_equals_brute_force() {
    for seed in 0..12u64 {
        let shape = Shape {
            jobs: 5 + (seed % 2) as usize,
            servers: 1,
            resources: 2,
            unit: 10,
            running: (seed % 3) as usize,
            deps: seed % 2 == 0,
        };
        let instance = random_instance(seed, &shape);
        let problem = Problem::new(&instance).unwrap();
        for objective in Objective::ALL {
            let (best, _) = brute_force(&problem, objective);
            let out = solve(&problem, objective, &opts()).unwrap();
            let label = format!("seed {seed}, {objective}: {out:?}, brute force {best}");
            assert!(out.exact && out.proven, "{label}");
            assert_eq!(out.status, "optimal", "{label}");
            assert!(close(out.value, best), "{label}");
            assert!(close(out.lower_bound, best), "{label}");
            assert!(out.lower_bound <= out.value, "{label}");
            let s = dispatch(&problem, &out.order, Variant::Serial).unwrap();
            assert_eq!(objective.value(&problem, &s.start), out.value, "{label}");
        }
    }
}

#[test]
fn multi_server_bound_below_brute_force() {
    for seed in 100..130u64 {
        let shape = Shape {
            jobs: 5,
            servers: 2 + (seed % 2) as usize,
            resources: 2,
            unit: 5,
            running: (seed % 4) as usize,
            deps: seed % 3 == 0,
        };
        let instance = random_instance(seed, &shape);
        let problem = Problem::new(&instance).unwrap();
        let objective = Objective::ALL[(seed % 4) as usize];
        let (best, _) = brute_force(&problem, objective);
        let out = solve(&problem, objective, &opts()).unwrap();
        let label = format!("seed {seed}, {objective}: {out:?}, brute force {best}");
        assert!(!out.exact, "{label}");
        assert!(out.proven, "{label}");
        assert!(out.lower_bound <= best + 1e-9, "{label}");
        assert!(out.value >= best - 1e-9, "{label}");
        assert!(out.milp_value.unwrap() <= best + 1e-6, "{label}");
    }
}

#[test]
fn off_grid_bound_below_brute_force() {
    for seed in 200..230u64 {
        let shape = Shape {
            jobs: 5,
            servers: 1 + (seed % 2) as usize,
            resources: 2,
            unit: 1,
            running: (seed % 3) as usize,
            deps: seed % 2 == 1,
        };
        let instance = random_instance(seed, &shape);
        let problem = Problem::new(&instance).unwrap();
        let objective = Objective::ALL[(seed % 4) as usize];
        let (best, _) = brute_force(&problem, objective);
        // A coarse step (off the grid) and the automatic one squeezed by a small column limit.
        for options in [
            MilpOptions {
                step: Some(7 + (seed % 5) as i64),
                ..opts()
            },
            MilpOptions {
                max_columns: 300,
                ..opts()
            },
        ] {
            let out = solve(&problem, objective, &options).unwrap();
            let label = format!("seed {seed}, {objective}: {out:?}, brute force {best}");
            assert!(out.lower_bound <= best + 1e-9, "{label}");
            assert!(out.value >= best - 1e-9, "{label}");
        }
    }
}

#[test]
fn proven_on_small_cases_with_incumbent() {
    let instance = random_instance(
        7,
        &Shape {
            jobs: 4,
            servers: 2,
            resources: 1,
            unit: 10,
            running: 1,
            deps: false,
        },
    );
    let problem = Problem::new(&instance).unwrap();
    let (best, order) = brute_force(&problem, Objective::Bsld);
    let out = solve(
        &problem,
        Objective::Bsld,
        &MilpOptions {
            incumbent: Some(order),
            ..opts()
        },
    )
    .unwrap();
    assert!(out.proven);
    assert!(close(out.value, best), "{out:?} vs {best}");
    assert!(out.lower_bound <= best + 1e-9);
}

#[test]
fn errors_name_the_problem() {
    let instance = random_instance(
        1,
        &Shape {
            jobs: 4,
            servers: 1,
            resources: 1,
            unit: 1,
            running: 0,
            deps: false,
        },
    );
    let problem = Problem::new(&instance).unwrap();
    let strict = MilpOptions {
        variant: Variant::Strict,
        ..opts()
    };
    let err = solve(&problem, Objective::Bsld, &strict).unwrap_err();
    assert_eq!(err, MilpError::UnsupportedVariant(Variant::Strict));
    assert!(err.to_string().contains("strict"));
    let tiny = MilpOptions {
        step: Some(1),
        max_columns: 3,
        ..opts()
    };
    let err = solve(&problem, Objective::Bsld, &tiny).unwrap_err();
    assert!(matches!(err, MilpError::TooLarge { .. }), "{err}");
    let bad = MilpOptions {
        incumbent: Some(vec![0, 0, 1, 2]),
        ..opts()
    };
    let err = solve(&problem, Objective::Bsld, &bad).unwrap_err();
    assert!(err.to_string().contains("twice"), "{err}");
}

/// Fact (2) of the module docs: with several servers the MILP optimum can be strictly below
/// the best order. The MILP puts j1 and j0 together on n1 at 10000 and j2 on n0 when the
/// running job ends at 10020 (weighted flow 461 / 5 = 92.2). Every order dispatches worse: j1
/// fits n0 at 10000, so the dispatcher puts it there (first server), and then j0 and j2 cannot
/// both start early; the best order reaches 481 / 5 = 96.2.
const GAP_INSTANCE: &str = r#"{
  "now": 10000, "resources": ["cores"],
  "servers": [{"id": "n0", "capacity": [5]}, {"id": "n1", "capacity": [6]}],
  "running": [{"id": "r1", "server": "n0", "demand": [2], "end": 10020}],
  "queue": [{"id": "j0", "submit": 9950, "demand": [2], "walltime": 50, "weight": 2},
            {"id": "j1", "submit": 9965, "demand": [3], "walltime": 40, "weight": 2},
            {"id": "j2", "submit": 9949, "demand": [5], "walltime": 40}]
}"#;

#[test]
fn milp_strictly_below_best_order_on_two_servers() {
    let problem = Problem::new(&Instance::from_json(GAP_INSTANCE).unwrap()).unwrap();
    let (best, _) = brute_force(&problem, Objective::Flow);
    assert!(close(best, 96.2), "{best}");
    let out = solve(&problem, Objective::Flow, &opts()).unwrap();
    assert!(out.proven && !out.exact, "{out:?}");
    assert!(close(out.milp_value.unwrap(), 92.2), "{out:?}");
    assert!(close(out.lower_bound, 92.2), "{out:?}");
    assert!(close(out.value, best), "{out:?}");
    assert!(out.lower_bound < best - 1.0);
}

/// A queue too large to prove in a fraction of a second.
fn big_problem() -> Problem {
    let shape = Shape {
        jobs: 40,
        servers: 4,
        resources: 3,
        unit: 10,
        running: 4,
        deps: true,
    };
    Problem::new(&random_instance(40, &shape)).unwrap()
}

#[test]
fn time_limit_is_honoured_loosely() {
    let problem = big_problem();
    let options = MilpOptions {
        time_limit: Some(Duration::from_millis(1500)),
        ..opts()
    };
    let clock = std::time::Instant::now();
    let out = solve(&problem, Objective::Bsld, &options).unwrap();
    assert!(
        clock.elapsed() < Duration::from_secs(60),
        "{:?}",
        clock.elapsed()
    );
    assert_eq!(out.status, "time limit", "{out:?}");
    assert!(!out.proven);
    assert!(out.lower_bound <= out.value, "{out:?}");
    assert!(out.lower_bound >= 1.0, "{out:?}");
    let s = dispatch(&problem, &out.order, Variant::Serial).unwrap();
    assert_eq!(Objective::Bsld.value(&problem, &s.start), out.value);
}

#[test]
fn warm_start_gives_a_solution_at_once() {
    let problem = big_problem();
    // SJF as the incumbent: the outcome is never worse than it.
    let mut sjf: Vec<usize> = (0..problem.jobs()).collect();
    sjf.sort_by_key(|&j| (problem.walltime(j), j));
    let s = dispatch(&problem, &sjf, Variant::Serial).unwrap();
    let sjf_value = Objective::Wait.value(&problem, &s.start);
    let out = solve(
        &problem,
        Objective::Wait,
        &MilpOptions {
            time_limit: Some(Duration::from_millis(200)),
            incumbent: Some(sjf),
            ..opts()
        },
    )
    .unwrap();
    assert!(out.value <= sjf_value, "{out:?} vs {sjf_value}");
    // HiGHS accepted the warm start: it has a solution although it had no time to find one.
    let milp = out.milp_value.expect("the warm start is a MILP solution");
    assert!(milp <= sjf_value + 1e-6, "{out:?}");
    assert!(out.lower_bound <= milp + 1e-6, "{out:?}");
}

/// `--solver milp` from several threads: HiGHS runs one model per process, and every instance
/// waits its turn instead of failing (the time limit counts from its turn). Before the queue,
/// about a third of these failed with "another thread held HiGHS until the time limit".
#[test]
fn milp_from_several_threads_queues_instead_of_dropping() {
    use rayon::prelude::*;
    use schedlm_solver::portfolio::{self, SolveOptions, Solver};
    let mut config = schedlm_generator::Config::new(schedlm_generator::Family::Uniform, 3);
    (config.queue_min, config.queue_max) = (12, 12);
    let problems: Vec<Problem> = schedlm_generator::generate(&config, 6)
        .unwrap()
        .iter()
        .map(|i| Problem::new(i).unwrap())
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let results: Vec<_> = pool.install(|| {
        problems
            .par_iter()
            .map(|p| {
                portfolio::solve(
                    p,
                    &SolveOptions {
                        solver: Solver::Milp,
                        time_limit: Some(std::time::Duration::from_millis(300)),
                        ..SolveOptions::default()
                    },
                )
            })
            .collect()
    });
    for (k, r) in results.iter().enumerate() {
        assert!(r.is_ok(), "instance {k}: {:?}", r.as_ref().err());
    }
}
