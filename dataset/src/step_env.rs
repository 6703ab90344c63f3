//! A step environment: one dispatch of an instance, decided one job at a time, each state shown
//! as the step templates render it (`step-v1`, `step-v2`; [`crate::step`]).
//!
//! This is what a reinforcement-learning loop outside Rust rolls a policy out on (the Python
//! `schedlm.StepEnv`): the observation is the prompt `dataset build --records steps` writes for
//! the same state, byte for byte, with the jobs that may be placed next in the order the prompt
//! lists them; a step places one of them (SPEC section 3, the serial or strict dispatcher); the
//! last decision is forced and taken by the environment, as step records and the `finetune`
//! crate's rollouts leave it out. When every job is placed, [`StepEnv::value`] is the objective
//! value of the order (SPEC section 4).
//!
//! ```
//! use schedlm_dataset::step_env::StepEnv;
//! use schedlm_dataset::Template;
//! use schedlm_model::{Instance, Objective, Variant};
//!
//! let instance = Instance::from_json(r#"{"now": 0, "resources": ["cores"],
//!   "servers": [{"id": "n0", "capacity": [4]}],
//!   "queue": [{"id": "a", "submit": 0, "demand": [4], "walltime": 600},
//!             {"id": "b", "submit": 0, "demand": [2], "walltime": 60},
//!             {"id": "c", "submit": 0, "demand": [2], "walltime": 120}]}"#).unwrap();
//! let mut env = StepEnv::new(instance, Objective::Bsld, Variant::Serial, Template::StepV2)?;
//! assert!(env.observation().prompt.contains("next by earliest end (3 left)"));
//! while !env.done() {
//!     env.step_id("J1")?; // follow the listing: the `ect` policy
//! }
//! assert_eq!(env.order().len(), 3);
//! assert!(env.value().is_some());
//! # Ok::<(), schedlm_dataset::step_env::EnvError>(())
//! ```

use schedlm_model::{Instance, Objective, Problem, Variant};
use schedlm_solver::canonical::{ranking, Ranking};

use crate::prompt::{Rendered, Template};
use crate::record::prompt_text;
use crate::reward::Reference;
use crate::step::StepState;

/// Why an environment could not be made or a step not taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EnvError {
    /// The template does not render one decision.
    #[error("template `{0}` does not render one decision: use step-v1 or step-v2")]
    Template(String),
    /// The instance fails the checks of SPEC section 1.
    #[error("not a valid instance: {0}")]
    Instance(String),
    /// The choice names no job that may be placed next.
    #[error("`{choice}` is not a job that may be placed next: choose one of {}",
            .candidates.join(", "))]
    Choice {
        /// The choice as given (a prompt id, or an index into the candidates).
        choice: String,
        /// The prompt ids of the jobs that may be placed next.
        candidates: Vec<String>,
    },
    /// Every job is placed already.
    #[error("every job is placed: reset the environment to dispatch again")]
    Done,
}

/// What the policy sees at one state.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// The state's system and user messages and its prompt ids.
    pub rendered: Rendered,
    /// The prompt text (system, blank line, user, newline), as step records hold it.
    pub prompt: String,
    /// The jobs that may be placed next (queue indices), in the order the prompt lists them
    /// ([`StepState::candidates`]); empty when the dispatch is finished.
    pub candidates: Vec<usize>,
}

impl Observation {
    /// The prompt ids of the candidates, in listing order (`J1, J2, ...` under step-v2).
    pub fn candidate_ids(&self) -> Vec<String> {
        self.candidates
            .iter()
            .map(|&j| self.rendered.ids.job(j))
            .collect()
    }
}

/// One dispatch of an instance in progress (see the module).
#[derive(Debug, Clone)]
pub struct StepEnv {
    instance: Instance,
    problem: Problem,
    objective: Objective,
    variant: Variant,
    template: Template,
    ranked: Ranking,
    placed: Vec<usize>,
    observation: Observation,
}

impl StepEnv {
    /// A dispatch of `instance` with nothing placed (the forced decision of a one-job queue
    /// taken), rendered with `template` (`step-v1` or `step-v2`).
    pub fn new(
        instance: Instance,
        objective: Objective,
        variant: Variant,
        template: Template,
    ) -> Result<StepEnv, EnvError> {
        if !template.is_step() {
            return Err(EnvError::Template(template.name().to_string()));
        }
        schedlm_model::validate(&instance).map_err(|e| EnvError::Instance(e.to_string()))?;
        let problem = Problem::new(&instance).map_err(|e| EnvError::Instance(e.to_string()))?;
        let ranked = ranking(&problem, objective, variant);
        let ids = crate::IdMap::new(&instance);
        let mut env = StepEnv {
            instance,
            problem,
            objective,
            variant,
            template,
            ranked,
            placed: Vec::new(),
            observation: Observation {
                rendered: Rendered {
                    system: String::new(),
                    user: String::new(),
                    ids,
                },
                prompt: String::new(),
                candidates: Vec::new(),
            },
        };
        env.settle();
        Ok(env)
    }

