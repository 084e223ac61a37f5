"""OnlineEnsemble beside River's ARF on River's own drift streams and
Electricity (issue 13, item 5), and write a markdown report.

Streams (each seed draws a new synthetic stream; Electricity is one fixed
series, where the seed only seeds the models):

* SEA: ``river.datasets.synth.SEA`` (10% label noise) whose concept moves
  through variants 0, 1, 2, 3 by ``river.datasets.synth.ConceptDriftStream``
  centred at n/4, n/2 and 3n/4 (sigmoid transitions of 1,000 instances);
* Hyperplane: ``river.datasets.synth.Hyperplane(n_features=10,
  n_drift_features=2, mag_change=0.001, noise_percentage=0.05, sigma=0.1)``,
  a hyperplane that rotates all the time;
* Electricity: the project's bundled ``edgelearn.datasets.load("elec2")``
  (River's ``Elec2`` downloads the same series; 45,312 rows, 6 features).

Every model runs test-then-train over every instance with every label, all
models of a (stream, seed) in one process on the same dicts, so the CPU-time
ratio to ARF is measured on equal terms. Reported: prequential accuracy
(over all instances), average real-time accuracy (mean accuracy of chunks of
100, as the AC_OE page), CPU µs per instance and OnlineEnsemble's time over
ARF's.

Run from the repository root::

    .venv/bin/python tools/results_drift.py --jobs 2            # the page (about 10 min on 2 quiet cores)
    .venv/bin/python tools/results_drift.py --n 2000 --seeds 0 --out /tmp/drift.md

``--cache FILE`` keeps each finished (stream, seed) result, so an interrupted
run continues where it stopped.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import os
import platform
import shlex
import sys
import time
from pathlib import Path

# One BLAS thread, set before NumPy loads: OnlineEnsemble's kelm solves are 100 x 100 to
# 300 x 300, where extra OpenBLAS threads only spin, and spinning counts as CPU time.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runs import finished, load_cache, pack_bits, save_cache, test_then_train, unpack_bits  # noqa: E402
from summaries import write_summary  # noqa: E402

CHUNK = 100
STEM = "results-drift"
STREAM_NAMES = {"sea": "SEA (ConceptDriftStream)", "hyperplane": "Hyperplane", "elec2": "Electricity"}
ELEC2_ROWS = 45_312
#: SEA's label noise and the width of each ConceptDriftStream transition.
SEA_NOISE, SEA_WIDTH = 0.1, 1000
MODEL_NAMES = {
    "oe": "OnlineEnsemble (defaults)",
    "ac_oe": "OnlineEnsemble (AC_OE paper settings)",
    "arf": "River ARF",
}
#: OnlineEnsemble's options of the paper's model (AC_OE): ten chunk-trained members and the
#: global learner, no online members, no label lags (as tools/results_ensemble.py runs it).
PAPER_SETTINGS = {"n_members": 10, "alpha": 1.0, "forgetting": None, "online_C": None, "label_lags": 0}
#: The aim: OnlineEnsemble's CPU time per instance at most this fraction of ARF's.
TIME_AIM = 0.10
#: Seeds the defaults were tuned on; the page must report others.
TUNING_SEEDS = (100, 101)


def river_stream(stream: str, seed: int):
    """An endless River generator of ``stream`` for ``seed``, with drift points from ``n``."""
    from river.datasets import synth

    if stream == "hyperplane":
        return synth.Hyperplane(seed=seed, n_features=10, n_drift_features=2, mag_change=0.001,
                                noise_percentage=0.05, sigma=0.1)
    raise ValueError(f"unknown generator {stream!r}")


def sea_stream(n: int, seed: int):
    """SEA through variants 0 -> 1 -> 2 -> 3, drifts centred at n/4, n/2, 3n/4.

    ``ConceptDriftStream(a, b, position=p)`` switches from a to b around p, so
    the chain is nested from the last drift inwards, each position relative to
    the start of its own stream."""
    from river.datasets import synth

    def sea(variant, offset):
        return synth.SEA(variant=variant, noise=SEA_NOISE, seed=seed + offset)

    tail = sea(3, 3)
    for variant in (2, 1, 0):
        tail = synth.ConceptDriftStream(stream=sea(variant, variant), drift_stream=tail,
                                        position=n // 4, width=SEA_WIDTH, seed=seed)
    return tail


def make_stream(stream: str, n: int, seed: int) -> tuple[list[dict], list[int]]:
    """``(rows, labels)``: ``n`` instances as dicts (Electricity: its first ``n`` rows)."""
    if stream == "elec2":
        from edgelearn import datasets

        data = datasets.load("elec2")
        names = [f"x{j}" for j in range(data.X.shape[1])]
        return [dict(zip(names, row)) for row in data.X[:n].tolist()], [int(v) for v in data.y[:n]]
    source = sea_stream(n, seed) if stream == "sea" else river_stream(stream, seed)
    rows, labels = [], []
    for x, y in itertools.islice(source, n):
        rows.append({str(k): float(v) for k, v in x.items()})
        labels.append(int(y))
    return rows, labels


def make_model(model: str, seed: int):
    if model == "oe":
        from edgelearn import OnlineEnsemble

        return OnlineEnsemble(seed=seed)
    if model == "ac_oe":
        from edgelearn import OnlineEnsemble

        return OnlineEnsemble(seed=seed, **PAPER_SETTINGS)
    if model == "arf":
        from river import forest

        return forest.ARFClassifier(n_models=10, seed=seed)
    raise ValueError(f"unknown model {model!r}")


def run_one(stream: str, n: int, seed: int, models: list[str]) -> dict:
    """Test-then-train of every model over one stream in this process: per
    model the correctness of each prediction and its CPU seconds."""
    rows, labels = make_stream(stream, n, seed)
    out = {"n": len(labels)}
    for model_id in models:
        model = make_model(model_id, seed)
        start = time.process_time()
        correct = test_then_train(model, rows, labels)
        seconds = time.process_time() - start
        out[model_id] = {"cpu_seconds": seconds, "correct": pack_bits(correct)}
    return out


def summarize(result: dict, model: str) -> dict:
    from edgelearn import metrics

    correct = unpack_bits(result[model]["correct"], result["n"])
    ones = np.ones(len(correct), dtype=np.int64)
    return {
        "accuracy": float(correct.mean()),
        "avgracc": float(metrics.realtime_accuracies(ones, correct.astype(np.int64), chunk=CHUNK).mean()),
        "us": 1e6 * result[model]["cpu_seconds"] / result["n"],
    }


def _int_list(text: str, flag: str, parser) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v]
    except ValueError:
        parser.error(f"{flag} must be comma-separated non-negative integers. Got {text!r}.")
    if not values or min(values) < 0:
        parser.error(f"{flag} must be comma-separated non-negative integers. Got {text!r}.")
    return values


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="tools/results_drift.py",
        description="OnlineEnsemble beside River's ARFClassifier on River's SEA (ConceptDriftStream) "
        "and Hyperplane generators and on Electricity: prequential accuracy and CPU time per instance.",
    )
    parser.add_argument("--n", type=int, default=20_000,
                        help="instances per synthetic stream (default: 20000)")
    parser.add_argument("--elec2-n", type=int, default=ELEC2_ROWS,
                        help=f"first rows of Electricity (default: all {ELEC2_ROWS})")
    parser.add_argument("--seeds", default="0,1,2",
                        help="seeds of the streams and the models (default: 0,1,2; the defaults were "
                        f"tuned on {','.join(map(str, TUNING_SEEDS))})")
    parser.add_argument("--streams", default=",".join(STREAM_NAMES),
                        help=f"comma-separated subset of {','.join(STREAM_NAMES)} (default: all)")
    parser.add_argument("--models", default=",".join(MODEL_NAMES),
                        help=f"comma-separated subset of {','.join(MODEL_NAMES)} containing oe and arf "
                        "(default: all)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="(stream, seed) runs at once, each in its own process (default: 1)")
    parser.add_argument("--cache", metavar="FILE",
                        help="JSON file of finished runs: read at the start, written after each run")
    parser.add_argument("--out", default=f"docs/{STEM}.md",
                        help=f"markdown file to write (default: docs/{STEM}.md); the headline rows go to "
                        f"docs/data/<its stem>.json beside its folder")
    args = parser.parse_args(argv)
    for option, known in (("streams", STREAM_NAMES), ("models", MODEL_NAMES)):
        chosen = [v for v in getattr(args, option).split(",") if v]
        unknown = [v for v in chosen if v not in known]
        if unknown or not chosen:
            parser.error(f"--{option} must be a comma-separated subset of {', '.join(known)}. "
                         f"Got {getattr(args, option)!r}.")
        setattr(args, option, list(dict.fromkeys(chosen)))
    if not {"oe", "arf"} <= set(args.models):
        parser.error(f"--models must contain oe and arf (the comparison). Got {','.join(args.models)!r}.")
    args.seeds = _int_list(args.seeds, "--seeds", parser)
    for flag, value in (("--n", args.n), ("--elec2-n", args.elec2_n)):
        if value < 4 * CHUNK:
            parser.error(f"{flag} must be at least {4 * CHUNK} (four chunks). Got {value}.")
    args.elec2_n = min(args.elec2_n, ELEC2_ROWS)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1. Got {args.jobs}.")
    return args


def page_command(argv) -> str:
    """The command that wrote the page, the cache file shown as FILE: where a run kept its
    cache is no part of the result, and a path of the machine it ran on helps no reader."""
    shown, hide = [], False
    for arg in argv:
        if hide:
            shown.append("FILE")
        elif arg.startswith("--cache="):
            shown.append("--cache=FILE")
        else:
            shown.append(arg)
        hide = arg == "--cache"
    return "python tools/results_drift.py" + ("" if not shown else " " + shlex.join(shown))


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def aggregate(results: dict, streams, seeds, models) -> dict:
    """stream -> model -> {metric: mean over seeds, "per_seed": [...]}, plus
    "all" -> model -> CPU µs per instance over all streams' instances."""
    table = {}
    for s in streams:
        table[s] = {}
        for m in models:
            per_seed = [summarize(results[s][seed], m) for seed in seeds]
            table[s][m] = {key: float(np.mean([p[key] for p in per_seed])) for key in per_seed[0]}
            table[s][m]["per_seed"] = per_seed
    table["all"] = {}
    for m in models:
        seconds = sum(results[s][seed][m]["cpu_seconds"] for s in streams for seed in seeds)
        count = sum(results[s][seed]["n"] for s in streams for seed in seeds)
        table["all"][m] = {"us": 1e6 * seconds / count}
    return table


