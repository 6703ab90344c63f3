"""Train a step scorer in PyTorch on action values, and export it for `schedlm eval`.

A step scorer reads each job a step state offers as a row of numbers (the observation's
``features``: its time, start and end, and what placing it next does to the others; see
docs/learning.md, "Step scorers") and places the best-scored job. It is trained here on the
records of ``schedlm dataset build --records steps --template step-v2 --targets values``:
each state's candidates carry their regret (the best value reachable after them, minus the
best), and the loss is the cross-entropy against soft targets ``softmax(-regret / (T * best))``
(``--loss values``), or against the label's one choice (``--loss label``, for comparison).
An optional second stage fine-tunes the scorer with GRPO on the episode's value (``--grpo``):
groups of sampled rollouts per instance, each scored by its value against the group's mean.

The states are rebuilt by stepping ``schedlm.StepEnv`` along each record's label, so the
features are schedlm's own. After training, the scorer is rolled out greedily on held-out
instances and compared with the earliest-completion rule (``ect``: the first listed job at
every step): mean value, wins/ties/losses and a two-sided sign test. ``--out DIR`` writes
``scorer.json`` and ``scorer.safetensors``, which ``schedlm eval --policies model:DIR`` and
``schedlm predict --model DIR`` load.

On the 2-core CPU machine, 800 snapshots of ``uniform`` 16..20 (13,000 states) train in a few
minutes:

    schedlm dataset build --family uniform -n 800 --queue 16..20 --seed 11 --records steps \\
        --template step-v2 --targets values --split 100/0/0 --out values-data
    python3 python/examples/train_scorer.py values-data/train.jsonl --out scorer-dir

A smoke run (``--smoke``) makes its own data in seconds.
"""

import argparse
import json
import math
import random
import struct
import time
from collections import defaultdict

import torch
from torch import nn

import schedlm


def listing_regrets(env):
    """Each candidate's value when the rest follows the listing, minus the best of them,
    relative to that best."""
    values = env.listing_values()
    best = min(values)
    return torch.tensor([(v - best) / max(best, 1e-9) for v in values], dtype=torch.float32)


def states_of(records):
    """(features [n, F], regrets [n], label index, best, listing regrets [n]) for every record
    with 2+ candidates, rebuilt by stepping StepEnv along each instance's label."""
    by_instance = defaultdict(dict)
    for r in records:
        by_instance[r["id"].rsplit("-s", 1)[0]][r["step"]] = r
    out = []
    for steps in by_instance.values():
        first = next(iter(steps.values()))
        env = schedlm.StepEnv(first["instance"], objective=first["objective"],
                              variant=first["variant"], best=1.0)
        order = first["order"]
        k = 0
        while not env.done:
            obs = env.observation
            r = steps.get(k)
            if r is not None and len(obs["candidates"]) > 1:
                cands = r["values"]["candidates"]
                if [c["id"] for c in cands] != obs["candidates"]:
                    raise ValueError(f"{r['id']}: the record's candidates are not the state's")
                label = obs["candidates"].index(r["messages"][-1]["content"].strip())
                out.append((torch.tensor(env.features(), dtype=torch.float32),
                            torch.tensor([c["regret"] for c in cands], dtype=torch.float32),
                            label, r["values"]["best"], listing_regrets(env)))
            env.step(obs["jobs"].index(order[k]))
            k += 1
    return out


class Scorer(nn.Module):
    """An MLP over each candidate's features, one score out; `pooled`: the second layer also
    reads the mean of the first layer's outputs over the state's candidates; `columns`: the
    positions in a row of ``schedlm.FEATURES`` it reads (all when None; a scorer of an
    earlier feature set reads the first ones)."""

    def __init__(self, features, hidden, mean, std, pooled=False, columns=None):
        super().__init__()
        self.columns = columns
        sizes = [features] + hidden + [1]
        ins = [a * (2 if k == 1 and pooled else 1) for k, a in enumerate(sizes[:-1])]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(ins, sizes[1:]))
        self.pooled = pooled
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)

    def forward(self, x, mask=None):
        """x: [candidates, F] or [states, candidates, F] with `mask` of the real rows."""
        if self.columns is not None:
            x = x[..., self.columns]
        x = (x - self.mean) / self.std
        for k, layer in enumerate(self.layers):
            if k == 1 and self.pooled:
                m = torch.ones(x.shape[:-1]) if mask is None else mask.float()
                m = m.unsqueeze(-1)
                pool = (x * m).sum(-2, keepdim=True) / m.sum(-2, keepdim=True).clamp(min=1)
                x = torch.cat([x, pool.expand_as(x)], -1)
            x = layer(x)
            if k + 1 < len(self.layers):
                x = torch.relu(x)
        return x.squeeze(-1)


