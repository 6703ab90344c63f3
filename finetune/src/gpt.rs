//! A decoder-only GPT trained from scratch: token and position embeddings, pre-norm blocks of
//! causal self-attention and a GELU MLP, a final layer norm and an output head.

use candle_core::{Module, Tensor};
use candle_nn::{embedding, linear_no_bias, Embedding, Linear, VarBuilder};
use serde::{Deserialize, Serialize};

use crate::error::{FinetuneError, Result};
use crate::nn::{
    add_bias, causal_attention, causal_attention_packed, check_context, gelu, layer_norm,
    split_heads, Dense, KvCache,
};

/// The size of a GPT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GptConfig {
    /// Token ids the model embeds and scores (rows of the token embedding and of the output head);
    /// at least the tokenizer's vocabulary.
    pub vocab_size: usize,
    /// Longest sequence (prompt and answer), in tokens.
    pub context: usize,
    /// Transformer blocks (attention and MLP) in the stack.
    pub layers: usize,
    /// Embedding width; a multiple of `heads`.
    pub width: usize,
    /// Attention heads per block, each of `width / heads` dimensions.
    pub heads: usize,
}

impl GptConfig {
    /// `gpt-tiny`: 4 layers of width 128 with 4 heads, 1024 tokens of context (about 0.9 M
    /// parameters with a 768-token vocabulary): trains on a 2-core CPU in minutes.
    pub fn tiny(vocab_size: usize) -> GptConfig {
        GptConfig {
            vocab_size,
            context: 1024,
            layers: 4,
            width: 128,
            heads: 4,
        }
    }

    /// Checks the shape; the error says what to change.
    pub fn check(&self) -> Result<()> {
        let ok = self.layers > 0
            && self.heads > 0
            && self.width > 0
            && self.width.is_multiple_of(self.heads)
            && self.context > 0;
        if ok {
            Ok(())
        } else {
            Err(FinetuneError::Config(format!(
                "GPT shape {self:?}: layers, heads, width and context must be positive and \
                 width a multiple of heads"
            )))
        }
    }
}

struct Norm {
    weight: Tensor,
    bias: Tensor,
}

impl Norm {
    fn new(width: usize, vb: VarBuilder) -> Result<Norm> {
        Ok(Norm {
            weight: vb.get_with_hints(width, "weight", candle_nn::Init::Const(1.0))?,
            bias: vb.get_with_hints(width, "bias", candle_nn::Init::Const(0.0))?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        layer_norm(x, &self.weight, &self.bias, 1e-5)
    }
}

struct Block {
    ln1: Norm,
    qkv: Dense,
    proj: Dense,
    ln2: Norm,
    fc: Dense,
    fc_proj: Dense,
}

impl Block {
    fn new(c: &GptConfig, vb: VarBuilder) -> Result<Block> {
        let w = c.width;
        Ok(Block {
            ln1: Norm::new(w, vb.pp("ln1"))?,
            qkv: Dense::new(w, 3 * w, vb.pp("attn.qkv"))?,
            proj: Dense::new(w, w, vb.pp("attn.proj"))?,
            ln2: Norm::new(w, vb.pp("ln2"))?,
            fc: Dense::new(w, 4 * w, vb.pp("mlp.fc"))?,
            fc_proj: Dense::new(4 * w, w, vb.pp("mlp.proj"))?,
        })
    }

    fn forward(
        &self,
        x: &Tensor,
        heads: usize,
        layer: usize,
        cache: Option<&mut KvCache>,
    ) -> Result<Tensor> {
        let w = x.dim(2)?;
        let qkv = self.qkv.forward(&self.ln1.forward(x)?)?;
        let part = |i: usize| split_heads(&qkv.narrow(2, i * w, w)?, heads);
        let start = cache.as_ref().map_or(0, |c| c.len());
        let attn = match cache {
            // Training and the prompt: attention straight from the packed projections.
            None => causal_attention_packed(&qkv, heads)?,
            Some(cache) if start == 0 => {
                cache.append(layer, part(1)?, part(2)?)?;
                causal_attention_packed(&qkv, heads)?
            }
            Some(cache) => {
                let (k, v) = cache.append(layer, part(1)?, part(2)?)?;
                causal_attention(&part(0)?, &k, &v, start)?
            }
        };
        let x = (x + self.proj.forward(&attn)?)?;
        let h = gelu(&self.fc.forward(&self.ln2.forward(&x)?)?)?;
        Ok((&x + self.fc_proj.forward(&h)?)?)
    }
}

/// A GPT whose weights live in the variables of the builder it was made with.
pub struct Gpt {
    config: GptConfig,
    wte: Embedding,
    wpe: Embedding,
    blocks: Vec<Block>,
    ln_f: Norm,
    head: Linear,
}

impl Gpt {
    /// Makes the model's variables (named `wte.weight`, `blocks.0.attn.qkv.weight`, ...).
    pub fn new(config: GptConfig, vb: VarBuilder) -> Result<Gpt> {
        config.check()?;
        let blocks = (0..config.layers)
            .map(|i| Block::new(&config, vb.pp(format!("blocks.{i}"))))
            .collect::<Result<Vec<_>>>()?;
        Ok(Gpt {
            config,
            wte: embedding(config.vocab_size, config.width, vb.pp("wte"))?,
            wpe: embedding(config.context, config.width, vb.pp("wpe"))?,
            blocks,
            ln_f: Norm::new(config.width, vb.pp("ln_f"))?,
            head: linear_no_bias(config.width, config.vocab_size, vb.pp("head"))?,
        })
    }

    /// The shape the model was built with.
    pub fn config(&self) -> &GptConfig {
        &self.config
    }

    /// Final hidden states [b, t, width] of tokens `ids` [b, t], which follow the cached ones.
    pub fn hidden(&self, ids: &Tensor, mut cache: Option<&mut KvCache>) -> Result<Tensor> {
        let (_, t) = ids.dims2()?;
        let start = cache.as_ref().map_or(0, |c| c.len());
        check_context(start + t, self.config.context)?;
        let pos = Tensor::arange(start as u32, (start + t) as u32, ids.device())?;
        let mut x = add_bias(&self.wte.forward(ids)?, &self.wpe.forward(&pos)?)?;
        for (i, block) in self.blocks.iter().enumerate() {
            x = block.forward(&x, self.config.heads, i, cache.as_deref_mut())?;
        }
        if let Some(cache) = cache {
            cache.advance(t);
        }
        self.ln_f.forward(&x)
    }

    /// Next-token logits of hidden states (any leading shape).
    pub fn logits(&self, hidden: &Tensor) -> Result<Tensor> {
        Ok(self.head.forward(hidden)?)
    }
}
