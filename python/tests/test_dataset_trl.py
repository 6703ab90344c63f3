"""The reasoning-gym-style dataset is a function of its seed; TRL's GRPOTrainer trains with
schedlm.trl.reward."""

import json

import pytest

import schedlm
from schedlm import Dataset


def test_dataset_is_deterministic_by_seed():
    a, b = Dataset(size=6, seed=3), Dataset(size=6, seed=3)
    assert len(a) == 6
    assert [a[k] for k in range(6)] == list(b)
    assert [e["question"] for e in Dataset(size=6, seed=4)] != [e["question"] for e in a]
    assert a[-1] == a[5]
    with pytest.raises(IndexError):
        a[6]


def test_dataset_scores_answers():
    data = Dataset(family="hpc", queue=(6, 7), size=4, seed=2)
    for entry in data:
        assert data.score_answer(entry["answer"], entry) == 1.0
        assert data.score_answer("no idea", entry) == 0.0
        assert data.score_answer(None, entry) == 0.0
        meta = entry["metadata"]
        ranking = " ".join(f"J{k}" for k in range(1, len(meta["instance"]["queue"]) + 1))
        # The ranking the prompt gives away earns nothing unless it is as good as the label.
        s = data.score_answer(ranking, entry)
        assert s == (1.0 if meta["brpi_value"] <= meta["value"] * (1 + 1e-9) else 0.0)


def test_trl_reward_reads_the_record_columns(cli, tmp_path):
    out = tmp_path / "d"
    cli("dataset", "build", "-q", "-n", 8, "--family", "uniform,dl", "--queue", "5..6",
        "--split", "100/0/0", "--format", "prompt-completion", "--out", out)
    datasets = pytest.importorskip("datasets")
    rows = datasets.load_dataset("json", data_files=str(out / "train.jsonl"))["train"]
    from schedlm.trl import reward
    good = [r["completion"] for r in rows]
    conv = [[{"role": "assistant", "content": r["completion"]}] for r in rows]
    cols = {k: rows[k] for k in ("instance", "template", "objective", "variant")}
    want = [schedlm.reward(json.loads(json.dumps(r["instance"])), r["completion"]) for r in rows]
    assert reward(good, **cols) == want == reward(conv, **cols)
    assert reward(["nonsense"] * len(rows), **cols) == [-1.0] * len(rows)
    with pytest.raises(ValueError, match="instance"):
        reward(good)


def test_grpo_trainer_trains_with_the_reward(cli, tmp_path):
    pytest.importorskip("trl")
    pytest.importorskip("datasets")
    from check_grpo import run_grpo
    out = tmp_path / "d"
    cli("dataset", "build", "-q", "-n", 8, "--family", "uniform", "--queue", 3,
        "--split", "100/0/0", "--format", "prompt-completion", "--out", out)
    seen = run_grpo(out / "train.jsonl", tmp_path / "run")
    assert len(seen) >= 16
    # Every reward TRL got is the schedlm reward of that completion on its record.
    for instance, completion, r in seen:
        assert r == schedlm.reward(json.loads(json.dumps(instance)), completion)
    # The rewards changed with the answers: valid orders above -1, invalid ones at -1.
    rewards = [r for _, _, r in seen]
    assert min(rewards) == schedlm.INVALID_REWARD < max(rewards), rewards
