//! Step-wise decision records (`dataset build --records steps`, templates `step-v1` and
//! `step-v2`).
//!
//! An order record asks for the whole queue order at once. A step record asks for one
//! dispatching decision: given the jobs already placed (a prefix of the label), which job goes
//! next. Its prompt shows the state the serial dispatcher (SPEC section 3) is in after that
//! prefix, so the model never has to simulate the schedule in its head:
//!
//! - each server's free capacity over time (running jobs and placed jobs together), as
//!   `free@t` steps in the prompt's time unit;
//! - the jobs placed so far, by id;
//! - the remaining jobs in the ranking of the instance's best classic rule, numbered as in
//!   compact-v2 (the numbers never change during a rollout), each with its need, requested
//!   time and the start it would get if placed next (or the queued jobs it still waits for).
//!
//! `step-v2` is the compact form: each server's capacity and what is free now, then only the
//! jobs that may be placed next, listed by the time they would end if placed next (the
//! earliest-completion rule's order, [`schedlm_solver::greedy::listing`]), each with its need,
//! requested time, start and the server it would take; no placed jobs (their effect is in the
//! free capacities and the starts). Its jobs are numbered `J1..` in that listing at every
//! state, so following the listing is the answer `J1`.
//!
//! The answer is one job id. An instance with `n` queued jobs gives `n - 1` records, prefixes
//! `0..n-1` of its (dependency-repaired) label; the last decision is forced and left out. A
//! model trained on them schedules by rolling out: render the state, take its answer, place
//! that job, repeat (the `finetune` crate's predictor does this).

use schedlm_model::{Dispatcher, Instance, Objective, Problem, Time, Variant};
use schedlm_solver::canonical::{ranking, Ranking};
use schedlm_solver::greedy::listing;

use crate::ids::IdMap;
use crate::prompt::{coarse_head, ids_of, push_extras, render, slash, time_unit, up};
use crate::prompt::{Rendered, Template};

const SYSTEM_STEP_SERIAL: &str = "Pick the job to place next: it starts at its earliest fit on \
the first listed server, given the placed jobs (a later job may start earlier). Reply with one \
job id.";

const SYSTEM_STEP_STRICT: &str = "Pick the job to place next: it starts at its earliest fit on \
the first listed server, given the placed jobs, never before the last placed job. Reply with \
one job id.";

const SYSTEM_STEP_V2_SERIAL: &str = "Pick the job to place next: it starts at its earliest fit, \
given the jobs placed so far. Jobs are listed by when they would end if placed next. Reply with \
one job id.";

const SYSTEM_STEP_V2_STRICT: &str = "Pick the job to place next: it starts at its earliest fit, \
given the jobs placed so far, never before the last placed job. Jobs are listed by when they \
would end if placed next. Reply with one job id.";

/// Renders the state after the queue jobs `placed` (indices of `instance.queue`, in placement
/// order) were dispatched with `variant`. The ids are compact-v2's (ranked) ids of the whole
/// instance, so they stay the same at every step. An invalid instance, or a prefix that is not
/// a dependency-respecting list of distinct jobs, renders as compact-v2 (no state to show).
/// To render every step of one instance, keep a [`StepState`] instead.
pub fn render_state(
    instance: &Instance,
    objective: Objective,
    variant: Variant,
    placed: &[usize],
) -> Rendered {
    render_state_as(instance, objective, variant, placed, Template::StepV1)
}

/// [`render_state`] with a step template (`step-v1` or `step-v2`; any other renders as
/// `step-v1`).
pub fn render_state_as(
    instance: &Instance,
    objective: Objective,
    variant: Variant,
    placed: &[usize],
    template: Template,
) -> Rendered {
    let Ok(problem) = Problem::new(instance) else {
        return render(instance, objective, variant, Template::CompactV2);
    };
    let mut state = StepState::new(instance, &problem, objective, variant).rendered_as(template);
    if !placed.iter().all(|&j| state.place(j)) {
        return render(instance, objective, variant, Template::CompactV2);
    }
    state.render()
}

