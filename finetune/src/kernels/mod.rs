//! Fused CPU kernels with their own gradients, as candle custom operations: causal
//! self-attention that never materialises the [batch, heads, t, t] scores ([`attention`]),
//! tanh-approximated GELU ([`gelu()`]), layer norm ([`layer_norm()`]), the mean cross-entropy
//! of logits against targets ([`cross_entropy()`]) and a broadcast bias ([`add_bias`]).
//!
//! Each public function takes the fused path for contiguous-or-not f32 tensors on the CPU and
//! falls back to the same formula written with basic tensor operations elsewhere (CUDA, other
//! dtypes); the tests compare the two, values and gradients, on random shapes.
//!
//! Work is split into pieces whose boundaries do not depend on the thread count, and every
//! sum over pieces is taken in piece order, so results are the same bytes with any number of
//! threads.

/// Defines a function whose body is compiled twice, plainly and for AVX2 with FMA, and that
/// runs the second where the CPU has those features (checked at run time), so the loops of the
/// body vectorise 8 wide without building the whole program for a newer CPU. The body must only
/// call `#[inline(always)]` helpers for them to be compiled along.
macro_rules! vectorised {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) {
            #[inline(always)]
            fn body($($arg: $ty),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2($($arg: $ty),*) {
                    body($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: the CPU has the features `avx2` is compiled for.
                    return unsafe { avx2($($arg),*) };
                }
            }
            body($($arg),*)
        }
    };
}

pub mod attention;
pub mod bias;
pub mod cross_entropy;
pub mod frozen;
pub mod gelu;
pub mod layer_norm;

pub use attention::{
    attention_generic, causal_attention_fused, causal_attention_packed, masked_softmax,
};
pub use bias::add_bias;
pub use cross_entropy::{cross_entropy, weighted_cross_entropy};
pub use frozen::frozen_product;
pub use gelu::gelu;
pub use layer_norm::layer_norm;

use candle_core::{CpuStorage, DType, Layout, Storage, Tensor};

/// Whether the fused CPU path applies to `t`.
pub(crate) fn fused(t: &Tensor) -> bool {
    t.device().is_cpu() && t.dtype() == DType::F32
}

/// The contiguous f32 data of a CPU storage.
pub(crate) fn f32_slice<'a>(s: &'a CpuStorage, l: &Layout) -> candle_core::Result<&'a [f32]> {
    match (s, l.contiguous_offsets()) {
        (CpuStorage::F32(v), Some((a, b))) => Ok(&v[a..b]),
        _ => Err(candle_core::Error::Msg(
            "fused kernel: expected a contiguous f32 CPU tensor".into(),
        )),
    }
}

/// Runs `f` on the data of a (made contiguous) f32 CPU tensor.
pub(crate) fn with_f32<R>(t: &Tensor, f: impl FnOnce(&[f32]) -> R) -> candle_core::Result<R> {
    let t = t.contiguous()?;
    let (storage, layout) = t.storage_and_layout();
    match &*storage {
        Storage::Cpu(s) => Ok(f(f32_slice(s, layout)?)),
        _ => Err(candle_core::Error::Msg(
            "fused kernel: expected a CPU tensor".into(),
        )),
    }
}

/// A raw pointer that tasks writing disjoint parts of one buffer may share.
#[derive(Clone, Copy)]
pub(crate) struct SharedMut(pub *mut f32);

// SAFETY: only used by kernels whose tasks write disjoint elements (each says which).
unsafe impl Send for SharedMut {}
unsafe impl Sync for SharedMut {}

impl SharedMut {
    pub(crate) fn get(self) -> *mut f32 {
        self.0
    }
}

/// Elements per piece of [`sum_of_squares`].
const SQUARES_PIECE: usize = 1 << 14;

/// The sum of the squares of every element of `t` (a gradient's squared norm), in f64 over
/// fixed pieces added in order: the same value with any number of threads.
pub fn sum_of_squares(t: &Tensor) -> crate::error::Result<f64> {
    use rayon::prelude::*;
    if !fused(t) {
        return Ok(t
            .to_dtype(DType::F32)?
            .sqr()?
            .sum_all()?
            .to_scalar::<f32>()? as f64);
    }
    let parts = with_f32(t, |x| {
        x.par_chunks(SQUARES_PIECE)
            .map(|c| dot(c, c) as f64)
            .collect::<Vec<f64>>()
    })?;
    Ok(parts.iter().sum())
}

