#!/usr/bin/env python3
"""PSPLIB j30 against the published optima, one `schedlm solve` per file.

Usage: python3 benches/j30.py LABEL SOLVER [solve options...]
e.g.   python3 benches/j30.py clique auto --time-limit 2s

Imports each `.sm` file of ../shared/data/psplib/j30 with `schedlm import psplib`, solves it
for the makespan with target/release/schedlm, and prints how many are proven, how many reach
the published optimum (`optimum.csv`), the median and p90 of `time_ms`, the total node count,
and every instance whose lower bound lies above its published optimum (there must be none).
"""
import csv
import json
import os
import subprocess
import sys

DATA = "../shared/data/psplib/j30"
BIN = "./target/release/schedlm"


def main():
    label, solver, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(os.path.join(DATA, "optimum.csv")) as f:
        optimum = {r["problem"]: int(r["optimum"]) for r in csv.DictReader(f)}
    files = sorted(f for f in os.listdir(DATA) if f.endswith(".sm"))
    above, at, proven, times, nodes = [], 0, 0, [], 0
    for name in files:
        instance = subprocess.run(
            [BIN, "import", "psplib", os.path.join(DATA, name)],
            capture_output=True, text=True, check=True,
        ).stdout
        out = subprocess.run(
            [BIN, "solve", "--solver", solver, "--objective", "makespan", *extra, "-"],
            input=instance, capture_output=True, text=True, check=True,
        ).stdout
        r = json.loads(out)
        if r["lower_bound"] > optimum[name] + 1e-9:
            above.append((name, r["lower_bound"], optimum[name]))
        at += r["value"] == optimum[name]
        proven += r["proven_optimal"]
        if not r["proven_optimal"]:
            print(f"  open: {name} value {r['value']} bound {r['lower_bound']} "
                  f"optimum {optimum[name]} {r['time_ms']} ms", flush=True)
        times.append(r["time_ms"])
        nodes += r["nodes"]
    times.sort()
    n = len(files)
    print(
        f"{label} {solver} {' '.join(extra)}: proven {proven}/{n}, at the optimum {at}/{n}, "
        f"median {times[n // 2]} ms, p90 {times[(9 * n) // 10]} ms, nodes {nodes}, "
        f"bounds above an optimum: {above or 'none'}"
    )


if __name__ == "__main__":
    main()
