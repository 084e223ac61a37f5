"""Run the AC_OE paper's protocol (seed 003) and write a markdown report.

Six synthetic streams of 100,000 instances with drift at 25k, 50k and 75k
(``edgelearn.streams``; LED abrupt drifts once, at 50k; the hyperplane
drifts all the time) and Electricity (the bundled ``load("elec2")``). Every
model runs test-then-train over every instance with every label. Reported:
average real-time accuracy (mean of per-chunk accuracies, chunks of 100),
cumulative accuracy, instances/s of the predict-and-learn loop, recovery
(RSA) after the known drift points and robustness, for ``OnlineEnsemble``
with each base learner and River's ``ADWINBaggingClassifier``,
``ARFClassifier``, ``SRPClassifier`` and one ``HoeffdingTreeClassifier``,
beside the paper's figures.

Run from the repository root::

    .venv/bin/python tools/results_ensemble.py --jobs 2        # full run (about an hour on 2 cores)
    .venv/bin/python tools/results_ensemble.py --n 3000 --models ac_oe_kelm,hoeffding_tree --out /tmp/r.md

``--cache FILE`` keeps each finished (stream, model) result, so an
interrupted run continues where it stopped.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runs import finished, load_cache, pack_bits, save_cache, test_then_train, unpack_bits  # noqa: E402

CHUNK = 100
#: Table 3 of the paper: AC_OE's average real-time accuracy.
PAPER = {
    "hyperplane": 0.8966, "led_abrupt": 0.5054, "led_gradual": 0.5178, "rbf_blips": 0.9316,
    "sea": 0.8027, "tree": 0.5480, "elec2": 0.7919,
}
STREAM_NAMES = {
    "hyperplane": "Hyperplane", "led_abrupt": "LED abrupt", "led_gradual": "LED gradual",
    "rbf_blips": "RBF blips", "sea": "SEA", "tree": "Tree", "elec2": "Electricity",
}
MODEL_NAMES = {
    "ac_oe_kelm": "OnlineEnsemble (kelm)", "ac_oe_pa": "OnlineEnsemble (pa)", "ac_oe_nb": "OnlineEnsemble (nb)",
    "adwin_bagging": "River ADWINBagging", "arf": "River ARF", "srp": "River SRP",
    "hoeffding_tree": "River HoeffdingTree",
}
OURS = ("ac_oe_kelm", "ac_oe_pa", "ac_oe_nb")
#: Models fast enough for the paper's 100,000 instances on every stream in minutes.
PAPER_RUN_MODELS = (*OURS, "hoeffding_tree")
RIVER_ENSEMBLES = ("adwin_bagging", "arf", "srp")
#: The paper's model (AC_OE), pinned because OnlineEnsemble's defaults are no longer it:
#: chunk-trained members, the global learner, no online members.
PAPER_SETTINGS = {"chunk_size": 100, "n_members": 10, "beta": 0.9, "alpha": 1.0, "reservoir_size": 200,
                  "C": 1.0, "gamma": None, "forgetting": None, "online_C": None, "label_lags": 0}
#: Width (instances) of LED gradual's sigmoid transitions.
LED_GRADUAL_WIDTH = 1000
#: Convergence test of the recovery (RSA): reference chunks and tolerance.
RSA_N_REF, RSA_EPS = 10, 0.02


def drift_points(stream: str, n: int) -> tuple[int, ...]:
    if stream == "led_abrupt":
        return (n // 2,)
    if stream in ("hyperplane", "elec2"):
        return ()
    return (n // 4, n // 2, 3 * n // 4)


def make_stream(stream: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of one stream: ``n`` instances (Electricity: its first ``n`` rows)."""
    from edgelearn import datasets, streams

    drift = drift_points(stream, n)
    if stream == "hyperplane":
        return streams.hyperplane(n, n_features=10, n_drift_features=2, mag_change=0.001, sigma=0.1,
                                  noise=0.05, seed=seed)
    if stream == "led_abrupt":
        return streams.led(n, drift_at=drift, seed=seed)
    if stream == "led_gradual":
        return streams.led(n, drift_at=drift, width=LED_GRADUAL_WIDTH, seed=seed)
    if stream == "rbf_blips":
        return streams.random_rbf(n, drift_at=drift, seed=seed)
    if stream == "sea":
        return streams.sea(n, drift_at=drift, seed=seed)
    if stream == "tree":
        return streams.random_tree(n, drift_at=drift, seed=seed)
    if stream == "elec2":
        data = datasets.load("elec2")
        return data.X[:n], data.y[:n].astype(np.int64)
    raise ValueError(f"unknown stream {stream!r}")


