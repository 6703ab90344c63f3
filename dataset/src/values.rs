//! Action values of step records (`dataset build --records steps --targets values`): for every
//! job a step's state offers, the best value reachable when the order starts with the placed
//! jobs and that job, and its regret (that value minus the best over the state's candidates).
//!
//! A step record's label names one next job; its values say what every other choice costs, so
//! a trainer can spread its target over the choices that cost nothing (or little) instead of
//! teaching one arbitrary optimal order. The values come from
//! [`schedlm_solver::values::state_values`] under a counted work budget per candidate
//! (`--value-work-limit`), so they are the same bytes on every machine.

use schedlm_model::{tied, Objective, Problem, Variant};
use schedlm_solver::values::state_values;
use serde::{Deserialize, Serialize};

use crate::ids::IdMap;

/// The values of a step record's candidates (its field `values`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepValues {
    /// Work budget of each candidate, in `schedlm_solver::work` units (`--value-work-limit`).
    pub work_limit: u64,
    /// Units of work spent on the whole state (every candidate).
    pub work: u64,
    /// The best value over the candidates: the lowest `value` below.
    pub best: f64,
    /// Every job the state offers (unplaced, with its queued dependencies placed), by prompt id
    /// in the listing's order (`J1` first in `step-v2`).
    pub candidates: Vec<CandidateValue>,
}

/// One candidate next job of a step record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateValue {
    /// The job's id in the record's prompt (`J3`).
    pub id: String,
    /// The best objective value found over orders that start with the placed jobs and this
    /// one.
    pub value: f64,
    /// `value` minus [`StepValues::best`]: 0 for the best candidates (ties within a relative
    /// 1e-9 are written as exactly 0), never negative.
    pub regret: f64,
    /// Whether `value` is proven to be the best over those orders (a finished branch and bound
    /// below the state, or the instance's lower bound reached).
    pub proven: bool,
}

impl CandidateValue {
    /// The regret relative to the state's best value (`regret / best`); the absolute regret
    /// when the best value is 0 (a `wait` state where every job can start at once).
    pub fn relative(&self, best: f64) -> f64 {
        if best > 0.0 {
            self.regret / best
        } else {
            self.regret
        }
    }
}

impl StepValues {
    /// The values of the state after the first `k` jobs of `label` (a dependency-repaired
    /// order), for its candidates in the order of the prompt ids `ids` (those that may be
    /// placed next). `lower_bound` is the instance's proven lower bound (0 when unknown).
    #[allow(clippy::too_many_arguments)]
    pub fn compute(
        problem: &Problem,
        objective: Objective,
        variant: Variant,
        label: &[usize],
        k: usize,
        placeable: &[usize],
        ids: &IdMap,
        lower_bound: f64,
        work_limit: u64,
    ) -> StepValues {
        let candidates: Vec<usize> = ids
            .job_order()
            .iter()
            .copied()
            .filter(|j| placeable.contains(j))
            .collect();
        let values = state_values(
            problem,
            objective,
            variant,
            label,
            k,
            &candidates,
            lower_bound,
            work_limit,
        );
        let best = values.iter().map(|v| v.value).fold(f64::INFINITY, f64::min);
        let work = values.iter().map(|v| v.work).sum();
        let candidates = values
            .into_iter()
            .map(|v| CandidateValue {
                id: ids.job(v.job),
                regret: if tied(v.value, best) {
                    0.0
                } else {
                    v.value - best
                },
                value: v.value,
                proven: v.proven,
            })
            .collect();
        StepValues {
            work_limit,
            work,
            best,
            candidates,
        }
    }

    /// The candidate of prompt id `id`.
    pub fn get(&self, id: &str) -> Option<&CandidateValue> {
        self.candidates.iter().find(|c| c.id == id)
    }

    /// Checks what a reader may rely on: at least one candidate, finite values, `best` the
    /// lowest value, every regret `value - best` (0 on ties) and never negative. Returns what is
    /// wrong.
    pub fn check(&self) -> Result<(), String> {
        if self.candidates.is_empty() {
            return Err("field `values.candidates` is empty".into());
        }
        let lowest = self
            .candidates
            .iter()
            .map(|c| c.value)
            .fold(f64::INFINITY, f64::min);
        if !self.best.is_finite() || !tied(lowest, self.best) {
            return Err(format!(
                "field `values.best`: {} is not the lowest candidate value {lowest}",
                self.best
            ));
        }
        for c in &self.candidates {
            if !c.value.is_finite() || c.regret < 0.0 {
                return Err(format!(
                    "field `values.candidates`: {} has value {} and regret {}",
                    c.id, c.value, c.regret
                ));
            }
            let expected = c.value - self.best;
            if !(tied(c.value, self.best) && c.regret == 0.0 || tied(c.regret, expected)) {
                return Err(format!(
                    "field `values.candidates`: {} has regret {}, not value - best = {expected}",
                    c.id, c.regret
                ));
            }
        }
        Ok(())
    }
}
