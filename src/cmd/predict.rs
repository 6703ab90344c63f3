//! `schedlm predict`: answer every record of a data set file with a trained model and write
//! one prediction line per record.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use rayon::prelude::*;
use schedlm_dataset::{read_records, Record};
use schedlm_finetune::{DecodeOptions, Predictor};

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
    if let Some(w) = predictor.outside_warning(&records, "predict: the model") {
        eprintln!("{w}");
    }
    let mut out = crate::io::create_output(args.output.as_deref())?;
    let to = args
        .output
        .as_deref()
        .map_or("standard output".into(), |p| p.display().to_string());
    let written =
        |e: std::io::Error| anyhow::Error::new(e).context(format!("cannot write to {to}"));
    let (mut valid, mut too_long, started) = (0usize, 0usize, Instant::now());
    // Records are answered a few at a time on all cores (one shared model; every answer is
    // independent of the others, so the output is the same with any number of threads) and
    // written in input order.
    let chunk = 2 * rayon::current_num_threads();
    for records in records.chunks(chunk) {
        let answers: Vec<_> = records
            .par_iter()
            .map(|r| {
                predictor
                    .answer_record(r, &options)
                    .with_context(|| format!("record {}", r.id))
            })
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
