#!/usr/bin/env python3
"""The gateway's CPU per single-reading message over the bare relay's, the two
alternated run by run on one broker, as ``tools/bench_gateway.py``'s cost per message
runs them, without the rest of its page. Same publisher, subscriber, settings and relay
as that section; prints each run and the ratio of the bests.

Example::

    python tools/bench_relay_ratio.py --count 20000 --repeat 5
    python tools/bench_relay_ratio.py --count 20000 --repeat 5 --set checkpoints.journal=false
    python tools/bench_relay_ratio.py --count 20000 --repeat 5 --versus fleet.enabled=true

With ``--versus``, each run also measures a second gateway that has those settings
as well, and the two gateways alternate with the relay run by run; each gateway is
started afresh and warmed up for its run (so neither holds the other's state), and
the ratio of the two bests is what those settings cost per message.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import bench_gateway  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=20000, help="messages per run")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each")
    parser.add_argument("--warmup", type=int, default=3000)
    parser.add_argument("--kind", default=bench_gateway.edgelearn.DEFAULT_KIND)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a gateway setting (as the gateway's --set), e.g. "
                        "checkpoints.journal=false: what one part costs")
    parser.add_argument("--versus", action="append", default=[], metavar="KEY=VALUE",
                        help="also measure a gateway with these settings added, alternated "
                        "with the first (e.g. fleet.enabled=true: what the fleet costs)")
    args = parser.parse_args(argv)
    if args.versus:
        return _versus(args)
    best = {"gateway": float("inf"), "relay": float("inf")}
    paired = []  # each run's gateway / the relay's run right after it
    with bench_gateway.bench_on_broker("bench-relay-ratio-", args.kind, args.warmup) as bench:
        gateway = bench.start_gateway("bench", *args.set)
        bench.warm_up("w")
        relay = bench.start_relay()
        bench.warm_up("rw", (bench_gateway.RELAY_DATA,))
        for run in range(args.repeat):
            cpu = bench.throughput(f"t{run}_", args.count, gateway.pid)["cpu_us"]["gateway"]
            best["gateway"] = min(best["gateway"], cpu)
            print(f"run {run + 1} gateway: {cpu:.2f} µs/message", flush=True)
            relay_cpu = bench.relay_throughput(run, args.count, relay)["cpu_us"]["relay"]
            best["relay"] = min(best["relay"], relay_cpu)
            paired.append(cpu / relay_cpu if relay_cpu else float("nan"))
            print(f"run {run + 1} relay:   {relay_cpu:.2f} µs/message", flush=True)
    print(f"learner {args.kind}; {' '.join(args.set) or 'default settings'}; best of {args.repeat}: gateway {best['gateway']:.2f} "
          f"µs/message, relay {best['relay']:.2f}; ratio gateway/relay "
          f"{best['gateway'] / best['relay']:.3f} (median of the runs' own ratios "
          f"{statistics.median(paired):.3f})")
    return 0


def _versus(args: argparse.Namespace) -> int:
    """Gateway A (``--set``), gateway B (``--set`` and ``--versus``) and the relay,
    run by run; each gateway started and warmed up afresh for its run."""
    sides = {"A": list(args.set), "B": [*args.set, *args.versus]}
    best = {"A": float("inf"), "B": float("inf"), "relay": float("inf")}
    with bench_gateway.bench_on_broker("bench-relay-versus-", args.kind, args.warmup) as bench:
        relay = bench.start_relay()
        bench.warm_up("rw", (bench_gateway.RELAY_DATA,))
        for run in range(args.repeat):
            for side, settings in sides.items():
                gateway = bench.start_gateway(f"{side.lower()}{run}", *settings)
                bench.warm_up(f"w{side}{run}_")
                cpu = bench.throughput(f"t{side}{run}_", args.count, gateway.pid)["cpu_us"]["gateway"]
                bench.stop(gateway)
                best[side] = min(best[side], cpu)
                print(f"run {run + 1} gateway {side}: {cpu:.2f} µs/message", flush=True)
            cpu = bench.relay_throughput(run, args.count, relay)["cpu_us"]["relay"]
            best["relay"] = min(best["relay"], cpu)
            print(f"run {run + 1} relay:     {cpu:.2f} µs/message", flush=True)
    print(f"learner {args.kind}; A: {' '.join(sides['A']) or 'default settings'}; "
          f"B: A with {' '.join(args.versus)}; best of {args.repeat}: A {best['A']:.2f}, "
          f"B {best['B']:.2f}, relay {best['relay']:.2f} µs/message; ratio B/A "
          f"{best['B'] / best['A']:.3f}; A/relay {best['A'] / best['relay']:.3f}, "
          f"B/relay {best['B'] / best['relay']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
