//! Property tests: any valid configuration gives valid instances with the promised shape.

use proptest::prelude::*;
use schedlm_generator::{generate_one, Config, Family, Hard, Load};

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

/// The settings of [`Hard`] a family takes, any of them on or off.
fn hard(family: Family) -> impl Strategy<Value = Hard> {
    (
        prop::option::of(prop_oneof![Just(300i64), 300i64..=86_400]),
        prop::option::of(prop_oneof![Just(0i64), 0i64..=7_200]),
        prop_oneof![Just(0.0), 0.0f64..=1.0, Just(1.0)],
        prop_oneof![Just(0.0), 0.0f64..=1.0, Just(1.0)],
        any::<bool>(),
    )
        .prop_map(move |(cap, span, wide, mem, mixed)| Hard {
            max_walltime: cap.filter(|_| family == Family::Hpc),
            queue_span: span,
            wide: if family == Family::Uniform { 0.0 } else { wide },
            mem_bound: if family == Family::Hpc { mem } else { 0.0 },
            mixed_nodes: mixed && family != Family::Uniform,
        })
}

fn config() -> impl Strategy<Value = Config> {
    family()
        .prop_flat_map(|family| (Just(family), hard(family)))
        .prop_flat_map(|(family, hard)| {
            (
                Just(family),
                1usize..=30,
                0usize..=30,
                prop::option::of(1usize..=6),
                load(),
                prop_oneof![Just(0.0), 0.0f64..=1.0, Just(1.0)],
                any::<u64>(),
                Just(hard),
            )
                .prop_map(
                    |(family, queue_min, extra, servers, load, dep_prob, seed, hard)| Config {
                        family,
                        queue_min,
                        queue_max: queue_min + extra,
                        servers,
                        load,
                        dep_prob,
                        seed,
                        hard,
                    },
                )
        })
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
            // The settings that give headroom keep their promises.
            if let Some(span) = config.hard.queue_span {
                prop_assert!(inst.now - j.submit <= span, "waited {} > span {span}", inst.now - j.submit);
            }
            if let Some(cap) = config.hard.max_walltime {
                prop_assert!(j.walltime <= cap);
            }
        }
        if config.hard.mixed_nodes && inst.servers.len() > 1 {
            prop_assert_ne!(&inst.servers[0].capacity, &inst.servers[1].capacity);
        }
        for r in &inst.running {
            prop_assert!(r.end > inst.now);
        }
        // Deterministic.
        prop_assert_eq!(generate_one(&config, index).unwrap().to_json(), inst.to_json());
    }
}
