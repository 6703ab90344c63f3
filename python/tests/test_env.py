"""schedlm.StepEnv renders the states `dataset build --records steps` writes, byte for byte;
its rollouts are the dispatcher's; the batch steps like single environments."""

import csv
import json
from collections import defaultdict

import pytest

import schedlm
from schedlm import StepEnv, StepEnvBatch


def step_records(cli, tmp_path, template, *flags):
    out = tmp_path / template
    # Step records render step-v1 from compact-v2 (its ranking and units).
    flag = "compact-v2" if template == "step-v1" else template
    cli("dataset", "build", "-q", "-n", 8, "--family", "uniform,hpc", "--queue", "4..7",
        "--deps", "0.3", "--records", "steps", "--template", flag, "--split", "100/0/0",
        "--format", "prompt-completion", "--out", out, *flags)
    groups = defaultdict(list)
    for line in (out / "train.jsonl").read_text().splitlines():
        rec = json.loads(line)
        groups[rec["id"].rsplit("-s", 1)[0]].append(rec)
    assert len(groups) == 8
    return [sorted(g, key=lambda r: r["step"]) for g in groups.values()]


@pytest.mark.parametrize("template,flags", [
    ("step-v2", []),
    ("step-v2", ["--objective", "wait", "--strict"]),
    ("step-v1", []),
])
def test_stepping_along_a_label_renders_its_step_records(cli, tmp_path, template, flags):
    for records in step_records(cli, tmp_path, template, *flags):
        first = records[0]
        assert first["template"] == template
        env = StepEnv(first["instance"], objective=first["objective"], template=template,
                      variant=first["variant"])
        obs = env.reset()
        for rec in records:
            assert not env.done
            assert obs["prompt"] == rec["prompt"]
            assert obs["messages"] == [
                {"role": "system", "content": obs["system"]},
                {"role": "user", "content": obs["user"]},
            ]
            assert rec["completion"] in obs["candidates"]
            obs, reward, done = env.step(rec["completion"])
            assert reward == 0.0 or done
        # The last decision is forced: the environment takes it.
        assert env.done and done
        assert env.order == [j for j in first["order"] if j in env.order]
        assert sorted(env.order) == sorted(first["order"])
        assert env.value == pytest.approx(first["value"], rel=1e-12)
        assert env.observation["candidates"] == []


def test_following_the_listing_is_the_ect_rule(cli, tmp_path):
    cli("dataset", "build", "-q", "-n", 8, "--family", "hpc,uniform", "--queue", "5..9",
        "--deps", "0.2", "--split", "100/0/0", "--out", tmp_path / "d")
    cli("eval", "-q", "--data", tmp_path / "d" / "train.jsonl", "--policies", "ect",
        "-o", tmp_path / "ev")
    rows = list(csv.DictReader((tmp_path / "ev" / "instances.csv").open()))
    ect = {int(r["line"]): float(r["value"]) for r in rows if r["policy"] == "ect"}
    records = (tmp_path / "d" / "train.jsonl").read_text().splitlines()
    assert sorted(ect) == list(range(1, len(records) + 1))
    for line, text in enumerate(records, 1):
        inst = json.loads(text)["instance"]
        env = StepEnv(inst)
        k = 0
        while not env.done:
            assert env.observation["candidates"][0] == "J1"
            env.step(0 if k % 2 else "J1")
            k += 1
        assert env.value == pytest.approx(ect[line], rel=1e-12)
        assert env.value == schedlm.reference(inst)["ect"]


def test_refused_choices_are_value_errors_naming_them():
    inst = schedlm.generate("uniform", queue=6, count=1, seed=2, deps=0.5)[0]
    env = StepEnv(inst)
    before = env.observation
    n = len(before["candidates"])
    for bad in ["J99", "S1", "", n, -1, 2.5]:
        with pytest.raises(ValueError, match="not a") as e:
            env.step(bad)
        if isinstance(bad, str) and bad:
            assert f"`{bad}`" in str(e.value)
            assert "choose one of " + ", ".join(before["candidates"]) in str(e.value)
    assert env.observation == before
    env.step(before["candidates"][-1])
    placed = env.order[0]
    assert placed == before["jobs"][-1]
    with pytest.raises(ValueError, match="does not render one decision"):
        StepEnv(inst, template="compact-v2")
    with pytest.raises(ValueError, match="unknown objective"):
        StepEnv(inst, objective="speed")
    while not env.done:
        env.step(0)
    with pytest.raises(ValueError, match="every job is placed"):
        env.step(0)
    env.reset()
    assert env.order == [] and env.value is None and env.reward() is None


