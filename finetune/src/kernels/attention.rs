//! Causal self-attention, fused and tiled: the [batch, heads, t, t] scores are never
//! materialised. Work is split by (sequence, head); each task walks its queries in blocks of
//! `BLOCK` rows, computes the block's scores against the keys it may see (a `BLOCK x t`
//! tile in a buffer of its own), takes the causal softmax row by row, keeps each row's
//! log-sum-exp, and multiplies by the values. The backward pass recomputes each tile's
//! probabilities from the kept log-sum-exps (FlashAttention's recomputation) and accumulates
//! the key and value gradients block after block. The products run through `gemm` on
//! strided tiles; nothing is copied into head-major layouts and back.
//!
//! A row of a tile holds all the keys its block may see, so the softmax is exact in one pass
//! over the row rather than online across key blocks: with the contexts used here (up to a few
//! thousand tokens) a tile row fits in the core's cache, which is what the online form exists
//! to achieve.

use std::sync::Mutex;

use candle_core::{CpuStorage, CustomOp1, CustomOp3, Layout, Shape, Tensor, D};
use gemm::{gemm, Parallelism};
use rayon::prelude::*;

use super::{dot, exp, f32_slice, fused, max, sum, with_f32, SharedMut};
use crate::error::Result;

/// Query rows per tile.
const BLOCK: usize = 64;

/// Shapes of a call: batch, heads, tokens and head width; the output is [b, t, h * d].
#[derive(Clone, Copy)]
struct Dims {
    b: usize,
    h: usize,
    t: usize,
    d: usize,
}

impl Dims {
    fn of(l: &Layout) -> candle_core::Result<Dims> {
        match *l.dims() {
            [b, h, t, d] => Ok(Dims { b, h, t, d }),
            _ => Err(candle_core::Error::Msg(
                "fused attention: expected [batch, heads, t, head width]".into(),
            )),
        }
    }

    /// Width of a token in the output.
    fn width(&self) -> usize {
        self.h * self.d
    }
}

/// `dst[m x n] (+)= beta * lhs[m x k] * rhs[k x n]`, strides in elements as (row, column),
/// on the calling thread. With `accumulate` the product is added to `dst`, else it replaces it.
///
/// # Safety
/// Every pointer must be valid for the elements its shape and strides reach.
#[allow(clippy::too_many_arguments)]
unsafe fn product(
    (m, n, k): (usize, usize, usize),
    dst: *mut f32,
    dst_s: (usize, usize),
    accumulate: bool,
    lhs: *const f32,
    lhs_s: (usize, usize),
    rhs: *const f32,
    rhs_s: (usize, usize),
    beta: f32,
) {
    if m == 0 || n == 0 {
        return;
    }
    gemm(
        m,
        n,
        k,
        dst,
        dst_s.1 as isize,
        dst_s.0 as isize,
        accumulate,
        lhs,
        lhs_s.1 as isize,
        lhs_s.0 as isize,
        rhs,
        rhs_s.1 as isize,
        rhs_s.0 as isize,
        1.0,
        beta,
        false,
        false,
        false,
        Parallelism::None,
    )
}

/// Where the rows of one head of one sequence lie in a buffer: row `i` of head `hi` of
/// sequence `bi` starts at `offset + bi * seq + hi * head + i * row`.
#[derive(Clone, Copy)]
struct Heads {
    offset: usize,
    seq: usize,
    head: usize,
    row: usize,
}

impl Heads {
    /// Heads of a contiguous [b, h, t, d] tensor.
    fn separate(dims: Dims) -> Heads {
        let Dims { h, t, d, .. } = dims;
        Heads {
            offset: 0,
            seq: h * t * d,
            head: t * d,
            row: d,
        }
    }

    /// Part `part` (0: q, 1: k, 2: v) of a packed [b, t, 3 * h * d] tensor.
    fn packed(dims: Dims, part: usize) -> Heads {
        let w = dims.width();
        Heads {
            offset: part * w,
            seq: dims.t * 3 * w,
            head: dims.d,
            row: 3 * w,
        }
    }

    /// The merged-heads output layout [b, t, h * d].
    fn merged(dims: Dims) -> Heads {
        let w = dims.width();
        Heads {
            offset: 0,
            seq: dims.t * w,
            head: dims.d,
            row: w,
        }
    }

    fn start(&self, bh: usize, h: usize) -> usize {
        self.offset + (bh / h) * self.seq + (bh % h) * self.head
    }
}

