//! Building blocks shared by the models: norms, causal attention, the loss and the key/value
//! cache. Layer norm, attention without a cache and the loss run as fused kernels on the CPU
//! ([`crate::kernels`]); everything else is written with basic tensor operations, so gradients
//! flow through all of it.

use candle_core::{Tensor, D};

use crate::error::Result;
use crate::kernels;

pub use crate::kernels::{add_bias, causal_attention_packed, cross_entropy, gelu, layer_norm};

/// `x W^T` for `x` [.., in] and `w` [out, in]: [.., out]. The leading dimensions are folded
/// into one, so the product reads `w` transposed in place (a broadcast product would copy the
/// whole weight matrix at every call).
pub fn matmul_t(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let dims = x.dims();
    let (rows, inner) = match dims.split_last() {
        Some((&inner, lead)) => (lead.iter().product::<usize>(), inner),
        None => {
            return Err(crate::error::FinetuneError::Model(
                "matmul of a scalar".into(),
            ))
        }
    };
    let out = x.reshape((rows, inner))?.matmul(&w.t()?)?;
    let mut shape = dims.to_vec();
    if let Some(last) = shape.last_mut() {
        *last = w.dim(0)?;
    }
    Ok(out.reshape(shape)?)
}

/// A linear layer `x W^T + b` (variables `weight` of shape (out, in) and `bias` of shape (out), as
/// `candle_nn::linear`): the product by [`matmul_t`], the bias by the fused [`add_bias`].
pub struct Dense {
    weight: Tensor,
    bias: Tensor,
}

impl Dense {
    /// Makes the variables `weight` of shape (out_dim, in_dim) and `bias` of shape (out_dim) under `vb`.
    pub fn new(in_dim: usize, out_dim: usize, vb: candle_nn::VarBuilder) -> Result<Dense> {
        let full = candle_nn::linear(in_dim, out_dim, vb)?;
        let bias = full.bias().cloned().ok_or_else(|| {
            crate::error::FinetuneError::Model("linear layer without bias".into())
        })?;
        Ok(Dense {
            weight: full.weight().clone(),
            bias,
        })
    }

    /// `x W^T + b` for `x` [.., in_dim]: [.., out_dim].
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        add_bias(&matmul_t(x, &self.weight)?, &self.bias)
    }
}

/// Keys and values of every layer for the tokens seen so far, for incremental decoding.
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    layers: Vec<Option<(Tensor, Tensor)>>,
    len: usize,
}

impl KvCache {
    /// An empty cache for a model of `layers` layers.
    pub fn new(layers: usize) -> KvCache {
        KvCache {
            layers: vec![None; layers],
            len: 0,
        }
    }

    /// Tokens cached.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no token is cached yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends this step's keys and values of `layer` ([b, heads, t, d]) and returns all of
    /// them.
    ///
    /// The cache is for decoding, which takes no gradients: what it keeps is detached from the
    /// graph. Otherwise every cached tensor would hold the computation that made it (and with
    /// trainable variables in the model, such as LoRA adapters, every activation of every
    /// earlier step), and memory would grow with each token.
    pub fn append(&mut self, layer: usize, k: Tensor, v: Tensor) -> Result<(Tensor, Tensor)> {
        let (k, v) = (k.detach(), v.detach());
        let joined = match self.layers[layer].take() {
            Some((pk, pv)) => (Tensor::cat(&[&pk, &k], 2)?, Tensor::cat(&[&pv, &v], 2)?),
            None => (k, v),
        };
        self.layers[layer] = Some(joined.clone());
        Ok(joined)
    }

    /// Records that `t` more tokens went through every layer.
    pub fn advance(&mut self, t: usize) {
        self.len += t;
    }
}

/// RMS norm over the last dimension.
pub fn rms_norm(x: &Tensor, weight: &Tensor, eps: f64) -> Result<Tensor> {
    let ms = x.sqr()?.mean_keepdim(D::Minus1)?;
    let normed = x.broadcast_div(&(ms + eps)?.sqrt()?)?;
    Ok(normed.broadcast_mul(weight)?)
}

/// `x * sigmoid(x)`.
pub fn silu(x: &Tensor) -> Result<Tensor> {
    Ok((x / (x.neg()?.exp()? + 1.0)?)?)
}

/// Causal attention of queries `q` [b, h, t, d] (positions `start..start + t`) over keys and
/// values `k`, `v` [b, h, start + t, d]; returns [b, t, h * d].
pub fn causal_attention(q: &Tensor, k: &Tensor, v: &Tensor, start: usize) -> Result<Tensor> {
    if start == 0 && q.dim(2)? == k.dim(2)? {
        return kernels::causal_attention_fused(q, k, v);
    }
    kernels::attention_generic(q, k, v, start)
}

/// Splits [b, t, h * d] into heads: [b, h, t, d].
pub fn split_heads(x: &Tensor, heads: usize) -> Result<Tensor> {
    let (b, t, c) = x.dims3()?;
    Ok(x.reshape((b, t, heads, c / heads))?
        .transpose(1, 2)?
        .contiguous()?)
}

/// Repeats each key/value head `n` times (grouped-query attention).
pub fn repeat_kv(x: &Tensor, n: usize) -> Result<Tensor> {
    if n == 1 {
        return Ok(x.clone());
    }
    let (b, h, t, d) = x.dims4()?;
    Ok(x.unsqueeze(2)?
        .expand((b, h, n, t, d))?
        .reshape((b, h * n, t, d))?)
}

/// Fails when a sequence of `tokens` (cached ones included) does not fit a `context`.
pub(crate) fn check_context(tokens: usize, context: usize) -> crate::error::Result<()> {
    if tokens > context {
        return Err(crate::error::FinetuneError::Model(format!(
            "sequence of {tokens} tokens is longer than the context of {context}"
        )));
    }
    Ok(())
}
