//! Mean cross-entropy of logits against target ids, fused: per row one log-sum-exp, and a
//! backward that writes `(softmax - onehot) / rows` directly instead of differentiating a
//! log-softmax and a gather. The weighted form ([`weighted_cross_entropy`]) scales each row's
//! term by its weight and divides by a given normaliser: a loss that counts some answer
//! positions more, or (signed weights) a policy-gradient loss.

use candle_core::{CpuStorage, CustomOp2, DType, Layout, Shape, Tensor, D};
use rayon::prelude::*;

use super::{exp, f32_slice, fused, with_f32};
use crate::error::Result;

/// Rows per task (fixed, so the sum of the losses does not depend on the threads).
const ROWS: usize = 16;

/// The op: `sum_i w_i * ce_i / norm`, with `w_i = 1` and `norm = rows` when unweighted.
struct CrossEntropy {
    weights: Option<Vec<f32>>,
    norm: f64,
}

impl CrossEntropy {
    fn weight(&self, i: usize) -> f32 {
        self.weights.as_ref().map_or(1.0, |w| w[i])
    }
}

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
            .enumerate()
            .map(|(c, (x, t))| {
                let mut sum = 0f64;
                for (k, (row, &t)) in x.chunks(vocab).zip(t).enumerate() {
                    let w = self.weight(c * ROWS + k) as f64;
                    sum += w * (log_sum_exp(row) - row[check(t, vocab)?]) as f64;
                }
                Ok(sum)
            })
            .collect::<candle_core::Result<Vec<f64>>>()?;
        let mean = sums.iter().sum::<f64>() / self.norm;
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
        let base = g / self.norm as f32;
        let dx = with_f32(logits, |x| {
            let mut dx = vec![0f32; x.len()];
            dx.par_chunks_mut(vocab)
                .zip(x.par_chunks(vocab).zip(&targets))
                .enumerate()
                .for_each(|(i, (d, (row, &t)))| {
                    let scale = base * self.weight(i);
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
    if fusable(logits, targets) {
        let n = targets.dims1()?.max(1) as f64;
        let op = CrossEntropy {
            weights: None,
            norm: n,
        };
        return Ok(logits.contiguous()?.apply_op2(&targets.contiguous()?, op)?);
    }
    composed(logits, targets)
}

/// `sum_i weights[i] * nll_i / norm`: the negative log-likelihood of each target weighted, over
/// a normaliser the caller chooses (the sum of the weights for a weighted mean; the row count
/// for a policy-gradient loss, whose weights are signed advantages). `weights` has one entry
/// per row of `logits`; `norm` must be positive.
pub fn weighted_cross_entropy(
    logits: &Tensor,
    targets: &Tensor,
    weights: &[f32],
    norm: f64,
) -> Result<Tensor> {
    let n = targets.dims1()?;
    if weights.len() != n || norm.is_nan() || norm <= 0.0 {
        return Err(crate::error::FinetuneError::Config(format!(
            "weighted cross entropy: {} weights for {n} rows, normaliser {norm}",
            weights.len()
        )));
    }
    if fusable(logits, targets) {
        let op = CrossEntropy {
            weights: Some(weights.to_vec()),
            norm,
        };
        return Ok(logits.contiguous()?.apply_op2(&targets.contiguous()?, op)?);
    }
    let w = Tensor::new(weights, logits.device())?;
    Ok(((nll(logits, targets)? * w)?.sum_all()? / norm)?)
}

/// Whether the fused CPU kernel takes these operands.
fn fusable(logits: &Tensor, targets: &Tensor) -> bool {
    fused(logits) && targets.dtype() == DType::U32 && targets.device().is_cpu()
}

/// Each row's negative log-likelihood of its target (shape n), from candle's operations.
fn nll(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    let logp = candle_nn::ops::log_softmax(&logits.to_dtype(DType::F32)?, D::Minus1)?;
    Ok(logp.gather(&targets.unsqueeze(1)?, 1)?.squeeze(1)?.neg()?)
}

fn composed(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    Ok(nll(logits, targets)?.mean_all()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testing::{max_diff, random_var};
    use candle_core::Device;
    use proptest::prelude::*;

    /// Largest difference between the gradients of two losses with respect to `x`.
    fn gradient_diff(a: &Tensor, b: &Tensor, x: &Tensor) -> f32 {
        let (ga, gb) = (a.backward().unwrap(), b.backward().unwrap());
        max_diff(ga.get(x).unwrap(), gb.get(x).unwrap())
    }

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
            let d = gradient_diff(&(fused * 1.7).unwrap(), &(reference * 1.7).unwrap(), x.as_tensor());
            prop_assert!(d < 1e-5, "gradient differs by {}", d);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn weighted_matches_the_composed_formula(rows in 1usize..40, vocab in 2usize..60, seed in 0u64..1000) {
            let x = random_var(&[rows, vocab], seed, 8.0);
            let t: Vec<u32> = (0..rows).map(|i| ((i as u64 * 5 + seed) % vocab as u64) as u32).collect();
            let w: Vec<f32> = (0..rows).map(|i| ((i as f32 * 0.7 + seed as f32) % 3.0) - 1.0).collect();
            let t = Tensor::new(t, &Device::Cpu).unwrap();
            let fused = weighted_cross_entropy(x.as_tensor(), &t, &w, 2.5).unwrap();
            let logp = candle_nn::ops::log_softmax(x.as_tensor(), D::Minus1).unwrap();
            let picked = logp.gather(&t.unsqueeze(1).unwrap(), 1).unwrap().squeeze(1).unwrap();
            let wt = Tensor::new(w.as_slice(), &Device::Cpu).unwrap();
            let reference = ((picked.neg().unwrap() * wt).unwrap().sum_all().unwrap() / 2.5).unwrap();
            prop_assert!(max_diff(&fused, &reference) < 1e-4);
            let d = gradient_diff(&fused, &reference, x.as_tensor());
            prop_assert!(d < 1e-5, "gradient differs by {}", d);
        }
    }

    #[test]
    fn unit_weights_over_their_sum_are_the_mean() {
        let x = random_var(&[5, 7], 3, 4.0);
        let t = Tensor::new(&[0u32, 1, 2, 3, 4], &Device::Cpu).unwrap();
        let plain = cross_entropy(x.as_tensor(), &t).unwrap();
        let weighted = weighted_cross_entropy(x.as_tensor(), &t, &[1.0; 5], 5.0).unwrap();
        assert!(max_diff(&plain, &weighted) < 1e-6);
        assert!(weighted_cross_entropy(x.as_tensor(), &t, &[1.0; 4], 5.0).is_err());
    }

    #[test]
    fn a_target_outside_the_vocabulary_is_an_error() {
        let x = Tensor::zeros((2, 3), DType::F32, &Device::Cpu).unwrap();
        let t = Tensor::new(&[0u32, 3], &Device::Cpu).unwrap();
        assert!(cross_entropy(&x, &t).is_err());
    }
}
