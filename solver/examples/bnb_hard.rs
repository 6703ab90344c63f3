//! Prints root bound, best rule and optimum of the hardest hpc instances (diagnostics).
use std::time::Duration;

use schedlm_generator::{generate_one, Config, Family};
use schedlm_model::{Objective, Problem, Variant};
use schedlm_solver::bnb::{self, best_rule, BnbOptions};

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(14);
    let mut config = Config::new(Family::Hpc, 1);
    config.queue_min = n;
    config.queue_max = n;
    config.servers = Some(8);
    for i in 0..20u64 {
        let inst = generate_one(&config, i).unwrap();
        let p = Problem::new(&inst).unwrap();
        let root = bnb::solve(&p, Objective::Bsld, Variant::Serial, &BnbOptions { node_limit: Some(1), ..Default::default() });
        let (_, rule) = best_rule(&p, Objective::Bsld, Variant::Serial);
        let out = bnb::solve(&p, Objective::Bsld, Variant::Serial, &BnbOptions { time_limit: Some(Duration::from_secs(5)), ..Default::default() });
        if out.nodes > 1000 {
            println!("i={i} root_lb={:.4} rule={:.4} best={:.4} lb={:.4} nodes={} {:?}", root.lower_bound, rule, out.value, out.lower_bound, out.nodes, out.status);
            if std::env::args().nth(2).is_some() { println!("{}", inst.to_json()); }
        }
    }
}
