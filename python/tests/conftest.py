"""Shared fixtures: the `schedlm` binary the Python results are compared with."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def binary_path():
    """The schedlm binary the tests run: SCHEDLM_BIN, else target/debug/schedlm."""
    return Path(os.environ.get("SCHEDLM_BIN", ROOT / "target" / "debug" / "schedlm"))


@pytest.fixture(scope="session")
def cli():
    """Runs the schedlm binary (SCHEDLM_BIN, else target/debug/schedlm, which `cargo test`
    builds) and returns its stdout; a failure fails the test with the command's stderr."""
    binary = binary_path()
    if not binary.exists():
        pytest.fail(f"{binary} is missing: build it (cargo build) or set SCHEDLM_BIN")

    def run(*args, cwd=None):
        done = subprocess.run([str(binary), *map(str, args)], cwd=cwd, capture_output=True,
                              text=True)
        if done.returncode != 0:
            pytest.fail(f"schedlm {' '.join(map(str, args))} exited {done.returncode}:\n"
                        f"{done.stderr}")
        return done.stdout

    return run
