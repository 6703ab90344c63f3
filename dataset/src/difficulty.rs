//! How much a record asks of a model beyond following its prompt's ranking.
//!
//! compact-v2 prompts list the queue in the order of the instance's *ranking rule*, the best
//! classic rule on that instance (the best rule per instance, BRPI), so "follow the ranking"
//! is the answer `J1 J2 ... Jn` and costs a model nothing to learn. What a record can teach
//! beyond that is measured by its [`Difficulty`]:
//!
//! - **headroom**: how far BRPI's value is above the label's, `(brpi - value) / value`. The
//!   label is the best order known (proven optimal, or the solver's best), so this is what a
//!   perfect model gains over copying the ranking on this record; with an unproven label it
//!   is a lower bound on the true headroom.
//! - **headroom to the bound**: `(brpi - lower_bound) / lower_bound`, the most the headroom can
//!   be (equal to the headroom when the label is proven optimal).
//! - **label is the ranking**: whether the label is the ranking rule's order (after the
//!   dependency repair of SPEC section 2).
//! - **deviations**: label positions whose job is not the *next job of the ranking*, the first
//!   job in ranking order that is not yet placed and whose queued dependencies are all placed.
//!   Zero exactly when the label is the ranking.
//!
//! Every figure is computed from the instance and the label alone, so a reader of a dataset can
//! recompute it ([`Difficulty::of_record`]); [`DifficultySummary`] aggregates them for
//! `dataset stats` and the build manifest.
//!
//! ```
//! use schedlm_dataset::difficulty::Difficulty;
//! use schedlm_model::{Instance, Objective, Problem, Variant};
//!
//! // One 8-core server; SJF, the ranking here, runs the short job `b` first. A label that runs
//! // `a` first leaves the ranking at its first position, and (being worse than SJF's order)
//! // leaves no headroom.
//! let instance = Instance::from_json(r#"{
//!   "now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [8]}],
//!   "queue": [{"id": "a", "submit": 0, "demand": [8], "walltime": 20},
//!             {"id": "b", "submit": 0, "demand": [4], "walltime": 10}]
//! }"#).unwrap();
//! let problem = Problem::new(&instance).unwrap();
//! let (_, value) = problem.evaluate(&[0, 1], Objective::Bsld, Variant::Serial);
//! let d = Difficulty::new(&problem, Objective::Bsld, Variant::Serial, &[0, 1], value, value);
//! assert_eq!(d.ranking_rule, "sjf");
//! assert!(!d.label_is_ranking);
//! assert_eq!(d.deviations, 1); // position 1 takes `a`, not the ranking's `b`
//! assert_eq!(d.headroom, Some(0.0));
//! ```

use std::collections::BTreeMap;

use schedlm_model::{repair, Objective, Problem, Variant};
use schedlm_solver::canonical::{ranking, Ranking};
use schedlm_solver::portfolio::relative_gap;
use serde::{Deserialize, Serialize};

use crate::record::Record;
use crate::stats::Summary;

/// The difficulty of one record (see the module documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difficulty {
    /// The ranking rule: the instance's best classic rule, whose order the compact-v2 prompt
    /// lists as `J1 J2 ... Jn`.
    pub ranking_rule: String,
    /// The objective value of the ranking rule's order: the best rule per instance (BRPI).
    pub brpi_value: f64,
    /// `(brpi_value - value) / value`, a fraction (0.012 = 1.2%): what a perfect answer gains
    /// over the ranking. 0 when BRPI reaches the label; `null` when the label's value is 0 and
    /// BRPI's is not.
    pub headroom: Option<f64>,
    /// `(brpi_value - lower_bound) / lower_bound`: the most the headroom can be; `null` when the
    /// bound is 0 and BRPI's value is not.
    pub headroom_bound: Option<f64>,
    /// Whether the label is the ranking rule's order (after the dependency repair).
    pub label_is_ranking: bool,
    /// Label positions whose job is not the next job of the ranking.
    pub deviations: usize,
}

impl Difficulty {
    /// The difficulty of `label` (queue indices; repaired for dependencies here), whose value is
    /// `value` and whose proven lower bound is `lower_bound`.
    pub fn new(
        problem: &Problem,
        objective: Objective,
        variant: Variant,
        label: &[usize],
        value: f64,
        lower_bound: f64,
    ) -> Difficulty {
        let rank = ranking(problem, objective, variant);
        Difficulty::with_ranking(problem, &rank, label, value, lower_bound)
    }

