#!/usr/bin/env python3
"""B4/B5 figures from a `schedlm eval` output directory and the records it evaluated.

Gaps here are to the *best known* value of each instance: the minimum of the record's label
value (the solver's order at its time limit) and every policy's value in instances.csv, so an
unproven record is measured against the best order anyone found, not against a lower bound.
Prints, per policy: mean gap to best known, W/T/L against the best rule per instance (BRPI)
and the two-sided sign-test p-value; the same against `ect` where it was evaluated.

usage: b4_table.py EVAL_DIR RECORDS.jsonl
"""
import csv
import json
import math
import sys
from collections import defaultdict

TOL = 1e-9


def sign_test(wins, losses):
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2 * tail)


def main():
    out, records = sys.argv[1], sys.argv[2]
    label = {}
    with open(records) as f:
        for line in f:
            r = json.loads(line)
            label[r["id"].split("-s")[0]] = r["value"]
    rows = defaultdict(dict)
    brpi = {}
    with open(f"{out}/instances.csv") as f:
        for row in csv.DictReader(f):
            if row["value"] == "":
                continue
            rows[row["policy"]][row["record"]] = float(row["value"])
            brpi[row["record"]] = float(row["best_rule_value"])
    best = {}
    for rec in brpi:
        vals = [label.get(rec, math.inf)] + [p[rec] for p in rows.values() if rec in p]
        best[rec] = min(vals)
    print(f"{'policy':<40} {'n':>4} {'gap':>7}  {'W/T/L vs BRPI':>14}  p(sign)")
    bg = sum(brpi[r] / best[r] - 1 for r in brpi) / len(brpi)
    print(f"{'brpi (best rule per instance)':<40} {len(brpi):>4} {100*bg:6.2f}%")
    for pol, vals in rows.items():
        gaps = [vals[r] / best[r] - 1 for r in vals]
        w = sum(vals[r] < brpi[r] - TOL * max(1, brpi[r]) for r in vals)
        l = sum(vals[r] > brpi[r] + TOL * max(1, brpi[r]) for r in vals)
        t = len(vals) - w - l
        line = f"{pol:<40} {len(vals):>4} {100*sum(gaps)/len(gaps):6.2f}%  {w:>4}/{t}/{l:<5}  {sign_test(w, l):.2g}"
        if "ect" in rows and pol != "ect":
            e = rows["ect"]
            we = sum(vals[r] < e[r] - TOL * max(1, e[r]) for r in vals if r in e)
            le = sum(vals[r] > e[r] + TOL * max(1, e[r]) for r in vals if r in e)
            line += f"   vs ect {we}/{len(vals) - we - le}/{le} p={sign_test(we, le):.2g}"
        print(line)


if __name__ == "__main__":
    main()
