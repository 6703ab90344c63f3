//! Shared helpers of the finetune tests: small generated and solved data sets.
#![allow(dead_code)]

use schedlm_dataset::testing::{compact_options, quick_solve, solved_records};
use schedlm_dataset::Record;
use schedlm_finetune::data::{examples, Example};
use schedlm_finetune::model::{build, Loaded, ModelSpec};
use schedlm_finetune::{GptConfig, TextTokenizer};
use schedlm_generator::{Config, Family, Load};

/// `count` solved records of HPC snapshots with `jobs` queued jobs (min..=max) on one busy node.
pub fn records(count: usize, seed: u64, jobs: (usize, usize)) -> Vec<Record> {
    let mut config = Config::new(Family::Hpc, seed);
    (config.queue_min, config.queue_max) = jobs;
    config.servers = Some(1);
    config.load = Some(Load::Jobs(1));
    solved_records(&config, count, &quick_solve(), &compact_options()).unwrap()
}

/// Texts a tokenizer is trained on: prompts and answers.
pub fn texts(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .flat_map(|r| [r.prompt.clone(), r.completion.clone()])
        .collect()
}

/// A very small GPT with its tokenizer trained on `records`, 768 tokens of context.
pub fn tiny_model(records: &[Record], seed: u64, width: usize, layers: usize) -> Loaded {
    tiny_model_with_context(records, seed, width, layers, 768)
}

/// [`tiny_model`] with `context` tokens of context, for prompts longer than its training data.
pub fn tiny_model_with_context(
    records: &[Record],
    seed: u64,
    width: usize,
    layers: usize,
    context: usize,
) -> Loaded {
    let tokenizer = TextTokenizer::train_bpe(&texts(records), 1000).unwrap();
    let config = GptConfig {
        vocab_size: tokenizer.vocab_size(),
        context,
        layers,
        width,
        heads: 4,
    };
    build(
        &ModelSpec::Gpt { config },
        Some(tokenizer),
        seed,
        &candle_core::Device::Cpu,
    )
    .unwrap()
}

/// Tokenized records.
pub fn tokenized(records: &[Record], loaded: &Loaded) -> Vec<Example> {
    let (ex, skipped) = examples(records, &loaded.tokenizer, 768).unwrap();
    let lens: Vec<usize> = ex.iter().map(|e| e.tokens.len()).collect();
    assert_eq!(skipped, 0, "kept lengths {lens:?}");
    ex
}

/// The SmolLM2-135M GGUF file (`SCHEDLM_SMOLLM2_GGUF`, else target/models), or `None` with a
/// message when it is absent (run scripts/fetch-smollm2.sh).
pub fn gguf_path() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("SCHEDLM_SMOLLM2_GGUF")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../target/models/SmolLM2-135M-Instruct.Q4_1.gguf")
        });
    if path.is_file() {
        Some(path)
    } else {
        schedlm_model::skips::skip(
            "smollm2",
            &format!("{} not found; run scripts/fetch-smollm2.sh", path.display()),
        );
        None
    }
}

/// The greedy, unconstrained continuation of `prompt` (at most `max_new_tokens` tokens, fewer
/// when the vocabulary's end or a stop token comes first), with the key/value cache.
pub fn greedy(
    model: &schedlm_finetune::model::Model,
    prompt: &[u32],
    vocab: &schedlm_finetune::decode::Vocab,
    max_new_tokens: usize,
) -> Vec<u32> {
    use schedlm_finetune::decode::{generate, prime, Chooser, DecodeOptions};
    let device = candle_core::Device::Cpu;
    let options = DecodeOptions {
        max_new_tokens,
        ..DecodeOptions::default()
    };
    let primed = prime(model, prompt, &device).unwrap();
    generate(
        model,
        &primed,
        vocab,
        None,
        &mut Chooser::Greedy,
        &options,
        &device,
    )
    .unwrap()
}
