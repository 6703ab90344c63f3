//! Cross-checks between independent methods, and the portfolio's limits.

use std::time::{Duration, Instant};

use schedlm_generator::{generate_one, Config, Family};
use schedlm_model::{Instance, Objective, Problem, Variant};
use schedlm_solver::bnb::{self, BnbOptions};
use schedlm_solver::portfolio::{self, SolveOptions, SolveStatus, Solver};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

/// A generated instance with every time rounded up onto a grid of `step` seconds from `now`.
fn on_grid(mut instance: Instance, step: i64) -> Instance {
    let up = |t: i64| (t + step - 1).div_euclid(step) * step;
    instance.now = up(instance.now);
    for r in &mut instance.running {
        r.end = up(r.end.max(instance.now + 1));
    }
    for j in &mut instance.queue {
        j.walltime = up(j.walltime);
    }
    instance
}

fn generated(family: Family, servers: usize, jobs: usize, index: u64) -> Instance {
    let mut config = Config::new(family, 77);
    config.queue_min = jobs;
    config.queue_max = jobs;
    config.servers = Some(servers);
    generate_one(&config, index).expect("valid config")
}

/// The tests of this file run one at a time: HiGHS runs one model per process (see solver/src/milp/highs_model.rs),
/// so a MILP test waiting for another's model would see its own time limit expire, and the
/// time-limit test must not share the two cores with a neighbour's search.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(feature = "milp")]
mod milp_vs_bnb {
    use super::*;
    use schedlm_solver::milp::{self, MilpOptions};

