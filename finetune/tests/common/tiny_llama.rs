//! A tiny random Llama in Hugging Face layout (`config.json`, `model.safetensors` with HF
//! tensor names, `tokenizer.json`, `tokenizer_config.json`), for tests of the `hf:` path and
//! of the LoRA machinery without a real checkpoint.
#![allow(dead_code)]

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::{VarBuilder, VarMap};
use schedlm_finetune::llama::{Llama, LlamaConfig, LoraConfig, Weights};
use schedlm_finetune::tokenizer::END_TEXT;
use schedlm_finetune::TextTokenizer;

/// Texts the tiny tokenizer is trained on.
pub fn corpus() -> Vec<String> {
    [
        "Order the queue: J1 J2 J3 J4 by bounded slowdown.",
        "J3 J1 J2",
        "J2 J4 J1 J3",
        "The queue has four jobs on one node.",
        "What is the capital of France? Paris.",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

pub fn tokenizer() -> TextTokenizer {
    TextTokenizer::train_bpe(&corpus(), 300).unwrap()
}

/// 2 layers, width 32, 4 query heads over 2 key/value heads (grouped-query attention).
pub fn config(vocab_size: usize, tie_embeddings: bool) -> LlamaConfig {
    LlamaConfig {
        vocab_size,
        hidden: 32,
        intermediate: 48,
        layers: 2,
        heads: 4,
        kv_heads: 2,
        rope_theta: 10_000.0,
        rms_eps: 1e-5,
        context: 64,
        tie_embeddings,
    }
}

/// Random weights in Hugging Face names.
pub fn weights(c: &LlamaConfig) -> Weights {
    let dev = Device::Cpu;
    let rand = |shape: &[usize], std: f64| Tensor::randn(0f32, std as f32, shape, &dev).unwrap();
    let norm = |n: usize| (rand(&[n], 0.1) + 1.0).unwrap();
    let kv = c.hidden / c.heads * c.kv_heads;
    let mut w = Weights::new();
    w.insert(
        "model.embed_tokens.weight".into(),
        rand(&[c.vocab_size, c.hidden], 0.5),
    );
    w.insert("model.norm.weight".into(), norm(c.hidden));
    if !c.tie_embeddings {
        w.insert(
            "lm_head.weight".into(),
            rand(&[c.vocab_size, c.hidden], 0.2),
        );
    }
    for i in 0..c.layers {
        let p = format!("model.layers.{i}");
        let shapes = [
            ("self_attn.q_proj", [c.hidden, c.hidden]),
            ("self_attn.k_proj", [kv, c.hidden]),
            ("self_attn.v_proj", [kv, c.hidden]),
            ("self_attn.o_proj", [c.hidden, c.hidden]),
            ("mlp.gate_proj", [c.intermediate, c.hidden]),
            ("mlp.up_proj", [c.intermediate, c.hidden]),
            ("mlp.down_proj", [c.hidden, c.intermediate]),
        ];
        for (name, shape) in shapes {
            w.insert(format!("{p}.{name}.weight"), rand(&shape, 0.15));
        }
        w.insert(format!("{p}.input_layernorm.weight"), norm(c.hidden));
        w.insert(
            format!("{p}.post_attention_layernorm.weight"),
            norm(c.hidden),
        );
    }
    w
}

/// Writes the model into `dir` in Hugging Face layout.
pub fn write_hf(dir: &Path, c: &LlamaConfig, w: &Weights, tok: &TextTokenizer) {
    std::fs::create_dir_all(dir).unwrap();
    let config = serde_json::json!({
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": c.vocab_size,
        "hidden_size": c.hidden,
        "intermediate_size": c.intermediate,
        "num_hidden_layers": c.layers,
        "num_attention_heads": c.heads,
        "num_key_value_heads": c.kv_heads,
        "rope_theta": c.rope_theta,
        "rms_norm_eps": c.rms_eps,
        "max_position_embeddings": c.context,
        "tie_word_embeddings": c.tie_embeddings,
        "hidden_act": "silu",
        "torch_dtype": "float32",
    });
    std::fs::write(
        dir.join("config.json"),
        serde_json::to_string_pretty(&config).unwrap(),
    )
    .unwrap();
    candle_core::safetensors::save(w, dir.join("model.safetensors")).unwrap();
    tok.inner().save(dir.join("tokenizer.json"), false).unwrap();
    let tok_config = serde_json::json!({ "eos_token": END_TEXT, "bos_token": null });
    std::fs::write(dir.join("tokenizer_config.json"), tok_config.to_string()).unwrap();
}

/// The model built in memory from `w` (adapters, if any, from `vars`).
pub fn llama(c: &LlamaConfig, w: &Weights, lora: Option<&LoraConfig>, vars: &VarMap) -> Llama {
    let vb = VarBuilder::from_varmap(vars, DType::F32, &Device::Cpu);
    Llama::new(c.clone(), w.clone(), lora, vb).unwrap()
}

/// Logits [1, t, vocab] of one sequence, as a flat vector.
pub fn logits(model: &Llama, ids: &[u32]) -> Vec<f32> {
    let input = Tensor::new(ids, &Device::Cpu)
        .unwrap()
        .unsqueeze(0)
        .unwrap();
    let hidden = model.hidden(&input, None).unwrap();
    model
        .logits(&hidden)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap()
}

/// Largest absolute difference of two equally long vectors.
pub fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}
