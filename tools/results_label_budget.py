"""The label-budget aims: ActiveAROW at 20%, 10% and 5% label budgets beside River.

On the 13 binary tasks of the project's data sets (the 12 of
``edgelearn.datasets.PAACDS_TASKS`` plus occupancy, the project's own sensor
data set, binary too) and under two protocols,

* ``paacds``: each instance loses a fraction drawn from U[0, 0.5] of its
  features (``edgelearn.streams.drop_features``), seeds 0-9;
* ``haphazard``: each feature of each instance is present independently with
  probability 0.75, seeds 0-4;

each learner runs prequentially over every instance (predict, then learn if
it asked) and the page compares ActiveAROW's mean F1 and mean accuracy with
River's ``active.EntropySampler(StandardScaler() | LogisticRegression())``
tuned to about 20% queries and with River's ``StandardScaler() |
LogisticRegression()`` given every label.  River gets a missing feature as an
absent dict key.  The verdict, and the default learner kind it implies, are
computed from the numbers.  ActiveAROW and PAACDS also run at 10% and 5%
budgets, on the 13 binary tasks and on 4 multiclass ones (beside River's
``SoftmaxRegression`` given every label), and the page says whether ActiveAROW
at 10% meets River with every label, per protocol and task family, and draws
accuracy against labels used (``tools/label_budget_families.py``).

Tuning uses seeds 1000 and up only, which the page never reports:
``--tune`` searches ActiveAROW's ``r`` and ``n_bins`` (``query_power`` and
``variance_floor`` at their defaults, chosen by an earlier grid); River's
``discount_factor`` is searched per (protocol, task) for a 20% query rate.

Run from the repository root::

    .venv/bin/python tools/results_label_budget.py --jobs 2          # the page, ~10 min on 2 cores
    .venv/bin/python tools/results_label_budget.py --tune --jobs 2   # the search behind the defaults
    .venv/bin/python tools/results_label_budget.py --tune-budget 0.1 --set r=40.0 --jobs 2  # one setting at 10%

Every finished run is kept in ``--cache`` (JSON, keyed by protocol, task,
seed, method, parameters and the code's version), so an interrupted run
resumes and the page can be rebuilt without running anything.  Other tools
(a leaderboard) can call :func:`run` and :func:`summarize`.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import hashlib
import importlib.util
import inspect
import itertools
import json
import math
import os
import platform
import shlex
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

import edgelearn
from edgelearn import metrics
from edgelearn.datasets import PAACDS_TASKS, binary_task, load
from edgelearn.evaluate import prequential, replay
from edgelearn.streams import iter_array

TASKS = PAACDS_TASKS + ("occupancy",)
PROTOCOLS = {
    "paacds": {"seeds": tuple(range(10)), "title": "PAACDS protocol (each instance drops U[0, 0.5] of its features)",
               "short": "PAACDS protocol"},
    "haphazard": {"seeds": tuple(range(5)), "title": "Haphazard inputs (each feature present with probability 0.75)",
                  "short": "haphazard inputs"},
}
TUNE_SEEDS = (1000, 1001, 1002)
DISCOUNT_SEED = 1000  # the stream River's discount_factor is tuned on, per protocol and task
BUDGET = 0.2
ALPHA = 0.5           # PAACDS protocol: largest fraction of an instance's features removed
PRESENT = 0.75        # haphazard protocol: probability that a feature is present
_MASK_STREAM = 2      # spawn key of the haphazard mask (1 is the row order, see results_paacds)

OURS = "ActiveAROW"
ENTROPY = "River EntropySampler"
RIVER_LR = "River LR (all labels)"
METHODS = (OURS, ENTROPY, RIVER_LR, "PAACDS")
#: ActiveAROW at 10% as it was before issue 26's refit and multiclass terms (docs/learners.md), a
#: column of its own: what they bought, on the reported seeds.
REFIT_COLUMN = f"{OURS} 10% before refit"
REFIT = {"target_query_rate": 0.1, "refit_until": 0, "novelty": 0.0, "logit_adjustment": 0.0}
#: The comparisons the aim names: ActiveAROW must be at least each of these.
AIM_RIVALS = (ENTROPY, RIVER_LR)
METRICS = ("f1", "accuracy", "balanced_accuracy", "query_rate")
METRIC_NAMES = {"f1": "F1", "accuracy": "accuracy", "balanced_accuracy": "balanced accuracy",
                "query_rate": "query rate"}
#: ActiveAROW's parameters searched by --tune.
TUNE_GRID = {"r": (50.0, 80.0, 120.0), "n_bins": (0, 8, 12), "query_power": (5.0,), "variance_floor": (0.3,)}


@functools.lru_cache(maxsize=None)
def _load_sibling(name: str):
    """A module of tools/ by file name (tools/ is not a package)."""
    path = Path(__file__).resolve().with_name(f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load_results_paacds():
    return _load_sibling("results_paacds")


def _families():
    return _load_sibling("label_budget_families")


# -- streams ------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def task_data(task: str):
    """``(X, y, names)`` of a binary task: one of PAACDS_TASKS, or occupancy
    (its ``Occupancy`` column, 1 = occupied)."""
    if _families().multiclass(task):
        return _families().multiclass_data(task)
    if task == "occupancy":
        ds = load("occupancy")
        return ds.X, ds.y == 1, list(ds.feature_names)
    return binary_task(task)


def protocol_stream(X, y, protocol: str, seed: int):
    """The rows of ``X, y`` as repetition ``seed`` of ``protocol`` sees them:
    shuffled (both protocols; the PMLB copies are sorted by class), then
    features removed."""
    if protocol == "paacds":
        return _load_results_paacds().repetition_stream(X, y, ALPHA, seed)
    order_rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,)))
    order = order_rng.permutation(len(y))
    Xr = np.array(X[order], dtype=np.float64)
    mask_rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_MASK_STREAM,)))
    Xr[mask_rng.random(Xr.shape) >= PRESENT] = np.nan
    return Xr, y[order]


# -- one run --------------------------------------------------------------------


def _scores(y, predictions, asked, seconds):
    y = np.asarray(y, dtype=bool)
    p = np.asarray(predictions, dtype=bool)
    return {
        "n": int(len(y)),
        "f1": metrics.f1_binary(y, p, positive=True),
        "accuracy": metrics.accuracy(y, p),
        "balanced_accuracy": metrics.balanced_accuracy(y, p),
        "query_rate": float(np.mean(asked)),
        "seconds": seconds,
    }


def _river_run(Xr, yr, names, discount_factor, seed):
    """River's pipeline, given every label (``discount_factor`` None) or
    behind an EntropySampler."""
    from river import active, linear_model, preprocessing

    model = preprocessing.StandardScaler() | linear_model.LogisticRegression()
    if discount_factor is not None:
        model = active.EntropySampler(model, discount_factor=discount_factor, seed=seed)
    predictions = np.zeros(len(yr), dtype=bool)
    asked = np.ones(len(yr), dtype=bool)
    start = time.process_time()
    for i, (x, label) in enumerate(iter_array(Xr, yr, names)):
        if discount_factor is None:
            predictions[i] = model.predict_one(x) is True
            model.learn_one(x, label)
        else:
            y_pred, ask = model.predict_one(x)
            predictions[i] = y_pred is True
            asked[i] = ask
            if ask:
                model.learn_one(x, label)
    return _scores(yr, predictions, asked, time.process_time() - start)


def _edgelearn_run(model, Xr, yr, names, scores=None):
    _warm_up()
    start = time.process_time()
    result = prequential(model, iter_array(Xr, yr, names))
    return (scores or _scores)(yr, result.predictions, result.asked, time.process_time() - start)


_WARM = []


def _warm_up():
    # Load (or compile) the kernels once per process, so no run's time is numba's.
    if not _WARM:
        stream = [({"a": float(i % 3), "b": 1.0}, i % 2 == 0) for i in range(20)]
        for model in (edgelearn.ActiveAROW(), edgelearn.ActiveAROW(n_classes=3), edgelearn.PAACDS()):
            prequential(model, stream if model.n_classes == 2 else [(x, i % 3) for i, (x, _) in enumerate(stream)])
        replay(edgelearn.PAACDS(), np.array([[0.0, 1.0], [np.nan, 2.0]]), np.array([True, False]))
        _WARM.append(True)


def run_one(protocol: str, task: str, seed: int, method: str, params: dict) -> dict:
    """One prequential run; ``params`` are the method's parameters
    (ActiveAROW's, or River's ``discount_factor``), as a dict or as the
    sorted ``(name, value)`` pairs a unit carries."""
    params = dict(params)
    X, y, names = task_data(task)
    Xr, yr = protocol_stream(X, y, protocol, seed)
    capacity = max(256, X.shape[1])
    families = _families()
    scores = None
    if families.multiclass(task):
        scores = families.multiclass_scores
        if method == families.RIVER_SOFTMAX:
            return families.river_softmax_run(Xr, yr, names, iter_array, time.process_time)
        params["n_classes"] = families.n_classes(y)
    if method == ENTROPY:
        return _river_run(Xr, yr, names, params["discount_factor"], seed)
    if method == RIVER_LR:
        return _river_run(Xr, yr, names, None, seed)
    if method == "PAACDS":
        # the jitted loop: the same predictions as the dict path, faster
        model = edgelearn.PAACDS(**{"target_query_rate": BUDGET, **params}, seed=seed, capacity=capacity)
        _warm_up()
        start = time.process_time()
        result = replay(model, Xr, yr, feature_names=names)
        return (scores or _scores)(yr, result.predictions, result.asked, time.process_time() - start)
    model = edgelearn.ActiveAROW(**{"target_query_rate": BUDGET, **params}, seed=seed, capacity=capacity)
    return _edgelearn_run(model, Xr, yr, names, scores)


def code_version(method: str) -> str:
    """What a cached result depends on besides its parameters: the source of
    edgelearn's learner and kernels, or River's version."""
    if method.startswith("River"):
        import river
        return f"river {river.__version__}"
    from edgelearn import channels, evaluate
    from edgelearn.kernels import arow, channels as channel_kernels, paacds, rate_control, replay as loops, rng
    from edgelearn.learners import arow as arow_learner, base, paacds as paacds_learner
    modules = (channels, evaluate, arow, channel_kernels, paacds, rate_control, loops, rng, arow_learner, base,
               paacds_learner, metrics)
    digest = hashlib.sha256()
    for module in modules:
        digest.update(inspect.getsource(module).encode())
    return digest.hexdigest()[:16]


def frozen(params: dict) -> tuple:
    """Parameters as a unit carries them: hashable, in one order."""
    return tuple(sorted(params.items()))


def _key(protocol, task, seed, method, params, version):
    return json.dumps([protocol, task, seed, method, dict(params), version])


def _run_unit(unit):
    return unit, run_one(*unit)


def run(units, jobs: int = 1, cache_path: Path | None = None, label: str = "") -> dict:
    """Run ``units`` of ``(protocol, task, seed, method, params)`` not already
    in the cache; return ``{unit: result}`` for all of them."""
    cache = json.loads(cache_path.read_text()) if cache_path and cache_path.exists() else {}
    versions = {m: code_version(m) for m in {u[3] for u in units}}
    keys = {u: _key(*u[:4], u[4], versions[u[3]]) for u in units}
    todo = [u for u in dict.fromkeys(units) if keys[u] not in cache]
    done = len(keys) - len(todo)
    start = time.perf_counter()
    # The longest (occupancy, many features) first, so the last to finish are short.
    todo.sort(key=lambda u: (u[1] != "occupancy", u[1] not in ("spambase", "arrhythmia", "splice")))

    def record(unit, result):
        nonlocal done
        cache[keys[unit]] = result
        done += 1
        if done % 10 == 0 or done == len(keys):
            print(f"{label}[{done}/{len(keys)}] {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
            if cache_path:
                _write_cache(cache_path, cache)

    if todo:
        if jobs == 1:
            for unit in todo:
                record(*_run_unit(unit))
        else:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                for future in as_completed([pool.submit(_run_unit, u) for u in todo]):
                    record(*future.result())
        if cache_path:
            _write_cache(cache_path, cache)
    return {u: cache[keys[u]] for u in units}


def _write_cache(path: Path, cache: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(cache))
    os.replace(tmp, path)


def tune_discount(protocols, tasks, jobs, cache_path, steps: int = 12) -> dict:
    """River's ``discount_factor`` per (protocol, task), bisected on log scale
    over [0.01, 10000] so that its query rate on seed DISCOUNT_SEED is nearest
    BUDGET; the units run in parallel, one bisection step at a time."""
    lo = {(p, t): math.log(0.01) for p in protocols for t in tasks}
    # River's logistic regression learns slowly (SGD, step 0.01): on a short
    # stream its probabilities stay near 1/2, and only a large discount asks little.
    hi = {(p, t): math.log(10000.0) for p in protocols for t in tasks}
    best = {}
    for step in range(steps):
        mids = {pt: round(math.exp((lo[pt] + hi[pt]) / 2), 6) for pt in lo}
        units = [(p, t, DISCOUNT_SEED, ENTROPY, frozen({"discount_factor": mids[(p, t)]})) for p, t in lo]
        results = run(units, jobs, cache_path, label=f"discount search step {step + 1}/{steps} ")
        for unit, result in results.items():
            pt = unit[:2]
            rate = result["query_rate"]
            if pt not in best or abs(rate - BUDGET) < abs(best[pt][1] - BUDGET):
                best[pt] = (mids[pt], rate)
            # a larger discount asks less
            if rate > BUDGET:
                lo[pt] = math.log(mids[pt])
            else:
                hi[pt] = math.log(mids[pt])
    return {pt: d for pt, (d, _) in best.items()}


# -- summaries ----------------------------------------------------------------------


def summarize(results: dict, protocol: str, tasks, seeds, method_params: dict) -> dict:
    """``{column: {metric: {"per_task": {task: mean over seeds}, "mean": mean
    over tasks, "per_seed": mean over tasks of each seed}}}``; ``method_params``
    maps a column to its method's ``params_of(protocol, task)``, or to
    ``(method, params_of)`` when the column is not named after its method."""
    out = {}
    for column, spec in method_params.items():
        method, params_of = spec if isinstance(spec, tuple) else (column, spec)
        out[column] = {}
        for metric in METRICS + ("seconds", "n"):
            table = np.array([[results[(protocol, t, s, method, frozen(params_of(protocol, t)))][metric] for s in seeds]
                              for t in tasks], dtype=float)
            out[column][metric] = {
                "per_task": dict(zip(tasks, table.mean(axis=1))),
                "mean": float(table.mean()),
                "per_seed": table.mean(axis=0),
            }
    return out


def aim_verdict(summaries: dict) -> dict:
    """Per protocol and rival, ActiveAROW's margin on mean F1 and accuracy;
    ``met`` if every margin is >= 0."""
    gaps = {}
    for protocol, summary in summaries.items():
        for rival in AIM_RIVALS:
            for metric in ("f1", "accuracy"):
                gaps[(protocol, rival, metric)] = summary[OURS][metric]["mean"] - summary[rival][metric]["mean"]
    return {"gaps": gaps, "met": all(g >= 0.0 for g in gaps.values())}


def default_kind_for(met: bool) -> str:
    """The learner kind the aim's outcome makes the default."""
    return "active_arow" if met else "paacds"


