"""A fleet that learns together, measured in one process (no broker): what a new stream
gains from starting at the group model of k gateways, and when sharing stops helping.

Each of k gateways runs one stream of one concept (six channels in their own units,
each missing 15% of the time) for ``--trained`` readings with ActiveAROW asking for
``--rate`` of the labels; every ``--interval`` readings each stream's contribution is
packed (``edgelearn.contributions.pack``, the bytes a broker would carry), unpacked and
merged into the group model. Then a new stream of ``--new`` readings runs three ways
at the same label budget, prequentially: started from the group model, started alone,
and a stream already trained for ``--trained`` readings (gateway 0's, continuing). With
``--offset S`` each stream's concept has its own threshold, drawn from N(0, S): the
streams then differ a little, and the group model is a compromise.

This is the library's merge, with the contributions' bytes, not gateway processes over
mosquitto: tools/results_fleet_gateways.py (docs/results-fleet-gateways.md) measures
the fleet with k gateway processes, one mosquitto and a NATS cluster.

    .venv/bin/python tools/results_fleet.py                  # writes docs/results-fleet.md
    .venv/bin/python tools/results_fleet.py --quick --out -  # smoke run, to stdout
"""

from __future__ import annotations

import argparse
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from edgelearn import ActiveAROW
from edgelearn.contributions import pack, unpack

WEIGHTS = np.array([1.0, -0.8, 0.6, -0.5, 0.4, 0.3])
NAMES = ("t", "h", "c", "p", "l", "m")
SCALE = np.array([5.0, 10.0, 100.0, 3.0, 50.0, 1.0])
SHIFT = np.array([20.0, 50.0, 600.0, 1000.0, 200.0, 0.0])
WINDOWS = (100, 500, 2000)


def stream(n: int, rng: np.random.Generator, threshold: float):
    z = rng.normal(size=(n, len(NAMES)))
    present = rng.random((n, len(NAMES))) > 0.15
    y = z @ WEIGHTS > threshold
    raw = z * SCALE + SHIFT
    return [({NAMES[j]: float(raw[i, j]) for j in range(len(NAMES)) if present[i, j]}, bool(y[i]))
            for i in range(n)]


def run(model: ActiveAROW, readings, asked_so_far: list | None = None) -> tuple[np.ndarray, int]:
    """Prequential: predict, ask at the budget, learn the asked; (right, labels).
    ``asked_so_far`` gets the labels asked up to each reading."""
    right = np.empty(len(readings), dtype=bool)
    labels = 0
    for i, (x, y) in enumerate(readings):
        d = model.decide_one(x)
        right[i] = d.label == y
        if d.ask:
            labels += 1
            model.learn(d.slots, d.z, y)
        if asked_so_far is not None:
            asked_so_far.append(labels)
    return right, labels


#: Readings of the trailing window whose accuracy "reaches" a level.
REACH_WINDOW = 200


def labels_to_reach(right: np.ndarray, asked: list, level: float) -> float:
    """Labels asked by the first reading at which the accuracy over the last
    REACH_WINDOW readings is at least ``level``; NaN if never."""
    if len(right) < REACH_WINDOW:
        return float("nan")
    trailing = np.convolve(right, np.ones(REACH_WINDOW), "valid") / REACH_WINDOW
    reached = np.flatnonzero(trailing >= level)
    return float(asked[reached[0] + REACH_WINDOW - 1]) if len(reached) else float("nan")


def one_fleet(k: int, seed: int, args) -> dict:
    rng = np.random.default_rng(seed)
    params = {"target_query_rate": args.rate, "capacity": 64}
    thresholds = rng.normal(0.0, args.offset, size=k + 1) if args.offset else np.zeros(k + 1)
    learners = [ActiveAROW(seed=seed * 100 + g, **params) for g in range(k)]
    data = [stream(args.trained, rng, thresholds[g]) for g in range(k)]
    group, sent, labels_fleet = None, 0, 0
    for start in range(0, args.trained, args.interval):
        for g, learner in enumerate(learners):
            _, used = run(learner, data[g][start:start + args.interval])
            labels_fleet += used
            payload = pack(learner.contribution(), "results", f"gw{g}", start)
            sent += len(payload)
            received = unpack(payload)
            group = ActiveAROW.merge([received.contribution], [received.weight], group=group)
    new = stream(args.new, rng, thresholds[k])
    right, asked = {}, {"fleet": [], "alone": []}
    right["fleet"], labels_new = run(ActiveAROW.from_group(group, seed=seed, **params), new, asked["fleet"])
    right["alone"], labels_alone = run(ActiveAROW(seed=seed, **params), new, asked["alone"])
    right["trained"], _ = run(learners[0], new)
    level = 0.95 * right["trained"].mean()
    reach = {how: labels_to_reach(right[how], asked[how], level) for how in ("fleet", "alone")}
    readings_sent = k * args.trained
    return {"right": right, "reach": reach, "labels_new": labels_new, "labels_alone": labels_alone,
            "bytes_per_reading": sent / readings_sent, "bytes_per_contribution": sent / (readings_sent / args.interval),
            "labels_fleet": labels_fleet}


