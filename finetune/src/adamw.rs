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
            self.m[i] = ((&self.m[i] * BETA1)? + (g * (1.0 - BETA1))?)?;
            self.v[i] = ((&self.v[i] * BETA2)? + (g.sqr()? * (1.0 - BETA2))?)?;
            let update = ((&self.m[i] / c1)? / ((&self.v[i] / c2)?.sqrt()? + EPS)?)?;
            let theta = var.as_tensor().detach();
            let decay = if var.rank() >= 2 { 1.0 - lr * wd } else { 1.0 };
            var.set(&((theta * decay)? - (update * lr)?)?)?;
        }
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