def headline_rows(summaries: dict, args, multiclass: dict | None = None) -> list[dict]:
    """One row per learner per protocol for ``tools/summaries.py``: the page's
    mean F1, accuracy and balanced accuracy (fractions), label rate and CPU
    time per instance (``multiclass``: the multiclass family's summaries)."""
    rows = []
    families = [("binary", args.tasks, summaries)] + ([("multiclass", args.mc_tasks, multiclass)] if multiclass else [])
    for (family, tasks, by_protocol), protocol in itertools.product(families, PROTOCOLS):
        if protocol not in by_protocol:
            continue
        name = (f"label budgets, {PROTOCOLS[protocol]['short']} ({len(tasks)} {family} tasks, "
                f"seeds {_seeds(args, protocol)})")
        for method, result in by_protocol[protocol].items():
            rows.append({
                "protocol": name,
                "learner": method,
                "library": "river" if method.startswith("River") else "edgelearn",
                "metrics": {m: result[m]["mean"] for m in ("f1", "accuracy", "balanced_accuracy")},
                "label_rate": result["query_rate"]["mean"],
                "cpu_us_per_instance": 1e6 * result["seconds"]["mean"] / result["n"]["mean"],
            })
    return rows


# -- the page -------------------------------------------------------------------------


def _pct(v):
    return f"{100 * v:.1f}"


