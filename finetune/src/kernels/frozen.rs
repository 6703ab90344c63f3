//! `x W^T` with a frozen weight `W` (a pretrained base under LoRA): the weight lives in the
//! operation, not in the graph, so the backward pass computes only the input's gradient. A
//! plain product would also compute `W`'s gradient (as many operations as the forward pass)
//! and keep it, with a zero buffer of the same size, until the backward pass ends.

use candle_core::{CpuStorage, CustomOp1, Layout, Shape, Storage, Tensor};
use gemm::{gemm, Parallelism};

use super::f32_slice;
use crate::error::{FinetuneError, Result};

struct FrozenProduct {
    /// [out, in], contiguous f32 on the CPU.
    weight: Tensor,
}

impl CustomOp1 for FrozenProduct {
    fn name(&self) -> &'static str {
        "frozen-product"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(s, l)?;
        let (out, inner) = self.weight.dims2()?;
        let rows = x.len() / inner.max(1);
        let (storage, wl) = self.weight.storage_and_layout();
        let w = match &*storage {
            Storage::Cpu(ws) => f32_slice(ws, wl)?,
            _ => {
                return Err(candle_core::Error::Msg(
                    "frozen product: weight not on the CPU".into(),
                ))
            }
        };
        let mut y = vec![0f32; rows * out];
        let threads = rayon::current_num_threads();
        let parallelism = if threads > 1 {
            Parallelism::Rayon(threads)
        } else {
            Parallelism::None
        };
        if rows > 0 && out > 0 {
            // SAFETY: y is [rows, out], x [rows, inner] and w [out, inner], all contiguous;
            // the right operand is w read transposed (row stride 1, column stride inner).
            unsafe {
                gemm(
                    rows,
                    out,
                    inner,
                    y.as_mut_ptr(),
                    1,
                    out as isize,
                    false,
                    x.as_ptr(),
                    1,
                    inner as isize,
                    w.as_ptr(),
                    inner as isize,
                    1,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    parallelism,
                )
            };
        }
        let mut dims = l.dims().to_vec();
        if let Some(last) = dims.last_mut() {
            *last = out;
        }
        Ok((CpuStorage::F32(y), Shape::from(dims)))
    }

    fn bwd(&self, x: &Tensor, _y: &Tensor, grad: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let out = self.weight.dim(0)?;
        let rows = grad.elem_count() / out.max(1);
        let dx = grad
            .contiguous()?
            .reshape((rows, out))?
            .matmul(&self.weight)?;
        Ok(Some(dx.reshape(x.shape())?))
    }
}

/// `x W^T` for `x` [.., in] and a frozen `weight` [out, in] (no gradient is taken for it).
/// Fused on the CPU for f32; elsewhere a plain product with the weight detached.
pub fn frozen_product(x: &Tensor, weight: &Tensor) -> Result<Tensor> {
    let inner = weight.dim(1)?;
    if x.dim(x.rank().saturating_sub(1))? != inner {
        return Err(FinetuneError::Model(format!(
            "input {:?} does not match weight {:?}",
            x.dims(),
            weight.dims()
        )));
    }
    if super::fused(x) && super::fused(weight) {
        let op = FrozenProduct {
            weight: weight.detach().contiguous()?,
        };
        return Ok(x.contiguous()?.apply_op1(op)?);
    }
    crate::nn::matmul_t(x, &weight.detach())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::{max_diff, random_var};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn matches_the_plain_product(
            b in 1usize..3, rows in 1usize..40, inner in 1usize..50, out in 1usize..60,
            seed in 0u64..1000
        ) {
            let x = random_var(&[b, rows, inner], seed, 2.0);
            let w = random_var(&[out, inner], seed + 1, 1.0);
            let up = random_var(&[b, rows, out], seed + 2, 1.0);
            let fused = frozen_product(x.as_tensor(), w.as_tensor()).unwrap();
            let reference = crate::nn::matmul_t(x.as_tensor(), w.as_tensor()).unwrap();
            prop_assert!(max_diff(&fused, &reference) < 1e-4);
            let gf = (fused * up.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
            let gr = (reference * up.as_tensor()).unwrap().sum_all().unwrap().backward().unwrap();
            let d = max_diff(gf.get(x.as_tensor()).unwrap(), gr.get(x.as_tensor()).unwrap());
            prop_assert!(d < 1e-4, "gradient differs by {}", d);
            prop_assert!(gf.get(w.as_tensor()).is_none(), "the frozen weight got a gradient");
        }
    }
}