/// Sum of `xs` in eight interleaved lanes (vectorisable; the same order on every machine).
#[inline(always)]
pub(crate) fn sum(xs: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l += v;
        }
    }
    let tail: f32 = chunks.remainder().iter().sum();
    lanes.iter().sum::<f32>() + tail
}

/// Dot product of `a` and `b` (as [`sum`]).
#[inline(always)]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (mut ca, mut cb) = (a.chunks_exact(8), b.chunks_exact(8));
    for (x, y) in (&mut ca).zip(&mut cb) {
        for ((l, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *l += x * y;
        }
    }
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    lanes.iter().sum::<f32>() + tail
}

/// Largest element of `xs` (negative infinity when empty).
#[inline(always)]
pub(crate) fn max(xs: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for (l, &v) in lanes.iter_mut().zip(c) {
            *l = if v > *l { v } else { *l };
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    lanes.iter().fold(tail, |m, &v| m.max(v))
}

/// `e^x` in single precision to about 2 ulp, written so that the compiler vectorises loops
/// over it (no calls, no branches, no float-to-int casts, whose saturating semantics Rust
/// compiles lane by lane): range reduction by `ln 2`, a degree-6 polynomial, and the exponent
/// put in by integer arithmetic on the bits. Inputs below -87 give ~0 and above 88 give ~3e38.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    // 1.5 * 2^23: adding it rounds to the nearest integer k, which then sits in the low
    // mantissa bits (the bits of ROUND + k are ROUND_BITS + k).
    const ROUND: f32 = 12_582_912.0;
    const ROUND_BITS: u32 = 0x4B40_0000;
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * LOG2E + ROUND;
    let n = shifted - ROUND;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let p = 1.0 / 720.0;
    let p = p * r + 1.0 / 120.0;
    let p = p * r + 1.0 / 24.0;
    let p = p * r + 1.0 / 6.0;
    let p = p * r + 0.5;
    let p = p * r + 1.0;
    let p = p * r + 1.0;
    let k = shifted.to_bits().wrapping_sub(ROUND_BITS);
    let scale = f32::from_bits(k.wrapping_add(127) << 23);
    p * scale
}

/// `tanh(x)` from [`exp`]: `1 - 2 / (e^{2x} + 1)` (exact limits of +-1).
#[inline(always)]
pub(crate) fn tanh(x: f32) -> f32 {
    1.0 - 2.0 / (exp(2.0 * x) + 1.0)
}

#[cfg(test)]
pub(crate) mod testing {
    use candle_core::{Device, Tensor, Var};

    /// A variable of the given shape with values from a seeded generator in (-scale, scale).
    pub fn random_var(shape: &[usize], seed: u64, scale: f32) -> Var {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let n: usize = shape.iter().product();
        let data: Vec<f32> = (0..n).map(|_| rng.random_range(-scale..scale)).collect();
        Var::from_tensor(&Tensor::from_vec(data, shape, &Device::Cpu).unwrap()).unwrap()
    }

    /// Largest absolute difference of two tensors of one shape.
    pub fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
        assert_eq!(a.dims(), b.dims());
        (a - b)
            .unwrap()
            .abs()
            .unwrap()
            .flatten_all()
            .unwrap()
            .max(0)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_and_tanh_match_the_library_functions() {
        let mut x = -90.0f32;
        while x < 90.0 {
            let (want, got) = (x.exp(), exp(x));
            if x > -86.0 && x < 88.0 {
                assert!(
                    ((got - want) / want).abs() < 5e-7,
                    "exp({x}) = {got}, want {want}"
                );
            }
            assert!((tanh(x) - x.tanh()).abs() < 1e-6, "tanh({x})");
            x += 0.0137;
        }
        assert_eq!(tanh(50.0), 1.0);
        assert_eq!(tanh(-50.0), -1.0);
    }
}
