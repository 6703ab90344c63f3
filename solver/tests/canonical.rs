//! Canonical labels against brute force: over every permutation, the first (in ranking
//! positions) dependency-feasible order whose value is optimal must be what `lex_first` and
//! `canonical_order` return, on every family, objective and variant, with and without
//! dependencies.

use rayon::prelude::*;
use schedlm_generator::{generate_one, Config, Family};
use schedlm_model::{dispatch, repair, Objective, Problem, Variant};
use schedlm_solver::bnb::{self, BnbOptions};
use schedlm_solver::brute::{brute_force, next_permutation};
use schedlm_solver::canonical::{canonical_order, lex_first, ranking, NODE_LIMIT, PREFERENCE};
use schedlm_solver::rules::{order, RuleContext};

fn problem(family: Family, jobs: (usize, usize), deps: f64, index: u64) -> Problem {
    let mut config = Config::new(family, 11);
    config.queue_min = jobs.0;
    config.queue_max = jobs.1;
    config.dep_prob = deps;
    let instance = generate_one(&config, index).expect("generator config is valid");
    Problem::new(&instance).expect("generated instances are valid")
}

/// Brute force: walk permutations of ranking positions in lexicographic order; the first
/// dependency-feasible one within 1e-9 of `target` is the canonical order.
fn brute_canonical(
    p: &Problem,
    objective: Objective,
    variant: Variant,
    rank: &[usize],
    target: f64,
) -> Vec<usize> {
    let limit = target + 1e-9 * target.abs().max(1.0);
    let mut positions: Vec<usize> = (0..p.jobs()).collect();
    loop {
        let candidate: Vec<usize> = positions.iter().map(|&k| rank[k]).collect();
        if repair(p, &candidate) == candidate {
            let s = dispatch(p, &candidate, variant).unwrap();
            if objective.value(p, &s.start) <= limit {
                return candidate;
            }
        }
        assert!(
            next_permutation(&mut positions),
            "no order reaches the target"
        );
    }
}

#[test]
fn canonical_equals_brute_force() {
    let mut cases = Vec::new();
    let mut index = 0;
    for family in [Family::Uniform, Family::Hpc, Family::Dl] {
        for objective in Objective::ALL {
            for variant in [Variant::Serial, Variant::Strict] {
                for deps in [0.0, 0.4] {
                    for _ in 0..3 {
                        cases.push((family, objective, variant, deps, index));
                        index += 1;
                    }
                }
            }
        }
    }
    let canonical_not_solver = cases
        .par_iter()
        .map(|&(family, objective, variant, deps, index)| {
            let p = problem(family, (4, 7), deps, index);
            let (_, optimum) = brute_force(&p, objective, variant);
            let r = ranking(&p, objective, variant);
            let expected = brute_canonical(&p, objective, variant, &r.order, optimum);
            let found = lex_first(&p, objective, variant, &r.order, optimum, NODE_LIMIT);
            assert_eq!(
                found.order.as_ref(),
                Some(&expected),
                "{family:?} {objective:?} {variant:?} deps {deps} #{index}"
            );
            // From a solver's proven optimum, the same label.
            let solved = bnb::solve(&p, objective, variant, &BnbOptions::default());
            assert!(solved.proven_optimal());
            let c = canonical_order(&p, objective, variant, &solved.order, NODE_LIMIT);
            assert!(c.canonical);
            assert_eq!(c.order, expected);
            usize::from(c.order != solved.order)
        })
        .sum::<usize>();
    // The check can fail: canonical labels differ from the solver's own choice somewhere.
    assert!(canonical_not_solver > 0);
}

