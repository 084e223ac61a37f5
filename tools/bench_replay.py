"""Write docs/bench-replay.md: PAACDS replay throughput beside River, and
memory over a long stream of new channel names.

    python tools/bench_replay.py                 # full size: 1,000,000 instances each
    python tools/bench_replay.py --n 100000      # quicker

Times are the CPU time of the timing thread (``--clock cpu``, the default: on a
shared machine the wall clock counts what other processes take); ``--clock wall``
times by the wall clock.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

from edgelearn import bench

OUT = Path(__file__).resolve().parents[1] / "docs" / "bench-replay.md"


def render(throughput: dict, memory: dict, command: str, clock: str) -> str:
    m = throughput["machine"]
    p = throughput["paacds"]
    default = throughput.get("default")
    timed = ("the CPU time of the timing thread (`time.thread_time`: the machine is shared, "
             "and a wall clock would count the other processes' time)" if clock == "cpu"
             else "the wall clock")
    lines = [
        "# Replay throughput and memory",
        "",
        f"Written by `{command}` on {dt.date.today().isoformat()}, "
        f"Python {m['python']}, {m['machine']}, {m['cpus']} CPUs (one core used).",
        "",
        "## Throughput",
        "",
        f"A linear concept over d = {throughput['d']} channels, 5% label noise; each instance loses a",
        "uniform fraction in [0, 0.5] of its channels (the PAACDS protocol). PAACDS runs the",
        "whole prequential loop in jitted code (`edgelearn.replay`, 20% label budget), best of",
        "3 runs after a warm-up. River's `PAClassifier` (PA-I, every label) runs `predict_one`",
        "then `learn_one` on the same instances as dicts, built before timing.",
        "The default learner (`edgelearn.DEFAULT_KIND`) has no array replay; its row is its",
        "jitted loop over rows (`run_rows`, what `edgelearn replay` of a log runs) on the same",
        "rows, a label learned when it asks (20% budget), best of 3 after a warm-up.",
        f"Every time is {timed}.",
        "",
        "| learner | instances | instances/s | accuracy |",
        "|---|---:|---:|---:|",
    ]
    if default is not None:
        lines.append(f"| edgelearn {default['kind']} (the default learner), jitted row loop (20% labels) "
                     f"| {throughput['n']:,} | {default['instances_per_s']:,.0f} | {default['accuracy']:.3f} |")
    lines.append(f"| edgelearn PAACDS replay (20% labels) | {throughput['n']:,} | {p['instances_per_s']:,.0f} | {p['accuracy']:.3f} |")
    if throughput["river"] is not None:
        r = throughput["river"]
        a = throughput["river_from_array"]
        lines.append(f"| River PAClassifier (every label), dicts built before timing | {r['n']:,} | {r['instances_per_s']:,.0f} | {r['accuracy']:.3f} |")
        lines.append(f"| River PAClassifier (every label), array rows to dicts included | {a['n']:,} | {a['instances_per_s']:,.0f} | |")
        lines += ["", f"Ratio: **{throughput['ratio']:,.1f}x** against River's learner alone, "
                  f"**{throughput['ratio_from_array']:,.1f}x** against River replaying the same array. "
                  f"All PAACDS runs (instances/s): {', '.join(f'{v:,.0f}' for v in p['runs_instances_per_s'])}."]
        if default is not None:
            lines += ["", f"The default learner ({default['kind']}) against River's learner alone: "
                      f"**{default['instances_per_s'] / r['instances_per_s']:,.1f}x**; all its runs "
                      f"(instances/s): {', '.join(f'{v:,.0f}' for v in default['runs_instances_per_s'])}."]
    lines += [
        "",
        "## Memory over a long stream",
        "",
        f"PAACDS's dict path (`decide_one`, learning asked labels) over {memory['n']:,} instances, each",
        f"with 4 steady channels and one of {memory['distinct_names']:,} rotating channel names;",
        f"ChannelSpace capacity {memory['capacity']}.",
        "",
        "| instances | memory_bytes() | process RSS (MiB) |",
        "|---:|---:|---:|",
    ]
    for s in memory["samples"]:
        lines.append(f"| {s['instances']:,} | {s['memory_bytes']:,} | {s['rss_bytes'] / 2**20:.1f} |")
    first, last = memory["samples"][0], memory["samples"][-1]
    lines += [
        "",
        f"memory_bytes() moved by {last['memory_bytes'] - first['memory_bytes']:,} bytes and RSS by "
        f"{(last['rss_bytes'] - first['rss_bytes']) / 2**20:+.1f} MiB between the first and the last sample; "
        f"{memory['channels_evicted']:,} slots were recycled and {memory['channels_ignored']:,} names ignored.",
        "",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="instances per benchmark (default 1,000,000)")
    parser.add_argument("--river-n", type=int, default=200_000, help="instances River runs (default 200,000)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"markdown to write (default {OUT})")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="time by the timing thread's CPU time (default) or the wall clock")
    args = parser.parse_args(argv)
    if args.clock == "cpu":
        # Every timer the library reads becomes this thread's CPU time (as in
        # tools/bench_compare.py): River's loop and the jitted loops alike.
        time.perf_counter = time.thread_time
    # Memory first: the throughput stream (n x 64 floats) would otherwise sit
    # in the RSS baseline.
    print("memory ...", file=sys.stderr)
    memory = bench.memory_over_stream(n=args.n, every=max(1, args.n // 10),
                                      progress=lambda i, n: print(f"  {i:,}/{n:,}", file=sys.stderr))
    print("throughput ...", file=sys.stderr)
    throughput = bench.replay_throughput(n=args.n, river_n=args.river_n)
    command = "python tools/bench_replay.py" + ("" if argv is None and len(sys.argv) == 1 else " " + " ".join(sys.argv[1:] if argv is None else argv))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(throughput, memory, command, args.clock))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
