//! The flags of `schedlm eval`: what `--help` prints.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use schedlm_dataset::Template;
use schedlm_eval::openai::ClientOptions;

use crate::args::{parse_duration, TraceReplayArgs};

/// Evaluate policies and write a report (report.md, report.html with SVG plots,
/// summary.json and a per-instance CSV). See docs/eval.md.
///
/// Snapshot evaluation (`--data`): every policy orders every record's queue; the report
/// gives per policy the mean objective, the gap to the proven optimum (or to the lower
/// bound, marked as such), the share solved optimally, the validity of text answers (invalid
/// ones are scored by FCFS) and the decision time, wins/ties/losses between every pair, and
/// breakdowns by queue length and family. Each text policy is also set against the rules:
/// its mean gap next to the best rule per instance's, the best single rule's and FCFS's, its
/// wins/ties/losses against the best rule per instance, and how often its order is the queue
/// order or the best rule's order.
///
/// Online evaluation (`--trace`): replays windows of an SWF trace with each policy consulted
/// at every event and reports mean bsld, wait and utilization per policy and window.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Dataset records to evaluate on (JSON Lines, e.g. DIR/test.jsonl from `schedlm dataset
    /// build`).
    // Not `conflicts_with = "trace"`: a conflict makes clap skip the `requires = "trace"` of
    // the online options (clap-rs/clap#4520); `run` refuses both together instead.
    #[arg(long, value_name = "FILE", required_unless_present = "trace")]
    pub data: Option<PathBuf>,

    /// SWF trace (plain or gzipped) for online evaluation.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,

    /// Policies, comma-separated: rules (fcfs, sjf, saf, ljf, wfp3, unicep, f1, random),
    /// `ect` (earliest completion first), `ls` (local search), `optimal` (the exact portfolio
    /// under --time-limit), `model:DIR` (a schedlm model), `openai:URL#MODEL` (an
    /// OpenAI-compatible chat-completions endpoint, e.g. openai:http://127.0.0.1:8000/v1#qwen)
    /// and `predictions:FILE` (JSON Lines {"id", "output", "best_of"} keyed by record id).
    /// Online only: `lookahead` (at every event, each rule's order tried on the true future:
    /// true run times and the arrivals within --horizon; a clairvoyant reference, not a
    /// scheduler) and `rollout` (the same choice on --rollout-samples futures drawn from the
    /// run times of jobs that ended before now; deployable). See docs/eval.md.
    #[arg(long, value_name = "LIST")]
    pub policies: String,

    /// Output directory of the report (created if missing); `--report` is the old spelling.
    #[arg(
        short = 'o',
        long = "out",
        visible_aliases = ["report", "output"],
        value_name = "DIR"
    )]
    pub report: PathBuf,

    /// Time budget of `optimal` per instance (per decision online); not used with
    /// --work-limit.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub time_limit: Duration,

    /// Counted work of `optimal` per instance (per decision online), e.g. 12M (units of
    /// `schedlm_solver::work`): its answers are then the same on every machine and load, and
    /// --time-limit does not apply to it.
    #[arg(long, value_parser = crate::args::parse_work)]
    pub work_limit: Option<u64>,

    /// Node limit of `optimal`'s branch and bound (makes its result independent of timing).
    #[arg(long)]
    pub node_limit: Option<u64>,

    /// Seed of `random`, local search and --windows.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Candidate evaluations of `ls` per instance.
    #[arg(long, default_value_t = 20_000)]
    pub ls_evaluations: u64,

    /// Requests in flight at once for `openai:` policies. The default suits a local server
    /// that answers one request at a time (llama.cpp, a single GPU); more only queue up there
    /// and run into the timeout. Hosted endpoints and batching servers (vLLM) take more: e.g.
    /// `--concurrency 16 --request-timeout 60s`.
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,

    /// How `openai:` endpoints are asked.
    #[command(flatten)]
    pub client: ClientOptions,

    /// Snapshot evaluation: evaluate only the first N records of --data.
    #[arg(long, value_name = "N", requires = "data")]
    pub limit: Option<usize>,

    /// Snapshot evaluation: keep the answers already in REPORT/answers.jsonl (every text
    /// answer is written there as it arrives) and ask only for the missing and the failed
    /// ones. Without it, answers.jsonl starts anew.
    #[arg(long, requires = "data")]
    pub resume: bool,

    /// Exit 0 even when every answer of a text policy failed (no answer from the endpoint
    /// or model). The report marks such a policy either way.
    #[arg(long)]
    pub keep_going: bool,

    #[command(flatten)]
    pub progress_args: crate::io::ProgressArgs,

    /// Online: how the trace is replayed (--start-rule, --window, --windows, --cluster,
    /// --estimate, --skip-bad-lines; the same options as `schedlm replay`).
    #[command(flatten)]
    pub replay: TraceReplayArgs,

    /// Online: prompt template of text policies (the snapshot at each event is rendered with
    /// it). The default is the dataset's default; use the template the model was trained on.
    /// A model trained on step records is rolled out with step-v1 whatever this says.
    #[arg(long, default_value = "compact-v2", requires = "trace")]
    pub template: Template,

    /// Online: show text policies at most K waiting jobs. With more waiting, the policy
    /// orders the first K jobs of the ranking of the snapshot's best priority rule (the rule
    /// with the lowest bounded slowdown on it, as in compact-v2) and the others follow in that
    /// ranking. Use the queue lengths the model was trained on; without it the whole queue is
    /// shown, and prompts longer than a model's context fall back to FCFS (counted).
    #[arg(long, value_name = "K", requires = "trace", value_parser = clap::value_parser!(u64).range(1..))]
    pub text_queue: Option<u64>,

    /// Online, `lookahead`: jobs that arrive within this long after an event join its
    /// simulated future.
    #[arg(long, default_value = "1h", value_parser = parse_duration, requires = "trace")]
    pub horizon: Duration,

    /// Online, `rollout`: futures drawn per event (each candidate is scored on the same ones).
    #[arg(long, default_value_t = 32, value_name = "N", requires = "trace",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub rollout_samples: u64,

    /// Online, `lookahead` and `rollout`: the rule that decides every later event of a
    /// simulated future (the candidates decide the event itself).
    #[arg(long, default_value = "saf", requires = "trace")]
    pub base_rule: schedlm_solver::rules::Rule,

    /// `model:DIR`: also sample N answers and keep the best valid one (reported apart as
    /// `model:DIR (best-of)`); 1 = greedy only.
    #[arg(long, default_value_t = 1)]
    pub best_of: usize,

    /// `model:DIR`: let the model write anything (no constraint to valid orders), so validity
    /// measures the model alone.
    #[arg(long)]
    pub unconstrained: bool,

    /// `model:DIR`: most tokens generated per answer.
    #[arg(long, default_value_t = 512)]
    pub max_new_tokens: usize,

    /// `model:DIR`: skip the unconstrained greedy answer that is otherwise decoded beside each
    /// constrained one (to report how many answers the model alone gets valid); halves the
    /// decoding time.
    #[arg(long, conflicts_with = "unconstrained")]
    pub constrained_only: bool,

    /// `model:DIR`: temperature of the best-of samples (the greedy answer does not depend on
    /// it).
    #[arg(long, default_value_t = 1.0)]
    pub temperature: f32,

    /// The practical margin of every verdict, in percentage points of mean gap, e.g. 0.1%:
    /// "better than" and "worse than" need the paired bootstrap interval to exclude 0 and the
    /// mean gap difference to be at least this large; otherwise "level with".
    #[arg(long, value_name = "POINTS", default_value = "0.1%", value_parser = crate::args::parse_share)]
    pub margin: f64,
}