/// Inputs of a call: the buffers of q, k and v (possibly one packed buffer) and their layouts.
struct Inputs<'a> {
    q: &'a [f32],
    k: &'a [f32],
    v: &'a [f32],
    layout: [Heads; 3],
}

vectorised! {
    /// Replaces the scaled scores of a tile (rows of `n` columns, row `r` seeing columns
    /// `0..=first + r`) by their causal softmax; writes each row's log-sum-exp.
    fn softmax_rows(tile: &mut [f32], n: usize, first: usize, lse: &mut [f32]) {
        for (r, (row, lse)) in tile.chunks_mut(n).zip(lse).enumerate() {
            let vis = (first + r + 1).min(n);
            let m = max(&row[..vis]);
            row[..vis].iter_mut().for_each(|v| *v = exp(*v - m));
            let total = sum(&row[..vis]);
            let inv = 1.0 / total;
            row[..vis].iter_mut().for_each(|v| *v *= inv);
            row[vis..].iter_mut().for_each(|v| *v = 0.0);
            *lse = m + total.ln();
        }
    }
}

vectorised! {
    /// Turns a tile of scaled scores back into the probabilities of the forward pass from the
    /// rows' log-sum-exps.
    fn probabilities(tile: &mut [f32], n: usize, first: usize, lse: &[f32]) {
        for (r, (row, &l)) in tile.chunks_mut(n).zip(lse).enumerate() {
            let vis = (first + r + 1).min(n);
            row[..vis].iter_mut().for_each(|s| *s = exp(*s - l));
            row[vis..].iter_mut().for_each(|s| *s = 0.0);
        }
    }
}

vectorised! {
    /// `dS = scale * P * (dP - D)` row by row, in place of `dP`.
    fn score_grads(dp: &mut [f32], p: &[f32], n: usize, delta: &[f32], scale: f32) {
        for ((dp, p), &delta) in dp.chunks_mut(n).zip(p.chunks(n)).zip(delta) {
            for (dp, &p) in dp.iter_mut().zip(p) {
                *dp = scale * p * (*dp - delta);
            }
        }
    }
}

/// The forward pass: the output [b, t, h * d] and the log-sum-exp of every query row.
fn forward(dims: Dims, scale: f32, x: &Inputs) -> (Vec<f32>, Vec<f32>) {
    let Dims { b, h, t, d } = dims;
    let [ql, kl, vl] = x.layout;
    let ol = Heads::merged(dims);
    let mut out = vec![0f32; b * t * dims.width()];
    let mut lse = vec![0f32; b * h * t];
    let dst = SharedMut(out.as_mut_ptr());
    lse.par_chunks_mut(t).enumerate().for_each(|(bh, lse)| {
        let (q0, k0, v0, o0) = (
            ql.start(bh, h),
            kl.start(bh, h),
            vl.start(bh, h),
            ol.start(bh, h),
        );
        let mut tile = vec![0f32; BLOCK * t];
        for i0 in (0..t).step_by(BLOCK) {
            let rows = BLOCK.min(t - i0);
            let n = i0 + rows;
            let tile = &mut tile[..rows * n];
            // SAFETY: the layouts keep every row read inside its buffer (checked by the
            // callers' shapes); this task alone writes head `bh`'s columns of the output.
            unsafe {
                product(
                    (rows, n, d),
                    tile.as_mut_ptr(),
                    (n, 1),
                    false,
                    x.q[q0 + i0 * ql.row..].as_ptr(),
                    (ql.row, 1),
                    x.k[k0..].as_ptr(),
                    (1, kl.row),
                    scale,
                );
            }
            softmax_rows(tile, n, i0, &mut lse[i0..n]);
            unsafe {
                product(
                    (rows, d, n),
                    dst.get().add(o0 + i0 * ol.row),
                    (ol.row, 1),
                    false,
                    tile.as_ptr(),
                    (n, 1),
                    x.v[v0..].as_ptr(),
                    (vl.row, 1),
                    1.0,
                );
            }
        }
    });
    (out, lse)
}

