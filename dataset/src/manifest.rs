//! `DIR/manifest.json`: what a finished build (or merge) holds and the arguments that made it.
//!
//! The manifest is written last and marks a build complete. Its [`BuildArgs`] are every
//! argument that decides the output bytes: a resumed build must repeat them, and `merge`
//! joins only parts built with the same ones. A manifest of another [`FORMAT`] is refused.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use schedlm_generator::Config;
use schedlm_model::{Objective, UnknownFields, Variant};
use schedlm_solver::portfolio::{SolveOptions, Solver};
use serde::{Deserialize, Serialize};

use crate::difficulty::{DifficultySummary, DifficultyTally};
use crate::error::{io_err, BuildError};
use crate::layout::{write_atomic, Head};
use crate::prompt::Template;
use crate::record::{AnswerOrder, RecordFormat, RecordKind, RecordOptions, Targets};
use crate::split::{Split, SplitSpec};

/// Version tag of the on-disk layout; a manifest of another format is refused.
pub const FORMAT: &str = "schedlm-dataset-v1";

/// One part of a sharded build: shard `k` of `n`, 1-based (`--shard K/N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This part's shard number, 1-based: `1 <= k <= n`.
    pub k: u32,
    /// How many shards the build is cut into (1 for an unsharded build).
    pub n: u32,
}

impl Shard {
    /// The whole build (1/1).
    pub const ALL: Shard = Shard { k: 1, n: 1 };

    /// Whether an instance of this fingerprint belongs to this shard.
    pub fn holds(&self, fp: &crate::Fingerprint) -> bool {
        self.n <= 1 || fp.shard(self.n) + 1 == self.k
    }
}

impl Default for Shard {
    fn default() -> Self {
        Shard::ALL
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || format!("shard `{s}`: expected K/N with 1 <= K <= N, e.g. 3/8");
        let (k, n) = s.split_once('/').ok_or_else(err)?;
        let k: u32 = k.trim().parse().map_err(|_| err())?;
        let n: u32 = n.trim().parse().map_err(|_| err())?;
        if k == 0 || k > n {
            return Err(err());
        }
        Ok(Shard { k, n })
    }
}

/// Where the instances come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Instances `0..count` of the generator; item `i` uses `configs[i % configs.len()]`.
    Generate {
        /// One generator configuration per `--family` (shape and seed included), in the order
        /// given.
        configs: Vec<Config>,
        /// How many instances to generate (`--count`), over the whole build, not per shard.
        count: u64,
    },
    /// The non-blank lines of a JSON Lines file of instances; records carry `label` as family.
    File {
        /// The instance file (`--from`), one JSON instance per non-blank line.
        path: PathBuf,
        /// The `family` written into every record (`--label`, by default the file's stem).
        label: String,
        /// What the instance parser does with fields the schema does not know
        /// (`--allow-unknown-fields`: `ignore`); left out of the manifest when they are
        /// rejected, so builds from before the choice read and resume unchanged.
        #[serde(default, skip_serializing_if = "UnknownFields::is_reject")]
        unknown_fields: UnknownFields,
    },
}

impl Source {
    /// The instances of the file at `path`, recorded as family `label` (by default the file's
    /// stem), unknown instance fields treated by `unknown_fields`.
    pub fn file(path: &Path, label: Option<String>, unknown_fields: UnknownFields) -> Source {
        let stem = || {
            path.file_stem()
                .map_or("file".into(), |s| s.to_string_lossy().into_owned())
        };
        Source::File {
            path: path.to_path_buf(),
            label: label.unwrap_or_else(stem),
            unknown_fields,
        }
    }
}

