//! Run-time estimators: hand cases, determinism, causality and scoring.

use std::path::Path;

use schedlm_generator::trace::estimate::{
    completions, effective_runtime, evaluate, evaluate_transfer, evaluate_with, predict_online,
    score, Estimator, Predictor, Split, MODEL_WARMUP, SIMILAR_RECENT,
};
use schedlm_generator::trace::swf::{parse_swf, read_swf_with_waits, SwfOptions, Trace, TraceJob};

fn job(number: i64, submit: i64, runtime: i64, walltime: i64, user: i64) -> TraceJob {
    TraceJob {
        number,
        submit,
        runtime,
        walltime,
        procs: 1 + number % 4,
        user,
        group: -1,
        executable: -1,
        queue: -1,
        partition: -1,
        status: 1,
        line: number as usize,
    }
}

/// A deterministic synthetic trace: users with habits, requests that overestimate.
fn synthetic(n: i64) -> Trace {
    let mut text = String::new();
    let mut state: u64 = 12345;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    let mut submit = 0;
    for number in 1..=n {
        submit += (next() % 600) as i64;
        let user = (next() % 7) as i64;
        let base = 60 * (user + 1) * (user + 1);
        let run = (base / 2 + (next() % (base as u64)) as i64).max(1);
        let wall = run * (1 + (next() % 5) as i64) + 10;
        let procs = 1 + (next() % 16) as i64;
        let wait = (next() % 3000) as i64;
        text += &format!("{number} {submit} {wait} {run} {procs} -1 -1 {procs} {wall} -1 1 {user} -1 -1 -1 -1 -1 -1\n");
    }
    parse_swf(text.as_bytes(), "synthetic", &SwfOptions::default()).unwrap()
}

#[test]
fn user_estimator_is_the_walltime() {
    let mut p = Predictor::new(Estimator::User);
    p.observe(&job(1, 0, 10, 100, 1));
    assert_eq!(p.predict(&job(2, 0, 10, 77, 1)), 77);
}

#[test]
fn last2_on_a_hand_sequence() {
    let mut p = Predictor::new(Estimator::Last2);
    let query = |w| job(99, 0, 1, w, 1);
    assert_eq!(p.predict(&query(5000)), 5000, "no history: walltime");
    p.observe(&job(1, 0, 100, 1000, 1));
    assert_eq!(p.predict(&query(5000)), 5000, "one job: still the walltime");
    p.observe(&job(2, 0, 301, 1000, 1));
    assert_eq!(
        p.predict(&query(5000)),
        201,
        "(100 + 301) / 2 rounded half up"
    );
    p.observe(&job(3, 0, 500, 1000, 2)); // another user changes nothing for user 1
    assert_eq!(p.predict(&query(5000)), 201);
    p.observe(&job(4, 0, 2000, 1000, 1)); // overran: learned as its walltime, 1000
    assert_eq!(
        p.predict(&query(5000)),
        651,
        "(301 + 1000) / 2 rounded half up"
    );
    assert_eq!(p.predict(&query(600)), 600, "capped at the walltime");
    // Unknown users (negative ids) have no history.
    p.observe(&job(5, 0, 10, 1000, -1));
    p.observe(&job(6, 0, 10, 1000, -1));
    assert_eq!(p.predict(&job(7, 0, 1, 900, -1)), 900);
    assert_eq!(p.observed(), 6);
}

#[test]
fn similar_takes_the_nearest_of_the_users_recent_jobs() {
    let mut p = Predictor::new(Estimator::Similar);
    let app = |number, runtime, walltime, user, executable| TraceJob {
        executable,
        ..job(number, 0, runtime, walltime, user)
    };
    assert_eq!(
        p.predict(&app(99, 1, 5000, 1, 7)),
        5000,
        "no history: walltime"
    );
    // User 1 alternates two programs with different run times; last2 would average them.
    p.observe(&app(1, 100, 1000, 1, 7));
    p.observe(&app(2, 900, 1000, 1, 8));
    p.observe(&app(3, 120, 1000, 1, 7));
    assert_eq!(
        p.predict(&app(99, 1, 1000, 1, 7)),
        120,
        "the latest run of program 7"
    );
    assert_eq!(p.predict(&app(99, 1, 1000, 1, 8)), 900);
    assert_eq!(
        p.predict(&app(99, 1, 500, 1, 8)),
        500,
        "capped at the walltime"
    );
    // Another user's jobs are never matched, nor are unknown users'.
    assert_eq!(p.predict(&app(99, 1, 5000, 2, 7)), 5000);
    p.observe(&app(4, 10, 1000, -1, 7));
    assert_eq!(p.predict(&app(99, 1, 5000, -1, 7)), 5000);
    // Only the last SIMILAR_RECENT jobs count: program 8's run falls out of the window.
    for n in 0..SIMILAR_RECENT as i64 {
        p.observe(&app(10 + n, 300, 1000, 1, 7));
    }
    assert_eq!(p.predict(&app(99, 1, 1000, 1, 8)), 300);
}