    /// [`Difficulty::new`] with the instance's ranking already computed.
    pub fn with_ranking(
        problem: &Problem,
        rank: &Ranking,
        label: &[usize],
        value: f64,
        lower_bound: f64,
    ) -> Difficulty {
        let label = repair(problem, label);
        let deviations = deviations(problem, &rank.order, &label);
        let defined = |g: f64| g.is_finite().then_some(g);
        Difficulty {
            ranking_rule: rank.rule.name().to_string(),
            brpi_value: rank.value,
            headroom: defined(relative_gap(rank.value, value)),
            headroom_bound: defined(relative_gap(rank.value, lower_bound)),
            label_is_ranking: deviations == 0,
            deviations,
        }
    }

    /// The difficulty of a record's label, recomputed from its instance (for records written
    /// before builds stored it); `None` when the instance or the label is invalid.
    pub fn of_record(r: &Record) -> Option<Difficulty> {
        let problem = Problem::new(&r.instance).ok()?;
        let label = r.order_indices().ok()?;
        Some(Difficulty::new(
            &problem,
            r.objective,
            r.variant,
            &label,
            r.value,
            r.lower_bound,
        ))
    }

    /// Whether the headroom is at least `min` (a fraction); an undefined headroom (the label
    /// scores 0, BRPI more) is unbounded, so it is.
    pub fn has_headroom(&self, min: f64) -> bool {
        self.headroom.is_none_or(|h| h >= min)
    }
}

/// Label positions (of a dependency-feasible `label`) whose job is not the first job of `rank`
/// that is unplaced and has every queued dependency placed.
fn deviations(problem: &Problem, rank: &[usize], label: &[usize]) -> usize {
    deviating_positions(problem, rank, label)
        .into_iter()
        .filter(|&d| d)
        .count()
}

/// For each position of a dependency-feasible `label`, whether its job is not the first job of
/// `rank` that is unplaced and has every queued dependency placed.
pub fn deviating_positions(problem: &Problem, rank: &[usize], label: &[usize]) -> Vec<bool> {
    let mut placed = vec![false; problem.jobs()];
    label
        .iter()
        .map(|&job| {
            let next = rank
                .iter()
                .copied()
                .find(|&j| !placed[j] && problem.deps(j).iter().all(|&d| placed[d]));
            if let Some(p) = placed.get_mut(job) {
                *p = true;
            }
            next != Some(job)
        })
        .collect()
}

/// For each answer position of a record, whether it leaves the prompt's own listing: an order
/// record's label positions against the ranking (compact-v2, step templates) or the queue order
/// (compact-v1, verbose-v1); a step record's one answer against the first job its state lists
/// (`step-v1`: the first ready job of the ranking; `step-v2`: the job that would end first).
/// `None` when the record's instance or label is invalid. What a weighted loss weighs
/// (`finetune --deviation-weight`).
pub fn answer_deviations(r: &Record) -> Option<Vec<bool>> {
    use crate::prompt::Template;
    let problem = Problem::new(&r.instance).ok()?;
    let label = repair(&problem, &r.order_indices().ok()?);
    let ranked = || ranking(&problem, r.objective, r.variant).order;
    let template = r.template();
    let Some(k) = r.step else {
        let listing: Vec<usize> = match template {
            Some(Template::Compact | Template::Verbose) => (0..problem.jobs()).collect(),
            _ => ranked(),
        };
        return Some(deviating_positions(&problem, &listing, &label));
    };
    let answer = *label.get(k)?;
    let rank = ranked();
    let mut d = schedlm_model::Dispatcher::new(&problem, r.variant);
    for &j in &label[..k] {
        d.place(j);
    }
    let first = if template == Some(Template::StepV2) {
        schedlm_solver::greedy::listing(&d, &rank)
            .first()
            .map(|x| x.0)
    } else {
        rank.iter()
            .copied()
            .find(|&j| !d.is_placed(j) && d.is_ready(j))
    };
    Some(vec![first != Some(answer)])
}

