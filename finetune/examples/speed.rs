//! Speed of the from-scratch GPT on this machine: training tokens/s of `gpt-tiny` (4 layers,
//! width 128, 4 heads) on generated records, and constrained greedy decisions/s with and
//! without the key/value cache. Run: `cargo run --release -p schedlm-finetune --example speed`.

use std::time::{Duration, Instant};

use candle_core::Device;
use schedlm_dataset::{make_record, AnswerOrder, Record, RecordOptions, SplitSpec, Template};
use schedlm_finetune::data::examples;
use schedlm_finetune::model::{build, ModelSpec};
use schedlm_finetune::{
    DecodeOptions, FinetuneError, GptConfig, Predictor, TextTokenizer, TrainOptions, Trainer,
};
use schedlm_generator::{generate, Config, Family};
use schedlm_model::{Objective, Problem, Variant};
use schedlm_solver::portfolio::{solve, SolveOptions};

fn records(count: usize) -> Result<Vec<Record>, Box<dyn std::error::Error>> {
    let options = RecordOptions {
        answer: AnswerOrder::Solver,
        template: Template::Compact,
        objective: Objective::Bsld,
        variant: Variant::Serial,
        plan: false,
        split: SplitSpec::default(),
    };
    let solve_options = SolveOptions {
        time_limit: Duration::from_millis(100),
        ..SolveOptions::default()
    };
    let mut out = Vec::new();
    for (i, instance) in generate(&Config::new(Family::Hpc, 1), count)?
        .iter()
        .enumerate()
    {
        let problem = Problem::new(instance)?;
        let solution = solve(&problem, &solve_options)?;
        out.push(make_record(
            i as u64, "hpc", instance, &problem, &solution, "auto", &options,
        )?);
    }
    Ok(out)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let device = Device::Cpu;
    let records = records(64)?;
    let texts: Vec<String> = records
        .iter()
        .flat_map(|r| [r.prompt.clone(), r.completion.clone()])
        .collect();
    let tokenizer = TextTokenizer::train_bpe(&texts, 1024)?;
    let config = GptConfig::tiny(tokenizer.vocab_size());
    let loaded = build(&ModelSpec::Gpt { config }, Some(tokenizer), 1, &device)?;
    let (train, _) = examples(&records, &loaded.tokenizer, config.context)?;
    let options = TrainOptions {
        epochs: 1,
        batch: 8,
        ..TrainOptions::default()
    };
    let mut trainer = Trainer::new(loaded, options, &device)?;
    trainer.fit(&train, &[], None)?;
    let log = &trainer.state.history[0];
    println!(
        "train gpt-tiny: {} steps of 8 records (mean {} tokens): {:.0} tokens/s",
        log.steps,
        train.iter().map(|e| e.tokens.len()).sum::<usize>() / train.len(),
        log.tokens_per_s
    );
    let mut predictor = Predictor::from_loaded(trainer.loaded, &device);
    for use_cache in [true, false] {
        let options = DecodeOptions {
            use_cache,
            ..DecodeOptions::default()
        };
        // The first 8 records whose prompt leaves room for an answer in the context.
        let started = Instant::now();
        let (mut n, mut skipped) = (0, 0);
        for r in &records {
            if n == 8 {
                break;
            }
            match predictor.predict(&r.instance, r.objective, Template::Compact, &options) {
                Ok(_) => n += 1,
                Err(FinetuneError::PromptTooLong { .. }) => skipped += 1,
                Err(e) => return Err(e.into()),
            }
        }
        let rate = n as f64 / started.elapsed().as_secs_f64();
        println!(
            "decode (constrained greedy, kv cache {use_cache}): {rate:.2} decisions/s \
             ({n} records, {skipped} with too long prompts skipped)"
        );
    }
    Ok(())
}
