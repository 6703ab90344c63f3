//! The `uniform` family: small synthetic clusters with uniform draws everywhere.
//!
//! Resources: `["cores", "mem_gib", "gpus"]`.
//!
//! | what | distribution |
//! |---|---|
//! | servers | `servers` option, else uniform on {2, 3, 4} |
//! | server cores | uniform on {8, 16, 32, 64} |
//! | server memory (GiB) | cores x uniform on {2, 4, 8} |
//! | server GPUs | 0 with probability 1/2, else uniform on {1, 2, 4, 8} |
//! | queued demand | pick a server uniformly; cores uniform on 1..=its cores, memory uniform on 1..=its memory, GPUs uniform on 0..=its GPUs (so the job fits that server) |
//! | walltime | 60 s x uniform on 1..=120 (1 minute to 2 hours) |
//! | runtime | ceil(walltime x uniform [0.2, 1)), at least 1 |
//! | submit | `now` - uniform on 0..=7200 (the last two hours) |
//! | user | uniform on u0..u7 |
//! | running jobs | `load` option, else uniform on 1..=servers jobs; demand: pick a server uniformly, cores uniform on 1..=its cores, memory and GPUs uniform up to the same share of that server (ceil(capacity x cores / server cores); memory at least 1); placed by [`crate::family::draft`]'s fill; each has a walltime as above and has run a uniform part of it, so `end` = `now` + (walltime - elapsed) |
//! | `now` | 1 to 6 days (uniform) plus a uniform time of day |

use rand::Rng;

use crate::family::draft::{
    draw_now_base, fill, running_drafts, shrink_proportional, Draft, DraftJob, DraftRunning, Target,
};
use crate::Config;

/// Resource names of the family.
pub const RESOURCES: [&str; 3] = ["cores", "mem_gib", "gpus"];
/// Fewest cores a server of this family can have (used to bound `Load::Jobs`).
pub const MIN_SERVER_CORES: i64 = 8;
/// Server count when the `servers` option is absent: uniform on this range.
pub const DEFAULT_SERVERS: (usize, usize) = (2, 4);
/// Size of the user pool.
pub const USERS: u32 = 8;

fn draw_server<R: Rng>(rng: &mut R) -> Vec<i64> {
    let cores = [8, 16, 32, 64][rng.random_range(0..4usize)];
    let mem = cores * [2, 4, 8][rng.random_range(0..3usize)];
    let gpus = if rng.random_bool(0.5) {
        0
    } else {
        [1, 2, 4, 8][rng.random_range(0..4usize)]
    };
    vec![cores, mem, gpus]
}

fn draw_demand<R: Rng>(rng: &mut R, caps: &[Vec<i64>]) -> Vec<i64> {
    let cap = &caps[rng.random_range(0..caps.len())];
    vec![
        rng.random_range(1..=cap[0]),
        rng.random_range(1..=cap[1]),
        rng.random_range(0..=cap[2]),
    ]
}

/// A running job's demand: a server is picked uniformly, cores uniform on 1..=its cores, and
/// memory and GPUs uniform up to the same share of the server as the cores (memory at least
/// 1), so running jobs seldom block a server's cores by filling its memory.
pub(crate) fn draw_running_demand<R: Rng>(rng: &mut R, caps: &[Vec<i64>]) -> Vec<i64> {
    let cap = &caps[rng.random_range(0..caps.len())];
    let cores = rng.random_range(1..=cap[0]);
    let share = |total: i64| (total * cores + cap[0] - 1) / cap[0];
    vec![
        cores,
        rng.random_range(1..=share(cap[1]).max(1)),
        rng.random_range(0..=share(cap[2])),
    ]
}

fn draw_walltime<R: Rng>(rng: &mut R) -> i64 {
    60 * rng.random_range(1..=120i64)
}

/// Running jobs as this family places them (and `mixed`): demands from
/// [`draw_running_demand`], walltimes from `walltime`, a uniform part of each elapsed.
pub(crate) fn place_running<R: Rng>(
    rng: &mut R,
    caps: &[Vec<i64>],
    target: Target,
    walltime: fn(&mut R) -> i64,
) -> Vec<DraftRunning> {
    let placed = fill(
        rng,
        caps,
        target,
        |r| {
            let demand = draw_running_demand(r, caps);
            let w = walltime(r);
            let elapsed = r.random_range(0..w);
            (demand, (w, elapsed))
        },
        |d, l| shrink_proportional(d, l, false),
    );
    running_drafts(placed)
}

/// A queued job as this family draws it (and `mixed`): the walltime from `walltime`, a run
/// time of ceil(walltime x uniform [0.2, 1)), submitted up to `ago_max` seconds before `now`,
/// by one of [`USERS`] users.
pub(crate) fn queued_job<R: Rng>(
    rng: &mut R,
    demand: Vec<i64>,
    walltime: fn(&mut R) -> i64,
    ago_max: i64,
) -> DraftJob {
    let walltime = walltime(rng);
    let runtime = ((walltime as f64 * rng.random_range(0.2..1.0)).ceil() as i64).clamp(1, walltime);
    DraftJob {
        ago: rng.random_range(0..=ago_max),
        demand,
        walltime,
        runtime: Some(runtime),
        user: format!("u{}", rng.random_range(0..USERS)),
        meta: None,
    }
}

pub(crate) fn generate<R: Rng>(config: &Config, rng: &mut R) -> Draft {
    let n_servers = config
        .servers
        .unwrap_or_else(|| rng.random_range(DEFAULT_SERVERS.0..=DEFAULT_SERVERS.1));
    let caps: Vec<Vec<i64>> = (0..n_servers).map(|_| draw_server(rng)).collect();
    let now_base = draw_now_base(rng);

    let target = match config.load {
        Some(load) => Target::of(load, &caps),
        None => Target::Count(rng.random_range(1..=n_servers)),
    };
    let running = place_running(rng, &caps, target, draw_walltime);
    let n_queue = rng.random_range(config.queue_min..=config.queue_max);
    let queue = (0..n_queue)
        .map(|_| {
            let demand = draw_demand(rng, &caps);
            queued_job(rng, demand, draw_walltime, 7_200)
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
    fn heterogeneous_servers_and_fitting_demands() {
        let config = Config::new(Family::Uniform, 11);
        let mut differing = 0;
        for index in 0..200 {
            let inst = generate_one(&config, index).unwrap();
            assert_eq!(inst.resources, ["cores", "mem_gib", "gpus"]);
            assert!((2..=4).contains(&inst.servers.len()));
            assert!(!inst.running.is_empty() && inst.running.len() <= inst.servers.len());
            if inst
                .servers
                .iter()
                .any(|s| s.capacity != inst.servers[0].capacity)
            {
                differing += 1;
            }
            for j in &inst.queue {
                assert!(j.walltime >= 60 && j.walltime <= 7_200);
                let rt = j.runtime.unwrap();
                assert!(rt >= 1 && rt <= j.walltime);
                assert!(inst.now - j.submit <= 7_200);
            }
        }
        assert!(differing > 150, "{differing}");
    }
}