/// Every argument that decides the output bytes. A resumed build must repeat them exactly;
/// they are stored in the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildArgs {
    /// Where the instances come from: the generator (`--family`, `--count`) or a file
    /// (`--from`).
    pub source: Source,
    /// Solver of the labels (`--solver`: `auto`, `bnb`, `milp` or `ls`).
    pub solver: Solver,
    /// Objective the labels minimise and the prompts state (`--objective`: `bsld`, `wait`,
    /// `flow` or `makespan`).
    pub objective: Objective,
    /// Dispatcher of the labels, values and prompts: `serial`, or `strict` with `--strict`.
    pub variant: Variant,
    /// Counted work of one solve (`--work-limit`, `schedlm_solver::work`): the budget that
    /// makes a build the same on every machine. `None`: the clock decides (builds before work
    /// limits, or `--work-limit none`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_limit: Option<u64>,
    /// Wall-clock limit of one solve, in milliseconds (`--time-limit`): with a work limit only
    /// a cap. `None`: no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit_ms: Option<u64>,
    /// Most branch-and-bound nodes per solve (`--node-limit`), a deterministic budget; `None`
    /// for no node limit.
    pub node_limit: Option<u64>,
    /// Seed of the solver's local search.
    pub solver_seed: u64,
    /// Prompt template (`--template`), stored as its versioned name, e.g. `compact-v2`.
    pub template: Template,
    /// Which optimal order is the label (`solver` in manifests written before the choice).
    #[serde(default)]
    pub answer: AnswerOrder,
    /// Whether each completion has the dispatcher's plan line below the order (`--plan`).
    pub plan: bool,
    /// One record per instance (`orders`) or per dispatching decision (`steps`); left out of
    /// the manifest for `orders`, so builds from before the choice read and resume unchanged.
    #[serde(default, skip_serializing_if = "RecordKind::is_orders")]
    pub records: RecordKind,
    /// What step records carry beyond their label (`--targets`): `values` adds every
    /// candidate's value and regret; left out of the manifest for `label`.
    #[serde(default, skip_serializing_if = "Targets::is_label")]
    pub targets: Targets,
    /// Work budget of each candidate's value (`--value-work-limit`, `schedlm_solver::work`
    /// units); present only with `--targets values`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_work_limit: Option<u64>,
    /// Which form of prompt and answer the files carry (older manifests: both).
    #[serde(default, skip_serializing_if = "RecordFormat::is_both")]
    pub format: RecordFormat,
    /// Shares of train, validation and test in percent (`--split`, default `90/5/5`).
    pub split: SplitSpec,
    /// Skip invalid input instances (listed in the manifest) instead of failing.
    pub skip_invalid: bool,
    /// Keep only instances whose headroom (the best rule per instance's value over the
    /// label's, [`crate::difficulty`]) is at least this fraction (`--min-headroom`); the
    /// others are solved, counted in the manifest's `filtered` and left out. Absent: keep all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_headroom: Option<f64>,
}

impl BuildArgs {
    /// Checks that the arguments go together (what `build` checks first); the error names the
    /// options as the command line spells them.
    pub fn check(&self) -> Result<(), BuildError> {
        let bad = |why: String| Err(BuildError::Args(why));
        self.solve_options()
            .check()
            .map_err(|e| BuildError::Args(format!("--solver, --work-limit, --time-limit: {e}")))?;
        let steps = self.records == RecordKind::Steps;
        if steps && !matches!(self.template, Template::CompactV2 | Template::StepV2) {
            return bad(format!(
                "--records steps renders every record with step-v1 (compact-v2's ranking and \
                 units, the default: --template compact-v2) or step-v2 (--template step-v2): \
                 drop --template {}",
                self.template
            ));
        }
        if !steps && self.template.is_step() {
            return bad(format!(
                "--template {} renders one dispatching decision, answered by one job id: use \
                 it through --records steps",
                self.template
            ));
        }
        if self.targets == Targets::Values && !steps {
            return bad(
                "--targets values gives each dispatching decision's candidates their values: \
                 add --records steps"
                    .into(),
            );
        }
        if steps && self.plan {
            return bad("--records steps answers with one job id: drop --plan".into());
        }
        Ok(())
    }

    pub(crate) fn solve_options(&self) -> SolveOptions {
        SolveOptions {
            solver: self.solver,
            objective: self.objective,
            variant: self.variant,
            work_limit: self.work_limit,
            time_limit: self.time_limit_ms.map(Duration::from_millis),
            node_limit: self.node_limit,
            seed: self.solver_seed,
            // Records are solved in parallel, one per thread.
            threads: 1,
        }
    }

    pub(crate) fn record_options(&self) -> RecordOptions {
        RecordOptions {
            answer: self.answer,
            template: self.template,
            objective: self.objective,
            variant: self.variant,
            plan: self.plan,
            split: self.split,
        }
    }
}

/// An input instance that was left out, with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// Source index (line number for `--from`).
    pub index: u64,
    /// Why it yields no record: the line's parse or validation error (or why its bytes are not
    /// text), or that a one-job queue has no dispatching decision (step builds).
    pub reason: String,
}

