//! Branch and bound against brute force over every permutation.

use rayon::prelude::*;
use schedlm_generator::{generate_one, Config, Family};
use schedlm_model::{dispatch, Objective, Problem, Variant};
use schedlm_solver::bnb::{self, BnbOptions, Status};
use schedlm_solver::brute::brute_force;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// One case: (family, objective, variant, dependency probability, servers, index).
type Case = (Family, Objective, Variant, f64, Option<usize>, u64);

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut index = 0;
    for family in [Family::Uniform, Family::Hpc, Family::Dl] {
        for objective in Objective::ALL {
            for variant in [Variant::Serial, Variant::Strict] {
                for deps in [0.0, 0.3] {
                    for servers in [None, Some(1), Some(2)] {
                        for _ in 0..15 {
                            out.push((family, objective, variant, deps, servers, index));
                            index += 1;
                        }
                    }
                }
            }
        }
    }
    out
}

fn problem(family: Family, deps: f64, servers: Option<usize>, index: u64) -> Problem {
    let mut config = Config::new(family, 20_261_122);
    config.queue_min = 2;
    config.queue_max = 8;
    config.dep_prob = deps;
    config.servers = servers;
    let instance = generate_one(&config, index).expect("generator config is valid");
    Problem::new(&instance).expect("generated instances are valid")
}

#[test]
fn bnb_equals_brute_force_on_2000_instances() {
    let cases = cases();
    assert!(cases.len() >= 2000, "{} cases", cases.len());
    let failures: Vec<String> = cases
        .par_iter()
        .filter_map(|&(family, objective, variant, deps, servers, index)| {
            let p = problem(family, deps, servers, index);
            let (_, best) = brute_force(&p, objective, variant);
            let out = bnb::solve(&p, objective, variant, &BnbOptions::default());
            let schedule = dispatch(&p, &out.order, variant).expect("bnb returns a permutation");
            let recomputed = objective.value(&p, &schedule.start);
            let ok = out.status == Status::Optimal
                && close(out.value, best)
                && close(recomputed, out.value)
                && close(out.lower_bound, out.value);
            (!ok).then(|| {
                format!(
                    "{family:?} {objective:?} {variant:?} deps={deps} servers={servers:?} index={index} n={}: bnb {} (lb {}, {:?}) brute {best}",
                    p.jobs(),
                    out.value,
                    out.lower_bound,
                    out.status
                )
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn node_limit_stops_without_claiming_optimality() {
    let mut config = Config::new(Family::Uniform, 5);
    config.queue_min = 14;
    config.queue_max = 14;
    config.servers = Some(2);
    let instance = generate_one(&config, 0).unwrap();
    let p = Problem::new(&instance).unwrap();
    let options = BnbOptions {
        node_limit: Some(3),
        ..BnbOptions::default()
    };
    let out = bnb::solve(&p, Objective::Bsld, Variant::Serial, &options);
    assert_eq!(out.status, Status::NodeLimit);
    assert!(!out.proven_optimal());
    assert!(out.lower_bound <= out.value);
    let full = bnb::solve(&p, Objective::Bsld, Variant::Serial, &BnbOptions::default());
    assert!(full.proven_optimal());
    assert!(
        out.lower_bound <= full.value + 1e-9,
        "bound {} above optimum {}",
        out.lower_bound,
        full.value
    );
    assert!(full.value <= out.value + 1e-9);
}
