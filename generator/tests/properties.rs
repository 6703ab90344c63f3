//! Property tests: any valid configuration gives valid instances with the promised shape.

use proptest::prelude::*;
use schedlm_generator::{generate_one, Config, Family, Load};

fn family() -> impl Strategy<Value = Family> {
    prop_oneof![Just(Family::Uniform), Just(Family::Hpc), Just(Family::Dl)]
}

fn load() -> impl Strategy<Value = Option<Load>> {
    prop_oneof![
        Just(None),
        (0usize..=8).prop_map(|n| Some(Load::Jobs(n))),
        (0.0f64..0.999).prop_map(|f| Some(Load::Fraction(f))),
    ]
}

fn config() -> impl Strategy<Value = Config> {
    (
        family(),
        1usize..=30,
        0usize..=30,
        prop::option::of(1usize..=6),
        load(),
        prop_oneof![Just(0.0), 0.0f64..=1.0, Just(1.0)],
        any::<u64>(),
    )
        .prop_map(
            |(family, queue_min, extra, servers, load, dep_prob, seed)| Config {
                family,
                queue_min,
                queue_max: queue_min + extra,
                servers,
                load,
                dep_prob,
                seed,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn generated_instances_are_valid(config in config(), index in any::<u64>()) {
        prop_assume!(config.check().is_ok());
        let inst = generate_one(&config, index).unwrap();
        prop_assert!(schedlm_model::validate(&inst).is_ok());
        prop_assert!((config.queue_min..=config.queue_max).contains(&inst.queue.len()));
        if let Some(n) = config.servers {
            prop_assert_eq!(inst.servers.len(), n);
        }
        if let Some(Load::Jobs(n)) = config.load {
            prop_assert!(inst.running.len() <= n);
        }
        for j in &inst.queue {
            prop_assert!(j.submit >= 0 && j.submit <= inst.now);
            prop_assert!(j.walltime >= 1);
            prop_assert!(j.runtime.is_some_and(|r| r <= j.walltime));
        }
        for r in &inst.running {
            prop_assert!(r.end > inst.now);
        }
        // Deterministic.
        prop_assert_eq!(generate_one(&config, index).unwrap().to_json(), inst.to_json());
    }
}