/// When the ranking rule's order is optimal, the label is that order; the ranking rule is a
/// rule of least value, ties going to the earlier rule of PREFERENCE.
#[test]
fn optimal_ranking_rule_is_the_label() {
    let (mut checked, mut sjf_optimal) = (0, 0);
    for index in 0..60 {
        let p = problem(Family::Uniform, (5, 7), 0.0, index);
        let (objective, variant) = (Objective::Bsld, Variant::Serial);
        let (best, optimum) = brute_force(&p, objective, variant);
        let r = ranking(&p, objective, variant);
        let values: Vec<f64> = PREFERENCE
            .iter()
            .map(|&rule| {
                let o = order(rule, &p, &RuleContext::default());
                p.evaluate(&o, objective, variant).1
            })
            .collect();
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let first = values
            .iter()
            .position(|&v| (v - min).abs() <= 1e-9 * min.abs().max(1.0))
            .unwrap();
        assert_eq!(r.rule, PREFERENCE[first]);
        // The label for the optimum (the brute-force order as the solver's).
        let c = canonical_order(&p, objective, variant, &best, NODE_LIMIT);
        if (r.value - optimum).abs() <= 1e-9 * optimum {
            checked += 1;
            sjf_optimal += usize::from(first == 0);
            assert_eq!(c.order, r.order, "#{index}: optimal ranking rule not kept");
        } else {
            assert_ne!(c.order, r.order);
        }
    }
    assert!(checked > 10 && sjf_optimal > 5, "{checked} {sjf_optimal}");
}

/// The label that follows the earliest-completion listing: a dependency-respecting permutation
/// whose value reaches the solver's; the greedy order itself when that is as good; and, where
/// the exact search in the same listing finishes (queues of up to 9 jobs here), the two take
/// the listing's first job equally often within a few points.
#[test]
fn the_listing_label_reaches_the_target_and_follows_the_listing() {
    use schedlm_solver::canonical::{follow_listing, lex_first_by, Listing};
    use schedlm_solver::greedy::{earliest_completion, listing};
    let cases: Vec<(Family, f64, u64)> = [Family::Uniform, Family::Hpc, Family::Dl]
        .into_iter()
        .flat_map(|f| (0..40).map(move |i| (f, if i % 3 == 0 { 0.3 } else { 0.0 }, i)))
        .collect();
    let counts: Vec<(usize, usize, usize)> = cases
        .par_iter()
        .map(|&(family, deps, i)| {
            let p = problem(family, (6, 9), deps, i);
            let (obj, var) = (Objective::Bsld, Variant::Serial);
            let rank = ranking(&p, obj, var).order;
            let best = bnb::solve(&p, obj, var, &BnbOptions::default());
            let label = follow_listing(&p, obj, var, &rank, &best.order);
            assert_eq!(repair(&p, &label), label, "{family:?} {i}: dependencies");
            let (_, value) = p.evaluate(&label, obj, var);
            assert!(
                value <= best.value + 1e-9 * best.value.max(1.0),
                "{family:?} {i}"
            );
            let greedy = earliest_completion(&p, var, &rank);
            if p.evaluate(&greedy, obj, var).1 <= best.value + 1e-9 * best.value.max(1.0) {
                assert_eq!(label, greedy, "{family:?} {i}: the greedy order is optimal");
            }
            let exact = lex_first_by(
                &p,
                obj,
                var,
                &rank,
                Listing::EarliestCompletion,
                best.value,
                NODE_LIMIT,
            )
            .order
            .unwrap();
            let first = |o: &[usize]| {
                let mut d = schedlm_model::Dispatcher::new(&p, var);
                o.iter()
                    .filter(|&&j| {
                        let f = listing(&d, &rank)[0].0 == j;
                        d.place(j);
                        f
                    })
                    .count()
            };
            (first(&label), first(&exact), p.jobs())
        })
        .collect();
    let (a, b, n) = counts
        .iter()
        .fold((0, 0, 0), |(a, b, n), &(x, y, z)| (a + x, b + y, n + z));
    let (a, b) = (a as f64 / n as f64, b as f64 / n as f64);
    assert!((b - a).abs() < 0.05, "listing label {a}, exact {b}");
}
