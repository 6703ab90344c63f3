//! A fused, causally masked, scaled softmax over attention scores with its gradient: one pass
//! over [b, h, t, T] instead of the half-dozen of a masked softmax made of basic operations.

use candle_core::{CpuStorage, CustomOp1, CustomOp2, Layout, Shape, Tensor};
use rayon::prelude::*;

use crate::error::Result;

/// `softmax(scale * x)` over the last dimension where row `i` sees columns `0..=start + i`.
struct CausalSoftmax {
    start: usize,
    scale: f32,
}

fn f32_slice<'a>(s: &'a CpuStorage, l: &Layout) -> candle_core::Result<&'a [f32]> {
    match (s, l.contiguous_offsets()) {
        (CpuStorage::F32(v), Some((a, b))) => Ok(&v[a..b]),
        _ => Err(candle_core::Error::Msg(
            "causal softmax needs contiguous f32".into(),
        )),
    }
}

/// Row `r` of a [.., t, T] tensor sees this many columns.
fn visible(r: usize, t: usize, total: usize, start: usize) -> usize {
    (start + r % t + 1).min(total)
}

impl CustomOp1 for CausalSoftmax {
    fn name(&self) -> &'static str {
        "causal-softmax"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(s, l)?;
        let dims = l.dims();
        let (t, total) = (dims[dims.len() - 2], dims[dims.len() - 1]);
        let mut out = vec![0f32; x.len()];
        out.par_chunks_mut(total)
            .zip(x.par_chunks(total))
            .enumerate()
            .for_each(|(r, (o, row))| {
                let n = visible(r, t, total, self.start);
                let max = row[..n].iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
                let mut sum = 0f32;
                for (o, &v) in o[..n].iter_mut().zip(&row[..n]) {
                    *o = ((v - max) * self.scale).exp();
                    sum += *o;
                }
                o[..n].iter_mut().for_each(|o| *o /= sum);
            });
        Ok((CpuStorage::F32(out), l.shape().clone()))
    }

    fn bwd(&self, _x: &Tensor, y: &Tensor, grad: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let grad = grad.contiguous()?;
        Ok(Some(y.apply_op2(&grad, SoftmaxGrad { scale: self.scale })?))
    }
}

/// Gradient of the scaled softmax: `scale * y * (g - sum(g * y))` row by row.
struct SoftmaxGrad {
    scale: f32,
}

impl CustomOp2 for SoftmaxGrad {
    fn name(&self) -> &'static str {
        "causal-softmax-grad"
    }

    fn cpu_fwd(
        &self,
        ys: &CpuStorage,
        yl: &Layout,
        gs: &CpuStorage,
        gl: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (y, g) = (f32_slice(ys, yl)?, f32_slice(gs, gl)?);
        let total = *yl.dims().last().unwrap_or(&1);
        let mut out = vec![0f32; y.len()];
        out.par_chunks_mut(total)
            .zip(y.par_chunks(total).zip(g.par_chunks(total)))
            .for_each(|(o, (y, g))| {
                let dot: f32 = y.iter().zip(g).map(|(a, b)| a * b).sum();
                for ((o, &y), &g) in o.iter_mut().zip(y).zip(g) {
                    *o = self.scale * y * (g - dot);
                }
            });
        Ok((CpuStorage::F32(out), yl.shape().clone()))
    }
}

/// Causal softmax of `scale * scores` [b, h, t, T], queries at positions `start..start + t`.
/// Falls back to basic operations on devices other than the CPU.
pub fn causal_softmax(scores: &Tensor, start: usize, scale: f64) -> Result<Tensor> {
    if scores.device().is_cpu() && scores.dtype() == candle_core::DType::F32 {
        let op = CausalSoftmax {
            start,
            scale: scale as f32,
        };
        return Ok(scores.contiguous()?.apply_op1(op)?);
    }
    generic(scores, start, scale)
}

fn generic(scores: &Tensor, start: usize, scale: f64) -> Result<Tensor> {
    let (t, total) = (scores.dim(2)?, scores.dim(3)?);
    let mask: Vec<u8> = (0..t)
        .flat_map(|i| (0..total).map(move |j| u8::from(j > start + i)))
        .collect();
    let mask = Tensor::from_vec(mask, (t, total), scores.device())?.broadcast_as(scores.shape())?;
    let neg = Tensor::new(f32::NEG_INFINITY, scores.device())?
        .to_dtype(scores.dtype())?
        .broadcast_as(scores.shape())?;
    let masked = mask.where_cond(&neg, &(scores * scale)?)?;
    Ok(candle_nn::ops::softmax(&masked, candle_core::D::Minus1)?)
}
