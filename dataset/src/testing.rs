//! Small solved datasets for tests, examples and benchmarks: generate snapshots, solve them,
//! make records. One fixture for every crate's tests, so "a few solved records" means the same
//! thing everywhere.
//!
//! ```
//! use schedlm_dataset::testing::{compact_options, solved_records, quick_solve};
//! use schedlm_generator::{Config, Family};
//!
//! let mut config = Config::new(Family::Hpc, 7);
//! (config.queue_min, config.queue_max) = (3, 5);
//! let records = solved_records(&config, 4, &quick_solve(), &compact_options()).unwrap();
//! assert_eq!(records.len(), 4);
//! assert!(records.iter().all(|r| r.family == "hpc"));
//! ```

use std::time::Duration;

use schedlm_generator::{generate, Config};
use schedlm_model::{Instance, Objective, Problem, Variant};
use schedlm_solver::portfolio::{solve, Solution, SolveOptions};

use crate::record::{make_record, AnswerOrder, Record, RecordOptions};
use crate::{SplitSpec, Template};

/// Why a fixture could not be made (a generator, solver or record error, as text).
pub type FixtureError = Box<dyn std::error::Error + Send + Sync>;

/// Records of the label the solver found, the `compact` template, bounded slowdown, the
/// serial dispatcher, no plan line, the default split.
pub fn compact_options() -> RecordOptions {
    RecordOptions {
        answer: AnswerOrder::Solver,
        template: Template::Compact,
        objective: Objective::Bsld,
        variant: Variant::Serial,
        plan: false,
        split: SplitSpec::default(),
    }
}

/// `auto` under a node limit of 50,000 (deterministic, whatever the machine's speed) and a
/// generous time limit.
pub fn quick_solve() -> SolveOptions {
    SolveOptions {
        time_limit: Some(Duration::from_secs(60)),
        node_limit: Some(50_000),
        ..SolveOptions::default()
    }
}

/// Instances `0..count` of `config`, each with its problem and its solution under `solve`.
pub fn solved(
    config: &Config,
    count: usize,
    solve_options: &SolveOptions,
) -> Result<Vec<(Instance, Problem, Solution)>, FixtureError> {
    generate(config, count)?
        .into_iter()
        .map(|instance| {
            let problem = Problem::new(&instance)?;
            let solution = solve(&problem, solve_options)?;
            Ok((instance, problem, solution))
        })
        .collect()
}

/// The records of instances `0..count` of `config` solved under `solve_options` (family: the
/// config's family name, solver: `auto`).
pub fn solved_records(
    config: &Config,
    count: usize,
    solve_options: &SolveOptions,
    options: &RecordOptions,
) -> Result<Vec<Record>, FixtureError> {
    solved(config, count, solve_options)?
        .iter()
        .enumerate()
        .map(|(i, (instance, problem, solution))| {
            let family = config.family.name();
            let record = make_record(
                i as u64, family, instance, problem, solution, "auto", options,
            )?;
            Ok(record)
        })
        .collect()
}
