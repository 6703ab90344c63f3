#!/usr/bin/env bash
# The project's test command: what CI runs (.ci/run) and what a developer runs before pushing.
# Installs missing system packages and test data, then checks formatting, lints (every public
# item documented, every doc link resolving), runs every test, and renders an eval report in
# headless Chromium; builds the Python package and runs its tests (scripts/test-python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# A one-off build: incremental state would only add gigabytes to the disk a fresh CI clone has.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

# Tests whose prerequisite is missing (a model file, a Python package, a GPU) write one line
# here (schedlm_model::skips); the closing lines count them. SCHEDLM_REQUIRE (set below from
# what the setup provided) turns such a skip into a failure.
export SCHEDLM_SKIP_LOG="$PWD/target/test-skips.log"
mkdir -p target
: > "$SCHEDLM_SKIP_LOG"
skipped() { echo "test.sh: $1: $2" >&2; echo "$1: $2" >> "$SCHEDLM_SKIP_LOG"; }

./scripts/setup.sh
./scripts/setup-tests.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps
# The feature matrix: what the default build leaves out is built and tested too.
#   schedlm          --no-default-features  (no MILP: the README's build without cmake)  check
#   schedlm-solver   --no-default-features  (no MILP)                                   unit tests
#   schedlm-eval     --features tls         (HTTPS endpoints)                           unit tests
#   schedlm-eval     no features            (no `model:DIR` loader)                     check
#   schedlm-finetune --features cuda        (scripts/build-cuda.sh --check, below)      check
#   every crate      minimum Rust version                                    check; model's unit tests
echo "test.sh: feature matrix" >&2
cargo check -p schedlm --no-default-features --all-targets
cargo test -p schedlm-solver --no-default-features --lib -q
cargo test -p schedlm-eval --features tls --lib -q
cargo check -p schedlm-eval --no-default-features
msrv="$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)"
if command -v rustup >/dev/null 2>&1 && rustup toolchain install "$msrv" --profile minimal >&2; then
  cargo "+$msrv" check --workspace --all-targets
  cargo "+$msrv" test -p schedlm-model --lib -q
else
  skipped "minimum Rust $msrv" "rustup could not install it"
fi
# The `cuda` feature, checked with NVIDIA's compiler and headers from PyPI (no toolkit, no GPU:
# scripts/build-cuda.sh --check). The wheels take about 3 GB: skipped with less than 10 GB free
# or SCHEDLM_TEST_CUDA=0.
free_gb=$(df -Pk . | awk 'NR == 2 { print int($4 / 1048576) }')
if [ "${SCHEDLM_TEST_CUDA:-1}" = 0 ]; then
  skipped "check with --features cuda" "SCHEDLM_TEST_CUDA=0"
elif [ "${free_gb:-0}" -lt 10 ]; then
  skipped "check with --features cuda" "${free_gb:-?} GB free, less than 10 GB"
elif ! ./scripts/build-cuda.sh --check; then
  echo "test.sh: the cuda feature does not build (above)" >&2
  exit 1
elif [ "${free_gb:-0}" -lt 25 ]; then
  # A small disk (a fresh CI machine): the check's files make room for the test builds.
  rm -rf target/cuda-check target/cuda-venv
fi
# A one-node Slurm cluster for tests/slurm.rs, stopped on exit; without one those tests skip.
if conf="$(slurm/cluster.sh start target/slurm)"; then
  export SLURM_CONF="$conf"
  trap 'slurm/cluster.sh stop target/slurm' EXIT
else
  echo "test.sh: no Slurm cluster: tests/slurm.rs will be skipped" >&2
fi
# What the setup provided: a test that would skip for one of these fails instead
# (schedlm_model::skips), so a skip where its tool is installed is not a quiet `ok`.
require=()
[ -n "${SLURM_CONF:-}" ] && require+=(slurm)
[ "$(id -u)" -eq 0 ] && require+=(root)
[ -r /proc/self/status ] && require+=(procfs)
[ -f target/models/all-MiniLM-L6-v2/model.safetensors ] && require+=(minilm)
[ -f "${SCHEDLM_SMOLLM2_GGUF:-target/models/SmolLM2-135M-Instruct.Q4_1.gguf}" ] && require+=(smollm2)
for module in trl datasets; do
  python3 -c "import $module" >/dev/null 2>&1 && require+=("$module")
done
SCHEDLM_REQUIRE="${SCHEDLM_REQUIRE:-$(IFS=,; echo "${require[*]}")}"
export SCHEDLM_REQUIRE
echo "test.sh: required (a test that skips for one of these fails): ${SCHEDLM_REQUIRE:-none}" >&2
cargo test --workspace
./scripts/test-python.sh
if command -v chromium >/dev/null 2>&1; then
  SCHEDLM=target/debug/schedlm bash tests/browser/check_report.sh
else
  skipped "browser check" "Chromium is not installed"
fi
count="$(sort -u "$SCHEDLM_SKIP_LOG" | grep -c . || true)"
echo "test.sh: all checks passed; $count skipped:" >&2
sort -u "$SCHEDLM_SKIP_LOG" | sed 's/^/  skipped /' >&2
