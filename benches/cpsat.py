#!/usr/bin/env python3
"""OR-Tools CP-SAT on schedlm instances: an outside reference for `schedlm bench solve`.

Reads instance files (JSON Lines, SPEC section 1), builds one CP-SAT model per instance and
solves it with one worker. Prints per instance the status, the objective, the wall time, and per
file the median / p90 time; when the `results.json` written by `schedlm bench solve --out DIR`
sits next to the file (or is given with --results), also compares with branch and bound.

Model (SPEC's problem without the dispatcher):

- per queued job j: an integer start S_j (seconds from `now`), S_j >= 0, S_j >= the end of each
  running dependency, and one optional interval [S_j, S_j + p_j) per server whose capacity holds
  its demand, with exactly one of them present;
- per server and resource: a cumulative constraint over the present intervals with the job's
  demand, plus each running job on that server as a fixed interval [0, end - now) with its
  demand, against the server's capacity (resources with zero demand are left out);
- per queued dependency d of j: S_j >= S_d + p_d;
- objective bsld, scaled to integers: an integer c_j per job with c_j >= SCALE and
  c_j * max(p_j, 10) >= (S_j + now - submit_j + p_j) * SCALE, minimise sum c_j; so at the
  optimum c_j = ceil(SCALE * bsld_j). By default (`--scale auto`) SCALE is the least common
  multiple of the max(p_j, 10) of the instance when that is at most 10^9 (on `hpc` instances,
  whose walltimes are round, it is at most 518,400): then every c_j = SCALE * bsld_j exactly
  (the row reads c_j >= (S_j + now - submit_j + p_j) * (SCALE / max(p_j, 10))), the model's
  objective is exactly n * SCALE * mean bsld and a proven CP-SAT optimum is the exact
  relaxation optimum (`exact` in the output). Otherwise SCALE = 100,000: each job's term is
  rounded up by less than 1 / SCALE, so the proven optimum is within 1 / SCALE above the
  relaxation optimum. The script recomputes the exact mean bsld of CP-SAT's schedule from the
  starts and checks the schedule's feasibility independently.

Like the MILP, this is the *schedule relaxation*: CP-SAT may pick any feasible schedule (any
server, any start), not only the schedules that the serial dispatcher reaches from an order
(earliest start, first server). Its optimum is therefore a lower bound on SPEC's order optimum,
equal to it on one server (every active schedule comes from an order) and possibly lower on
several servers.

Horizon: a left-justified schedule starts job j by T0 + sum of the other walltimes, T0 the
latest of `now`, running ends and running-dependency ends; some optimal schedule is
left-justified (the objective is regular), so that bound loses nothing.

With `--objective wait` the model minimises the sum of starts (exact in integers), with
`--objective makespan` the latest end; `bench solve` uses bsld (the default).

Usage: python3 benches/cpsat.py [--time-limit 10] [--objective bsld|wait|makespan] [--scale auto|N] FILE.jsonl [FILE.jsonl ...]
"""

import argparse
import json
import math
import os
import sys
import time

try:
    import ortools
    from ortools.sat.python import cp_model
except ImportError:  # pragma: no cover
    sys.exit("benches/cpsat.py needs OR-Tools: pip install ortools")

TAU = 10


