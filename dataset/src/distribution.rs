//! What a model was trained on, so that whoever asks it later can tell when a question lies
//! outside it.
//!
//! A model trained on queues of 6 to 8 jobs and asked about 12 answers something, and without
//! a record of its training data nothing says that the answer is an extrapolation. `schedlm
//! finetune` writes a [`TrainingDistribution`] of its training records into the run directory
//! ([`FILE`]); `predict` and `eval` read it and count the instances that lie outside it
//! ([`TrainingDistribution::outside`]).
//!
//! ```
//! use schedlm_dataset::distribution::TrainingDistribution;
//! use schedlm_model::{Objective, Variant};
//!
//! let mut d = TrainingDistribution::default();
//! d.add("uniform", 6, Objective::Bsld, Variant::Serial, "compact-v2");
//! d.add("uniform", 8, Objective::Bsld, Variant::Serial, "compact-v2");
//! assert!(d.outside("uniform", 7, Objective::Bsld, Variant::Serial, "compact-v2").is_empty());
//! let why = d.outside("hpc", 12, Objective::Bsld, Variant::Serial, "compact-v2");
//! assert_eq!(why, ["family hpc (trained on uniform)", "queue of 12 jobs (trained on 6..8)"]);
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use schedlm_model::{Objective, Variant};
use serde::{Deserialize, Serialize};

use crate::record::Record;

/// The file a training run writes its distribution to, in the run directory.
pub const FILE: &str = "training_data.json";

/// The training records of a model, summarised: what each later question is checked against.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TrainingDistribution {
    /// Training records (every step record counts).
    pub records: u64,
    /// Records per family (generator family, or the `--label` of `--from` builds).
    pub families: BTreeMap<String, u64>,
    /// Shortest and longest queue trained on, [min, max]; [0, 0] with no record.
    pub queue: [usize; 2],
    /// Objectives trained on (`bsld`, ...).
    pub objectives: Vec<Objective>,
    /// Dispatcher variants trained on (`serial`, `strict`).
    pub variants: Vec<Variant>,
    /// Prompt templates trained on (`compact-v2`, ...).
    pub templates: Vec<String>,
}

