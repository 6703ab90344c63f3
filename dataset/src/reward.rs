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

/// The free answers of a prompt, which a score for reinforcement learning should not pay for:
/// the value of the best rule per instance (BRPI, the ranking compact-v2 lists as `J1..Jn`)
/// and of the earliest-completion listing (`ect`, the order step-v2 lists at every step, so
/// that answering `J1` each time follows it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reference {
    /// BRPI's value.
    pub brpi: f64,
    /// The `ect` policy's value ([`schedlm_solver::greedy::ect`]).
    pub ect: f64,
}

impl Reference {
    /// The values of both free answers on `problem`.
    pub fn of(problem: &Problem, objective: Objective, variant: Variant) -> Reference {
        let ect = schedlm_solver::greedy::ect(problem, objective, variant);
        Reference {
            brpi: brpi_value(problem, objective, variant),
            ect: problem
                .schedule(&ect, objective, variant)
                .map_or(f64::INFINITY, |(_, v)| v),
        }
    }

    /// The better (lower) of the two: the value an answer must beat to earn a
    /// [`headroom_score`] above 0.
    pub fn value(&self) -> f64 {
        self.brpi.min(self.ect)
    }
}

/// The share of the headroom an answer wins, in [0, 1], for trainers that want a bounded
/// score (reasoning-gym's `score_answer`, GRPO with rewards in [0, 1]):
///
/// ```text
/// score = clamp((reference - value) / (reference - best), 0, 1)   valid answer
/// score = 1                                   valid answer at most `best` (within tolerance)
/// score = 0                                   not a valid order (value None)
/// ```
///
/// with `reference` the better of the free answers ([`Reference::value`]) and `best` the best
/// known order's value (a label's). An answer no better than both free answers scores 0, the
/// best known order 1. On an instance without headroom (`best` not below `reference`) only an
/// answer as good as `best` scores, and it scores 1.
///
/// ```
/// use schedlm_dataset::reward::headroom_score;
///
/// assert_eq!(headroom_score(Some(10.0), 10.0, 8.0), 0.0);  // a free answer
/// assert_eq!(headroom_score(Some(9.0), 10.0, 8.0), 0.5);   // half-way to the best known
/// assert_eq!(headroom_score(Some(8.0), 10.0, 8.0), 1.0);   // the best known order
/// assert_eq!(headroom_score(Some(12.0), 10.0, 8.0), 0.0);  // worse than a free answer
/// assert_eq!(headroom_score(None, 10.0, 8.0), 0.0);        // not a valid order
/// ```
pub fn headroom_score(value: Option<f64>, reference: f64, best: f64) -> f64 {
    let Some(v) = value else {
        return 0.0;
    };
    if v <= best || tied(v, best) {
        return 1.0;
    }
    if reference <= best || tied(reference, best) {
        return 0.0;
    }
    ((reference - v) / (reference - best)).clamp(0.0, 1.0)
}

/// [`headroom_score`] of a text answer to a prompt with ids `ids`, parsed strictly and
/// dispatched, against `reference` ([`Reference::of`] the instance) and the best known value
/// `best`.
#[allow(clippy::too_many_arguments)]
pub fn headroom_of_text(
    problem: &Problem,
    text: &str,
    ids: &IdMap,
    instance: &Instance,
    objective: Objective,
    variant: Variant,
    reference: &Reference,
    best: f64,
) -> f64 {
    let value = parse_answer(text, ids, instance, Mode::Strict)
        .ok()
        .and_then(|p| problem.schedule(&p.order, objective, variant).ok())
        .map(|(_, v)| v);
    headroom_score(value, reference.value(), best)
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
    fn headroom_scores_stay_in_the_unit_interval_and_follow_the_value() {
        assert_eq!(headroom_score(Some(10.0), 10.0, 10.0), 1.0);
        assert_eq!(headroom_score(Some(11.0), 10.0, 10.0), 0.0);
        // A best worse than the reference (a weak label): only reaching it scores.
        assert_eq!(headroom_score(Some(11.0), 10.0, 12.0), 1.0);
        assert_eq!(headroom_score(Some(13.0), 10.0, 12.0), 0.0);
        assert_eq!(headroom_score(Some(0.0), 0.0, 0.0), 1.0);
        let mut last = 1.0;
        for k in 0..=20 {
            let s = headroom_score(Some(8.0 + 0.25 * f64::from(k)), 10.0, 8.0);
            assert!((0.0..=1.0).contains(&s) && s <= last, "{k}: {s}");
            last = s;
        }
    }

    #[test]
    fn the_free_answers_score_nothing() {
        let inst = Instance::from_json(
            r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n", "capacity": [4]}],
                "queue": [{"id": "a", "submit": 0, "demand": [4], "walltime": 600},
                          {"id": "b", "submit": 0, "demand": [2], "walltime": 60},
                          {"id": "c", "submit": 0, "demand": [2], "walltime": 900}]}"#,
        )
        .unwrap();
        let p = Problem::new(&inst).unwrap();
        let (o, v) = (Objective::Bsld, Variant::Serial);
        let reference = Reference::of(&p, o, v);
        assert_eq!(reference.brpi, brpi_value(&p, o, v));
        let ect = schedlm_solver::greedy::ect(&p, o, v);
        assert_eq!(reference.ect, p.schedule(&ect, o, v).unwrap().1);
        let best = reference.value() * 0.5;
        let r = render(&inst, o, v, Template::CompactV2);
        let ranking = "J1 J2 J3";
        let s = headroom_of_text(&p, ranking, &r.ids, &inst, o, v, &reference, best);
        assert_eq!(s, 0.0);
        let s = headroom_of_text(&p, "nonsense", &r.ids, &inst, o, v, &reference, best);
        assert_eq!(s, 0.0);
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
