#!/usr/bin/env bash
# The Python package's tests (python/tests, docs/python.md): builds the `schedlm` wheel from the
# workspace with maturin (dev profile: quick to build, and the tests are light), installs it into
# python3 and runs pytest against the `schedlm` binary of the same build (SCHEDLM_BIN,
# default target/debug/schedlm). Installs maturin and pytest with pip when missing. Called by
# scripts/test.sh after `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."

for module in maturin pytest; do
  if ! python3 -c "import $module" >/dev/null 2>&1; then
    echo "test-python: pip install $module" >&2
    python3 -m pip install --quiet --disable-pip-version-check "$module" >&2
  fi
done
rm -rf target/wheels
python3 -m maturin build --quiet --profile dev -m python/Cargo.toml -o target/wheels >&2
python3 -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall \
  target/wheels/schedlm-*.whl >&2
export SCHEDLM_BIN="${SCHEDLM_BIN:-$PWD/target/debug/schedlm}"
cd python/tests
python3 -m pytest -q -rs -p no:cacheprovider .
