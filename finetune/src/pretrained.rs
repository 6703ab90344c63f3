//! Pretrained Llama-architecture models, offline: a GGUF file (weights dequantized to f32, the
//! tokenizer rebuilt from its metadata) or a Hugging Face directory (`config.json`,
//! `*.safetensors`, `tokenizer.json`), found directly or in the hf-hub cache by model id.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::{DType, Device, Tensor};
use serde_json::{json, Value as Json};
use tokenizers::Tokenizer;

use crate::error::{FinetuneError, Result};
use crate::llama::{LlamaConfig, Weights};
use crate::tokenizer::{TextTokenizer, TokenizerMeta};

/// A loaded base model: shape, weights and tokenizer.
pub struct Pretrained {
    /// Shape read from the GGUF metadata or `config.json`.
    pub config: LlamaConfig,
    /// Base weights in f32 by Hugging Face name (GGUF tensors renamed, their query and key rows put
    /// back in Hugging Face order).
    pub weights: Weights,
    /// The model's own tokenizer: rebuilt from the GGUF metadata, or `tokenizer.json` with
    /// `tokenizer_config.json`.
    pub tokenizer: TextTokenizer,
}

fn gguf_err(e: impl std::fmt::Display) -> FinetuneError {
    FinetuneError::Gguf(e.to_string())
}

fn meta<'a>(content: &'a Content, key: &str) -> Result<&'a Value> {
    content
        .metadata
        .get(key)
        .ok_or_else(|| gguf_err(format!("no metadata key `{key}`")))
}

fn meta_usize(content: &Content, key: &str) -> Result<usize> {
    Ok(meta(content, key)?.to_u32().map_err(gguf_err)? as usize)
}

fn meta_f64(content: &Content, key: &str, default: f64) -> f64 {
    content
        .metadata
        .get(key)
        .and_then(|v| v.to_f32().ok())
        .map_or(default, f64::from)
}

/// Reads a GGUF file of architecture `llama`.
pub fn load_gguf(path: &Path, device: &Device) -> Result<Pretrained> {
    let mut file = File::open(path).map_err(|e| FinetuneError::io(path, e))?;
    let content =
        Content::read(&mut file).map_err(|e| gguf_err(format!("{}: {e}", path.display())))?;
    let arch = meta(&content, "general.architecture")?
        .to_string()
        .map_err(gguf_err)?;
    if arch != "llama" {
        return Err(gguf_err(format!(
            "architecture `{arch}` is not supported (only llama)"
        )));
    }
    let tokenizer = gguf_tokenizer(&content)?;
    let config = gguf_config(&content, tokenizer.vocab_size())?;
    let weights = gguf_weights(&content, &mut file, &config, device)?;
    Ok(Pretrained {
        config,
        weights,
        tokenizer,
    })
}

fn gguf_config(content: &Content, vocab_size: usize) -> Result<LlamaConfig> {
    let has_output = content.tensor_infos.contains_key("output.weight");
    Ok(LlamaConfig {
        vocab_size,
        hidden: meta_usize(content, "llama.embedding_length")?,
        intermediate: meta_usize(content, "llama.feed_forward_length")?,
        layers: meta_usize(content, "llama.block_count")?,
        heads: meta_usize(content, "llama.attention.head_count")?,
        kv_heads: meta_usize(content, "llama.attention.head_count_kv")?,
        rope_theta: meta_f64(content, "llama.rope.freq_base", 10_000.0),
        rms_eps: meta_f64(content, "llama.attention.layer_norm_rms_epsilon", 1e-5),
        context: meta_usize(content, "llama.context_length")?.min(8192),
        tie_embeddings: !has_output,
    })
}

/// Hugging Face name of a GGUF tensor name.
fn hf_name(gguf: &str) -> Option<String> {
    let fixed = match gguf {
        "token_embd.weight" => Some("model.embed_tokens.weight"),
        "output_norm.weight" => Some("model.norm.weight"),
        "output.weight" => Some("lm_head.weight"),
        _ => None,
    };
    if let Some(f) = fixed {
        return Some(f.to_string());
    }
    let rest = gguf.strip_prefix("blk.")?;
    let (layer, name) = rest.split_once('.')?;
    let hf = match name {
        "attn_norm.weight" => "input_layernorm.weight",
        "attn_q.weight" => "self_attn.q_proj.weight",
        "attn_k.weight" => "self_attn.k_proj.weight",
        "attn_v.weight" => "self_attn.v_proj.weight",
        "attn_output.weight" => "self_attn.o_proj.weight",
        "ffn_norm.weight" => "post_attention_layernorm.weight",
        "ffn_gate.weight" => "mlp.gate_proj.weight",
        "ffn_up.weight" => "mlp.up_proj.weight",
        "ffn_down.weight" => "mlp.down_proj.weight",
        _ => return None,
    };
    Some(format!("model.layers.{layer}.{hf}"))
}

