//! Numbers that describe each job a step state offers, for policies that score candidates
//! (the `step-scorer` models of `schedlm_finetune::scorer`, the Python `StepEnv`'s
//! `features`).
//!
//! A step prompt lists the jobs that may go next with their demand, time and start
//! ([`crate::step`]); a candidate scorer reads the same state as numbers, one row of
//! [`FEATURES`] per candidate in the order the prompt lists them. Beside what the prompt shows,
//! each row says what placing the job next does to the others (how much later each of them
//! could start) and what placing the listing's first job does to it: the one-step effect a
//! reader of the prompt would have to work out from the servers' free capacity, and how many
//! queued jobs wait for it (its dependents, which the listing does not show: only jobs whose
//! dependencies are placed are candidates). Nothing here looks further than one placement: a
//! scorer that uses these rows still decides in one pass per step, with no search.
//!
//! Times are in minutes under `ln(1 + x)`; "weighted" divides a job's delay by its time with a
//! floor of 10 seconds (the bounded slowdown's weights, SPEC section 4).
//!
//! ```
//! use schedlm_dataset::features::{candidate_features, FEATURES};
//! use schedlm_model::{Dispatcher, Instance, Problem, Variant};
//!
//! let instance = Instance::from_json(r#"{"now": 0, "resources": ["cores"],
//!   "servers": [{"id": "n0", "capacity": [4]}],
//!   "queue": [{"id": "a", "submit": 0, "demand": [4], "walltime": 600},
//!             {"id": "b", "submit": 0, "demand": [2], "walltime": 60}]}"#).unwrap();
//! let problem = Problem::new(&instance).unwrap();
//! let d = Dispatcher::new(&problem, Variant::Serial);
//! let rows = candidate_features(&d, &[0, 1]);
//! assert_eq!(rows.len(), 2);
//! assert_eq!(rows[0].0, 1); // `b` ends first: listed first
//! assert_eq!(rows[0].1.len(), FEATURES.len());
//! ```

use schedlm_model::{Dispatcher, Time};
use schedlm_solver::greedy::listing;

/// The names of a candidate's numbers, in row order (the `features` of a scorer's config).
pub const FEATURES: [&str; 25] = [
    "time",
    "start",
    "end",
    "end_after_first",
    "start_after_earliest",
    "time_over_shortest",
    "start_weighted",
    "position",
    "is_first",
    "candidates",
    "demand_mean",
    "demand_max",
    "delays_weighted",
    "delays",
    "delayed_share",
    "delayed_by_first_weighted",
    "delayed_by_first",
    "jobs_left",
    "area_share",
    "time_rank",
    "area_rank",
    "work_ahead",
    "dependents",
    "dependents_weighted",
    "dependents_time",
];

/// The version of [`FEATURES`].
pub const FEATURES_VERSION: &str = "candidates-v3";

/// Earlier versions whose features are the first ones of [`FEATURES`], computed the same way:
/// a scorer trained on one reads those columns of today's rows.
pub const FEATURES_COMPATIBLE: [&str; 1] = ["candidates-v2"];

/// One row of [`FEATURES`].
pub type Row = [f32; 25];

const FLOOR: f64 = 10.0;

fn minutes(seconds: Time) -> f32 {
    (seconds.max(0) as f64 / 60.0).ln_1p() as f32
}

