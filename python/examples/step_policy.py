"""A step policy in PyTorch, trained on step labels and rolled out on schedlm.StepEnv.

The policy reads the rows of the step-v2 prompt (each job that may go next: its need, its
requested time, its start if placed next, its place in the listing), scores each row with a
small MLP, and picks the highest. It is trained with cross-entropy on the labels' decisions
(the step records of `schedlm dataset build --records steps --template step-v2`, made here by
stepping the environment along each label), then rolled out greedily on held-out instances and
scored with the headroom score, against answering J1 at every step (the `ect` listing).

Sized for a 2-core CPU in about a minute:

    python3 python/examples/step_policy.py [--train 160] [--test 40] [--epochs 100]
"""

import argparse
import random
import time

import torch
from torch import nn

import schedlm

FEATURES = 7


def rows(obs):
    """Features of each candidate row of a step-v2 observation, in listing order."""
    lines = obs["user"].splitlines()
    head = next(k for k, line in enumerate(lines) if line.startswith("next by earliest end"))
    by_id = {}
    for line in lines[head + 1:]:
        parts = line.split()
        if len(parts) >= 5 and parts[4].startswith("S"):
            need = [float(x) for x in parts[1].split("/")]
            by_id[parts[0]] = (need, float(parts[2]), float(parts[3]))
    n = len(obs["candidates"])
    out = []
    for k, c in enumerate(obs["candidates"]):
        need, time_, start = by_id[c]
        out.append([k / max(n - 1, 1), float(k == 0), sum(need) / len(need) / 8.0,
                    time_ / 60.0, start / 60.0, (start + time_) / 60.0, n / 10.0])
    return torch.tensor(out, dtype=torch.float32)


def decisions(entry):
    """(candidate features, index of the label's choice) at every step of an entry's label."""
    meta = entry["metadata"]
    env = schedlm.StepEnv(meta["instance"], objective=meta["objective"], best=meta["value"])
    obs = env.reset()
    out = []
    for job in meta["order"]:
        if env.done:
            break
        if job not in obs["jobs"]:   # placed already by the dependency repair's order
            continue
        k = obs["jobs"].index(job)
        out.append((rows(obs), k))
        obs, _, _ = env.step(k)
    return out


def rollout(policy, entry):
    meta = entry["metadata"]
    env = schedlm.StepEnv(meta["instance"], objective=meta["objective"], best=meta["value"])
    obs = env.reset()
    with torch.no_grad():
        while not env.done:
            obs, reward, _ = env.step(int(policy(rows(obs)).argmax()))
    return reward


def follow_listing(entry):
    meta = entry["metadata"]
    env = schedlm.StepEnv(meta["instance"], objective=meta["objective"], best=meta["value"])
    env.reset()
    while not env.done:
        env.step(0)
    return env.reward()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=int, default=160)
    ap.add_argument("--test", type=int, default=40)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    t0 = time.time()
    # hpc with wide jobs: snapshots where the listing is often not the best order. A small
    # work limit keeps labelling quick; the labels are the same on every machine.
    data = schedlm.Dataset(family="hpc", queue=(6, 8), size=args.train + args.test,
                           seed=args.seed, template="step-v2", wide=0.3, work_limit=500_000)
    train = [data[k] for k in range(args.train)]
    test = [data[k] for k in range(args.train, args.train + args.test)]
    steps = [d for e in train for d in decisions(e)]
    print(f"{len(train)} labels, {len(steps)} decisions ({time.time() - t0:.0f} s)")

    # Every decision padded to the most candidates, the padding masked out of the softmax.
    width = max(x.shape[0] for x, _ in steps)
    xs = torch.zeros(len(steps), width, FEATURES)
    mask = torch.zeros(len(steps), width, dtype=torch.bool)
    for i, (x, _) in enumerate(steps):
        xs[i, : x.shape[0]] = x
        mask[i, : x.shape[0]] = True
    ys = torch.tensor([k for _, k in steps])

    policy = nn.Sequential(nn.Linear(FEATURES, 32), nn.Tanh(), nn.Linear(32, 1), nn.Flatten(-2))
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    for epoch in range(args.epochs):
        perm = torch.randperm(len(steps))
        total = 0.0
        for b in range(0, len(steps), 64):
            idx = perm[b: b + 64]
            logits = policy(xs[idx]).masked_fill(~mask[idx], float("-inf"))
            loss = nn.functional.cross_entropy(logits, ys[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        if epoch % 20 == 0 or epoch == args.epochs - 1:
            with torch.no_grad():
                logits = policy(xs).masked_fill(~mask, float("-inf"))
                agree = (logits.argmax(1) == ys).float().mean().item()
            print(f"epoch {epoch}: loss {total / len(steps):.3f}, "
                  f"agrees with the label on {agree:.1%} of decisions")

    learned = [rollout(policy, e) for e in test]
    listing = [follow_listing(e) for e in test]
    print(f"held-out mean headroom score: policy {sum(learned) / len(learned):.3f}, "
          f"J1 at every step (ect) {sum(listing) / len(listing):.3f}, label 1.000 "
          f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