def make_model(model: str, n_classes: int, seed: int):
    import edgelearn

    if model.startswith("ac_oe_"):
        return edgelearn.OnlineEnsemble(base=model[len("ac_oe_"):], n_classes=max(2, n_classes), seed=seed,
                                        **PAPER_SETTINGS)
    from river import ensemble, forest, tree

    if model == "adwin_bagging":
        return ensemble.ADWINBaggingClassifier(tree.HoeffdingTreeClassifier(), n_models=10, seed=seed)
    if model == "arf":
        return forest.ARFClassifier(n_models=10, seed=seed)
    if model == "srp":
        return ensemble.SRPClassifier(n_models=10, seed=seed)
    if model == "hoeffding_tree":
        return tree.HoeffdingTreeClassifier()
    raise ValueError(f"unknown model {model!r}")


def run_one(stream: str, model_id: str, n: int, seed: int) -> dict:
    """Test-then-train over one stream; per-chunk accuracies and seconds."""
    X, y = make_stream(stream, n, seed)
    n_classes = int(y.max()) + 1
    names = [f"x{j}" for j in range(X.shape[1])]
    rows = [dict(zip(names, row)) for row in X.tolist()]
    labels = y.tolist()
    model = make_model(model_id, n_classes, seed)
    start = time.perf_counter()
    correct = test_then_train(model, rows, labels)
    seconds = time.perf_counter() - start
    return {"n": len(labels), "seconds": seconds, "correct": pack_bits(correct)}


def summarize(stream: str, result: dict) -> dict:
    from edgelearn import metrics

    correct = unpack_bits(result["correct"], result["n"])
    truth = np.ones(len(correct), dtype=np.int64)
    predicted = correct.astype(np.int64)
    raccs = metrics.realtime_accuracies(truth, predicted, chunk=CHUNK)
    drift_chunks = [p // CHUNK for p in drift_points(stream, result["n"])]
    return {
        "avgracc": float(raccs.mean()),
        "cumacc": metrics.cumulative_accuracy(truth, predicted),
        "per_second": result["n"] / result["seconds"],
        "rsa": metrics.recovery(raccs, drift_chunks, n_ref=RSA_N_REF, eps=RSA_EPS) if drift_chunks else [],
    }


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="tools/results_ensemble.py",
        description="Reproduce the AC_OE protocol (six drifting synthetic streams and Electricity, "
        "test-then-train, chunks of 100) for OnlineEnsemble and River's ensembles, and write a "
        "markdown report.",
    )
    parser.add_argument("--n", type=int, default=100_000,
                        help="instances per synthetic stream of the run beside the paper; "
                        "Electricity uses its first n rows (default: 100000, the paper's)")
    parser.add_argument("--models", default=",".join(PAPER_RUN_MODELS),
                        help=f"models of the run beside the paper: a comma-separated subset of "
                        f"{','.join(MODEL_NAMES)} (default: {','.join(PAPER_RUN_MODELS)})")
    parser.add_argument("--compare-n", type=int, default=25_000,
                        help="instances per stream of the run beside River's ensembles, drift at "
                        "the same quarters (default: 25000; 0 skips it)")
    parser.add_argument("--compare-models", default=",".join(MODEL_NAMES),
                        help="models of the run beside River's ensembles (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the streams and the models (default: 0)")
    parser.add_argument("--streams", default=",".join(STREAM_NAMES),
                        help=f"comma-separated subset of {','.join(STREAM_NAMES)} (default: all)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="(stream, model) runs at once, each in its own process (default: 1); "
                        "runs that share the cores slow each other, all alike")
    parser.add_argument("--cache", metavar="FILE",
                        help="JSON file of finished runs: read at the start, written after each run")
    parser.add_argument("--out", default="docs/results-ensemble.md",
                        help="markdown file to write (default: docs/results-ensemble.md)")
    args = parser.parse_args(argv)
    for option, known in (("streams", STREAM_NAMES), ("models", MODEL_NAMES), ("compare_models", MODEL_NAMES)):
        flag = "--" + option.replace("_", "-")
        chosen = [v for v in getattr(args, option).split(",") if v]
        unknown = [v for v in chosen if v not in known]
        if unknown or not chosen:
            parser.error(f"{flag} must be a comma-separated subset of {', '.join(known)}. "
                         f"Got {getattr(args, option)!r}.")
        setattr(args, option, chosen)
    for flag, value, zero_ok in (("--n", args.n, False), ("--compare-n", args.compare_n, True)):
        if value < 4 * CHUNK and not (zero_ok and value == 0):
            parser.error(f"{flag} must be at least {4 * CHUNK} (four chunks){' or 0' if zero_ok else ''}. "
                         f"Got {value}.")
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1. Got {args.jobs}.")
    return args