/// For every job that may be placed next on `d`'s partial schedule, in the order step-v2 lists
/// them (by end, ties by `rank`, [`listing`]): its queue index and its row of [`FEATURES`].
pub fn candidate_features(d: &Dispatcher<'_>, rank: &[usize]) -> Vec<(usize, Row)> {
    let listed = listing(d, rank);
    let n = listed.len();
    if n == 0 {
        return Vec::new();
    }
    let problem = d.problem();
    let now = problem.now();
    let p = |j: usize| problem.walltime(j);
    let ends: Vec<Time> = listed.iter().map(|&(j, s)| s + p(j)).collect();
    let end_min = ends.iter().copied().min().unwrap_or(now);
    let start_min = listed.iter().map(|&(_, s)| s).min().unwrap_or(now);
    let time_min = listed.iter().map(|&(j, _)| p(j)).min().unwrap_or(1).max(1);
    let left = (0..problem.jobs()).filter(|&j| !d.is_placed(j)).count();
    let shares: Vec<(f32, f32)> = listed.iter().map(|&(j, _)| demand_share(d, j)).collect();
    let areas: Vec<f64> = listed
        .iter()
        .zip(&shares)
        .map(|(&(j, _), &(mean, _))| p(j) as f64 * f64::from(mean))
        .collect();
    let area_total: f64 = areas.iter().sum::<f64>().max(1e-9);
    let rank_of = |values: &[f64], k: usize| {
        values.iter().filter(|&&v| v < values[k]).count() as f32 / n as f32
    };
    let times: Vec<f64> = listed.iter().map(|&(j, _)| p(j) as f64).collect();
    let per_server = area_total / problem.servers().max(1) as f64;
    let waiting = dependents(d);
    let mut probe = d.clone();
    let delays: Vec<Vec<Time>> = listed
        .iter()
        .map(|&(j, _)| delays_after(&mut probe, j, &listed))
        .collect();
    listed
        .iter()
        .enumerate()
        .map(|(k, &(j, start))| {
            let (mean, max) = shares[k];
            let others = &delays[k];
            let weighted: f64 = listed
                .iter()
                .zip(others)
                .map(|(&(o, _), &late)| late as f64 / (p(o) as f64).max(FLOOR))
                .sum();
            let total: Time = others.iter().sum();
            let delayed = others.iter().filter(|&&late| late > 0).count();
            let by_first = delays[0][k];
            let row: Row = [
                minutes(p(j)),
                minutes(start - now),
                minutes(ends[k] - now),
                minutes(ends[k] - end_min),
                minutes(start - start_min),
                (p(j).max(1) as f64 / time_min as f64).ln() as f32,
                (((start - now) as f64) / (p(j) as f64).max(FLOOR)).ln_1p() as f32,
                k as f32 / n as f32,
                f32::from(k == 0),
                (n as f32).ln(),
                mean,
                max,
                weighted.ln_1p() as f32,
                minutes(total),
                delayed as f32 / (n.max(2) - 1) as f32,
                ((by_first as f64) / (p(j) as f64).max(FLOOR)).ln_1p() as f32,
                minutes(by_first),
                (left as f32).ln(),
                (areas[k] / area_total) as f32,
                rank_of(&times, k),
                rank_of(&areas, k),
                (per_server / 60.0).ln_1p() as f32,
                waiting[j].count as f32,
                waiting[j].weighted.ln_1p() as f32,
                minutes(waiting[j].time),
            ];
            (j, row)
        })
        .collect()
}

/// The unplaced queued jobs that wait for one job, directly or through others.
#[derive(Clone, Copy, Default)]
struct Waiting {
    count: usize,
    /// The sum of their bounded-slowdown weights, `60 / max(time, 10 s)`.
    weighted: f64,
    /// The sum of their times.
    time: Time,
}

/// For every job, the unplaced jobs that wait for it (zero for jobs nothing waits for).
fn dependents(d: &Dispatcher<'_>) -> Vec<Waiting> {
    let problem = d.problem();
    let n = problem.jobs();
    let mut out = vec![Waiting::default(); n];
    if !problem.has_queued_deps() {
        return out;
    }
    let mut children = vec![Vec::new(); n];
    for j in (0..n).filter(|&j| !d.is_placed(j)) {
        for &parent in problem.deps(j) {
            children[parent].push(j);
        }
    }
    let mut seen = vec![usize::MAX; n];
    let mut stack = Vec::new();
    for (j, waiting) in out.iter_mut().enumerate() {
        stack.extend_from_slice(&children[j]);
        while let Some(x) = stack.pop() {
            if seen[x] == j {
                continue;
            }
            seen[x] = j;
            let p = problem.walltime(x);
            waiting.count += 1;
            waiting.weighted += 60.0 / (p as f64).max(FLOOR);
            waiting.time += p;
            stack.extend_from_slice(&children[x]);
        }
    }
    out
}

/// How much later each listed job could start once `j` is placed (0 for `j` itself).
fn delays_after(d: &mut Dispatcher<'_>, j: usize, listed: &[(usize, Time)]) -> Vec<Time> {
    d.place(j);
    let out = listed
        .iter()
        .map(|&(o, start)| {
            if o == j {
                0
            } else {
                (d.earliest(o).start - start).max(0)
            }
        })
        .collect();
    d.undo();
    out
}

