//! Priority rules as online policies for trace replay ([`schedlm_model::sim`], SPEC section 5).
//!
//! [`RulePolicy`] orders the waiting queue at every step by the scores of SPEC section 6 with
//! w = now - s, exactly as [`crate::rules::order`] orders the queue of the step's snapshot
//! ([`schedlm_model::sim::SimState::snapshot`]): ascending score, then submit, then arrival
//! order. FCFS, SJF, SAF, LJF and F1 do not depend on `now`, so they are given to the
//! simulator as static keys and it keeps the queue sorted itself (a full-trace replay then
//! takes about a second); WFP3 and UNICEP are recomputed at every step; `random` draws a fresh
//! order at every step from (seed, stream, now).
//!
//! F1's t_origin must be the first submit of the trace ([`RulePolicy::for_trace`] sets it).
//!
//! ```
//! use schedlm_model::sim::{SimJob, Simulation, StartRule};
//! use schedlm_model::Server;
//! use schedlm_solver::policy::RulePolicy;
//! use schedlm_solver::rules::Rule;
//!
//! let servers = vec![Server { id: "pool".into(), capacity: vec![4] }];
//! let jobs = vec![
//!     SimJob::new("a", 0, vec![4], 100, 100),
//!     SimJob::new("long", 1, vec![4], 500, 500),
//!     SimJob::new("short", 2, vec![4], 10, 10),
//! ];
//! let sim = Simulation::new(vec!["cores".into()], servers, jobs).unwrap();
//! let mut sjf = RulePolicy::for_trace(Rule::Sjf, sim.jobs());
//! let result = sim.run(&mut sjf, StartRule::Easy).unwrap();
//! let starts: Vec<i64> = result.jobs.iter().map(|j| j.start).collect();
//! assert_eq!(starts, vec![0, 110, 100]);
//! ```
//!
//! A solver drives a replay the same way: implement [`Policy::order`] by solving
//! `state.snapshot()` (queue position i of the snapshot is `waiting[i]`) and returning the
//! solver's order; with [`StartRule::Conservative`](schedlm_model::sim::StartRule) the jobs
//! started are exactly those the solver's schedule starts now (rolling horizon).

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use schedlm_model::sim::{Policy, SimJob, SimState};
use schedlm_model::Time;

use crate::rules::{by_score, score_of, JobView, Rule, RuleContext};

/// A priority rule of SPEC section 6 as a replay policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RulePolicy {
    /// The priority rule that scores the waiting jobs (`random` shuffles instead).
    pub rule: Rule,
    /// F1's origin (the trace's first submit) and the seed and stream of `random`.
    pub ctx: RuleContext,
}

impl RulePolicy {
    /// The rule with an explicit context; use [`RulePolicy::for_trace`] to get F1's origin
    /// from the trace.
    pub fn new(rule: Rule, ctx: RuleContext) -> RulePolicy {
        RulePolicy { rule, ctx }
    }

    /// The rule with F1's t_origin set to the first submit of `jobs` (seed 0).
    pub fn for_trace(rule: Rule, jobs: &[SimJob]) -> RulePolicy {
        let origin = jobs.iter().map(|j| j.submit).min().unwrap_or(0);
        RulePolicy {
            rule,
            ctx: RuleContext {
                origin,
                ..RuleContext::default()
            },
        }
    }

    /// Whether the rule's score is fixed while a job waits (does not use `now`).
    pub fn is_static(&self) -> bool {
        matches!(
            self.rule,
            Rule::Fcfs | Rule::Sjf | Rule::Saf | Rule::Ljf | Rule::F1
        )
    }
}

/// The score of SPEC section 6 of a waiting job at time `now` (ascending runs first), by
/// [`crate::rules::score_of`]. `Random` scores 0.
pub fn job_score(rule: Rule, ctx: &RuleContext, now: Time, job: &SimJob) -> f64 {
    score_of(rule, ctx, now, job_view(job))
}

/// What the rules read of a replay's job: its submit, walltime (the plan) and first resource.
pub fn job_view(job: &SimJob) -> JobView {
    JobView {
        submit: job.submit,
        walltime: job.walltime,
        cores: job.demand.first().copied().unwrap_or(0),
    }
}

