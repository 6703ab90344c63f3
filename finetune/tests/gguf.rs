//! SmolLM2-135M-Instruct from its GGUF file: the rebuilt tokenizer round-trips prompts, the
//! dequantized model gives finite logits and readable text, LoRA starts equal to the base.
//! Skipped (with a message) when the file is absent: run scripts/fetch-smollm2.sh.

mod common;

use std::path::PathBuf;

use candle_core::{Device, Tensor};
use schedlm_finetune::decode::{generate, prime, Chooser, DecodeOptions, Vocab};
use schedlm_finetune::model::{build, Base, ModelSpec};
use schedlm_finetune::LoraConfig;

fn gguf_path() -> Option<PathBuf> {
    let path = std::env::var_os("SCHEDLM_SMOLLM2_GGUF")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../target/models/SmolLM2-135M-Instruct.Q4_1.gguf")
        });
    if path.is_file() {
        Some(path)
    } else {
        eprintln!(
            "skipped: {} not found; run scripts/fetch-smollm2.sh",
            path.display()
        );
        None
    }
}

#[test]
fn smollm2_tokenizer_logits_and_chat() {
    let Some(path) = gguf_path() else { return };
    let spec = ModelSpec::Lora {
        base: Base::Gguf(path),
        lora: LoraConfig {
            rank: 4,
            alpha: 8.0,
            targets: vec!["q".into(), "v".into()],
        },
    };
    let loaded = build(&spec, None, 1, &Device::Cpu).unwrap();
    let tok = &loaded.tokenizer;
    assert_eq!(tok.vocab_size(), 49_152);
    for r in common::records(3, 5, (3, 6)) {
        let ids = tok.encode(&r.prompt).unwrap();
        assert_eq!(tok.decode(&ids).unwrap(), r.prompt);
        let ids = tok.encode(&r.completion).unwrap();
        assert_eq!(tok.decode(&ids).unwrap(), r.completion);
    }
    let chat = tok
        .encode(&tok.prompt_text("You are helpful.", "Hi"))
        .unwrap();
    assert_eq!(chat[0], 1, "ChatML prompts start with <|im_start|> (id 1)");

    let prompt = tok
        .encode_prompt(
            "You are a helpful assistant.",
            "What is the capital of France?",
        )
        .unwrap();
    let input = Tensor::new(prompt.as_slice(), &Device::Cpu)
        .unwrap()
        .unsqueeze(0)
        .unwrap();
    let logits = loaded.model.forward(&input, None).unwrap();
    let values = logits.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    assert!(values.iter().all(|v| v.is_finite()));

    let pieces = tok.pieces();
    let stop = tok.stop_tokens();
    let vocab = Vocab {
        pieces: &pieces,
        candidates: &[],
        end: tok.end_token(),
        stop: &stop,
    };
    let options = DecodeOptions {
        max_new_tokens: 12,
        ..DecodeOptions::default()
    };
    let primed = prime(&loaded.model, &prompt, &Device::Cpu).unwrap();
    let out = generate(
        &loaded.model,
        &primed,
        &vocab,
        None,
        &mut Chooser::Greedy,
        &options,
        &Device::Cpu,
    )
    .unwrap();
    let text = tok.decode_clean(&out).unwrap();
    eprintln!("greedy continuation: {text:?}");
    let letters = text
        .chars()
        .filter(|c| c.is_ascii_alphabetic() || *c == ' ')
        .count();
    assert!(
        letters * 10 >= text.chars().count() * 8,
        "not readable: {text:?}"
    );
    assert!(text.contains("Paris"), "{text:?}");
}
