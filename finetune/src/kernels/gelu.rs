//! GELU with the tanh approximation (`0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, the
//! GELU of GPT-2 and of PyTorch's `approximate="tanh"`), fused forward and backward: one pass
//! over the data each, instead of the dozen passes of the formula in basic operations.

use candle_core::{CpuStorage, CustomOp1, CustomOp2, Layout, Shape, Tensor};
use rayon::prelude::*;

use super::{f32_slice, fused, tanh};
use crate::error::Result;

const C: f32 = 0.797_884_6; // sqrt(2 / pi)
const A: f32 = 0.044_715;
/// Elements per task: a fixed piece size, so the work split does not depend on the threads.
const PIECE: usize = 1 << 14;

struct Gelu;

vectorised! {
    fn forward(out: &mut [f32], x: &[f32]) {
        for (o, &x) in out.iter_mut().zip(x) {
            *o = 0.5 * x * (1.0 + tanh(C * (x + A * x * x * x)));
        }
    }
}

vectorised! {
    /// `out = g * gelu'(x)`.
    fn backward(out: &mut [f32], x: &[f32], g: &[f32]) {
        for ((o, &x), &g) in out.iter_mut().zip(x).zip(g) {
            let x2 = x * x;
            let t = tanh(C * (x + A * x2 * x));
            *o = g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * C * (1.0 + 3.0 * A * x2));
        }
    }
}

impl CustomOp1 for Gelu {
    fn name(&self) -> &'static str {
        "fused-gelu"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(s, l)?;
        let mut out = vec![0f32; x.len()];
        out.par_chunks_mut(PIECE)
            .zip(x.par_chunks(PIECE))
            .for_each(|(o, x)| forward(o, x));
        Ok((CpuStorage::F32(out), l.shape().clone()))
    }

    fn bwd(&self, x: &Tensor, _y: &Tensor, grad: &Tensor) -> candle_core::Result<Option<Tensor>> {
        Ok(Some(x.apply_op2(&grad.contiguous()?, GeluGrad)?))
    }
}

/// `grad * gelu'(x)`.
struct GeluGrad;

impl CustomOp2 for GeluGrad {
    fn name(&self) -> &'static str {
        "fused-gelu-grad"
    }

    fn cpu_fwd(
        &self,
        xs: &CpuStorage,
        xl: &Layout,
        gs: &CpuStorage,
        gl: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (x, g) = (f32_slice(xs, xl)?, f32_slice(gs, gl)?);
        let mut out = vec![0f32; x.len()];
        out.par_chunks_mut(PIECE)
            .zip(x.par_chunks(PIECE).zip(g.par_chunks(PIECE)))
            .for_each(|(o, (x, g))| backward(o, x, g));
        Ok((CpuStorage::F32(out), xl.shape().clone()))
    }
}

/// GELU (tanh approximation) of every element.
pub fn gelu(x: &Tensor) -> Result<Tensor> {
    if fused(x) {
        return Ok(x.contiguous()?.apply_op1(Gelu)?);
    }
    Ok(x.gelu()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::{max_diff, random_var};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn matches_the_composed_formula(rows in 1usize..40, cols in 1usize..70, seed in 0u64..1000) {
            let x = random_var(&[rows, cols], seed, 6.0);
            let w = random_var(&[rows, cols], seed + 1, 1.0);
            let fused = gelu(x.as_tensor()).unwrap();
            let reference = x.as_tensor().gelu().unwrap();
            prop_assert!(max_diff(&fused, &reference) < 1e-5);
            let gf = (fused * w.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
            let gr = (reference * w.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
            let (a, b) = (gf.get(x.as_tensor()).unwrap(), gr.get(x.as_tensor()).unwrap());
            prop_assert!(max_diff(a, b) < 1e-5, "gradient differs by {}", max_diff(a, b));
        }
    }
}
