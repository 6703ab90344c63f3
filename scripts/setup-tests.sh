#!/usr/bin/env bash
# Installs what the test suite needs beyond the build (scripts/setup.sh): headless Chromium for
# the report rendering check (tests/browser/check_report.sh), Python's Hugging Face `datasets`
# and TRL for the dataset format checks (tests/python_datasets.rs), the SmolLM2-135M-Instruct
# GGUF for the pretrained-model tests (scripts/fetch-smollm2.sh), and the all-MiniLM-L6-v2
# sentence-embedding model for matching jobs by text (scripts/fetch-minilm.sh), and Slurm
# (slurm-wlm, munge) for the tests against a running cluster. Each step that fails is
# reported and the test that needs it is skipped; nothing else depends on them.
set -uo pipefail
cd "$(dirname "$0")/.."

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v unzip >/dev/null 2>&1 || need+=(unzip)
# A one-node Slurm cluster for tests/slurm.rs (slurm/cluster.sh).
command -v slurmctld >/dev/null 2>&1 || need+=(slurm-wlm)
command -v munged >/dev/null 2>&1 || need+=(munge)
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

# TRL, for the fine-tuning tool check (tests/python_datasets.rs, check_trl.py). It brings
# PyTorch from PyPI with its CUDA libraries (about 6 GB installed, 1.5 minutes here); the
# CPU-only wheels live on download.pytorch.org, which CI machines cannot reach. Skipped when
# less than 15 GB are free or SCHEDLM_TEST_TRL=0; the test then says it was skipped.
free_gb=$(df -Pk "${HOME:-/}" 2>/dev/null | awk 'NR == 2 { print int($4 / 1048576) }')
if [ "${SCHEDLM_TEST_TRL:-1}" != 0 ] && command -v python3 >/dev/null 2>&1 &&
  ! python3 -c "import trl" >/dev/null 2>&1; then
  if [ "${free_gb:-0}" -ge 15 ]; then
    echo "setup-tests: pip install trl (with PyTorch)" >&2
    python3 -m pip install --quiet --disable-pip-version-check trl >&2 ||
      echo "setup-tests: could not install trl; its test will be skipped" >&2
  else
    echo "setup-tests: ${free_gb:-?} GB free, less than the 15 GB TRL and PyTorch need; its test will be skipped" >&2
  fi
fi

./scripts/fetch-smollm2.sh || echo "setup-tests: could not fetch SmolLM2; its tests will be skipped" >&2
./scripts/fetch-minilm.sh || echo "setup-tests: could not fetch MiniLM; its tests will be skipped" >&2
exit 0
