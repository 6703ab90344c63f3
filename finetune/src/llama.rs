//! A Llama-architecture decoder (SmolLM2, Llama, Qwen-style layouts) with frozen base weights
//! and optional LoRA adapters on chosen projections.
//!
//! Base weights are plain tensors (no gradient); the adapters are the variables of the
//! builder the model is made with, so training updates only them.

use std::collections::HashMap;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use serde::{Deserialize, Serialize};

use crate::error::{FinetuneError, Result};
use crate::kernels::frozen_product;
use crate::nn::{
    causal_attention, check_context, matmul_t, repeat_kv, rms_norm, silu, split_heads, KvCache,
};

/// The shape of a Llama model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlamaConfig {
    /// Token ids: rows of the token embedding and of the output head.
    pub vocab_size: usize,
    /// Width of the residual stream (`hidden_size`, GGUF `embedding_length`).
    pub hidden: usize,
    /// Width inside the gated MLP: the output of the `gate` and `up` projections, the input of
    /// `down`.
    pub intermediate: usize,
    /// Decoder blocks.
    pub layers: usize,
    /// Query heads per block, each of `hidden / heads` dimensions.
    pub heads: usize,
    /// Key and value heads (grouped-query attention): each serves `heads / kv_heads` query heads;
    /// equal to `heads` without grouping.
    pub kv_heads: usize,
    /// Base of the rotary position frequencies (10000 when the model does not say).
    pub rope_theta: f64,
    /// Epsilon added to the mean square in the RMS norms (1e-5 when the model does not say).
    pub rms_eps: f64,
    /// Longest sequence, in tokens: the model's maximum position count, capped at 8192 (the rotary
    /// tables are this long).
    pub context: usize,
    /// Whether the output head reuses the token embedding matrix instead of a separate
    /// `lm_head.weight`.
    pub tie_embeddings: bool,
}

/// The projections LoRA may adapt, by short name.
pub const PROJECTIONS: [&str; 7] = ["q", "k", "v", "o", "gate", "up", "down"];

/// LoRA adapters: `W x + (alpha / rank) B A x` on the target projections.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoraConfig {
    /// Inner dimension of each adapter (`A` is [rank, in], `B` is [out, rank]); at least 1.
    pub rank: usize,
    /// Scale of the adapters: `B A x` is multiplied by `alpha / rank`.
    pub alpha: f64,
    /// Short names from [`PROJECTIONS`].
    pub targets: Vec<String>,
}

impl Default for LoraConfig {
    fn default() -> Self {
        LoraConfig {
            rank: 8,
            alpha: 16.0,
            targets: vec!["q".into(), "v".into()],
        }
    }
}

impl LoraConfig {
    /// Checks that the rank is at least 1 and every target is one of [`PROJECTIONS`]; the error
    /// says what to change.
    pub fn check(&self) -> Result<()> {
        if self.rank == 0 {
            return Err(FinetuneError::Config("LoRA rank must be at least 1".into()));
        }
        match self
            .targets
            .iter()
            .find(|t| !PROJECTIONS.contains(&t.as_str()))
        {
            Some(t) => Err(FinetuneError::Config(format!(
                "unknown LoRA target `{t}`: choose from {}",
                PROJECTIONS.join(", ")
            ))),
            None => Ok(()),
        }
    }
}

/// Base weights by Hugging Face name (`model.layers.0.self_attn.q_proj.weight`, ...).
pub type Weights = HashMap<String, Tensor>;

fn take(weights: &mut Weights, name: &str) -> Result<Tensor> {
    weights
        .remove(name)
        .ok_or_else(|| FinetuneError::Model(format!("missing weight `{name}`")))
}

/// A frozen linear map with an optional LoRA adapter.
pub struct LoraLinear {
    weight: Tensor,
    adapter: Option<(Tensor, Tensor, f64)>,
}

