//! `x + bias` where the bias's shape is the trailing part of `x`'s (a linear layer's bias, a
//! position embedding added to every sequence), fused: the backward pass sums the gradient's
//! rows in fixed pieces instead of candle's strided reduction over the broadcast dimensions.

use candle_core::{CpuStorage, CustomOp2, Layout, Shape, Tensor};
use rayon::prelude::*;

use super::{f32_slice, fused, with_f32};
use crate::error::{FinetuneError, Result};

/// Rows of `x` per task (fixed: the bias gradient's sum order does not depend on threads).
const ROWS: usize = 64;

struct AddBias;

impl CustomOp2 for AddBias {
    fn name(&self) -> &'static str {
        "fused-add-bias"
    }

    fn cpu_fwd(
        &self,
        xs: &CpuStorage,
        xl: &Layout,
        bs: &CpuStorage,
        bl: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (x, b) = (f32_slice(xs, xl)?, f32_slice(bs, bl)?);
        let mut out = vec![0f32; x.len()];
        out.par_chunks_mut(b.len() * ROWS)
            .zip(x.par_chunks(b.len() * ROWS))
            .for_each(|(o, x)| {
                for (o, x) in o.chunks_mut(b.len()).zip(x.chunks(b.len())) {
                    for ((o, &x), &b) in o.iter_mut().zip(x).zip(b) {
                        *o = x + b;
                    }
                }
            });
        Ok((CpuStorage::F32(out), xl.shape().clone()))
    }

    fn bwd(
        &self,
        _x: &Tensor,
        bias: &Tensor,
        _out: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let n = bias.elem_count();
        let db = with_f32(grad, |g| {
            let partial: Vec<Vec<f32>> = g
                .par_chunks(n * ROWS)
                .map(|g| {
                    let mut sum = vec![0f32; n];
                    for row in g.chunks(n) {
                        sum.iter_mut().zip(row).for_each(|(s, v)| *s += v);
                    }
                    sum
                })
                .collect();
            let mut db = vec![0f32; n];
            for p in &partial {
                db.iter_mut().zip(p).for_each(|(s, v)| *s += v);
            }
            db
        })?;
        let db = Tensor::from_vec(db, bias.shape(), bias.device())?;
        Ok((Some(grad.clone()), Some(db)))
    }
}

/// `x + bias`, the bias broadcast over the leading dimensions of `x` its shape lacks.
pub fn add_bias(x: &Tensor, bias: &Tensor) -> Result<Tensor> {
    let (xd, bd) = (x.dims(), bias.dims());
    if bd.len() > xd.len() || xd[xd.len() - bd.len()..] != *bd {
        return Err(FinetuneError::Model(format!(
            "bias of shape {bd:?} does not end the shape {xd:?}"
        )));
    }
    if fused(x) && fused(bias) {
        return Ok(x.contiguous()?.apply_op2(&bias.contiguous()?, AddBias)?);
    }
    Ok(x.broadcast_add(bias)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::{max_diff, random_var};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn matches_broadcast_add(
            b in 1usize..3, rows in 1usize..150, width in 1usize..40, two in any::<bool>(),
            seed in 0u64..1000
        ) {
            let x = random_var(&[b, rows, width], seed, 3.0);
            let bias = if two {
                random_var(&[rows, width], seed + 1, 1.0)
            } else {
                random_var(&[width], seed + 1, 1.0)
            };
            let up = random_var(&[b, rows, width], seed + 2, 1.0);
            let fused = add_bias(x.as_tensor(), bias.as_tensor()).unwrap();
            let reference = x.as_tensor().broadcast_add(bias.as_tensor()).unwrap();
            prop_assert!(max_diff(&fused, &reference) == 0.0);
            let gf = (fused * up.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
            let gr = (reference * up.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
            for v in [x.as_tensor(), bias.as_tensor()] {
                let d = max_diff(gf.get(v).unwrap(), gr.get(v).unwrap());
                prop_assert!(d < 1e-4, "gradient differs by {}", d);
            }
        }
    }

    #[test]
    fn a_bias_that_does_not_end_the_shape_is_an_error() {
        let x = random_var(&[2, 3], 1, 1.0);
        let b = random_var(&[2], 2, 1.0);
        assert!(add_bias(x.as_tensor(), b.as_tensor()).is_err());
    }
}
