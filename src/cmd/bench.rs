//! `schedlm bench`: solver speed tables (docs/benchmarks.md); the measuring is
//! [`schedlm_solver::bench`]'s and [`schedlm_finetune::bench`]'s.
//!
//! `schedlm bench solve` generates instances per queue length, proves each one with branch and
//! bound, runs the time-indexed MILP on the same instances and prints Markdown tables of time to
//! proof, nodes and agreement. Everything runs on one thread, one instance after the other, so
//! the times are single-core times. With `--out` it writes the instances (`<family>-<n>.jsonl`)
//! and every measurement (`results.json`), which `benches/cpsat.py` reads to solve exactly the
//! same instances with OR-Tools CP-SAT.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use schedlm_generator::{generate_one, Config, Family, Load};
use schedlm_model::{Instance, Objective};
use schedlm_solver::bench::{Clock, Cpsat, SolveBench};

use crate::args::parse_duration;

/// Measure solver speed on generated instances and print Markdown tables.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Time to proof of branch and bound, and of the HiGHS MILP on the same instances, per queue
    /// length (serial dispatcher, one thread, instances one after the other).
    ///
    /// For each queue length N in --sizes it generates --count instances of --family with N
    /// queued jobs on --servers servers (instance k is `schedlm generate --family F --queue N
    /// --servers S --seed SEED` line k + 1), solves each with branch and bound and then with the
    /// MILP, and prints per size: B&B median / p90 / max time to proof in ms, median / p90 nodes
    /// and the number proven optimal; MILP median / p90 time in ms, how often HiGHS proved its
    /// MILP optimum, how often its lower bound reaches the B&B optimum; and the ratio of the
    /// median times (MILP / B&B). A run stopped by the time limit counts with its time (about
    /// the limit), so a quantile that reaches such runs is shown as `>= x`. Progress goes to
    /// standard error, tables to standard output.
    Solve(SolveBenchArgs),

    /// Training tokens/s of the from-scratch GPT against PyTorch on the same shapes, and
    /// decoding decisions/s with the key/value cache.
    ///
    /// For each --width, --seq and --threads it builds a GPT (--layers blocks, --heads heads,
    /// --vocab tokens, context max(1024, seq)), trains 2 warm-up steps and then --steps timed
    /// steps on one batch of --batch random sequences with the loss on every token (AdamW,
    /// clipping at 1), then runs `benches/torch_gpt.py` (--python, --torch-script) with the
    /// same shapes and threads, --repeat times each, alternating. It prints a Markdown table of
    /// the median runs: tokens per wall-clock second and per CPU-second of each, and their
    /// ratio (candle / PyTorch, wall clock). PyTorch is
    /// skipped with a message when the script or `import torch` fails. Then, per thread
    /// count, constrained greedy decisions/s of gpt-tiny on --decode 8-job `hpc` snapshots.
    /// Run it on an idle machine: other processes change wall-clock figures.
    Train(crate::cmd::bench_train::TrainBenchArgs),
}

#[derive(Debug, Args)]
pub struct SolveBenchArgs {
    /// Snapshot family (see `schedlm generate --help`).
    #[arg(long, value_enum, default_value = "hpc")]
    pub family: Family,

    /// Servers per instance.
    #[arg(long, default_value_t = 8)]
    pub servers: usize,

    /// Fraction of the first resource (hpc: cores, uniform: cores, dl: GPUs) kept busy by
    /// running jobs at `now`, in [0, 1) [default: the family's]. High loads make contention:
    /// queued jobs wait for each other and the classic rules fall further from the optimum.
    #[arg(long)]
    pub load: Option<f64>,

    /// Queue lengths (jobs per instance), comma separated.
    #[arg(long, value_delimiter = ',', default_value = "8,10,12,14,16")]
    pub sizes: Vec<usize>,

    /// Instances per queue length.
    #[arg(long, short = 'n', default_value_t = 20)]
    pub count: usize,

    /// Generator seed; the instances of every size are instances 0..count of this seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Objective to minimise (SPEC section 4): bsld, wait, flow or makespan.
    #[arg(long, value_enum, default_value = "bsld")]
    pub objective: Objective,

    /// Wall-clock limit per solver per instance, e.g. 10s, 500ms, 1m. A run stopped by it is
    /// counted as not proven.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub time_limit: Duration,

    /// Run the MILP on the same instances (the default; needs the cargo feature `milp`).
    #[arg(long, overrides_with = "no_milp")]
    pub milp: bool,

    /// Skip the MILP: branch and bound only.
    #[arg(long, overrides_with = "milp")]
    pub no_milp: bool,

