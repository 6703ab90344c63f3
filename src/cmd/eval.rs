//! `schedlm eval`: how far is a scheduler from optimal, and is it better than the rules a site
//! already runs? Snapshot evaluation on dataset records, or online evaluation on a trace.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use schedlm_dataset::Template;
use schedlm_eval::data::read_records;
use schedlm_eval::online::{evaluate_online, OnlineOptions};
use schedlm_eval::openai::ClientOptions;
use schedlm_eval::report::markdown::{headline, policy_rows};
use schedlm_eval::report::online::{
    headline as online_headline, online_summary, write_online_report,
};
use schedlm_eval::report::{snapshot_summary, write_baselines, write_snapshot_report};
use schedlm_eval::snapshot::{evaluate, SnapshotOptions};
use schedlm_eval::spec::parse_list;
use schedlm_eval::text::{Ask, ModelLoader, Reply, TextModel};
use schedlm_eval::EvalError;
use schedlm_finetune::{DecodeOptions, Predictor};

use crate::args::parse_duration;
use crate::cmd::replay::RandomWindows;

/// Evaluate schedulers and write a report (report.md, report.html with SVG plots,
/// summary.json and a per-instance CSV). See docs/eval.md.
///
/// Snapshot evaluation (`--data`): every scheduler orders every record's queue; the report
/// gives per scheduler the mean objective, the gap to the proven optimum (or to the lower
/// bound, marked as such), the share solved optimally, the validity of text answers (invalid
/// ones are scored by FCFS) and the decision time, wins/ties/losses between every pair, and
/// breakdowns by queue length and family. Each text scheduler is also set against the rules:
/// its mean gap next to the best rule per instance's, the best single rule's and FCFS's, its
/// wins/ties/losses against the best rule per instance, and how often its order is the queue
/// order or the best rule's order.
///
/// Online evaluation (`--trace`): replays windows of an SWF trace with each scheduler consulted
/// at every event and reports mean bsld, wait and utilization per scheduler and window.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Dataset records to evaluate on (JSON Lines, e.g. DIR/test.jsonl from `schedlm dataset
    /// build`).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "trace",
        conflicts_with = "trace"
    )]
    pub data: Option<PathBuf>,

    /// SWF trace (plain or gzipped) for online evaluation.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,

    /// Schedulers, comma-separated: rules (fcfs, sjf, saf, ljf, wfp3, unicep, f1, random),
    /// `ls` (local search), `optimal` (the exact portfolio under --time-limit), `model:DIR` (a
    /// schedlm model), `openai:URL#MODEL` (an OpenAI-compatible chat-completions endpoint,
    /// e.g. openai:http://127.0.0.1:8000/v1#qwen) and `predictions:FILE` (JSON Lines
    /// {"id", "output", "best_of"} keyed by record id).
    #[arg(long, value_name = "LIST")]
    pub policies: String,

    /// Output directory of the report (created if missing).
    #[arg(long, value_name = "DIR")]
    pub report: PathBuf,

    /// Time budget of `optimal` per instance (per decision online).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub time_limit: Duration,

    /// Node limit of `optimal`'s branch and bound (makes its result independent of timing).
    #[arg(long)]
    pub node_limit: Option<u64>,

    /// Seed of `random`, local search and --windows.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Candidate evaluations of `ls` per instance.
    #[arg(long, default_value_t = 20_000)]
    pub ls_evaluations: u64,

    /// Requests in flight at once for `openai:` schedulers.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,

    /// Timeout of one request to an `openai:` endpoint.
    #[arg(long, default_value = "120s", value_parser = parse_duration)]
    pub request_timeout: Duration,

    /// Retries of a failed request (no connection, timeout, HTTP 429 or 5xx, malformed
    /// response), with exponential backoff from 0.5 s.
    #[arg(long, default_value_t = 3)]
    pub retries: u32,

    /// Environment variable holding the API key of `openai:` endpoints (sent as a bearer token
    /// when set).
    #[arg(long, default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,

    /// `max_tokens` of each request.
    #[arg(long, default_value_t = 1024)]
    pub max_tokens: u32,

    /// Online: how jobs are started from the ordered queue.
    #[arg(long, value_enum, default_value_t = schedlm_model::sim::StartRule::Easy, requires = "trace")]
    pub start_rule: schedlm_model::sim::StartRule,

    /// Online: N random windows of LEN jobs (NxLEN), starts drawn with --seed; the whole trace
    /// when absent.
    #[arg(long, value_name = "NxLEN", requires = "trace")]
    pub windows: Option<RandomWindows>,

    /// Online: prompt template of text schedulers (the snapshot at each event is rendered with
    /// it). The default is the dataset's default; use the template the model was trained on.
    /// A model trained on step records is rolled out with step-v1 whatever this says.
    #[arg(long, default_value = "compact-v2", requires = "trace")]
    pub template: Template,

    /// Online: show text schedulers at most K waiting jobs. With more waiting, the scheduler
    /// orders the first K jobs of the ranking of the snapshot's best priority rule (the rule
    /// with the lowest bounded slowdown on it, as in compact-v2) and the others follow in that
    /// ranking. Use the queue lengths the model was trained on; without it the whole queue is
    /// shown, and prompts longer than a model's context fall back to FCFS (counted).
    #[arg(long, value_name = "K", requires = "trace", value_parser = clap::value_parser!(u64).range(1..))]
    pub text_queue: Option<u64>,

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
}

