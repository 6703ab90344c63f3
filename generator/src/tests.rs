//! Crate-level tests: validity over many seeds and options, determinism, thread-count
//! independence, load, dependencies and configuration errors.

use super::*;

fn configs() -> Vec<Config> {
    let mut out = Vec::new();
    for family in Family::ALL {
        for (seed, (qmin, qmax)) in [(1u64, (8, 12)), (2, (1, 1)), (3, (1, 40))] {
            for servers in [None, Some(1), Some(3)] {
                for load in [
                    None,
                    Some(Load::Jobs(0)),
                    Some(Load::Jobs(5)),
                    Some(Load::Fraction(0.0)),
                    Some(Load::Fraction(0.5)),
                    Some(Load::Fraction(0.99)),
                ] {
                    for dep_prob in [0.0, 0.3, 1.0] {
                        out.push(Config {
                            family,
                            queue_min: qmin,
                            queue_max: qmax,
                            servers,
                            load,
                            dep_prob,
                            seed: seed * 1_000 + out.len() as u64,
                            hard: crate::Hard::default(),
                        });
                    }
                }
            }
        }
    }
    out
}

#[test]
fn every_instance_validates_and_respects_the_options() {
    for config in configs() {
        config.check().unwrap();
        for index in 0..6 {
            let inst = generate_one(&config, index).unwrap();
            validate(&inst).unwrap();
            assert!(
                (config.queue_min..=config.queue_max).contains(&inst.queue.len()),
                "{config:?}"
            );
            assert_eq!(inst.resources, config.family.resources());
            if let Some(n) = config.servers {
                assert_eq!(inst.servers.len(), n);
            }
            if let Some(Load::Jobs(n)) = config.load {
                assert!(inst.running.len() <= n);
            }
            if config.load == Some(Load::Fraction(0.0)) {
                assert!(inst.running.is_empty());
            }
            if config.dep_prob == 0.0 {
                assert!(inst.queue.iter().all(|j| j.deps.is_empty()));
            }
            check_common_shape(&inst);
        }
    }
}

/// Properties every family promises beyond validity.
fn check_common_shape(inst: &Instance) {
    assert!(inst.now > 0);
    for (i, s) in inst.servers.iter().enumerate() {
        assert_eq!(s.id, format!("n{i}"));
    }
    for (i, r) in inst.running.iter().enumerate() {
        assert_eq!(r.id, format!("r{i}"));
        assert!(r.end > inst.now);
    }
    let mut prev_submit = 0;
    for (i, j) in inst.queue.iter().enumerate() {
        assert_eq!(j.id, format!("j{i}"));
        assert!(j.submit >= prev_submit && j.submit <= inst.now);
        prev_submit = j.submit;
        assert!(j.walltime >= 1);
        assert!(j.runtime.unwrap() <= j.walltime);
        assert_eq!(j.weight, 1.0);
        assert!(j.user.as_deref().is_some_and(|u| u.starts_with('u')));
        for d in &j.deps {
            // Only running jobs or earlier queued jobs.
            let earlier = inst.queue[..i].iter().any(|q| &q.id == d);
            let running = inst.running.iter().any(|r| &r.id == d);
            assert!(earlier || running, "{} depends on {d}", j.id);
        }
    }
}

#[test]
fn same_config_and_index_give_identical_json() {
    for family in Family::ALL {
        let mut config = Config::new(family, 77);
        config.dep_prob = 0.4;
        for index in [0, 1, 17, u64::MAX] {
            let a = generate_one(&config, index).unwrap().to_json();
            let b = generate_one(&config, index).unwrap().to_json();
            assert_eq!(a, b);
        }
        let a = generate_one(&config, 0).unwrap();
        let b = generate_one(&config, 1).unwrap();
        assert_ne!(a, b);
        let mut other = config.clone();
        other.seed = 78;
        assert_ne!(generate_one(&other, 0).unwrap(), a);
    }
}