def _fmt(value, digits=4):
    return "—" if value is None else f"{value:.{digits}f}"


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _mean(summary, streams, model, key="avgracc"):
    return float(np.mean([summary[s][model][key] for s in streams]))


def _seconds(summary, streams, model):
    return sum(summary[s][model]["n"] / summary[s][model]["per_second"] for s in streams)


def verdict_lines(paper_run, compare_run, streams) -> list[str]:
    lines = []
    ours = "ac_oe_kelm"
    if paper_run and ours in paper_run["models"]:
        summary = paper_run["summary"]
        beaten = [s for s in streams if summary[s][ours]["avgracc"] > PAPER[s]]
        missed = [s for s in streams if s not in beaten]
        lines.append(
            f"* Beside the paper ({paper_run['n']:,} instances): OnlineEnsemble (kelm, the paper's settings) "
            f"beats the paper's AC_OE on {len(beaten)} of {len(streams)} streams"
            + (f" ({', '.join(STREAM_NAMES[s] for s in beaten)})" if beaten else "")
            + (f"; not on {', '.join(STREAM_NAMES[s] for s in missed)}" if missed else "")
            + f". Mean over the streams: {_mean(summary, streams, ours):.4f} against the paper's "
            f"{np.mean([PAPER[s] for s in streams]):.4f}."
        )
        others = [m for m in OURS if m != ours and m in paper_run["models"]]
        for m in others:
            lines.append(f"  {MODEL_NAMES[m]}: mean {_mean(summary, streams, m):.4f}.")
    if compare_run and ours in compare_run["models"]:
        summary = compare_run["summary"]
        river = [m for m in RIVER_ENSEMBLES if m in compare_run["models"]]
        if river:
            above = [m for m in river if _mean(summary, streams, ours) > _mean(summary, streams, m)]
            lines.append(
                f"* Beside River's ensembles ({compare_run['n']:,} instances per stream), mean average "
                f"real-time accuracy: OnlineEnsemble {_mean(summary, streams, ours):.4f}; "
                + "; ".join(f"{MODEL_NAMES[m]} {_mean(summary, streams, m):.4f}" for m in river)
                + f". OnlineEnsemble is above {len(above)} of {len(river)}"
                + (" (the aim: at least two)." if len(river) == 3 else ".")
            )
            lines.append(
                "* Time per instance over all streams, OnlineEnsemble's as a fraction of each one's: "
                + "; ".join(f"{MODEL_NAMES[m]} {_seconds(summary, streams, ours) / _seconds(summary, streams, m):.3f}"
                            for m in river)
                + "."
            )
    return lines


