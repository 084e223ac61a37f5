"""What the labels ActiveAROW asks for at a 10% budget allow a batch learner, per binary task
(issue 26): how much of the gap to River's LogisticRegression with every label a better fit
of the same labels could close, and how much only more labels could.

For each protocol, binary task and tuning seed, ActiveAROW with ``VARIANT`` (a JSON object
of ``tools/label_budget_variants.py``, or ``base``) runs prequentially; then scikit-learn's
``LogisticRegression(C)`` is refit, every ``max(5, n // 100)`` readings, on the labels that
run asked for before that reading, and predicts the readings up to the next refit. The
same is done with as many labels drawn at random, and with every label. A channel absent
from a reading takes its mean, and every channel is standardized by the whole stream's
statistics (a look-ahead no learner has: an upper bound in that respect too). Each line:
mean prequential accuracy over the seeds (%).

Run from the repository root::

    .venv/bin/python tools/label_budget_ceiling.py VARIANT --tasks kr_vs_kp,spect
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import label_budget_variants as variants  # noqa: E402  (sibling tools, by path)
import results_label_budget as runner  # noqa: E402

from edgelearn.evaluate import prequential  # noqa: E402
from edgelearn.streams import iter_array  # noqa: E402


def refit_accuracy(Xf, y, mask, C: float, step: int) -> float:
    """Prequential accuracy of a logistic regression refit every ``step`` readings on the
    readings before it that ``mask`` marks (the majority label of them while they hold
    one class; False before any)."""
    from sklearn.linear_model import LogisticRegression

    n, correct = len(y), 0
    for start in range(0, n, step):
        idx = np.flatnonzero(mask[:start])
        ys = y[idx]
        stop = min(start + step, n)
        if len(idx) == 0 or ys.all() or not ys.any():
            pred = np.full(stop - start, bool(len(ys)) and ys.mean() > 0.5)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pred = LogisticRegression(C=C, max_iter=1000).fit(Xf[idx], ys).predict(Xf[start:stop])
        correct += int((pred == y[start:stop]).sum())
    return 100.0 * correct / n


def ceiling(variant: dict, protocol: str, task: str, seeds, cs) -> dict:
    """``{row name: mean accuracy}`` for one protocol and task (see the module docstring)."""
    out: dict = {}
    for seed in seeds:
        X, y, names = runner.task_data(task)
        Xr, yr = runner.protocol_stream(X, y, protocol, seed)
        yr = np.asarray(yr, dtype=bool)
        model = variants.Variant(variant, target_query_rate=variants.BUDGET, seed=seed, capacity=max(256, X.shape[1]))
        result = prequential(model, iter_array(Xr, yr, names))
        asked = np.asarray(result.asked)
        out.setdefault("ActiveAROW", []).append(100.0 * float(np.mean(np.asarray(result.predictions) == yr)))
        out.setdefault("labels %", []).append(100.0 * float(asked.mean()))
        Xf = np.where(np.isnan(Xr), np.nanmean(Xr, axis=0), Xr)
        Xf = (Xf - Xf.mean(axis=0)) / (Xf.std(axis=0) + 1e-9)
        step = max(5, len(yr) // 100)
        drawn = np.random.default_rng(seed).random(len(yr)) < asked.mean()
        for label, mask in (("asked", asked), ("random", drawn), ("every label", np.ones(len(yr), dtype=bool))):
            for C in cs:
                out.setdefault(f"LR C={C:g} on {label}", []).append(refit_accuracy(Xf, yr, mask, C, step))
    return {k: float(np.mean(v)) for k, v in out.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tools/label_budget_ceiling.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("variant", help="'base', or a JSON object of a variant of tools/label_budget_variants.py")
    parser.add_argument("--tasks", default=",".join(runner.TASKS), help="comma-separated binary tasks (default: all 13)")
    parser.add_argument("--protocols", default=",".join(runner.PROTOCOLS), help="comma-separated (default: both)")
    parser.add_argument("--seeds", default="1000,1001,1002", help="comma-separated tuning seeds (default: %(default)s)")
    parser.add_argument("--C", default="0.1,1.0", help="the logistic regressions' C (default: %(default)s)")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    if min(seeds) < 1000:
        parser.error(f"--seeds must be tuning seeds (1000 or more): the pages report seeds 0-9; got {args.seeds}")
    variant = {} if args.variant == "base" else {k: tuple(x) if isinstance(x, list) else x
                                                  for k, x in json.loads(args.variant).items()}
    cs = [float(c) for c in args.C.split(",")]
    for protocol in args.protocols.split(","):
        rows = {t: ceiling(variant, protocol, t, seeds, cs) for t in args.tasks.split(",")}
        for task, row in rows.items():
            print(f"{protocol} | {task} | " + ", ".join(f"{k} {v:.1f}" for k, v in row.items()), flush=True)
        names = next(iter(rows.values()))
        print(f"{protocol} | mean | " + ", ".join(f"{k} {np.mean([r[k] for r in rows.values()]):.1f}" for k in names),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