/// Difficulty figures of a group of records (one queue length, or all).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct DifficultyGroup {
    /// Instances in the group (step records count once per instance).
    pub instances: u64,
    /// Share of instances whose label is the ranking, in [0, 1].
    pub label_is_ranking: f64,
    /// Share of label positions that leave the ranking, in [0, 1].
    pub deviating_positions: f64,
    /// The headroom of the instances whose headroom is defined (fractions).
    pub headroom: Summary,
    /// Instances whose headroom is undefined (label value 0, BRPI's not).
    pub headroom_undefined: u64,
    /// Share of instances with a headroom of at least 1%.
    pub headroom_at_least_1pct: f64,
}

/// What [`DifficultySummary`] is computed from, record by record.
#[derive(Debug, Clone, Default)]
pub struct DifficultyTally {
    by_queue: BTreeMap<usize, Acc>,
}

#[derive(Debug, Clone, Default)]
struct Acc {
    instances: u64,
    ranking: u64,
    deviations: u64,
    positions: u64,
    headroom: Vec<f64>,
    undefined: u64,
}

impl Acc {
    fn merge(&mut self, other: &Acc) {
        self.instances += other.instances;
        self.ranking += other.ranking;
        self.deviations += other.deviations;
        self.positions += other.positions;
        self.headroom.extend_from_slice(&other.headroom);
        self.undefined += other.undefined;
    }

    fn group(&self) -> DifficultyGroup {
        let share = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let hard = self.headroom.iter().filter(|&&h| h >= 0.01).count() as u64 + self.undefined;
        DifficultyGroup {
            instances: self.instances,
            label_is_ranking: share(self.ranking, self.instances),
            deviating_positions: share(self.deviations, self.positions),
            headroom: Summary::of(&mut self.headroom.clone()),
            headroom_undefined: self.undefined,
            headroom_at_least_1pct: share(hard, self.instances),
        }
    }
}

impl DifficultyTally {
    /// Counts one instance of `queue` jobs.
    pub fn add(&mut self, queue: usize, d: &Difficulty) {
        let acc = self.by_queue.entry(queue).or_default();
        acc.instances += 1;
        acc.ranking += u64::from(d.label_is_ranking);
        acc.deviations += d.deviations as u64;
        acc.positions += queue as u64;
        match d.headroom {
            Some(h) => acc.headroom.push(h),
            None => acc.undefined += 1,
        }
    }

    /// Whether no instance was counted.
    pub fn is_empty(&self) -> bool {
        self.by_queue.is_empty()
    }

    /// The summary of everything counted.
    pub fn summary(&self) -> DifficultySummary {
        let mut all = Acc::default();
        for acc in self.by_queue.values() {
            all.merge(acc);
        }
        DifficultySummary {
            all: all.group(),
            by_queue: self
                .by_queue
                .iter()
                .map(|(&q, acc)| (q.to_string(), acc.group()))
                .collect(),
        }
    }
}

/// The difficulty of a dataset: over all instances and per queue length (`dataset stats`, and
/// `difficulty` in the manifest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct DifficultySummary {
    /// Every instance.
    pub all: DifficultyGroup,
    /// Per queue length (the keys are lengths, as strings for JSON).
    pub by_queue: BTreeMap<String, DifficultyGroup>,
}

impl DifficultySummary {
    /// Whether most labels are the prompt's ranking (then a model that copies the ranking
    /// scores as well as the labels on most records, and `dataset build` warns).
    pub fn mostly_ranking(&self) -> bool {
        self.all.instances > 0 && self.all.label_is_ranking > 0.5
    }

