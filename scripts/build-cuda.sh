#!/usr/bin/env bash
# Builds `schedlm` with the `cuda` feature on a machine without a CUDA toolkit or a GPU, from
# NVIDIA's PyPI wheels (nvcc, headers, runtime libraries), for a GPU machine that has the
# driver. Usage: scripts/build-cuda.sh [COMPUTE_CAP]   (default 90: Hopper, H100/H200)
#
# - The wheels go into a virtual environment (SCHEDLM_CUDA_VENV, default target/cuda-venv);
#   every NVIDIA package is pinned to one CUDA release, since a newer nvvm emits PTX that an
#   older ptxas refuses.
# - candle links the driver library (libcuda) directly. The driver is not a wheel, so the
#   link uses a stub libcuda.so.1 made here from the symbols the build asks for (as the
#   toolkit's own stubs/ directory does); at run time the GPU machine's driver provides them.
# - The binary lands in target/cuda/release/schedlm. It needs the wheels' libraries at run time
#   (LD_LIBRARY_PATH=<venv>/lib/python3*/site-packages/nvidia/cu13/lib) and a driver for CUDA
#   13. See docs/finetune.md, "GPUs".
#
# scripts/build-cuda.sh --check [COMPUTE_CAP]: `cargo check --features cuda` of the workspace
# instead (the kernels compiled by nvcc, nothing linked: no stub needed); what CI runs
# (scripts/test.sh), into target/cuda-check.
set -euo pipefail
cd "$(dirname "$0")/.."
CHECK=0
if [ "${1:-}" = --check ]; then
    CHECK=1
    shift
fi
CAP="${1:-90}"
CUDA_RELEASE="${SCHEDLM_CUDA_RELEASE:-13.0}"
VENV="${SCHEDLM_CUDA_VENV:-$PWD/target/cuda-venv}"
if [ "$CHECK" = 1 ]; then
    TARGET="${CARGO_TARGET_DIR:-$PWD/target/cuda-check}"
else
    TARGET="${CARGO_TARGET_DIR:-$PWD/target/cuda}"
fi
if [ ! -x "$VENV/bin/pip" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install -q \
    "nvidia-cuda-nvcc==$CUDA_RELEASE.*" "nvidia-cuda-runtime==$CUDA_RELEASE.*" \
    "nvidia-cuda-crt==$CUDA_RELEASE.*" "nvidia-cuda-cccl==$CUDA_RELEASE.*" \
    "nvidia-nvvm==$CUDA_RELEASE.*" "nvidia-cuda-nvrtc==$CUDA_RELEASE.*" \
    nvidia-cublas nvidia-curand
CUDA="$(echo "$VENV"/lib/python3*/site-packages/nvidia/cu13)"
LINK="$TARGET/link"
mkdir -p "$LINK"
# Unversioned names for the linker (the wheels ship only libX.so.N).
for lib in cudart cublas cublasLt curand nvrtc; do
    real="$(ls "$CUDA/lib/lib$lib.so."* | grep -v builtins | head -1)"
    ln -sf "$real" "$LINK/lib$lib.so"
done
export PATH="$CUDA/bin:$PATH" CUDA_ROOT="$CUDA" CUDA_PATH="$CUDA" CUDA_HOME="$CUDA"
export CUDA_COMPUTE_CAP="$CAP" CARGO_TARGET_DIR="$TARGET"
export RUSTFLAGS="${RUSTFLAGS:-} -L $LINK"
if [ "$CHECK" = 1 ]; then
    cargo check --features cuda -p schedlm -p schedlm-finetune --all-targets
    echo "checked the cuda feature (CUDA $CUDA_RELEASE, compute capability $CAP)"
    exit 0
fi
# The driver stub: build the dependencies first (cudarc names the driver's symbols), then
# define each of them in an empty library with the driver's soname.
if [ ! -f "$LINK/libcuda.so" ]; then
    cargo build --release --features cuda -p schedlm-finetune
    nm "$TARGET"/release/deps/libcudarc-*.rlib 2>/dev/null \
        | awk '$1 == "U" && $2 ~ /^cu[A-Z]/ { print $2 }' | sort -u \
        | awk '{ printf "int %s(void) { return 999; }\n", $1 }' > "$LINK/cuda_stub.c"
    cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$LINK/libcuda.so" "$LINK/cuda_stub.c"
fi
cargo build --release --features cuda --bin schedlm
echo "built $TARGET/release/schedlm (CUDA $CUDA_RELEASE, compute capability $CAP)"