impl Policy for RulePolicy {
    fn order(&mut self, state: &SimState<'_>, waiting: &[usize]) -> Vec<usize> {
        if self.rule == Rule::Random {
            let mut order: Vec<usize> = (0..waiting.len()).collect();
            let mut rng = ChaCha8Rng::seed_from_u64(self.ctx.seed);
            rng.set_stream(self.ctx.stream ^ (state.now() as u64).rotate_left(32));
            order.shuffle(&mut rng);
            return order;
        }
        let jobs = state.jobs();
        let now = state.now();
        let scores: Vec<f64> = waiting
            .iter()
            .map(|&j| job_score(self.rule, &self.ctx, now, &jobs[j]))
            .collect();
        // The tie-breaks of rules::order: submit, then queue (arrival) position.
        by_score(&scores, |p| jobs[waiting[p]].submit)
    }

    fn static_key(&self, job: &SimJob) -> Option<f64> {
        self.is_static()
            .then(|| job_score(self.rule, &self.ctx, job.submit, job))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules;
    use rand::Rng;
    use schedlm_model::sim::{SimResult, Simulation, StartRule};
    use schedlm_model::{Problem, Server};

    /// A seeded bursty trace on a 32-core pool.
    fn sim(seed: u64, n: usize) -> Simulation {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut t = 1000;
        let jobs = (0..n)
            .map(|i| {
                if rng.random_bool(0.7) {
                    t += rng.random_range(0..60);
                }
                let wall = rng.random_range(1..=600);
                SimJob::new(
                    format!("j{i}"),
                    t,
                    vec![rng.random_range(1..=32)],
                    wall,
                    rng.random_range(0..=wall + 30),
                )
            })
            .collect();
        let servers = vec![Server {
            id: "pool".into(),
            capacity: vec![32],
        }];
        Simulation::new(vec!["cores".into()], servers, jobs).unwrap()
    }

    /// Wraps a policy and hides its static key, so the simulator calls `order` every step.
    struct Dynamic<P>(P);
    impl<P: Policy> Policy for Dynamic<P> {
        fn order(&mut self, state: &SimState<'_>, waiting: &[usize]) -> Vec<usize> {
            self.0.order(state, waiting)
        }
    }

    /// Checks at every step that RulePolicy's order equals rules::order on the snapshot.
    struct CrossCheck(RulePolicy, usize);
    impl Policy for CrossCheck {
        fn order(&mut self, state: &SimState<'_>, waiting: &[usize]) -> Vec<usize> {
            let ours = self.0.order(state, waiting);
            let problem = Problem::new(&state.snapshot()).unwrap();
            let theirs = rules::order(self.0.rule, &problem, &self.0.ctx);
            assert_eq!(ours, theirs, "{} at {}", self.0.rule, state.now());
            self.1 += 1;
            ours
        }
    }

    #[test]
    fn orders_match_rules_on_every_snapshot() {
        let sim = sim(3, 300);
        for rule in Rule::CLASSIC {
            let policy = RulePolicy::for_trace(rule, sim.jobs());
            let first = sim.jobs().iter().map(|j| j.submit).min().unwrap();
            assert!(first >= 1000);
            assert_eq!(policy.ctx.origin, first);
            let mut check = CrossCheck(policy, 0);
            sim.run(&mut check, StartRule::Easy).unwrap();
            assert!(check.1 > 50, "{rule}: too few steps checked");
        }
    }

    #[test]
    fn static_rules_fast_path_matches_dynamic() {
        for seed in 0..4 {
            let sim = sim(seed, 400);
            for rule in Rule::CLASSIC {
                let policy = RulePolicy::for_trace(rule, sim.jobs());
                for start in StartRule::ALL {
                    let fast: SimResult = sim.run(&mut policy.clone(), start).unwrap();
                    let slow = sim.run(&mut Dynamic(policy), start).unwrap();
                    assert_eq!(fast.jobs, slow.jobs, "seed {seed} {rule} {start}");
                }
            }
        }
    }

    #[test]
    fn rules_differ_and_random_is_seeded() {
        let sim = sim(5, 400);
        let mean = |rule: Rule, seed: u64| {
            let mut p = RulePolicy::for_trace(rule, sim.jobs());
            p.ctx.seed = seed;
            sim.run(&mut p, StartRule::Easy).unwrap().summary.mean_bsld
        };
        assert_ne!(mean(Rule::Fcfs, 0), mean(Rule::Sjf, 0));
        assert_eq!(mean(Rule::Random, 1), mean(Rule::Random, 1));
        assert_ne!(mean(Rule::Random, 1), mean(Rule::Random, 2));
    }
}