/// A dispatch in progress, as step prompts show it: the instance's ranking and ids, computed
/// once, and the dispatcher with the jobs placed so far, one [`StepState::place`] per decision.
pub struct StepState<'p> {
    instance: &'p Instance,
    objective: Objective,
    dispatcher: Dispatcher<'p>,
    ids: IdMap,
    rule: &'static str,
    /// The instance's ranking (ties of step-v2's listing).
    rank: Vec<usize>,
    /// `step-v1` or `step-v2`.
    template: Template,
}

impl<'p> StepState<'p> {
    /// Nothing placed yet. `problem` must be `instance`'s.
    pub fn new(
        instance: &'p Instance,
        problem: &'p Problem,
        objective: Objective,
        variant: Variant,
    ) -> StepState<'p> {
        StepState::ranked(
            instance,
            problem,
            objective,
            variant,
            &ranking(problem, objective, variant),
        )
    }

    /// [`StepState::new`] with the instance's ranking already computed (`ranked`, from
    /// [`schedlm_solver::canonical::ranking`] with the same objective and variant): for
    /// rebuilding states of one instance many times.
    pub fn ranked(
        instance: &'p Instance,
        problem: &'p Problem,
        objective: Objective,
        variant: Variant,
        ranked: &Ranking,
    ) -> StepState<'p> {
        StepState {
            instance,
            objective,
            dispatcher: Dispatcher::new(problem, variant),
            ids: ids_of(instance, Some(ranked)),
            rule: ranked.rule.name(),
            rank: ranked.order.clone(),
            template: Template::StepV1,
        }
    }

    /// The same state, rendered with `template` (`step-v2`; anything else renders `step-v1`).
    pub fn rendered_as(mut self, template: Template) -> Self {
        self.template = if template == Template::StepV2 {
            Template::StepV2
        } else {
            Template::StepV1
        };
        self
    }

    /// The prompt ids, the same at every step.
    pub fn ids(&self) -> &IdMap {
        &self.ids
    }

    /// The jobs that may be placed next: unplaced, with every queued dependency placed.
    pub fn placeable(&self) -> Vec<usize> {
        let d = &self.dispatcher;
        (0..d.problem().jobs())
            .filter(|&j| !d.is_placed(j) && d.is_ready(j))
            .collect()
    }

    /// The jobs that may be placed next in the order the prompt lists them: by the time they
    /// would end if placed next for `step-v2` ([`schedlm_solver::greedy::listing`]), in the
    /// ranking for `step-v1`. Following the first of them at every step is the `ect` policy
    /// under `step-v2`.
    pub fn candidates(&self) -> Vec<usize> {
        let d = &self.dispatcher;
        if self.template == Template::StepV2 {
            listing(d, &self.rank).into_iter().map(|(j, _)| j).collect()
        } else {
            self.ids
                .job_order()
                .iter()
                .copied()
                .filter(|&j| !d.is_placed(j) && d.is_ready(j))
                .collect()
        }
    }

    /// The candidates ([`StepState::candidates`], in that order), each with its row of
    /// [`crate::features::FEATURES`].
    pub fn features(&self) -> Vec<(usize, crate::features::Row)> {
        let rows = crate::features::candidate_features(&self.dispatcher, &self.rank);
        if self.template == Template::StepV2 {
            return rows; // the listing's order is the candidates'
        }
        self.candidates()
            .iter()
            .filter_map(|&j| rows.iter().find(|r| r.0 == j).copied())
            .collect()
    }

    /// The jobs placed so far, in placement order.
    pub fn placed(&self) -> Vec<usize> {
        self.dispatcher.placed_order().collect()
    }

    /// Places job `j` next if it may be placed (see [`StepState::placeable`]); says whether
    /// it was.
    pub fn place(&mut self, j: usize) -> bool {
        let d = &mut self.dispatcher;
        let ok = j < d.problem().jobs() && !d.is_placed(j) && d.is_ready(j);
        if ok {
            d.place(j);
        }
        ok
    }

    /// The prompt of the current state.
    pub fn render(&self) -> Rendered {
        let v2 = self.template == Template::StepV2;
        let system = match (self.dispatcher.variant(), v2) {
            (Variant::Serial, false) => SYSTEM_STEP_SERIAL,
            (Variant::Strict, false) => SYSTEM_STEP_STRICT,
            (Variant::Serial, true) => SYSTEM_STEP_V2_SERIAL,
            (Variant::Strict, true) => SYSTEM_STEP_V2_STRICT,
        };
        if v2 {
            let d = &self.dispatcher;
            let listed = listing(d, &self.rank);
            let waiting: Vec<usize> = self
                .rank
                .iter()
                .copied()
                .filter(|&j| !d.is_placed(j) && !d.is_ready(j))
                .collect();
            let ids = listing_ids(self.instance, d, &listed, &waiting);
            let user = listing_text(self.instance, self.objective, d, &ids, &listed, &waiting);
            return Rendered {
                system: system.to_string(),
                user,
                ids,
            };
        }
        let user = state_text(
            self.instance,
            self.objective,
            &self.dispatcher,
            &self.ids,
            self.rule,
        );
        Rendered {
            system: system.to_string(),
            user,
            ids: self.ids.clone(),
        }
    }
}