def verdict_lines(table, streams) -> list[str]:
    above = [s for s in streams if table[s]["oe"]["accuracy"] >= table[s]["arf"]["accuracy"]]
    ratios = {s: table[s]["oe"]["us"] / table[s]["arf"]["us"] for s in streams}
    overall = table["all"]["oe"]["us"] / table["all"]["arf"]["us"]
    accuracy_met = len(above) == len(streams)
    time_met = max(ratios.values()) <= TIME_AIM
    lines = [
        f"* **Accuracy aim {'met' if accuracy_met else 'not met'}**: OnlineEnsemble (defaults) is at "
        f"least River ARF's prequential accuracy on {len(above)} of {len(streams)} streams (mean over "
        "the seeds): " + "; ".join(
            f"{STREAM_NAMES[s]} {table[s]['oe']['accuracy']:.4f} against {table[s]['arf']['accuracy']:.4f} "
            f"({100 * (table[s]['oe']['accuracy'] - table[s]['arf']['accuracy']):+.2f} points)"
            for s in streams) + ".",
        f"* **Time aim {'met' if time_met else 'not met'}** (at most {TIME_AIM:.0%} of ARF's CPU time per "
        "instance on every stream): OnlineEnsemble/ARF " + "; ".join(
            f"{STREAM_NAMES[s]} {ratios[s]:.3f}" for s in streams)
        + f"; over all instances {overall:.3f}"
        + ("." if time_met else f" (the worst stream is {max(ratios.values()) / TIME_AIM:.2f} times the aim)."),
    ]
    if "ac_oe" in table["all"]:
        lines.append("* The paper's AC_OE (same learner, `" + ", ".join(
            f"{k}={v}" for k, v in PAPER_SETTINGS.items()) + "`): " + "; ".join(
            f"{STREAM_NAMES[s]} {table[s]['ac_oe']['accuracy']:.4f}" for s in streams) + ".")
    return lines


