"""Run the SSBOIL paper's protocol (seed 004) and write a markdown report.

A moving hyperplane (``edgelearn.streams.hyperplane``: d = 5, 2 drifting
features, magnitude 0.1, reversal probability sigma = 10%, 20,000 instances)
with 0, 10, 20, 30 and 40% label noise; for each noise level and repetition r
the stream has seed r, and every learner runs prequentially over it with
every label:

* ``SynthesisNB`` as the paper has it (``num=5``, no forgetting), and with
  forgetting (``half_life``, beyond the paper);
* the same naive Bayes without synthesis (``num=0``), with and without
  forgetting (the paper's "TrOIL");
* ``edgelearn.PA`` in modes PA, PA-I and PA-II (C = 1);
* ``SynthesisNB()`` at its defaults (beyond the paper: forgetting and
  synthesis scaled by the running error rate) beside River's
  ``PAClassifier(C=0.01, mode=1)``, which it must at least match at 10-40%
  noise (issue 26).

The report puts the paper's Table 1 beside our numbers and says, from the
numbers, whether SynthesisNB beats the paper's SSBOIL at each noise level.

Run from the repository root::

    .venv/bin/python tools/results_synthesis.py            # full run, a few minutes
    .venv/bin/python tools/results_synthesis.py --quick    # smoke run
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

from edgelearn import PA, SynthesisNB, replay
from edgelearn.evaluate import prequential
from edgelearn.streams import hyperplane, iter_array

NOISE_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4)
# The half-life of the forgetting variants, chosen on development streams
# (seeds 100-103, which the report never uses) among the values tried there,
# 50 to 3000 observations: the best accuracy at 10% noise with num=5
# (``--tune-half-life`` repeats the search).
HALF_LIFE = 300.0
TUNING_SEEDS = (100, 101, 102, 103)
TUNING_HALF_LIVES = (50.0, 100.0, 300.0, 1000.0, 3000.0)
# Spawn key of the synthesis draws; the stream owns plain seed r.
_LEARNER_STREAM = 1

#: Table 1 of the paper (accuracy on the noisy data sets h1..h4, 10..40% noise).
#: "TrOIL" is its incremental naive Bayes without synthesis.  There is no table
#: for the noise-free h0; its Fig. 1 shows SSBOIL near 0.94.
PAPER = {
    "SSBOIL": {0.1: 0.84, 0.2: 0.705, 0.3: 0.602, 0.4: 0.524},
    "TrOIL": {0.1: 0.748, 0.2: 0.63, 0.3: 0.56, 0.4: 0.514},
    "PA": {0.1: 0.739, 0.2: 0.617, 0.3: 0.546, 0.4: 0.507},
    "PA-I": {0.1: 0.796, 0.2: 0.679, 0.3: 0.588, 0.4: 0.52},
    "PA-II": {0.1: 0.763, 0.2: 0.642, 0.3: 0.565, 0.4: 0.509},
}

METHODS = ("SynthesisNB defaults", "River PA-I", "SynthesisNB", "SynthesisNB+forget", "NB", "NB+forget", "PA",
           "PA-I", "PA-II")
RIVER_PA_C = 0.01
HEADINGS = {
    "SynthesisNB defaults": "SynthesisNB (defaults)",
    "River PA-I": f"River PA-I (C={RIVER_PA_C:g})",
    "SynthesisNB": "SynthesisNB (num=5, paper)",
    "SynthesisNB+forget": f"SynthesisNB (num=5, half_life={HALF_LIFE:g})",
    "NB": "NB, no synthesis",
    "NB+forget": f"NB, no synthesis, half_life={HALF_LIFE:g}",
    "PA": "PA",
    "PA-I": "PA-I",
    "PA-II": "PA-II",
}
# Which paper row each of ours stands beside.
PAPER_ROW = {"SynthesisNB": "SSBOIL", "NB": "TrOIL", "PA": "PA", "PA-I": "PA-I", "PA-II": "PA-II"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="tools/results_synthesis.py",
        description="Reproduce the SSBOIL protocol (moving hyperplane, label noise 0-40%, "
                    "prequential accuracy) for SynthesisNB, naive Bayes and PA/PA-I/PA-II, "
                    "and write a markdown report.",
    )
    parser.add_argument("--repetitions", type=int, default=10,
                        help="streams per noise level, seeds 0..R-1 (default: 10)")
    parser.add_argument("--n", type=int, default=20_000,
                        help="instances per stream (default: 20000, as the paper)")
    parser.add_argument("--out", default="docs/results-synthesis.md",
                        help="markdown file to write (default: docs/results-synthesis.md)")
    parser.add_argument("--tune-defaults", action="store_true",
                        help="instead of the report, print the comparison behind SynthesisNB's defaults: "
                        f"error_scaled on and off, half_life None, {HALF_LIFE:g} and 1000, beside River's "
                        f"PA-I (C={RIVER_PA_C:g}), at 10-40%% noise on development seeds {TUNING_SEEDS[0]}-"
                        f"{TUNING_SEEDS[-1]}")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 2 repetitions of 3000 instances")
    parser.add_argument("--tune-half-life", action="store_true",
                        help="instead of the report, print the search that chose HALF_LIFE: "
                        f"SynthesisNB(num=5) at 10%% noise on development seeds {TUNING_SEEDS[0]}-"
                        f"{TUNING_SEEDS[-1]} for each half-life in {TUNING_HALF_LIVES}")
    args = parser.parse_args(argv)
    if args.quick:
        args.repetitions, args.n = 2, 3000
    if args.repetitions < 1:
        parser.error("--repetitions must be at least 1")
    if args.n < 100:
        parser.error("--n must be at least 100")
    return args


def learners(r: int) -> dict:
    seed = int(np.random.SeedSequence(r, spawn_key=(_LEARNER_STREAM,)).generate_state(1)[0])
    return {
        "SynthesisNB defaults": SynthesisNB(seed=seed),
        "River PA-I": "river",
        "SynthesisNB": SynthesisNB(num=5, half_life=None, error_scaled=False, seed=seed),
        "SynthesisNB+forget": SynthesisNB(num=5, half_life=HALF_LIFE, error_scaled=False, seed=seed),
        "NB": SynthesisNB(num=0, half_life=None),
        "NB+forget": SynthesisNB(num=0, half_life=HALF_LIFE),
        "PA": PA(C=1.0, mode=0),
        "PA-I": PA(C=1.0, mode=1),
        "PA-II": PA(C=1.0, mode=2),
    }


def run_level(noise: float, args: argparse.Namespace) -> dict:
    """``{method: {"accuracy": array over repetitions, "seconds": ...}}``."""
    runs = {m: {"accuracy": [], "seconds": []} for m in METHODS}
    for r in range(args.repetitions):
        X, y = hyperplane(args.n, n_features=5, n_drift_features=2, mag_change=0.1,
                          sigma=0.1, noise=noise, seed=r)
        for method, model in learners(r).items():
            if model == "river":
                accuracy, seconds = river_pa(X, y)
            elif isinstance(model, PA):
                result = replay(model, X, y, active=False)
                accuracy, seconds = result.accuracy, result.seconds
            else:
                result = prequential(model, iter_array(X, y), active=False)
                accuracy, seconds = result.accuracy, result.seconds
            runs[method]["accuracy"].append(accuracy)
            runs[method]["seconds"].append(seconds)
    return {m: {k: np.asarray(v) for k, v in res.items()} for m, res in runs.items()}


def river_pa(X, y) -> tuple[float, float]:
    """River's ``PAClassifier(C=RIVER_PA_C, mode=1)`` prequentially over the raw
    features: ``(accuracy, seconds)``."""
    from river import linear_model  # a dev dependency, imported only here

    model = linear_model.PAClassifier(C=RIVER_PA_C, mode=1)
    correct = 0
    start = time.perf_counter()
    for x, label in iter_array(X, y):
        correct += model.predict_one(x) == label
        model.learn_one(x, label)
    return correct / len(y), time.perf_counter() - start


def tune_defaults(args: argparse.Namespace) -> None:
    """Mean accuracy over the development seeds per noise level, for SynthesisNB's
    candidate defaults and River's PA-I."""
    candidates = {f"error_scaled={scaled}, half_life={hl}": dict(error_scaled=scaled, half_life=hl)
                  for scaled in (False, True) for hl in (None, HALF_LIFE, 1000.0)}
    for noise in NOISE_LEVELS[1:]:
        means = {name: [] for name in list(candidates) + [HEADINGS["River PA-I"]]}
        for r in TUNING_SEEDS:
            X, y = hyperplane(args.n, n_features=5, n_drift_features=2, mag_change=0.1,
                              sigma=0.1, noise=noise, seed=r)
            for name, params in candidates.items():
                model = SynthesisNB(num=5, seed=r, **params)
                means[name].append(prequential(model, iter_array(X, y), active=False).accuracy)
            means[HEADINGS["River PA-I"]].append(river_pa(X, y)[0])
        print(f"noise {noise:.0%}: " + "; ".join(f"{k} {np.mean(v):.4f}" for k, v in means.items()), flush=True)