/// step-v2's ids of a state: `J1..` numbered in the order it lists the jobs (`listed`, those
/// that may go next by their end, then `waiting` for a dependency, in ranking order), then the
/// placed jobs (never shown; an answer naming one is refused). Following the listing is the
/// answer `J1` at every step, as following the ranking is `J1 J2 ... Jn` in compact-v2.
fn listing_ids(
    instance: &Instance,
    d: &Dispatcher<'_>,
    listed: &[(usize, Time)],
    waiting: &[usize],
) -> IdMap {
    let order: Vec<usize> = listed
        .iter()
        .map(|&(j, _)| j)
        .chain(waiting.iter().copied())
        .chain(d.placed_order())
        .collect();
    IdMap::ranked(instance, &order)
}

/// Free capacity of server `s` over time, as `(time in units after now, free vector)` steps:
/// the first at 0, then one at every change (steps that round to the same time keep the last).
fn free_steps(d: &Dispatcher<'_>, s: usize, unit: Time) -> Vec<(Time, Vec<i64>)> {
    let problem = d.problem();
    let r = problem.resources();
    let capacity = problem.capacity(s);
    let (times, usage) = d.usage(s);
    let mut steps: Vec<(Time, Vec<i64>)> = Vec::with_capacity(times.len());
    for (k, &t) in times.iter().enumerate() {
        let free: Vec<i64> = capacity
            .iter()
            .zip(&usage[k * r..(k + 1) * r])
            .map(|(c, u)| c - u)
            .collect();
        let at = up(t.saturating_sub(problem.now()), unit);
        match steps.last_mut() {
            Some(last) if last.0 == at => last.1 = free,
            _ => steps.push((at, free)),
        }
        // A step that repeats the one before it says nothing.
        if steps.len() >= 2 && steps[steps.len() - 1].1 == steps[steps.len() - 2].1 {
            steps.pop();
        }
    }
    steps
}

/// ` after J3,J5`: the queued dependencies of job `j` not placed yet, in the prompt's ids.
fn waiting_on(problem: &Problem, d: &Dispatcher<'_>, ids: &IdMap, j: usize) -> String {
    let waits: Vec<String> = problem
        .deps(j)
        .iter()
        .filter(|&&q| !d.is_placed(q))
        .map(|&q| ids.job(q))
        .collect();
    format!(" after {}", waits.join(","))
}

