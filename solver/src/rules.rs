//! The classic priority rules of SPEC section 6, plus a seeded random order.
//!
//! Each rule gives every queued job a score; jobs run in ascending score. Ties are broken by
//! submit time, then by queue position, so every rule yields one well-defined order. With
//! r = walltime, n = demand of the first resource (cores), s = submit, w = now - s:
//!
//! | rule | score |
//! |---|---|
//! | FCFS | s |
//! | SJF | (r, s) |
//! | SAF | r * n, then s |
//! | LJF | -r, then s |
//! | WFP3 | -(w / r)^3 * n |
//! | UNICEP | -w / (log2(n + 1) * r), with n = 1 when n = 0 (no division by zero) |
//! | F1 | log10(r) * n + 870 * log10(max(s - origin, 1)) |
//!
//! F1's `origin` is the first submit of the trace; instance times count from the start of the
//! workload (as SWF times do), so it is 0 unless the caller says otherwise.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use schedlm_model::{Objective, Problem, Time, Variant};

/// A priority rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Rule {
    /// First come, first served: earliest submit first.
    Fcfs,
    /// Shortest job first: shortest requested walltime first.
    Sjf,
    /// Smallest area first: smallest walltime x cores first.
    Saf,
    /// Longest job first.
    Ljf,
    /// WFP3: favours jobs that have waited long relative to their length, weighted by size.
    Wfp3,
    /// UNICEP: favours long-waiting, short and small jobs.
    Unicep,
    /// F1 (Carastan-Santos & de Camargo 2017), a rule learned from simulations.
    F1,
    /// A uniformly random order from the seed.
    Random,
}

impl Rule {
    /// Every rule, in SPEC's order, random last.
    pub const ALL: [Rule; 8] = [
        Rule::Fcfs,
        Rule::Sjf,
        Rule::Saf,
        Rule::Ljf,
        Rule::Wfp3,
        Rule::Unicep,
        Rule::F1,
        Rule::Random,
    ];

    /// The deterministic rules (every rule but `random`).
    pub const CLASSIC: [Rule; 7] = [
        Rule::Fcfs,
        Rule::Sjf,
        Rule::Saf,
        Rule::Ljf,
        Rule::Wfp3,
        Rule::Unicep,
        Rule::F1,
    ];

    /// The name used in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Fcfs => "fcfs",
            Rule::Sjf => "sjf",
            Rule::Saf => "saf",
            Rule::Ljf => "ljf",
            Rule::Wfp3 => "wfp3",
            Rule::Unicep => "unicep",
            Rule::F1 => "f1",
            Rule::Random => "random",
        }
    }

    /// The rule with this name.
    pub fn from_name(name: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.name() == name)
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a rule may need beyond the instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RuleContext {
    /// F1's t_origin: the first submit of the trace (0 for instance times).
    pub origin: Time,
    /// Seed of the `random` rule.
    pub seed: u64,
    /// Stream of the `random` rule, e.g. the instance's position in a file, so that each
    /// instance gets its own random order from one seed.
    pub stream: u64,
}

/// The order (queue indices) in which `rule` runs the queue of `problem`.
pub fn order(rule: Rule, problem: &Problem, ctx: &RuleContext) -> Vec<usize> {
    let mut jobs: Vec<usize> = (0..problem.jobs()).collect();
    if rule == Rule::Random {
        let mut rng = ChaCha8Rng::seed_from_u64(ctx.seed);
        rng.set_stream(ctx.stream);
        jobs.shuffle(&mut rng);
        return jobs;
    }
    let scores: Vec<f64> = jobs.iter().map(|&j| score(rule, problem, ctx, j)).collect();
    by_score(&scores, |j| problem.submit(j))
}

/// Positions `0..scores.len()` by ascending score, then submit, then position: the order of
/// every rule of SPEC section 6, on a snapshot ([`order`]) or a replay's queue
/// ([`crate::policy::RulePolicy`]).
pub fn by_score(scores: &[f64], submit: impl Fn(usize) -> Time) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| {
        scores[a]
            .total_cmp(&scores[b])
            .then(submit(a).cmp(&submit(b)))
            .then(a.cmp(&b))
    });
    order
}