impl LoraLinear {
    fn new(weight: Tensor, name: &str, lora: Option<&LoraConfig>, vb: &VarBuilder) -> Result<Self> {
        let adapter = match lora {
            Some(c) if c.targets.iter().any(|t| t == name) => {
                let (out, inp) = weight.dims2()?;
                let vb = vb.pp(name);
                let a = vb.get((c.rank, inp), "lora_a")?;
                let b = vb.get((out, c.rank), "lora_b")?;
                Some((a, b, c.alpha / c.rank as f64))
            }
            _ => None,
        };
        Ok(LoraLinear { weight, adapter })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let base = frozen_product(x, &self.weight)?;
        match &self.adapter {
            None => Ok(base),
            Some((a, b, scale)) => {
                let low = matmul_t(&matmul_t(x, a)?, b)?;
                Ok((base + (low * *scale)?)?)
            }
        }
    }

    /// The weight with the adapter folded in.
    pub fn merged(&self) -> Result<Tensor> {
        match &self.adapter {
            None => Ok(self.weight.clone()),
            Some((a, b, scale)) => Ok((&self.weight + (b.matmul(a)? * *scale)?)?),
        }
    }
}

struct Layer {
    input_norm: Tensor,
    q: LoraLinear,
    k: LoraLinear,
    v: LoraLinear,
    o: LoraLinear,
    post_norm: Tensor,
    gate: LoraLinear,
    up: LoraLinear,
    down: LoraLinear,
}

/// The model.
pub struct Llama {
    config: LlamaConfig,
    embed: Tensor,
    layers: Vec<Layer>,
    norm: Tensor,
    head: Tensor,
    cos: Tensor,
    sin: Tensor,
}

impl Llama {
    /// Builds the model from base weights; adapters (if any) are made through `vb`.
    pub fn new(
        config: LlamaConfig,
        mut weights: Weights,
        lora: Option<&LoraConfig>,
        vb: VarBuilder,
    ) -> Result<Llama> {
        if let Some(l) = lora {
            l.check()?;
        }
        let mut layers = Vec::with_capacity(config.layers);
        for i in 0..config.layers {
            layers.push(Self::layer(
                &mut weights,
                i,
                lora,
                &vb.pp(format!("layers.{i}")),
            )?);
        }
        let embed = take(&mut weights, "model.embed_tokens.weight")?;
        let head = match weights.remove("lm_head.weight") {
            Some(h) if !config.tie_embeddings => h,
            _ => embed.clone(),
        };
        let head_dim = config.hidden / config.heads;
        let (cos, sin) = rope_tables(head_dim, config.context, config.rope_theta, embed.device())?;
        Ok(Llama {
            norm: take(&mut weights, "model.norm.weight")?,
            config,
            embed,
            layers,
            head,
            cos,
            sin,
        })
    }

    fn layer(
        w: &mut Weights,
        i: usize,
        lora: Option<&LoraConfig>,
        vb: &VarBuilder,
    ) -> Result<Layer> {
        let p = format!("model.layers.{i}");
        let mut lin = |name: &str, path: &str| -> Result<LoraLinear> {
            LoraLinear::new(take(w, &format!("{p}.{path}.weight"))?, name, lora, vb)
        };
        Ok(Layer {
            q: lin("q", "self_attn.q_proj")?,
            k: lin("k", "self_attn.k_proj")?,
            v: lin("v", "self_attn.v_proj")?,
            o: lin("o", "self_attn.o_proj")?,
            gate: lin("gate", "mlp.gate_proj")?,
            up: lin("up", "mlp.up_proj")?,
            down: lin("down", "mlp.down_proj")?,
            input_norm: take(w, &format!("{p}.input_layernorm.weight"))?,
            post_norm: take(w, &format!("{p}.post_attention_layernorm.weight"))?,
        })
    }

    /// The shape the model was built with.
    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    /// Final hidden states [b, t, hidden] of tokens `ids` [b, t] after the cached ones.
    pub fn hidden(&self, ids: &Tensor, mut cache: Option<&mut KvCache>) -> Result<Tensor> {
        let (b, t) = ids.dims2()?;
        let start = cache.as_ref().map_or(0, |c| c.len());
        check_context(start + t, self.config.context)?;
        let mut x =
            self.embed
                .index_select(&ids.flatten_all()?, 0)?
                .reshape((b, t, self.config.hidden))?;
        let cos = self.cos.narrow(0, start, t)?;
        let sin = self.sin.narrow(0, start, t)?;
        for (i, layer) in self.layers.iter().enumerate() {
            x = self.block(layer, &x, i, (&cos, &sin), cache.as_deref_mut())?;
        }
        if let Some(cache) = cache {
            cache.advance(t);
        }
        rms_norm(&x, &self.norm, self.config.rms_eps)
    }

