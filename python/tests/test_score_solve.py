"""score() equals `schedlm eval` on 1,000 answers; solve() and label() equal the CLI."""

import csv
import json
import math
import random
import warnings

import pytest

import schedlm


def answers_for(record, rng):
    """A valid, an invalid, a partial or an unparsable answer, in turn."""
    ids = record["completion"].split("\n")[0].split()
    kind = rng.randrange(6)
    if kind == 0:
        return " ".join(ids)                       # the label
    if kind == 1:
        shuffled = ids[:]
        rng.shuffle(shuffled)
        return " ".join(shuffled)                  # another valid order
    if kind == 2:
        return " ".join(ids[: max(1, len(ids) - 2)])  # partial
    if kind == 3:
        return " ".join(ids + [ids[0]])            # duplicate
    if kind == 4:
        return "I would run the short jobs first."  # unparsable
    return "Order: " + ", ".join(ids) + "\nbecause"  # extra text


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def test_score_equals_eval_on_1000_answers(cli, tmp_path):
    data = tmp_path / "d"
    cli("dataset", "build", "-q", "-n", 1000, "--family", "uniform,hpc,dl", "--queue", "4..7",
        "--split", "100/0/0", "--format", "both", "--time-limit", "2s", "--out", data)
    records = [json.loads(x) for x in (data / "train.jsonl").read_text().splitlines()]
    assert len(records) == 1000
    rng = random.Random(5)
    answers = [answers_for(r, rng) for r in records]
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"id": r["id"], "output": a}) + "\n"
                             for r, a in zip(records, answers)))
    out = tmp_path / "e"
    cli("eval", "--data", data / "train.jsonl", "--policies", f"predictions:{preds}", "-o", out,
        "--quiet")
    rows = {row["record"]: row for row in csv.DictReader(open(out / "instances.csv"))}
    refs = [r["value"] if r["proven_optimal"] else r["lower_bound"] for r in records]
    scores = schedlm.score_many([r["instance"] for r in records], answers, references=refs)
    kinds = {"valid": 0, "invalid": 0}
    for r, a, s in zip(records, answers, scores):
        row = rows[r["id"]]
        assert s["valid"] == (row["valid"] == "true"), (a, row)
        kinds["valid" if s["valid"] else "invalid"] += 1
        assert close(s["value"], float(row["value"])), (a, s, row)
        assert close(s["lenient_value"], float(row["lenient_value"])), (a, s, row)
        assert close(s["fcfs_value"], float(row["fcfs_value"]))
        assert close(s["brpi_value"], float(row["best_rule_value"]))
        assert (s["reason"] or "") == row["defects"]
        if row["gap"]:
            assert close(s["gap"], float(row["gap"])) or (s["gap"] < 1e-9 and row["optimal"] == "true")
        # One answer alone scores as in the batch.
        if rng.random() < 0.05:
            assert schedlm.score(r["instance"], a, reference=refs[records.index(r)]) == s
    assert kinds["valid"] > 200 and kinds["invalid"] > 200, kinds


def test_a_record_brings_its_settings_and_reference(cli, tmp_path):
    data = tmp_path / "d"
    cli("dataset", "build", "-q", "-n", 6, "--family", "hpc", "--queue", "5..6",
        "--objective", "wait", "--template", "compact-v1", "--split", "100/0/0",
        "--format", "both", "--out", data)
    for line in (data / "train.jsonl").read_text().splitlines():
        record = json.loads(line)
        ref = record["value"] if record["proven_optimal"] else record["lower_bound"]
        by_record = schedlm.score(record, record["completion"])
        explicit = schedlm.score(record["instance"], record["completion"], template="compact-v1",
                                 objective="wait", reference=ref)
        assert by_record == explicit
        assert by_record["valid"] and close(by_record["value"], record["value"])
        assert by_record["gap"] is not None
        assert schedlm.reward(record, record["completion"]) == explicit["reward"]
        assert schedlm.reward_many([record], [record["completion"]]) == [explicit["reward"]]
    assert schedlm.score_many([], []) == [] and schedlm.reward_many([], []) == []


def test_reward_follows_the_formula_and_matches_score():
    inst = schedlm.generate("uniform", queue=8, count=1, seed=4)[0]
    ranking = " ".join(f"J{k}" for k in range(1, 9))
    assert schedlm.reward(inst, ranking) == 0.0
    assert schedlm.reward(inst, "J1 J2") == schedlm.INVALID_REWARD
    label = schedlm.label(inst, time_limit=5)
    s = schedlm.score(inst, label["completion"])
    assert s["valid"]
    assert math.isclose(s["reward"], s["brpi_value"] / s["answer_value"] - 1, rel_tol=1e-12)
    assert schedlm.reward(inst, label["completion"]) == s["reward"] >= 0.0
    many = schedlm.reward_many([inst] * 3, [ranking, "x", label["completion"]])
    assert many == [0.0, -1.0, s["reward"]]


