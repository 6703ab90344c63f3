#!/usr/bin/env python3
"""Certified gaps of `auto` on snapshots cut from real traces, by queue length.

Usage: python3 benches/gaps.py [--count N] [--lengths 30,50,100,200] [--objectives bsld,wait,makespan]
                               [--traces SDSC,CTC,HPC2N] [--time-limit 2s] [--out DIR]

For each trace and queue length, cuts N snapshots with `schedlm generate --from-trace`
(FCFS + EASY replay, `--sample 5000 --seed 3`, queues longer than the length cut to the oldest
jobs, shorter ones skipped), solves each with `schedlm solve --solver auto -j 1` for each
objective, and prints one row per (trace, length, objective): instances proven optimal, the mean,
median, p90 and largest certified gap ((value - lower bound) / lower bound), and the mean
`time_ms`. The snapshots and solutions stay in DIR (default /tmp/schedlm-gaps).
"""
import argparse
import json
import os
import statistics
import subprocess

BIN = os.environ.get("SCHEDLM", "./target/release/schedlm")
TRACES = {
    "SDSC": "../shared/data/traces/SDSC-SP2-1998-4.2-cln.swf",
    "CTC": "../shared/data/traces/CTC-SP2-1996-3.1-cln.swf",
    "HPC2N": "../shared/data/traces/HPC2N-2002-2.2-cln.swf.gz",
}


def quantile(values, q):
    values = sorted(values)
    pos = q * (len(values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--lengths", default="30,50,100,200")
    ap.add_argument("--objectives", default="bsld,wait,makespan")
    ap.add_argument("--traces", default="SDSC,CTC,HPC2N")
    ap.add_argument("--time-limit", default="2s")
    ap.add_argument("--out", default="/tmp/schedlm-gaps")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    print("| trace | jobs | objective | proven | mean gap | median | p90 | max | mean ms |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for trace in args.traces.split(","):
        for length in map(int, args.lengths.split(",")):
            snapshots = os.path.join(args.out, f"{trace}-{length}.jsonl")
            subprocess.run(
                [BIN, "generate", "--from-trace", TRACES[trace], "--queue",
                 f"{length}..{length}", "--sample", "5000", "-n", str(args.count),
                 "--seed", "3", "-o", snapshots],
                check=True, capture_output=True,
            )
            for objective in args.objectives.split(","):
                out = subprocess.run(
                    [BIN, "solve", "--solver", "auto", "--objective", objective,
                     "--time-limit", args.time_limit, "-j", "1", snapshots],
                    check=True, capture_output=True, text=True,
                ).stdout
                rows = [json.loads(line) for line in out.splitlines()]
                with open(os.path.join(args.out, f"{trace}-{length}-{objective}.jsonl"), "w") as f:
                    f.write(out)
                gaps = [100 * r["gap"] for r in rows]
                print(
                    f"| {trace} | {length} | {objective} | "
                    f"{sum(r['proven_optimal'] for r in rows)}/{len(rows)} | "
                    f"{statistics.mean(gaps):.2f} % | {statistics.median(gaps):.2f} % | "
                    f"{quantile(gaps, 0.9):.2f} % | {max(gaps):.2f} % | "
                    f"{statistics.mean(r['time_ms'] for r in rows):.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
