//! Full-trace replay (SPEC section 5) of HPC2N: 202,871 jobs on a pool of 240 cores, with
//! FCFS under the strict and EASY start rules. docs/validation.md records the numbers.
//!
//! Run: `cargo bench -p schedlm-model --bench replay`. The trace is read from
//! `$SCHEDLM_TRACES` (default `../shared/data/traces`, relative to the workspace root) and
//! decompressed with `gzip -dc`; the bench skips with a message when either is missing. The
//! model crate cannot use the generator's SWF reader (it depends on this crate), so this file
//! parses the few SWF fields it needs itself; HPC2N has no missing value in them, so the jobs
//! equal what `schedlm replay` builds with the default cleaning.

use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use schedlm_model::sim::{Fcfs, SimJob, Simulation, StartRule};
use schedlm_model::Server;

/// HPC2N as a replay setup, or `None` (with a message) when the trace cannot be read.
fn hpc2n() -> Option<Simulation> {
    let dir = std::env::var_os("SCHEDLM_TRACES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/traces")
        });
    let path = dir.join("HPC2N-2002-2.2-cln.swf.gz");
    let output = match Command::new("gzip").arg("-dc").arg(&path).output() {
        Ok(o) if o.status.success() => o,
        _ => {
            eprintln!("replay bench skipped: cannot gunzip {}", path.display());
            return None;
        }
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let mut max_procs = None;
    let mut jobs = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix(';') {
            if let Some(v) = rest.trim().strip_prefix("MaxProcs:") {
                max_procs = v
                    .split_whitespace()
                    .next()
                    .and_then(|x| x.parse::<i64>().ok());
            }
            continue;
        }
        let f: Vec<f64> = line
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(-1.0))
            .collect();
        if f.len() != 18 {
            continue;
        }
        let (number, submit, run, alloc, req, req_time) = (
            f[0] as i64,
            f[1] as i64,
            f[3] as i64,
            f[4] as i64,
            f[7] as i64,
            f[8] as i64,
        );
        if run <= 0 || submit < 0 {
            continue;
        }
        let procs = if req > 0 { req } else { alloc };
        let walltime = if req_time > 0 { req_time } else { run };
        jobs.push(SimJob::new(
            format!("j{number}"),
            submit,
            vec![procs],
            walltime,
            run,
        ));
    }
    let cores = max_procs?;
    let servers = vec![Server {
        id: "pool".into(),
        capacity: vec![cores],
    }];
    Simulation::new(vec!["cores".into()], servers, jobs).ok()
}

fn bench_replay(c: &mut Criterion) {
    let Some(sim) = hpc2n() else { return };
    assert_eq!(sim.jobs().len(), 202_871);
    let mut group = c.benchmark_group("replay_hpc2n");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for rule in [StartRule::Strict, StartRule::Easy] {
        group.bench_function(format!("fcfs_{rule}"), |b| {
            b.iter(|| black_box(sim.run(&mut Fcfs, rule).unwrap().summary.mean_bsld))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_replay);
criterion_main!(benches);
