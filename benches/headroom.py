#!/usr/bin/env python3
"""Headroom of generator settings: how far the best rule per instance (BRPI, the ranking a
compact-v2 prompt lists) lies above the best known order, and how often the label is that
ranking, for each named setting.

For every setting it runs `schedlm dataset build` (bsld, serial, canonical labels) into a
scratch directory and reads `difficulty.all` from the manifest. The figures of
docs/generator.md ("Settings that give headroom") and docs/learning.md ("Headroom") come from
it:

    python3 benches/headroom.py --schedlm target/release/schedlm --count 600 --seeds 3,7
    python3 benches/headroom.py --only hpc-hard,dl-hard --count 150

Prints one Markdown row per setting and seed: records, share of labels equal to the ranking,
share of label positions that leave it, mean / median / p90 headroom, share with at least 1%,
share proven optimal.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

# (name, arguments of `dataset build` after the family and queue); each tells a reason a real
# cluster has (docs/generator.md).
HPC = "--family hpc --queue 10..12"
DL = "--family dl --queue 10..12"
SETTINGS = [
    ("hpc", HPC),
    ("hpc contention", HPC + " --servers 4 --load 0.9"),
    ("hpc short partition", HPC + " --max-walltime 1h"),
    ("hpc burst", HPC + " --queue-span 0"),
    ("hpc wide", HPC + " --wide 0.5"),
    ("hpc memory-bound", HPC + " --mem-bound 0.3"),
    ("hpc mixed nodes", HPC + " --mixed-nodes"),
    ("hpc dependencies", HPC + " --deps 0.3"),
    ("hpc 4 nodes, short, burst", HPC + " --servers 4 --max-walltime 1h --queue-span 0"),
    ("hpc 4 nodes, short, burst, wide", HPC + " --servers 4 --max-walltime 1h --queue-span 0 --wide 0.5"),
    ("hpc-hard", HPC + " --servers 4 --max-walltime 1h --queue-span 0 --wide 0.5 --mem-bound 0.3"),
    ("hpc-hard, burst over 2 min", HPC + " --servers 4 --max-walltime 1h --queue-span 2m --wide 0.5 --mem-bound 0.3"),
    ("hpc-hard + mixed nodes", HPC + " --servers 4 --max-walltime 1h --queue-span 0 --wide 0.5 --mem-bound 0.3 --mixed-nodes"),
    ("hpc-hard + dependencies", HPC + " --servers 4 --max-walltime 1h --queue-span 0 --wide 0.5 --mem-bound 0.3 --deps 0.3"),
    ("dl", DL),
    ("dl contention", DL + " --servers 2 --load 0.9"),
    ("dl burst", DL + " --queue-span 0"),
    ("dl wide (GPU fragmentation)", DL + " --wide 0.5"),
    ("dl mixed nodes", DL + " --mixed-nodes"),
    ("dl dependencies", DL + " --deps 0.3"),
    ("dl burst, wide, mixed", DL + " --queue-span 0 --wide 0.5 --mixed-nodes"),
    ("dl-hard", DL + " --queue-span 0 --wide 0.5 --mixed-nodes --deps 0.3"),
    ("uniform 6..8", "--family uniform --queue 6..8"),
    ("uniform 10..12", "--family uniform --queue 10..12"),
]


def measure(schedlm, args, count, seed, time_limit, scratch):
    out = Path(scratch) / "ds"
    cmd = [schedlm, "dataset", "build", "-q", "-n", str(count), "--seed", str(seed),
           "--time-limit", time_limit, "--split", "100/0/0", "-o", str(out)] + args.split()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    manifest = json.loads((out / "manifest.json").read_text())
    subprocess.run(["rm", "-rf", str(out)], check=True)
    total = sum(manifest["records"].values())
    return manifest["difficulty"]["all"], manifest["proven_optimal"] / max(total, 1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--schedlm", default="target/release/schedlm")
    p.add_argument("--count", type=int, default=600)
    p.add_argument("--seeds", default="3")
    p.add_argument("--time-limit", default="1s")
    p.add_argument("--only", default="", help="comma-separated setting names")
    a = p.parse_args()
    only = [s for s in a.only.split(",") if s]
    print("| setting | seed | records | label = ranking | positions leaving it | mean headroom "
          "| median | p90 | >= 1% | proven |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as scratch:
        for name, args in SETTINGS:
            if only and name not in only:
                continue
            for seed in a.seeds.split(","):
                d, proven = measure(a.schedlm, args, a.count, seed, a.time_limit, scratch)
                h = d["headroom"]
                pct = lambda x: f"{100 * x:.2f}%"
                print(f"| {name} | {seed} | {d['instances']} | {100 * d['label_is_ranking']:.1f}% "
                      f"| {100 * d['deviating_positions']:.1f}% | {pct(h['mean'])} | {pct(h['median'])} "
                      f"| {pct(h['p90'])} | {100 * d['headroom_at_least_1pct']:.0f}% | {100 * proven:.0f}% |",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
