#!/usr/bin/env python3
"""The labels aim of docs/results-fleet-gateways.md in one process (no broker, so no
gateway lag): the gateways page's fleet protocol (``--streams`` streams of one concept
joining every ``--join`` readings, ``--trained`` readings each, one channel of each dark
for readings 1,000-1,599, ActiveAROW at ``--rate``, the group model merged from every
stream's contribution every ``--interval`` readings, a new stream starting from it),
three ways: isolated streams, the fleet with a group-started stream's label budget as
before issue 29's informed start (``ActiveAROW._started_from_group`` replaced by a
no-op), and the fleet as it is. For each: the labels each stream needed to reach 95% of
the trained stream's accuracy (``results_fleet.labels_to_reach``: room-0 continuing on
``--new`` fresh readings; a stream that never did counts all it asked), summed, and the
labels the group-started streams asked over their first 200 readings.

    .venv/bin/python tools/fleet_labels_one_process.py --seeds 1 2 3 [--offset 0.5]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from results_fleet import REACH_WINDOW, labels_to_reach  # noqa: E402
from results_fleet_gateways import NAMES, readings  # noqa: E402

from edgelearn import ActiveAROW  # noqa: E402

INFORMED_START = ActiveAROW._started_from_group


def one_fleet(shared: bool, informed: bool, seed: int, args) -> dict:
    ActiveAROW._started_from_group = INFORMED_START if informed else (lambda self: None)
    rng = np.random.default_rng(seed)
    offsets = rng.normal(0, args.offset, size=args.streams + 1) if args.offset else np.zeros(args.streams + 1)
    data = [readings(args.trained, rng, offsets[j], j % len(NAMES)) for j in range(args.streams)]
    fresh = readings(args.new, rng, offsets[args.streams], None)
    learners: list = [None] * args.streams
    started_from_group = [False] * args.streams
    right = np.zeros((args.streams, args.trained), dtype=bool)
    asked = np.zeros((args.streams, args.trained), dtype=np.int64)
    group = None
    for step in range((args.streams - 1) * args.join + args.trained):
        for j in range(args.streams):
            seq = step - j * args.join
            if not 0 <= seq < args.trained:
                continue
            if learners[j] is None:
                learners[j] = ActiveAROW(capacity=64, target_query_rate=args.rate)
                if shared and group is not None:
                    learners[j].load_group(group)
                    started_from_group[j] = True
            x, y = data[j][seq]
            d = learners[j].decide_one(x)
            right[j, seq], asked[j, seq] = d.label == y, d.ask
            if d.ask:
                learners[j].learn(d.slots, d.z, y)
        if shared and step % args.interval == args.interval - 1:
            group = ActiveAROW.merge([m.contribution() for m in learners if m is not None], group=group)
    level = 0.95 * np.mean([learners[0].decide_one(x).label == y for x, y in fresh])
    reach = [labels_to_reach(right[j], list(np.cumsum(asked[j])), level) for j in range(args.streams)]
    reach = [float(asked[j].sum()) if np.isnan(r) else r for j, r in enumerate(reach)]
    early = [int(asked[j, :REACH_WINDOW].sum()) for j in range(args.streams) if started_from_group[j]]
    return {"reach": sum(reach), "accuracy": float(right.mean()), "labels": int(asked.sum()), "early": early}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--trained", type=int, default=3000)
    parser.add_argument("--new", type=int, default=2000)
    parser.add_argument("--join", type=int, default=300)
    parser.add_argument("--interval", type=int, default=150, help="readings between merges (the page: 1 s)")
    parser.add_argument("--rate", type=float, default=0.1)
    parser.add_argument("--offset", type=float, default=0.0)
    args = parser.parse_args(argv)
    for seed in args.seeds:
        isolated = one_fleet(False, True, seed, args)
        before = one_fleet(True, False, seed, args)
        now = one_fleet(True, True, seed, args)
        cells = []
        for name, run in (("isolated", isolated), ("fleet, budget before", before), ("fleet, informed start", now)):
            ratio = f" ({run['reach'] / isolated['reach']:.2f} of isolated)" if run is not isolated else ""
            early = (f"; group-started streams' labels over their first {REACH_WINDOW} readings "
                     f"{min(run['early'])}-{max(run['early'])}") if run["early"] else ""
            cells.append(f"{name}: labels to 95% {run['reach']:.0f}{ratio}, accuracy {100 * run['accuracy']:.1f}%, "
                         f"labels {run['labels']}{early}")
        print(f"seed {seed}, offsets N(0, {args.offset:g}): " + " | ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