impl TrainingDistribution {
    /// The distribution of `records`.
    pub fn of<'a>(records: impl IntoIterator<Item = &'a Record>) -> TrainingDistribution {
        let mut d = TrainingDistribution::default();
        for r in records {
            d.add(
                &r.family,
                r.instance.queue.len(),
                r.objective,
                r.variant,
                &r.template,
            );
        }
        d
    }

    /// Counts one training record.
    pub fn add(
        &mut self,
        family: &str,
        queue: usize,
        objective: Objective,
        variant: Variant,
        template: &str,
    ) {
        self.queue = if self.records == 0 {
            [queue, queue]
        } else {
            [self.queue[0].min(queue), self.queue[1].max(queue)]
        };
        self.records += 1;
        *self.families.entry(family.to_string()).or_default() += 1;
        if !self.objectives.contains(&objective) {
            self.objectives.push(objective);
        }
        if !self.variants.contains(&variant) {
            self.variants.push(variant);
        }
        if !self.templates.iter().any(|t| t == template) {
            self.templates.push(template.to_string());
        }
    }

    /// Why an instance of this family, queue length, objective, variant and template lies
    /// outside the distribution (empty when it lies inside). Step templates count as the
    /// templates they step through: a model trained on `step-v1` or `step-v2` answers
    /// `compact-v2` prompts (by rolling out).
    pub fn outside(
        &self,
        family: &str,
        queue: usize,
        objective: Objective,
        variant: Variant,
        template: &str,
    ) -> Vec<String> {
        let mut why = Vec::new();
        if self.records == 0 {
            return why;
        }
        if !self.families.contains_key(family) {
            let known: Vec<&str> = self.families.keys().map(String::as_str).collect();
            why.push(format!("family {family} (trained on {})", known.join(", ")));
        }
        if queue < self.queue[0] || queue > self.queue[1] {
            why.push(format!(
                "queue of {queue} jobs (trained on {}..{})",
                self.queue[0], self.queue[1]
            ));
        }
        if !self.objectives.contains(&objective) {
            why.push(format!("objective {}", objective.name()));
        }
        if !self.variants.contains(&variant) {
            why.push(format!("variant {}", variant.name()));
        }
        let stepped = template == "compact-v2"
            && self
                .templates
                .iter()
                .any(|t| t == "step-v1" || t == "step-v2");
        if !stepped && !self.templates.iter().any(|t| t == template) {
            why.push(format!(
                "template {template} (trained on {})",
                self.templates.join(", ")
            ));
        }
        why
    }

    /// [`TrainingDistribution::outside`] without the family: for snapshots that have none of
    /// their own (the events of an online replay).
    pub fn outside_any_family(
        &self,
        queue: usize,
        objective: Objective,
        variant: Variant,
        template: &str,
    ) -> Vec<String> {
        let family = self.families.keys().next().map_or("", String::as_str);
        self.outside(family, queue, objective, variant, template)
    }

    /// The distribution in a few words: `uniform, queues of 6..8 jobs, bsld, serial,
    /// compact-v2 (37963 records)`.
    pub fn describe(&self) -> String {
        let families: Vec<&str> = self.families.keys().map(String::as_str).collect();
        let objectives: Vec<&str> = self.objectives.iter().map(|o| o.name()).collect();
        let variants: Vec<&str> = self.variants.iter().map(|v| v.name()).collect();
        format!(
            "{}, queues of {}..{} jobs, {}, {}, {} ({} records)",
            families.join("+"),
            self.queue[0],
            self.queue[1],
            objectives.join("+"),
            variants.join("+"),
            self.templates.join("+"),
            self.records
        )
    }

    /// Reads `DIR/training_data.json`; `Ok(None)` when the run directory has none (runs made
    /// before it was written).
    pub fn read(dir: &Path) -> Result<Option<TrainingDistribution>, String> {
        let path = dir.join(FILE);
        if !path.exists() {
            return Ok(None);
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Writes `DIR/training_data.json`.
    pub fn write(&self, dir: &Path) -> Result<(), String> {
        let path = dir.join(FILE);
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(&path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// Counts instances outside a distribution and why, for warnings: "12 of 68 records lie
/// outside the training distribution: 12 x queue of 12 jobs (trained on 6..8)".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutsideTally {
    /// Instances counted.
    pub total: usize,
    /// Instances outside.
    pub outside: usize,
    /// Each reason with how often it was given.
    pub reasons: BTreeMap<String, usize>,
}

impl OutsideTally {
    /// Counts one instance with the reasons [`TrainingDistribution::outside`] gave.
    pub fn add(&mut self, why: &[String]) {
        self.total += 1;
        if !why.is_empty() {
            self.outside += 1;
        }
        for w in why {
            // Queue reasons name each length; count them under one key per length range.
            *self.reasons.entry(w.clone()).or_default() += 1;
        }
    }

    /// The warning, or `None` when every instance lies inside.
    pub fn warning(&self, who: &str, trained: &TrainingDistribution) -> Option<String> {
        if self.outside == 0 {
            return None;
        }
        let mut reasons: Vec<(&String, &usize)> = self.reasons.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let shown: Vec<String> = reasons
            .iter()
            .take(4)
            .map(|(w, n)| format!("{n} x {w}"))
            .collect();
        Some(format!(
            "{who}: {} of {} instances lie outside its training distribution ({}): {}; its \
             answers there are extrapolations",
            self.outside,
            self.total,
            trained.describe(),
            shown.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_distribution_says_what_lies_outside() {
        let mut d = TrainingDistribution::default();
        for q in [6, 7, 8] {
            d.add("uniform", q, Objective::Bsld, Variant::Serial, "step-v1");
        }
        assert_eq!(d.queue, [6, 8]);
        assert_eq!(d.records, 3);
        // Step models answer compact-v2 prompts by rolling out step-v1.
        assert!(d
            .outside("uniform", 6, Objective::Bsld, Variant::Serial, "compact-v2")
            .is_empty());
        let why = d.outside("uniform", 5, Objective::Wait, Variant::Strict, "verbose-v1");
        assert_eq!(why.len(), 4, "{why:?}");
        let mut t = OutsideTally::default();
        t.add(&why);
        t.add(&[]);
        let w = t.warning("model:x", &d).unwrap();
        assert!(
            w.contains("1 of 2 instances") && w.contains("queues of 6..8"),
            "{w}"
        );
        assert!(OutsideTally::default().warning("m", &d).is_none());
        // An empty distribution (no record) calls nothing outside.
        assert!(TrainingDistribution::default()
            .outside("hpc", 99, Objective::Bsld, Variant::Serial, "x")
            .is_empty());
    }

    #[test]
    fn it_round_trips_through_its_file() {
        let dir = std::env::temp_dir().join(format!("schedlm-dist-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(TrainingDistribution::read(&dir), Ok(None));
        let mut d = TrainingDistribution::default();
        d.add("hpc", 10, Objective::Bsld, Variant::Serial, "compact-v2");
        d.write(&dir).unwrap();
        assert_eq!(TrainingDistribution::read(&dir), Ok(Some(d)));
        std::fs::remove_dir_all(&dir).ok();
    }
}