/// The backward pass: writes the gradients of q, k and v through `grads` (laid out as the
/// inputs, zero on entry); `o` is the forward output and `g` its gradient, both [b, t, h * d].
fn backward(
    dims: Dims,
    scale: f32,
    x: &Inputs,
    lse: &[f32],
    (o, g): (&[f32], &[f32]),
    grads: [SharedMut; 3],
) {
    let Dims { b, h, t, d } = dims;
    let [ql, kl, vl] = x.layout;
    let ol = Heads::merged(dims);
    (0..b * h).into_par_iter().for_each(|bh| {
        let (q0, k0, v0, o0) = (
            ql.start(bh, h),
            kl.start(bh, h),
            vl.start(bh, h),
            ol.start(bh, h),
        );
        let lse = &lse[bh * t..(bh + 1) * t];
        let (q, k, v) = (&x.q[q0..], &x.k[k0..], &x.v[v0..]);
        // D_i = sum over the head's columns of dO * O.
        let delta: Vec<f32> = (0..t)
            .map(|i| {
                let c = o0 + i * ol.row;
                dot(&g[c..c + d], &o[c..c + d])
            })
            .collect();
        let (mut p, mut dp) = (vec![0f32; BLOCK * t], vec![0f32; BLOCK * t]);
        // SAFETY (every block below): tiles are rows x n inside `p` and `dp`; reads stay in
        // the rows 0..n of this head; this task alone writes head `bh`'s rows of the gradients.
        let (dq, dk, dv) = unsafe {
            (
                grads[0].get().add(q0),
                grads[1].get().add(k0),
                grads[2].get().add(v0),
            )
        };
        for i0 in (0..t).step_by(BLOCK) {
            let rows = BLOCK.min(t - i0);
            let n = i0 + rows;
            let (p, dp) = (&mut p[..rows * n], &mut dp[..rows * n]);
            let g0 = g[o0 + i0 * ol.row..].as_ptr();
            let qi = q[i0 * ql.row..].as_ptr();
            unsafe {
                product(
                    (rows, n, d),
                    p.as_mut_ptr(),
                    (n, 1),
                    false,
                    qi,
                    (ql.row, 1),
                    k.as_ptr(),
                    (1, kl.row),
                    scale,
                );
            }
            probabilities(p, n, i0, &lse[i0..i0 + rows]);
            unsafe {
                // dV[0..n] += P^T dO
                product(
                    (n, d, rows),
                    dv,
                    (vl.row, 1),
                    true,
                    p.as_ptr(),
                    (1, n),
                    g0,
                    (ol.row, 1),
                    1.0,
                );
                // dP = dO V^T
                product(
                    (rows, n, d),
                    dp.as_mut_ptr(),
                    (n, 1),
                    false,
                    g0,
                    (ol.row, 1),
                    v.as_ptr(),
                    (1, vl.row),
                    1.0,
                );
            }
            score_grads(dp, p, n, &delta[i0..i0 + rows], scale);
            unsafe {
                // dQ rows = dS K
                product(
                    (rows, d, n),
                    dq.add(i0 * ql.row),
                    (ql.row, 1),
                    false,
                    dp.as_ptr(),
                    (n, 1),
                    k.as_ptr(),
                    (kl.row, 1),
                    1.0,
                );
                // dK[0..n] += dS^T Q rows
                product(
                    (n, d, rows),
                    dk,
                    (kl.row, 1),
                    true,
                    dp.as_ptr(),
                    (1, n),
                    qi,
                    (ql.row, 1),
                    1.0,
                );
            }
        }
    });
}

/// What both attention operations share: the scale and the log-sum-exp of every query row,
/// written by the forward pass and read by the backward pass.
struct Kept {
    scale: f32,
    lse: Mutex<Vec<f32>>,
}

impl Kept {
    fn new(d: usize) -> Kept {
        Kept {
            scale: 1.0 / (d as f32).sqrt(),
            lse: Mutex::new(Vec::new()),
        }
    }

    /// Runs the forward pass and keeps its log-sum-exps; returns the output [b, t, h * d].
    fn forward(&self, dims: Dims, x: &Inputs) -> (CpuStorage, Shape) {
        let (out, lse) = forward(dims, self.scale, x);
        *self.lse.lock().unwrap_or_else(|e| e.into_inner()) = lse;
        (
            CpuStorage::F32(out),
            Shape::from((dims.b, dims.t, dims.width())),
        )
    }

    /// Runs the backward pass (see [`backward`]) with the kept log-sum-exps.
    fn backward(
        &self,
        dims: Dims,
        x: &Inputs,
        (out, grad): (&Tensor, &Tensor),
        grads: [SharedMut; 3],
    ) -> candle_core::Result<()> {
        let lse = self.lse.lock().unwrap_or_else(|e| e.into_inner());
        if lse.len() != dims.b * dims.h * dims.t {
            return Err(candle_core::Error::Msg(
                "fused attention: backward without its forward pass".into(),
            ));
        }
        with_f32(out, |o| {
            with_f32(grad, |g| backward(dims, self.scale, x, &lse, (o, g), grads))
        })?
    }
}

