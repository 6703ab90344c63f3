#!/usr/bin/env bash
# The project's test command: what CI runs (.ci/run) and what a developer runs before pushing.
# Installs missing system packages and test data, then checks formatting, lints (every public
# item documented, every doc link resolving), runs every test, and renders an eval report in
# headless Chromium; builds the Python package and runs its tests (scripts/test-python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# A one-off build: incremental state would only add gigabytes to the disk a fresh CI clone has.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

./scripts/setup.sh
./scripts/setup-tests.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps
cargo test --workspace
./scripts/test-python.sh
if command -v chromium >/dev/null 2>&1; then
  SCHEDLM=target/debug/schedlm bash tests/browser/check_report.sh
else
  echo "test.sh: skipped the browser check: Chromium is not installed" >&2
fi
