//! Solver speed on generated instances (`schedlm bench solve`, docs/benchmarks.md): time to
//! proof of branch and bound, of the time-indexed MILP (feature `milp`) and, through
//! `benches/cpsat.py`, of OR-Tools CP-SAT, per queue length, on one thread, one instance after
//! the other; summarised with censored quantiles (a run stopped by its limit is a floor) into
//! Markdown tables and `results.json`.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;
#[cfg(feature = "milp")]
use std::time::Instant;

use schedlm_model::{Instance, Objective, Problem, Variant};
use serde::Serialize;

use crate::bnb::{self, BnbOptions};

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Settings that cannot run (no sizes, no instances, CP-SAT without a folder).
    #[error("{0}")]
    Settings(String),
    /// The instances of one size could not be made or are invalid.
    #[error("{0}")]
    Instances(String),
    /// Reading or writing a file, or running the CP-SAT script, failed.
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        error: std::io::Error,
    },
    /// The CP-SAT script failed or its summary does not parse.
    #[error("{0}")]
    Cpsat(String),
}

type Result<T> = std::result::Result<T, BenchError>;

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> BenchError {
    let what = what.into();
    move |error| BenchError::Io { what, error }
}

/// What `schedlm bench solve` measures (its flags, docs in `schedlm bench solve --help`).
#[derive(Debug, Clone)]
pub struct SolveBench {
    /// The family's name (instance files are `<family>-<N>.jsonl`).
    pub family: String,
    /// Servers per instance.
    pub servers: usize,
    /// Running load at `now`, or the family's default.
    pub load: Option<f64>,
    /// Queue lengths.
    pub sizes: Vec<usize>,
    /// Instances per queue length.
    pub count: usize,
    /// Generator seed (for the tables and results.json).
    pub seed: u64,
    /// The objective.
    pub objective: Objective,
    /// Wall-clock limit per solver per instance (unless `work_limit`).
    pub time_limit: Duration,
    /// Whether to run the MILP (ignored, with a note, without the feature `milp`).
    pub milp: bool,
    /// Counted work per solver per instance, instead of the time limits.
    pub work_limit: Option<u64>,
    /// The MILP's own wall-clock limit [default: `time_limit`].
    pub milp_time_limit: Option<Duration>,
    /// The MILP on the first this many instances of each size only.
    pub milp_count: Option<usize>,
    /// The MILP for queue lengths up to this only.
    pub milp_max_size: Option<usize>,
    /// The tables' clock.
    pub clock: Clock,
    /// Where the instances and results.json go.
    pub out: Option<PathBuf>,
    /// CP-SAT on the same instances.
    pub cpsat: Option<Cpsat>,
    /// The command line, for results.json.
    pub command: String,
}

/// How CP-SAT runs: `python script ...` (`benches/cpsat.py`).
#[derive(Debug, Clone)]
pub struct Cpsat {
    /// A Python interpreter that imports `ortools`.
    pub python: PathBuf,
    /// The script.
    pub script: PathBuf,
}

/// The clock of the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
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

    /// The spelling of `--clock` (here and in the CP-SAT script).
    fn arg(self) -> &'static str {
        match self {
            Clock::Cpu => "cpu",
            Clock::Wall => "wall",
        }
    }
}

use schedlm_model::cpu::cpu_ms;