def _run_sections(run, streams, paper_column: bool) -> list[str]:
    from edgelearn import metrics

    summary, models, n = run["summary"], run["models"], run["n"]
    names = [MODEL_NAMES[m] for m in models]
    lines = ["### Average real-time accuracy (chunks of 100)", ""]
    header = ["stream", *(["paper AC_OE"] if paper_column else []), *names]
    rows = []
    for s in streams:
        best = max(summary[s][m]["avgracc"] for m in models)
        cells = [f"**{v:.4f}**" if v == best else f"{v:.4f}" for v in (summary[s][m]["avgracc"] for m in models)]
        rows.append([STREAM_NAMES[s], *([f"{PAPER[s]:.4f}"] if paper_column else []), *cells])
    rows.append(["mean", *([f"{np.mean([PAPER[s] for s in streams]):.4f}"] if paper_column else []),
                 *(f"{_mean(summary, streams, m):.4f}" for m in models)])
    lines += _table(header, rows)
    lines += ["", "### Cumulative accuracy", ""]
    lines += _table(["stream", *names],
                    [[STREAM_NAMES[s], *(f"{summary[s][m]['cumacc']:.4f}" for m in models)] for s in streams])
    lines += ["", "### Instances per second (predict and learn)", ""]
    rows = [[STREAM_NAMES[s], *(f"{summary[s][m]['per_second']:,.0f}" for m in models)] for s in streams]
    rows.append(["all streams", *(f"{sum(summary[s][m]['n'] for s in streams) / _seconds(summary, streams, m):,.0f}"
                                  for m in models)])
    lines += _table(["stream", *names], rows)
    drifting = [s for s in streams if drift_points(s, n)]
    if drifting:
        lines += ["", "### Recovery (RSA) after each drift point", ""]
        rows = [[STREAM_NAMES[s], *(" / ".join(_fmt(v, 1) for v in summary[s][m]["rsa"]) for m in models)]
                for s in drifting]
        lines += _table(["stream", *names], rows)
    robust = metrics.robustness({m: {s: summary[s][m]["avgracc"] for s in streams} for m in models})
    lines += ["", "### Robustness (eq. 15/16: accuracy over the worst model's, per stream; total)", ""]
    rows = [[STREAM_NAMES[s], *(f"{robust[m][s]:.3f}" for m in models)] for s in streams]
    most = max(robust[m]["total"] for m in models)
    rows.append(["total", *(f"**{robust[m]['total']:.3f}**" if robust[m]["total"] == most
                            else f"{robust[m]['total']:.3f}" for m in models)])
    lines += _table(["stream", *names], rows)
    return lines


def _why_two_lengths(compare_run, streams, n) -> list[str]:
    river = [m for m in RIVER_ENSEMBLES if compare_run and m in compare_run["models"]]
    if not river:
        return []
    summary = compare_run["summary"]
    rates = {m: [summary[s][m]["per_second"] for s in streams] for m in river}
    full_n = {s: min(n, 45312) if s == "elec2" else n for s in streams}
    hours = sum(full_n[s] / summary[s][m]["per_second"] for m in river for s in streams) / 3600
    return [
        "* Why two lengths: in the run beside River, "
        + "; ".join(f"{MODEL_NAMES[m]} ran at {min(rates[m]):,.0f} to {max(rates[m]):,.0f} instances/s"
                    for m in river)
        + f", so at those rates the three on these streams at n = {n:,} would take about {hours:.1f} "
        "CPU hours (more: they slow down as their trees grow). The run beside the paper has the "
        "paper's length and the models that finish it in minutes; the run beside River has every "
        "model on shorter versions of the same streams (same generators, drift at the same quarters).",
    ]


