//! A clairvoyant online teacher: at every event of a replay, each classic rule's order of the
//! waiting queue is tried by simulating the near future (the running jobs, the waiting queue
//! and the jobs that arrive within a horizon, with their true run times) and the order whose
//! future has the lowest mean bounded slowdown is returned.
//!
//! This is one step of policy iteration (a *rollout*, Bertsekas 1997): the candidate decides
//! now, a base rule decides every later event of the simulated future. The teacher sees what no
//! scheduler sees (arrivals before they happen, true run times), so it is a source of labels
//! and a reference, not a deployable policy: a model trained on its decisions sees only the
//! snapshot.
//!
//! The simulated future is a fresh [`Simulation`] that starts at `now`: each running job is a
//! job that arrives at `now` with its remaining time and is started first (on a pool of
//! servers it fits, since it runs now); waiting jobs arrive at `now` and keep their submit
//! times for the rules' scores and for their slowdown.

use rand::seq::IndexedRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use schedlm_model::objective::job_bsld;
use schedlm_model::sim::{Policy, SimJob, SimState, Simulation, StartRule};
use schedlm_model::Time;

use crate::policy::job_view;
use crate::rules::{by_score, score_of, JobView, Rule, RuleContext};

/// Settings of the look-ahead teacher.
#[derive(Debug, Clone, PartialEq)]
pub struct Lookahead {
    /// Jobs arriving within `now + horizon` seconds join the simulated future.
    pub horizon: Time,
    /// The rules whose orders are tried at each event (ties go to the earlier one).
    pub candidates: Vec<Rule>,
    /// The rule that decides every later event of the simulated future.
    pub base: Rule,
    /// Start rule of the simulated future (the replay's).
    pub start_rule: StartRule,
    /// F1's origin.
    pub ctx: RuleContext,
    /// Run times of the simulated future.
    pub runtimes: Runtimes,
}

/// One job of the simulated future: where it comes from and its true submit.
#[derive(Debug, Clone, Copy)]
struct Origin {
    /// Submit time for scores and slowdown (the real one).
    submit: Time,
    /// Whether it runs now (it is started first and not counted).
    running: bool,
}

/// The rule's order of `views` (positions), by score at `now` with real submits.
fn rule_order(rule: Rule, ctx: &RuleContext, now: Time, views: &[JobView]) -> Vec<usize> {
    let scores: Vec<f64> = views.iter().map(|v| score_of(rule, ctx, now, *v)).collect();
    by_score(&scores, |p| views[p].submit)
}

/// The policy of the simulated future: running jobs first, then at the first event the
/// candidate order of the waiting jobs, afterwards the base rule.
struct Future<'a> {
    origins: &'a [Origin],
    first: Option<Vec<usize>>,
    base: Rule,
    ctx: RuleContext,
}

impl Policy for Future<'_> {
    fn order(&mut self, state: &SimState<'_>, waiting: &[usize]) -> Vec<usize> {
        let jobs = state.jobs();
        let (running, queued): (Vec<usize>, Vec<usize>) =
            (0..waiting.len()).partition(|&p| self.origins[waiting[p]].running);
        let mut order = running;
        if let Some(first) = self.first.take() {
            // `first` holds rollout job indices of the waiting jobs in candidate order; all of
            // them wait at the first event.
            let pos: std::collections::HashMap<usize, usize> =
                waiting.iter().enumerate().map(|(p, &j)| (j, p)).collect();
            order.extend(first.iter().filter_map(|j| pos.get(j).copied()));
            return order;
        }
        let views: Vec<JobView> = queued
            .iter()
            .map(|&p| {
                let j = waiting[p];
                JobView {
                    submit: self.origins[j].submit,
                    ..job_view(&jobs[j])
                }
            })
            .collect();
        order.extend(
            rule_order(self.base, &self.ctx, state.now(), &views)
                .into_iter()
                .map(|i| queued[i]),
        );
        order
    }
}

/// Run times of the simulated future.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtimes {
    /// The true run times (clairvoyant: a teacher, not a scheduler).
    True,
    /// The planned lengths (walltimes, or estimates).
    Planned,
    /// `samples` futures, each job's run time drawn as its walltime times a ratio run/walltime
    /// of a job that ended before now (the same user's when it has two or more, else any
    /// user's); every candidate is scored on the same draws. Deployable: it uses only the past.
    Sampled {
        /// Futures per event.
        samples: usize,
        /// Seed of the draws (each event draws from (seed, now)).
        seed: u64,
    },
}

/// Ratios run / walltime of the jobs that ended before now, overall and per user.
struct History<'a> {
    all: Vec<f64>,
    by_user: std::collections::HashMap<&'a str, Vec<f64>>,
}