def render(summaries, verdict, discounts, args, argv, wall, multiclass=None, figure=None) -> str:
    """The page; ``multiclass``: the multiclass family's summaries per protocol;
    ``figure``: the learning-curve PNG's path relative to the page."""
    import numba
    import river

    command = "python tools/results_label_budget.py" + ("" if not argv else " " + shlex.join(argv))
    wanted_kind = default_kind_for(verdict["met"])
    lines = [
        "# At 20%, 10% and 5% label budgets: ActiveAROW beside River",
        "",
        f"Produced by `{command}` (run from the repository root) on "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}; "
        f"`{platform.platform()}`, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"NumPy {np.__version__}, numba {numba.__version__}, river {river.__version__}; "
        f"{args.jobs} run(s) at a time, {wall:.0f} s wall clock (cached runs are not rerun); "
        f"load average {' / '.join(f'{v:.1f}' for v in os.getloadavg())} (1 / 5 / 15 min) when it was written.",
        "",
        "## Verdict",
        "",
    ]
    families = _families()
    aim_families = {"binary": summaries, **({"multiclass": multiclass} if multiclass else {})}
    aim10, met10 = families.aim_lines(
        aim_families, families.column(OURS, families.AIM_BUDGET),
        {"binary": RIVER_LR, "multiclass": families.RIVER_SOFTMAX}, PROTOCOLS, _pct)
    lines.extend([f"At a {families.AIM_BUDGET:.0%} label budget, beside River given every label:", ""] + aim10 + [
        "",
        f"**The {families.AIM_BUDGET:.0%} aim is {'met' if met10 else 'not met'}**"
        + ("." if met10 else ": ActiveAROW at 10% is not at least River with every label on every protocol "
           "and task family above."),
        "",
        f"At a 20% budget, the aim that picks the default learner:",
        "",
    ])
    if figure:
        lines[-2:-2] = [f"![Mean accuracy against the labels used, per protocol and task family]({figure})", "",
                        "The figure: mean accuracy against the mean share of labels used, ActiveAROW and "
                        "PAACDS at 5%, 10% and 20% budgets, River's learners as points.", ""]
    rows = []
    for protocol in summaries:
        for rival in AIM_RIVALS:
            s = summaries[protocol]
            f1_gap = verdict["gaps"][(protocol, rival, "f1")]
            acc_gap = verdict["gaps"][(protocol, rival, "accuracy")]
            ok = f1_gap >= 0 and acc_gap >= 0
            rows.append(
                f"* {protocol}: ActiveAROW ({_pct(s[OURS]['query_rate']['mean'])}% of the labels) "
                f"{'**is at least**' if ok else '**is below**'} {rival} "
                f"({_pct(s[rival]['query_rate']['mean'])}% of the labels): mean F1 "
                f"{_pct(s[OURS]['f1']['mean'])} vs {_pct(s[rival]['f1']['mean'])} ({100 * f1_gap:+.1f}), "
                f"mean accuracy {_pct(s[OURS]['accuracy']['mean'])} vs {_pct(s[rival]['accuracy']['mean'])} "
                f"({100 * acc_gap:+.1f})."
            )
    lines.extend(rows)
    lines.extend([
        "",
        f"**The aim is {'met' if verdict['met'] else 'not met'}**: ActiveAROW's mean F1 and mean "
        f"accuracy {'are' if verdict['met'] else 'are not all'} at least both rivals' on both protocols. "
        f"So the default learner kind is `{wanted_kind!r}`; `edgelearn.DEFAULT_KIND` is "
        f"`{edgelearn.DEFAULT_KIND!r}`"
        + (" (they agree)." if wanted_kind == edgelearn.DEFAULT_KIND else
           " — **they disagree: edgelearn.DEFAULT_KIND must change**."),
        "",
        "## Protocol",
        "",
        f"* Tasks ({len(args.tasks)}): {', '.join(args.tasks)}. The 12 are `edgelearn.datasets.PAACDS_TASKS` "
        "(`binary_task`); occupancy is the project's sensor data set (`Occupancy` = 1 positive), "
        "the 13th binary task (room_occupancy is 4-class, elec2 and sea are the drift protocol's). "
        "F1 is the positive class's.",
        f"* PAACDS protocol, seeds {_seeds(args, 'paacds')}: rows shuffled, then each instance loses a "
        f"fraction drawn from U[0, {ALPHA:g}] of its features (`tools/results_paacds.py`'s "
        "`repetition_stream`, the stream the PAACDS page uses).",
        f"* Haphazard inputs, seeds {_seeds(args, 'haphazard')}: rows shuffled the same way, then "
        f"each feature of each instance is present independently with probability {PRESENT:g}.",
        "* Prequential over every instance: predict, then learn the label only if the learner asked "
        "(River's EntropySampler: `predict_one` gives the label and the ask; `learn_one` if asked). "
        "F1, accuracy and balanced accuracy count every instance. River gets missing features as "
        "absent dict keys; edgelearn learners get them as absent channels.",
        f"* ActiveAROW: `ActiveAROW(target_query_rate={BUDGET:g}, seed=seed, capacity=max(256, d))`, "
        "every other parameter at its default, through `edgelearn.evaluate.prequential` (the dict path).",
        f"* PAACDS, for reference: `PAACDS(target_query_rate={BUDGET:g}, seed=seed, capacity=max(256, d))` "
        "at its defaults, through `edgelearn.replay` (the jitted loop; same predictions as the dict path).",
        "* River LR (all labels): `preprocessing.StandardScaler() | linear_model.LogisticRegression()` "
        "at River's defaults, `predict_one` then `learn_one` on every instance.",
        "* River EntropySampler: `active.EntropySampler(StandardScaler() | LogisticRegression(), "
        "discount_factor=d, seed=seed)`, with d searched per protocol and task (bisection on log d "
        f"over [0.01, 10000], {args.discount_steps} steps) for the query rate nearest {BUDGET:.0%} on seed {DISCOUNT_SEED}, "
        "which is not reported.",
        f"* {REFIT_COLUMN}: ActiveAROW at 10% as it was before the refit of its first labels and "
        "the multiclass terms (`refit_until=0`, `novelty=0.0`, `logit_adjustment=0.0`; `docs/learners.md`), "
        "every other parameter as above: the default learner of the columns named ActiveAROW has them.",
        "* Budgets: the columns named with a percentage run the learner at that `target_query_rate`; "
        "the others at 20%. Every budgeted learner holds its budget with the shared bucket of label "
        "credit (`edgelearn/kernels/rate_control.py`): a new model may take at once the labels a "
        "250-reading stream allows, no stream of 250 readings or more asks for more than 1.05 x the "
        "target of its readings, and over 1,000 readings or more it asks for within 5% of the target "
        "(the short tasks: spect 267 readings, ionosphere 351, libras 360, dermatology 366, "
        "arrhythmia 452, wdbc 569, credit_a 690, pima 768).",
        f"* Multiclass tasks ({len(args.mc_tasks)}): {', '.join(args.mc_tasks)}: every raw class of the "
        "data set; ActiveAROW and PAACDS with `n_classes` the number of classes, beside "
        "`preprocessing.StandardScaler() | linear_model.SoftmaxRegression()` (River's multinomial "
        "logistic regression) given every label; F1 is the macro F1 over the classes. River's "
        "EntropySampler is binary-only here.",
        f"* Tuning: ActiveAROW's defaults were chosen by `--tune` on seeds "
        f"{', '.join(map(str, TUNE_SEEDS))} of both protocols; no reported seed was used to choose anything.",
        "* Cells are means over seeds, in percent; the mean row averages the tasks.",
        "",
    ])
    tables = [("", args.tasks, summaries)] + ([(", multiclass tasks", args.mc_tasks, multiclass)] if multiclass else [])
    for (title, tasks, by_protocol), protocol in itertools.product(tables, PROTOCOLS):
        summary = by_protocol[protocol]
        lines.extend([f"## {PROTOCOLS[protocol]['title']}{title}", ""])
        for metric in METRICS:
            name = METRIC_NAMES[metric] + (f" ({'macro F1, ' if metric == 'f1' else ''}multiclass)" if title else "")
            extra = None
            if metric == "query_rate" and not title:
                extra = ("River discount_factor", lambda task, p=protocol: f"{discounts[(p, task)]:g}")
            lines.extend(families.table_lines(summary, tasks, metric, name, _pct, extra))
        total = {m: summary[m]["seconds"]["mean"] / summary[m]["n"]["mean"] for m in summary}
        ref = total[RIVER_LR if RIVER_LR in total else families.RIVER_SOFTMAX]
        lines.extend([
            "CPU time per instance (process time of the whole prequential loop: the dict path, but "
            "PAACDS's jitted replay; each run timed when it ran, possibly in an earlier invocation "
            f"whose result is cached), and as a ratio to {RIVER_LR if RIVER_LR in total else families.RIVER_SOFTMAX}: "
            + "; ".join(f"{m} {1e6 * v:.1f} µs ({v / ref:.2f}x)" for m, v in total.items()) + ".",
            "",
        ])
    return "\n".join(lines)