/// The user message of a state.
fn state_text(
    instance: &Instance,
    objective: Objective,
    d: &Dispatcher<'_>,
    ids: &IdMap,
    rule: &str,
) -> String {
    let problem = d.problem();
    let unit = time_unit(instance);
    let mut u = coarse_head(instance, objective, unit);
    let mut line = |s: String| {
        u.push_str(&s);
        u.push('\n');
    };
    line("servers: id cap free@t".to_string());
    for (s, server) in instance.servers.iter().enumerate() {
        let mut l = format!("S{} {}", s + 1, slash(&server.capacity));
        for (t, free) in free_steps(d, s, unit) {
            l.push_str(&format!(" {}@{t}", slash(&free)));
        }
        line(l);
    }
    let placed: Vec<String> = d.placed_order().map(|j| ids.job(j)).collect();
    if !placed.is_empty() {
        line(format!("placed ({}): {}", placed.len(), placed.join(" ")));
    }
    let left = problem.jobs() - placed.len();
    line(format!("queue by {rule} ({left} left): id need time start"));
    for &j in ids.job_order() {
        if d.is_placed(j) {
            continue;
        }
        let job = &instance.queue[j];
        let mut l = format!(
            "{} {} {}",
            ids.job(j),
            slash(&job.demand),
            up(job.walltime, unit)
        );
        if d.is_ready(j) {
            let start = d.earliest(j).start;
            l.push_str(&format!(
                " {}",
                up(start.saturating_sub(problem.now()), unit)
            ));
        } else {
            l.push_str(&waiting_on(problem, d, ids, j));
        }
        push_extras(&mut l, instance, j, objective, unit);
        line(l);
    }
    u.pop();
    u
}