impl<'a> History<'a> {
    fn of(state: &'a SimState<'_>, waiting: &[usize]) -> History<'a> {
        let now = state.now();
        let input = state.input_jobs();
        let mut busy = vec![false; input.len()];
        for &j in waiting {
            busy[j] = true;
        }
        for r in state.running() {
            busy[r.job] = true;
        }
        let mut h = History {
            all: Vec::new(),
            by_user: std::collections::HashMap::new(),
        };
        for (j, job) in input.iter().enumerate() {
            if job.submit > now || busy[j] {
                continue;
            }
            let ratio = job.run() as f64 / job.walltime as f64;
            h.all.push(ratio);
            if let Some(u) = job.user.as_deref() {
                h.by_user.entry(u).or_default().push(ratio);
            }
        }
        h
    }

    /// A ratio for a job of `user`, above `least` when one is (else 1).
    fn draw(&self, user: Option<&str>, least: f64, rng: &mut ChaCha8Rng) -> f64 {
        let own = user
            .and_then(|u| self.by_user.get(u))
            .filter(|v| v.len() >= 2);
        let pool = own.unwrap_or(&self.all);
        let above: Vec<f64> = pool.iter().copied().filter(|&r| r > least).collect();
        above.choose(rng).copied().unwrap_or(1.0)
    }
}

impl Lookahead {
    /// The order of `waiting` (positions) the teacher picks at this event, and the mean bounded
    /// slowdown of its simulated future (averaged over the futures when sampled).
    pub fn order(&self, state: &SimState<'_>, waiting: &[usize]) -> (Vec<usize>, f64) {
        let now = state.now();
        let jobs = state.jobs();
        let views: Vec<JobView> = waiting.iter().map(|&j| job_view(&jobs[j])).collect();
        // Each distinct order once, in the rules' order (ties go to the earlier).
        let mut candidates: Vec<Vec<usize>> = Vec::new();
        for &rule in &self.candidates {
            let order = rule_order(rule, &self.ctx, now, &views);
            if !candidates.contains(&order) {
                candidates.push(order);
            }
        }
        if candidates.len() == 1 {
            return (candidates.swap_remove(0), f64::NAN);
        }
        let (futures, history) = match self.runtimes {
            Runtimes::Sampled { samples, .. } => {
                (samples.max(1), Some(History::of(state, waiting)))
            }
            _ => (1, None),
        };
        let mut totals = vec![0.0; candidates.len()];
        for sample in 0..futures {
            let mut rng = match self.runtimes {
                Runtimes::Sampled { seed, .. } => {
                    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ now as u64);
                    rng.set_stream(sample as u64);
                    Some(rng)
                }
                _ => None,
            };
            let Some((sim, origins, first_waiting)) =
                self.future(state, waiting, history.as_ref().zip(rng.as_mut()))
            else {
                return (candidates.swap_remove(0), f64::NAN);
            };
            let mut values = vec![0.0; candidates.len()];
            for (order, total) in candidates.iter().zip(values.iter_mut()) {
                let mut policy = Future {
                    origins: &origins,
                    first: Some(order.iter().map(|&p| first_waiting + p).collect()),
                    base: self.base,
                    ctx: self.ctx,
                };
                *total = match sim.run(&mut policy, self.start_rule) {
                    Ok(result) => {
                        let (sum, count) = result
                            .jobs
                            .iter()
                            .zip(origins.iter())
                            .filter(|(_, o)| !o.running)
                            .fold((0.0, 0usize), |(s, c), (r, o)| {
                                (s + job_bsld(r.start - o.submit, r.end - r.start), c + 1)
                            });
                        sum / count.max(1) as f64
                    }
                    Err(_) => f64::INFINITY,
                };
            }
            for (total, value) in totals.iter_mut().zip(&values) {
                *total += value;
            }
        }