def tune_half_life(args: argparse.Namespace) -> dict[float, float]:
    """Mean accuracy at 10% noise over the development seeds, per half-life."""
    means = {}
    for half_life in TUNING_HALF_LIVES:
        accuracies = []
        for r in TUNING_SEEDS:
            X, y = hyperplane(args.n, n_features=5, n_drift_features=2, mag_change=0.1,
                              sigma=0.1, noise=0.1, seed=r)
            model = SynthesisNB(num=5, half_life=half_life, seed=r)
            accuracies.append(prequential(model, iter_array(X, y), active=False).accuracy)
        means[half_life] = float(np.mean(accuracies))
        print(f"half_life {half_life:g}: {means[half_life]:.4f}", flush=True)
    print(f"best: {max(means, key=means.get):g}")
    return means


def _std(values: np.ndarray) -> float:
    return float(np.std(values, ddof=1)) if values.size > 1 else 0.0


def _cell(values: np.ndarray) -> str:
    return f"{np.mean(values):.3f} ± {_std(values):.3f}"


def verdict_lines(results: dict) -> list[str]:
    lines = []
    noisy = [n for n in sorted(results) if 0.1 <= n <= 0.4]
    gaps = {n: np.mean(results[n]["SynthesisNB defaults"]["accuracy"]) - np.mean(results[n]["River PA-I"]["accuracy"])
            for n in noisy}
    if gaps:
        lines.append(
            f"* {HEADINGS['SynthesisNB defaults']} "
            f"{'**is at least**' if all(g >= 0 for g in gaps.values()) else '**is not at least**'} "
            f"{HEADINGS['River PA-I']} at every noise level from 10% to 40%: "
            + ", ".join(f"{n:.0%} {np.mean(results[n]['SynthesisNB defaults']['accuracy']):.3f} vs "
                        f"{np.mean(results[n]['River PA-I']['accuracy']):.3f} ({g:+.3f})" for n, g in gaps.items())
            + "."
        )
    for method in ("SynthesisNB", "SynthesisNB+forget"):
        beaten, missed = [], []
        for noise, paper in PAPER["SSBOIL"].items():
            if noise not in results:
                continue
            ours = results[noise][method]["accuracy"]
            sem = _std(ours) / np.sqrt(ours.size)
            text = f"{noise:.0%} {np.mean(ours):.3f} (± {sem:.3f} s.e.) vs {paper:.3f}"
            (beaten if np.mean(ours) > paper else missed).append(text)
        verdict = "beats" if not missed else "does not beat"
        parts = [f"above it at {', '.join(beaten)}" if beaten else "",
                 f"not above it at {', '.join(missed)}" if missed else ""]
        lines.append(
            f"* {HEADINGS[method]} **{verdict}** the paper's SSBOIL at every noise level the "
            f"paper reports: {'; '.join(p for p in parts if p)}."
        )
    for noise in sorted(results):
        level = results[noise]
        synth, plain = level["SynthesisNB"]["accuracy"], level["NB"]["accuracy"]
        synth_f, plain_f = level["SynthesisNB+forget"]["accuracy"], level["NB+forget"]["accuracy"]
        best_pa = max(("PA", "PA-I", "PA-II"), key=lambda m: np.mean(level[m]["accuracy"]))
        lines.append(
            f"* {noise:.0%} noise: synthesis changes naive Bayes by "
            f"{np.mean(synth - plain):+.3f} ± {_std(synth - plain):.3f} (no forgetting) and "
            f"{np.mean(synth_f - plain_f):+.3f} ± {_std(synth_f - plain_f):.3f} (half-life "
            f"{HALF_LIFE:g}); best PA mode {best_pa} at {np.mean(level[best_pa]['accuracy']):.3f}."
        )
    return lines