def test_errors_carry_the_cli_messages():
    with pytest.raises(ValueError, match="not an instance"):
        schedlm.score({"now": 0}, "J1")
    inst = schedlm.generate("uniform", queue=6, count=1, seed=1)[0]
    with pytest.raises(ValueError, match="unknown objective"):
        schedlm.score(inst, "J1", objective="latency")
    with pytest.raises(ValueError, match="1 instance"):
        schedlm.reward_many([inst], ["J1", "J2"])
    bad = dict(inst, queue=[dict(inst["queue"][0], walltime=-5)] + inst["queue"][1:])
    with pytest.raises(ValueError, match="walltime"):
        schedlm.solve(bad)


def test_unknown_fields_are_errors_unless_allowed_with_a_warning():
    inst = schedlm.generate("uniform", queue=6, count=1, seed=1)[0]
    job = inst["queue"][0]["id"]
    newer = dict(inst, origin="v9",
                 queue=[dict(inst["queue"][0], dep="x")] + inst["queue"][1:])
    # Without it: the error names the field and its job, as the command line's does.
    for call in (lambda **a: schedlm.render(newer, **a),
                 lambda **a: schedlm.score(newer, "J1", **a),
                 lambda **a: schedlm.reward_many([newer], ["J1"], **a),
                 lambda **a: schedlm.solve(newer, work_limit=100_000, **a),
                 lambda **a: schedlm.label(newer, **a)):
        with pytest.raises(ValueError, match=f'queue job "{job}": unknown field "dep"'):
            call()
        # With it: the answer of the instance without them, and one warning naming them.
        with pytest.warns(UserWarning, match='top-level field "origin"; queue job field "dep"'):
            call(allow_unknown_fields=True)
    with pytest.warns(UserWarning, match="allow_unknown_fields"):
        assert schedlm.render(newer, allow_unknown_fields=True) == schedlm.render(inst)
    with pytest.warns(UserWarning):
        assert (schedlm.reward_many([newer, inst], ["J1", "J1"], allow_unknown_fields=True)
                == schedlm.reward_many([inst, inst], ["J1", "J1"]))
    with pytest.warns(UserWarning):
        got = schedlm.label(newer, allow_unknown_fields=True)
    assert got == schedlm.label(inst)
    # Nothing unknown: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert schedlm.score(inst, "J1", allow_unknown_fields=True) == schedlm.score(inst, "J1")


@pytest.mark.parametrize("solver", ["auto", "bnb", "ls"])
def test_solve_equals_the_cli(cli, tmp_path, solver):
    lines = schedlm.generate_json("hpc", queue=(6, 9), count=8, seed=2)
    path = tmp_path / "i.jsonl"
    path.write_text("".join(x + "\n" for x in lines))
    out = cli("solve", path, "--solver", solver, "--node-limit", 3000, "--time-limit", "60s",
              "-j", 1)
    for line, expected in zip(lines, out.splitlines()):
        want = json.loads(expected)
        got = schedlm.solve(line, solver=solver, node_limit=3000, time_limit=60)
        for d in (want, got):
            d.pop("time_ms")
        want.pop("line")
        assert got == want


def test_label_is_the_dataset_record(cli, tmp_path):
    lines = schedlm.generate_json("uniform", queue=(5, 7), count=6, seed=9)
    path = tmp_path / "i.jsonl"
    path.write_text("".join(x + "\n" for x in lines))
    out = tmp_path / "d"
    cli("dataset", "build", "-q", "--from", path, "--label", "mine", "--split", "100/0/0", "--format", "both",
        "--node-limit", 5000, "--time-limit", "60s", "--out", out)
    for line in (out / "train.jsonl").read_text().splitlines():
        want = json.loads(line)
        got = schedlm.label(want["instance"], index=want["index"], family="mine",
                            node_limit=5000, time_limit=60)
        for d in (want, got):
            d.pop("split")
        assert got["completion"] == want["completion"]
        assert got["order"] == want["order"] and got["value"] == want["value"]
        assert got == want


def test_work_limited_labels_are_repeatable_and_state_their_budget():
    inst = schedlm.generate("uniform", queue=(16, 20), count=1, seed=5)[0]
    a = schedlm.label(inst, work_limit=300_000)
    assert a == schedlm.label(inst, work_limit=300_000)
    assert a["budget"] == {"work_limit": 300_000}
    assert 0 < a["work"] <= 400_000
    assert a["status"] in ("optimal", "work_limit")
    solved = schedlm.solve(inst, work_limit=300_000)
    assert solved["budget"] == {"work_limit": 300_000}
    assert solved["order"] == schedlm.solve(inst, work_limit=300_000)["order"]
    assert schedlm.DEFAULT_WORK_LIMIT == 12_000_000
    with pytest.raises(ValueError, match="work_limit or a time_limit"):
        schedlm.label(inst, work_limit=None)
