//! `schedlm bench`: solver speed tables (docs/benchmarks.md).
//!
//! `schedlm bench solve` generates instances per queue length, proves each one with branch and
//! bound, runs the time-indexed MILP on the same instances and prints Markdown tables of time to
//! proof, nodes and agreement. Everything runs on one thread, one instance after the other, so
//! the times are single-core times. With `--out` it writes the instances (`<family>-<n>.jsonl`)
//! and every measurement (`results.json`), which `benches/cpsat.py` reads to solve exactly the
//! same instances with OR-Tools CP-SAT.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use schedlm_generator::{generate_one, Config, Family, Load};
use schedlm_model::{Instance, Objective, Problem, Variant};
use schedlm_solver::bnb::{self, BnbOptions};
use serde::Serialize;

use crate::args::parse_duration;
use crate::io::{create_output, write_jsonl};

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
    /// MILP, and prints per size: B&B median / p90 / max time to proof [ms], median / p90 nodes
    /// and the number proven optimal; MILP median / p90 time [ms], how often HiGHS proved its
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

/// The clock of the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Clock {
    /// CPU time of the process (all threads) during the call.
    Cpu,
    /// Elapsed wall-clock time.
    Wall,
}

impl Clock {
    fn name(self) -> &'static str {
        match self {
            Clock::Cpu => "CPU",
            Clock::Wall => "wall-clock",
        }
    }
}

/// CPU time of this process (every thread) in ms, from `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`
/// (nanosecond resolution, unlike `/proc`), or `None` where it is not available.
#[cfg(target_os = "linux")]
pub(crate) fn cpu_ms() -> Option<f64> {
    use rustix::time::{clock_gettime, ClockId};
    let ts = clock_gettime(ClockId::ProcessCPUTime);
    Some(ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 * 1e-6)
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn cpu_ms() -> Option<f64> {
    None
}

/// Wall and CPU time of a closure, in ms (CPU: `None` if unavailable).
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, Option<f64>) {
    let cpu0 = cpu_ms();
    let clock = Instant::now();
    let out = f();
    let wall = clock.elapsed().as_secs_f64() * 1e3;
    let cpu = cpu_ms().zip(cpu0).map(|(b, a)| b - a);
    (out, wall, cpu)
}

pub fn run(args: &BenchArgs) -> Result<()> {
    match &args.command {
        BenchCommand::Solve(a) => solve(a),
        BenchCommand::Train(a) => crate::cmd::bench_train::run(a),
    }
}

/// One branch-and-bound run.
#[derive(Debug, Clone, Serialize)]
struct BnbRun {
    value: f64,
    lower_bound: f64,
    status: &'static str,
    proven: bool,
    nodes: u64,
    /// Time on the tables' clock (`settings.clock`).
    time_ms: f64,
    wall_ms: f64,
    cpu_ms: Option<f64>,
}

/// One MILP run.
#[derive(Debug, Clone, Serialize)]
struct MilpRun {
    /// Dispatched value of the MILP's order (or the incumbent's, when better).
    value: f64,
    lower_bound: f64,
    milp_value: Option<f64>,
    /// HiGHS proved its MILP optimum (relative gap 0).
    proven: bool,
    /// One server and every time on the grid (then the MILP optimum is the order optimum).
    exact: bool,
    /// Grid step in seconds.
    step: i64,
    status: String,
    /// The lower bound reaches the B&B optimum (relative 1e-6), when B&B proved it.
    bound_matches: Option<bool>,
    /// Time on the tables' clock (`settings.clock`).
    time_ms: f64,
    wall_ms: f64,
    cpu_ms: Option<f64>,
    error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
struct InstanceResult {
    /// The JSONL file (under --out) that holds the instance.
    file: String,
    size: usize,
    /// Instance index (line index + 1 in the size's JSONL file).
    index: usize,
    bnb: BnbRun,
    milp: Option<MilpRun>,
}

#[derive(Debug, Clone, Serialize)]
struct SizeSummary {
    size: usize,
    instances: usize,
    bnb_proven: usize,
    bnb_median_ms: f64,
    bnb_p90_ms: f64,
    bnb_max_ms: f64,
    bnb_median_nodes: f64,
    bnb_p90_nodes: f64,
    /// Instances proven at the root (one node): the best classic rule meets the root bound.
    bnb_root: usize,
    milp_instances: usize,
    milp_proven: usize,
    milp_bound_matches: usize,
    milp_median_ms: Option<f64>,
    milp_p90_ms: Option<f64>,
    /// MILP median / B&B median over the same instances.
    ratio_median: Option<f64>,
    /// CP-SAT on the same instances (with --cpsat).
    cpsat: Option<CpsatSummary>,
}

/// What `benches/cpsat.py --json` reports for one size (its `summary` entry).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
struct CpsatSummary {
    /// Instances CP-SAT proved optimal (its schedule relaxation).
    proven: usize,
    median_ms: f64,
    p90_ms: f64,
    median_censored: bool,
    p90_censored: bool,
    /// Instances B&B left open.
    #[serde(default)]
    bnb_open: usize,
    /// Of those, instances whose exact CP-SAT optimum equals B&B's incumbent (proving it).
    #[serde(default)]
    closed: usize,
    /// Instances where CP-SAT's proven optimum is above B&B's proven one: a model error.
    #[serde(default)]
    above_opt: usize,
}

#[derive(Debug, Serialize)]
struct Settings<'a> {
    command: String,
    /// The clock of `time_ms` and of the summary: `cpu` or `wall`.
    clock: &'a str,
    family: &'a str,
    servers: usize,
    /// Running load at `now` (--load), or the family's default.
    load: Option<f64>,
    sizes: &'a [usize],
    count: usize,
    seed: u64,
    objective: &'a str,
    variant: &'a str,
    time_limit_s: f64,
    milp: bool,
    milp_time_limit_s: f64,
    milp_count: Option<usize>,
    milp_max_size: Option<usize>,
    threads: usize,
    quantiles: &'a str,
}