def batches(states, size, rng):
    order = list(range(len(states)))
    rng.shuffle(order)
    for at in range(0, len(order), size):
        chunk = [states[i] for i in order[at:at + size]]
        width = max(s[0].shape[0] for s in chunk)
        x = torch.zeros(len(chunk), width, chunk[0][0].shape[1])
        regret = torch.full((len(chunk), width), float("inf"))
        listing = torch.full((len(chunk), width), float("inf"))
        label = torch.tensor([s[2] for s in chunk])
        best = torch.tensor([s[3] for s in chunk])
        for i, (f, r, _, _, lr) in enumerate(chunk):
            x[i, :f.shape[0]] = f
            regret[i, :f.shape[0]] = r
            listing[i, :f.shape[0]] = lr
        yield x, regret, label, best, listing


def loss_of(model, x, regret, label, best, listing, how, temperature, leave_cost):
    """`label`: cross-entropy on the label's choice. `values`: soft targets from the regrets
    (best value reachable after each candidate). `listing`: soft targets from the values of
    following the listing after each candidate. `both`: the mean of the last two."""
    mask = torch.isfinite(regret)
    scores = model(x, mask).masked_fill(~mask, -1e9)
    logp = torch.log_softmax(scores, dim=1)
    if how == "label":
        return -logp.gather(1, label[:, None]).mean()

    def soft(rel):
        rel = rel.masked_fill(~mask, 1e9)
        rel[:, 1:] += leave_cost
        return -(torch.softmax(-rel / temperature, dim=1) * logp).sum(1).mean()

    by_values = soft(regret / best[:, None].clamp(min=1e-9))
    by_listing = soft(listing.clone())
    return {"values": by_values, "listing": by_listing, "both": (by_values + by_listing) / 2}[how]


def ect_after(instance, objective, variant, prefix):
    """The value of the earliest-completion continuation after the choices `prefix` (indices
    into each state's candidates)."""
    env = schedlm.StepEnv(instance, objective=objective, variant=variant, best=1.0)
    for k in prefix:
        env.step(k)
    while not env.done:
        env.step(0)
    return env.value


def rollout(model, instance, objective, variant, sample=None, bonus=0.0, leaves=None):
    """The scorer's order on one instance: greedy, or sampled at temperature `sample`.
    Returns (value, log-probabilities of the choices). With `leaves` (a list), appends for
    every choice that leaves the listing whether it lowers the value of the
    earliest-completion continuation (as `schedlm eval` counts them)."""
    env = schedlm.StepEnv(instance, objective=objective, variant=variant, best=1.0)
    logps, prefix = [], []
    while not env.done:
        scores = model(torch.tensor(env.features(), dtype=torch.float32))
        scores[0] += bonus
        if sample is None:
            k = int(torch.argmax(scores))  # ties: the first listed
        else:
            dist = torch.distributions.Categorical(logits=scores / sample)
            k = int(dist.sample())
            logps.append(dist.log_prob(torch.tensor(k)))
        if leaves is not None and k != 0:
            after = ect_after(instance, objective, variant, prefix + [k])
            leaves.append(after < ect_after(instance, objective, variant, prefix + [0]))
        prefix.append(k)
        env.step(k)
    return env.value, logps


def ect_value(instance, objective, variant):
    env = schedlm.StepEnv(instance, objective=objective, variant=variant, best=1.0)
    while not env.done:
        env.step(0)
    return env.value


def sign_test(wins, losses):
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


#: What the scorer is compared with (`--baseline`): `ect`, or `brpi` (the best rule per instance).
BASELINE = ["ect"]


def baseline_value(instance, objective, variant):
    if BASELINE[0] == "brpi":
        return schedlm.reference(instance, objective=objective, variant=variant)["brpi"]
    return ect_value(instance, objective, variant)