/// The score of job `j` under `rule` (ascending runs first). `Random` scores 0.
pub fn score(rule: Rule, problem: &Problem, ctx: &RuleContext, j: usize) -> f64 {
    let job = JobView {
        submit: problem.submit(j),
        walltime: problem.walltime(j),
        cores: problem.demand(j)[0],
    };
    score_of(rule, ctx, problem.now(), job)
}

/// What a rule reads of a job: submit time, requested walltime and cores (first resource).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobView {
    /// Submit time in seconds (s in the formulas).
    pub submit: Time,
    /// Requested walltime in seconds, >= 1 (r in the formulas).
    pub walltime: Time,
    /// Demand of the first resource, taken as the cores (n in the formulas); 0 or more.
    pub cores: i64,
}

/// The score of SPEC section 6 for a job at time `now` (ascending runs first). `Random`
/// scores 0. The one place the formulas live: snapshots and online replay both call it.
pub fn score_of(rule: Rule, ctx: &RuleContext, now: Time, job: JobView) -> f64 {
    let r = job.walltime as f64;
    let n = job.cores as f64;
    let s = job.submit;
    let w = (now - s) as f64;
    match rule {
        Rule::Fcfs => s as f64,
        // The submit tie-break of SJF, SAF and LJF is the common tie-break in `order`.
        Rule::Sjf => r,
        Rule::Saf => r * n,
        Rule::Ljf => -r,
        Rule::Wfp3 => -(w / r).powi(3) * n,
        Rule::Unicep => -w / ((n.max(1.0) + 1.0).log2() * r),
        Rule::F1 => {
            let since = s.saturating_sub(ctx.origin).max(1) as f64;
            r.log10() * n + 870.0 * since.log10()
        }
        Rule::Random => 0.0,
    }
}

/// Best order among the classic rules, as (order after the dependency repair, objective
/// value). Ties go to the earlier rule of [`Rule::CLASSIC`].
pub fn best_rule(problem: &Problem, objective: Objective, variant: Variant) -> (Vec<usize>, f64) {
    best_of(&classic_runs(problem, objective, variant))
}

/// Each classic rule ([`Rule::CLASSIC`], in that order) with its dispatched order (after
/// dependency repair) and value: the one place the rules are dispatched for a solve.
pub fn classic_runs(
    problem: &Problem,
    objective: Objective,
    variant: Variant,
) -> Vec<(Rule, Vec<usize>, f64)> {
    Rule::CLASSIC
        .iter()
        .map(|&rule| {
            let (placed, value) = problem.evaluate(
                &order(rule, problem, &RuleContext::default()),
                objective,
                variant,
            );
            (rule, placed, value)
        })
        .collect()
}

/// [`classic_runs`] within a deadline, for queues long enough that dispatching every rule
/// takes longer than a time limit (one dispatch of 20,000 jobs takes a noticeable part of a
/// second): the rules run in turn while the time left holds another run as long as the
/// longest so far; the first always runs, so there is an order to start from. Also returns
/// that longest run's time, the cost of one dispatch of this queue.
pub fn classic_runs_until(
    problem: &Problem,
    objective: Objective,
    variant: Variant,
    deadline: Option<std::time::Instant>,
) -> (Vec<(Rule, Vec<usize>, f64)>, std::time::Duration) {
    let mut runs = Vec::with_capacity(Rule::CLASSIC.len());
    let mut longest = std::time::Duration::ZERO;
    for rule in Rule::CLASSIC {
        let started = std::time::Instant::now();
        if !runs.is_empty() && deadline.is_some_and(|d| started + longest >= d) {
            break;
        }
        let (placed, value) = problem.evaluate(
            &order(rule, problem, &RuleContext::default()),
            objective,
            variant,
        );
        runs.push((rule, placed, value));
        longest = longest.max(started.elapsed());
    }
    (runs, longest)
}