    #[test]
    fn milp_equals_bnb_on_one_server_with_grid_times() {
        let _serial = serial();
        let mut checked = 0;
        for index in 0..6u64 {
            let instance = on_grid(generated(Family::Uniform, 1, 8, index), 600);
            let p = Problem::new(&instance).unwrap();
            for objective in [Objective::Bsld, Objective::Wait, Objective::Makespan] {
                let exact = bnb::solve(&p, objective, Variant::Serial, &BnbOptions::default());
                assert!(exact.proven_optimal());
                let options = MilpOptions {
                    step: Some(600),
                    time_limit: Some(Duration::from_secs(30)),
                    max_columns: 200_000,
                    ..MilpOptions::default()
                };
                let m = milp::solve(&p, objective, &options).unwrap();
                assert!(m.exact, "one server on the grid must be exact");
                if m.proven {
                    assert!(
                        close(m.lower_bound, exact.value) && close(m.value, exact.value),
                        "instance {index} {objective}: milp {} (lb {}) vs bnb {}",
                        m.value,
                        m.lower_bound,
                        exact.value
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked >= 15, "only {checked} MILPs proven");
    }

    #[test]
    fn milp_bound_is_below_bnb_with_several_servers() {
        let _serial = serial();
        for index in 0..8u64 {
            let p = Problem::new(&generated(Family::Dl, 3, 9, index)).unwrap();
            for objective in [Objective::Bsld, Objective::Flow] {
                let exact = bnb::solve(&p, objective, Variant::Serial, &BnbOptions::default());
                assert!(exact.proven_optimal());
                let options = MilpOptions {
                    time_limit: Some(Duration::from_secs(2)),
                    ..MilpOptions::default()
                };
                let m = milp::solve(&p, objective, &options).unwrap();
                assert!(
                    m.lower_bound <= exact.value * (1.0 + 1e-9),
                    "instance {index} {objective}: milp bound {} above optimum {}",
                    m.lower_bound,
                    exact.value
                );
                assert!(m.value >= exact.value * (1.0 - 1e-9));
            }
        }
    }
}

/// An instance branch and bound cannot finish quickly: 40 uniform jobs on 2 servers.
fn hard() -> Problem {
    Problem::new(&generated(Family::Uniform, 2, 40, 3)).unwrap()
}

#[test]
fn time_limits_are_honoured_and_reported() {
    let _serial = serial();
    let p = hard();
    for (solver, limit_ms) in [
        (Solver::Bnb, 300),
        (Solver::Auto, 300),
        (Solver::Auto, 1000),
        (Solver::Auto, 3000),
        (Solver::Ls, 200),
    ] {
        let limit = Duration::from_millis(limit_ms);
        let options = SolveOptions {
            solver,
            time_limit: Some(limit),
            ..SolveOptions::default()
        };
        let started = Instant::now();
        let s = portfolio::solve(&p, &options).unwrap();
        let took = started.elapsed();
        // The tolerance: within 10% plus 50 ms.
        assert!(
            took <= limit.mul_f64(1.1) + Duration::from_millis(50),
            "{solver:?} with {limit:?} took {took:?}"
        );
        assert!(
            !s.proven_optimal,
            "{solver:?} cannot prove this instance in {limit:?}"
        );
        assert!(s.lower_bound > 0.0 && s.lower_bound <= s.value);
        assert!(s.gap() > 0.0 && s.gap().is_finite());
        let expected = if solver == Solver::Ls {
            SolveStatus::Heuristic
        } else {
            SolveStatus::TimeLimit
        };
        assert_eq!(s.status, expected, "{solver:?}");
    }
}

#[test]
fn node_limited_runs_are_deterministic() {
    let _serial = serial();
    let p = hard();
    // Branch and bound stopped by nodes, not time, gives the same answer every time. (`auto`
    // adds time-limited stages, whose answers can depend on timing unless proven.)
    let options = SolveOptions {
        solver: Solver::Bnb,
        node_limit: Some(20_000),
        time_limit: Some(Duration::from_secs(600)),
        ..SolveOptions::default()
    };
    let a = portfolio::solve(&p, &options).unwrap();
    let b = portfolio::solve(&p, &options).unwrap();
    assert_eq!(a.order, b.order);
    assert_eq!(a.value, b.value);
}

#[test]
fn auto_proves_what_bnb_proves_and_never_claims_more() {
    let _serial = serial();
    for index in 0..20u64 {
        let p = Problem::new(&generated(Family::Hpc, 8, 10, index)).unwrap();
        for objective in Objective::ALL {
            let exact = bnb::solve(&p, objective, Variant::Serial, &BnbOptions::default());
            let s = portfolio::solve(
                &p,
                &SolveOptions {
                    objective,
                    ..SolveOptions::default()
                },
            )
            .unwrap();
            assert!(s.proven_optimal && exact.proven_optimal());
            assert!(close(s.value, exact.value), "{index} {objective}");
            for (rule, v) in &s.baselines {
                assert!(*v >= s.value * (1.0 - 1e-9), "{rule} beats the optimum");
            }
        }
    }
}

/// A deadline that has already passed stops every solver within a few units of work, whatever
/// the queue length (node-count-free: the check is the clock's, not a node budget), and the
/// answer is a complete order, never called optimal unless its bound proves it.
#[test]
fn a_passed_deadline_returns_the_incumbent_on_a_long_queue() {
    let instance = generated(Family::Uniform, 4, 1000, 0);
    let problem = Problem::new(&instance).unwrap();
    for solver in [Solver::Bnb, Solver::Ls, Solver::Auto] {
        let s = portfolio::solve(
            &problem,
            &SolveOptions {
                solver,
                time_limit: Some(Duration::ZERO),
                ..SolveOptions::default()
            },
        )
        .unwrap();
        let mut sorted = s.order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>(), "{solver:?}");
        // The deadline has passed before the rules: only the first runs, and its order is
        // the incumbent.
        assert_eq!(s.baselines.len(), 1, "{solver:?}: {:?}", s.baselines);
        let (rule, rule_value) = s.baselines[0];
        assert!(
            s.value <= rule_value + 1e-9,
            "{solver:?} lost the incumbent"
        );
        assert!(!s.proven_optimal || s.lower_bound >= s.value - 1e-9);
        assert!(
            s.lower_bound <= s.value && s.lower_bound >= 1.0,
            "{}",
            s.lower_bound
        );
        assert!(
            s.nodes <= 8,
            "{solver:?} expanded {} nodes after its deadline",
            s.nodes
        );
        assert_eq!(s.status, SolveStatus::TimeLimit, "{solver:?}");
        let order = schedlm_solver::rules::order(rule, &problem, &Default::default());
        let (_, value) = problem.evaluate(&order, Objective::Bsld, Variant::Serial);
        assert_eq!(s.value, value, "{solver:?}");
    }
}

/// A time limit counted from an earlier start (`solve_since`: a command that read the instance
/// first) has less left: one whose start lies past its limit returns the first rule's order at
/// once, and reports the time since that start.
#[test]
fn a_time_limit_counts_from_the_start_it_is_given() {
    let problem = Problem::new(&generated(Family::Uniform, 4, 300, 0)).unwrap();
    let options = SolveOptions {
        time_limit: Some(Duration::from_millis(200)),
        ..SolveOptions::default()
    };
    let started = Instant::now() - Duration::from_millis(500);
    let s = portfolio::solve_since(&problem, &options, started).unwrap();
    assert_eq!(s.baselines.len(), 1, "{:?}", s.baselines);
    assert_eq!(s.status, SolveStatus::TimeLimit);
    assert!(s.elapsed >= Duration::from_millis(500), "{:?}", s.elapsed);
    // The same limit counted from now runs every rule.
    let now = portfolio::solve(&problem, &options).unwrap();
    assert!(now.baselines.len() > 1, "{:?}", now.baselines);
}

/// Snapshots as `dataset build` makes them by default: `uniform`, 16..20 queued jobs.
fn labelled_like_datasets(count: u64, seed: u64) -> Vec<Problem> {
    let mut config = Config::new(Family::Uniform, seed);
    config.queue_min = 16;
    config.queue_max = 20;
    (0..count)
        .map(|i| Problem::new(&generate_one(&config, i).unwrap()).unwrap())
        .collect()
}

/// Everything a work-limited solve returns but its time.
fn outcome(s: &portfolio::Solution) -> (Vec<usize>, u64, u64, SolveStatus, u64, u64) {
    (
        s.order.clone(),
        s.value.to_bits(),
        s.lower_bound.to_bits(),
        s.status,
        s.nodes,
        s.work,
    )
}

/// Keeps both cores busy until dropped.
struct Load {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start(threads: usize) -> Load {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..threads)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        Load { stop, threads }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The outcome for `auto`: under a work limit the same order, bound, status, nodes
/// and work on one thread or two, under a load of four busy threads on two cores, and with a
/// time cap that does not stop it. The limit lets every phase run (quick branch and bound,
/// local search, branch and bound, the MILP), and some snapshots end unproven, so the limit
/// decides something.
#[test]
fn work_limited_auto_is_the_same_at_any_load_and_thread_count() {
    let _serial = serial();
    let problems = labelled_like_datasets(4, 4242);
    let options = SolveOptions {
        work_limit: Some(12_000_000),
        time_limit: None,
        ..SolveOptions::default()
    };
    let idle: Vec<_> = problems
        .iter()
        .map(|p| outcome(&portfolio::solve(p, &options).unwrap()))
        .collect();
    let unproven = idle
        .iter()
        .filter(|o| o.3 == SolveStatus::WorkLimit)
        .count();
    assert!(unproven > 0, "the work limit decided nothing: {idle:?}");
    // The MILP stops at HiGHS' next callback, which may come a few hundred simplex
    // iterations after its share; every other phase stops within a node or a candidate.
    assert!(
        idle.iter().all(|o| o.5 <= 15_000_000),
        "overspent: {idle:?}"
    );
    let two_threads = SolveOptions {
        threads: 2,
        ..options.clone()
    };
    let capped = SolveOptions {
        time_limit: Some(Duration::from_secs(600)),
        ..options.clone()
    };
    let loaded: Vec<_> = {
        let _load = Load::start(4);
        problems
            .iter()
            .map(|p| outcome(&portfolio::solve(p, &options).unwrap()))
            .collect()
    };
    assert_eq!(idle, loaded, "a busy machine changed the answers");
    for (name, other) in [("-j 2", &two_threads), ("a time cap", &capped)] {
        let again: Vec<_> = problems
            .iter()
            .map(|p| outcome(&portfolio::solve(p, other).unwrap()))
            .collect();
        assert_eq!(idle, again, "{name} changed the answers");
    }
}

/// The same from several threads at once (as `dataset build -j 2` solves): HiGHS runs one
/// model per process, and a work-limited `auto` waits for it instead of skipping its bound.
#[test]
fn work_limited_auto_in_parallel_threads_matches_one_at_a_time() {
    let _serial = serial();
    let problems = labelled_like_datasets(4, 99);
    let options = SolveOptions {
        work_limit: Some(12_000_000),
        time_limit: None,
        ..SolveOptions::default()
    };
    let one: Vec<_> = problems
        .iter()
        .map(|p| outcome(&portfolio::solve(p, &options).unwrap()))
        .collect();
    let parallel: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = problems
            .iter()
            .map(|p| scope.spawn(|| outcome(&portfolio::solve(p, &options).unwrap())))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(one, parallel);
}

/// A time cap that stops a work-limited solve says so (`time_limit`), and so does a time limit
/// alone; the work limit alone says `work_limit`; a proof says `optimal` under either.
#[test]
fn the_status_names_the_limit_that_stopped_the_solve() {
    let _serial = serial();
    let p = hard();
    let run = |work_limit, time_limit| {
        portfolio::solve(
            &p,
            &SolveOptions {
                work_limit,
                time_limit,
                ..SolveOptions::default()
            },
        )
        .unwrap()
    };
    assert_eq!(run(Some(200_000), None).status, SolveStatus::WorkLimit);
    let capped = run(Some(1_000_000_000), Some(Duration::from_millis(200)));
    assert_eq!(capped.status, SolveStatus::TimeLimit);
    assert_eq!(
        run(None, Some(Duration::from_millis(200))).status,
        SolveStatus::TimeLimit
    );
    let small = Problem::new(&generated(Family::Hpc, 8, 6, 0)).unwrap();
    let proven = portfolio::solve(
        &small,
        &SolveOptions {
            work_limit: Some(1_000_000),
            time_limit: None,
            ..SolveOptions::default()
        },
    )
    .unwrap();
    assert_eq!(proven.status, SolveStatus::Optimal);
    assert_eq!(proven.budget.work_limit, Some(1_000_000));
}

/// Neither a work, a time nor a node limit: refused before any work.
#[test]
fn a_solve_without_any_budget_is_refused() {
    let p = hard();
    let none = SolveOptions {
        work_limit: None,
        time_limit: None,
        ..SolveOptions::default()
    };
    assert!(matches!(
        portfolio::solve(&p, &none),
        Err(portfolio::SolveError::NoLimit)
    ));
    let nodes = SolveOptions {
        solver: Solver::Bnb,
        node_limit: Some(100),
        ..none
    };
    assert_eq!(
        portfolio::solve(&p, &nodes).unwrap().status,
        SolveStatus::NodeLimit
    );
}
