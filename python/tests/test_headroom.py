"""The headroom score: in [0, 1], 0 for the prompt's free answers, 1 for the label; the
Dataset and reasoning-gym forms score with it; TRL's reward functions take Dataset rows."""

import importlib
import itertools
import json

import pytest

import schedlm
from schedlm import Dataset


def formula(value, reference, best):
    """The headroom score as docs/python.md states it."""
    if value is None:
        return 0.0
    if value <= best * (1 + 1e-9):
        return 1.0
    if reference <= best * (1 + 1e-9):
        return 0.0
    return min(1.0, max(0.0, (reference - value) / (reference - best)))


def test_headroom_follows_the_formula_on_every_order():
    instances = schedlm.generate("hpc", queue=5, count=4, seed=8, wide=0.3)
    for inst in instances:
        rec = schedlm.label(inst)
        ref = schedlm.reference(inst)
        assert ref["reference"] == min(ref["brpi"], ref["ect"])
        answers = [" ".join(f"J{k}" for k in p) for p in itertools.permutations(range(1, 6))]
        answers += ["nonsense", "J1 J1 J2 J3 J4"]
        scores = schedlm.headroom_many([rec] * len(answers), answers)
        values = [s["answer_value"] for s in schedlm.score_many([rec] * len(answers), answers)]
        for answer, score, value in zip(answers, scores, values):
            assert 0.0 <= score <= 1.0
            assert score == pytest.approx(formula(value, ref["reference"], rec["value"]),
                                          abs=1e-12), answer
        assert schedlm.headroom(rec, rec["completion"]) == 1.0
        assert schedlm.headroom(inst, answers[0], best=ref["brpi"]) == 1.0  # J1..J5: BRPI
        ranking = schedlm.headroom(rec, answers[0])
        assert ranking == (1.0 if ref["brpi"] <= rec["value"] * (1 + 1e-9) else 0.0)
        assert schedlm.score(rec, answers[0])["ect_value"] == ref["ect"]
    with pytest.raises(ValueError, match="best known value"):
        schedlm.headroom(instances[0], "J1")


def test_dataset_scores_the_share_of_the_headroom():
    data = Dataset(family="hpc", queue=(6, 7), size=6, seed=2, wide=0.3)
    free = []
    for k, entry in enumerate(data):
        meta = entry["metadata"]
        assert (meta["source_dataset"], meta["source_index"]) == ("schedlm", k)
        assert meta["difficulty"] == {"queue": (6, 7), "family": "hpc", "min_headroom": None}
        assert meta["index"] == k
        assert meta["label_difficulty"]["brpi_value"] == meta["brpi_value"]
        assert data.score_answer(entry["answer"], entry) == 1.0
        assert data.score_answer("no idea", entry) == 0.0
        assert data.score_answer(None, entry) == 0.0
        ranking = " ".join(f"J{j}" for j in range(1, len(meta["instance"]["queue"]) + 1))
        s = data.score_answer(ranking, entry)
        assert s == schedlm.headroom(meta["instance"], ranking, best=meta["value"])
        assert s in (0.0, 1.0)
        assert (s == 1.0) == (meta["brpi_value"] <= meta["value"] * (1 + 1e-9))
        free.append(s)
    # Settings with headroom: the ranking earns nothing on most entries.
    assert sum(free) < len(free)