def table(args) -> list[str]:
    lines = ["| k gateways | start | " + " | ".join(f"first {w}" for w in WINDOWS if w <= args.new)
             + " | labels of the new stream | labels to reach 95% of the trained stream |",
             "|---|---|" + "---|" * sum(w <= args.new for w in WINDOWS) + "---|---|"]
    notes = []
    for k in args.k:
        runs = [one_fleet(k, seed, args) for seed in args.seeds]
        for how in ("fleet", "alone", "trained"):
            cells = [f"{100 * np.mean([r['right'][how][:w].mean() for r in runs]):.1f}"
                     for w in WINDOWS if w <= args.new]
            used = {"fleet": "labels_new", "alone": "labels_alone"}.get(how)
            labels = f"{np.mean([r[used] for r in runs]):.0f}" if used else "(same budget)"
            reach = (f"{np.mean([r['reach'][how] for r in runs]):.0f}"
                     f" ({sum(np.isnan(r['reach'][how]) for r in runs)} never)") if used else ""
            name = {"fleet": "from the group model", "alone": "alone",
                    "trained": f"trained for {args.trained}"}[how]
            lines.append(f"| {k} | {name} | " + " | ".join(cells) + f" | {labels} | {reach} |")
        first = min(500, args.new)
        acc = {how: 100 * np.mean([r["right"][how][:first].mean() for r in runs]) for how in ("fleet", "alone", "trained")}
        notes.append(f"k = {k}, first {first} readings: from the group model {acc['fleet'] - acc['trained']:+.1f} "
                     f"points against the trained stream (the aim: within 2), {acc['fleet'] - acc['alone']:+.1f} "
                     f"against the stream alone (the aim: at least +5)")
        notes.append(f"k = {k}: {np.mean([r['bytes_per_contribution'] for r in runs]):.0f} bytes per "
                     f"contribution ({np.mean([r['bytes_per_reading'] for r in runs]):.1f} bytes per reading "
                     f"at one contribution per {args.interval} readings); the k trained streams asked "
                     f"{np.mean([r['labels_fleet'] for r in runs]):.0f} labels in all")
    return lines + [""] + [f"* {n}" for n in notes]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--trained", type=int, default=3000)
    parser.add_argument("--new", type=int, default=2000)
    parser.add_argument("--interval", type=int, default=250)
    parser.add_argument("--rate", type=float, default=0.1)
    parser.add_argument("--offset", type=float, default=0.0)
    parser.add_argument("--quick", action="store_true", help="k = 1, 2; one seed; 600 readings")
    parser.add_argument("--out", default="docs/results-fleet.md", help="'-': stdout")
    args = parser.parse_args(argv)
    if args.quick:
        args.k, args.seeds, args.trained, args.new = [1, 2], [1], 600, 500
    started = time.time()
    body = ["# A fleet that learns together: results (one process, no broker)", "",
            __doc__.split("\n\n")[1].replace("\n", " "), "",
            f"Accuracy (%) of a new stream over its first readings, mean of seeds {args.seeds}, "
            f"labels asked at {args.rate:.0%}, concept offsets N(0, {args.offset}):", ""]
    body += table(args)
    if not args.quick and args.offset == 0.0:
        offset_args = argparse.Namespace(**{**vars(args), "offset": 0.5, "k": [4]})
        body += ["", f"Streams whose concepts differ a little (each its own threshold, N(0, 0.5)), "
                     f"k = 4:", ""] + table(offset_args)
    body += ["", f"Made by `{' '.join(shlex.quote(a) for a in [sys.executable.rsplit('/', 1)[-1], *sys.argv])}` "
                 f"in {time.time() - started:.0f} s on {platform.machine()}, Python {platform.python_version()}.",
             "", f"Labels to reach 95%: the labels the new stream had asked by the first reading at which "
                f"its accuracy over the last {REACH_WINDOW} readings reached 95% of the trained stream's "
                f"accuracy over the new stream (mean over the seeds that reached it; 'never': seeds that "
                f"did not within the run). The first reading it can be read at is the {REACH_WINDOW}th, so "
                f"it is never below the labels asked by then (about {REACH_WINDOW} x the rate).",
            "", "Not measured here: gateway processes over mosquitto or the NATS cluster, "
                "the fleet's total labels for one accuracy against isolated gateways', the gateway's CPU "
                "per message: docs/results-fleet-gateways.md (tools/results_fleet_gateways.py) has them."]
    text = "\n".join(body) + "\n"
    if args.out == "-":
        print(text)
    else:
        Path(args.out).write_text(text)
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