#[test]
fn thread_count_does_not_change_the_bytes() {
    for family in Family::ALL {
        let mut config = Config::new(family, 5);
        config.dep_prob = 0.25;
        let run = |threads: usize| -> String {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| generate(&config, 40).unwrap())
                .iter()
                .map(Instance::to_json)
                .collect::<Vec<_>>()
                .join("\n")
        };
        let one = run(1);
        assert_eq!(one, run(2));
        assert_eq!(one, run(3));
        // And each element is the same as generating it alone.
        let alone = generate_one(&config, 39).unwrap().to_json();
        assert_eq!(one.lines().last().unwrap(), alone);
    }
}

#[test]
fn generate_returns_index_order_and_handles_zero() {
    let config = Config::new(Family::Uniform, 3);
    assert!(generate(&config, 0).unwrap().is_empty());
    let all = generate(&config, 10).unwrap();
    for (i, inst) in all.iter().enumerate() {
        assert_eq!(inst, &generate_one(&config, i as u64).unwrap());
    }
}

#[test]
fn dependencies_use_their_own_stream() {
    // Switching dependencies on adds edges and changes nothing else.
    for family in Family::ALL {
        let plain = Config::new(family, 9);
        let mut with = plain.clone();
        with.dep_prob = 0.5;
        let mut edges = 0;
        for index in 0..30 {
            let a = generate_one(&plain, index).unwrap();
            let mut b = generate_one(&with, index).unwrap();
            edges += b.queue.iter().map(|j| j.deps.len()).sum::<usize>();
            for j in &mut b.queue {
                j.deps.clear();
            }
            assert_eq!(a, b);
        }
        assert!(edges > 30, "{family}: {edges} edges");
    }
}

#[test]
fn dep_prob_one_gives_every_job_a_dependency_when_possible() {
    for family in Family::ALL {
        let mut config = Config::new(family, 10);
        config.dep_prob = 1.0;
        for index in 0..20 {
            let inst = generate_one(&config, index).unwrap();
            for (i, j) in inst.queue.iter().enumerate() {
                let candidates = inst.running.len() + i;
                assert_eq!(j.deps.len(), candidates.min(2), "{family} {}", j.id);
                let mut unique = j.deps.clone();
                unique.dedup();
                assert_eq!(unique.len(), j.deps.len());
            }
        }
    }
}

/// Busy fraction of the first resource at `now`.
fn busy_fraction(inst: &Instance) -> f64 {
    let busy: i64 = inst.running.iter().map(|r| r.demand[0]).sum();
    let total: i64 = inst.servers.iter().map(|s| s.capacity[0]).sum();
    busy as f64 / total as f64
}

#[test]
fn load_fraction_is_roughly_honoured() {
    for family in Family::ALL {
        for target in [0.3, 0.7, 0.9] {
            let mut config = Config::new(family, 12);
            config.load = Some(Load::Fraction(target));
            let n = 60;
            let mut sum = 0.0;
            for index in 0..n {
                let inst = generate_one(&config, index).unwrap();
                let f = busy_fraction(&inst);
                // Never above the target (plus rounding to whole units).
                let total: i64 = inst.servers.iter().map(|s| s.capacity[0]).sum();
                assert!(
                    f <= target + 0.5 / total as f64 + 1e-9,
                    "{family} {target}: {f}"
                );
                sum += f;
            }
            let mean = sum / n as f64;
            assert!(mean >= 0.85 * target, "{family} {target}: mean {mean}");
        }
    }
}

#[test]
fn default_loads() {
    let mean = |family: Family| {
        let config = Config::new(family, 13);
        (0..40)
            .map(|i| busy_fraction(&generate_one(&config, i).unwrap()))
            .sum::<f64>()
            / 40.0
    };
    assert!((0.6..=0.71).contains(&mean(Family::Hpc)));
    assert!((0.65..=0.76).contains(&mean(Family::Dl)));
    let config = Config::new(Family::Uniform, 13);
    for i in 0..40 {
        let inst = generate_one(&config, i).unwrap();
        assert!((1..=inst.servers.len()).contains(&inst.running.len()));
    }
}