/// Wall and CPU time of a closure, in ms (CPU: `None` if unavailable).
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, Option<f64>) {
    let cpu0 = cpu_ms();
    let clock = std::time::Instant::now();
    let out = f();
    let wall = clock.elapsed().as_secs_f64() * 1e3;
    let cpu = cpu_ms().zip(cpu0).map(|(b, a)| b - a);
    (out, wall, cpu)
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

impl SolveBench {
    /// Runs the benchmark: for each size, the instances `instances(size)` gives (written to
    /// `out` when set), branch and bound and the MILP on each, CP-SAT on them all; `say`
    /// receives one progress line per instance. Returns the Markdown tables.
    pub fn run(
        &self,
        instances: &mut dyn FnMut(usize) -> std::result::Result<Vec<Instance>, String>,
        say: &mut dyn FnMut(&str),
    ) -> Result<String> {
        let settings = |why: &str| Err(BenchError::Settings(why.into()));
        if self.sizes.is_empty() {
            return settings("--sizes is empty: give at least one queue length, e.g. --sizes 8,10");
        }
        if self.sizes.contains(&0) {
            return settings("--sizes contains 0: every queue length must be at least 1");
        }
        if self.count == 0 {
            return settings("--count is 0: give at least one instance per size");
        }
        if self.servers == 0 {
            return settings("--servers is 0: an instance needs at least one server");
        }
        if self.milp && !cfg!(feature = "milp") {
            say("note: this build has no MILP (the cargo feature `milp`); running B&B only");
        }
        if let Some(dir) = &self.out {
            fs::create_dir_all(dir).map_err(io(format!("cannot create {}", dir.display())))?;
        }
        if let Some(c) = &self.cpsat {
            if self.out.is_none() {
                return settings(
                    "--cpsat needs --out DIR: the CP-SAT script reads the instances from there",
                );
            }
            if self.objective != Objective::Bsld {
                return settings(&format!(
                    "--cpsat compares on the objective bsld only (the model of {}), not {}",
                    c.script.display(),
                    self.objective.name()
                ));
            }
        }
        let mut results: Vec<InstanceResult> = Vec::new();
        let mut summaries: Vec<SizeSummary> = Vec::new();
        for &size in &self.sizes {
            let size_results =
                self.run_size(size, instances(size).map_err(BenchError::Instances)?, say)?;
            summaries.push(summarise(size, &size_results));
            results.extend(size_results);
            if let Some(dir) = &self.out {
                self.write_report(dir, &summaries, &results)?;
                if let Some(c) = &self.cpsat {
                    let cpsat = self.run_cpsat(c, dir, size, say)?;
                    if let Some(last) = summaries.last_mut() {
                        last.cpsat = Some(cpsat);
                    }
                    self.write_report(dir, &summaries, &results)?;
                }
            }
        }
        Ok(self.tables(&summaries, &results))
    }

    fn run_milp(&self) -> bool {
        self.milp && cfg!(feature = "milp")
    }

    fn milp_limit(&self) -> Duration {
        self.milp_time_limit.unwrap_or(self.time_limit)
    }

    /// The runs on the instances of one size.
    fn run_size(
        &self,
        size: usize,
        instances: Vec<Instance>,
        say: &mut dyn FnMut(&str),
    ) -> Result<Vec<InstanceResult>> {
        if let Some(dir) = &self.out {
            let path = dir.join(self.file_name(size));
            let cannot = || format!("cannot write {}", path.display());
            let mut out = std::io::BufWriter::new(fs::File::create(&path).map_err(io(cannot()))?);
            for instance in &instances {
                let line = serde_json::to_string(instance)
                    .map_err(|e| BenchError::Instances(e.to_string()))?;
                writeln!(out, "{line}").map_err(io(cannot()))?;
            }
            out.flush().map_err(io(cannot()))?;
        }
        let milp_here = self.run_milp() && self.milp_max_size.is_none_or(|m| size <= m);
        let milp_count = self.milp_count.unwrap_or(self.count);
        let mut out = Vec::with_capacity(instances.len());
        for (k, instance) in instances.iter().enumerate() {
            let problem = Problem::new(instance).map_err(|e| {
                BenchError::Instances(format!("instance {k} of size {size} is invalid: {e}"))
            })?;
            let bnb = self.run_bnb(&problem);
            let milp = (milp_here && k < milp_count).then(|| {
                run_milp_on(
                    &problem,
                    self.objective,
                    self.milp_limit(),
                    self.work_limit,
                    &bnb,
                    self.clock,
                )
            });
            say(&progress_line(size, k, &bnb, milp.as_ref()));
            out.push(InstanceResult {
                file: self.file_name(size),
                size,
                index: k,
                bnb,
                milp,
            });
        }
        Ok(out)
    }

    /// Name of the instance file of one size under `out`.
    pub fn file_name(&self, size: usize) -> String {
        format!("{}-{size}.jsonl", self.family)
    }

    fn run_bnb(&self, problem: &Problem) -> BnbRun {
        let options = BnbOptions {
            time_limit: self.work_limit.is_none().then_some(self.time_limit),
            node_limit: self
                .work_limit
                .map(|w| crate::work::nodes_for(w, problem.jobs())),
            ..BnbOptions::default()
        };
        let (out, wall_ms, cpu_ms) =
            timed(|| bnb::solve(problem, self.objective, Variant::Serial, &options));
        BnbRun {
            value: out.value,
            lower_bound: out.lower_bound,
            status: out.status.name(),
            proven: out.proven_optimal(),
            nodes: out.nodes,
            time_ms: pick(self.clock, wall_ms, cpu_ms),
            wall_ms,
            cpu_ms,
        }
    }

    /// Runs the CP-SAT script on the instances of `size` under `dir` (results.json there holds B&B's
    /// runs) and reads its summary. Its per-instance lines go to standard error, as progress.
    fn run_cpsat(
        &self,
        c: &Cpsat,
        dir: &Path,
        size: usize,
        say: &mut dyn FnMut(&str),
    ) -> Result<CpsatSummary> {
        let python = &c.python;
        let json = dir.join(format!("cpsat-{size}.json"));
        let output = std::process::Command::new(python)
            .arg(&c.script)
            .arg("--time-limit")
            .arg(self.time_limit.as_secs_f64().to_string())
            .arg("--clock")
            // The script takes the same spellings as `--clock` here.
            .arg(self.clock.arg())
            .arg("--results")
            .arg(dir.join("results.json"))
            .arg("--json")
            .arg(&json)
            .arg(dir.join(self.file_name(size)))
            .output()
            .map_err(io(format!("cannot run {} (--cpsat)", python.display())))?;
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            say(line);
        }
        if !output.status.success() {
            return Err(BenchError::Cpsat(format!(
                "{} {} failed ({}): {}",
                python.display(),
                c.script.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        #[derive(serde::Deserialize)]
        struct Written {
            summary: Vec<CpsatSummary>,
        }
        let text = fs::read_to_string(&json).map_err(io(format!(
            "cannot read the CP-SAT summary {}",
            json.display()
        )))?;
        let written: Written = serde_json::from_str(&text).map_err(|e| {
            BenchError::Cpsat(format!("{} is not a CP-SAT summary: {e}", json.display()))
        })?;
        let summary =
            written.summary.into_iter().next().ok_or_else(|| {
                BenchError::Cpsat(format!("{} has no summary row", json.display()))
            })?;
        if summary.above_opt > 0 {
            say(&format!(
                "WARNING: {size} jobs: CP-SAT's proven optimum is above the B&B optimum on {} \
             instance(s); the relaxation must be <= the order optimum (check the model)",
                summary.above_opt
            ));
        }
        Ok(summary)
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
    use crate::milp::{self, MilpOptions};
    let (out, wall_ms, cpu_ms) = timed(|| {
        let started = Instant::now();
        let (incumbent, _) = crate::rules::best_rule(problem, objective, Variant::Serial);
        let options = MilpOptions {
            time_limit: work
                .is_none()
                .then(|| limit.saturating_sub(started.elapsed())),
            iteration_limit: work.map(crate::work::lp_iterations_for),
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

/// The progress line of one instance.
fn progress_line(size: usize, k: usize, bnb: &BnbRun, milp: Option<&MilpRun>) -> String {
    format!(
        "n={size} #{k:>2}: B&B {} {:.4} in {:.2} ms ({:.2} ms wall), {} nodes{}",
        bnb.status,
        bnb.value,
        bnb.time_ms,
        bnb.wall_ms,
        bnb.nodes,
        match milp {
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
    )
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

impl SolveBench {
    fn tables(&self, summaries: &[SizeSummary], results: &[InstanceResult]) -> String {
        let args = self;
        let (run_milp, milp_limit) = (self.run_milp(), self.milp_limit());
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
            args.family,
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
            let of_size: Vec<&InstanceResult> =
                results.iter().filter(|r| r.size == s.size).collect();
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
}

/// The B&B / CP-SAT comparison: at each size, does branch and bound prove at least
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

impl SolveBench {
    fn write_report(
        &self,
        dir: &Path,
        summaries: &[SizeSummary],
        results: &[InstanceResult],
    ) -> Result<()> {
        let args = self;
        let (run_milp, milp_limit) = (self.run_milp(), self.milp_limit());
        let report = Report {
            settings: Settings {
                command: args.command.clone(),
                clock: match args.clock {
                    Clock::Cpu if cpu_ms().is_some() => "cpu",
                    _ => "wall",
                },
                family: &args.family,
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
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| BenchError::Instances(format!("cannot serialise results: {e}")))?;
        fs::write(&path, text + "\n").map_err(io(format!("cannot write {}", path.display())))?;
        Ok(())
    }
}