    /// Counted work per solver per instance (units of `schedlm_solver::work`, e.g. 12M): branch
    /// and bound gets the nodes and the MILP the simplex iterations it buys, and neither has a
    /// time limit, so proof counts are the same on every machine (times still vary; CP-SAT
    /// keeps --time-limit).
    #[arg(long, value_parser = crate::args::parse_work)]
    pub work_limit: Option<u64>,

    /// Wall-clock limit of the MILP per instance [default: --time-limit].
    #[arg(long, value_parser = parse_duration)]
    pub milp_time_limit: Option<Duration>,

    /// Run the MILP only on the first this many instances of each size [default: all of them].
    #[arg(long)]
    pub milp_count: Option<usize>,

    /// Run the MILP only for queue lengths up to this many jobs [default: every size].
    #[arg(long)]
    pub milp_max_size: Option<usize>,

    /// Which time the tables show. `cpu`: CPU time of this process during the call (immune to
    /// other processes sharing the cores; includes every solver thread); `wall`: elapsed time.
    /// Both are written to results.json; the time limits are always wall-clock.
    #[arg(long, value_enum, default_value = "cpu")]
    pub clock: Clock,

    /// Directory that receives `<family>-<N>.jsonl` (the instances of each size) and
    /// `results.json` (settings and every per-instance measurement), for `benches/cpsat.py`.
    #[arg(visible_alias = "output", long, short = 'o')]
    pub out: Option<PathBuf>,

    /// Also solve every size with OR-Tools CP-SAT (one worker, same limit and clock) through
    /// this Python interpreter, which must import `ortools` (e.g. a virtual environment's
    /// `bin/python`), and compare it with branch and bound in the same tables: proven counts,
    /// p90 time to proof, and whether branch and bound proves at least as many with a lower
    /// p90. Needs --out (the script reads the instances and results.json there; it writes
    /// `cpsat-<N>.json`) and the objective bsld (the script's model). A failing script stops
    /// the run with its message.
    #[arg(long, value_name = "PYTHON")]
    pub cpsat: Option<PathBuf>,

    /// The CP-SAT script run by --cpsat.
    #[arg(long, default_value = "benches/cpsat.py", requires = "cpsat")]
    pub cpsat_script: PathBuf,

    #[command(flatten)]
    pub progress: crate::io::ProgressArgs,
}

pub fn run(args: &BenchArgs) -> Result<()> {
    match &args.command {
        BenchCommand::Solve(a) => solve(a),
        BenchCommand::Train(a) => crate::cmd::bench_train::run(a),
    }
}

impl SolveBenchArgs {
    /// The benchmark these flags ask for.
    fn bench(&self) -> SolveBench {
        SolveBench {
            family: self.family.name().to_string(),
            servers: self.servers,
            load: self.load,
            sizes: self.sizes.clone(),
            count: self.count,
            seed: self.seed,
            objective: self.objective,
            time_limit: self.time_limit,
            // `--milp` and `--no-milp` override each other: the last one given wins.
            milp: self.milp || !self.no_milp,
            work_limit: self.work_limit,
            milp_time_limit: self.milp_time_limit,
            milp_count: self.milp_count,
            milp_max_size: self.milp_max_size,
            clock: self.clock,
            out: self.out.clone(),
            cpsat: self.cpsat.clone().map(|python| Cpsat {
                python,
                script: self.cpsat_script.clone(),
            }),
            command: std::env::args().collect::<Vec<_>>().join(" "),
        }
    }

    /// Instances 0..count of the generator's seed with `size` queued jobs.
    fn instances(&self, size: usize) -> Result<Vec<Instance>> {
        let mut config = Config::new(self.family, self.seed);
        config.queue_min = size;
        config.queue_max = size;
        config.servers = Some(self.servers);
        config.load = self.load.map(Load::Fraction);
        config.check().context("bad --load")?;
        (0..self.count as u64)
            .map(|k| generate_one(&config, k))
            .collect::<std::result::Result<_, _>>()
            .context("cannot generate instances")
    }
}

fn solve(args: &SolveBenchArgs) -> Result<()> {
    let bench = args.bench();
    let tables = bench.run(
        &mut |size| args.instances(size).map_err(|e| format!("{e:#}")),
        &mut |line| args.progress.say(format_args!("{line}")),
    )?;
    outln!("{tables}")?;
    if let Some(dir) = &args.out {
        args.progress.say(format_args!(
            "wrote {}-<N>.jsonl and results.json to {}",
            args.family.name(),
            dir.display()
        ));
    }
    Ok(())
}
