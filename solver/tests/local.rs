//! Iterated greedy local search: validity, determinism, and quality against brute force and
//! the best classic rule.

use std::time::{Duration, Instant};

use rayon::prelude::*;
use schedlm_generator::{generate_one, Config, Family};
use schedlm_model::{dispatch, repair, Objective, Problem, Variant};
use schedlm_solver::bnb::{self, BnbOptions};
use schedlm_solver::brute::brute_force;
use schedlm_solver::local::{self, LsOptions, LsOutcome};
use schedlm_solver::rules::best_rule;
use schedlm_solver::rules::{order, Rule, RuleContext};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn not_worse(a: f64, b: f64) -> bool {
    a <= b + 1e-9 * b.abs().max(1.0)
}

fn problem(
    family: Family,
    seed: u64,
    jobs: (usize, usize),
    deps: f64,
    servers: Option<usize>,
    index: u64,
) -> Problem {
    let mut config = Config::new(family, seed);
    config.queue_min = jobs.0;
    config.queue_max = jobs.1;
    config.dep_prob = deps;
    config.servers = servers;
    let instance = generate_one(&config, index).expect("generator config is valid");
    Problem::new(&instance).expect("generated instances are valid")
}

/// The outcome is a dependency-feasible permutation whose value a fresh dispatch reproduces.
fn check_outcome(p: &Problem, objective: Objective, variant: Variant, out: &LsOutcome) {
    let mut sorted = out.order.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        (0..p.jobs()).collect::<Vec<_>>(),
        "not a permutation"
    );
    assert_eq!(repair(p, &out.order), out.order, "not dependency-feasible");
    let schedule = dispatch(p, &out.order, variant).unwrap();
    let value = objective.value(p, &schedule.start);
    assert!(
        close(value, out.value),
        "value {} recomputed {value}",
        out.value
    );
}

fn options(max_evaluations: u64, seed: u64) -> LsOptions {
    LsOptions {
        max_evaluations,
        seed,
        ..LsOptions::default()
    }
}

#[test]
fn valid_and_never_worse_than_start_or_best_rule() {
    let mut cases = Vec::new();
    let mut index = 0;
    for family in [Family::Uniform, Family::Hpc, Family::Dl] {
        for objective in Objective::ALL {
            for variant in [Variant::Serial, Variant::Strict] {
                for deps in [0.0, 0.3] {
                    cases.push((family, objective, variant, deps, index));
                    index += 1;
                }
            }
        }
    }
    cases
        .par_iter()
        .for_each(|&(family, objective, variant, deps, index)| {
            let p = problem(family, 7, (5, 30), deps, None, index);
            let (_, rule_value) = best_rule(&p, objective, variant);
            let out = local::solve(&p, objective, variant, &options(3_000, index));
            check_outcome(&p, objective, variant, &out);
            assert!(out.evaluations <= 3_000);
            assert!(
            not_worse(out.value, rule_value),
            "{family:?} {objective:?} {variant:?} {index}: {} worse than best rule {rule_value}",
            out.value
        );
            // From a random (not repaired) start.
            let start = order(
                Rule::Random,
                &p,
                &RuleContext {
                    seed: index,
                    ..RuleContext::default()
                },
            );
            let (_, start_value) = p.evaluate(&start, objective, variant);
            let from_random = local::solve(
                &p,
                objective,
                variant,
                &LsOptions {
                    start: Some(start),
                    ..options(3_000, index)
                },
            );
            check_outcome(&p, objective, variant, &from_random);
            assert!(not_worse(from_random.value, start_value));
        });
}

#[test]
fn same_seed_same_result() {
    for (objective, variant) in [
        (Objective::Bsld, Variant::Serial),
        (Objective::Makespan, Variant::Strict),
    ] {
        let p = problem(Family::Hpc, 3, (40, 40), 0.2, Some(8), 0);
        let a = local::solve(&p, objective, variant, &options(5_000, 11));
        let b = local::solve(&p, objective, variant, &options(5_000, 11));
        assert_eq!(a.order, b.order);
        assert_eq!(a.value.to_bits(), b.value.to_bits());
        assert_eq!(a.evaluations, b.evaluations);
        assert_eq!(a.improvements, b.improvements);
    }
}

#[test]
fn single_job_and_tiny_queues() {
    let p = problem(Family::Uniform, 1, (1, 1), 0.0, None, 0);
    let out = local::solve(&p, Objective::Bsld, Variant::Serial, &LsOptions::default());
    assert_eq!(out.order, vec![0]);
    check_outcome(&p, Objective::Bsld, Variant::Serial, &out);
}

/// Share of small instances where local search finds the brute-force optimum.
#[test]
fn reaches_brute_force_optimum_on_small_queues() {
    let cases: Vec<(Family, Objective, Variant, u64)> = (0..100u64)
        .map(|i| {
            let family = Family::ALL[(i % 3) as usize];
            let objective = Objective::ALL[((i / 3) % 4) as usize];
            let variant = if i % 2 == 0 {
                Variant::Serial
            } else {
                Variant::Strict
            };
            (family, objective, variant, i)
        })
        .collect();
    let hits: usize = cases
        .par_iter()
        .map(|&(family, objective, variant, index)| {
            let p = problem(family, 2026, (6, 6), 0.2, None, index);
            let (_, best) = brute_force(&p, objective, variant);
            let out = local::solve(&p, objective, variant, &options(2_000, index));
            check_outcome(&p, objective, variant, &out);
            assert!(not_worse(best, out.value));
            usize::from(close(out.value, best))
        })
        .sum();
    eprintln!("local search optimal on {hits}/100 instances of 6 jobs");
    // Measured: 100/100.
    assert!(hits >= 95, "optimal on only {hits}/100");
}