def compare(model, instances, objective, variant, bonus=0.0):
    """The scorer's greedy rollouts against the baseline's values (`baseline` names it)."""
    mine, base, leaves = [], [], []
    with torch.no_grad():
        for inst in instances:
            mine.append(rollout(model, inst, objective, variant, bonus=bonus, leaves=leaves)[0])
            base.append(baseline_value(inst, objective, variant))
    eps = 1e-9
    wins = sum(a < b - eps * abs(b) for a, b in zip(mine, base))
    losses = sum(a > b + eps * abs(b) for a, b in zip(mine, base))
    return {
        "instances": len(instances),
        "scorer_mean": sum(mine) / len(mine),
        "baseline": BASELINE[0],
        "baseline_mean": sum(base) / len(base),
        "wins": wins, "ties": len(mine) - wins - losses, "losses": losses,
        "sign_test_p": sign_test(wins, losses),
        "first_bonus": bonus,
        "leaves": len(leaves), "leaves_lowering": sum(leaves),
    }


def choose_bonus(model, instances, objective, variant, log):
    """The bonus of the first listed job, among a few, with the lowest mean value on
    `instances` among those that beat ect surely (more wins than losses, sign test p < 0.01)
    and leave the listing for the better with a margin (at least 60% of the choices that leave
    it lower the earliest-completion continuation's value: the share falls on unseen
    instances; asked only against `ect`); when none does, the one with the smallest p."""
    best = None
    for bonus in (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0):
        r = compare(model, instances, objective, variant, bonus)
        log(f"bonus {bonus}: {r['wins']}/{r['ties']}/{r['losses']} against {BASELINE[0]}, "
            f"mean {r['scorer_mean']:.4f} ({BASELINE[0]} {r['baseline_mean']:.4f}), "
            f"p {r['sign_test_p']:.2g}, "
            f"{r['leaves_lowering']} of {r['leaves']} leaves lower the value")
        sure = r["wins"] > r["losses"] and r["sign_test_p"] < 0.01
        precise = BASELINE[0] != "ect" or r["leaves_lowering"] >= 0.6 * r["leaves"]
        key = (0, r["scorer_mean"]) if sure and precise else (1, r["sign_test_p"])
        if best is None or key < best[0]:
            best = (key, bonus)
    return best[1]


def grpo(model, instances, objective, variant, steps, group, lr, temperature, rng, log):
    """GRPO on episode value: per instance a group of sampled rollouts, advantage = (mean of
    the group's values - value) / std, policy gradient on the choices' log-probabilities."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for step in range(steps):
        inst = instances[rng.randrange(len(instances))]
        runs = [rollout(model, inst, objective, variant, sample=temperature) for _ in range(group)]
        values = torch.tensor([v for v, _ in runs])
        adv = (values.mean() - values) / (values.std() + 1e-9)
        loss = -sum(a * torch.stack(lp).sum() for a, (_, lp) in zip(adv, runs)) / group
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (step + 1) % max(1, steps // 10) == 0:
            log(f"grpo step {step + 1}: group mean value {values.mean():.4f}")


_worker = {}


def _dagger_init(config, state):
    torch.set_num_threads(1)
    model = Scorer(*config)
    model.load_state_dict(state)
    _worker["model"] = model


def _dagger_states(task):
    """The scorer's greedy rollout on one instance, each state with its candidates' values
    searched from the label's order (the states the scorer itself reaches: DAgger)."""
    instance, objective, variant, reference, work_limit = task
    model = _worker["model"]
    env = schedlm.StepEnv(instance, objective=objective, variant=variant, best=1.0)
    out = []
    with torch.no_grad():
        while not env.done:
            features = env.features()
            values = env.values(reference, work_limit)
            regret = [v["regret"] for v in values]
            best = min(v["value"] for v in values)
            out.append((features, regret, regret.index(0.0), best,
                        listing_regrets(env).tolist()))
            env.step(int(torch.argmax(model(torch.tensor(features, dtype=torch.float32)))))
    return out  # plain lists: tensors would travel back as file descriptors


def dagger_round(model, records, work_limit, processes, limit):
    """States the scorer reaches on the records' instances, labelled with their values."""
    import multiprocessing
    tasks = [(r["instance"], r["objective"], r["variant"], r["order"], work_limit)
             for r in records if r["step"] == 0][:limit]
    config = (model.layers[0].in_features, [l.out_features for l in model.layers[:-1]],
              model.mean, model.std, model.pooled)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    with multiprocessing.get_context("fork").Pool(processes, _dagger_init, (config, state)) as pool:
        reached = pool.map(_dagger_states, tasks, chunksize=4)
    return [(torch.tensor(f, dtype=torch.float32), torch.tensor(r, dtype=torch.float32), k, b,
             torch.tensor(lr, dtype=torch.float32))
            for states in reached for f, r, k, b, lr in states]


