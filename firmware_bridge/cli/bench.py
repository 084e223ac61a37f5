"""``edgelearn bench`` (replay throughput against River, or memory over a long
stream) and ``edgelearn warmup`` (compile the gateway's kernels into the Numba
cache before the service first starts)."""

from __future__ import annotations

import json
import sys

from .common import CliError, kind_argument


def cmd_bench(args) -> int:
    from edgelearn import bench

    if args.memory:
        def progress(i, n):
            if not args.json:
                print(f"  {i:,}/{n:,} instances", file=sys.stderr)

        result = bench.memory_over_stream(n=args.n, distinct_names=args.names, progress=progress)
        if args.json:
            json.dump(result, sys.stdout, indent=2)
            print()
        else:
            print(f"PAACDS dict path, {result['n']:,} instances, {result['distinct_names']:,} distinct channel names, capacity {result['capacity']}")
            for s in result["samples"]:
                print(f"  {s['instances']:>9,}  memory_bytes {s['memory_bytes']:,}  RSS {s['rss_bytes'] / 2**20:.1f} MiB")
            print(f"channels ignored {result['channels_ignored']:,}, evicted {result['channels_evicted']:,}")
        return 0
    result = bench.replay_throughput(n=args.n, d=args.d, river_n=args.river_n)
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return 0
    p = result["paacds"]
    if result.get("default") is not None:
        a = result["default"]
        print(f"{a['kind']} (the default learner), jitted row loop, same instances, 20% labels: "
              f"{a['instances_per_s']:,.0f} instances/s (accuracy {a['accuracy']:.3f}, asked {a['query_rate']:.1%})")
    print(f"PAACDS replay, d={result['d']}, {result['n']:,} instances, 20% labels: "
          f"{p['instances_per_s']:,.0f} instances/s (accuracy {p['accuracy']:.3f}, asked {p['query_rate']:.1%})")
    if result["river"] is None:
        print("River is not installed (pip install -e '.[dev]'): no comparison.")
    else:
        r = result["river"]
        print(f"River PAClassifier, same stream, first {r['n']:,} instances, every label: "
              f"{r['instances_per_s']:,.0f} instances/s (accuracy {r['accuracy']:.3f})")
        a = result["river_from_array"]
        print(f"River again with the array rows turned into dicts inside the timing: {a['instances_per_s']:,.0f} instances/s")
        print(f"ratio {result['ratio']:,.1f}x (River's learner alone), {result['ratio_from_array']:,.1f}x (River replaying the array)")
    return 0


def cmd_warmup(args) -> int:
    import dataclasses
    import os

    from firmware_bridge.service.config import load_config
    from firmware_bridge.service.warmup import warm_up

    config, errors = load_config(args.config)
    if errors:
        raise CliError("the configuration has errors:\n  " + "\n  ".join(errors))
    if not os.environ.get("NUMBA_CACHE_DIR") and not args.json:
        print("edgelearn warmup: NUMBA_CACHE_DIR is not set: the kernels are cached beside the "
              "package (or in ~/.cache). The systemd unit sets NUMBA_CACHE_DIR=/var/cache/edgelearn/numba; "
              "warm that one up.", file=sys.stderr)
    reports = []
    for kind in args.kind or [config.learner_kind]:
        if kind != config.learner_kind:
            # Another kind than the file's runs with that kind's defaults.
            config, errors = load_config(args.config, {"learner.kind": kind, "learner.params": {}})
            if errors:
                raise CliError("the configuration has errors:\n  " + "\n  ".join(errors))
        report = warm_up(config)
        reports.append(report)
        if not args.json:
            print(report.line(), flush=True)
    if args.json:
        json.dump([dataclasses.asdict(r) for r in reports], sys.stdout, indent=2)
        print()
    return 0


def add_parser(sub) -> None:
    """Register ``edgelearn bench`` and ``edgelearn warmup``."""
    from edgelearn.learners.registry import BUILTIN

    bench = sub.add_parser(
        "bench",
        help="measure replay throughput against River, or memory over a long stream",
        description=(
            "Throughput: PAACDS's jitted replay over N synthetic instances with D channels "
            "(capricious: each instance loses up to half its channels), 20% labels, beside "
            "River's PAClassifier on the first --river-n instances of the same stream. "
            "--memory: PAACDS's dict path over N instances carrying --names distinct "
            "channel names, sampling memory_bytes() and the process RSS."
        ),
    )
    bench.add_argument("--n", type=int, default=1_000_000, help="instances (default 1,000,000)")
    bench.add_argument("--d", type=int, default=64, help="channels (default 64)")
    bench.add_argument("--river-n", type=int, default=200_000, help="instances River runs (default 200,000)")
    bench.add_argument("--memory", action="store_true", help="measure memory instead of throughput")
    bench.add_argument("--names", type=int, default=100_000, help="--memory: distinct channel names (default 100,000)")
    bench.add_argument("--json", action="store_true", help="print the result as JSON")
    bench.set_defaults(func=cmd_bench)

    warmup = sub.add_parser(
        "warmup",
        help="compile the gateway's kernels into the Numba cache before the service first starts",
        description=(
            "Run the gateway's per-message path (the --config file's learner, topics and "
            "limits) on a short synthetic stream, so that Numba compiles every kernel it "
            "calls and writes it to its cache (NUMBA_CACHE_DIR). Run it at install with the "
            "environment of the systemd unit, whose first start would otherwise compile "
            "while the watchdog waits. Prints, per learner kind, the kernels compiled and "
            "those loaded from the cache (a second run compiles none)."
        ),
    )
    warmup.add_argument("--config", default=None, metavar="FILE",
                        help="the gateway.toml the service runs (default: the built-in defaults, learner paacds)")
    warmup.add_argument("--kind", action="append", type=kind_argument, metavar="KIND",
                        help=f"warm this learner kind instead of the config's (repeatable; one of "
                             f"{', '.join(BUILTIN)}, or a plug-in's)")
    warmup.add_argument("--json", action="store_true", help="print the reports as JSON")
    warmup.set_defaults(func=cmd_warmup)
