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


def test_a_trained_scorer_rolls_out_in_schedlm_as_in_pytorch(cli, tmp_path):
    """train_scorer.py --smoke trains and exports a scorer; `schedlm eval` loads it and its
    greedy rollouts reach the values the PyTorch model's rollouts reach, instance by instance."""
    pytest.importorskip("torch", reason="torch is not installed")
    import csv
    import json
    import os

    from conftest import binary_path

    out = tmp_path / "scorer"
    env = {**os.environ, "SCHEDLM_BIN": str(binary_path())}
    done = subprocess.run([sys.executable, str(EXAMPLES / "train_scorer.py"), "--smoke",
                           "--out", str(out)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(next(l for l in done.stdout.splitlines() if l.startswith("{")))
    assert result["instances"] == 8 and result["wins"] + result["ties"] + result["losses"] == 8

    sys.path.insert(0, str(EXAMPLES))
    import train_scorer
    import schedlm

    model, bonus = train_scorer.load(out)
    data = tmp_path / "data"
    cli("dataset", "build", "--family", "uniform", "-n", 6, "--queue", "6..8", "--seed", 5,
        "--split", "0/0/100", "--work-limit", 200000, "--out", data, "-q")
    records = [json.loads(l) for l in open(data / "test.jsonl")]
    cli("eval", "--data", data / "test.jsonl", "--policies", f"model:{out}", "--report",
        tmp_path / "rep", "-q")
    with open(tmp_path / "rep" / "instances.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["policy"] == f"model:{out}"]
    assert len(rows) == len(records)
    import torch
    with torch.no_grad():
        for record, row in zip(records, rows):
            mine, _ = train_scorer.rollout(model, record["instance"], "bsld", "serial",
                                           bonus=bonus)
            assert abs(mine - float(row["value"])) <= 1e-9 * max(1.0, mine), (record["id"], row)


def test_free_answers_reports_both_scores():
    out = run(EXAMPLES / "free_answers.py", "uniform", 4, 5, 6)
    assert "ranking, headroom score: mean" in out and "ect listing" in out, out