def write_safetensors(path, tensors):
    """The safetensors format (8-byte little-endian header length, JSON header, raw f32)."""
    header, blobs, at = {}, [], 0
    for name, t in tensors.items():
        data = t.detach().to(torch.float32).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [at, at + len(data)]}
        blobs.append(data)
        at += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def export(model, out, objective, variant, names, about, bonus):
    import os
    os.makedirs(out, exist_ok=True)
    tensors = {}
    for k, layer in enumerate(model.layers):
        tensors[f"layers.{k}.weight"] = layer.weight
        tensors[f"layers.{k}.bias"] = layer.bias
    write_safetensors(os.path.join(out, "scorer.safetensors"), tensors)
    if model.columns is not None:
        names = [names[c] for c in model.columns]
    config = {
        "features": schedlm.FEATURES_VERSION, "names": names,
        "mean": model.mean.tolist(), "std": model.std.tolist(),
        "objective": objective, "variant": variant, "first_bonus": bonus,
        "pooled": model.pooled, "about": about,
    }
    with open(os.path.join(out, "scorer.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")


CURVE = []


def fit(model, states, args, rng, log):
    """The supervised stage: Adam with a cosine schedule over `args.epochs` epochs; each
    epoch's mean loss goes to CURVE (written as curve.csv with the scorer)."""
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
    for epoch in range(args.epochs):
        total, n = 0.0, 0
        for x, regret, label, best, listing in batches(states, args.batch, rng):
            loss = loss_of(model, x, regret, label, best, listing, args.loss, args.temperature,
                           args.leave_cost)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(x)
            n += len(x)
        sched.step()
        CURVE.append((len(CURVE) + 1, len(states), total / n))
        if (epoch + 1) % max(1, args.epochs // 5) == 0:
            log(f"epoch {epoch + 1}: loss {total / n:.4f}")


def load(directory):
    """The scorer a directory holds (as `export` writes it): (model, first_bonus). A scorer of
    an earlier feature set reads its own columns of today's rows."""
    import os
    with open(os.path.join(directory, "scorer.json")) as f:
        config = json.load(f)
    with open(os.path.join(directory, "scorer.safetensors"), "rb") as f:
        raw = f.read()
    size = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + size])
    data = raw[8 + size:]
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        tensors[name] = torch.frombuffer(bytearray(data[a:b]), dtype=torch.float32).reshape(
            meta["shape"])
    layers = sum(1 for n in tensors if n.endswith(".weight"))
    hidden = [tensors[f"layers.{k}.weight"].shape[0] for k in range(layers - 1)]
    names = list(schedlm.FEATURES)
    columns = None if config["names"] == names else [names.index(n) for n in config["names"]]
    model = Scorer(len(config["names"]), hidden, torch.tensor(config["mean"]),
                   torch.tensor(config["std"]), pooled=config.get("pooled", False),
                   columns=columns)
    model.load_state_dict({**tensors, "mean": model.mean, "std": model.std})
    return model, config.get("first_bonus", 0.0)


def family_args(text):
    """'wide=0.5,deps=0.3,mixed_nodes=true' as schedlm.generate keywords."""
    out = {}
    for item in filter(None, text.split(",")):
        key, value = item.split("=", 1)
        low = value.lower()
        if low in ("true", "false"):
            out[key] = low == "true"
        else:
            try:
                out[key] = int(value)
            except ValueError:
                try:
                    out[key] = float(value)
                except ValueError:
                    out[key] = value
    return out