/// Attention over separate q, k, v [b, h, t, d].
struct Attention(Kept);

impl CustomOp3 for Attention {
    fn name(&self) -> &'static str {
        "fused-causal-attention"
    }

    fn cpu_fwd(
        &self,
        qs: &CpuStorage,
        ql: &Layout,
        ks: &CpuStorage,
        kl: &Layout,
        vs: &CpuStorage,
        vl: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let dims = Dims::of(ql)?;
        let x = Inputs {
            q: f32_slice(qs, ql)?,
            k: f32_slice(ks, kl)?,
            v: f32_slice(vs, vl)?,
            layout: [Heads::separate(dims); 3],
        };
        Ok(self.0.forward(dims, &x))
    }

    fn bwd(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        out: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (b, h, t, d) = q.dims4()?;
        let dims = Dims { b, h, t, d };
        let size = q.elem_count();
        let (mut dq, mut dk, mut dv) = (vec![0f32; size], vec![0f32; size], vec![0f32; size]);
        let ptrs = [dq.as_mut_ptr(), dk.as_mut_ptr(), dv.as_mut_ptr()].map(SharedMut);
        with_f32(q, |q| {
            with_f32(k, |k| {
                with_f32(v, |v| {
                    let x = Inputs {
                        q,
                        k,
                        v,
                        layout: [Heads::separate(dims); 3],
                    };
                    self.0.backward(dims, &x, (out, grad), ptrs)
                })
            })
        })????;
        let device = q.device();
        Ok((
            Some(Tensor::from_vec(dq, q.shape(), device)?),
            Some(Tensor::from_vec(dk, k.shape(), device)?),
            Some(Tensor::from_vec(dv, v.shape(), device)?),
        ))
    }
}

/// Attention over a packed [b, t, 3 * h * d] tensor (q, k and v side by side in every row,
/// the output of one linear layer): no split into heads, no copies, and one gradient tensor.
struct PackedAttention {
    heads: usize,
    kept: Kept,
}

impl PackedAttention {
    fn dims(&self, shape: &[usize]) -> candle_core::Result<Dims> {
        match *shape {
            [b, t, c] if c % (3 * self.heads) == 0 && c > 0 => Ok(Dims {
                b,
                h: self.heads,
                t,
                d: c / (3 * self.heads),
            }),
            _ => Err(candle_core::Error::Msg(format!(
                "fused attention: {shape:?} is not [batch, t, 3 x {} heads x width]",
                self.heads
            ))),
        }
    }

    /// q, k and v of one packed buffer.
    fn inputs<'a>(dims: Dims, qkv: &'a [f32]) -> Inputs<'a> {
        Inputs {
            q: qkv,
            k: qkv,
            v: qkv,
            layout: [0, 1, 2].map(|p| Heads::packed(dims, p)),
        }
    }
}

impl CustomOp1 for PackedAttention {
    fn name(&self) -> &'static str {
        "fused-causal-attention-packed"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let dims = self.dims(l.dims())?;
        let x = Self::inputs(dims, f32_slice(s, l)?);
        Ok(self.kept.forward(dims, &x))
    }

    fn bwd(
        &self,
        qkv: &Tensor,
        out: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<Option<Tensor>> {
        let dims = self.dims(qkv.dims())?;
        let mut dqkv = vec![0f32; qkv.elem_count()];
        let ptr = SharedMut(dqkv.as_mut_ptr());
        with_f32(qkv, |qkv| {
            let x = Self::inputs(dims, qkv);
            self.kept.backward(dims, &x, (out, grad), [ptr; 3])
        })??;
        Ok(Some(Tensor::from_vec(dqkv, qkv.shape(), qkv.device())?))
    }
}

/// Causal self-attention of a packed `qkv` [b, t, 3 * w] (queries, keys, values side by side,
/// `heads` heads each) with no cache: [b, t, w]. Fused on the CPU, basic operations elsewhere.
pub fn causal_attention_packed(qkv: &Tensor, heads: usize) -> Result<Tensor> {
    let (b, t, c) = qkv.dims3()?;
    let d = c / (3 * heads.max(1));
    if fused(qkv) {
        let op = PackedAttention {
            heads,
            kept: Kept::new(d),
        };
        return Ok(qkv.contiguous()?.apply_op1(op)?);
    }
    let w = c / 3;
    let split = |i: usize| -> Result<Tensor> {
        Ok(qkv
            .narrow(2, i * w, w)?
            .reshape((b, t, heads, d))?
            .transpose(1, 2)?
            .contiguous()?)
    };
    attention_generic(&split(0)?, &split(1)?, &split(2)?, 0)
}

