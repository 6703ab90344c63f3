//! Memory while decoding with a pretrained base and LoRA adapters (issue #12): resident memory
//! after 200 generated tokens stays below 1.5 times that of the loaded model. The adapters are
//! variables, so every step's activations used to stay reachable from the key/value cache
//! through the gradient graph (0.5 GB/s of growth). Its own test binary, so that no other test
//! allocates in the process while it measures. Skipped without the SmolLM2 GGUF file.

mod common;

use candle_core::Device;
use schedlm_finetune::decode::Vocab;
use schedlm_finetune::model::{build, Base, ModelSpec};
use schedlm_finetune::LoraConfig;

/// Resident set size of this process in bytes, from /proc/self/status.
fn resident() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[test]
fn lora_decoding_memory_is_bounded_by_the_model() {
    let Some(path) = common::gguf_path() else {
        return;
    };
    if resident().is_none() {
        schedlm_model::skips::skip("procfs", "no /proc/self/status");
        return;
    }
    let spec = ModelSpec::Lora {
        base: Base::Gguf(path),
        lora: LoraConfig {
            rank: 8,
            alpha: 16.0,
            targets: vec!["q".into(), "v".into()],
        },
    };
    let loaded = build(&spec, None, 1, &Device::Cpu).unwrap();
    let tok = &loaded.tokenizer;
    let prompt = tok
        .encode_prompt(
            "You are a helpful assistant.",
            "Write a long story about a cluster scheduler.",
        )
        .unwrap();
    let model_bytes = resident().unwrap();
    let pieces = tok.pieces();
    // No end or stop token: the answer runs to max_new_tokens.
    let vocab = Vocab {
        pieces: &pieces,
        candidates: &[],
        end: u32::MAX,
        stop: &[],
    };
    let out = common::greedy(&loaded.model, &prompt, &vocab, 200);
    assert_eq!(out.len(), 200);
    let after = resident().unwrap();
    eprintln!(
        "resident: {} MiB with the model loaded, {} MiB after 200 tokens",
        model_bytes >> 20,
        after >> 20
    );
    assert!(
        (after as f64) < 1.5 * model_bytes as f64,
        "resident memory grew from {} MiB to {} MiB over 200 tokens",
        model_bytes >> 20,
        after >> 20
    );
}
