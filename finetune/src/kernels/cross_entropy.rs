//! Mean cross-entropy of logits against target ids, fused: per row one log-sum-exp, and a
//! backward that writes `(softmax - onehot) / rows` directly instead of differentiating a
//! log-softmax and a gather.

use candle_core::{CpuStorage, CustomOp2, DType, Layout, Shape, Tensor, D};
use rayon::prelude::*;

use super::{exp, f32_slice, fused, with_f32};
use crate::error::Result;

/// Rows per task (fixed, so the sum of the losses does not depend on the threads).
const ROWS: usize = 16;

struct CrossEntropy;

fn u32_slice<'a>(s: &'a CpuStorage, l: &Layout) -> candle_core::Result<&'a [u32]> {
    match (s, l.contiguous_offsets()) {
        (CpuStorage::U32(v), Some((a, b))) => Ok(&v[a..b]),
        _ => Err(candle_core::Error::Msg(
            "cross entropy: targets must be contiguous u32".into(),
        )),
    }
}

/// `ln sum exp(row)`.
fn log_sum_exp(row: &[f32]) -> f32 {
    let max = row.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let sum: f32 = row.iter().map(|&v| exp(v - max)).sum();
    max + sum.ln()
}

fn check(target: u32, vocab: usize) -> candle_core::Result<usize> {
    let t = target as usize;
    if t >= vocab {
        return Err(candle_core::Error::Msg(format!(
            "cross entropy: target {t} outside the vocabulary of {vocab}"
        )));
    }
    Ok(t)
}

impl CustomOp2 for CrossEntropy {
    fn name(&self) -> &'static str {
        "fused-cross-entropy"
    }

    fn cpu_fwd(
        &self,
        xs: &CpuStorage,
        xl: &Layout,
        ts: &CpuStorage,
        tl: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (x, t) = (f32_slice(xs, xl)?, u32_slice(ts, tl)?);
        let vocab = x.len() / t.len().max(1);
        let sums = x
            .par_chunks(vocab * ROWS)
            .zip(t.par_chunks(ROWS))
            .map(|(x, t)| {
                let mut sum = 0f64;
                for (row, &t) in x.chunks(vocab).zip(t) {
                    sum += (log_sum_exp(row) - row[check(t, vocab)?]) as f64;
                }
                Ok(sum)
            })
            .collect::<candle_core::Result<Vec<f64>>>()?;
        let mean = sums.iter().sum::<f64>() / t.len().max(1) as f64;
        Ok((CpuStorage::F32(vec![mean as f32]), Shape::from(())))
    }

    fn bwd(
        &self,
        logits: &Tensor,
        targets: &Tensor,
        _loss: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let g = grad.to_dtype(DType::F32)?.to_scalar::<f32>()?;
        let targets = targets.to_vec1::<u32>()?;
        let (n, vocab) = logits.dims2()?;
        let scale = g / n.max(1) as f32;
        let dx = with_f32(logits, |x| {
            let mut dx = vec![0f32; x.len()];
            dx.par_chunks_mut(vocab)
                .zip(x.par_chunks(vocab).zip(&targets))
                .for_each(|(d, (row, &t))| {
                    let lse = log_sum_exp(row);
                    for (d, &v) in d.iter_mut().zip(row) {
                        *d = scale * exp(v - lse);
                    }
                    // Targets were checked by the forward pass.
                    if let Some(d) = d.get_mut(t as usize) {
                        *d -= scale;
                    }
                });
            dx
        })?;
        let dx = Tensor::from_vec(dx, (n, vocab), logits.device())?;
        Ok((Some(dx), None))
    }
}

/// Mean negative log-likelihood of `targets` (shape n, u32) under `logits` (shape n x vocab).
pub fn cross_entropy(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    if fused(logits) && targets.dtype() == DType::U32 && targets.device().is_cpu() {
        return Ok(logits
            .contiguous()?
            .apply_op2(&targets.contiguous()?, CrossEntropy)?);
    }
    composed(logits, targets)
}

fn composed(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    let logp = candle_nn::ops::log_softmax(&logits.to_dtype(DType::F32)?, D::Minus1)?;
    let picked = logp.gather(&targets.unsqueeze(1)?, 1)?;
    Ok(picked.neg()?.mean_all()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::{max_diff, random_var};
    use candle_core::Device;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn matches_the_composed_formula(rows in 1usize..50, vocab in 1usize..90, seed in 0u64..1000) {
            let x = random_var(&[rows, vocab], seed, 8.0);
            let t: Vec<u32> = (0..rows).map(|i| ((i as u64 * 7 + seed) % vocab as u64) as u32).collect();
            let t = Tensor::new(t, &Device::Cpu).unwrap();
            let fused = cross_entropy(x.as_tensor(), &t).unwrap();
            let reference = composed(x.as_tensor(), &t).unwrap();
            prop_assert!(max_diff(&fused, &reference) < 1e-4);
            let gf = (fused * 1.7).unwrap().backward().unwrap();
            let gr = (reference * 1.7).unwrap().backward().unwrap();
            let d = max_diff(gf.get(x.as_tensor()).unwrap(), gr.get(x.as_tensor()).unwrap());
            prop_assert!(d < 1e-5, "gradient differs by {}", d);
        }
    }

    #[test]
    fn a_target_outside_the_vocabulary_is_an_error() {
        let x = Tensor::zeros((2, 3), DType::F32, &Device::Cpu).unwrap();
        let t = Tensor::new(&[0u32, 3], &Device::Cpu).unwrap();
        assert!(cross_entropy(&x, &t).is_err());
    }
}