/// The best of [`classic_runs`]: the first rule with the lowest value (a later rule must be
/// strictly better); empty for no runs.
pub fn best_of(runs: &[(Rule, Vec<usize>, f64)]) -> (Vec<usize>, f64) {
    let mut best: Option<&(Rule, Vec<usize>, f64)> = None;
    for run in runs {
        if best.is_none_or(|b| run.2 < b.2) {
            best = Some(run);
        }
    }
    best.map(|(_, o, v)| (o.clone(), *v)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlm_model::{Instance, QueuedJob, Server};

    /// Four jobs on a 16-core server at now = 1000:
    /// a: submit 100, 4 cores, 400 s   (w = 900)
    /// b: submit 500, 1 core,  100 s   (w = 500)
    /// c: submit 900, 16 cores, 50 s   (w = 100)
    /// d: submit 100, 2 cores, 3600 s  (w = 900)
    fn problem() -> Problem {
        let job =
            |id: &str, submit, cores, walltime| QueuedJob::new(id, submit, vec![cores], walltime);
        let instance = Instance {
            now: 1000,
            resources: vec!["cores".into()],
            servers: vec![Server {
                id: "n0".into(),
                capacity: vec![16],
            }],
            running: vec![],
            queue: vec![
                job("a", 100, 4, 400),
                job("b", 500, 1, 100),
                job("c", 900, 16, 50),
                job("d", 100, 2, 3600),
            ],
        };
        Problem::new(&instance).unwrap()
    }

    fn run(rule: Rule) -> Vec<usize> {
        order(rule, &problem(), &RuleContext::default())
    }

    #[test]
    fn fcfs_breaks_submit_ties_by_queue_position() {
        assert_eq!(run(Rule::Fcfs), vec![0, 3, 1, 2]);
    }

    #[test]
    fn sjf_and_ljf() {
        // walltimes 400, 100, 50, 3600
        assert_eq!(run(Rule::Sjf), vec![2, 1, 0, 3]);
        assert_eq!(run(Rule::Ljf), vec![3, 0, 1, 2]);
    }

    #[test]
    fn saf_uses_area() {
        // areas 1600, 100, 800, 7200
        assert_eq!(run(Rule::Saf), vec![1, 2, 0, 3]);
    }

    #[test]
    fn wfp3_matches_formula() {
        // -(w/r)^3 n: a -(900/400)^3*4 = -45.56, b -(5)^3*1 = -125, c -(2)^3*16 = -128,
        // d -(0.25)^3*2 = -0.03
        assert_eq!(run(Rule::Wfp3), vec![2, 1, 0, 3]);
        let s = score(Rule::Wfp3, &problem(), &RuleContext::default(), 0);
        assert!((s + 2.25f64.powi(3) * 4.0).abs() < 1e-12);
    }

    #[test]
    fn unicep_matches_formula() {
        // -w / (log2(n+1) r): a -900/(2.3219*400) = -0.969, b -500/(1*100) = -5,
        // c -100/(4.0875*50) = -0.489, d -900/(1.585*3600) = -0.158
        assert_eq!(run(Rule::Unicep), vec![1, 0, 2, 3]);
    }

    #[test]
    fn f1_matches_formula() {
        // log10(r) n + 870 log10(s): a 2.602*4 + 870*2 = 1750.4, b 2*1 + 870*2.699 = 2350.2,
        // c 1.699*16 + 870*2.954 = 2597.2, d 3.556*2 + 1740 = 1747.1
        assert_eq!(run(Rule::F1), vec![3, 0, 1, 2]);
        let ctx = RuleContext {
            origin: 100,
            ..RuleContext::default()
        };
        // With origin 100, a and d get s' = max(0, 1) = 1 and log10(1) = 0.
        let s = score(Rule::F1, &problem(), &ctx, 0);
        assert!((s - 400f64.log10() * 4.0).abs() < 1e-9);
    }

    #[test]
    fn random_is_seeded_and_a_permutation() {
        let p = problem();
        let ctx = RuleContext {
            seed: 7,
            ..RuleContext::default()
        };
        let a = order(Rule::Random, &p, &ctx);
        assert_eq!(a, order(Rule::Random, &p, &ctx));
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, vec![0, 1, 2, 3]);
        let other: Vec<Vec<usize>> = (0..20)
            .map(|stream| order(Rule::Random, &p, &RuleContext { stream, ..ctx }))
            .collect();
        assert!(other.iter().any(|o| *o != a), "streams must differ");
    }

    #[test]
    fn names_round_trip() {
        for rule in Rule::ALL {
            assert_eq!(Rule::from_name(rule.name()), Some(rule));
        }
    }
}