    fn block(
        &self,
        layer: &Layer,
        x: &Tensor,
        index: usize,
        rope: (&Tensor, &Tensor),
        cache: Option<&mut KvCache>,
    ) -> Result<Tensor> {
        let c = &self.config;
        let h = rms_norm(x, &layer.input_norm, c.rms_eps)?;
        let q = apply_rope(&split_heads(&layer.q.forward(&h)?, c.heads)?, rope)?;
        let mut k = apply_rope(&split_heads(&layer.k.forward(&h)?, c.kv_heads)?, rope)?;
        let mut v = split_heads(&layer.v.forward(&h)?, c.kv_heads)?;
        let start = cache.as_ref().map_or(0, |c| c.len());
        if let Some(cache) = cache {
            (k, v) = cache.append(index, k, v)?;
        }
        let n = c.heads / c.kv_heads;
        let attn = causal_attention(&q, &repeat_kv(&k, n)?, &repeat_kv(&v, n)?, start)?;
        let x = (x + layer.o.forward(&attn)?)?;
        let h = rms_norm(&x, &layer.post_norm, c.rms_eps)?;
        let mlp = (silu(&layer.gate.forward(&h)?)? * layer.up.forward(&h)?)?;
        Ok((&x + layer.down.forward(&mlp)?)?)
    }

    /// Next-token logits of hidden states [.., hidden].
    pub fn logits(&self, hidden: &Tensor) -> Result<Tensor> {
        frozen_product(hidden, &self.head)
    }

    /// All weights in Hugging Face names, adapters folded in.
    pub fn merged_weights(&self) -> Result<Weights> {
        let mut out = Weights::new();
        out.insert("model.embed_tokens.weight".into(), self.embed.clone());
        out.insert("model.norm.weight".into(), self.norm.clone());
        if !self.config.tie_embeddings {
            out.insert("lm_head.weight".into(), self.head.clone());
        }
        for (i, l) in self.layers.iter().enumerate() {
            let p = format!("model.layers.{i}");
            let pairs = [
                ("self_attn.q_proj", &l.q),
                ("self_attn.k_proj", &l.k),
                ("self_attn.v_proj", &l.v),
                ("self_attn.o_proj", &l.o),
                ("mlp.gate_proj", &l.gate),
                ("mlp.up_proj", &l.up),
                ("mlp.down_proj", &l.down),
            ];
            for (name, lin) in pairs {
                out.insert(format!("{p}.{name}.weight"), lin.merged()?);
            }
            out.insert(format!("{p}.input_layernorm.weight"), l.input_norm.clone());
            out.insert(
                format!("{p}.post_attention_layernorm.weight"),
                l.post_norm.clone(),
            );
        }
        Ok(out)
    }
}

/// Rotary tables [context, head_dim] (each frequency twice: the Hugging Face half layout).
fn rope_tables(d: usize, context: usize, theta: f64, device: &Device) -> Result<(Tensor, Tensor)> {
    let inv: Vec<f32> = (0..d / 2)
        .map(|i| (1.0 / theta.powf(2.0 * i as f64 / d as f64)) as f32)
        .collect();
    let inv = Tensor::from_vec(inv, (1, d / 2), device)?;
    let pos = Tensor::arange(0u32, context as u32, device)?
        .to_dtype(DType::F32)?
        .reshape((context, 1))?;
    let freqs = pos.broadcast_mul(&inv)?;
    let freqs = Tensor::cat(&[&freqs, &freqs], 1)?;
    Ok((freqs.cos()?, freqs.sin()?))
}

/// Rotates [b, h, t, d] by position (`x cos + rotate_half(x) sin`).
fn apply_rope(x: &Tensor, (cos, sin): (&Tensor, &Tensor)) -> Result<Tensor> {
    let d = x.dim(3)?;
    let x1 = x.narrow(3, 0, d / 2)?;
    let x2 = x.narrow(3, d / 2, d / 2)?;
    let rotated = Tensor::cat(&[&x2.neg()?, &x1], 3)?;
    Ok((x.broadcast_mul(cos)? + rotated.broadcast_mul(sin)?)?)
}