/// Share of 10-job instances where local search finds the optimum proven by branch and bound
/// (measured: 59/60).
#[test]
fn reaches_proven_optimum_on_ten_job_queues() {
    let rows: Vec<(bool, bool)> = (0..60u64)
        .into_par_iter()
        .map(|i| {
            let family = Family::ALL[(i % 3) as usize];
            let objective = Objective::ALL[((i / 3) % 4) as usize];
            let variant = if i % 2 == 0 {
                Variant::Serial
            } else {
                Variant::Strict
            };
            let p = problem(family, 5, (10, 10), 0.2, None, i);
            let bnb_options = BnbOptions {
                time_limit: Some(Duration::from_secs(30)),
                ..BnbOptions::default()
            };
            let opt = bnb::solve(&p, objective, variant, &bnb_options);
            let out = local::solve(&p, objective, variant, &options(20_000, i));
            check_outcome(&p, objective, variant, &out);
            if opt.proven_optimal() {
                assert!(not_worse(opt.value, out.value), "below the proven optimum");
            }
            (opt.proven_optimal(), close(opt.value, out.value))
        })
        .collect();
    let proven = rows.iter().filter(|r| r.0).count();
    let hits = rows.iter().filter(|r| r.0 && r.1).count();
    eprintln!("local search optimal on {hits}/{proven} proven 10-job instances");
    assert!(proven >= 50, "bnb proved only {proven}/60");
    assert!(hits * 100 >= proven * 90, "optimal on only {hits}/{proven}");
}

/// On 60-100-job hpc queues on 8 servers, local search improves on the best rule on most
/// (measured: 16/16 for bsld, 16/16 for wait, with 20 000 evaluations).
#[test]
fn improves_on_best_rule_on_large_hpc_queues() {
    for objective in [Objective::Bsld, Objective::Wait] {
        let rows: Vec<(usize, f64, f64, f64, u64)> = (0..16u64)
            .into_par_iter()
            .map(|index| {
                let p = problem(Family::Hpc, 99, (60, 100), 0.0, Some(8), index);
                let (_, rule) = best_rule(&p, objective, Variant::Serial);
                let out = local::solve(&p, objective, Variant::Serial, &options(20_000, 1));
                check_outcome(&p, objective, Variant::Serial, &out);
                // Every job starting at `now`: a lower bound, to show the reducible part.
                let floor = objective.value(&p, &vec![p.now(); p.jobs()]);
                (p.jobs(), rule, out.value, floor, out.evaluations)
            })
            .collect();
        let mut improved = 0;
        let (mut rel, mut rel_gap) = (0.0, 0.0);
        for &(n, rule, ls, floor, evals) in &rows {
            assert!(not_worse(ls, rule));
            if ls < rule - 1e-9 * rule.abs() {
                improved += 1;
            }
            rel += (rule - ls) / rule;
            rel_gap += (rule - ls) / (rule - floor);
            eprintln!(
                "{objective:?} n={n}: best rule {rule:.4} local {ls:.4} ({evals} evaluations)"
            );
        }
        let m = rows.len() as f64;
        eprintln!(
            "{objective:?}: improved on {improved}/{}, mean {:.3}% of the value, {:.2}% of (value - all-start-at-now bound)",
            rows.len(),
            100.0 * rel / m,
            100.0 * rel_gap / m
        );
        assert!(
            improved >= 12,
            "{objective:?}: improved on only {improved}/{}",
            rows.len()
        );
    }
}

#[test]
fn time_limit_stops_the_search() {
    let p = problem(Family::Hpc, 99, (100, 100), 0.0, Some(8), 0);
    let out = local::solve(
        &p,
        Objective::Bsld,
        Variant::Serial,
        &LsOptions {
            time_limit: Some(Duration::from_millis(50)),
            max_evaluations: u64::MAX,
            ..LsOptions::default()
        },
    );
    check_outcome(&p, Objective::Bsld, Variant::Serial, &out);
    assert!(out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
    assert!(out.evaluations > 0);
}

#[test]
fn zero_budget_returns_the_start() {
    let p = problem(Family::Uniform, 4, (12, 12), 0.3, None, 3);
    let start: Vec<usize> = (0..p.jobs()).rev().collect();
    let out = local::solve(
        &p,
        Objective::Wait,
        Variant::Strict,
        &LsOptions {
            max_evaluations: 0,
            start: Some(start.clone()),
            ..LsOptions::default()
        },
    );
    assert_eq!(out.evaluations, 0);
    assert_eq!(out.order, repair(&p, &start));
    check_outcome(&p, Objective::Wait, Variant::Strict, &out);
}

/// Throughput: `cargo test --release -p schedlm-solver --no-default-features --test local --
/// --ignored --nocapture evaluations_per_second`.
#[test]
#[ignore]
fn evaluations_per_second() {
    let p = problem(Family::Hpc, 99, (100, 100), 0.0, Some(8), 0);
    for objective in [Objective::Bsld, Objective::Wait] {
        let started = Instant::now();
        let out = local::solve(&p, objective, Variant::Serial, &options(50_000, 1));
        let secs = started.elapsed().as_secs_f64();
        eprintln!(
            "{objective:?} n=100: {} evaluations in {secs:.3} s = {:.0}/s, value {:.3}",
            out.evaluations,
            out.evaluations as f64 / secs,
            out.value
        );
    }
}
