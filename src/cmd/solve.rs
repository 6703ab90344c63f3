//! `schedlm solve`: best order per instance, with a proof or a bound.

use anyhow::{bail, Context, Result};
use clap::Args;
use schedlm_model::Objective;
use schedlm_solver::portfolio::{self, SolveOptions, Solver};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::args::{parse_duration, DispatcherArgs, WorkLimit};
use crate::io::{create_output, read_instance_lines, report_skipped, write_jsonl};

#[derive(Debug, Args)]
pub struct SolveArgs {
    /// Solver. `auto`: priority rules, then local search, then branch and bound, then (serial
    /// dispatcher) the HiGHS MILP for a lower bound when branch and bound does not finish.
    /// `bnb`: branch and bound over orders, exact. `milp`: time-indexed MILP (exact on one
    /// server with times on its grid, a lower bound otherwise; serial only). `ls`: local search,
    /// a good order without proof.
    #[arg(long, value_enum, default_value = "auto")]
    pub solver: Solver,

    /// Objective to minimise (SPEC section 4). `bsld`: mean bounded slowdown (tau = 10 s);
    /// `wait`: mean wait (s); `flow`: weighted mean flow time (s); `makespan`: latest completion
    /// minus now (s).
    #[arg(long, value_enum, default_value = "bsld")]
    pub objective: Objective,

    #[command(flatten)]
    pub dispatcher: DispatcherArgs,

    /// Counted search work per instance, e.g. 12M (units of `schedlm_solver::work`: about
    /// 6M a CPU second on `uniform` snapshots; docs/benchmarks.md, "Work units"). A run stopped by it
    /// reports its best order, a lower bound and the gap (`status: work_limit`), and gives the
    /// same output, times aside, on any machine, at any load, with any -j [default: none, the
    /// time limit decides].
    #[arg(long, value_parser = crate::args::parse_work_limit)]
    pub work_limit: Option<crate::args::WorkLimit>,

    /// Wall-clock budget per instance, e.g. 10s, 500ms, 2m [default: 10s without
    /// --work-limit, none with it]. With a work limit it only caps the run. A run stopped by
    /// it reports its best order, a lower bound and the gap (`status: time_limit`), is never
    /// called optimal, and may differ from machine to machine.
    #[arg(long, value_parser = parse_duration)]
    pub time_limit: Option<Duration>,

    /// Most branch-and-bound nodes per instance [default: no limit]. A node limit makes a
    /// stopped run deterministic, unlike a time limit.
    #[arg(long)]
    pub node_limit: Option<u64>,

    /// Seed of local search.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Worker threads (instances are solved in parallel, one per task) [default: all cores].
    /// A file of one instance gives all of them to that instance: branch and bound (`bnb`,
    /// `auto`) then searches subtrees in parallel and returns the order one thread would
    /// (work and node limits keep it on one thread, to stay deterministic). HiGHS runs one
    /// model per process: with `--solver milp`, or `auto` under a work limit, instances queue
    /// for it (each one's time limit counts from its turn, `time_ms` includes the wait);
    /// inside a timed `auto` the MILP bound is skipped when HiGHS is busy.
    #[arg(long, short = 'j')]
    pub threads: Option<usize>,

    /// JSON Lines file of instances (`-` for standard input).
    pub file: PathBuf,

    #[command(flatten)]
    pub instances: crate::io::InstanceArgs,

    /// Output file: one JSON object per valid instance with `line`, `solver`, `objective`,
    /// `variant`, `order` (queued ids), `value`, `lower_bound`, `gap` ((value - bound) / bound),
    /// `proven_optimal`, `status` (optimal, time_limit, work_limit, node_limit, bounded,
    /// heuristic), `nodes`, `work` (units spent), `budget` (the limits it had), `time_ms` and
    /// `baselines` (each priority rule's value). Standard output when absent or `-`.
    #[arg(visible_alias = "out", long, short = 'o')]
    pub output: Option<PathBuf>,

    #[command(flatten)]
    pub progress: crate::io::ProgressArgs,
}

pub fn run(args: &SolveArgs) -> Result<()> {
    let options = SolveOptions {
        solver: args.solver,
        objective: args.objective,
        variant: args.dispatcher.variant(),
        work_limit: args.work_limit.and_then(|w| w.0),
        time_limit: WorkLimit::time_limit(args.work_limit, args.time_limit),
        node_limit: args.node_limit,
        seed: args.seed,
        threads: 1,
    };
    options
        .check()
        .context("--solver, --work-limit, --time-limit")?;
    // A time limit counts from the moment the input is read: on a huge queue, reading and
    // validating the line is part of what the user waits for.
    let reading = Instant::now();
    let lines = read_instance_lines(&args.file, args.instances)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0))
        .build()
        .context("cannot start worker threads")?;
    let bar = args.progress.bar(
        lines.len() as u64,
        "{bar:40} {pos}/{len} instances, {per_sec}, ETA {eta}",
    );
    let results =
        pool.install(|| portfolio::solve_lines(&lines, &options, reading, &|| bar.inc(1)));
    let (records, failed) = report_skipped(&args.file, &lines, results);
    let mut out = create_output(args.output.as_deref())?;
    write_jsonl(&mut out, &records)?;
    let proven = records.iter().filter(|r| r.output.proven_optimal).count();
    args.progress.say(format_args!(
        "solved {} instance(s): {} proven optimal, {} with a gap",
        records.len(),
        proven,
        records.len() - proven
    ));
    if failed > 0 {
        bail!(
            "{failed} of {} instance(s) in {} could not be solved",
            lines.len(),
            args.file.display()
        );
    }
    Ok(())
}