def quantile(values, q):
    """Linear interpolation between closest ranks (numpy's default), as `schedlm bench`."""
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def censored_quantile(pairs, q):
    """Quantile of (value, censored) pairs, and whether it reaches a censored value."""
    v = sorted(pairs, key=lambda x: x[0])
    pos = q * (len(v) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return quantile([x[0] for x in v], q), v[lo][1] or v[hi][1]


def fmt_ms(value, censored=False):
    s = f"{value:.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"
    return (">= " if censored else "") + s


def bsld(start, submit, p):
    return max((start - submit + p) / max(p, TAU), 1.0)


def instance_scale(inst, scale):
    """(SCALE, exact) for `--scale` = "auto" or an integer (see the module docs)."""
    ms = [max(j["walltime"], TAU) for j in inst["queue"]]
    if scale == "auto":
        lcm = math.lcm(*ms) if ms else 1
        scale = lcm if lcm <= 10**9 else 100000
    scale = int(scale)
    return scale, all(scale % m == 0 for m in ms)


def build(inst, scale, objective="bsld"):
    """CP-SAT model of one instance; returns (model, starts, presence).

    `objective` bsld (scaled, see the module docs), wait (sum of S_j - submit_j, exact in
    integers) or makespan (max of S_j + p_j - now)."""
    now = inst["now"]
    caps = [s["capacity"] for s in inst["servers"]]
    server_index = {s["id"]: k for k, s in enumerate(inst["servers"])}
    nres = len(inst["resources"])
    running = inst.get("running", [])
    queue = inst["queue"]
    running_end = {r["id"]: r["end"] for r in running}
    qindex = {j["id"]: k for k, j in enumerate(queue)}

    release = []
    for j in queue:
        rel = now
        for d in j.get("deps", []):
            if d in running_end:
                rel = max(rel, running_end[d])
        release.append(rel)
    t0 = max([now] + [r["end"] for r in running] + release)
    total_p = sum(j["walltime"] for j in queue)

    m = cp_model.CpModel()
    starts, presence, costs = [], [], []
    per_server = [[[] for _ in range(nres)] for _ in caps]  # (interval, demand)
    for k, j in enumerate(queue):
        p = j["walltime"]
        horizon = t0 + total_p - p - now
        s = m.new_int_var(release[k] - now, max(release[k] - now, horizon), f"S{k}")
        starts.append(s)
        lits = []
        for srv, cap in enumerate(caps):
            if any(d > c for d, c in zip(j["demand"], cap)):
                continue
            x = m.new_bool_var(f"x{k}_{srv}")
            iv = m.new_optional_fixed_size_interval_var(s, p, x, f"I{k}_{srv}")
            lits.append((srv, x))
            for q in range(nres):
                if j["demand"][q] > 0:
                    per_server[srv][q].append((iv, j["demand"][q]))
        m.add_exactly_one([x for _, x in lits])
        presence.append(lits)
        if objective != "bsld":
            continue
        # Scaled bounded slowdown: c * max(p, tau) >= (S + now - submit + p) * SCALE.
        mp = max(p, TAU)
        hi = math.ceil(scale * (horizon + now - j["submit"] + p) / mp) + 1
        c = m.new_int_var(scale, max(scale, hi), f"c{k}")
        if scale % mp == 0:
            m.add(c >= (s + (now - j["submit"] + p)) * (scale // mp))  # exact
        else:
            m.add(c * mp >= (s + (now - j["submit"] + p)) * scale)
        costs.append(c)
    for k, j in enumerate(queue):
        for d in j.get("deps", []):
            if d in qindex:
                dk = qindex[d]
                m.add(starts[k] >= starts[dk] + queue[dk]["walltime"])
    for r in running:
        srv = server_index[r["server"]]
        length = r["end"] - now
        if length <= 0:
            continue
        iv = m.new_fixed_size_interval_var(0, length, f"R{r['id']}")
        for q in range(nres):
            if r["demand"][q] > 0:
                per_server[srv][q].append((iv, r["demand"][q]))
    for srv, cap in enumerate(caps):
        for q in range(nres):
            items = per_server[srv][q]
            if not items or sum(d for _, d in items) <= cap[q]:
                continue  # never binds
            m.add_cumulative([iv for iv, _ in items], [d for _, d in items], cap[q])
    if objective == "bsld":
        m.minimize(sum(costs))
    elif objective == "wait":
        m.minimize(sum(starts))  # + the constant sum of (now - submit_j)
    else:
        end = m.new_int_var(0, t0 + total_p - now, "makespan")  # every start's domain ends by it
        for k, s in enumerate(starts):
            m.add(end >= s + queue[k]["walltime"])
        m.minimize(end)
    return m, starts, presence


def objective_value(inst, s_abs, objective):
    """The exact objective (SPEC section 4) of absolute starts `s_abs`."""
    queue = inst["queue"]
    if objective == "bsld":
        return sum(bsld(s_abs[k], j["submit"], j["walltime"]) for k, j in enumerate(queue)) / len(queue)
    if objective == "wait":
        return sum(s_abs[k] - j["submit"] for k, j in enumerate(queue)) / len(queue)
    return max(s_abs[k] + j["walltime"] for k, j in enumerate(queue)) - inst["now"]


def model_value(inst, raw, objective, scale):
    """The model's objective (or bound) `raw` in the units of SPEC's objective."""
    n = len(inst["queue"])
    if objective == "bsld":
        return raw / (n * scale)
    if objective == "wait":
        return (raw + sum(inst["now"] - j["submit"] for j in inst["queue"])) / n
    return raw


def check(inst, start, server):
    """Independent feasibility check of a schedule (absolute starts, server indices)."""
    now = inst["now"]
    caps = [s["capacity"] for s in inst["servers"]]
    server_index = {s["id"]: k for k, s in enumerate(inst["servers"])}
    queue = inst["queue"]
    ends = {r["id"]: r["end"] for r in inst.get("running", [])}
    ends.update({j["id"]: start[k] + j["walltime"] for k, j in enumerate(queue)})
    for k, j in enumerate(queue):
        assert start[k] >= now, f"{j['id']} starts before now"
        for d in j.get("deps", []):
            assert start[k] >= ends[d], f"{j['id']} starts before dependency {d} ends"
    jobs = [(server_index[r["server"]], now, r["end"], r["demand"]) for r in inst.get("running", [])]
    jobs += [(server[k], start[k], start[k] + j["walltime"], j["demand"]) for k, j in enumerate(queue)]
    for srv, cap in enumerate(caps):
        mine = [x for x in jobs if x[0] == srv]
        for _, t, _, _ in mine:  # load is highest just after some start
            for q in range(len(cap)):
                load = sum(d[q] for _, a, b, d in mine if a <= t < b)
                assert load <= cap[q], f"server {srv} over capacity at {t}"


def solve_file(path, args, reference):
    rows = []
    with open(path) as f:
        lines = [line for line in f if line.strip()]
    name = os.path.basename(path)
    for idx, line in enumerate(lines):
        inst = json.loads(line)
        n = len(inst["queue"])
        t_build = time.perf_counter()
        scale, exact_scale = (instance_scale(inst, args.scale) if args.objective == "bsld"
                              else (1, True))
        model, starts, presence = build(inst, scale, args.objective)
        build_s = time.perf_counter() - t_build
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.max_time_in_seconds = args.time_limit
        solver.parameters.random_seed = 0
        t, c = time.perf_counter(), time.process_time()
        status = solver.solve(model)
        wall_ms = (time.perf_counter() - t) * 1e3
        cpu_ms = (time.process_time() - c) * 1e3
        time_ms = cpu_ms if args.clock == "cpu" else wall_ms
        status_name = solver.status_name(status)
        value = exact = bound = None
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            value = model_value(inst, solver.objective_value, args.objective, scale)
            bound = model_value(inst, solver.best_objective_bound, args.objective, scale)
            s_abs = [solver.value(s) + inst["now"] for s in starts]
            srv = [next(k for k, x in lits if solver.boolean_value(x)) for lits in presence]
            check(inst, s_abs, srv)
            exact = objective_value(inst, s_abs, args.objective)
        ref = reference.get((name, idx))
        cmp = ""
        if ref and exact is not None:
            row = {"value": exact, "exact": exact_scale, "scale": scale}
            inc = ref["bnb"]["value"]
            if ref["bnb"]["proven"]:
                cmp = f"  B&B opt {inc:.6f}" + (" (relaxation lower)" if exact < inc - tol(row) else "")
            else:
                closes = (status == cp_model.OPTIMAL and exact_scale
                          and abs(exact - inc) <= tol(row))
                cmp = (f"  B&B stopped: incumbent {inc:.6f}, bound {ref['bnb']['lower_bound']:.6f}"
                       + (" -> incumbent proven optimal" if closes else ""))
        print(f"{name} #{idx:>2}: {status_name:<10} {args.objective} {exact if exact is not None else float('nan'):.6f}"
              f" (scaled {value if value is not None else float('nan'):.5f},"
              f" bound {bound if bound is not None else float('nan'):.5f})"
              f" in {time_ms:.1f} ms ({wall_ms:.1f} ms wall; +{build_s * 1e3:.1f} ms model)"
              f"{cmp}", flush=True)
        rows.append({"file": name, "index": idx, "status": status_name, "value": exact,
                     "scaled_value": value, "bound": bound, "scale": scale,
                     "exact": exact_scale, "time_ms": time_ms,
                     "wall_ms": wall_ms, "cpu_ms": cpu_ms,
                     "build_ms": build_s * 1e3, "proven": status == cp_model.OPTIMAL,
                     "ref": ref})
    return rows


def ref_ms(run, clock):
    """A `schedlm bench` run's time on `clock` (its `time_ms` if that clock is missing)."""
    value = run.get(f"{clock}_ms")
    return run["time_ms"] if value is None else value


def tol(row):
    """Tolerance of comparisons with B&B: 1e-9 relative, plus 1/SCALE when not exact."""
    return 1e-9 * max(1.0, abs(row["value"])) + (0 if row["exact"] else 1 / row["scale"])


def summary(name, rows, clock):
    times = [(r["time_ms"], not r["proven"]) for r in rows]
    proven = sum(r["proven"] for r in rows)
    med, med_c = censored_quantile(times, 0.5)
    p90, p90_c = censored_quantile(times, 0.9)
    out = {"file": name, "instances": len(rows), "proven": proven,
           "exact": sum(r["exact"] for r in rows),
           "median_ms": med, "p90_ms": p90, "median_censored": med_c, "p90_censored": p90_c}
    refs = [r for r in rows if r["ref"] is not None]
    if refs:
        bnb = [(ref_ms(r["ref"]["bnb"], clock), not r["ref"]["bnb"]["proven"]) for r in refs]
        b_med, b_c = censored_quantile(bnb, 0.5)
        out["bnb_median_ms"] = b_med
        out["bnb_median_censored"] = b_c
        out["ratio"] = quantile([r["time_ms"] for r in refs], 0.5) / b_med
        both = [r for r in refs if r["proven"] and r["ref"]["bnb"]["proven"]]
        out["compared"] = len(both)
        out["below_opt"] = sum(r["value"] < r["ref"]["bnb"]["value"] - tol(r) for r in both)
        out["above_opt"] = sum(r["value"] > r["ref"]["bnb"]["value"] + tol(r) for r in both)
        # B&B stopped by its limit, CP-SAT proved the exact relaxation optimum and it equals
        # B&B's incumbent: the incumbent is optimal (relaxation <= order optimum <= incumbent).
        open_ = [r for r in refs if not r["ref"]["bnb"]["proven"]]
        out["bnb_open"] = len(open_)
        out["closed"] = sum(r["proven"] and r["exact"]
                            and abs(r["value"] - r["ref"]["bnb"]["value"]) <= tol(r)
                            for r in open_)
    return out


def load_reference(paths, explicit):
    """(file name, index) -> per-instance record of `schedlm bench solve`'s results.json."""
    candidates = [explicit] if explicit else sorted(
        {os.path.join(os.path.dirname(os.path.abspath(p)), "results.json") for p in paths})
    ref = {}
    for c in candidates:
        if c and os.path.exists(c):
            with open(c) as f:
                data = json.load(f)
            for r in data.get("results", []):
                if "file" in r:
                    ref[(r["file"], r["index"])] = r
    return ref


def main():
    ap = argparse.ArgumentParser(
        description="Solve schedlm instances (JSON Lines) with OR-Tools CP-SAT, one worker, "
                    "objective bsld (schedule relaxation: a lower bound on the order optimum "
                    "with several servers). See benches/README.md.")
    ap.add_argument("files", nargs="+", help="instance files, e.g. /tmp/bench/hpc-10.jsonl")
    ap.add_argument("--time-limit", type=float, default=10.0,
                    help="seconds per instance (default 10)")
    ap.add_argument("--objective", choices=["bsld", "wait", "makespan"], default="bsld",
                    help="objective (SPEC section 4; default bsld); wait and makespan are exact "
                         "in integers")
    ap.add_argument("--scale", default="auto",
                    help="objective scale SCALE: each job's bsld is rounded up to a multiple of "
                         "1/SCALE; `auto` (default): the lcm of the instance's max(p, 10) when "
                         "at most 1e9 (exact), else 100000")
    ap.add_argument("--clock", choices=["cpu", "wall"], default="cpu",
                    help="time shown: CPU time of this process during solve() (default; immune "
                         "to other load on the cores) or wall-clock; the limit is wall-clock")
    ap.add_argument("--results", help="results.json of `schedlm bench solve --out DIR` "
                                      "(default: DIR/results.json next to the files, if any)")
    ap.add_argument("--json", help="write every row and summary to this JSON file")
    args = ap.parse_args()
    reference = load_reference(args.files, args.results)
    all_rows, sums = [], []
    for path in args.files:
        rows = solve_file(path, args, reference)
        all_rows += rows
        sums.append(summary(os.path.basename(path), rows, args.clock))
    print()
    print(f"CP-SAT (ortools {ortools.__version__}), 1 worker, "
          f"limit {args.time_limit:g} s, scale {args.scale}; {args.clock} times in ms "
          f"(CP-SAT: the solve call, model building excluded; B&B: from results.json).")
    print()
    print("`optimal`: CP-SAT proved its optimum (`exact` of them with an exact objective); "
          "`relax < opt`: its optimum is below the B&B order optimum (where both are proven); "
          "`closes B&B`: of the instances B&B left open, those where CP-SAT's exact optimum "
          "equals B&B's incumbent, which proves the incumbent optimal.")
    print()
    print("| file | CP-SAT optimal (exact) | CP-SAT median ms | CP-SAT p90 ms | B&B median ms "
          "| CP-SAT / B&B (median) | relax < opt | closes B&B |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for s in sums:
        has = "ratio" in s
        bnb = fmt_ms(s["bnb_median_ms"], s["bnb_median_censored"]) if has else "-"
        ratio = f"{s['ratio']:.0f}x" if has else "-"
        below = f"{s['below_opt']}/{s['compared']}" if has else "-"
        closed = f"{s['closed']}/{s['bnb_open']}" if has else "-"
        print(f"| {s['file']} | {s['proven']}/{s['instances']} ({s['exact']}) "
              f"| {fmt_ms(s['median_ms'], s['median_censored'])} "
              f"| {fmt_ms(s['p90_ms'], s['p90_censored'])} | {bnb} | {ratio} | {below} "
              f"| {closed} |")
    bad = [s for s in sums if s.get("above_opt")]
    if bad:
        print("\nWARNING: CP-SAT's proven relaxation optimum is above the B&B optimum on "
              + ", ".join(f"{s['file']} ({s['above_opt']})" for s in bad)
              + ": the relaxation must be <= the order optimum; check the model.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": all_rows, "summary": sums}, f, indent=1)


if __name__ == "__main__":
    main()
