//! AdamW with decoupled weight decay on matrices (not on vectors), betas 0.9/0.95; the
//! moments are kept as tensors and saved as `optimizer.safetensors` with the checkpoint.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{Device, Tensor, Var};
use rayon::prelude::*;

use crate::error::{FinetuneError, Result};

/// AdamW with decoupled weight decay on matrices (not on vectors), moments kept as tensors.
pub(crate) struct AdamW {
    m: Vec<Tensor>,
    v: Vec<Tensor>,
}

const BETA1: f64 = 0.9;
const BETA2: f64 = 0.95;
const EPS: f64 = 1e-8;

/// Elements per task of the fused update.
const PIECE: usize = 1 << 14;

/// The fused update of one piece: new moments `m`, `v` and weights `theta` from the weights
/// and gradient `(w, g)` and the old moments `(m0, v0)`.
fn update(
    m: &mut [f32],
    v: &mut [f32],
    theta: &mut [f32],
    (w, g): (&[f32], &[f32]),
    (m0, v0): (&[f32], &[f32]),
    h: Hyper,
) {
    let (b1, b2, eps) = (BETA1 as f32, BETA2 as f32, EPS as f32);
    for j in 0..m.len() {
        let g = g[j] * h.grad_scale;
        m[j] = m0[j] * b1 + g * (1.0 - b1);
        v[j] = v0[j] * b2 + g * g * (1.0 - b2);
        let step = (m[j] / h.c1) / ((v[j] / h.c2).sqrt() + eps);
        theta[j] = w[j] * h.decay - step * h.lr;
    }
}

/// The scalars of one step: bias corrections, learning rate and weight-decay factor.
#[derive(Clone, Copy)]
struct Hyper {
    grad_scale: f32,
    c1: f32,
    c2: f32,
    lr: f32,
    decay: f32,
}

impl AdamW {
    pub(crate) fn new(params: &[(String, Var)]) -> Result<AdamW> {
        let zeros = |v: &Var| v.zeros_like();
        Ok(AdamW {
            m: params
                .iter()
                .map(|(_, v)| zeros(v))
                .collect::<candle_core::Result<_>>()?,
            v: params
                .iter()
                .map(|(_, v)| zeros(v))
                .collect::<candle_core::Result<_>>()?,
        })
    }

    /// One step with gradients `grads` times `grad_scale` (gradient clipping), learning rate
    /// `lr`, step number `t` (from 1) and weight decay `wd`.
    pub(crate) fn step(
        &mut self,
        params: &[(String, Var)],
        grads: &[Tensor],
        grad_scale: f64,
        (lr, t, wd): (f64, usize, f64),
    ) -> Result<()> {
        let c1 = 1.0 - BETA1.powi(t as i32);
        let c2 = 1.0 - BETA2.powi(t as i32);
        for (i, ((_, var), g)) in params.iter().zip(grads).enumerate() {
            let decay = if var.rank() >= 2 { 1.0 - lr * wd } else { 1.0 };
            if crate::kernels::fused(var.as_tensor()) && crate::kernels::fused(g) {
                let h = Hyper {
                    grad_scale: grad_scale as f32,
                    c1: c1 as f32,
                    c2: c2 as f32,
                    lr: lr as f32,
                    decay: decay as f32,
                };
                self.fused_step(i, var, g, h)?;
                continue;
            }
            let g = &(g * grad_scale)?;
            self.m[i] = ((&self.m[i] * BETA1)? + (g * (1.0 - BETA1))?)?;
            self.v[i] = ((&self.v[i] * BETA2)? + (g.sqr()? * (1.0 - BETA2))?)?;
            let update = ((&self.m[i] / c1)? / ((&self.v[i] / c2)?.sqrt()? + EPS)?)?;
            let theta = var.as_tensor().detach();
            var.set(&((theta * decay)? - (update * lr)?)?)?;
        }
        Ok(())
    }

    /// One parameter's update in a single pass over its data (CPU, f32): the moments and the
    /// weights as the composed formula above computes them.
    fn fused_step(&mut self, i: usize, var: &Var, g: &Tensor, h: Hyper) -> Result<()> {
        use crate::kernels::with_f32;
        let n = g.elem_count();
        let (mut m, mut v, mut theta) = (vec![0f32; n], vec![0f32; n], vec![0f32; n]);
        with_f32(var.as_tensor(), |w| {
            with_f32(g, |g| {
                with_f32(&self.m[i], |m0| {
                    with_f32(&self.v[i], |v0| {
                        // Elementwise, so the split into pieces does not change any value.
                        m.par_chunks_mut(PIECE)
                            .zip(v.par_chunks_mut(PIECE))
                            .zip(theta.par_chunks_mut(PIECE))
                            .enumerate()
                            .for_each(|(p, ((m, v), theta))| {
                                let at = p * PIECE..p * PIECE + m.len();
                                let old = (&w[at.clone()], &g[at.clone()]);
                                update(m, v, theta, old, (&m0[at.clone()], &v0[at]), h);
                            });
                    })
                })
            })
        })????;
        let (shape, device) = (var.shape().clone(), var.device().clone());
        self.m[i] = Tensor::from_vec(m, shape.clone(), &device)?;
        self.v[i] = Tensor::from_vec(v, shape.clone(), &device)?;
        var.set(&Tensor::from_vec(theta, shape, &device)?)?;
        Ok(())
    }

    pub(crate) fn save(&self, params: &[(String, Var)], path: &Path) -> Result<()> {
        let mut map = HashMap::new();
        for (i, (name, _)) in params.iter().enumerate() {
            map.insert(format!("m.{name}"), self.m[i].clone());
            map.insert(format!("v.{name}"), self.v[i].clone());
        }
        Ok(candle_core::safetensors::save(&map, path)?)
    }

    pub(crate) fn load(params: &[(String, Var)], path: &Path, device: &Device) -> Result<AdamW> {
        let mut map = candle_core::safetensors::load(path, device)?;
        let mut get = |key: String| {
            map.remove(&key).ok_or_else(|| {
                FinetuneError::Model(format!("{}: no tensor `{key}`", path.display()))
            })
        };
        let mut opt = AdamW {
            m: Vec::new(),
            v: Vec::new(),
        };
        for (name, _) in params {
            opt.m.push(get(format!("m.{name}"))?);
            opt.v.push(get(format!("v.{name}"))?);
        }
        Ok(opt)
    }
}
