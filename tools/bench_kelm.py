"""Write docs/bench-kelm.md: MultiLabelKELM's per-instance learn and predict
time and its memory, for windows W = 128, 256, 512.

The stream is yeast's rows (d = 103 features, m = 14 labels) in a shuffled
order, repeated: the dicts and label sets are built before timing.  After a
warm-up that fills the window, each instance goes through what the gateway
does with it, ``decide_one(x)`` (observe, predict, queue it in the pending
block, and add a full block to the window), then ``learn(slots, z, y)`` for
the labelled fifth; ``predict_one(x)`` (read-only) is timed apart on the
same instances.  Every timing is repeated and the median repetition kept.

    python tools/bench_kelm.py                  # W = 128, 256, 512; about a minute
    python tools/bench_kelm.py --n 1000 --repeats 1
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from edgelearn import MultiLabelKELM
from edgelearn.datasets import load

OUT = Path(__file__).resolve().parents[1] / "docs" / "bench-kelm.md"
AIM_WINDOW = 256
AIM_MS = 1.0


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="tools/bench_kelm.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", type=int, nargs="+", default=[128, 256, 512], help="W values (default: 128 256 512)")
    parser.add_argument("--block", type=int, default=20, help="block size (default: 20)")
    parser.add_argument("--n", type=int, default=4000, help="timed instances per repetition (default: 4000)")
    parser.add_argument("--repeats", type=int, default=3, help="repetitions, the median kept (default: 3)")
    parser.add_argument("--labelled", type=float, default=0.2, help="fraction of instances labelled (default: 0.2)")
    parser.add_argument("--out", default=str(OUT), help="markdown file (default: docs/bench-kelm.md)")
    return parser.parse_args(argv)


def stream(n: int, labelled: float, seed: int = 0):
    ds = load("yeast")
    rng = np.random.default_rng(seed)
    rows = np.concatenate([rng.permutation(len(ds.y)) for _ in range(n // len(ds.y) + 1)])[:n]
    xs = [dict(zip(ds.feature_names, ds.X[i].tolist())) for i in rows]
    ys = [dict(zip(ds.label_names, map(bool, ds.y[i]))) for i in rows]
    return xs, ys, rng.random(n) < labelled, ds.X.shape[1], ds.y.shape[1]


def measure(window: int, args, xs, ys, labelled, d: int, m: int) -> dict:
    model = MultiLabelKELM(window=window, block_size=args.block, max_labels=m, capacity=128)
    warm = 3 * window
    for x, y, lab in zip(xs[:warm], ys[:warm], labelled[:warm]):
        decision = model.decide_one(x)
        if lab:
            model.learn(decision.slots, decision.z, y)
    budget = model.memory_bytes()
    step_runs, predict_runs, flush_runs, worst = [], [], [], []
    start = warm
    for _ in range(args.repeats):
        part = slice(start, start + args.n)
        steps = np.empty(args.n)
        flushes = []
        for i, (x, y, lab) in enumerate(zip(xs[part], ys[part], labelled[part])):
            flushing = model.n_pending == model.block_size
            t0 = time.perf_counter()
            decision = model.decide_one(x)
            if lab:
                model.learn(decision.slots, decision.z, y)
            steps[i] = time.perf_counter() - t0
            if flushing:
                flushes.append(steps[i])
        t0 = time.perf_counter()
        for x in xs[part]:
            model.predict_one(x)
        predict_runs.append((time.perf_counter() - t0) / args.n)
        step_runs.append(float(steps.mean()))
        flush_runs.append(float(np.mean(flushes)))
        worst.append(float(np.percentile(steps, 99)))
        start += args.n
    assert model.memory_bytes() == budget
    # The page says the timings are of a full window.
    assert model.n_window == window, f"the window held {model.n_window} of {window} instances"
    median = lambda values: float(np.median(values))  # noqa: E731
    return {
        "window": window, "step_ms": 1e3 * median(step_runs), "predict_ms": 1e3 * median(predict_runs),
        "flush_ms": 1e3 * median(flush_runs), "p99_ms": 1e3 * median(worst), "memory_bytes": budget,
        "step_runs_ms": [1e3 * v for v in step_runs],
    }


def render(results, args, argv, seconds, d, m) -> str:
    command = "python tools/bench_kelm.py" + ("" if not argv else " " + shlex.join(argv))
    import numba

    aim = next((r for r in results if r["window"] == AIM_WINDOW), None)
    default = MultiLabelKELM()
    lines = [
        "# MultiLabelKELM: time per instance and memory",
        "",
        f"Written by `{command}` on {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M UTC}; "
        f"`{platform.platform()}`, {os.cpu_count()} CPUs (one core used), Python {platform.python_version()}, "
        f"NumPy {np.__version__}, numba {numba.__version__}; load average "
        f"{', '.join(f'{v:.2f}' for v in os.getloadavg())} at the end (the machine was shared: "
        f"timings are noisy upwards). Wall time {seconds:.0f} s.",
        "",
        f"Yeast rows (d = {d} features, m = {m} labels), shuffled and repeated, as dicts built before "
        f"timing; {args.labelled:.0%} of the instances labelled. `MultiLabelKELM(window=W, "
        f"block_size={args.block}, max_labels={m}, capacity=128)`, other parameters default "
        f"(lam = gam = {default.lam:g}, J0 = {default.J0:g}, threshold = \"{default.threshold}\", "
        f"clamp_label_count = {default.clamp_label_count}, max_unlabelled = W/2). After a warm-up of 3W instances, "
        f"{args.n:,} instances per repetition, {args.repeats} repetition(s), the median kept.",
        "",
        "* **learn step**: `decide_one(x)` (observe, predict, queue in the pending block, and add a full "
        "block to the window: drop instances, graph cut and downdate, Schur add) then `learn(slots, z, y)` "
        "for a labelled instance: the gateway's whole per-message cost, block additions amortized;",
        "* **block addition**: the mean of the steps that added a block (one in "
        f"{args.block}), the dominant cost;",
        "* **predict**: `predict_one(x)`, read-only (standardize, one kernel row against the window, "
        "the scores).",
        "",
        "| W | learn step, ms/instance | p99 step, ms | block addition, ms | predict, ms/instance | memory_bytes() |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['window']} | {r['step_ms']:.3f} | {r['p99_ms']:.2f} | {r['flush_ms']:.2f} | "
            f"{r['predict_ms']:.3f} | {r['memory_bytes']:,} |"
        )
    lines.append("")
    if aim is not None:
        met = aim["step_ms"] < AIM_MS
        lines.append(
            f"Aim: under {AIM_MS:g} ms per instance at W = {AIM_WINDOW}: **{'met' if met else 'not met'}** "
            f"({aim['step_ms']:.3f} ms per learn step; repetitions "
            f"{', '.join(f'{v:.3f}' for v in aim['step_runs_ms'])} ms)."
        )
        lines.append("")
    lines.append(
        "memory_bytes() is the fixed budget (the formula in `MultiLabelKELM`'s docstring, plus the "
        "channel space); it did not change during the run. The window held W instances at the end."
    )
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    start = time.perf_counter()
    total = 3 * max(args.windows) + args.n * args.repeats
    xs, ys, labelled, d, m = stream(total, args.labelled)
    measure(min(args.windows), argparse.Namespace(**{**vars(args), "n": 50, "repeats": 1}), xs, ys, labelled, d, m)
    results = []
    for window in args.windows:
        results.append(measure(window, args, xs, ys, labelled, d, m))
        r = results[-1]
        print(f"W={window}: step {r['step_ms']:.3f} ms, predict {r['predict_ms']:.3f} ms, "
              f"block {r['flush_ms']:.2f} ms, {r['memory_bytes']:,} bytes", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - start
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(results, args, argv, seconds, d, m), encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
