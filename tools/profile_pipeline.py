#!/usr/bin/env python3
"""Where a single reading's CPU goes in ``Pipeline.handle``: each step of the
per-message path timed alone on the stream of ``tools/bench_gateway.py``'s "pipeline
alone" (occupancy, channels dropping out with probability 0.01, every reading
labelled; the learner ``--kind``, the operator's default (``edgelearn.DEFAULT_KIND``)
unless told, with 64 slots and target query rate 0.1), beside a bare msgpack decode and
encode of the same payloads. CPU time per message
(``time.process_time``), the least of ``--passes`` passes, after a warm-up pass.

Each row is its step alone, run over every reading again, so rows that write state
(the learner, the counters) time the same work as ``handle`` does, not the same
results. The steps: ``unpack`` (msgpack), ``plain_reading`` (the fast path's
checks), ``claim`` (channel names to slots, :class:`~firmware_bridge.pipeline.lean.LeanBinary`),
``decide_learn`` (claim and the one kernel call that observes, predicts, asks and
learns), ``predict`` (that, the counters, the sequence and the metrics), ``answer``
(that and the encoded prediction), ``handle`` (all of it).

Example::

    python tools/profile_pipeline.py --count 20000
    python tools/profile_pipeline.py --count 20000 --kind paacds
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from edgelearn import DEFAULT_KIND, KINDS  # noqa: E402
from edgelearn.learners.registry import BUILTIN  # noqa: E402
from firmware_bridge.pipeline import Pipeline  # noqa: E402
from firmware_bridge.wire import KnownNames, Topics, bounded_unpackb, encode_data, plain_reading  # noqa: E402
from bench_gateway import alone_readings, bare_codec, cpu_per_item  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=20000, help="readings (default: 20000)")
    parser.add_argument("--passes", type=int, default=5, help="passes, the least counts (default: 5)")
    one_call = [kind for kind in BUILTIN if "decide_learn" in KINDS[kind].capabilities]
    parser.add_argument("--kind", default=DEFAULT_KIND, choices=one_call,
                        help=f"learner kind, one with a one-call path (default: {DEFAULT_KIND})")
    args = parser.parse_args(argv)
    readings = alone_readings(args.count, True)
    payloads = [encode_data(*reading) for reading in readings]
    topic = Topics().data("p0")
    pipeline = Pipeline(args.kind, {"capacity": 64, "target_query_rate": 0.1})
    for payload in payloads:  # warm-up: kernels compiled, both labels seen
        pipeline.handle(topic, payload, 0.0)
    stream = pipeline.stream_state("p0")
    lean = stream.lean
    if lean is None:
        raise SystemExit(f"profile_pipeline: the {args.kind} stream did not take the one-call "
                         "path (only a binary learner declaring 'decide_learn' does)")
    # The pipeline's own checks, made as it makes them (a name cache, a bounded unpacker).
    limits = pipeline.limits
    names = KnownNames(limits.max_channel_name_bytes)
    unpack = bounded_unpackb(limits)
    decoded = [unpack(payload) for payload in payloads]
    plain = [plain_reading(obj, limits, names) for obj in decoded]
    bare = bare_codec()

    def decide_learn(reading):
        slots, z = lean.claim(reading[2])
        return lean.decide_learn(slots, z, lean.labels[reading[3]][2], lean.learn_if_asked)

    rows = {
        "bare msgpack decode + encode": cpu_per_item(bare, payloads, args.passes),
        "unpack": cpu_per_item(unpack, payloads, args.passes),
        "plain_reading": cpu_per_item(lambda o: plain_reading(o, limits, names), decoded,
                                      args.passes),
        "claim": cpu_per_item(lambda r: lean.claim(r[2]), plain, args.passes),
        "decide_learn": cpu_per_item(decide_learn, plain, args.passes),
        "predict": cpu_per_item(lambda r: pipeline.predict(stream, r, 0.0), plain, args.passes),
        "answer": cpu_per_item(lambda r: pipeline.answer(stream, r, 0.0), plain, args.passes),
        "handle": cpu_per_item(lambda p: pipeline.handle(topic, p, 0.0), payloads, args.passes),
    }
    print(f"CPU us per reading ({args.kind}), least of {args.passes} passes over {args.count} "
          f"(load {' '.join(f'{v:.2f}' for v in os.getloadavg())})")
    for name, value in rows.items():
        print(f"  {name:30s} {value:6.2f}")
    print(f"  handle / bare                  {rows['handle'] / rows['bare msgpack decode + encode']:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
