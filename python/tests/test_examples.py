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
    """train_scorer.py --smoke trains and exports a scorer; `schedlm eval` loads it (and the
    shipped B7 scorer) and its greedy rollouts reach the values the PyTorch model's rollouts
    reach, instance by instance."""
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

    data = tmp_path / "data"
    cli("dataset", "build", "--family", "uniform", "-n", 6, "--queue", "6..8", "--seed", 5,
        "--split", "0/0/100", "--work-limit", 200000, "--out", data, "-q")
    records = [json.loads(l) for l in open(data / "test.jsonl")]
    # The scorer just trained, and the shipped B7 one, whose earlier feature set
    # (candidates-v2) is the first columns of today's rows.
    shipped = ROOT / "models" / "b7-uniform"
    for k, scorer in enumerate([out, shipped]):
        model, bonus = train_scorer.load(scorer)
        report = tmp_path / f"rep{k}"
        cli("eval", "--data", data / "test.jsonl", "--policies", f"model:{scorer}", "--report",
            report, "-q")
        with open(report / "instances.csv") as f:
            rows = [r for r in csv.DictReader(f) if r["policy"] == f"model:{scorer}"]
        assert len(rows) == len(records)
        import torch
        with torch.no_grad():
            for record, row in zip(records, rows):
                mine, _ = train_scorer.rollout(model, record["instance"], "bsld", "serial",
                                               bonus=bonus)
                assert abs(mine - float(row["value"])) <= 1e-9 * max(1.0, mine), (
                    scorer, record["id"], row)


def test_free_answers_reports_both_scores():
    out = run(EXAMPLES / "free_answers.py", "uniform", 4, 5, 6)
    assert "ranking, headroom score: mean" in out and "ect listing" in out, out