def render(table, args, argv, run_seconds) -> str:
    import numba

    import edgelearn

    streams, models, seeds = args.streams, args.models, args.seeds
    command = page_command(argv)
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    import river

    defaults = edgelearn.OnlineEnsemble().get_params()
    shown = ", ".join(f"{k}={defaults[k]!r}" for k in ("base", "chunk_size", "n_members", "beta", "alpha",
                                                       "reservoir_size", "C", "forgetting", "online_C",
                                                       "label_lags"))
    names = [MODEL_NAMES[m] for m in models]
    lines = [
        "# OnlineEnsemble beside River's ARF on drift streams",
        "",
        f"Produced by `{command}` (run from the repository root) on "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}.",
        "",
        f"Machine: `{platform.platform()}`, {os.cpu_count()} CPUs, load average {load} at the end; "
        f"Python {platform.python_version()}, NumPy {np.__version__}, numba {numba.__version__}, "
        f"River {river.__version__}. {args.jobs} run(s) at a time; the models' loops took "
        f"{run_seconds / 60:.1f} CPU min in all.",
        "",
        "## Verdict",
        "",
        *verdict_lines(table, streams),
        "",
        "## Protocol",
        "",
        f"* Seeds {', '.join(map(str, seeds))} (each seeds the stream and the models); the defaults were "
        f"tuned on seeds {', '.join(map(str, TUNING_SEEDS))} of the synthetic streams and on the first "
        "5,000 rows of Electricity (one fixed series: its seeds only seed the models, and the rows tuned "
        "on are part of the rows reported).",
        f"* SEA: `river.datasets.synth.SEA(variant=v, noise={SEA_NOISE})` for v = 0, 1, 2, 3 chained by "
        f"`river.datasets.synth.ConceptDriftStream(position=n/4, width={SEA_WIDTH})`, so the concept "
        f"changes around n/4, n/2 and 3n/4; n = {args.n:,}.",
        "* Hyperplane: `river.datasets.synth.Hyperplane(n_features=10, n_drift_features=2, "
        f"mag_change=0.001, noise_percentage=0.05, sigma=0.1)`, rotating all the time; n = {args.n:,}.",
        f"* Electricity: the bundled `edgelearn.datasets.load(\"elec2\")`, its first {args.elec2_n:,} rows in "
        "order (6 features, binary): River's `datasets.Elec2` downloads the same series, so we use the "
        "copy the project ships.",
        "* Test-then-train over every instance with every label, through the dict path "
        "(OnlineEnsemble: `decide_one` then `learn`; River: `predict_one` then `learn_one`). Prequential "
        f"accuracy is over all instances; average real-time accuracy is the mean accuracy of chunks of {CHUNK} "
        "(the AC_OE page's Avgracc).",
        f"* OnlineEnsemble (defaults): `OnlineEnsemble()`, i.e. {shown}. "
        "OnlineEnsemble (AC_OE paper settings): the same with `" + ", ".join(
            f"{k}={v}" for k, v in PAPER_SETTINGS.items()) + "`. "
        "River ARF: `forest.ARFClassifier(n_models=10, seed=seed)` (River's defaults otherwise).",
        "* Time: CPU time (`time.process_time`) of each model's whole predict-and-learn loop, all models of "
        "a (stream, seed) one after the other in the same process on the same dicts, so the ratio to ARF "
        "does not depend on the machine's speed or load as much as the absolute µs do.",
        "",
        "## Prequential accuracy (mean over seeds)",
        "",
    ]
    def best_cells(key, fmt):
        rows = []
        for s in streams:
            best = max(table[s][m][key] for m in models)
            rows.append([STREAM_NAMES[s], *(f"**{table[s][m][key]:{fmt}}**" if table[s][m][key] == best
                                            else f"{table[s][m][key]:{fmt}}" for m in models)])
        return rows

    lines += _table(["stream", *names], best_cells("accuracy", ".4f"))
    lines += ["", "### Per seed", ""]
    rows = [[f"{STREAM_NAMES[s]}, seed {seed}",
             *(f"{table[s][m]['per_seed'][i]['accuracy']:.4f}" for m in models)]
            for s in streams for i, seed in enumerate(seeds)]
    lines += _table(["stream, seed", *names], rows)
    lines += ["", f"## Average real-time accuracy (chunks of {CHUNK}, mean over seeds)", ""]
    lines += _table(["stream", *names], best_cells("avgracc", ".4f"))
    lines += ["", "## CPU µs per instance (predict and learn) and the ratio to ARF", ""]
    rows = [[STREAM_NAMES[s], *(f"{table[s][m]['us']:,.1f}" for m in models),
             *(f"{table[s][m]['us'] / table[s]['arf']['us']:.3f}" for m in models if m != "arf")]
            for s in streams]
    rows.append(["all streams", *(f"{table['all'][m]['us']:,.1f}" for m in models),
                 *(f"{table['all'][m]['us'] / table['all']['arf']['us']:.3f}" for m in models if m != "arf")])
    lines += _table(["stream", *names, *(f"{MODEL_NAMES[m]} / ARF" for m in models if m != "arf")], rows)
    lines.append("")
    return "\n".join(lines)