#[test]
fn predictions_stay_within_one_and_walltime() {
    let trace = synthetic(400);
    let ends = completions(&trace, None);
    for estimator in Estimator::ALL {
        let mut p = Predictor::new(estimator);
        let preds = predict_online(&mut p, &trace.jobs, &ends, 0).unwrap();
        for (j, &pred) in trace.jobs.iter().zip(&preds) {
            assert!(
                pred >= 1 && pred <= j.walltime,
                "{estimator}: {pred} for {j:?}"
            );
        }
        assert_eq!(p.observed(), trace.jobs.len());
    }
    // A model with a tiny walltime.
    let mut p = Predictor::new(Estimator::Model);
    for i in 0..(MODEL_WARMUP as i64 + 5) {
        p.observe(&job(i, 0, 5000, 9000, 1));
    }
    assert_eq!(p.predict(&job(1000, 0, 1, 1, 1)), 1);
    assert!(p.predict(&job(1001, 0, 1, 9000, 1)) > 1000);
}

#[test]
fn model_learns_a_user_habit() {
    // User 1 always runs 10% of a 10000 s request; the model should learn it.
    let mut p = Predictor::new(Estimator::Model);
    let query = job(1000, 0, 1000, 10_000, 1);
    assert_eq!(p.predict(&query), 10_000, "warm-up: walltime");
    for i in 0..100 {
        let j = job(i, i, 1000, 10_000, 1);
        p.submit(&j);
        p.observe(&j);
    }
    let pred = p.predict(&query);
    assert!((900..=1100).contains(&pred), "{pred}");
}

#[test]
fn evaluation_is_deterministic() {
    let trace = synthetic(500);
    let a = evaluate(&trace, Split::Fraction(0.5)).unwrap();
    let b = evaluate(&trace, Split::Fraction(0.5)).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.len(), Estimator::ALL.len());
    assert_eq!(
        a.iter().map(|s| s.estimator).collect::<Vec<_>>(),
        Estimator::ALL
    );
    assert!(a.iter().all(|s| s.jobs == 250));
    // The user walltime never underestimates.
    assert_eq!(a[0].under, 0.0);
    // The same predictions twice, through a fresh predictor each time.
    let ends = completions(&trace, None);
    for estimator in Estimator::ALL {
        let p1 = predict_online(&mut Predictor::new(estimator), &trace.jobs, &ends, 0).unwrap();
        let p2 = predict_online(&mut Predictor::new(estimator), &trace.jobs, &ends, 0).unwrap();
        assert_eq!(p1, p2);
    }
}

/// Predictions made at or before time `t` must not change when jobs that complete after `t`
/// change their run time (still completing after `t`).
#[test]
fn predictions_never_use_jobs_completing_later() {
    let trace = synthetic(600);
    let waits: Vec<Option<i64>> = (0..trace.jobs.len())
        .map(|i| Some((i as i64 * 37) % 5000))
        .collect();
    let ends = completions(&trace, Some(&waits));
    for cut in [
        trace.jobs[150].submit,
        trace.jobs[300].submit,
        trace.jobs[450].submit,
    ] {
        let mut changed = trace.clone();
        let mut changed_ends = ends.clone();
        let mut touched = 0;
        for (i, j) in changed.jobs.iter_mut().enumerate() {
            if ends[i] > cut {
                j.runtime = j.runtime * 3 + 7;
                changed_ends[i] = j.submit + waits[i].unwrap() + j.runtime;
                assert!(changed_ends[i] > cut);
                touched += 1;
            }
        }
        assert!(touched > 0);
        for estimator in Estimator::ALL {
            let a = predict_online(&mut Predictor::new(estimator), &trace.jobs, &ends, 0).unwrap();
            let b = predict_online(
                &mut Predictor::new(estimator),
                &changed.jobs,
                &changed_ends,
                0,
            )
            .unwrap();
            for (i, j) in trace.jobs.iter().enumerate() {
                if j.submit <= cut {
                    assert_eq!(
                        a[i], b[i],
                        "{estimator}: job {} at {} (cut {cut})",
                        j.number, j.submit
                    );
                }
            }
        }
    }
}

