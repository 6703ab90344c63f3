//! The reward of an answer, for reinforcement learning with the dispatcher as the judge.
//!
//! One formula, used by `schedlm rl` (the `finetune` crate's GRPO loop) and meant to be the one
//! any other trainer calls: an answer's order is dispatched (SPEC section 3), its objective value
//! is set against the best rule per instance (BRPI: the ranking the compact prompts list), and
//!
//! ```text
//! reward = brpi / value - 1      for a valid answer whose value is positive
//! reward = 1 (0 if brpi is 0)    for a valid answer whose value is 0 (nothing is better)
//! reward = INVALID = -1          for an answer that is not a valid order
//! ```
//!
//! so the ranking itself earns 0, every order better than it a positive reward (BRPI's value
//! over the answer's, less one: 0.11 for an order 10% below BRPI's value), every order worse a
//! negative one that stays above -1 however bad it is, and an invalid answer the lowest reward
//! of all.
//!
//! ```
//! use schedlm_dataset::reward::{reward, INVALID};
//!
//! assert_eq!(reward(Some(10.0), 10.0), 0.0);                // the ranking itself
//! assert!((reward(Some(8.0), 10.0) - 0.25).abs() < 1e-12);  // better than the ranking
//! assert!(reward(Some(1e9), 10.0) > INVALID);               // worse, but valid
//! assert_eq!(reward(None, 10.0), INVALID);                  // not a valid order
//! ```

use schedlm_model::{tied, Instance, Objective, Problem, Variant};
use schedlm_solver::canonical::ranking;

use crate::ids::IdMap;
use crate::parse::{parse_answer, Mode};

/// The reward of an answer that is not a valid order.
pub const INVALID: f64 = -1.0;

/// The reward of an answer whose order scores `value` (`None`: invalid) where the best rule
/// per instance scores `brpi`.
pub fn reward(value: Option<f64>, brpi: f64) -> f64 {
    match value {
        None => INVALID,
        Some(v) if v > 0.0 => brpi / v - 1.0,
        Some(_) if brpi > 0.0 => 1.0,
        Some(_) => 0.0,
    }
}

/// An answer scored: whether it was a valid order, its value, and its reward.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// The objective value of its order (`None` when invalid).
    pub value: Option<f64>,
    /// The best rule per instance's value on the instance.
    pub brpi: f64,
    /// [`reward`] of the two.
    pub reward: f64,
}

/// The best rule per instance's value (the ranking rule's) on `problem`.
pub fn brpi_value(problem: &Problem, objective: Objective, variant: Variant) -> f64 {
    ranking(problem, objective, variant).value
}

impl Scored {
    /// `value` (`None`: invalid) set against BRPI's `brpi`.
    fn new(value: Option<f64>, brpi: f64) -> Scored {
        Scored {
            value,
            brpi,
            reward: reward(value, brpi),
        }
    }

    /// Against the best rule per instance: `Less` for a win, `Equal` for a tie
    /// ([`schedlm_model::tied`]), `Greater` for a loss (an invalid answer loses).
    pub fn against_brpi(&self) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        match self.value {
            Some(v) if tied(v, self.brpi) => Ordering::Equal,
            Some(v) if v < self.brpi => Ordering::Less,
            _ => Ordering::Greater,
        }
    }
}

/// Scores a text answer to a prompt with ids `ids`: parsed strictly (any defect makes it
/// invalid), dispatched, set against BRPI. `None` when the instance itself is invalid.
pub fn score_answer(
    text: &str,
    ids: &IdMap,
    instance: &Instance,
    objective: Objective,
    variant: Variant,
) -> Option<Scored> {
    let problem = Problem::new(instance).ok()?;
    Some(score_text(
        &problem, text, ids, instance, objective, variant,
    ))
}

/// [`score_answer`] on the instance's compiled `problem`.
pub fn score_text(
    problem: &Problem,
    text: &str,
    ids: &IdMap,
    instance: &Instance,
    objective: Objective,
    variant: Variant,
) -> Scored {
    let brpi = brpi_value(problem, objective, variant);
    score_text_against(problem, text, ids, instance, objective, variant, brpi)
}

/// [`score_text`] with BRPI's value already computed (`brpi`, from [`brpi_value`]): for
/// scoring many answers to one prompt.
pub fn score_text_against(
    problem: &Problem,
    text: &str,
    ids: &IdMap,
    instance: &Instance,
    objective: Objective,
    variant: Variant,
    brpi: f64,
) -> Scored {
    let value = parse_answer(text, ids, instance, Mode::Strict)
        .ok()
        .and_then(|p| problem.schedule(&p.order, objective, variant).ok())
        .map(|(_, v)| v);
    Scored::new(value, brpi)
}

/// Scores an order of queue indices (a rollout's): dispatched, set against BRPI.
pub fn score_order(
    problem: &Problem,
    order: &[usize],
    objective: Objective,
    variant: Variant,
) -> Scored {
    let value = problem
        .schedule(order, objective, variant)
        .ok()
        .map(|(_, v)| v);
    Scored::new(value, brpi_value(problem, objective, variant))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::{render, Template};

    #[test]
    fn rewards_follow_the_formula() {
        assert_eq!(reward(Some(5.0), 10.0), 1.0);
        assert_eq!(reward(Some(20.0), 10.0), -0.5);
        assert_eq!(reward(Some(0.0), 0.0), 0.0);
        assert_eq!(reward(Some(0.0), 3.0), 1.0);
        assert_eq!(reward(Some(1.0), 0.0), -1.0);
        assert_eq!(reward(None, 0.0), INVALID);
    }

    #[test]
    fn the_ranking_earns_nothing_and_garbage_the_least() {
        let inst = Instance::from_json(
            r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n", "capacity": [4]}],
                "queue": [{"id": "a", "submit": 0, "demand": [4], "walltime": 600},
                          {"id": "b", "submit": 0, "demand": [4], "walltime": 60}]}"#,
        )
        .unwrap();
        let r = render(&inst, Objective::Bsld, Variant::Serial, Template::CompactV2);
        let s = score_answer("J1 J2", &r.ids, &inst, Objective::Bsld, Variant::Serial).unwrap();
        assert_eq!(s.reward, 0.0);
        let worse = score_answer("J2 J1", &r.ids, &inst, Objective::Bsld, Variant::Serial).unwrap();
        assert!(worse.reward < 0.0 && worse.reward > INVALID);
        let bad = score_answer("no idea", &r.ids, &inst, Objective::Bsld, Variant::Serial).unwrap();
        assert_eq!((bad.value, bad.reward), (None, INVALID));
        let p = Problem::new(&inst).unwrap();
        assert_eq!(
            score_order(&p, &[1, 0], Objective::Bsld, Variant::Serial).reward,
            0.0
        );
    }
}
