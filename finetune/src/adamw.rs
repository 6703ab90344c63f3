//! AdamW with decoupled weight decay on matrices (not on vectors), betas 0.9/0.95; the
//! moments are kept as tensors and saved as `optimizer.safetensors` with the checkpoint.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{Device, Tensor, Var};

use crate::error::{FinetuneError, Result};

/// AdamW with decoupled weight decay on matrices (not on vectors), moments kept as tensors.
pub(crate) struct AdamW {
    m: Vec<Tensor>,
    v: Vec<Tensor>,
}

const BETA1: f64 = 0.9;
const BETA2: f64 = 0.95;
const EPS: f64 = 1e-8;

/// The scalars of one step: bias corrections, learning rate and weight-decay factor.
#[derive(Clone, Copy)]
struct Hyper {
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

    pub(crate) fn step(
        &mut self,
        params: &[(String, Var)],
        grads: &[Tensor],
        lr: f64,
        t: usize,
        wd: f64,
    ) -> Result<()> {
        let c1 = 1.0 - BETA1.powi(t as i32);
        let c2 = 1.0 - BETA2.powi(t as i32);
        for (i, ((_, var), g)) in params.iter().zip(grads).enumerate() {
            let decay = if var.rank() >= 2 { 1.0 - lr * wd } else { 1.0 };
            if crate::kernels::fused(var.as_tensor()) && crate::kernels::fused(g) {
                let h = Hyper {
                    c1: c1 as f32,
                    c2: c2 as f32,
                    lr: lr as f32,
                    decay: decay as f32,
                };
                self.fused_step(i, var, g, h)?;
                continue;
            }
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
                        let (b1, b2) = (BETA1 as f32, BETA2 as f32);
                        for j in 0..n {
                            m[j] = m0[j] * b1 + g[j] * (1.0 - b1);
                            v[j] = v0[j] * b2 + g[j] * g[j] * (1.0 - b2);
                            let update = (m[j] / h.c1) / ((v[j] / h.c2).sqrt() + EPS as f32);
                            theta[j] = w[j] * h.decay - update * h.lr;
                        }
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
