"""Throughput of schedlm's Python rewards (docs/benchmarks.md, "Python rewards").

Usage: python3 benches/python_reward.py [SCHEDLM_BINARY]

For queues of 8 and 16 jobs (`uniform`, seed 7): the answers per second of
`schedlm.reward_many` (all cores; on 2,000 instances with an answer each, and on 250 with 8
answers each, as a GRPO batch asks), of `schedlm.reward` called once per answer, and of one
`schedlm eval` process per answer (what a Python trainer did before the bindings: write the
record and the answer to files, spawn the binary, read the report). Answers are random
permutations of the prompt ids, one in eight made invalid.
"""

import json
import os
import random
import subprocess
import sys
import tempfile
import time

import schedlm

BINARY = sys.argv[1] if len(sys.argv) > 1 else "target/release/schedlm"


def answers(instances, rng):
    out = []
    for k, inst in enumerate(instances):
        ids = [f"J{j}" for j in range(1, len(inst["queue"]) + 1)]
        rng.shuffle(ids)
        if k % 8 == 7:
            ids = ids[:-1]
        out.append(" ".join(ids))
    return out


def per_second(f, n, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return n / best


def eval_per_answer(instances, texts, count):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "i.jsonl")
        with open(src, "w") as f:
            f.writelines(json.dumps(i) + "\n" for i in instances[:count])
        data = os.path.join(d, "data")
        subprocess.run([BINARY, "dataset", "build", "-q", "--from", src, "--split", "100/0/0",
                        "--time-limit", "1s", "--out", data], check=True, capture_output=True)
        records = [json.loads(x) for x in open(os.path.join(data, "train.jsonl"))]
        t = time.perf_counter()
        for k, r in enumerate(records):
            one = os.path.join(d, "r.jsonl")
            with open(one, "w") as f:
                f.write(json.dumps(r) + "\n")
            pred = os.path.join(d, "p.jsonl")
            with open(pred, "w") as f:
                f.write(json.dumps({"id": r["id"], "output": texts[k]}) + "\n")
            subprocess.run([BINARY, "eval", "--data", one, "--policies", f"predictions:{pred}",
                            "-o", os.path.join(d, "e"), "--quiet"], check=True,
                           capture_output=True)
        return len(records) / (time.perf_counter() - t)


def main():
    rng = random.Random(7)
    print(f"{'queue':>5} {'reward_many /s':>15} {'same, 8 per prompt /s':>22} "
          f"{'reward /s':>10} {'eval per answer /s':>19}")
    for n in (8, 16):
        instances = schedlm.generate("uniform", queue=n, count=2000, seed=7)
        texts = answers(instances, rng)
        many = per_second(lambda: schedlm.reward_many(instances, texts), len(texts))
        grouped = [i for i in instances[:250] for _ in range(8)]
        group = per_second(lambda: schedlm.reward_many(grouped, texts), len(texts))
        one = per_second(lambda: [schedlm.reward(i, a) for i, a in zip(instances, texts)],
                         len(texts))
        spawn = eval_per_answer(instances, texts, 20)
        print(f"{n:>5} {many:>15,.0f} {group:>22,.0f} {one:>10,.0f} {spawn:>19,.1f}")


if __name__ == "__main__":
    main()