def render(paper_run, compare_run, args, argv, run_seconds) -> str:
    import numba

    streams = args.streams
    command = "python tools/results_ensemble.py" + ("" if not argv else " " + shlex.join(argv))
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    try:
        import river
        river_version = river.__version__
    except ImportError:
        river_version = "not installed"
    lines = [
        "# OnlineEnsemble on the AC_OE paper's protocol: our numbers beside the paper's and River's",
        "",
        f"Produced by `{command}` (run from the repository root) on "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}.",
        "",
        f"Machine: `{platform.platform()}`, {os.cpu_count()} CPUs, load average {load} at the end; "
        f"Python {platform.python_version()}, NumPy {np.__version__}, numba {numba.__version__}, "
        f"River {river_version}. {args.jobs} run(s) at a time; the runs' predict-and-learn loops "
        f"took {run_seconds / 60:.1f} min in all.",
        "",
        "## Verdict",
        "",
        *verdict_lines(paper_run, compare_run, streams),
        "",
        "## Protocol",
        "",
        f"* Streams, seed {args.seed} (Electricity: its first n rows, in order), with n = {args.n:,} "
        "beside the paper"
        + (f" and n = {args.compare_n:,} beside River's ensembles" if compare_run else "") + "; "
        "drift points at n/4, n/2 and 3n/4 (LED abrupt: n/2 only):",
        "  * Hyperplane: `streams.hyperplane(n, n_features=10, n_drift_features=2, mag_change=0.001, "
        "sigma=0.1, noise=0.05)`, MOA's rotating hyperplane with its default drift (incremental, "
        "no drift points);",
        "  * LED abrupt: `streams.led(n, drift_at=(n/2,))`, 24 binary attributes, 10% segment noise, "
        "the positions of all 7 segments swapped with irrelevant attributes at the drift point;",
        f"  * LED gradual: `streams.led(n, drift_at=(n/4, n/2, 3n/4), width={LED_GRADUAL_WIDTH})`, "
        "the same with sigmoid transitions (MOA's ConceptDriftStream);",
        "  * RBF blips: `streams.random_rbf(n, drift_at=(n/4, n/2, 3n/4))`, 20 features, 4 classes, "
        "50 centroids, all centroids redrawn at each drift point;",
        "  * SEA: `streams.sea(n, drift_at=(n/4, n/2, 3n/4))`, thresholds 8, 9, 7, 9.5, 10% label noise;",
        "  * Tree: `streams.random_tree(n, drift_at=(n/4, n/2, 3n/4))`, 30 numeric features, 10 classes, "
        "a new random tree at each drift point;",
        "  * Electricity: `edgelearn.datasets.load(\"elec2\")` (binary, 6 features).",
        "  The paper generated its synthetic streams with MOA (section 3.1) without giving every "
        "setting; ours follow MOA's generators and defaults, so the streams are alike, not the same.",
        "* Test-then-train over every instance with every label; the real-time accuracy of a chunk "
        f"is the fraction of its {CHUNK} instances predicted right before being learned; "
        "the average real-time accuracy (the paper's Avgracc, eq. 10) is their mean; cumulative "
        "accuracy (eq. 12) is over all instances.",
        "* OnlineEnsemble: the paper's settings, passed explicitly (chunk 100, 10 members, beta 0.9, alpha 1, "
        "reservoir 200, C 1, gamma 1/number of channels, no online members: `forgetting=None, online_C=None, "
        "label_lags=0`), one `decide_one` + `learn` per instance through the dict "
        "path; `n_classes` the stream's. The paper's base learner is LIBSVM's RBF SVM with C and "
        "beta tuned per data set by grid search; ours are not tuned per stream.",
        "* River: `ensemble.ADWINBaggingClassifier(tree.HoeffdingTreeClassifier(), n_models=10)`, "
        "`forest.ARFClassifier(n_models=10)`, `ensemble.SRPClassifier(n_models=10)`, "
        "`tree.HoeffdingTreeClassifier()`, each with `predict_one` then `learn_one`.",
        *_why_two_lengths(compare_run, streams, args.n),
        "* Instances/s: the whole predict-and-learn loop over dicts prepared beforehand, one process "
        f"per run, {args.jobs} run(s) at a time, wall clock.",
        f"* Recovery RSA (eq. 13/14, `edgelearn.metrics.recovery`, {RSA_N_REF} reference chunks, "
        f"eps {RSA_EPS}) after each known drift point: chunks to convergence times (1 - mean "
        "real-time accuracy over them); smaller is better; — where it did not converge before "
        "the next drift point. Read it with care: the accuracy of a chunk of 100 varies by about "
        "±0.05 from sampling alone, more than eps, so ten steady chunks in a row are rare and "
        "most cells are —; the paper does not give its n and eps.",
        "",
    ]
    if paper_run:
        lines += [f"## Beside the paper: {paper_run['n']:,} instances per stream", "",
                  *_run_sections(paper_run, streams, paper_column=True), ""]
    if compare_run:
        lines += [f"## Beside River's ensembles: {compare_run['n']:,} instances per stream", "",
                  *_run_sections(compare_run, streams, paper_column=False), ""]
    return "\n".join(lines)




