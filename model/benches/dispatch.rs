//! Benchmarks of the dispatcher (SPEC section 3) on deterministic, realistic snapshots:
//! 2 resources (cores, memory), servers of mixed sizes, some running jobs, a queue of mixed
//! job sizes and walltimes, dispatched in submit (FCFS) order, i.e. conservative backfilling.
//!
//! Run: `cargo bench -p schedlm-model -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use schedlm_model::{
    dispatch, Dispatcher, Instance, Problem, QueuedJob, RunningJob, Server, Time, Variant,
};

const NOW: Time = 1_000_000;

/// A snapshot with `servers` servers and `jobs` queued jobs, the same for the same seed.
fn instance(servers: usize, jobs: usize, seed: u64) -> Instance {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Node types: (cores, memory GiB).
    let kinds = [[32, 128], [64, 256], [128, 512]];
    let servers: Vec<Server> = (0..servers)
        .map(|s| Server {
            id: format!("n{s}"),
            capacity: kinds[rng.random_range(0..kinds.len())].to_vec(),
        })
        .collect();
    // 1-3 running jobs per server, each taking 30-90% of what is left (so the cluster is
    // mostly busy at `now`), ending within 4 hours.
    let mut running = Vec::new();
    for server in &servers {
        let mut left = server.capacity.clone();
        for _ in 0..rng.random_range(1..=3) {
            let cores = left[0] * rng.random_range(30..=90) / 100;
            let mem = left[1] * rng.random_range(30..=90) / 100;
            left[0] -= cores;
            left[1] -= mem;
            running.push(RunningJob {
                id: format!("r{}", running.len()),
                server: server.id.clone(),
                demand: vec![cores, mem],
                end: NOW + rng.random_range(60..=4 * 3600),
            });
        }
    }
    // The largest server has the most of both resources: clamping to it makes every job fit.
    let largest = servers
        .iter()
        .map(|s| s.capacity.clone())
        .max()
        .expect("at least one server");
    // Mixed sizes: 40% small (1-8 cores), 40% medium (16-64), 20% large (64-128), 1-4 GiB
    // per core; the queue asks for several times the free capacity, so jobs wait and backfill.
    let queue = (0..jobs)
        .map(|j| {
            let cores: i64 = match rng.random_range(0..10) {
                0..=3 => rng.random_range(1..=8),
                4..=7 => rng.random_range(16..=64),
                _ => rng.random_range(64..=128),
            };
            let cores = cores.min(largest[0]);
            let mem = (cores * rng.random_range(1..=4)).min(largest[1]);
            // Walltimes from one minute to a day, roughly log-uniform.
            let walltime = 60 * (1i64 << rng.random_range(0..=10)) + rng.random_range(0..60);
            QueuedJob::new(
                format!("j{j}"),
                NOW - rng.random_range(0..=6 * 3600),
                vec![cores, mem],
                walltime,
            )
        })
        .collect();
    Instance {
        now: NOW,
        resources: vec!["cores".into(), "mem_gib".into()],
        servers,
        running,
        queue,
    }
}

/// The FCFS order (submit time, then queue position).
fn fcfs(problem: &Problem) -> Vec<usize> {
    let mut order: Vec<usize> = (0..problem.jobs()).collect();
    order.sort_by_key(|&j| (problem.submit(j), j));
    order
}

fn bench_dispatch(c: &mut Criterion) {
    for (jobs, servers) in [(10, 8), (100, 64)] {
        let instance = instance(servers, jobs, 42);
        let problem = Problem::new(&instance).expect("benchmark instance is valid");
        let order = fcfs(&problem);
        for variant in [Variant::Serial, Variant::Strict] {
            let name = format!(
                "dispatch/{jobs} jobs on {servers} servers/{}",
                variant.name()
            );
            c.bench_function(&name, |b| {
                b.iter(|| dispatch(black_box(&problem), black_box(&order), variant).unwrap())
            });
        }
    }
}

fn bench_place_undo(c: &mut Criterion) {
    let instance = instance(64, 100, 42);
    let problem = Problem::new(&instance).expect("benchmark instance is valid");
    let order = fcfs(&problem);
    let (last, rest) = order.split_last().unwrap();
    // 99 jobs placed; time placing the 100th (earliest start over 64 server profiles, then
    // inserting it) and undoing it: one node of a depth-first search.
    let mut d = Dispatcher::new(&problem, Variant::Serial);
    for &j in rest {
        d.place(j);
    }
    c.bench_function("place+undo/100 jobs on 64 servers/last job", |b| {
        b.iter(|| {
            let at = d.place(black_box(*last));
            d.undo();
            at
        })
    });
    // The same for the first job in order, on an empty schedule (only running jobs).
    let mut d = Dispatcher::new(&problem, Variant::Serial);
    c.bench_function("place+undo/100 jobs on 64 servers/first job", |b| {
        b.iter(|| {
            let at = d.place(black_box(order[0]));
            d.undo();
            at
        })
    });
}

criterion_group!(benches, bench_dispatch, bench_place_undo);
criterion_main!(benches);