    /// Back to nothing placed.
    pub fn reset(&mut self) {
        self.placed.clear();
        self.settle();
    }

    /// The state after the jobs placed so far, rebuilt from the placements.
    fn state(&self) -> StepState<'_> {
        let mut state = StepState::ranked(
            &self.instance,
            &self.problem,
            self.objective,
            self.variant,
            &self.ranked,
        )
        .rendered_as(self.template);
        for &j in &self.placed {
            let placed = state.place(j);
            debug_assert!(placed, "a placed job could not be placed again");
        }
        state
    }

    /// Takes a forced last decision and renders the state.
    fn settle(&mut self) {
        if self.placed.len() + 1 == self.problem.jobs() {
            let last = self.state().placeable();
            self.placed.extend(last);
        }
        let state = self.state();
        let rendered = state.render();
        let candidates = if self.done() {
            Vec::new()
        } else {
            state.candidates()
        };
        self.observation = Observation {
            prompt: prompt_text(&rendered.system, &rendered.user),
            rendered,
            candidates,
        };
    }

    /// The current state as the policy sees it.
    pub fn observation(&self) -> &Observation {
        &self.observation
    }

    /// Places queue job `j` next; an error when it may not be placed next (placed already,
    /// waiting for a queued dependency, not a job) or when the dispatch is finished.
    pub fn step(&mut self, j: usize) -> Result<(), EnvError> {
        if self.done() {
            return Err(EnvError::Done);
        }
        if !self.observation.candidates.contains(&j) {
            return Err(self.refused(format!("job {j}")));
        }
        self.placed.push(j);
        self.settle();
        Ok(())
    }

    /// Places the job the prompt calls `id` (e.g. `J2`; surrounding white space is ignored).
    pub fn step_id(&mut self, id: &str) -> Result<(), EnvError> {
        if self.done() {
            return Err(EnvError::Done);
        }
        match self.observation.rendered.ids.job_index(id.trim()) {
            Some(j) if self.observation.candidates.contains(&j) => self.step(j),
            _ => Err(self.refused(id.to_string())),
        }
    }

    /// Places the `k`-th candidate (0 is the first listed).
    pub fn step_index(&mut self, k: usize) -> Result<(), EnvError> {
        if self.done() {
            return Err(EnvError::Done);
        }
        match self.observation.candidates.get(k) {
            Some(&j) => self.step(j),
            None => Err(self.refused(format!("index {k}"))),
        }
    }

    fn refused(&self, choice: String) -> EnvError {
        EnvError::Choice {
            choice,
            candidates: self.observation.candidate_ids(),
        }
    }

    /// Whether every job is placed.
    pub fn done(&self) -> bool {
        self.placed.len() == self.problem.jobs()
    }

    /// The jobs placed so far (queue indices), in placement order.
    pub fn order(&self) -> &[usize] {
        &self.placed
    }

    /// The objective value of the finished order (SPEC section 4); `None` before it is done.
    pub fn value(&self) -> Option<f64> {
        if !self.done() {
            return None;
        }
        self.problem
            .schedule(&self.placed, self.objective, self.variant)
            .ok()
            .map(|(_, v)| v)
    }

    /// Each candidate's row of [`crate::features::FEATURES`], in the order of the observation's
    /// candidates; empty when the dispatch is finished. Computed when asked (about n
    /// placements and n^2 earliest fits), not with every observation.
    pub fn features(&self) -> Vec<crate::features::Row> {
        if self.done() {
            return Vec::new();
        }
        self.state()
            .features()
            .into_iter()
            .map(|(_, row)| row)
            .collect()
    }

    /// Every candidate's action value at the current state, in listing order
    /// ([`schedlm_solver::values::state_values`]): the best value found over orders that start
    /// with the jobs placed so far and that candidate, under `work_limit` units of counted work
    /// per candidate, searched from `reference` (queue indices, a dependency-feasible order of
    /// the whole queue, e.g. the instance's label) with the placed jobs taken out of it; `None`
    /// searches from the earliest-completion order. The same at any load and thread count.
    pub fn values(
        &self,
        reference: Option<&[usize]>,
        work_limit: u64,
    ) -> Vec<schedlm_solver::values::CandidateValue> {
        let fallback;
        let reference = match reference {
            Some(r) => r,
            None => {
                fallback = schedlm_solver::greedy::earliest_completion(
                    &self.problem,
                    self.variant,
                    &self.ranked.order,
                );
                &fallback
            }
        };
        let placed: std::collections::HashSet<usize> = self.placed.iter().copied().collect();
        let mut order = self.placed.clone();
        order.extend(reference.iter().copied().filter(|j| !placed.contains(j)));
        schedlm_solver::values::state_values(
            &self.problem,
            self.objective,
            self.variant,
            &order,
            self.placed.len(),
            &self.observation.candidates,
            0.0,
            work_limit,
        )
    }

    /// For every candidate, in listing order, the value of the order that places it next and
    /// then follows the earliest-completion listing to the end (the `ect` policy's value after
    /// that one choice): what one decision changes when the rest is left to the listing, the
    /// measure of `eval`'s "decisions leaving the listing that lower the value".
    pub fn listing_values(&self) -> Vec<f64> {
        let rank = &self.ranked.order;
        let mut base = schedlm_model::Dispatcher::new(&self.problem, self.variant);
        for &j in &self.placed {
            base.place(j);
        }
        self.observation
            .candidates
            .iter()
            .map(|&c| {
                let mut d = base.clone();
                let mut order = self.placed.clone();
                d.place(c);
                order.push(c);
                schedlm_solver::greedy::complete(&mut d, rank, &mut order);
                self.problem
                    .schedule(&order, self.objective, self.variant)
                    .map_or(f64::INFINITY, |(_, v)| v)
            })
            .collect()
    }

    /// The values of the prompt's free answers on the instance ([`Reference::of`]).
    pub fn reference(&self) -> Reference {
        Reference::of(&self.problem, self.objective, self.variant)
    }

    /// The instance being dispatched.
    pub fn instance(&self) -> &Instance {
        &self.instance
    }

    /// Its compiled problem.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// The objective, the dispatcher variant and the template.
    pub fn settings(&self) -> (Objective, Variant, Template) {
        (self.objective, self.variant, self.template)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{step_records, AnswerOrder, RecordOptions};
    use crate::testing;
    use schedlm_generator::{Config, Family};

    fn instance() -> Instance {
        Instance::from_json(
            r#"{"now": 0, "resources": ["cores"],
                "servers": [{"id": "n0", "capacity": [4]}],
                "running": [{"id": "r1", "server": "n0", "demand": [2], "end": 120}],
                "queue": [{"id": "a", "submit": 0, "demand": [4], "walltime": 600},
                          {"id": "b", "submit": 0, "demand": [2], "walltime": 60},
                          {"id": "c", "submit": 0, "demand": [1], "walltime": 180, "deps": ["a"]},
                          {"id": "d", "submit": 0, "demand": [2], "walltime": 300}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn following_the_listing_is_the_ect_policy() {
        let (o, v) = (Objective::Bsld, Variant::Serial);
        let mut env = StepEnv::new(instance(), o, v, Template::StepV2).unwrap();
        while !env.done() {
            env.step_index(0).unwrap();
        }
        let p = env.problem().clone();
        let ect = schedlm_solver::greedy::ect(&p, o, v);
        assert_eq!(env.order(), &ect[..]);
        assert_eq!(env.value(), Some(env.reference().ect));
        assert_eq!(env.step_index(0), Err(EnvError::Done));
        env.reset();
        assert!(env.order().is_empty() && env.value().is_none());
    }

    #[test]
    fn refused_choices_name_themselves_and_the_candidates() {
        let mut env = StepEnv::new(
            instance(),
            Objective::Bsld,
            Variant::Serial,
            Template::StepV2,
        )
        .unwrap();
        let before = env.observation().clone();
        // c waits for a: listed, but not a candidate.
        let waiting = before.rendered.ids.job(2);
        let e = env.step_id(&waiting).unwrap_err();
        assert!(
            e.to_string().starts_with(&format!("`{waiting}` is not")),
            "{e}"
        );
        assert!(e.to_string().ends_with("choose one of J1, J2, J3"), "{e}");
        assert!(env.step_id("J9").is_err() && env.step_index(3).is_err());
        assert!(env.step(7).is_err());
        assert_eq!(env.observation(), &before);
        assert!(StepEnv::new(
            instance(),
            Objective::Bsld,
            Variant::Serial,
            Template::CompactV2
        )
        .is_err());
    }

    #[test]
    fn stepping_along_step_records_renders_their_prompts() {
        let mut config = Config::new(Family::Hpc, 5);
        (config.queue_min, config.queue_max, config.dep_prob) = (3, 7, 0.3);
        let data = testing::solved(&config, 6, &testing::quick_solve()).unwrap();
        for template in [Template::StepV1, Template::StepV2] {
            for (inst, problem, solution) in &data {
                let options = RecordOptions {
                    answer: AnswerOrder::Canonical,
                    template,
                    objective: Objective::Bsld,
                    variant: Variant::Serial,
                    plan: false,
                    split: Default::default(),
                };
                let order =
                    crate::make_record(0, "t", inst, problem, solution, "auto", &options).unwrap();
                let steps = step_records(&order, problem).unwrap();
                let mut env =
                    StepEnv::new(inst.clone(), Objective::Bsld, Variant::Serial, template).unwrap();
                for record in &steps {
                    assert_eq!(env.observation().prompt, record.prompt);
                    env.step_id(&record.completion).unwrap();
                }
                assert!(env.done());
                assert_eq!(env.value(), Some(order.value));
            }
        }
    }
}
