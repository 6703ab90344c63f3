//! The `mixed` family: a few servers, some with GPUs, and jobs of very different lengths that
//! compete for three resources. It is where proofs are hard (issue #34): GPU jobs can run on
//! the GPU servers only, CPU jobs anywhere, and lengths spread over two and a half orders of
//! magnitude.
//!
//! Resources: `["cores", "mem_gib", "gpus"]`.
//!
//! | what | distribution |
//! |---|---|
//! | servers | `servers` option, else 4 |
//! | server cores | uniform on {32, 64} |
//! | server memory (GiB) | cores x uniform on {4, 8} |
//! | server GPUs | servers 0, 2, 4, ...: uniform on {4, 8}; the others none |
//! | queued job | a GPU job with probability 2/5: a GPU server picked uniformly, GPUs uniform on 1..=its GPUs; else a server picked uniformly and no GPUs; cores uniform on 1..=the server's cores, memory uniform on 1..=its memory (so the job fits that server) |
//! | walltime | log-uniform on [30 s, 4 h], whole seconds |
//! | runtime | ceil(walltime x uniform [0.2, 1)), at least 1 |
//! | submit | `now` - uniform on 0..=14,400 (the last four hours) |
//! | user | uniform on u0..u7 |
//! | running jobs | `load` option, else uniform on 0..=3 x servers jobs; demand as the `uniform` family's running jobs (cores uniform on 1..=the server's cores, memory and GPUs up to the same share); walltime as above, a uniform part of it elapsed |
//! | `now` | 1 to 6 days (uniform) plus a uniform time of day |

use rand::Rng;

use crate::family::draft::{draw_now_base, Draft, Target};
use crate::family::uniform::{place_running, queued_job};
use crate::Config;

/// Resource names of the family.
pub const RESOURCES: [&str; 3] = ["cores", "mem_gib", "gpus"];
/// Fewest cores a server of this family has (used to bound `Load::Jobs`).
pub const MIN_SERVER_CORES: i64 = 32;
/// Server count when the `servers` option is absent.
pub const DEFAULT_SERVERS: usize = 4;
/// Shortest and longest walltime, seconds.
pub const WALLTIME: (f64, f64) = (30.0, 14_400.0);

fn draw_server<R: Rng>(rng: &mut R, index: usize) -> Vec<i64> {
    let cores = [32, 64][rng.random_range(0..2usize)];
    let mem = cores * [4, 8][rng.random_range(0..2usize)];
    let gpus = if index.is_multiple_of(2) {
        [4, 8][rng.random_range(0..2usize)]
    } else {
        0
    };
    vec![cores, mem, gpus]
}

fn draw_demand<R: Rng>(rng: &mut R, caps: &[Vec<i64>]) -> Vec<i64> {
    let gpu_servers: Vec<&Vec<i64>> = caps.iter().filter(|c| c[2] > 0).collect();
    let gpu_job = !gpu_servers.is_empty() && rng.random_bool(0.4);
    let cap = if gpu_job {
        gpu_servers[rng.random_range(0..gpu_servers.len())]
    } else {
        &caps[rng.random_range(0..caps.len())]
    };
    vec![
        rng.random_range(1..=cap[0]),
        rng.random_range(1..=cap[1]),
        if gpu_job {
            rng.random_range(1..=cap[2])
        } else {
            0
        },
    ]
}

fn draw_walltime<R: Rng>(rng: &mut R) -> i64 {
    let (lo, hi) = (WALLTIME.0.ln(), WALLTIME.1.ln());
    (rng.random_range(lo..=hi).exp().round() as i64).clamp(WALLTIME.0 as i64, WALLTIME.1 as i64)
}

pub(crate) fn generate<R: Rng>(config: &Config, rng: &mut R) -> Draft {
    let n_servers = config.servers.unwrap_or(DEFAULT_SERVERS);
    let caps: Vec<Vec<i64>> = (0..n_servers).map(|i| draw_server(rng, i)).collect();
    let now_base = draw_now_base(rng);
    let target = match config.load {
        Some(load) => Target::of(load, &caps),
        None => Target::Count(rng.random_range(0..=3 * n_servers)),
    };
    let running = place_running(rng, &caps, target, draw_walltime);
    let n_queue = rng.random_range(config.queue_min..=config.queue_max);
    let queue = (0..n_queue)
        .map(|_| {
            let demand = draw_demand(rng, &caps);
            queued_job(rng, demand, draw_walltime, 14_400)
        })
        .collect();
    Draft {
        now_base,
        resources: &RESOURCES,
        capacities: caps,
        running,
        queue,
    }
}

#[cfg(test)]
mod tests {
    use crate::{generate_one, Config, Family};

    #[test]
    fn gpu_jobs_fit_only_the_gpu_servers_and_lengths_spread() {
        let config = Config::new(Family::Mixed, 5);
        let (mut gpu_jobs, mut jobs, mut short, mut long) = (0, 0, 0, 0);
        for index in 0..100 {
            let inst = generate_one(&config, index).unwrap();
            assert_eq!(inst.resources, ["cores", "mem_gib", "gpus"]);
            assert_eq!(inst.servers.len(), 4);
            assert!(inst.servers[0].capacity[2] > 0 && inst.servers[1].capacity[2] == 0);
            assert!(inst.running.len() <= 12);
            for j in &inst.queue {
                jobs += 1;
                gpu_jobs += usize::from(j.demand[2] > 0);
                assert!((30..=14_400).contains(&j.walltime), "{}", j.walltime);
                short += usize::from(j.walltime < 300);
                long += usize::from(j.walltime > 3_600);
                assert!(inst.now - j.submit <= 14_400);
            }
        }
        let share = gpu_jobs as f64 / jobs as f64;
        assert!((0.3..0.5).contains(&share), "{share}");
        // log-uniform: about 36 % under 5 minutes, 23 % over an hour.
        assert!(
            short * 4 > jobs && long * 6 > jobs,
            "{short} {long} of {jobs}"
        );
    }
}