fn gguf_weights(
    content: &Content,
    file: &mut File,
    config: &LlamaConfig,
    device: &Device,
) -> Result<Weights> {
    let mut weights = Weights::new();
    let mut names: Vec<&String> = content.tensor_infos.keys().collect();
    names.sort();
    for name in names {
        let Some(hf) = hf_name(name) else { continue };
        let q = content.tensor(file, name, device).map_err(gguf_err)?;
        let mut t = q.dequantize(device)?;
        if name.ends_with("attn_q.weight") {
            t = unpermute(&t, config.heads)?;
        } else if name.ends_with("attn_k.weight") {
            t = unpermute(&t, config.kv_heads)?;
        }
        weights.insert(hf, t);
    }
    Ok(weights)
}

/// Undoes llama.cpp's reordering of query/key rows (interleaved rotary pairs back to halves).
fn unpermute(w: &Tensor, heads: usize) -> Result<Tensor> {
    let (out, inp) = w.dims2()?;
    let half = out / heads / 2;
    Ok(w.reshape((heads, half, 2, inp))?
        .transpose(1, 2)?
        .contiguous()?
        .reshape((out, inp))?)
}

fn strings(value: &Value) -> Result<Vec<String>> {
    value
        .to_vec()
        .map_err(gguf_err)?
        .iter()
        .map(|v| v.to_string().cloned().map_err(gguf_err))
        .collect()
}

/// Rebuilds a byte-level BPE tokenizer (`tokenizer.ggml.model = gpt2`) from GGUF metadata.
pub fn gguf_tokenizer(content: &Content) -> Result<TextTokenizer> {
    let model = meta(content, "tokenizer.ggml.model")?
        .to_string()
        .map_err(gguf_err)?;
    if model != "gpt2" {
        return Err(gguf_err(format!(
            "tokenizer model `{model}` is not supported (only gpt2 BPE)"
        )));
    }
    let tokens = strings(meta(content, "tokenizer.ggml.tokens")?)?;
    let merges = strings(meta(content, "tokenizer.ggml.merges")?)?;
    let types: Vec<i32> = match content.metadata.get("tokenizer.ggml.token_type") {
        Some(v) => v
            .to_vec()
            .map_err(gguf_err)?
            .iter()
            .map(|t| t.to_i32().unwrap_or(1))
            .collect(),
        None => vec![1; tokens.len()],
    };
    let id = |key: &str| content.metadata.get(key).and_then(|v| v.to_u32().ok());
    let eos = id("tokenizer.ggml.eos_token_id")
        .ok_or_else(|| gguf_err("no tokenizer.ggml.eos_token_id"))?;
    let template = content
        .metadata
        .get("tokenizer.chat_template")
        .and_then(|v| v.to_string().ok().cloned());
    let pre = content
        .metadata
        .get("tokenizer.ggml.pre")
        .and_then(|v| v.to_string().ok().cloned())
        .unwrap_or_default();
    let json = bpe_json(&tokens, &merges, &types, &pre);
    let inner = Tokenizer::from_bytes(json.to_string().as_bytes()).map_err(gguf_err)?;
    let meta = TokenizerMeta {
        end: eos,
        stop: vec![eos],
        bos: id("tokenizer.ggml.bos_token_id"),
        chat_template: template,
    };
    Ok(TextTokenizer::new(inner, meta))
}

/// The `tokenizer.json` of a byte-level BPE; control tokens (type 3) become special tokens.
fn bpe_json(tokens: &[String], merges: &[String], types: &[i32], pre: &str) -> Json {
    let vocab: serde_json::Map<String, Json> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), json!(i)))
        .collect();
    let added: Vec<Json> = tokens
        .iter()
        .enumerate()
        .filter(|(i, _)| matches!(types.get(*i), Some(3) | Some(4)))
        .map(|(i, t)| {
            json!({"id": i, "content": t, "single_word": false, "lstrip": false,
                   "rstrip": false, "normalized": false, "special": types[i] == 3})
        })
        .collect();
    let byte_level = json!({"type": "ByteLevel", "add_prefix_space": false,
                            "trim_offsets": true, "use_regex": true});
    let pre_tokenizer = if pre == "smollm" || pre == "qwen2" {
        json!({"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": true}, byte_level]})
    } else {
        byte_level.clone()
    };
    json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": added, "normalizer": null,
        "pre_tokenizer": pre_tokenizer, "post_processor": null, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": null, "unk_token": null,
                  "continuing_subword_prefix": null, "end_of_word_suffix": null,
                  "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                  "vocab": vocab, "merges": merges}
    })
}