/// A schedlm model (`model:DIR`) as a text scheduler: greedy answer and best-of-N.
/// Answers are independent of each other, so concurrent asks decode at the same time on one
/// shared model (weights are read-only while decoding).
struct FinetuneModel {
    predictor: Predictor,
    decode: DecodeOptions,
}

impl TextModel for FinetuneModel {
    fn max_concurrency(&self) -> Option<usize> {
        Some(rayon::current_num_threads())
    }

    fn answer(&self, ask: &Ask<'_>) -> Reply {
        let started = Instant::now();
        let decode = DecodeOptions {
            variant: ask.variant,
            ..self.decode.clone()
        };
        let result = self
            .predictor
            .predict(ask.instance, ask.objective, ask.template, &decode);
        let seconds = Some(started.elapsed().as_secs_f64());
        match result {
            Ok(p) => Reply {
                output: Some(p.text),
                best_of: p.best_of,
                sampled: self.decode.best_of >= 2,
                seconds,
                error: None,
            },
            Err(e) => Reply {
                error: Some(format!("model error: {e:#}")),
                seconds,
                ..Reply::default()
            },
        }
    }
}

impl EvalArgs {
    /// Loads `model:DIR` with schedlm_finetune's predictor and these decoding options.
    fn models(&self) -> ModelLoader {
        let decode = DecodeOptions {
            constrained: !self.unconstrained,
            best_of: self.best_of,
            seed: self.seed,
            max_new_tokens: self.max_new_tokens,
            ..DecodeOptions::default()
        };
        ModelLoader(Arc::new(move |dir: &Path| {
            let predictor = Predictor::load(dir).map_err(|e| EvalError::Policy {
                spec: format!("model:{}", dir.display()),
                message: format!("cannot load the model: {e:#}"),
            })?;
            Ok(Box::new(FinetuneModel {
                predictor,
                decode: decode.clone(),
            }) as Box<dyn TextModel>)
        }))
    }

    fn client(&self) -> ClientOptions {
        ClientOptions {
            timeout: self.request_timeout,
            retries: self.retries,
            api_key_env: self.api_key_env.clone(),
            max_tokens: self.max_tokens,
            ..ClientOptions::default()
        }
    }

    fn snapshot_options(&self) -> SnapshotOptions {
        SnapshotOptions {
            time_limit: self.time_limit,
            node_limit: self.node_limit,
            seed: self.seed,
            ls_evaluations: self.ls_evaluations,
            concurrency: self.concurrency.max(1),
            client: self.client(),
            models: self.models(),
        }
    }
}

pub fn run(args: &EvalArgs) -> Result<()> {
    let specs = parse_list(&args.policies)?;
    match (&args.data, &args.trace) {
        (Some(data), _) => snapshot(args, data, &specs),
        (None, Some(trace)) => online(args, trace, &specs),
        (None, None) => bail!("give --data FILE (snapshot evaluation) or --trace FILE (online)"),
    }
}

fn snapshot(args: &EvalArgs, path: &Path, specs: &[schedlm_eval::PolicySpec]) -> Result<()> {
    let data = read_records(path)?;
    super::note_later_steps("eval", path, data.records.len(), data.later_steps);
    let options = args.snapshot_options();
    let eval = evaluate(&data, specs, &options)?;
    let summary = snapshot_summary(path, &data, &eval, &options);
    let mut written = write_snapshot_report(&args.report, &summary, &eval.rows)
        .with_context(|| format!("cannot write the report to {}", args.report.display()))?;
    written.push(
        write_baselines(&args.report, &eval.rules)
            .with_context(|| format!("cannot write the report to {}", args.report.display()))?,
    );
    for line in headline(&summary) {
        println!("{}", line.replace("**", ""));
    }
    for note in &summary.notes {
        println!("Note: {note}");
    }
    print_table(policy_rows(&summary));
    for path in written {
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn online(args: &EvalArgs, trace: &Path, specs: &[schedlm_eval::PolicySpec]) -> Result<()> {
    let options = OnlineOptions {
        start_rule: args.start_rule,
        windows: args.windows.map(|w| (w.count, w.len)),
        seed: args.seed,
        time_limit: args.time_limit,
        node_limit: args.node_limit,
        ls_evaluations: args.ls_evaluations,
        template: args.template,
        text_queue: args.text_queue.map(|k| k as usize),
        client: args.client(),
        models: args.models(),
    };
    let eval = evaluate_online(trace, specs, &options)?;
    let summary = online_summary(&eval, args.start_rule.name(), args.seed);
    let written = write_online_report(&args.report, &summary, &eval)
        .with_context(|| format!("cannot write the report to {}", args.report.display()))?;
    for line in online_headline(&summary) {
        println!("{}", line.replace("**", ""));
    }
    for path in written {
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// Prints a table with aligned columns.
fn print_table((header, rows): (Vec<String>, Vec<Vec<String>>)) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
    };
    println!("{}", line(&header));
    for row in &rows {
        println!("{}", line(row));
    }
}
