//! Where tensors live: `cpu` (the default build) or `cuda` / `cuda:N` (an NVIDIA GPU, in a
//! build with the `cuda` feature). One parser for every command that trains or decodes.

use candle_core::Device;

use crate::FinetuneError;

/// Whether this build can run on an NVIDIA GPU (`cargo build --features cuda`).
pub const CUDA_BUILT: bool = cfg!(feature = "cuda");

/// Parses `cpu`, `cuda` (GPU 0) or `cuda:N` and opens the device.
///
/// A CUDA device in a build without the feature, or a GPU that cannot be opened, is an error
/// that says which and how to get one; nothing falls back to the CPU silently.
pub fn parse(spec: &str) -> Result<Device, FinetuneError> {
    let spec = spec.trim();
    if spec.eq_ignore_ascii_case("cpu") {
        return Ok(Device::Cpu);
    }
    let ordinal = match spec.split_once(':') {
        None if spec.eq_ignore_ascii_case("cuda") => 0,
        Some((kind, n)) if kind.eq_ignore_ascii_case("cuda") => n.parse().map_err(|_| {
            FinetuneError::Config(format!(
                "device `{spec}`: `{n}` is not a GPU number (expected cuda:0, cuda:1, ...)"
            ))
        })?,
        _ => {
            return Err(FinetuneError::Config(format!(
                "device `{spec}`: expected `cpu`, `cuda` or `cuda:N`"
            )))
        }
    };
    if !CUDA_BUILT {
        return Err(FinetuneError::Config(format!(
            "device `{spec}`: this schedlm was built without CUDA; rebuild with \
             `cargo build --release --features cuda` (see docs/finetune.md, \"GPUs\")"
        )));
    }
    Device::new_cuda(ordinal).map_err(|e| {
        FinetuneError::Config(format!("device `{spec}`: cannot open GPU {ordinal}: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_parses_in_any_case() {
        assert!(parse("cpu").unwrap().is_cpu());
        assert!(parse(" CPU ").unwrap().is_cpu());
    }

    #[test]
    fn bad_specs_name_themselves() {
        for spec in ["gpu", "cuda:x", "cuda:-1", "metal", ""] {
            let err = parse(spec).unwrap_err().to_string();
            assert!(err.contains(&format!("`{}`", spec.trim())), "{err}");
        }
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn cuda_without_the_feature_says_how_to_get_it() {
        let err = parse("cuda:0").unwrap_err().to_string();
        assert!(err.contains("--features cuda"), "{err}");
    }
}
