//! Layer norm over the last dimension, fused: one pass per row forward, and a backward that
//! recomputes each row's mean and deviation instead of keeping them, giving the gradients of
//! the input, the weight and the bias together.

use candle_core::{CpuStorage, CustomOp3, Layout, Shape, Tensor, D};
use rayon::prelude::*;

use super::{f32_slice, fused, with_f32};
use crate::error::Result;

/// Rows per task (a fixed size: the split and the order of the weight-gradient sums do not
/// depend on the thread count).
const ROWS: usize = 32;

struct LayerNorm {
    eps: f32,
}

/// Mean and reciprocal standard deviation of a row (two passes, as the reference).
fn moments(row: &[f32], eps: f32) -> (f32, f32) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    let var = row.iter().map(|&v| (v - mean) * (v - mean)).sum::<f32>() / n;
    (mean, 1.0 / (var + eps).sqrt())
}

impl CustomOp3 for LayerNorm {
    fn name(&self) -> &'static str {
        "fused-layer-norm"
    }

    fn cpu_fwd(
        &self,
        xs: &CpuStorage,
        xl: &Layout,
        ws: &CpuStorage,
        wl: &Layout,
        bs: &CpuStorage,
        bl: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (x, w, b) = (f32_slice(xs, xl)?, f32_slice(ws, wl)?, f32_slice(bs, bl)?);
        let width = w.len();
        let mut out = vec![0f32; x.len()];
        out.par_chunks_mut(width * ROWS)
            .zip(x.par_chunks(width * ROWS))
            .for_each(|(o, x)| {
                for (o, x) in o.chunks_mut(width).zip(x.chunks(width)) {
                    let (mean, rstd) = moments(x, self.eps);
                    for (((o, &x), &w), &b) in o.iter_mut().zip(x).zip(w).zip(b) {
                        *o = (x - mean) * rstd * w + b;
                    }
                }
            });
        Ok((CpuStorage::F32(out), xl.shape().clone()))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _b: &Tensor,
        _y: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let width = w.elem_count();
        let (dx, dw, db) = with_f32(x, |x| {
            with_f32(w, |w| with_f32(grad, |g| backward(x, w, g, self.eps)))
        })???;
        let device = x.device();
        Ok((
            Some(Tensor::from_vec(dx, x.shape(), device)?),
            Some(Tensor::from_vec(dw, width, device)?),
            Some(Tensor::from_vec(db, width, device)?),
        ))
    }
}

/// Gradients of the input, weight and bias.
fn backward(x: &[f32], w: &[f32], g: &[f32], eps: f32) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let width = w.len();
    let mut dx = vec![0f32; x.len()];
    // Per piece of rows: the piece's sums of dy * xhat and of dy.
    let partial: Vec<(Vec<f32>, Vec<f32>)> = dx
        .par_chunks_mut(width * ROWS)
        .zip(x.par_chunks(width * ROWS).zip(g.par_chunks(width * ROWS)))
        .map(|(dx, (x, g))| {
            let (mut dw, mut db) = (vec![0f32; width], vec![0f32; width]);
            let mut gw = vec![0f32; width];
            for ((dx, x), g) in dx
                .chunks_mut(width)
                .zip(x.chunks(width))
                .zip(g.chunks(width))
            {
                let (mean, rstd) = moments(x, eps);
                let (mut sum_gw, mut sum_gwx) = (0f32, 0f32);
                for i in 0..width {
                    let xhat = (x[i] - mean) * rstd;
                    gw[i] = g[i] * w[i];
                    sum_gw += gw[i];
                    sum_gwx += gw[i] * xhat;
                    dw[i] += g[i] * xhat;
                    db[i] += g[i];
                }
                let n = width as f32;
                let (mean_gw, mean_gwx) = (sum_gw / n, sum_gwx / n);
                for i in 0..width {
                    let xhat = (x[i] - mean) * rstd;
                    dx[i] = rstd * (gw[i] - mean_gw - xhat * mean_gwx);
                }
            }
            (dw, db)
        })
        .collect();
    let (mut dw, mut db) = (vec![0f32; width], vec![0f32; width]);
    for (pw, pb) in &partial {
        dw.iter_mut().zip(pw).for_each(|(a, b)| *a += b);
        db.iter_mut().zip(pb).for_each(|(a, b)| *a += b);
    }
    (dx, dw, db)
}

/// Layer norm of `x` over its last dimension, scaled by `weight` and shifted by `bias`.
pub fn layer_norm(x: &Tensor, weight: &Tensor, bias: &Tensor, eps: f64) -> Result<Tensor> {
    if fused(x) && fused(weight) && fused(bias) {
        let op = LayerNorm { eps: eps as f32 };
        return Ok(x
            .contiguous()?
            .apply_op3(&weight.contiguous()?, &bias.contiguous()?, op)?);
    }
    composed(x, weight, bias, eps)
}

fn composed(x: &Tensor, weight: &Tensor, bias: &Tensor, eps: f64) -> Result<Tensor> {
    let mean = x.mean_keepdim(D::Minus1)?;
    let centred = x.broadcast_sub(&mean)?;
    let var = centred.sqr()?.mean_keepdim(D::Minus1)?;
    let normed = centred.broadcast_div(&(var + eps)?.sqrt()?)?;
    Ok(normed.broadcast_mul(weight)?.broadcast_add(bias)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::{max_diff, random_var};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn matches_the_composed_formula(
            batch in 1usize..3, rows in 1usize..45, width in 1usize..70, seed in 0u64..1000
        ) {
            let x = random_var(&[batch, rows, width], seed, 3.0);
            let w = random_var(&[width], seed + 1, 2.0);
            let b = random_var(&[width], seed + 2, 1.0);
            let up = random_var(&[batch, rows, width], seed + 3, 1.0);
            let (xt, wt, bt) = (x.as_tensor(), w.as_tensor(), b.as_tensor());
            let fused = layer_norm(xt, wt, bt, 1e-5).unwrap();
            let reference = composed(xt, wt, bt, 1e-5).unwrap();
            prop_assert!(max_diff(&fused, &reference) < 1e-4);
            let gf = (fused * up.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
            let gr = (reference * up.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
            // Relative to the gradient's size: a row whose few values lie close together has a
            // small variance, and its input gradient (through 1 / sqrt(var + eps)) is large, so
            // f32 rounding differs by more than any absolute bound in the last places.
            for v in [xt, wt, bt] {
                let (f, r) = (gf.get(v).unwrap(), gr.get(v).unwrap());
                let scale = max_diff(r, &r.zeros_like().unwrap()).max(1.0);
                let d = max_diff(f, r);
                prop_assert!(d < 2e-4 * scale, "gradient differs by {} (largest {})", d, scale);
            }
        }
    }
}
