"""The examples in python/examples run (small sizes)."""

import subprocess
import sys

import pytest

from conftest import ROOT

EXAMPLES = ROOT / "python" / "examples"


def run(*args):
    done = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def test_step_policy_trains_and_rolls_out():
    pytest.importorskip("torch", reason="torch is not installed")
    out = run(EXAMPLES / "step_policy.py", "--train", 6, "--test", 3, "--epochs", 2)
    assert "held-out mean headroom score: policy" in out, out


def test_free_answers_reports_both_scores():
    out = run(EXAMPLES / "free_answers.py", "uniform", 4, 5, 6)
    assert "ranking, headroom score: mean" in out and "ect listing" in out, out