        let mut best = 0;
        for (k, t) in totals.iter().enumerate() {
            if *t < totals[best] {
                best = k;
            }
        }
        let value = totals[best] / futures as f64;
        (candidates.swap_remove(best), value)
    }

    /// The simulated future from this event: its simulation, where each job comes from, and
    /// the index of the first waiting job (running jobs come first).
    fn future(
        &self,
        state: &SimState<'_>,
        waiting: &[usize],
        mut draws: Option<(&History<'_>, &mut ChaCha8Rng)>,
    ) -> Option<(Simulation, Vec<Origin>, usize)> {
        let now = state.now();
        let jobs = state.jobs();
        let input = state.input_jobs();
        let mut future: Vec<SimJob> = Vec::new();
        let mut origins: Vec<Origin> = Vec::new();
        for r in state.running() {
            let job = &input[r.job];
            let ran = now - r.start;
            let run = match (&self.runtimes, draws.as_mut()) {
                (Runtimes::True, _) => job.run(),
                (Runtimes::Sampled { .. }, Some((h, rng))) => {
                    let least = ran as f64 / job.walltime as f64;
                    let ratio = h.draw(job.user.as_deref(), least, rng);
                    ((ratio * job.walltime as f64).round() as Time).min(job.walltime)
                }
                _ => r.planned_end - r.start,
            };
            let mut j = SimJob::new(
                job.id.clone(),
                now,
                job.demand.clone(),
                (r.walltime_end - now).max(1),
                (run - ran).max(1),
            );
            if r.planned_end != r.walltime_end {
                j.estimate = Some((r.planned_end - now).max(1));
            }
            future.push(j);
            origins.push(Origin {
                submit: now,
                running: true,
            });
        }
        let first_waiting = future.len();
        let arriving = input
            .iter()
            .enumerate()
            .filter(|(_, job)| job.submit > now && job.submit <= now + self.horizon)
            .map(|(j, _)| j);
        for j in waiting.iter().copied().chain(arriving) {
            let job = &input[j];
            let mut f = job.clone();
            f.submit = job.submit.max(now);
            f.estimate = (jobs[j].walltime != job.walltime).then_some(jobs[j].walltime);
            match (&self.runtimes, draws.as_mut()) {
                (Runtimes::True, _) => {}
                (Runtimes::Sampled { .. }, Some((h, rng))) => {
                    let ratio = h.draw(job.user.as_deref(), 0.0, rng);
                    f.runtime = ((ratio * job.walltime as f64).round() as Time).max(1);
                }
                _ => f.runtime = jobs[j].walltime.min(job.walltime),
            }
            future.push(f);
            origins.push(Origin {
                submit: job.submit,
                running: false,
            });
        }
        let sim =
            Simulation::new(state.resources().to_vec(), state.servers().to_vec(), future).ok()?;
        Some((sim, origins, first_waiting))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlm_model::sim::OrderFn;
    use schedlm_model::Server;

    /// `x` asks for 1,000 s and ends after 10; `y` asks for 100 and uses them. SAF (area
    /// 2,000 against 400) runs `y` first; on the true future `x` first is far better.
    fn sim() -> Simulation {
        let servers = vec![Server {
            id: "pool".into(),
            capacity: vec![4],
        }];
        let jobs = vec![
            SimJob::new("x", 0, vec![2], 1000, 10),
            SimJob::new("y", 0, vec![4], 100, 100),
        ];
        Simulation::new(vec!["cores".into()], servers, jobs).unwrap()
    }

    fn teacher(runtimes: Runtimes) -> Lookahead {
        Lookahead {
            horizon: 0,
            candidates: vec![Rule::Saf, Rule::Fcfs, Rule::Sjf],
            base: Rule::Saf,
            start_rule: StartRule::Easy,
            ctx: RuleContext::default(),
            runtimes,
        }
    }

    fn first_decision(runtimes: Runtimes) -> (Vec<String>, f64) {
        let sim = sim();
        let teacher = teacher(runtimes);
        let mut seen = None;
        let mut policy = OrderFn(|state: &SimState<'_>, waiting: &[usize]| {
            let (order, value) = teacher.order(state, waiting);
            if seen.is_none() {
                let ids = order
                    .iter()
                    .map(|&p| state.jobs()[waiting[p]].id.clone())
                    .collect();
                seen = Some((ids, value));
            }
            order
        });
        sim.run(&mut policy, StartRule::Easy).unwrap();
        seen.unwrap()
    }

    #[test]
    fn true_run_times_overrule_the_base_rule() {
        let (order, value) = first_decision(Runtimes::True);
        assert_eq!(order, ["x", "y"]);
        // x: bsld 1; y waits 10 s of its 100: 1.1.
        assert!((value - 1.05).abs() < 1e-9, "{value}");
    }

    #[test]
    fn planned_lengths_keep_the_base_rule() {
        let (order, value) = first_decision(Runtimes::Planned);
        assert_eq!(order, ["y", "x"]);
        // y: 1; x waits 100 s of its planned 1,000: 1.1.
        assert!((value - 1.05).abs() < 1e-9, "{value}");
    }

    #[test]
    fn sampled_futures_are_seeded() {
        let sampled = Runtimes::Sampled {
            samples: 4,
            seed: 9,
        };
        // Nothing has ended before the first event: every draw is the walltime.
        assert_eq!(first_decision(sampled), first_decision(Runtimes::Planned));
        let again = first_decision(sampled);
        assert_eq!(first_decision(sampled), again);
    }
}
