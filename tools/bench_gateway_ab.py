#!/usr/bin/env python3
"""The gateway's CPU per message against another revision's, in one run.

For a change on the per-message path: ``git archive``s ``--base`` (default
``main``) into a temporary directory, starts one mosquitto and two gateways on it (the
base's code and this tree's, each its own ``python -m firmware_bridge gateway``), warms
both, then alternates ``--count`` messages as fast as possible into each (base first,
``--repeat`` times) with ``tools/bench_gateway.py``'s publisher, subscriber and
accounting. It prints every run's gateway CPU µs per message and messages/s, the best
of each side and the ratio this / base (below 1: this tree is cheaper). With
``--batch compact`` (or a number) the messages are batches, as the benchmark page's
batch runs send them, ``--count`` counts readings and the figures are per reading.
Nothing is written to the repository.

Example::

    python tools/bench_gateway_ab.py --base main --count 20000 --repeat 5
    python tools/bench_gateway_ab.py --base main --count 200000 --repeat 5 --batch compact
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import bench_gateway  # noqa: E402


def export(revision: str, into: pathlib.Path) -> pathlib.Path:
    """The files of ``revision`` (a commit of this repository) under ``into``."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def data_template(side: str) -> str:
    """Each gateway's own data topics, so one broker feeds each only its own load."""
    return bench_gateway.INSTANCE_DATA.format(name=side)


class RootedBench(bench_gateway.Bench):
    """bench_gateway's Bench, with each gateway's code from a tree of its own."""

    roots: dict[str, pathlib.Path] = {}

    def start_gateway(self, name, *settings):
        root = self.roots[name]
        log = open(self.work / f"gateway-{name}.log", "wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "firmware_bridge", "gateway", "--config", str(self.config),
             "--broker", f"127.0.0.1:{self.port}", "--state-dir", str(self.work / name),
             "--gateway-id", name, "--set", f"topics.data={data_template(name)}",
             *(a for s in settings for a in ("--set", s))],
            cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, stdout=log,
            stderr=subprocess.STDOUT)
        self.processes.append(process)
        bench_gateway._wait(lambda: self.outputs.online(name, process.pid), 120,
                            f"gateway {name}")
        return process


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main", help="the revision to compare with")
    parser.add_argument("--count", type=int, default=20000,
                        help="messages per run (readings with --batch)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each side")
    parser.add_argument("--warmup", type=int, default=3000)
    parser.add_argument("--kind", default=bench_gateway.edgelearn.DEFAULT_KIND,
                        help="both gateways' learner kind (default: the default learner, "
                        f"{bench_gateway.edgelearn.DEFAULT_KIND})")
    parser.add_argument("--batch", type=bench_gateway._batch_argument, default="1",
                        help="readings a message: 1 (default), a number, or 'compact' (as "
                        "many as the gateway's limits allow, float32 values: the page's "
                        "batch runs)")
    args = parser.parse_args(argv)
    unit = "message" if args.batch == "1" else "reading"
    best: dict[str, float] = {}
    with bench_gateway.bench_on_broker("bench-ab-", args.kind, args.warmup, RootedBench) as bench:
        RootedBench.roots = {"base": export(args.base, bench.work / "base"), "this": ROOT}
        gateways = {side: bench.start_gateway(side) for side in ("base", "this")}
        for side in gateways:
            bench.warm_up(f"w{side}", (data_template(side),))
        for run in range(args.repeat):
            for side, process in gateways.items():
                publisher = bench_gateway.Publisher(bench.port, f"{side}{run}_", args.count, True,
                                                    templates=(data_template(side),),
                                                    batch=args.batch)
                result = bench._measured(publisher, bench.watched({"gateway": process.pid}),
                                         [f"{side}{run}_0"], args.count)
                cpu = result["cpu_us"]["gateway"]
                best[side] = min(best.get(side, float("inf")), cpu)
                print(f"run {run + 1} {side}: gateway {cpu:.2f} µs/{unit}, "
                      f"{result['rate']:,.0f} {unit}s/s, missing {result['missing']}",
                      flush=True)
    print(f"learner {args.kind}, batch {args.batch}; best of {args.repeat}: base ({args.base}) "
          f"{best['base']:.2f} µs/{unit}, "
          f"this {best['this']:.2f}; ratio this/base {best['this'] / best['base']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