#[test]
fn completion_at_the_query_time_is_visible_one_second_later_is_not() {
    // Job 1 and 2 of user 5 complete at 100 and 101; job 3 (user 5) is submitted at 100.
    let jobs = vec![
        job(1, 0, 40, 1000, 5),
        job(2, 1, 20, 1000, 5),
        job(4, 2, 60, 1000, 5),
        job(3, 100, 10, 1000, 5),
    ];
    let ends = [100, 101, 100, 150];
    let preds = predict_online(&mut Predictor::new(Estimator::Last2), &jobs, &ends, 3).unwrap();
    // Jobs 1 and 4 (ending at 100) are known, job 2 (ending at 101) is not: (40 + 60) / 2.
    assert_eq!(preds, [50]);
    let ends = [100, 101, 101, 150];
    let preds = predict_online(&mut Predictor::new(Estimator::Last2), &jobs, &ends, 3).unwrap();
    assert_eq!(preds, [1000], "only one completed job: the walltime");
}

#[test]
fn mape_by_hand() {
    // runs 100, 50, 10 (effective: the second overran its walltime of 50), predictions 150, 25, 10.
    let jobs = [
        job(1, 0, 100, 200, 1),
        job(2, 0, 80, 50, 1),
        job(3, 0, 10, 20, 1),
    ];
    assert_eq!(effective_runtime(&jobs[1]), 50);
    let s = score(Estimator::Model, &jobs, &[150, 25, 10]);
    // APEs: 0.5, 0.5, 0.
    assert_eq!(s.jobs, 3);
    assert!((s.mape - 1.0 / 3.0).abs() < 1e-12, "{s:?}");
    assert!((s.median_ape - 0.5).abs() < 1e-12);
    assert!((s.under - 1.0 / 3.0).abs() < 1e-12);
    // Accuracy: 100/150, 25/50, 1.
    assert!((s.accuracy - (2.0 / 3.0 + 0.5 + 1.0) / 3.0).abs() < 1e-12);
    // Even count: the median is the mean of the two middle values.
    let s = score(Estimator::User, &jobs[..2], &[100, 100]);
    assert!((s.mape - 0.5).abs() < 1e-12);
    assert!((s.median_ape - 0.5).abs() < 1e-12);
    assert_eq!(s.under, 0.0);
}

#[test]
fn evaluate_on_a_tiny_trace_by_hand() {
    // Four jobs of user 1; split after two. No waits.
    let jobs = vec![
        job(1, 0, 100, 1000, 1),   // ends 100
        job(2, 10, 300, 1000, 1),  // ends 310
        job(3, 400, 250, 1000, 1), // scored; both earlier jobs done: last2 = 200
        job(4, 500, 400, 800, 1),  // scored; job 3 still running: last2 = 200
    ];
    let trace = Trace {
        header: Default::default(),
        jobs,
        report: Default::default(),
    };
    let scores = evaluate(&trace, Split::Index(2)).unwrap();
    let user = scores[0];
    assert_eq!(user.jobs, 2);
    // user: |1000-250|/250 = 3, |800-400|/400 = 1.
    assert!((user.mape - 2.0).abs() < 1e-12);
    let last2 = scores[1];
    // last2: |200-250|/250 = 0.2, |200-400|/400 = 0.5.
    assert!((last2.mape - 0.35).abs() < 1e-12, "{last2:?}");
    assert_eq!(last2.under, 1.0);
    assert!(evaluate(&trace, Split::Index(4)).is_err());
    assert!(evaluate(&trace, Split::Fraction(1.0)).is_err());
    assert!(evaluate_with(&trace, &[1, 2], Split::Index(0)).is_err());
}

#[test]
fn transfer_uses_the_training_trace_as_history() {
    let train = Trace {
        header: Default::default(),
        jobs: vec![job(1, 0, 100, 1000, 1), job(2, 10, 300, 1000, 1)],
        report: Default::default(),
    };
    let test = Trace {
        header: Default::default(),
        jobs: vec![job(1, 0, 250, 1000, 1)],
        report: Default::default(),
    };
    let scores = evaluate_transfer(
        &train,
        &completions(&train, None),
        &test,
        &completions(&test, None),
    )
    .unwrap();
    // last2 = 200 against 250.
    assert!((scores[1].mape - 0.2).abs() < 1e-12, "{:?}", scores[1]);
}

#[test]
fn real_trace_sdsc_scores() {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/traces/SDSC-SP2-1998-4.2-cln.swf"
    ));
    let (trace, waits) = read_swf_with_waits(path, &SwfOptions::default()).unwrap();
    let scores = evaluate_with(
        &trace,
        &completions(&trace, Some(&waits)),
        Split::Fraction(0.5),
    )
    .unwrap();
    let (user, last2, model) = (scores[0], scores[1], scores[2]);
    assert_eq!(user.under, 0.0);
    // Both history-based estimators beat the requested walltime by far.
    assert!(last2.mape < user.mape / 2.0, "{scores:?}");
    assert!(model.mape < last2.mape, "{scores:?}");
    assert!(model.accuracy > user.accuracy, "{scores:?}");
}