def render(results: dict, args: argparse.Namespace, argv: list[str], seconds: float) -> str:
    import numba

    command = "python tools/results_synthesis.py" + ("" if not argv else " " + shlex.join(argv))
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    levels = sorted(results)
    lines = [
        "# SynthesisNB on the SSBOIL paper's protocol: our numbers beside the paper's",
        "",
        f"Produced by `{command}` (run from the repository root) on "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}.",
        "",
        f"Machine: `{platform.platform()}`, {os.cpu_count()} CPUs, load average {load} at the end "
        f"(shared machine); Python {platform.python_version()}, NumPy {np.__version__}, numba "
        f"{numba.__version__}. Wall time {seconds:.1f} s for {len(levels)} noise level(s) x "
        f"{args.repetitions} repetition(s) of {args.n} instances.",
        "",
        "## Verdict",
        "",
        *verdict_lines(results),
        "",
        "## Protocol",
        "",
        f"* Stream: `edgelearn.streams.hyperplane(n={args.n}, n_features=5, n_drift_features=2, "
        "mag_change=0.1, sigma=0.1, noise=p, seed=r)`, r = 0.."
        f"{args.repetitions - 1}: features uniform in [0, 1], label 1 when "
        "`sum_i w_i x_i >= sum_i w_i / 2`, flipped with probability p; after every instance "
        "each of the 2 drifting weights moves by 0.1 in its direction, which reverses with "
        "probability 10%. This is MOA's `HyperplaneGenerator` with the paper's settings "
        "(magnitude `m` = 0.1, `s` = 10%); our noise flips each label independently with "
        "probability p where MOA draws an integer percentage, the same thing.",
        "* Prequential over every instance with every label: each instance is predicted before "
        "it is learned; accuracy counts every instance, against the (noisy) label the stream "
        "carries, as the paper does. The paper first trains on a few initial instances; we "
        "count from the first.",
        "* SynthesisNB: `SynthesisNB(num=5)` on online-standardized channels (per-class "
        "Gaussians over z; standardizing does not change a Gaussian naive Bayes' decisions "
        "but for the first instances and the 5-sigma clip). After each mistake it learns "
        "5 instances `r c_y + (1 - r) x`, r ~ U[0, 1), c_y the centroid of class y's real "
        "instances. The paper's learner is Weka's updateable naive Bayes (no forgetting).",
        f"* Beyond the paper, `half_life={HALF_LIFE:g}`: means, variances, centroids and "
        "class counts forget exponentially, so the model follows the drifting hyperplane. "
        f"{HALF_LIFE:g} was chosen on development streams (seeds "
        f"{TUNING_SEEDS[0]}-{TUNING_SEEDS[-1]}, never reported here) among the half-lives "
        f"{', '.join(f'{h:g}' for h in TUNING_HALF_LIVES)}, by accuracy at 10% noise with "
        "num = 5; `python tools/results_synthesis.py --tune-half-life` repeats that search.",
        "* NB: the same learner with `num=0` (the paper's TrOIL). The paper's rows pass "
        "`half_life=None, error_scaled=False` (the paper's model), since the defaults are not.",
        f"* SynthesisNB (defaults): `SynthesisNB()`, that is `num=5, error_scaled=True, "
        f"half_life={HALF_LIFE:g}`: forgetting, and after a mistake `round(5 (1 - 2 e))` synthetic "
        "instances, `e` the running error rate, so synthesis fades as label noise makes "
        "mistakes the labels' fault. Chosen on the development seeds beside River's PA-I; "
        "`python tools/results_synthesis.py --tune-defaults` prints that comparison.",
        f"* River PA-I: `river.linear_model.PAClassifier(C={RIVER_PA_C:g}, mode=1)` on the raw "
        "features (in [0, 1]), `predict_one` then `learn_one`.",
        "* PA, PA-I, PA-II: `edgelearn.PA(C=1, mode=0/1/2)`, linear with an intercept on "
        "online-standardized features, through `edgelearn.evaluate.replay`. The paper ran PA "
        "in MATLAB *with a Gaussian kernel* and default parameters, so its PA rows are a "
        "different (kernel) model; ours are linear, which suits a hyperplane.",
        "* Cells are mean ± sample std over repetitions.",
        "",
        "## Accuracy",
        "",
    ]
    header = ["noise"] + [HEADINGS[m] for m in METHODS]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for noise in levels:
        lines.append("| " + " | ".join([f"{noise:.0%}"] + [_cell(results[noise][m]["accuracy"])
                                                       for m in METHODS]) + " |")
    lines.extend(["", "## Beside the paper (Table 1)", ""])
    header = ["noise"]
    for method, paper_row in PAPER_ROW.items():
        header += [HEADINGS[method], f"paper {paper_row}"]
    header += [HEADINGS["SynthesisNB+forget"]]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for noise in levels:
        row = [f"{noise:.0%}"]
        for method, paper_row in PAPER_ROW.items():
            paper = PAPER[paper_row].get(noise)
            row += [f"{np.mean(results[noise][method]['accuracy']):.3f}",
                    "—" if paper is None else f"{paper:.3f}"]
        row.append(f"{np.mean(results[noise]['SynthesisNB+forget']['accuracy']):.3f}")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    throughput = []
    for method in METHODS:
        total_s = sum(float(np.sum(results[n][method]["seconds"])) for n in levels)
        total_n = args.n * args.repetitions * len(levels)
        throughput.append(f"{HEADINGS[method]} {total_n / total_s:,.0f}" if total_s > 0 else
                          f"{HEADINGS[method]} n/a")
    lines.extend([
        "## Throughput (instances/s, whole prequential loop)", "",
        "SynthesisNB and NB through the dict path (`prequential` over `iter_array`), River PA-I in River's own loop, PA through "
        "the jitted `replay`: " + "; ".join(throughput) + ".", "",
    ])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.tune_half_life:
        tune_half_life(args)
        return 0
    if args.tune_defaults:
        tune_defaults(args)
        return 0
    # Compile (or load) the kernels before timing anything.
    X, y = hyperplane(50, n_features=5, seed=0)
    for model in learners(0).values():
        if model == "river":
            continue
        (replay(model, X, y, active=False) if isinstance(model, PA)
         else prequential(model, iter_array(X, y), active=False))
    start = time.perf_counter()
    results = {}
    for noise in NOISE_LEVELS:
        t0 = time.perf_counter()
        results[noise] = run_level(noise, args)
        print(f"noise {noise:.0%}: {time.perf_counter() - t0:.1f} s; "
              + ", ".join(f"{m} {np.mean(results[noise][m]['accuracy']):.3f}" for m in METHODS),
              file=sys.stderr, flush=True)
    seconds = time.perf_counter() - start
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(results, args, argv, seconds), encoding="utf-8")
    print(f"wrote {out} in {seconds:.1f} s", file=sys.stderr)
    _write_summary(out, argv, args, results)
    return 0