def summary_rows(table, args) -> list[dict]:
    seeds = ",".join(map(str, args.seeds))
    rows = []
    for s in args.streams:
        n = args.elec2_n if s == "elec2" else args.n
        protocol = f"drift stream {STREAM_NAMES[s]}, {n:,} instances, every label, seeds {seeds}"
        for m in args.models:
            rows.append({
                "protocol": protocol, "learner": MODEL_NAMES[m],
                "library": "river" if m == "arf" else "edgelearn",
                "metrics": {"accuracy": table[s][m]["accuracy"], "avg_realtime_accuracy": table[s][m]["avgracc"]},
                "label_rate": 1.0, "cpu_us_per_instance": table[s][m]["us"],
            })
    return rows




def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    cache_path = Path(args.cache) if args.cache else None
    cache = load_cache(cache_path)
    length = {s: args.elec2_n if s == "elec2" else args.n for s in args.streams}
    key = lambda s, seed: f"{s}|{length[s]}|{seed}|{','.join(args.models)}"  # noqa: E731
    # Seed by seed, so an interrupted run has whole seeds in its cache.
    wanted = [(s, length[s], seed) for seed in args.seeds for s in args.streams]
    todo = [task for task in wanted if key(task[0], task[2]) not in cache]
    # Compile (or load) the kernels here, so no run's CPU time holds a compilation.
    if todo:
        run_one("sea", 4 * CHUNK, 0, [m for m in args.models if m != "arf"])
    start = time.perf_counter()
    for done, ((s, n, seed), result) in enumerate(finished(run_one, todo, args.jobs, args.models), 1):
        cache[key(s, seed)] = result
        print(f"[{done}/{len(todo)}] {STREAM_NAMES[s]}, seed {seed}: "
              + ", ".join(f"{m} {summarize(result, m)['accuracy']:.4f} {summarize(result, m)['us']:.0f} µs"
                          for m in args.models)
              + f" ({(time.perf_counter() - start) / 60:.1f} min)", file=sys.stderr, flush=True)
        save_cache(cache_path, cache)
    results = {s: {seed: cache[key(s, seed)] for seed in args.seeds} for s in args.streams}
    table = aggregate(results, args.streams, args.seeds, args.models)
    run_seconds = sum(r[m]["cpu_seconds"] for s in args.streams for r in results[s].values() for m in args.models)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    command = page_command(argv)
    out.write_text(render(table, args, argv, run_seconds), encoding="utf-8")
    # The headline rows beside the page: docs/data/<stem>.json for docs/<stem>.md.
    write_summary(out.stem, command, summary_rows(table, args), root=out.parent.parent)
    print(f"wrote {out} in {(time.perf_counter() - start) / 60:.1f} min", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
