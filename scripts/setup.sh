#!/usr/bin/env bash
# Installs the system packages schedlm needs to build on a fresh Debian/Ubuntu machine:
# cmake and libclang (for the HiGHS MILP solver, built from source by the `highs-sys` crate).
# Does nothing when they are already there.
set -euo pipefail

need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
if ! ldconfig -p 2>/dev/null | grep -qE 'libclang(-[0-9.]+)?\.so'; then
  need+=(libclang-dev)
fi
command -v c++ >/dev/null 2>&1 || need+=(g++)

# Python's Hugging Face `datasets`, for the test that loads a built dataset with it (the
# test is skipped when it cannot be installed).
if command -v python3 >/dev/null 2>&1 && ! python3 -c "import datasets" >/dev/null 2>&1; then
  echo "setup: pip install datasets" >&2
  python3 -m pip install --quiet --disable-pip-version-check datasets >&2 ||
    echo "setup: could not install datasets; its test will be skipped" >&2
fi

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${need[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
  sudo=""
elif command -v sudo >/dev/null 2>&1; then
  sudo="sudo"
else
  echo "setup: need ${need[*]}; run as root or install them with your package manager" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${need[@]}" >/dev/null