/// The user message of a state in `step-v2`: the placeable jobs by their completion if placed
/// next (`listed`, with their starts), then the jobs `waiting` for a dependency.
fn listing_text(
    instance: &Instance,
    objective: Objective,
    d: &Dispatcher<'_>,
    ids: &IdMap,
    listed: &[(usize, Time)],
    waiting: &[usize],
) -> String {
    let problem = d.problem();
    let unit = time_unit(instance);
    let mut u = coarse_head(instance, objective, unit);
    // Each server's capacity and what is free now (running and placed jobs counted), so the
    // server a job would take (its last column) says what it would occupy.
    u.push_str("servers: id cap free\n");
    for (k, server) in instance.servers.iter().enumerate() {
        let free = free_steps(d, k, unit)
            .into_iter()
            .next()
            .map_or_else(|| server.capacity.clone(), |(_, f)| f);
        u.push_str(&format!(
            "S{} {} {}\n",
            k + 1,
            slash(&server.capacity),
            slash(&free)
        ));
    }
    let left = problem.jobs() - d.len();
    u.push_str(&format!(
        "next by earliest end ({left} left): id need time start server\n"
    ));
    let row = |j: usize| {
        let job = &instance.queue[j];
        format!(
            "{} {} {}",
            ids.job(j),
            slash(&job.demand),
            up(job.walltime, unit)
        )
    };
    for &(j, start) in listed {
        let mut l = row(j);
        l.push_str(&format!(
            " {} S{}",
            up(start.saturating_sub(problem.now()), unit),
            d.earliest(j).server + 1
        ));
        push_extras(&mut l, instance, j, objective, unit);
        u.push_str(&l);
        u.push('\n');
    }
    for &j in waiting {
        let mut l = row(j);
        l.push_str(&waiting_on(problem, d, ids, j));
        push_extras(&mut l, instance, j, objective, unit);
        u.push_str(&l);
        u.push('\n');
    }
    u.pop();
    u
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::prompt_ids;

    fn instance() -> Instance {
        Instance::from_json(
            r#"{"now": 0, "resources": ["cores"],
                "servers": [{"id": "n0", "capacity": [4]}],
                "running": [{"id": "r1", "server": "n0", "demand": [2], "end": 120}],
                "queue": [{"id": "a", "submit": 0, "demand": [4], "walltime": 600},
                          {"id": "b", "submit": 0, "demand": [2], "walltime": 60},
                          {"id": "c", "submit": 0, "demand": [1], "walltime": 180, "deps": ["a"]}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn empty_prefix_lists_every_job_with_its_start() {
        let r = render_state(&instance(), Objective::Bsld, Variant::Serial, &[]);
        // sjf ranks b (1 min), c (3 min), a (10 min); c waits for a.
        assert_eq!(
            r.user,
            "goal: min mean bounded slowdown (10 s floor)\n\
             unit: 1 min, rounded up\n\
             resources: cores\n\
             servers: id cap free@t\n\
             S1 4 2@0 4@2\n\
             queue by sjf (3 left): id need time start\n\
             J1 2 1 0\n\
             J2 1 3 after J3\n\
             J3 4 10 2"
        );
        assert_eq!(r.ids.job(1), "J1");
    }

    #[test]
    fn prefix_moves_into_the_free_profile() {
        // Place a (J3) first: it needs the whole server from 2 min to 12 min.
        let r = render_state(&instance(), Objective::Bsld, Variant::Serial, &[0]);
        assert!(r.user.contains("S1 4 2@0 0@2 4@12\n"), "{}", r.user);
        assert!(r.user.contains("placed (1): J3\n"), "{}", r.user);
        assert!(r.user.contains("(2 left)"));
        // b fits beside the running job now; c may start when a ends.
        assert!(r.user.contains("J1 2 1 0\n"), "{}", r.user);
        assert!(r.user.ends_with("J2 1 3 12"), "{}", r.user);
    }

    #[test]
    fn ids_stay_those_of_the_whole_instance() {
        let inst = instance();
        let whole = render(&inst, Objective::Bsld, Variant::Serial, Template::CompactV2).ids;
        for prefix in [&[][..], &[1], &[1, 0]] {
            let r = render_state(&inst, Objective::Bsld, Variant::Serial, prefix);
            assert_eq!(r.ids, whole);
        }
    }

    #[test]
    fn bad_prefixes_fall_back_to_compact_v2() {
        let inst = instance();
        let v2 = render(&inst, Objective::Bsld, Variant::Serial, Template::CompactV2);
        for bad in [&[2][..], &[1, 1], &[7]] {
            assert_eq!(
                render_state(&inst, Objective::Bsld, Variant::Serial, bad),
                v2
            );
        }
    }

    #[test]
    fn step_v2_lists_the_placeable_jobs_by_their_end_numbered_in_that_order() {
        let (o, v) = (Objective::Bsld, Variant::Serial);
        // Nothing placed: b (1 min, starts 0) ends first, then a (10 min, starts at 2: ends at
        // 12); c waits for a.
        let r = render(&instance(), o, v, Template::StepV2);
        assert_eq!(
            r.user,
            "goal: min mean bounded slowdown (10 s floor)\n\
             unit: 1 min, rounded up\n\
             resources: cores\n\
             servers: id cap free\n\
             S1 4 2\n\
             next by earliest end (3 left): id need time start server\n\
             J1 2 1 0 S1\n\
             J2 4 10 2 S1\n\
             J3 1 3 after J2"
        );
        assert!(r.system.contains("listed by when they would end"));
        let ids = |r: &Rendered| (r.ids.job(1), r.ids.job(0), r.ids.job(2));
        assert_eq!(ids(&r), ("J1".into(), "J2".into(), "J3".into()));
        assert_eq!(prompt_ids(&instance(), o, v, Template::StepV2), r.ids);
        // a placed: c is ready at 12 and ends at 15; b still ends first; a (placed) comes last;
        // the server still has 2 cores free now (a starts at 2 min).
        let r = render_state_as(&instance(), o, v, &[0], Template::StepV2);
        assert!(
            r.user.ends_with(
                "S1 4 2\nnext by earliest end (2 left): id need time start server\n\
                 J1 2 1 0 S1\nJ2 1 3 12 S1"
            ),
            "{}",
            r.user
        );
        assert_eq!(ids(&r), ("J1".into(), "J3".into(), "J2".into()));
    }

    #[test]
    fn template_step_v1_is_the_empty_state() {
        let inst = instance();
        assert_eq!(
            render(&inst, Objective::Bsld, Variant::Serial, Template::StepV1),
            render_state(&inst, Objective::Bsld, Variant::Serial, &[])
        );
    }
}