def _seeds(args, protocol):
    seeds = args.seeds[protocol]
    return f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])


# -- command line --------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="tools/results_label_budget.py",
        description="ActiveAROW at a 20%% label budget beside River's EntropySampler and River's "
                    "LogisticRegression given every label, on 13 binary tasks under the PAACDS and "
                    "haphazard-inputs protocols; writes a markdown page.",
    )
    parser.add_argument("--out", default="docs/results-label-budget.md",
                        help="page to write (default: docs/results-label-budget.md)")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time, in processes (default: 1)")
    parser.add_argument("--cache", default=".cache/results-label-budget.json",
                        help="JSON file of finished runs, reused and extended (default: %(default)s); "
                             "'' for none")
    parser.add_argument("--tasks", nargs="+", choices=TASKS, metavar="TASK",
                        help="subset of tasks (default: all 13: %s)" % ", ".join(TASKS))
    parser.add_argument("--multiclass-tasks", nargs="*", metavar="TASK",
                        choices=_families().MULTICLASS_TASKS,
                        help="multiclass tasks (default: all 4: %s; none with the option alone)"
                             % ", ".join(_families().MULTICLASS_TASKS))
    parser.add_argument("--seeds", type=int, default=None,
                        help="seeds per protocol (default: 10 for paacds, 5 for haphazard)")
    parser.add_argument("--discount-steps", type=int, default=12,
                        help="bisection steps of the search for River's discount_factor (default: 12)")
    parser.add_argument("--tune", action="store_true",
                        help="search ActiveAROW's r and n_bins on seeds %s and print the table "
                             "instead of writing the page" % ", ".join(map(str, TUNE_SEEDS)))
    parser.add_argument("--tune-budget", type=float, metavar="BUDGET",
                        help="print ActiveAROW's mean F1, accuracy and label rate at this budget on seeds %s "
                             "(binary and multiclass tasks, both protocols) beside River with every label, "
                             "instead of writing the page" % ", ".join(map(str, TUNE_SEEDS)))
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="with --tune-budget: an ActiveAROW parameter (a Python literal), repeatable")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1. Got {args.jobs}.")
    if args.discount_steps < 1:
        parser.error(f"--discount-steps must be at least 1. Got {args.discount_steps}.")
    if args.seeds is not None and args.seeds < 1:
        parser.error(f"--seeds must be at least 1. Got {args.seeds}.")
    args.tasks = list(args.tasks or TASKS)
    names = _families().MULTICLASS_TASKS if args.multiclass_tasks is None else args.multiclass_tasks
    args.mc_tasks = [_families().multiclass_task(t) for t in names]
    args.seeds = {p: spec["seeds"][: args.seeds] if args.seeds else spec["seeds"] for p, spec in PROTOCOLS.items()}
    return args