#[test]
fn load_jobs_gives_that_many_when_there_is_room() {
    for family in Family::ALL {
        let mut config = Config::new(family, 14);
        config.load = Some(Load::Jobs(3));
        for index in 0..20 {
            let inst = generate_one(&config, index).unwrap();
            assert_eq!(
                inst.running.len(),
                3,
                "{family} {index}: {}",
                inst.to_json()
            );
        }
    }
}

#[test]
fn queue_lengths_cover_the_range() {
    let mut config = Config::new(Family::Hpc, 15);
    config.queue_min = 3;
    config.queue_max = 6;
    let mut seen = [false; 7];
    for index in 0..200 {
        let len = generate_one(&config, index).unwrap().queue.len();
        assert!((3..=6).contains(&len));
        seen[len] = true;
    }
    assert_eq!(seen, [false, false, false, true, true, true, true]);
}

#[test]
fn bad_configs_are_errors_that_name_the_option() {
    let base = Config::new(Family::Hpc, 1);
    let cases: Vec<(Config, &str)> = vec![
        (
            Config {
                queue_min: 0,
                ..base.clone()
            },
            "queue_min",
        ),
        (
            Config {
                queue_min: 5,
                queue_max: 4,
                ..base.clone()
            },
            "queue_max",
        ),
        (
            Config {
                queue_max: MAX_QUEUE + 1,
                ..base.clone()
            },
            "queue_max",
        ),
        (
            Config {
                dep_prob: -0.1,
                ..base.clone()
            },
            "dep_prob",
        ),
        (
            Config {
                dep_prob: 1.5,
                ..base.clone()
            },
            "dep_prob",
        ),
        (
            Config {
                dep_prob: f64::NAN,
                ..base.clone()
            },
            "dep_prob",
        ),
        (
            Config {
                servers: Some(0),
                ..base.clone()
            },
            "servers",
        ),
        (
            Config {
                servers: Some(MAX_SERVERS + 1),
                ..base.clone()
            },
            "servers",
        ),
        (
            Config {
                load: Some(Load::Fraction(1.0)),
                ..base.clone()
            },
            "load",
        ),
        (
            Config {
                load: Some(Load::Fraction(-0.2)),
                ..base.clone()
            },
            "load",
        ),
        (
            Config {
                load: Some(Load::Fraction(f64::NAN)),
                ..base.clone()
            },
            "load",
        ),
        (
            Config {
                load: Some(Load::Jobs(8 * 32 + 1)),
                ..base.clone()
            },
            "load",
        ),
        (
            Config {
                family: Family::Dl,
                servers: Some(1),
                load: Some(Load::Jobs(9)),
                ..base.clone()
            },
            "gpus",
        ),
    ];
    for (config, needle) in cases {
        let err = config.check().unwrap_err();
        let message = err.to_string();
        assert!(message.contains(needle), "{message}");
        // (Compared as text: a NaN in the error is not equal to itself.)
        assert_eq!(generate_one(&config, 0).unwrap_err().to_string(), message);
        assert_eq!(generate(&config, 3).unwrap_err().to_string(), message);
    }
    // The largest admissible job count is fine.
    let ok = Config {
        load: Some(Load::Jobs(8 * 32)),
        ..base
    };
    ok.check().unwrap();
    validate(&generate_one(&ok, 0).unwrap()).unwrap();
}

#[test]
fn family_names_round_trip() {
    for family in Family::ALL {
        assert_eq!(family.name().parse::<Family>().unwrap(), family);
        assert_eq!(
            serde_json::to_string(&family).unwrap(),
            format!("\"{}\"", family.name())
        );
        assert_eq!(family.to_string(), family.name());
    }
    assert!("HPC".parse::<Family>().is_err());
    let config = Config::new(Family::Dl, 3);
    let text = serde_json::to_string(&config).unwrap();
    assert_eq!(serde_json::from_str::<Config>(&text).unwrap(), config);
}