def test_min_headroom_keeps_the_instances_the_free_answers_do_not_solve():
    plain = Dataset(family="uniform", queue=(6, 8), size=100, seed=2)
    data = Dataset(family="uniform", queue=(6, 8), size=2, seed=2, min_headroom=0.01)
    kept = []
    for k, entry in enumerate(data):
        meta = entry["metadata"]
        free = schedlm.reference(meta["instance"])["reference"]
        assert free > meta["value"] * 1.01
        ranking = " ".join(f"J{j}" for j in range(1, len(meta["instance"]["queue"]) + 1))
        assert data.score_answer(ranking, entry) == 0.0
        assert data.score_answer(entry["answer"], entry) == 1.0
        assert meta["source_index"] == k and meta["difficulty"]["min_headroom"] == 0.01
        # Entry k is the k-th instance of the plain stream with that headroom.
        other = plain[meta["index"]]
        assert other["question"] == entry["question"] and other["answer"] == entry["answer"]
        kept.append(meta["index"])
    skipped = [i for i in range(kept[-1]) if i not in kept]
    for i in skipped:
        meta = plain[i]["metadata"]
        assert schedlm.reference(meta["instance"])["reference"] <= meta["value"] * 1.01
    with pytest.raises(ValueError, match="found 0 instance"):
        Dataset(queue=1, size=2, min_headroom=0.01)[0]
    with pytest.raises(ValueError, match="min_headroom"):
        Dataset(min_headroom=0)


def test_trl_reward_functions_take_dataset_rows_as_they_are():
    datasets = pytest.importorskip("datasets")
    entries = list(Dataset(family="uniform", queue=(4, 6), size=5, seed=7, deps=0.3))
    rows = datasets.Dataset.from_list(entries)         # Arrow: null-filled nested keys
    assert set(rows.column_names) == {"question", "answer", "metadata"}
    from schedlm.trl import headroom, reward
    columns = {k: rows[k] for k in rows.column_names}
    answers = [e["answer"] for e in entries]
    ranking = [" ".join(f"J{j}" for j in range(1, len(e["metadata"]["instance"]["queue"]) + 1))
               for e in entries]
    for completions in (answers, ranking, ["nonsense"] * 5):
        assert reward(completions, **columns) == [
            schedlm.reward(e, c) for e, c in zip(entries, completions)]
        assert headroom(completions, **columns) == [
            schedlm.headroom(e, c) for e, c in zip(entries, completions)]
    assert headroom(answers, **columns) == [1.0] * 5
    with pytest.raises(ValueError, match="value"):
        headroom(answers, instance=[e["metadata"]["instance"] for e in entries])


def test_reasoning_gym_form_works_without_reasoning_gym():
    from schedlm.reasoning_gym import (DATASET_NAME, HAVE_REASONING_GYM, SchedlmConfig,
                                       SchedlmDataset, register)
    config = SchedlmConfig(family="uniform", min_queue=4, max_queue=6, seed=3, size=4)
    data = SchedlmDataset(config)
    same = Dataset(family="uniform", queue=(4, 6), size=4, seed=3)
    assert len(data) == 4 and list(data) == list(same)
    entry = data[1]
    assert entry["metadata"]["source_dataset"] == DATASET_NAME == "schedlm"
    assert data.score_answer(entry["answer"], entry) == 1.0
    assert data.score_answer("J1", entry) == 0.0
    with pytest.raises(ValueError, match="min_queue"):
        SchedlmDataset(SchedlmConfig(min_queue=5, max_queue=4))
    assert register() == HAVE_REASONING_GYM
    assert SchedlmDataset(SchedlmConfig(size=0)).seed is not None


def test_reasoning_gym_creates_and_scores_the_registered_dataset():
    reasoning_gym = pytest.importorskip("reasoning_gym", reason="reasoning-gym is not installed")
    import schedlm.reasoning_gym as form
    importlib.reload(form)                     # registering twice does nothing
    data = reasoning_gym.create_dataset("schedlm", size=3, seed=5, min_queue=5, max_queue=6)
    assert isinstance(data, reasoning_gym.dataset.ProceduralDataset)
    entries = list(data)
    assert len(entries) == 3
    assert entries == list(Dataset(family="uniform", queue=(5, 6), size=3, seed=5))
    score = reasoning_gym.get_score_answer_fn("schedlm")
    for e in entries:
        assert data.score_answer(e["answer"], e) == 1.0 == score(e["answer"], e)
        assert data.score_answer(None, e) == 0.0
        json.dumps(e["metadata"])              # plain data, as reasoning-gym tools expect
