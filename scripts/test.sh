#!/usr/bin/env bash
# The project's test command: what CI runs (.ci/run) and what a developer runs before pushing.
# Installs missing system packages, then checks formatting, lints and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
