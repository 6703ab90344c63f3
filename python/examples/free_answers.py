"""What the answers a prompt gives away score: the ranking compact-v2 lists (J1 ... Jn) and the
earliest-completion listing step-v2 follows (J1 at every step of schedlm.StepEnv), under the
label's value over the answer's (Dataset.score_answer before the headroom score) and under the
headroom score (schedlm.headroom), on schedlm.Dataset entries; and how many entries have
headroom over the better free answer (what Dataset's min_headroom keeps).

    python3 python/examples/free_answers.py FAMILY QUEUE_MIN QUEUE_MAX SIZE [WIDE]

e.g. `uniform 6 8 200` (docs/python.md, "The headroom score").
"""

import statistics
import sys

import schedlm


def main():
    family, lo, hi, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    shape = {"wide": float(sys.argv[5])} if len(sys.argv) > 5 else {}
    data = schedlm.Dataset(family=family, queue=(lo, hi), size=size, seed=1, **shape)
    ratio, ranking, listing, headroom = [], [], [], []
    for e in data:
        meta = e["metadata"]
        answer = " ".join(f"J{j}" for j in range(1, len(meta["instance"]["queue"]) + 1))
        v = schedlm.score(e, answer)["answer_value"]
        ratio.append(1.0 if v <= 0 else min(1.0, meta["value"] / v))
        ranking.append(data.score_answer(answer, e))
        env = schedlm.StepEnv(meta["instance"], objective=meta["objective"], best=meta["value"])
        while not env.done:
            env.step(0)
        listing.append(env.reward())
        free = schedlm.reference(meta["instance"], meta["objective"])["reference"]
        headroom.append((free - meta["value"]) / meta["value"] if meta["value"] > 0 else 0.0)

    def show(name, xs):
        ones = sum(x == 1.0 for x in xs) / len(xs)
        print(f"{name}: mean {statistics.mean(xs):.3f}, 1.0 on {ones:.0%}")

    print(f"{family} queue {lo}..{hi}, {size} entries, seed 1 {shape or ''}")
    show("ranking, label value / answer value", ratio)
    show("ranking, headroom score", ranking)
    show("ect listing, headroom score", listing)
    for x in (0.0, 0.01):
        share = sum(h > x + 1e-9 for h in headroom) / len(headroom)
        print(f"better free answer more than {x:.0%} above the label: {share:.0%} of entries")


if __name__ == "__main__":
    main()