def tune(args, cache_path):
    grid = [dict(zip(TUNE_GRID, values)) for values in itertools.product(*TUNE_GRID.values())]
    units = [(p, t, s, OURS, frozen(params)) for params in grid for p in PROTOCOLS for t in args.tasks for s in TUNE_SEEDS]
    results = run(units, args.jobs, cache_path, label="tune ")
    print("| " + " | ".join(TUNE_GRID) + " | " + " | ".join(f"{p} F1 | {p} accuracy | {p} query rate" for p in PROTOCOLS)
          + " | score |")
    scored = []
    for params in grid:
        cells = []
        score = 0.0
        for p in PROTOCOLS:
            for metric in ("f1", "accuracy"):
                v = float(np.mean([results[(p, t, s, OURS, frozen(params))][metric] for t in args.tasks for s in TUNE_SEEDS]))
                cells.append(_pct(v))
                score += v / 4
            rate = np.mean([results[(p, t, s, OURS, frozen(params))]["query_rate"] for t in args.tasks for s in TUNE_SEEDS])
            cells.append(_pct(rate))
        scored.append((score, params))
        print("| " + " | ".join(f"{params[name]:g}" for name in TUNE_GRID) + " | " + " | ".join(cells)
              + f" | {_pct(score)} |")
    score, params = max(scored, key=lambda sp: sp[0])
    print(f"best: {params} (mean of F1 and accuracy over both protocols {_pct(score)})")
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    cache_path = Path(args.cache) if args.cache else None
    if args.tune:
        return tune(args, cache_path)
    if args.tune_budget is not None:
        import ast
        params = {name: ast.literal_eval(value) for name, value in (kv.split("=", 1) for kv in args.set)}
        for line in _families().budget_check(run, frozen, OURS, RIVER_LR, PROTOCOLS, args.tasks, TUNE_SEEDS,
                                             args.tune_budget, params, args.jobs, cache_path):
            print(line)
        return 0
    start = time.perf_counter()
    discounts = tune_discount(PROTOCOLS, args.tasks, args.jobs, cache_path, args.discount_steps)
    families = _families()
    params_of = {
        OURS: lambda p, t: {}, ENTROPY: lambda p, t: {"discount_factor": discounts[(p, t)]},
        RIVER_LR: lambda p, t: {}, "PAACDS": lambda p, t: {},
    }
    budgeted = {families.column(m, b): (m, lambda p, t, b=b: {"target_query_rate": b})
                for m in (OURS, "PAACDS") for b in families.BUDGETS[1:]}
    refit = {REFIT_COLUMN: (OURS, lambda p, t: dict(REFIT))}
    columns = {m: (m, params_of[m]) for m in METHODS} | budgeted | refit
    mc_columns = {families.RIVER_SOFTMAX: (families.RIVER_SOFTMAX, lambda p, t: {})} | {
        families.column(m, b): (m, lambda p, t, b=b: {"target_query_rate": b})
        for m in (OURS, "PAACDS") for b in families.BUDGETS} | refit
    units = [(p, t, s, m, frozen(of(p, t))) for p in PROTOCOLS for t in args.tasks for s in args.seeds[p]
             for m, of in columns.values()]
    units += [(p, t, s, m, frozen(of(p, t))) for p in PROTOCOLS for t in args.mc_tasks for s in args.seeds[p]
              for m, of in mc_columns.values()]
    results = run(units, args.jobs, cache_path, label="runs ")
    summaries = {p: summarize(results, p, args.tasks, args.seeds[p], columns) for p in PROTOCOLS}
    multiclass = ({p: summarize(results, p, args.mc_tasks, args.seeds[p], mc_columns) for p in PROTOCOLS}
                  if args.mc_tasks else None)
    verdict = aim_verdict(summaries)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure = out.with_suffix(".png")
    curves = {learner: [families.column(learner, b) for b in reversed(families.BUDGETS)]
              for learner in (OURS, "PAACDS")} | {ENTROPY: [ENTROPY], RIVER_LR: [RIVER_LR],
                                                  families.RIVER_SOFTMAX: [families.RIVER_SOFTMAX]}
    families.draw_curves(figure, {"binary": summaries, **({"multiclass": multiclass} if multiclass else {})},
                         curves, PROTOCOLS)
    text = render(summaries, verdict, discounts, args, argv, time.perf_counter() - start, multiclass, figure.name)
    out.write_text(text, encoding="utf-8")
    command = "python tools/results_label_budget.py" + ("" if not argv else " " + shlex.join(argv))
    # The headline rows beside the page: docs/data/<stem>.json of the repository the page is in.
    root = out.parent.parent if out.parent.name == "docs" else out.parent
    summary = _load_sibling("summaries").write_summary(out.stem, command, headline_rows(summaries, args, multiclass), root)
    print(f"wrote {summary}", file=sys.stderr)
    print(f"wrote {out} and {figure}: aim {'met' if verdict['met'] else 'not met'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
