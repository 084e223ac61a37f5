"""Search a learner's parameters on recorded logs, scored prequentially.

Every parameter set is replayed over every unit of logs
(:mod:`firmware_bridge.offline.fanout`: serially, on local processes or on a Dask
cluster), test-then-train under the ``from_data`` label policy (the recorded
label is learned only when the learner asks for it), at a stated label budget
(``target_query_rate`` for an active learner). Parameter sets are ranked by the
pooled score over all streams (:mod:`firmware_bridge.offline.results_table`), and the
winner is written as a ``[learner]`` section for ``gateway.toml``.

Each finished task is appended to a results file (JSON lines, one task result
each) as it finishes; running the same search again with the same file skips
the tasks it holds, so an interrupted search resumes where it stopped.

>>> grid_params({"C": [0.5, 1.0], "B": [0.5]})
[{'B': 0.5, 'C': 0.5}, {'B': 0.5, 'C': 1.0}]
>>> print(learner_section("paacds", {"C": 0.5, "variant": "PAACDS-I"}))
[learner]
kind = "paacds"
<BLANKLINE>
[learner.params]
C = 0.5
variant = "PAACDS-I"
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Callable, Sequence
from typing import Any

from .fanout import run_grid, tasks_for
from .results_table import overall_by_params

__all__ = ["LOWER_IS_BETTER", "METRICS", "TASK_METRICS", "grid_params", "learner_section", "random_params", "rank", "tune"]

#: Scores a search can rank by, and what they are.
METRICS = {
    "accuracy": "share of scored messages predicted right, pooled over every stream",
    "f1": "F1 of the positive label, averaged over streams (macro over streams)",
    "mae": "mean absolute error of a regression's predictions, pooled (lower is better)",
    "rmse": "root mean squared error of a regression's predictions, pooled (lower is better)",
    "nab": "NAB's standard-profile score of an anomaly detector's own alarms, over every "
           "series (CSVs of NAB's corpus, with its labelled windows)",
}

#: The metrics where lower is better.
LOWER_IS_BETTER = frozenset({"mae", "rmse"})

#: The metric a search ranks by when none is named, by task.
TASK_METRICS = {"regression": "mae", "anomaly": "nab"}


def grid_params(grid: dict[str, Sequence]) -> list[dict[str, Any]]:
    """Every combination of the values in ``grid``, keys in sorted order."""
    keys = sorted(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def random_params(space: dict[str, tuple], n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` parameter sets drawn from ``space``: a key maps to ``(low, high)`` (uniform
    float), ``(low, high, "log")`` (log-uniform float) or a list of choices."""
    import numpy as np

    rng = np.random.default_rng(seed)
    sets = []
    for _ in range(n):
        params = {}
        for key in sorted(space):
            spec = space[key]
            if isinstance(spec, list):
                params[key] = spec[int(rng.integers(len(spec)))]
            elif len(spec) == 3 and spec[2] == "log":
                params[key] = float(math.exp(rng.uniform(math.log(spec[0]), math.log(spec[1]))))
            else:
                params[key] = float(rng.uniform(spec[0], spec[1]))
        sets.append(params)
    return sets


def _load_results(path: str | os.PathLike | None) -> dict[str, dict]:
    done: dict[str, dict] = {}
    if path is None or not os.path.exists(path):
        return done
    with open(path, encoding="utf-8") as file:
        for line in file:
            line = line.strip()
            if not line:
                continue
            try:
                result = json.loads(line)
            except json.JSONDecodeError:  # a line cut short by an interrupt: run it again
                continue
            done[result["key"]] = result
    return done


def tune(
    units: Sequence[Sequence[str]],
    learner: str,
    param_sets: Sequence[dict],
    results_path: str | os.PathLike | None = None,
    jobs: int = 1,
    scheduler: str | None = None,
    progress: Callable[[dict, int, int], None] | None = None,
    windows: str | None = None,
    csv_label: str | None = None,
) -> list[dict[str, Any]]:
    """Replay every unit with every parameter set; the task results in task order.
    Tasks already in ``results_path`` are not run again; new ones are appended as
    they finish. ``windows`` (NAB's ``combined_windows.json``) gives the anomaly
    streams of NAB's CSVs their NAB score; ``csv_label`` is CSV units' label column."""
    tasks = tasks_for(units, learner, param_sets, windows=windows, csv_label=csv_label)
    done = _load_results(results_path)
    todo = [t for t in tasks if t.key not in done]
    if todo:
        out = open(results_path, "a", encoding="utf-8") if results_path is not None else None
        finished = len(tasks) - len(todo)

        def record(result: dict, count: int, total: int) -> None:
            done[result["key"]] = result
            if out is not None:
                out.write(json.dumps(result, default=float) + "\n")
                out.flush()
            if progress is not None:
                progress(result, finished + count, len(tasks))

        try:
            run_grid(todo, jobs=jobs, scheduler=scheduler, progress=record)
        finally:
            if out is not None:
                out.close()
    return [done[t.key] for t in tasks]


def rank(results: list[dict], metric: str) -> list[dict[str, Any]]:
    """Pooled rows per parameter set, best ``metric`` first (ties: fewer labels used)."""
    if metric not in METRICS:
        raise ValueError(f"The 'metric' parameter of rank must be one of {sorted(METRICS)}. Got {metric!r}.")
    rows = overall_by_params(results)
    # A set with nothing scored (None) ranks last.
    if metric in LOWER_IS_BETTER:
        return sorted(rows, key=lambda r: (_or(r.get(metric), math.inf), r["labels_used"]))
    return sorted(rows, key=lambda r: (-_or(r.get(metric), -math.inf), r["labels_used"]))


def _or(value: float | None, missing: float) -> float:
    return missing if value is None else value


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))


def learner_section(kind: str, params: dict[str, Any]) -> str:
    """The ``[learner]`` section of ``gateway.toml`` for ``kind`` with ``params``
    (``None`` values are left out: the learner's default)."""
    lines = ["[learner]", f"kind = {json.dumps(kind)}", "", "[learner.params]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in sorted(params.items()) if v is not None]
    return "\n".join(lines)
