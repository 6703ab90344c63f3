#!/usr/bin/env bash
# Installs what the test suite needs beyond the build (scripts/setup.sh): headless Chromium for
# the report rendering check (tests/browser/check_report.sh), Python's Hugging Face `datasets`
# for the dataset format check (tests/python_datasets.rs; TRL too with SCHEDLM_TEST_TRL=1), and
# the SmolLM2-135M-Instruct GGUF for the pretrained-model tests (scripts/fetch-smollm2.sh). Each step that fails is reported
# and the test that needs it is skipped; nothing else depends on them.
set -uo pipefail
cd "$(dirname "$0")/.."

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v unzip >/dev/null 2>&1 || need+=(unzip)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup-tests: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  { $sudo apt-get update -qq && $sudo apt-get install -y -qq "${need[@]}" >/dev/null; } ||
    echo "setup-tests: could not install ${need[*]}" >&2
fi

if command -v python3 >/dev/null 2>&1 && ! python3 -c "import datasets" >/dev/null 2>&1; then
  echo "setup-tests: pip install datasets" >&2
  python3 -m pip install --quiet --disable-pip-version-check datasets >&2 ||
    echo "setup-tests: could not install datasets; its test will be skipped" >&2
fi

# TRL, for the fine-tuning tool check (tests/python_datasets.rs, check_trl.py), only on request
# (SCHEDLM_TEST_TRL=1): PyTorch from PyPI brings 3-4 GB of CUDA libraries (6 GB installed),
# and the CPU-only wheels live on download.pytorch.org, which CI machines cannot reach. Without
# it the test is skipped with a message; docs/dataset.md records its last run.
if [ "${SCHEDLM_TEST_TRL:-0}" = 1 ] && command -v python3 >/dev/null 2>&1 &&
  ! python3 -c "import trl" >/dev/null 2>&1; then
  echo "setup-tests: pip install trl (with PyTorch)" >&2
  python3 -m pip install --quiet --disable-pip-version-check trl >&2 ||
    echo "setup-tests: could not install trl; its test will be skipped" >&2
fi

./scripts/fetch-smollm2.sh || echo "setup-tests: could not fetch SmolLM2; its tests will be skipped" >&2
exit 0