#[test]
fn instances_survive_a_json_round_trip() {
    for family in Family::ALL {
        let mut config = Config::new(family, 16);
        config.dep_prob = 0.3;
        for inst in generate(&config, 10).unwrap() {
            let text = inst.to_json();
            let back = Instance::from_json(&text).unwrap();
            assert_eq!(back, inst);
            assert!(!text.contains("\"weight\""));
        }
    }
}

#[test]
fn settings_that_give_headroom_do_what_they_say() {
    use crate::family::{dl, hpc};
    let share = |config: &Config, f: &dyn Fn(&schedlm_model::QueuedJob) -> bool| {
        let (mut hit, mut all) = (0, 0);
        for inst in generate(config, 200).unwrap() {
            for j in &inst.queue {
                hit += usize::from(f(j));
                all += 1;
            }
        }
        hit as f64 / all as f64
    };
    // hpc: wide and memory-bound shares, the partition's walltime limit, the burst.
    let mut c = Config::new(Family::Hpc, 21);
    let base_wide = share(&c, &|j| j.demand[0] >= hpc::WIDE_CORES.0);
    c.hard.wide = 0.5;
    let wide = share(&c, &|j| j.demand[0] >= hpc::WIDE_CORES.0);
    assert!(wide > base_wide + 0.35, "wide {wide}, without {base_wide}");
    c.hard = Hard {
        mem_bound: 0.4,
        ..Hard::default()
    };
    let mem = share(&c, &|j| j.demand[0] <= 4 && j.demand[1] >= 64);
    assert!((0.33..0.5).contains(&mem), "memory-bound share {mem}");
    c.hard = Hard {
        max_walltime: Some(3_600),
        queue_span: Some(0),
        mixed_nodes: true,
        ..Hard::default()
    };
    for inst in generate(&c, 50).unwrap() {
        assert!(inst
            .queue
            .iter()
            .all(|j| j.walltime <= 3_600 && j.submit == inst.now));
        let caps: Vec<Vec<i64>> = inst.servers.iter().map(|s| s.capacity.clone()).collect();
        assert_eq!(caps[2], hpc::MIXED_NODES[2].to_vec());
    }
    // dl: wide jobs use 4 or 8 GPUs; mixed nodes alternate 8- and 4-GPU nodes.
    let mut d = Config::new(Family::Dl, 22);
    d.hard.wide = 1.0;
    d.hard.mixed_nodes = true;
    for inst in generate(&d, 50).unwrap() {
        assert!(inst
            .queue
            .iter()
            .all(|j| dl::WIDE_GPUS.contains(&j.demand[0])));
        assert_eq!(inst.servers[1].capacity, dl::MIXED_NODES[1].to_vec());
    }
    // Off, the settings change nothing; on, a setting is refused where it means nothing.
    let plain = Config::new(Family::Hpc, 21);
    let mut off = plain.clone();
    off.hard.wide = 0.0;
    assert_eq!(generate(&plain, 5).unwrap(), generate(&off, 5).unwrap());
    for (family, hard, option) in [
        (
            Family::Dl,
            Hard {
                max_walltime: Some(3_600),
                ..Hard::default()
            },
            "max_walltime",
        ),
        (
            Family::Uniform,
            Hard {
                wide: 0.2,
                ..Hard::default()
            },
            "wide",
        ),
        (
            Family::Dl,
            Hard {
                mem_bound: 0.2,
                ..Hard::default()
            },
            "mem_bound",
        ),
        (
            Family::Uniform,
            Hard {
                mixed_nodes: true,
                ..Hard::default()
            },
            "mixed_nodes",
        ),
        (
            Family::Hpc,
            Hard {
                max_walltime: Some(60),
                ..Hard::default()
            },
            "max_walltime",
        ),
        (
            Family::Hpc,
            Hard {
                wide: 1.5,
                ..Hard::default()
            },
            "wide",
        ),
    ] {
        let mut c = Config::new(family, 1);
        c.hard = hard;
        let e = c.check().unwrap_err().to_string();
        assert!(e.contains(option), "{e}");
    }
}
