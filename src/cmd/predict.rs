//! `schedlm predict`: answer every record of a data set file with a trained model and write
//! one prediction line per record.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use rayon::prelude::*;
use schedlm_dataset::distribution::OutsideTally;
use schedlm_dataset::read_records;
use schedlm_dataset::{parse_answer, prompt_ids, Mode, Record};
use schedlm_finetune::{DecodeOptions, FinetuneError, Predictor};
use serde_json::json;

#[derive(Debug, Args)]
pub struct PredictArgs {
    /// Run directory written by `schedlm finetune`.
    #[arg(long)]
    pub model: PathBuf,
    /// Records to answer (JSON Lines, e.g. DIR/test.jsonl).
    pub file: PathBuf,
    /// Output file (JSON Lines: id, output, best_of, tokens, time_ms (the greedy answer),
    /// best_of_time_ms, samples, decoding, unconstrained) [default: standard output].
    #[arg(visible_alias = "out", short, long)]
    pub output: Option<PathBuf>,
    /// Let the model write anything (no constraint to valid orders), to measure it alone.
    #[arg(long)]
    pub unconstrained: bool,
    /// Skip the unconstrained greedy answer otherwise decoded beside each constrained one
    /// (`unconstrained` in the output, so that `eval` reports the model's own validity).
    #[arg(long, conflicts_with = "unconstrained")]
    pub constrained_only: bool,
    /// Also sample N answers and keep the best valid one under the dispatcher (`best_of`).
    #[arg(long, default_value_t = 1)]
    pub best_of: usize,
    /// Temperature of the best-of samples (the main output is always greedy).
    #[arg(long, default_value_t = 1.0)]
    pub temperature: f32,
    /// Sample among the K most likely tokens only.
    #[arg(long)]
    pub top_k: Option<usize>,
    /// Seed of the best-of samples (the greedy output does not depend on it).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Most tokens generated per answer; an answer cut off there is reported invalid.
    #[arg(long, default_value_t = 512)]
    pub max_new_tokens: usize,
    /// Recompute every token at every step (to measure what the key/value cache saves).
    #[arg(long)]
    pub no_cache: bool,
    /// Answer only the first N records.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Where to decode: `cpu`, or `cuda` / `cuda:N` in a build with the `cuda` feature.
    #[arg(long, default_value = "cpu")]
    pub device: String,

    #[command(flatten)]
    pub progress: crate::io::ProgressArgs,
}

pub fn run(args: &PredictArgs) -> Result<()> {
    let device = schedlm_finetune::device::parse(&args.device)?;
    let predictor = Predictor::load_on(&args.model, &device)
        .with_context(|| format!("loading {}", args.model.display()))?;
    let mut records = read_records(&args.file)?.all()?;
    // A steps build is answered per instance, through the first step of each.
    let before = records.len();
    records.retain(Record::is_first_step);
    super::note_later_steps("predict", &args.file, records.len(), before - records.len());
    records.truncate(args.limit.unwrap_or(usize::MAX));
    let options = DecodeOptions {
        constrained: !args.unconstrained,
        temperature: args.temperature,
        top_k: args.top_k,
        best_of: args.best_of,
        seed: args.seed,
        max_new_tokens: args.max_new_tokens,
        use_cache: !args.no_cache,
        variant: Default::default(),
        check_unconstrained: !args.unconstrained && !args.constrained_only,
    };
    warn_outside(&predictor, &records);
    let mut out = crate::io::create_output(args.output.as_deref())?;
    let written = |e: std::io::Error| {
        let to = args
            .output
            .as_deref()
            .map_or("standard output".into(), |p| p.display().to_string());
        anyhow::Error::new(e).context(format!("cannot write to {to}"))
    };
    let (mut valid, mut too_long, started) = (0usize, 0usize, Instant::now());
    // Records are answered a few at a time on all cores (one shared model; every answer is
    // independent of the others, so the output is the same with any number of threads) and
    // written in input order.
    let chunk = 2 * rayon::current_num_threads();
    for records in records.chunks(chunk) {
        let answers: Vec<Result<Answer>> = records
            .par_iter()
            .map(|r| answer(&predictor, r, &options))
            .collect();
        for answer in answers {
            let answer = answer?;
            valid += usize::from(answer.valid);
            too_long += usize::from(answer.too_long);
            writeln!(out, "{}", answer.line).map_err(written)?;
        }
    }
    out.flush().map_err(written)?;
    let secs = started.elapsed().as_secs_f64();
    args.progress.say(format_args!(
        "predict: {} records, {valid} greedy answers valid, {too_long} prompts too long for the \
         context (empty output), {:.2} decisions/s",
        records.len(),
        records.len() as f64 / secs.max(1e-9)
    ));
    Ok(())
}

/// Warns, on stderr, when records lie outside the model's training distribution.
fn warn_outside(predictor: &Predictor, records: &[Record]) {
    let Some(d) = predictor.trained_on() else {
        return;
    };
    let mut tally = OutsideTally::default();
    for r in records {
        tally.add(&d.outside(
            &r.family,
            r.instance.queue.len(),
            r.objective,
            r.variant,
            &r.template,
        ));
    }
    if let Some(w) = tally.warning("predict: the model", d) {
        eprintln!("{w}");
    }
}

/// How the answers are decoded, in the words `eval` reports.
fn decoding(options: &DecodeOptions) -> String {
    let how = if options.constrained {
        "constrained"
    } else {
        "unconstrained"
    };
    match options.samples() {
        0 => format!("{how} greedy"),
        n => format!(
            "{how} greedy; best-of: {how}, best of {n} samples at temperature {}{}",
            options.temperature,
            options
                .top_k
                .map(|k| format!(", top {k}"))
                .unwrap_or_default()
        ),
    }
}

/// One record's output line and what it counts for.
struct Answer {
    line: serde_json::Value,
    valid: bool,
    too_long: bool,
}

fn answer(predictor: &Predictor, record: &Record, options: &DecodeOptions) -> Result<Answer> {
    let template = record
        .template()
        .with_context(|| format!("record {}: unknown template {}", record.id, record.template))?;
    let options = DecodeOptions {
        variant: record.variant,
        ..options.clone()
    };
    let p = match predictor.predict(&record.instance, record.objective, template, &options) {
        Ok(p) => p,
        Err(e @ FinetuneError::PromptTooLong { .. }) => {
            let line = json!({"id": record.id, "output": "", "best_of": null, "tokens": 0,
                              "time_ms": 0.0, "error": e.to_string()});
            return Ok(Answer {
                line,
                valid: false,
                too_long: true,
            });
        }
        Err(e) => return Err(e).with_context(|| format!("record {}", record.id)),
    };
    let ids = prompt_ids(&record.instance, record.objective, record.variant, template);
    let valid = parse_answer(&p.text, &ids, &record.instance, Mode::Strict).is_ok();
    let mut line = json!({"id": record.id, "output": p.text, "best_of": p.best_of,
                      "tokens": p.tokens, "time_ms": p.greedy_seconds * 1e3,
                      "decoding": decoding(&options)});
    if options.samples() > 0 {
        line["samples"] = json!(options.samples());
        line["best_of_time_ms"] = json!(p.samples_seconds * 1e3);
    }
    if let Some(free) = &p.unconstrained {
        line["unconstrained"] = json!(free);
    }
    Ok(Answer {
        line,
        valid,
        too_long: false,
    })
}