def test_rewards_are_headroom_scores_against_the_best_known_value():
    inst = schedlm.generate("hpc", queue=8, count=1, seed=9, wide=0.3)[0]
    rec = schedlm.label(inst, template="step-v2")
    env = StepEnv(inst)
    assert env.best() == rec["value"]       # solved as `schedlm.label` solves it
    while not env.done:
        env.step(0)
    assert env.reward() == 0.0               # the listing gives away nothing to learn
    env.reset()
    for k, j in enumerate(rec["order"]):
        if env.done:
            break
        ids = env.observation
        obs, reward, done = env.step(ids["candidates"][ids["jobs"].index(j)])
    assert env.value == pytest.approx(rec["value"], rel=1e-12)
    assert reward == env.reward() == 1.0
    given = StepEnv(inst, best=env.value / 2)
    while not given.done:
        given.step(0)
    assert given.best() == env.value / 2 and given.reward() == 0.0


def test_a_batch_steps_as_its_environments_do():
    lines = schedlm.generate_json("uniform", queue=(3, 7), count=12, seed=5, deps=0.2)
    batch = StepEnvBatch(lines, bests=[1.0] * len(lines))
    singles = [StepEnv(line, best=1.0) for line in lines]
    assert len(batch) == 12
    obs = batch.reset()
    step = 0
    while not all(batch.done):
        assert obs == [e.observation for e in singles]
        choices = [None if e.done else (step + k) % len(e.observation["candidates"])
                   for k, e in enumerate(singles)]
        for e, c in zip(singles, choices):
            if c is not None:
                e.step(c)
        obs = batch.step(choices)
        step += 1
    assert batch.orders == [e.order for e in singles]
    assert batch.values == [e.value for e in singles]
    assert batch.rewards() == [e.reward() for e in singles]
    # A refused choice places nothing anywhere.
    batch.reset()
    before = batch.observations
    with pytest.raises(ValueError, match="env 3: `J42`"):
        batch.step(["J1"] * 3 + ["J42"] + ["J1"] * 8)
    assert batch.observations == before
    with pytest.raises(ValueError, match="12 instance"):
        batch.step(["J1"])


def test_features_listing_values_and_action_values_describe_every_candidate():
    """Each candidate has a row of FEATURES (none once finished); following the listing after J1 is the ect value;
    the action values' best candidate has regret 0 and no value is below a proven optimum
    found by following J1 all the way."""
    inst = schedlm.generate("uniform", queue=(8, 10), count=1, seed=7)[0]
    env = schedlm.StepEnv(inst, best=1.0)
    obs = env.observation
    n = len(obs["candidates"])
    features = env.features()
    assert len(features) == n
    assert all(len(row) == len(schedlm.FEATURES) for row in features)
    assert schedlm.FEATURES_VERSION == "candidates-v3"
    first = schedlm.FEATURES.index("is_first")
    assert [row[first] for row in features] == [1.0] + [0.0] * (n - 1)
    listing = env.listing_values()
    assert len(listing) == n
    assert listing[0] == pytest.approx(schedlm.reference(inst)["ect"], rel=1e-12)
    values = env.values(work_limit=20000)
    assert [v["id"] for v in values] == obs["candidates"]
    assert min(v["regret"] for v in values) == 0.0
    # The search starts from the ect order, whose next job is J1: J1's value is at most ect's.
    assert values[0]["value"] <= listing[0] * (1 + 1e-12)
    with pytest.raises(ValueError, match="`nope` is not a queued job"):
        env.values(reference=["nope"])
    while not env.done:
        env.step(0)
    assert env.features() == []