def smoke_records(family, seed):
    """Step records with values of 12 snapshots of 6 to 8 jobs, made by the schedlm binary
    (SCHEDLM_BIN, else `schedlm` on the PATH) in a temporary directory."""
    import os
    import subprocess
    import tempfile
    binary = os.environ.get("SCHEDLM_BIN", "schedlm")
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([binary, "dataset", "build", "--family", family, "-n", "12", "--queue",
                        "6..8", "--seed", str(seed + 1), "--records", "steps", "--template",
                        "step-v2", "--targets", "values", "--value-work-limit", "5000",
                        "--work-limit", "200000", "--split", "100/0/0", "--out", out, "-q"],
                       check=True)
        with open(os.path.join(out, "train.jsonl")) as f:
            return [json.loads(line) for line in f]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", nargs="*", help="JSONL of step records with values")
    ap.add_argument("--loss", choices=["values", "listing", "both", "label"], default="values",
                    help="values: regrets of the best reachable value; listing: of the value"
                         " when the rest follows the listing; both: their mean; label: the"
                         " label's choice")
    ap.add_argument("--temperature", type=float, default=0.01,
                    help="soft targets: softmax(-regret / (T * best))")
    ap.add_argument("--leave-cost", type=float, default=0.0,
                    help="added to the relative regret of every candidate but the first listed:"
                         " leave the listing only for a gain larger than this")
    ap.add_argument("--hidden", default="64,64")
    ap.add_argument("--pooled", action="store_true",
                    help="the second layer also reads the mean over the state's candidates")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--dagger", type=int, default=0,
                    help="rounds of DAgger: label the states the scorer reaches with their"
                         " values, add them, train again")
    ap.add_argument("--dagger-work-limit", type=int, default=30000,
                    help="work per candidate of the values of reached states")
    ap.add_argument("--dagger-instances", type=int, default=200,
                    help="instances of the data rolled out in each DAgger round")
    ap.add_argument("--grpo", type=int, default=0, help="GRPO steps after the supervised stage")
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--tune", type=int, default=0,
                    help="instances (generator seed --tune-seed) on which to choose the bonus of"
                         " the first listed job: the one with the smallest sign-test p against ect")
    ap.add_argument("--tune-seed", type=int, default=77)
    ap.add_argument("--baseline", choices=["ect", "brpi"], default="ect",
                    help="what the bonus is tuned and the test is judged against")
    ap.add_argument("--family-args", default="",
                    help="generator settings of the tuning and test instances, as"
                         " `schedlm.generate` keywords: e.g. 'wide=0.5,deps=0.3'")
    ap.add_argument("--test", type=int, default=300, help="held-out instances (generator seed 99)")
    ap.add_argument("--test-seed", type=int, default=99)
    ap.add_argument("--family", default="uniform")
    ap.add_argument("--queue", default="16,20")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", help="directory to write scorer.json and scorer.safetensors")
    ap.add_argument("--smoke", action="store_true", help="tiny data made here, seconds")
    args = ap.parse_args()
    BASELINE[0] = args.baseline
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    started = time.time()

    def log(msg):
        print(f"[{time.time() - started:6.1f}s] {msg}", flush=True)

    queue = tuple(int(x) for x in args.queue.split(","))
    if args.smoke:
        records = smoke_records(args.family, args.seed)
        args.test, queue, args.epochs = 8, (6, 8), 3
        args.tune = min(args.tune, 8)
    else:
        records = [json.loads(line) for path in args.data for line in open(path)]
    objective, variant = records[0]["objective"], records[0]["variant"]
    states = states_of(records)
    log(f"{len(states)} states from {len(records)} records")
    feats = torch.cat([s[0] for s in states])
    mean, std = feats.mean(0), feats.std(0).clamp(min=1e-3)
    hidden = [int(h) for h in args.hidden.split(",") if h]
    model = Scorer(feats.shape[1], hidden, mean, std, pooled=args.pooled)
    fit(model, states, args, rng, log)
    for round_ in range(args.dagger):
        reached = dagger_round(model, records, args.dagger_work_limit, args.threads,
                               args.dagger_instances)
        states = states + reached
        log(f"DAgger round {round_ + 1}: {len(reached)} states the scorer reached, "
            f"{len(states)} in all")
        fit(model, states, args, rng, log)
    shape = family_args(args.family_args)
    test = schedlm.generate(args.family, queue=queue, count=args.test, seed=args.test_seed,
                            **shape)
    if args.grpo:
        train_insts = [r["instance"] for r in records if r["step"] == 0]
        grpo(model, train_insts, objective, variant, args.grpo, args.group, 1e-4, 0.3, rng, log)
    bonus = 0.0
    if args.tune:
        tune = schedlm.generate(args.family, queue=queue, count=args.tune, seed=args.tune_seed,
                                **shape)
        bonus = choose_bonus(model, tune, objective, variant, log)
    result = compare(model, test, objective, variant, bonus)
    result["seconds"] = round(time.time() - started, 1)
    print(json.dumps(result))
    if args.out:
        about = (f"step scorer {args.hidden}, {args.loss} loss (T={args.temperature}), "
                 f"{args.epochs} epochs on {len(states)} states"
                 + (f", then {args.grpo} GRPO steps" if args.grpo else ""))
        export(model, args.out, objective, variant, list(schedlm.FEATURES), about, bonus)
        import os
        with open(os.path.join(args.out, "curve.csv"), "w") as f:
            f.write("epoch,states,loss\n")
            f.writelines(f"{e},{n},{loss:.6f}\n" for e, n, loss in CURVE)
        with open(os.path.join(args.out, "result.json"), "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
        log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
