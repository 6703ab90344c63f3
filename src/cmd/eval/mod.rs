//! `schedlm eval`: how far is a policy from optimal, and is it better than the rules a site
//! already runs? Snapshot evaluation on dataset records, or online evaluation on a trace.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use schedlm_eval::answers::AnswerLog;
use schedlm_eval::data::load_dataset;
use schedlm_eval::online::{evaluate_online, LookaheadOptions, OnlineOptions};
use schedlm_eval::policy::parse_list;
use schedlm_eval::report::markdown::terminal_text;
use schedlm_eval::report::online::{
    headline as online_headline, online_summary, write_online_report,
};
use schedlm_eval::report::{snapshot_summary, write_snapshot_report};
use schedlm_eval::snapshot::{evaluate, SnapshotOptions};
use schedlm_eval::text_policy::ModelLoader;
use schedlm_eval::verdict::VerdictRule;
use schedlm_finetune::DecodeOptions;

mod args;
pub use args::EvalArgs;

impl EvalArgs {
    /// Loads `model:DIR` with schedlm_finetune's predictor and these decoding options;
    /// `check` decodes the unconstrained greedy answer beside each constrained one (snapshot
    /// evaluation; online replay uses only the answers that schedule).
    fn models(&self, check: bool) -> ModelLoader {
        let decode = DecodeOptions {
            constrained: !self.unconstrained,
            best_of: self.best_of,
            seed: self.seed,
            max_new_tokens: self.max_new_tokens,
            temperature: self.temperature,
            check_unconstrained: check && !self.unconstrained && !self.constrained_only,
            ..DecodeOptions::default()
        };
        schedlm_eval::model_policy::loader(decode)
    }

    /// The options of a snapshot evaluation; `asks` says whether some policy answers in
    /// text here (a model or an endpoint), whose answers then go to answers.jsonl.
    fn snapshot_options(&self, asks: bool) -> Result<SnapshotOptions> {
        let log = if asks {
            let log = AnswerLog::open(&self.report, self.resume)
                .with_context(|| format!("cannot write the report to {}", self.report.display()))?;
            if log.kept_count() > 0 {
                self.progress_args.say(format_args!(
                    "eval: resuming with {} answers from {}",
                    log.kept_count(),
                    log.path().display()
                ));
            }
            Some(Arc::new(log))
        } else {
            None
        };
        Ok(SnapshotOptions {
            time_limit: self.time_limit,
            work_limit: self.work_limit,
            node_limit: self.node_limit,
            seed: self.seed,
            ls_evaluations: self.ls_evaluations,
            concurrency: self.concurrency.max(1),
            client: self.client.clone(),
            models: self.models(true),
            answers: log,
            progress: self.progress_args.shown(),
            verdict: VerdictRule {
                margin: self.margin,
                seed: self.seed,
                ..VerdictRule::default()
            },
        })
    }
}

pub fn run(args: &EvalArgs) -> Result<()> {
    let specs = parse_list(&args.policies)?;
    match (&args.data, &args.trace) {
        (Some(_), Some(_)) => {
            bail!("give --data FILE (snapshot evaluation) or --trace FILE (online), not both")
        }
        (Some(data), None) => snapshot(args, data, &specs),
        (None, Some(trace)) => online(args, trace, &specs),
        (None, None) => bail!("give --data FILE (snapshot evaluation) or --trace FILE (online)"),
    }
}

fn snapshot(args: &EvalArgs, path: &Path, specs: &[schedlm_eval::EvalPolicy]) -> Result<()> {
    let mut data = load_dataset(path)?;
    super::note_later_steps("eval", path, data.records.len(), data.later_steps);
    if let Some(n) = args.limit {
        let all = data.records.len();
        if data.keep_first(n)? {
            args.progress_args.say(format_args!(
                "eval: the first {n} of {all} records (--limit)"
            ));
        }
    }
    let options = args.snapshot_options(specs.iter().any(|s| s.answers_in_text()))?;
    let eval = evaluate(&data, specs, &options)?;
    let summary = snapshot_summary(path, &data, &eval, &options);
    let mut written = write_snapshot_report(&args.report, &summary, &eval)
        .with_context(|| format!("cannot write the report to {}", args.report.display()))?;
    // What went wrong with answers is a warning (stderr); other remarks go with the results.
    outln!("{}", terminal_text(&summary, &eval.notes))?;
    for warning in &eval.warnings {
        eprintln!("eval: warning: {warning}");
    }
    if let Some(log) = &options.answers {
        written.push(log.path().to_path_buf());
    }
    for path in written {
        args.progress_args
            .say(format_args!("wrote {}", path.display()));
    }
    let dead = summary.dead_policies();
    if !dead.is_empty() && !args.keep_going {
        bail!(
            "every answer of {} failed (reasons above and in the report); rerun with --resume \
             to ask again, or pass --keep-going to accept the report as it is",
            dead.join(", ")
        );
    }
    Ok(())
}

fn online(args: &EvalArgs, trace: &Path, specs: &[schedlm_eval::EvalPolicy]) -> Result<()> {
    let options = OnlineOptions {
        start_rule: args.replay.start_rule,
        trace: args.replay.options(),
        windows: args.replay.windows(),
        seed: args.seed,
        time_limit: args.time_limit,
        work_limit: args.work_limit,
        node_limit: args.node_limit,
        ls_evaluations: args.ls_evaluations,
        template: args.template,
        text_queue: args.text_queue.map(|k| k as usize),
        client: args.client.clone(),
        models: args.models(false),
        lookahead: LookaheadOptions {
            horizon: args.horizon.as_secs() as i64,
            samples: args.rollout_samples as usize,
            base: args.base_rule,
        },
    };
    let eval = evaluate_online(trace, specs, &options)?;
    let summary = online_summary(&eval);
    let written = write_online_report(&args.report, &summary, &eval)
        .with_context(|| format!("cannot write the report to {}", args.report.display()))?;
    for line in online_headline(&summary) {
        outln!("{}", line.replace("**", ""))?;
    }
    for p in summary.policies.iter().filter(|p| p.outside_training > 0) {
        eprintln!(
            "eval: warning: {}: {} of {} decisions asked it about queues outside its training \
             distribution; its answers there are extrapolations",
            p.policy, p.outside_training, p.decisions
        );
    }
    for path in written {
        args.progress_args
            .say(format_args!("wrote {}", path.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    fn parse(args: &str) -> Result<crate::cmd::Cli, clap::Error> {
        crate::cmd::Cli::try_parse_from(args.split_whitespace())
    }

    #[test]
    fn online_options_need_a_trace() {
        for extra in [
            "--windows 2x3",
            "--window 0:3",
            "--estimate last2",
            "--text-queue 3",
            "--template compact",
            "--start-rule strict",
            "--cluster nodes:2:4",
            "--skip-bad-lines",
        ] {
            let e = parse(&format!(
                "schedlm eval --data d.jsonl --policies fcfs -o out {extra}"
            ));
            assert!(e.is_err(), "{extra} accepted without --trace");
        }
        assert!(parse("schedlm eval --trace t.swf --policies fcfs -o out --windows 2x3").is_ok());
        assert!(parse("schedlm eval --policies fcfs -o out").is_err());
    }
}