/// The job's demand as shares of the capacity of the server its earliest fit is on: the mean
/// and the largest over resources (resources the server lacks count 0).
fn demand_share(d: &Dispatcher<'_>, j: usize) -> (f32, f32) {
    let problem = d.problem();
    let server = d.earliest(j).server;
    let capacity = problem.capacity(server);
    let shares: Vec<f32> = problem
        .demand(j)
        .iter()
        .zip(capacity)
        .map(|(&need, &cap)| {
            if cap > 0 {
                need as f32 / cap as f32
            } else {
                0.0
            }
        })
        .collect();
    let r = shares.len().max(1) as f32;
    let max = shares.iter().copied().fold(0.0, f32::max);
    (shares.iter().sum::<f32>() / r, max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlm_model::{Instance, Problem, Variant};

    fn instance() -> Instance {
        Instance::from_json(
            r#"{"now": 0, "resources": ["cores"],
              "servers": [{"id": "n0", "capacity": [4]}],
              "queue": [{"id": "long", "submit": 0, "demand": [4], "walltime": 600},
                        {"id": "short", "submit": 0, "demand": [4], "walltime": 60},
                        {"id": "half", "submit": 0, "demand": [2], "walltime": 120}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn delays_are_what_placing_a_job_does_to_the_others() {
        let instance = instance();
        let problem = Problem::new(&instance).unwrap();
        let d = Dispatcher::new(&problem, Variant::Serial);
        let rows = candidate_features(&d, &[0, 1, 2]);
        let order: Vec<usize> = rows.iter().map(|r| r.0).collect();
        assert_eq!(order, vec![1, 2, 0], "listed by end: 60, 120, 600");
        let delays = FEATURES.iter().position(|&f| f == "delays").unwrap();
        let by_first = FEATURES
            .iter()
            .position(|&f| f == "delayed_by_first")
            .unwrap();
        // `short` first: `half` and `long` start 60 s later each.
        assert!((rows[0].1[delays] - minutes(120)).abs() < 1e-6);
        // `long` first delays both others by 600 s.
        assert!((rows[2].1[delays] - minutes(1200)).abs() < 1e-6);
        // placing `short` (the first listed) delays `long` by 60 s, itself by nothing.
        assert_eq!(rows[0].1[by_first], 0.0);
        assert!((rows[2].1[by_first] - minutes(60)).abs() < 1e-6);
        assert_eq!(rows[0].1[8], 1.0);
        assert_eq!(rows[1].1[8], 0.0);
    }

    #[test]
    fn dependents_count_the_jobs_waiting_directly_or_through_others() {
        let instance = Instance::from_json(
            r#"{"now": 0, "resources": ["cores"],
              "servers": [{"id": "n0", "capacity": [4]}],
              "queue": [{"id": "a", "submit": 0, "demand": [2], "walltime": 600},
                        {"id": "b", "submit": 0, "demand": [2], "walltime": 60, "deps": ["a"]},
                        {"id": "c", "submit": 0, "demand": [2], "walltime": 5, "deps": ["b"]},
                        {"id": "free", "submit": 0, "demand": [2], "walltime": 120}]}"#,
        )
        .unwrap();
        let problem = Problem::new(&instance).unwrap();
        let mut d = Dispatcher::new(&problem, Variant::Serial);
        let column = |name| FEATURES.iter().position(|&f| f == name).unwrap();
        let (count, weighted, time) = (
            column("dependents"),
            column("dependents_weighted"),
            column("dependents_time"),
        );
        let rows = candidate_features(&d, &[0, 1, 2, 3]);
        let row = |rows: &[(usize, Row)], j| rows.iter().find(|r| r.0 == j).unwrap().1;
        assert_eq!(
            rows.len(),
            2,
            "b and c wait: only a and free are candidates"
        );
        assert_eq!(row(&rows, 0)[count], 2.0);
        // b weighs 60/60, c 60/10 (the 10 s floor): 7 in all.
        assert!((row(&rows, 0)[weighted] - 7f32.ln_1p()).abs() < 1e-6);
        assert!((row(&rows, 0)[time] - minutes(65)).abs() < 1e-6);
        assert_eq!(row(&rows, 3)[count], 0.0);
        d.place(0);
        let rows = candidate_features(&d, &[0, 1, 2, 3]);
        assert_eq!(
            row(&rows, 1)[count],
            1.0,
            "a is placed: c waits for b alone"
        );
    }

    #[test]
    fn the_state_is_left_as_it_was() {
        let instance = instance();
        let problem = Problem::new(&instance).unwrap();
        let mut d = Dispatcher::new(&problem, Variant::Serial);
        d.place(2);
        let before: Vec<_> = listing(&d, &[0, 1, 2]);
        let rows = candidate_features(&d, &[0, 1, 2]);
        assert_eq!(rows.len(), 2);
        assert_eq!(listing(&d, &[0, 1, 2]), before);
        assert!(rows.iter().all(|(_, r)| r.iter().all(|x| x.is_finite())));
    }
}