/// The snapshot directory of `spec` (`org/name`, or `org/name@revision` with a branch, tag or
/// commit hash; `main` when none) in the hf-hub cache, through the `hf_hub` crate's cache API:
/// `$HF_HUB_CACHE` when set, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`. Offline:
/// nothing is downloaded (fill the cache with `huggingface-cli download ORG/NAME`, or Python's
/// `huggingface_hub`, which share its layout).
pub fn hub_snapshot(spec: &str) -> Result<PathBuf> {
    let (id, revision) = spec.split_once('@').unwrap_or((spec, "main"));
    let cache = match std::env::var_os("HF_HUB_CACHE") {
        Some(path) => hf_hub::Cache::new(PathBuf::from(path)),
        None => hf_hub::Cache::from_env(),
    };
    let repo = cache.repo(hf_hub::Repo::with_revision(
        id.to_string(),
        hf_hub::RepoType::Model,
        revision.to_string(),
    ));
    // A branch or tag names its commit in refs/; a commit hash names its snapshot directly.
    let config = repo
        .get("config.json")
        .or_else(|| Some(repo.pointer_path(revision).join("config.json")).filter(|p| p.exists()));
    match config.as_deref().and_then(Path::parent) {
        Some(dir) => Ok(dir.to_path_buf()),
        None => Err(FinetuneError::Model(format!(
            "hf:{spec}: no snapshot of {id} at revision {revision} in the hf-hub cache {} \
             (schedlm does not download; fetch it with `huggingface-cli download {id}`)",
            cache.path().display()
        ))),
    }
}

/// Reads a Hugging Face model directory of a Llama-architecture model.
pub fn load_hf_dir(dir: &Path, device: &Device) -> Result<Pretrained> {
    let config_path = dir.join("config.json");
    let raw: Json = crate::io::read_json(&config_path)?;
    let config = hf_config(&raw).ok_or_else(|| {
        FinetuneError::Model(format!("{}: not a llama config", config_path.display()))
    })?;
    let mut weights = Weights::new();
    for path in safetensors_files(dir)? {
        let part: HashMap<String, Tensor> = candle_core::safetensors::load(&path, device)?;
        for (name, t) in part {
            weights.insert(name, t.to_dtype(DType::F32)?);
        }
    }
    let tokenizer = hf_tokenizer(dir)?;
    Ok(Pretrained {
        config,
        weights,
        tokenizer,
    })
}

fn hf_config(raw: &Json) -> Option<LlamaConfig> {
    let n = |k: &str| raw.get(k).and_then(Json::as_u64).map(|v| v as usize);
    let heads = n("num_attention_heads")?;
    Some(LlamaConfig {
        vocab_size: n("vocab_size")?,
        hidden: n("hidden_size")?,
        intermediate: n("intermediate_size")?,
        layers: n("num_hidden_layers")?,
        heads,
        kv_heads: n("num_key_value_heads").unwrap_or(heads),
        rope_theta: raw
            .get("rope_theta")
            .and_then(Json::as_f64)
            .unwrap_or(10_000.0),
        rms_eps: raw
            .get("rms_norm_eps")
            .and_then(Json::as_f64)
            .unwrap_or(1e-5),
        context: n("max_position_embeddings").unwrap_or(2048).min(8192),
        tie_embeddings: raw
            .get("tie_word_embeddings")
            .and_then(Json::as_bool)
            .unwrap_or(false),
    })
}

fn safetensors_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| FinetuneError::io(dir, e))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(FinetuneError::Model(format!(
            "no .safetensors file in {}",
            dir.display()
        )));
    }
    Ok(files)
}

fn hf_tokenizer(dir: &Path) -> Result<TextTokenizer> {
    let path = dir.join("tokenizer.json");
    let inner = Tokenizer::from_file(&path)
        .map_err(|e| FinetuneError::Tokenizer(format!("{}: {e}", path.display())))?;
    let config: Json =
        crate::io::read_json(&dir.join("tokenizer_config.json")).unwrap_or(Json::Null);
    let token = |key: &str| -> Option<u32> {
        let v = config.get(key)?;
        let text = v
            .as_str()
            .or_else(|| v.get("content").and_then(Json::as_str))?;
        inner.token_to_id(text)
    };
    let end = token("eos_token")
        .ok_or_else(|| FinetuneError::Tokenizer(format!("{}: no eos_token", dir.display())))?;
    let meta = TokenizerMeta {
        end,
        stop: vec![end],
        bos: token("bos_token"),
        chat_template: config
            .get("chat_template")
            .and_then(Json::as_str)
            .map(String::from),
    };
    Ok(TextTokenizer::new(inner, meta))
}
