//! Planning with run-time estimates: hand-computed cases.

use super::*;
use crate::instance::{Server, Time};

fn pool(cores: i64) -> Vec<Server> {
    vec![Server {
        id: "pool".into(),
        capacity: vec![cores],
    }]
}

fn job(id: &str, submit: Time, cores: i64, wall: Time, run: Time, est: Option<Time>) -> SimJob {
    SimJob {
        estimate: est,
        ..SimJob::new(id, submit, vec![cores], wall, run)
    }
}

fn starts(jobs: Vec<SimJob>, policy: &mut dyn Policy, rule: StartRule) -> Vec<Time> {
    let sim = Simulation::new(vec!["cores".into()], pool(4), jobs).unwrap();
    let r = sim.run(policy, rule).unwrap();
    r.jobs.iter().map(|j| j.start).collect()
}

// a (2 of 4 cores, wall 1000, run 100) at 0; b (4 cores) at 1 is blocked; c (2 cores,
// wall 500, run 50) at 2 fits now. Planned with walltimes, b's reservation is at 1000 and
// c backfills (ends 502 <= 1000). With a's estimate 100, b's reservation is at 100 and c
// would delay it: c waits until b ends at 200. With c's estimate 50 too, c ends (52) before
// the reservation and backfills again.
#[test]
fn reservations_and_backfill_use_the_estimate() {
    let base = |ea, ec| {
        vec![
            job("a", 0, 2, 1000, 100, ea),
            job("b", 1, 4, 100, 100, None),
            job("c", 2, 2, 500, 50, ec),
        ]
    };
    for rule in [StartRule::Easy, StartRule::Conservative] {
        assert_eq!(starts(base(None, None), &mut Fcfs, rule), vec![0, 100, 2]);
        assert_eq!(
            starts(base(Some(100), None), &mut Fcfs, rule),
            vec![0, 100, 200]
        );
        assert_eq!(
            starts(base(Some(100), Some(50)), &mut Fcfs, rule),
            vec![0, 100, 2]
        );
    }
}

// a (2 cores, wall 1000, run 300, estimate 100) outlives its estimate. b (4 cores) at 1
// gets a reservation at 100; c (2 cores, wall 150) at 2 would delay it and waits. At 150
// (d arrives) a is re-planned to end at its walltime 1000, so b's reservation moves to
// 1000 and c (ends 300) backfills at 150. At 300 a and c end: b starts, d after it.
#[test]
fn an_exceeded_estimate_falls_back_to_the_walltime() {
    let jobs = vec![
        job("a", 0, 2, 1000, 300, Some(100)),
        job("b", 1, 4, 100, 100, None),
        job("c", 2, 2, 150, 150, None),
        job("d", 150, 2, 100, 100, None),
    ];
    assert_eq!(
        starts(jobs.clone(), &mut Fcfs, StartRule::Easy),
        vec![0, 300, 150, 400]
    );
    // The snapshot at 150 (before the start rule) shows a planned to its walltime.
    let sim = Simulation::new(vec!["cores".into()], pool(4), jobs).unwrap();
    let mut seen = Vec::new();
    let mut spy = OrderFn(|state: &SimState<'_>, waiting: &[usize]| {
        let inst = state.snapshot();
        crate::validate(&inst).unwrap();
        seen.push((state.now(), inst.running.first().map(|r| r.end)));
        (0..waiting.len()).collect()
    });
    sim.run(&mut spy, StartRule::Easy).unwrap();
    assert!(seen.contains(&(1, Some(100))), "{seen:?}");
    assert!(seen.contains(&(150, Some(1000))), "{seen:?}");
}

/// SJF as a static key on the job's walltime, as the policy sees it.
struct Sjf;
impl Policy for Sjf {
    fn order(&mut self, _: &SimState<'_>, waiting: &[usize]) -> Vec<usize> {
        (0..waiting.len()).collect()
    }
    fn static_key(&self, job: &SimJob) -> Option<f64> {
        Some(job.walltime as f64)
    }
}

// x (4 cores) runs 0..100; y (wall 500, estimate 20) and z (wall 50) wait. SJF on
// walltimes runs z first; on the estimates y first. Both are killed at their walltime
// only, and the snapshot's meta keeps y's request.
#[test]
fn policies_see_the_estimate() {
    let jobs = |ey| {
        vec![
            job("x", 0, 4, 100, 100, None),
            job("y", 1, 4, 500, 30, ey),
            job("z", 2, 4, 50, 50, None),
        ]
    };
    assert_eq!(
        starts(jobs(None), &mut Sjf, StartRule::Easy),
        vec![0, 150, 100]
    );
    assert_eq!(
        starts(jobs(Some(20)), &mut Sjf, StartRule::Easy),
        vec![0, 100, 130]
    );
    let sim = Simulation::new(vec!["cores".into()], pool(4), jobs(Some(20))).unwrap();
    assert_eq!(sim.planning_jobs()[1].walltime, 20);
    assert_eq!(sim.jobs()[1].walltime, 500);
    let mut metas = Vec::new();
    let mut spy = OrderFn(|state: &SimState<'_>, waiting: &[usize]| {
        let inst = state.snapshot();
        for q in &inst.queue {
            metas.push((q.id.clone(), q.walltime, q.meta.clone()));
        }
        (0..waiting.len()).collect()
    });
    sim.run(&mut spy, StartRule::Easy).unwrap();
    assert!(metas.contains(&(
        "y".into(),
        20,
        Some(serde_json::json!({"requested_walltime": 500}))
    )));
    assert!(metas.contains(&("z".into(), 50, None)));
    let bad = vec![job("q", 0, 1, 10, 10, Some(0))];
    let err = Simulation::new(vec!["cores".into()], pool(4), bad).unwrap_err();
    assert!(matches!(err, SimError::BadEstimate { .. }), "{err}");
}

/// A policy that configures each job at its arrival: job "b" gets 4 cores instead of 1 and
/// runs 30 s instead of 10 (so it waits for "a"); a policy that changes a job's id is refused.
#[test]
fn a_policy_configures_jobs_at_arrival() {
    struct Widen(bool);
    impl Policy for Widen {
        fn order(&mut self, _state: &SimState<'_>, waiting: &[usize]) -> Vec<usize> {
            (0..waiting.len()).collect()
        }
        fn arrive(&mut self, state: &SimState<'_>, j: usize) -> Option<SimJob> {
            let given = &state.input_jobs()[j];
            (given.id == "b").then(|| SimJob {
                id: if self.0 {
                    "renamed".into()
                } else {
                    given.id.clone()
                },
                demand: vec![4],
                walltime: 30,
                runtime: 30,
                ..given.clone()
            })
        }
    }
    let servers = vec![Server {
        id: "s".into(),
        capacity: vec![4],
    }];
    let jobs = vec![
        SimJob::new("a", 0, vec![2], 100, 50),
        SimJob::new("b", 10, vec![1], 100, 10),
    ];
    let sim = Simulation::new(vec!["cores".into()], servers, jobs).unwrap();
    let result = sim.run(&mut Widen(false), StartRule::Strict).unwrap();
    assert_eq!(result.jobs[1].start, 50, "4 cores wait for a");
    assert_eq!(result.jobs[1].end, 80);
    let refused = sim.run(&mut Widen(true), StartRule::Strict).unwrap_err();
    assert!(refused.to_string().contains("another id"), "{refused}");
}