#[derive(Debug, Serialize)]
struct Report<'a> {
    settings: Settings<'a>,
    summary: &'a [SizeSummary],
    results: &'a [InstanceResult],
}

fn solve(args: &SolveBenchArgs) -> Result<()> {
    if args.sizes.is_empty() {
        bail!("--sizes is empty: give at least one queue length, e.g. --sizes 8,10");
    }
    if args.count == 0 {
        bail!("--count is 0: give at least one instance per size");
    }
    if args.servers == 0 {
        bail!("--servers is 0: an instance needs at least one server");
    }
    // `--milp` and `--no-milp` override each other: the last one given wins.
    let want_milp = args.milp || !args.no_milp;
    if want_milp && !cfg!(feature = "milp") {
        eprintln!("note: this binary was built without the cargo feature `milp`; running B&B only");
    }
    let run_milp = want_milp && cfg!(feature = "milp");
    let milp_limit = args.milp_time_limit.unwrap_or(args.time_limit);
    if let Some(dir) = &args.out {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    if args.cpsat.is_some() {
        if args.out.is_none() {
            bail!("--cpsat needs --out DIR: the CP-SAT script reads the instances from there");
        }
        if args.objective != Objective::Bsld {
            bail!(
                "--cpsat compares on the objective bsld only (the model of {}), not {}",
                args.cpsat_script.display(),
                args.objective.name()
            );
        }
    }

    let mut results: Vec<InstanceResult> = Vec::new();
    let mut summaries: Vec<SizeSummary> = Vec::new();
    for &size in &args.sizes {
        if size == 0 {
            bail!("--sizes contains 0: every queue length must be at least 1");
        }
        let mut config = Config::new(args.family, args.seed);
        config.queue_min = size;
        config.queue_max = size;
        config.servers = Some(args.servers);
        config.load = args.load.map(Load::Fraction);
        config.check().context("bad --load")?;
        let instances: Vec<Instance> = (0..args.count as u64)
            .map(|k| generate_one(&config, k))
            .collect::<std::result::Result<_, _>>()
            .context("cannot generate instances")?;
        if let Some(dir) = &args.out {
            let path = dir.join(file_name(args.family, size));
            let mut out = create_output(Some(&path))?;
            write_jsonl(&mut out, &instances)?;
        }
        let milp_here = run_milp && args.milp_max_size.is_none_or(|m| size <= m);
        let milp_count = args.milp_count.unwrap_or(args.count);
        let mut size_results = Vec::with_capacity(instances.len());
        for (k, instance) in instances.iter().enumerate() {
            let problem = Problem::new(instance)
                .with_context(|| format!("generated instance {k} of size {size} is invalid"))?;
            let bnb = run_bnb(&problem, args, args.clock);
            let milp = if milp_here && k < milp_count {
                Some(run_milp_on(
                    &problem,
                    args.objective,
                    milp_limit,
                    args.work_limit,
                    &bnb,
                    args.clock,
                ))
            } else {
                None
            };
            args.progress.say(format_args!(
                "n={size} #{k:>2}: B&B {} {:.4} in {:.2} ms ({:.2} ms wall), {} nodes{}",
                bnb.status,
                bnb.value,
                bnb.time_ms,
                bnb.wall_ms,
                bnb.nodes,
                match &milp {
                    Some(m) => format!(
                        "; MILP {} bound {:.4} in {:.0} ms ({:.0} ms wall){}",
                        m.status,
                        m.lower_bound,
                        m.time_ms,
                        m.wall_ms,
                        m.error
                            .as_deref()
                            .map(|e| format!(" ({e})"))
                            .unwrap_or_default()
                    ),
                    None => String::new(),
                }
            ));
            size_results.push(InstanceResult {
                file: file_name(args.family, size),
                size,
                index: k,
                bnb,
                milp,
            });
        }
        summaries.push(summarise(size, &size_results));
        results.extend(size_results);
        if let Some(dir) = &args.out {
            write_report(dir, args, run_milp, milp_limit, &summaries, &results)?;
            if let Some(python) = &args.cpsat {
                let cpsat = run_cpsat(python, args, dir, size)?;
                if let Some(last) = summaries.last_mut() {
                    last.cpsat = Some(cpsat);
                }
                write_report(dir, args, run_milp, milp_limit, &summaries, &results)?;
            }
        }
    }

    outln!(
        "{}",
        tables(args, run_milp, milp_limit, &summaries, &results)
    )?;
    if let Some(dir) = &args.out {
        args.progress.say(format_args!(
            "wrote {}-<N>.jsonl and results.json to {}",
            args.family.name(),
            dir.display()
        ));
    }
    Ok(())
}

/// Runs the CP-SAT script on the instances of `size` under `dir` (results.json there holds B&B's
/// runs) and reads its summary. Its per-instance lines go to standard error, as progress.
fn run_cpsat(
    python: &Path,
    args: &SolveBenchArgs,
    dir: &Path,
    size: usize,
) -> Result<CpsatSummary> {
    let json = dir.join(format!("cpsat-{size}.json"));
    let output = std::process::Command::new(python)
        .arg(&args.cpsat_script)
        .arg("--time-limit")
        .arg(args.time_limit.as_secs_f64().to_string())
        .arg("--clock")
        // The script takes the same spellings as `--clock` here.
        .arg(
            args.clock
                .to_possible_value()
                .map_or_else(String::new, |v| v.get_name().to_string()),
        )
        .arg("--results")
        .arg(dir.join("results.json"))
        .arg("--json")
        .arg(&json)
        .arg(dir.join(file_name(args.family, size)))
        .output()
        .with_context(|| format!("cannot run {} (--cpsat)", python.display()))?;
    eprint!("{}", String::from_utf8_lossy(&output.stdout));
    if !output.status.success() {
        bail!(
            "{} {} failed ({}): {}",
            python.display(),
            args.cpsat_script.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    #[derive(serde::Deserialize)]
    struct Written {
        summary: Vec<CpsatSummary>,
    }
    let text = fs::read_to_string(&json)
        .with_context(|| format!("cannot read the CP-SAT summary {}", json.display()))?;
    let written: Written = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a CP-SAT summary", json.display()))?;
    let summary = written
        .summary
        .into_iter()
        .next()
        .with_context(|| format!("{} has no summary row", json.display()))?;
    if summary.above_opt > 0 {
        eprintln!(
            "WARNING: {size} jobs: CP-SAT's proven optimum is above the B&B optimum on {} \
             instance(s); the relaxation must be <= the order optimum (check the model)",
            summary.above_opt
        );
    }
    Ok(summary)
}

/// Name of the instance file of one size under --out.
fn file_name(family: Family, size: usize) -> String {
    format!("{}-{size}.jsonl", family.name())
}

fn run_bnb(problem: &Problem, args: &SolveBenchArgs, clock: Clock) -> BnbRun {
    let options = BnbOptions {
        time_limit: args.work_limit.is_none().then_some(args.time_limit),
        node_limit: args
            .work_limit
            .map(|w| schedlm_solver::work::nodes_for(w, problem.jobs())),
        ..BnbOptions::default()
    };
    let (out, wall_ms, cpu_ms) =
        timed(|| bnb::solve(problem, args.objective, Variant::Serial, &options));
    BnbRun {
        value: out.value,
        lower_bound: out.lower_bound,
        status: out.status.name(),
        proven: out.proven_optimal(),
        nodes: out.nodes,
        time_ms: pick(clock, wall_ms, cpu_ms),
        wall_ms,
        cpu_ms,
    }
}

/// The MILP, warm-started like B&B from the best classic rule (its time is included).
#[cfg(feature = "milp")]
fn run_milp_on(
    problem: &Problem,
    objective: Objective,
    limit: Duration,
    work: Option<u64>,
    bnb: &BnbRun,
    clock: Clock,
) -> MilpRun {
    use schedlm_solver::milp::{self, MilpOptions};
    let (out, wall_ms, cpu_ms) = timed(|| {
        let started = Instant::now();
        let (incumbent, _) = schedlm_solver::rules::best_rule(problem, objective, Variant::Serial);
        let options = MilpOptions {
            time_limit: work
                .is_none()
                .then(|| limit.saturating_sub(started.elapsed())),
            iteration_limit: work.map(schedlm_solver::work::lp_iterations_for),
            incumbent: Some(incumbent),
            ..MilpOptions::default()
        };
        milp::solve(problem, objective, &options)
    });
    let time_ms = pick(clock, wall_ms, cpu_ms);
    match out {
        Ok(m) => MilpRun {
            bound_matches: bnb
                .proven
                .then(|| m.lower_bound >= bnb.value - 1e-6 * bnb.value.abs().max(1.0)),
            value: m.value,
            lower_bound: m.lower_bound,
            milp_value: m.milp_value,
            proven: m.proven,
            exact: m.exact,
            step: m.step,
            status: m.status,
            time_ms,
            wall_ms,
            cpu_ms,
            error: None,
        },
        Err(e) => MilpRun {
            value: f64::NAN,
            lower_bound: f64::NAN,
            milp_value: None,
            proven: false,
            exact: false,
            step: 0,
            status: "error".into(),
            bound_matches: bnb.proven.then_some(false),
            time_ms,
            wall_ms,
            cpu_ms,
            error: Some(e.to_string()),
        },
    }
}

#[cfg(not(feature = "milp"))]
fn run_milp_on(
    _: &Problem,
    _: Objective,
    _: Duration,
    _: Option<u64>,
    _: &BnbRun,
    _: Clock,
) -> MilpRun {
    unreachable!("the MILP is not built")
}

/// The time on `clock` (wall-clock where CPU time is unavailable).
fn pick(clock: Clock, wall_ms: f64, cpu_ms: Option<f64>) -> f64 {
    match (clock, cpu_ms) {
        (Clock::Cpu, Some(c)) => c,
        _ => wall_ms,
    }
}

/// Quantile `q` of sorted, non-empty values ([`schedlm_model::quantile`]).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    schedlm_model::quantile::quantile(sorted, q).unwrap_or(f64::NAN)
}

/// Quantile of (value, censored) pairs and whether it reaches a censored value (a run stopped
/// by its limit, whose true time is larger).
fn censored_quantile(values: &[(f64, bool)], q: f64) -> (f64, bool) {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let sorted: Vec<f64> = v.iter().map(|x| x.0).collect();
    let pos = q * (v.len() - 1) as f64;
    let hi = pos.ceil() as usize;
    (quantile(&sorted, q), v[hi].1 || v[pos.floor() as usize].1)
}

fn summarise(size: usize, results: &[InstanceResult]) -> SizeSummary {
    let bnb_t: Vec<(f64, bool)> = results
        .iter()
        .map(|r| (r.bnb.time_ms, !r.bnb.proven))
        .collect();
    let mut nodes: Vec<f64> = results.iter().map(|r| r.bnb.nodes as f64).collect();
    nodes.sort_by(f64::total_cmp);
    let milp: Vec<(&InstanceResult, &MilpRun)> = results
        .iter()
        .filter_map(|r| r.milp.as_ref().map(|m| (r, m)))
        .collect();
    let milp_t: Vec<(f64, bool)> = milp.iter().map(|(_, m)| (m.time_ms, !m.proven)).collect();
    let (milp_median, milp_p90, ratio) = if milp.is_empty() {
        (None, None, None)
    } else {
        let same: Vec<(f64, bool)> = milp
            .iter()
            .map(|(r, _)| (r.bnb.time_ms, !r.bnb.proven))
            .collect();
        let m = censored_quantile(&milp_t, 0.5).0;
        (
            Some(m),
            Some(censored_quantile(&milp_t, 0.9).0),
            Some(m / censored_quantile(&same, 0.5).0),
        )
    };
    SizeSummary {
        size,
        instances: results.len(),
        bnb_proven: results.iter().filter(|r| r.bnb.proven).count(),
        bnb_median_ms: censored_quantile(&bnb_t, 0.5).0,
        bnb_p90_ms: censored_quantile(&bnb_t, 0.9).0,
        bnb_max_ms: censored_quantile(&bnb_t, 1.0).0,
        bnb_median_nodes: quantile(&nodes, 0.5),
        bnb_p90_nodes: quantile(&nodes, 0.9),
        bnb_root: results
            .iter()
            .filter(|r| r.bnb.proven && r.bnb.nodes == 1)
            .count(),
        milp_instances: milp.len(),
        milp_proven: milp.iter().filter(|(_, m)| m.proven).count(),
        milp_bound_matches: milp
            .iter()
            .filter(|(_, m)| m.bound_matches == Some(true))
            .count(),
        milp_median_ms: milp_median,
        milp_p90_ms: milp_p90,
        ratio_median: ratio,
        cpsat: None,
    }
}

/// A time in ms with a precision that suits its size, `>= ` when it reaches a stopped run.
fn ms((v, censored): (f64, bool)) -> String {
    let s = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    if censored {
        format!(">= {s}")
    } else {
        s
    }
}

fn count(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn tables(
    args: &SolveBenchArgs,
    run_milp: bool,
    milp_limit: Duration,
    summaries: &[SizeSummary],
    results: &[InstanceResult],
) -> String {
    use std::fmt::Write;
    let mut t = String::new();
    let (wall, cpu) = results
        .iter()
        .flat_map(|r| {
            std::iter::once((r.bnb.wall_ms, r.bnb.cpu_ms))
                .chain(r.milp.as_ref().map(|m| (m.wall_ms, m.cpu_ms)))
        })
        .fold((0.0, 0.0), |(w, c), (rw, rc)| {
            (w + rw, c + rc.unwrap_or(rw))
        });
    let _ = writeln!(
        t,
        "{} family, {} servers, load {}, {} instances per size, seed {}, objective {}, serial \
         dispatcher, one thread; wall-clock limit {} per solver per instance. Times are {} \
         times in ms (median and p90 interpolated, `>=` where the quantile reaches a run \
         stopped by its limit); over all runs, CPU / wall = {:.2}.\n",
        args.family.name(),
        args.servers,
        args.load
            .map_or_else(|| "the family's".to_string(), |l| l.to_string()),
        args.count,
        args.seed,
        args.objective.name(),
        humantime::format_duration(args.time_limit),
        if args.clock == Clock::Cpu && cpu_ms().is_none() {
            Clock::Wall.name()
        } else {
            args.clock.name()
        },
        if wall > 0.0 { cpu / wall } else { 1.0 },
    );
    let _ = writeln!(
        t,
        "| jobs | B&B proven | B&B median ms | B&B p90 ms | B&B max ms | median nodes | p90 nodes | proven at the root |"
    );
    let _ = writeln!(t, "|---:|---:|---:|---:|---:|---:|---:|---:|");
    for s in summaries {
        let of_size: Vec<&InstanceResult> = results.iter().filter(|r| r.size == s.size).collect();
        let bnb_t: Vec<(f64, bool)> = of_size
            .iter()
            .map(|r| (r.bnb.time_ms, !r.bnb.proven))
            .collect();
        let _ = writeln!(
            t,
            "| {} | {}/{} | {} | {} | {} | {} | {} | {}/{} |",
            s.size,
            s.bnb_proven,
            s.instances,
            ms(censored_quantile(&bnb_t, 0.5)),
            ms(censored_quantile(&bnb_t, 0.9)),
            ms(censored_quantile(&bnb_t, 1.0)),
            count(s.bnb_median_nodes),
            count(s.bnb_p90_nodes),
            s.bnb_root,
            s.instances,
        );
    }
    if run_milp {
        let _ = writeln!(
            t,
            "\nMILP (HiGHS, time-indexed, one thread, limit {}, warm start from the best \
             classic rule; its time includes that rule). `proven`: HiGHS proved its MILP \
             optimum; `bound = opt`: its lower bound reaches the B&B optimum (1e-6). The ratio \
             is MILP median / B&B median on the same instances.\n",
            humantime::format_duration(milp_limit)
        );
        let _ = writeln!(
            t,
            "| jobs | MILP runs | MILP proven | bound = opt | MILP median ms | MILP p90 ms | MILP / B&B (median) |"
        );
        let _ = writeln!(t, "|---:|---:|---:|---:|---:|---:|---:|");
        for s in summaries {
            if s.milp_instances == 0 {
                let _ = writeln!(t, "| {} | 0 | - | - | - | - | - |", s.size);
                continue;
            }
            let milp_t: Vec<(f64, bool)> = results
                .iter()
                .filter(|r| r.size == s.size)
                .filter_map(|r| r.milp.as_ref().map(|m| (m.time_ms, !m.proven)))
                .collect();
            let (med, med_c) = censored_quantile(&milp_t, 0.5);
            let ratio = s.ratio_median.unwrap_or(f64::NAN);
            let _ = writeln!(
                t,
                "| {} | {} | {}/{} | {}/{} | {} | {} | {}{:.0}x |",
                s.size,
                s.milp_instances,
                s.milp_proven,
                s.milp_instances,
                s.milp_bound_matches,
                s.milp_instances,
                ms((med, med_c)),
                ms(censored_quantile(&milp_t, 0.9)),
                if med_c { ">= " } else { "" },
                ratio,
            );
        }
    }
    if summaries.iter().any(|s| s.cpsat.is_some()) {
        cpsat_table(&mut t, summaries, results);
    }
    t
}

/// The B&B / CP-SAT comparison of issue #15: at each size, does branch and bound prove at least
/// as many instances as CP-SAT, with a lower p90 time to proof?
fn cpsat_table(t: &mut String, summaries: &[SizeSummary], results: &[InstanceResult]) {
    use std::fmt::Write;
    let _ = writeln!(
        t,
        "\nCP-SAT (OR-Tools, one worker, same limit and clock; the solve call, model building \
         excluded) on the same instances. It solves the schedule relaxation, a lower bound on \
         the order optimum. `closes B&B`: of the instances B&B left open, those where CP-SAT's \
         exact optimum equals B&B's incumbent (which proves it).\n"
    );
    let _ = writeln!(
        t,
        "| jobs | B&B proven | CP-SAT proven | B&B p90 ms | CP-SAT p90 ms | B&B proves as many | B&B p90 lower | closes B&B |"
    );
    let _ = writeln!(t, "|---:|---:|---:|---:|---:|---|---|---:|");
    for s in summaries {
        let Some(c) = &s.cpsat else { continue };
        let bnb_t: Vec<(f64, bool)> = results
            .iter()
            .filter(|r| r.size == s.size)
            .map(|r| (r.bnb.time_ms, !r.bnb.proven))
            .collect();
        let (p90, p90_censored) = censored_quantile(&bnb_t, 0.9);
        // A censored p90 is a floor: lower only when B&B's is known and below CP-SAT's.
        let lower = !p90_censored && (c.p90_censored || p90 < c.p90_ms);
        let _ = writeln!(
            t,
            "| {} | {}/{} | {}/{} | {} | {} | {} | {} | {}/{} |",
            s.size,
            s.bnb_proven,
            s.instances,
            c.proven,
            s.instances,
            ms((p90, p90_censored)),
            ms((c.p90_ms, c.p90_censored)),
            if s.bnb_proven >= c.proven {
                "yes"
            } else {
                "no"
            },
            if lower { "yes" } else { "no" },
            c.closed,
            c.bnb_open,
        );
    }
}

fn write_report(
    dir: &Path,
    args: &SolveBenchArgs,
    run_milp: bool,
    milp_limit: Duration,
    summaries: &[SizeSummary],
    results: &[InstanceResult],
) -> Result<()> {
    let report = Report {
        settings: Settings {
            command: std::env::args().collect::<Vec<_>>().join(" "),
            clock: match args.clock {
                Clock::Cpu if cpu_ms().is_some() => "cpu",
                _ => "wall",
            },
            family: args.family.name(),
            servers: args.servers,
            load: args.load,
            sizes: &args.sizes,
            count: args.count,
            seed: args.seed,
            objective: args.objective.name(),
            variant: Variant::Serial.name(),
            time_limit_s: args.time_limit.as_secs_f64(),
            milp: run_milp,
            milp_time_limit_s: milp_limit.as_secs_f64(),
            milp_count: args.milp_count,
            milp_max_size: args.milp_max_size,
            threads: 1,
            quantiles: "linear interpolation between closest ranks (numpy default)",
        },
        summary: summaries,
        results,
    };
    let path = dir.join("results.json");
    let text = serde_json::to_string_pretty(&report).context("cannot serialise results")?;
    fs::write(&path, text + "\n").with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
