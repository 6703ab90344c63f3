//! Quick scaling check of branch and bound on the hpc family (8 servers, bsld).
//! `cargo run --release -p schedlm-solver --no-default-features --example bnb_scale -- 12 20`
use std::time::{Duration, Instant};

use schedlm_generator::{generate_one, Config, Family};
use schedlm_model::{Objective, Problem, Variant};
use schedlm_solver::bnb::{self, BnbOptions};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(12);
    let count = args.get(1).copied().unwrap_or(20);
    let mut config = Config::new(Family::Hpc, 1);
    config.queue_min = n;
    config.queue_max = n;
    config.servers = Some(8);
    let mut times = Vec::new();
    let mut nodes = Vec::new();
    let mut unproven = 0;
    for i in 0..count as u64 {
        let p = Problem::new(&generate_one(&config, i).unwrap()).unwrap();
        let t = Instant::now();
        let out = bnb::solve(
            &p,
            Objective::Bsld,
            Variant::Serial,
            &BnbOptions {
                time_limit: Some(Duration::from_secs(10)),
                ..BnbOptions::default()
            },
        );
        times.push(t.elapsed().as_secs_f64() * 1e3);
        nodes.push(out.nodes);
        if !out.proven_optimal() {
            unproven += 1;
        }
    }
    times.sort_by(f64::total_cmp);
    nodes.sort();
    let q = |v: &[f64], f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
    let nq = |f: f64| nodes[((nodes.len() - 1) as f64 * f).round() as usize];
    println!(
        "n={n} count={count}: time ms median {:.2} p90 {:.2} max {:.2}; nodes median {} p90 {} max {}; unproven {unproven}",
        q(&times, 0.5),
        q(&times, 0.9),
        times[times.len() - 1],
        nq(0.5),
        nq(0.9),
        nodes[nodes.len() - 1]
    );
}