def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    cache_path = Path(args.cache) if args.cache else None
    cache = load_cache(cache_path)
    runs = [("paper", args.n, args.models)]
    if args.compare_n:
        runs.append(("compare", args.compare_n, args.compare_models))
    key = lambda s, m, n: f"{s}|{m}|{n}|{args.seed}"  # noqa: E731
    wanted = [(s, m, n) for _, n, models in runs for s in args.streams for m in models]
    todo = [task for task in dict.fromkeys(wanted) if key(*task) not in cache]
    # Compile (or load) the kernels once here, so no run times a compilation.
    for m in {m for _, m, _ in todo} & set(OURS):
        run_one("sea", m, 4 * CHUNK, args.seed)
    start = time.perf_counter()
    total = len(set(wanted))
    done = total - len(todo)
    # The slowest runs first, so the last ones to finish are short.
    todo.sort(key=lambda task: (task[1] in OURS or task[1] == "hoeffding_tree", -task[2]))
    for (s, m, n), result in finished(run_one, todo, args.jobs, args.seed):
        cache[key(s, m, n)] = result
        done += 1
        print(f"[{done}/{total}] {STREAM_NAMES[s]}, {MODEL_NAMES[m]}, n={n:,}: "
              f"{summarize(s, result)['avgracc']:.4f}, {result['n'] / result['seconds']:,.0f} instances/s "
              f"({(time.perf_counter() - start) / 60:.1f} min)", file=sys.stderr, flush=True)
        save_cache(cache_path, cache)
    built = {}
    for name, n, models in runs:
        summary = {s: {m: {**summarize(s, cache[key(s, m, n)]), "n": cache[key(s, m, n)]["n"]} for m in models}
                   for s in args.streams}
        built[name] = {"n": n, "models": models, "summary": summary}
    run_seconds = sum(cache[key(*task)]["seconds"] for task in set(wanted))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(built["paper"], built.get("compare"), args, argv, run_seconds), encoding="utf-8")
    print(f"wrote {out} in {(time.perf_counter() - start) / 60:.1f} min", file=sys.stderr)
    _write_summary(out, argv, args, built)
    return 0


def _write_summary(out: Path, argv: list[str], args, built: dict) -> None:
    """The page's headline rows (each run's means over its streams) as
    ``docs/data/<stem>.json`` for the leaderboard, only for a page under a ``docs/``
    folder. Rebuilding the page from a complete ``--cache`` writes them without
    running anything."""
    if out.resolve().parent.name != "docs":
        return
    from summaries import write_summary

    streams = args.streams
    rows = []
    for name, run in built.items():
        summary = run["summary"]
        beside = "beside the paper" if name == "paper" else "beside River's ensembles"
        protocol = (f"AC_OE protocol {beside}, mean over {len(streams)} drift streams "
                    f"({', '.join(STREAM_NAMES[s] for s in streams)}), {run['n']:,} instances, "
                    f"seed {args.seed}")
        # Wall clock only (instances/s of the loop), not CPU time: cpu_us_per_instance stays None.
        rows += [{"protocol": protocol, "learner": MODEL_NAMES[m],
                  "library": "edgelearn" if m in OURS else "river",
                  "metrics": {"avg_realtime_accuracy": _mean(summary, streams, m),
                              "accuracy": _mean(summary, streams, m, "cumacc")},
                  "label_rate": 1.0} for m in run["models"]]
        if name == "paper":
            rows.append({"protocol": protocol, "learner": "paper AC_OE", "library": "paper",
                         "metrics": {"avg_realtime_accuracy": float(np.mean([PAPER[s] for s in streams]))},
                         "label_rate": 1.0})
    command = "python tools/results_ensemble.py" + ("" if not argv else " " + shlex.join(argv))
    path = write_summary(out.stem, command, rows, root=out.resolve().parent.parent)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