/// Causal self-attention of `q`, `k`, `v` [b, h, t, d] (every query at the position of its
/// key, no cache): [b, t, h * d]. Fused on the CPU, basic operations elsewhere.
pub fn causal_attention_fused(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Tensor> {
    if !fused(q) {
        return attention_generic(q, k, v, 0);
    }
    let op = Attention(Kept::new(q.dim(D::Minus1)?));
    Ok(q.contiguous()?
        .apply_op3(&k.contiguous()?, &v.contiguous()?, op)?)
}

/// Attention of queries `q` [b, h, t, d] at positions `start..start + t` over keys and values
/// [b, h, start + t, d] with basic operations: [b, t, h * d].
pub fn attention_generic(q: &Tensor, k: &Tensor, v: &Tensor, start: usize) -> Result<Tensor> {
    let (b, h, t, d) = q.dims4()?;
    let scores = (q.contiguous()?.matmul(&k.contiguous()?.t()?)? * (1.0 / (d as f64).sqrt()))?;
    let weights = masked_softmax(&scores, start)?;
    let out = weights.matmul(&v.contiguous()?)?;
    Ok(out.transpose(1, 2)?.reshape((b, t, h * d))?)
}

/// Softmax over the last dimension of scores [b, h, t, T] whose row `i` sees columns
/// `0..=start + i`.
pub fn masked_softmax(scores: &Tensor, start: usize) -> Result<Tensor> {
    let (t, total) = (scores.dim(2)?, scores.dim(3)?);
    if start > 0 && t == 1 && start + t >= total {
        // One new query after cached keys, seeing all of them (decoding with the cache):
        // nothing to mask, and no gradient is taken (the cache is detached).
        return Ok(candle_nn::ops::softmax_last_dim(&scores.contiguous()?)?);
    }
    let mask: Vec<u8> = (0..t)
        .flat_map(|i| (0..total).map(move |j| u8::from(j > start + i)))
        .collect();
    let mask = Tensor::from_vec(mask, (t, total), scores.device())?.broadcast_as(scores.shape())?;
    let neg = Tensor::new(f32::NEG_INFINITY, scores.device())?
        .to_dtype(scores.dtype())?
        .broadcast_as(scores.shape())?;
    let masked = mask.where_cond(&neg, scores)?;
    Ok(candle_nn::ops::softmax(&masked, D::Minus1)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::{max_diff, random_var};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20))]
        #[test]
        fn matches_the_composed_attention(
            b in 1usize..3, h in 1usize..4, t in 1usize..150, d in 1usize..20, seed in 0u64..1000
        ) {
            let [q, k, v] = [0, 1, 2].map(|i| random_var(&[b, h, t, d], seed + i, 2.0));
            let up = random_var(&[b, t, h * d], seed + 3, 1.0);
            let (qt, kt, vt) = (q.as_tensor(), k.as_tensor(), v.as_tensor());
            let fused = causal_attention_fused(qt, kt, vt).unwrap();
            let reference = attention_generic(qt, kt, vt, 0).unwrap();
            prop_assert!(max_diff(&fused, &reference) < 1e-4);
            let gf = (fused * up.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
            let gr = (reference * up.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
            for x in [qt, kt, vt] {
                let diff = max_diff(gf.get(x).unwrap(), gr.get(x).unwrap());
                prop_assert!(diff < 1e-3, "gradient differs by {}", diff);
            }
        }

        #[test]
        fn packed_matches_the_composed_attention(
            b in 1usize..3, h in 1usize..4, t in 1usize..150, d in 1usize..20, seed in 0u64..1000
        ) {
            let qkv = random_var(&[b, t, 3 * h * d], seed, 2.0);
            let up = random_var(&[b, t, h * d], seed + 3, 1.0);
            let fused = causal_attention_packed(qkv.as_tensor(), h).unwrap();
            let split = |i: usize| {
                qkv.as_tensor().narrow(2, i * h * d, h * d).unwrap()
                    .reshape((b, t, h, d)).unwrap().transpose(1, 2).unwrap()
            };
            let reference = attention_generic(&split(0), &split(1), &split(2), 0).unwrap();
            prop_assert!(max_diff(&fused, &reference) < 1e-4);
            let gf = (fused * up.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
            let gr = (reference * up.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
            let diff = max_diff(gf.get(qkv.as_tensor()).unwrap(), gr.get(qkv.as_tensor()).unwrap());
            prop_assert!(diff < 1e-3, "gradient differs by {}", diff);
        }
    }
}
