//! Argument groups and value parsers shared by several commands, each defined once with the
//! long help that `schedlm <command> --help` prints: the dispatcher ([`DispatcherArgs`]), the
//! shape of generated snapshots
//! ([`ShapeArgs`], `generate` and `dataset build`), how a trace is replayed
//! ([`TraceReplayArgs`], `replay` and `eval --trace`), queue ranges and durations. A command's
//! own arguments stand beside it in `cmd/`.

use clap::Args;

use schedlm_generator::{Config, Family};
use schedlm_model::Variant;

/// Which dispatcher turns an order into a schedule (SPEC section 3), shared by `schedule`,
/// `solve` and `dataset build`.
#[derive(Debug, Clone, Copy, Args)]
pub struct DispatcherArgs {
    /// Use the `strict` dispatcher (no overtaking: a job never starts before the job placed
    /// just before it) instead of the serial one (backfilling allowed).
    #[arg(long)]
    pub strict: bool,
}

impl DispatcherArgs {
    /// The dispatcher variant asked for.
    pub fn variant(self) -> Variant {
        if self.strict {
            Variant::Strict
        } else {
            Variant::Serial
        }
    }
}

pub use schedlm_eval::replay::TraceReplayArgs;

/// The shape of generated snapshots, shared by `generate` and `dataset build`.
#[derive(Debug, Clone, Args)]
pub struct ShapeArgs {
    /// Queue length of each snapshot: MIN..MAX, inclusive, drawn uniformly; or one length
    /// [default: 8..12].
    #[arg(long)]
    pub queue: Option<QueueRange>,

    /// The cluster and the settings that give headroom.
    #[command(flatten)]
    pub cluster: schedlm_generator::Shape,

    /// Seed of every random choice: the same seed gives the same bytes, whatever the number of
    /// threads.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl ShapeArgs {
    /// The queue range asked for, or 8..12.
    pub fn queue(&self) -> QueueRange {
        self.queue.unwrap_or(QueueRange { min: 8, max: 12 })
    }

    /// A generator configuration of `family` with these settings (the family's defaults for
    /// the others).
    pub fn config(&self, family: Family) -> Config {
        let queue = self.queue();
        Config::shaped(family, queue.min, queue.max, self.seed, &self.cluster)
    }
}

pub use schedlm_model::units::{parse_duration, parse_seconds, parse_share, QueueRange};
pub use schedlm_solver::work::{parse_work, parse_work_limit, WorkLimit};