def _write_summary(out: Path, argv: list[str], args: argparse.Namespace, results: dict) -> None:
    """The page's headline rows (one protocol per noise level) as ``docs/data/<stem>.json``
    for the leaderboard, only for a page under a ``docs/`` folder."""
    if out.resolve().parent.name != "docs":
        return
    from summaries import write_summary

    rows = []
    for noise in sorted(results):
        protocol = (f"SSBOIL moving hyperplane, {noise:.0%} label noise "
                    f"({args.repetitions} seed(s) x {args.n:,} instances)")
        # Wall time only (the loop's seconds), not CPU time: cpu_us_per_instance stays None.
        rows += [{"protocol": protocol, "learner": HEADINGS[m], "library": "river" if m.startswith("River") else "edgelearn",
                  "metrics": {"accuracy": float(np.mean(results[noise][m]["accuracy"]))},
                  "label_rate": 1.0} for m in METHODS]
        # The paper's PA rows are its Gaussian-kernel PA (see the page's protocol).
        rows += [{"protocol": protocol, "library": "paper",
                  "learner": f"paper {name}" + (" (Gaussian kernel)" if name.startswith("PA") else ""),
                  "metrics": {"accuracy": figures[noise]}, "label_rate": 1.0}
                 for name, figures in PAPER.items() if noise in figures]
    command = "python tools/results_synthesis.py" + ("" if not argv else " " + shlex.join(argv))
    path = write_summary(out.stem, command, rows, root=out.resolve().parent.parent)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