    /// The lines of a plain-text table: one row for all instances and one per queue length.
    pub fn to_text(&self) -> String {
        let mut t = String::from(
            "difficulty     instances  label=ranking  deviating pos.  headroom mean  median     p90  >=1%\n",
        );
        let mut row = |name: &str, g: &DifficultyGroup| {
            t.push_str(&format!(
                "{name:<14} {:>9} {:>13.1}% {:>14.1}% {:>13.2}% {:>6.2}% {:>6.2}% {:>4.0}%\n",
                g.instances,
                100.0 * g.label_is_ranking,
                100.0 * g.deviating_positions,
                100.0 * g.headroom.mean,
                100.0 * g.headroom.median,
                100.0 * g.headroom.p90,
                100.0 * g.headroom_at_least_1pct,
            ));
        };
        row("all", &self.all);
        if self.by_queue.len() > 1 {
            let mut groups: Vec<(&String, &DifficultyGroup)> = self.by_queue.iter().collect();
            groups.sort_by_key(|(q, _)| q.parse::<usize>().unwrap_or(usize::MAX));
            for (q, g) in groups {
                row(&format!("queue {q}"), g);
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlm_model::Instance;

    fn problem(json: &str) -> Problem {
        Problem::new(&Instance::from_json(json).unwrap()).unwrap()
    }

    /// Three jobs on one core; `c` depends on `a`.
    const CHAIN: &str = r#"{"now": 0, "resources": ["cores"],
        "servers": [{"id": "n0", "capacity": [1]}],
        "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 30},
                  {"id": "b", "submit": 0, "demand": [1], "walltime": 20},
                  {"id": "c", "submit": 0, "demand": [1], "walltime": 10, "deps": ["a"]}]}"#;

    #[test]
    fn deviations_follow_the_next_ready_job_of_the_ranking() {
        let p = problem(CHAIN);
        // Ranking c b a: c is not ready until a is placed, so the ranking's next job is b,
        // then a, then c.
        let rank = [2, 1, 0];
        assert_eq!(deviations(&p, &rank, &[1, 0, 2]), 0);
        // a first leaves the ranking (b was next); then c is ready and next.
        assert_eq!(deviations(&p, &rank, &[0, 2, 1]), 1);
        // a, then b while c is ready and next, then c.
        assert_eq!(deviations(&p, &rank, &[0, 1, 2]), 2);
    }

    #[test]
    fn the_ranking_itself_has_no_headroom_and_no_deviation() {
        let p = problem(CHAIN);
        let rank = ranking(&p, Objective::Bsld, Variant::Serial);
        let d = Difficulty::with_ranking(&p, &rank, &rank.order, rank.value, rank.value);
        assert_eq!(d.headroom, Some(0.0));
        assert!(d.label_is_ranking);
        assert_eq!(d.deviations, 0);
        // A lower bound below the value leaves room up to it.
        let d = Difficulty::with_ranking(&p, &rank, &rank.order, rank.value, rank.value / 2.0);
        assert!((d.headroom_bound.unwrap() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_zero_label_value_leaves_the_headroom_undefined_and_counts_it_hard() {
        let p = problem(CHAIN);
        let rank = ranking(&p, Objective::Wait, Variant::Serial);
        let d = Difficulty::with_ranking(&p, &rank, &[1, 0, 2], 0.0, 0.0);
        assert_eq!(d.headroom, None);
        assert!(d.has_headroom(0.5));
        let mut t = DifficultyTally::default();
        t.add(3, &d);
        let s = t.summary();
        assert_eq!((s.all.headroom_undefined, s.all.headroom.count), (1, 0));
        assert_eq!(s.all.headroom_at_least_1pct, 1.0);
    }

    #[test]
    fn the_summary_counts_shares_per_queue_length() {
        let d = |ranking: bool, deviations: usize, h: f64| Difficulty {
            ranking_rule: "sjf".into(),
            brpi_value: 1.0,
            headroom: Some(h),
            headroom_bound: Some(h),
            label_is_ranking: ranking,
            deviations,
        };
        let mut t = DifficultyTally::default();
        t.add(4, &d(true, 0, 0.0));
        t.add(4, &d(false, 2, 0.02));
        t.add(6, &d(false, 3, 0.04));
        let s = t.summary();
        assert_eq!(s.all.instances, 3);
        assert!((s.all.label_is_ranking - 1.0 / 3.0).abs() < 1e-12);
        assert!((s.all.deviating_positions - 5.0 / 14.0).abs() < 1e-12);
        assert!((s.all.headroom.mean - 0.02).abs() < 1e-12);
        assert!((s.all.headroom_at_least_1pct - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.by_queue["4"].instances, 2);
        assert!((s.by_queue["4"].deviating_positions - 2.0 / 8.0).abs() < 1e-12);
        assert!(!s.mostly_ranking());
        assert!(s.to_text().contains("queue 6"));
    }
}