/// What a finished build (or a merge) contains; `DIR/manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Layout version, [`FORMAT`] (`schedlm-dataset-v1`); [`read_manifest`] refuses any other.
    pub format: String,
    /// The arguments that made the build; a resumed build or a merged part must repeat them.
    pub args: BuildArgs,
    /// The shard built, or `None` for a whole build or a merge of every shard.
    pub shard: Option<Shard>,
    /// Records per split file.
    pub records: BTreeMap<Split, u64>,
    /// Records per family.
    pub families: BTreeMap<String, u64>,
    /// Records whose label is proven optimal (`proven_optimal: true`), over all splits; every
    /// step record counts.
    pub proven_optimal: u64,
    /// Records whose solve the wall clock stopped (`status: time_limit`): their labels depend
    /// on the machine and its load, so the build is not reproducible. Counted like
    /// `proven_optimal`; absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub time_limited: u64,
    /// Exact duplicates (same fingerprint as an earlier item) left out.
    pub duplicates: u64,
    /// Input items left out, in source order: invalid `--from` lines (with `--skip-invalid`)
    /// and, in step builds, instances with a one-job queue.
    pub skipped: Vec<Skipped>,
    /// Instances left out by `--min-headroom` (solved, below the headroom asked for).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub filtered: u64,
    /// How much the labels ask beyond the prompts' ranking, over the instances written
    /// ([`crate::difficulty`]); absent in manifests of builds before it was stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<DifficultySummary>,
}

impl Manifest {
    /// Total records over all splits.
    pub fn total(&self) -> u64 {
        self.records.values().sum()
    }

    /// Instances written: the records, except that step records count once per instance.
    pub fn instances(&self) -> u64 {
        self.difficulty
            .as_ref()
            .map_or_else(|| self.total(), |d| d.all.instances)
    }

    /// Candidate instances the source gave this build (or part): those written, the
    /// duplicates, those left out by the headroom filter, and the skipped ones.
    pub fn candidates(&self) -> u64 {
        self.instances() + self.duplicates + self.filtered + self.skipped.len() as u64
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Counts that become a manifest.
#[derive(Default)]
pub(crate) struct Tally {
    pub records: BTreeMap<Split, u64>,
    pub families: BTreeMap<String, u64>,
    pub proven_optimal: u64,
    pub time_limited: u64,
    pub duplicates: u64,
    pub skipped: Vec<Skipped>,
    pub filtered: u64,
    pub difficulty: DifficultyTally,
}

impl Tally {
    pub(crate) fn add(&mut self, head: &Head) {
        *self.records.entry(head.split).or_default() += 1;
        *self.families.entry(head.family.clone()).or_default() += 1;
        self.proven_optimal += u64::from(head.proven_optimal);
        self.time_limited += u64::from(head.status == "time_limit");
        if let (Some(d), 0) = (&head.difficulty, head.position().1) {
            self.difficulty.add(head.instance.queue.len(), d);
        }
    }

    pub(crate) fn into_manifest(self, args: &BuildArgs, shard: Option<Shard>) -> Manifest {
        let mut records = self.records;
        for split in Split::ALL {
            records.entry(split).or_default();
        }
        Manifest {
            format: FORMAT.to_string(),
            args: args.clone(),
            shard,
            records,
            families: self.families,
            proven_optimal: self.proven_optimal,
            time_limited: self.time_limited,
            duplicates: self.duplicates,
            skipped: self.skipped,
            filtered: self.filtered,
            difficulty: (!self.difficulty.is_empty()).then(|| self.difficulty.summary()),
        }
    }
}

/// Writes `DIR/manifest.json` atomically.
pub(crate) fn write_manifest(dir: &Path, manifest: &Manifest) -> Result<(), BuildError> {
    let text = serde_json::to_string_pretty(manifest).unwrap_or_default();
    write_atomic(&dir.join("manifest.json"), &[text])
}

/// Reads `DIR/manifest.json`.
pub fn read_manifest(dir: &Path) -> Result<Manifest, BuildError> {
    let path = dir.join("manifest.json");
    let text = fs::read_to_string(&path).map_err(io_err(&path))?;
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| BuildError::Manifest {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    if manifest.format != FORMAT {
        return Err(BuildError::Manifest {
            path,
            reason: format!("format `{}`, expected `{FORMAT}`", manifest.format),
        });
    }
    Ok(manifest)
}
