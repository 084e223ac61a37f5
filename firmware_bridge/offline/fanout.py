"""Many logs x many parameter sets, as independent tasks on many cores or machines.

A *task* is one unit of logs (one file, or one directory's files in name order,
as the recorder writes them: a stream's messages stay in order inside a task)
replayed with one learner parameter set by :func:`run_task`, on a fresh
:class:`~firmware_bridge.pipeline.Pipeline`, with the jitted log loop where the
learner has one (:mod:`firmware_bridge.offline.replay`). Tasks share nothing, so
:func:`run_grid` can run them

* in this process (``jobs=1``, the default),
* on ``jobs`` local processes with joblib (``pip install edgelearn[fanout]``),
* on an existing Dask cluster given its scheduler address
  (``scheduler="tcp://HOST:PORT"``, ``pip install edgelearn[dask]``),

and returns the same results, in task order, either way (a task's result
depends on its logs and parameters only). joblib and dask are imported only
when used.

Numba compiles a kernel the first time a process calls it, which costs seconds;
the kernels are cached on disk (``cache=True``), so :func:`run_grid` replays a
tiny log in this process first, and on a Dask cluster once on every worker,
before the tasks: no worker compiles while it holds a task.

>>> from firmware_bridge.offline.fanout import Task, run_task
>>> Task(("a.msgpack",), "paacds", {"C": 0.5}).key
'paacds C=0.5 | a.msgpack'
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CSV_SUFFIXES", "Task", "expand_logs", "nab_score_parts", "run_grid", "run_task", "tasks_for",
           "warm_up"]


@dataclass(frozen=True)
class Task:
    """One unit of logs replayed with one parameter set."""

    logs: tuple[str, ...]
    learner: str
    params: dict = field(default_factory=dict, hash=False)
    label_policy: str = "from_data"
    max_streams: int = 1024
    jit: bool = True
    #: NAB's labelled windows (``combined_windows.json``): an anomaly stream of a CSV
    #: named there is given its NAB score (:func:`nab_score_parts`).
    windows: str | None = None
    #: A CSV unit's label column (None: the last column; ``"none"``: no label column).
    csv_label: str | None = None

    @property
    def key(self) -> str:
        """A stable name for the task (results files use it to resume)."""
        settings = " ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}"
                            for k, v in sorted(self.params.items()))
        key = f"{self.learner} {settings} | {', '.join(self.logs)}"
        return key if self.windows is None else f"{key} | windows {self.windows}"


#: How sources become units: every file one unit, a directory's files one unit, all one.
GROUPS = ("file", "dir", "all")


def expand_logs(sources: Iterable[str | os.PathLike], group: str = "file") -> list[tuple[str, ...]]:
    """The units of logs named by ``sources``: files, directories (their
    ``*.msgpack`` files in name order) and glob patterns. ``group="file"``: each
    file is a unit; ``group="dir"``: a directory's files form one unit (one
    recorder's rotated files), a file or glob match alone is one; ``group="all"``:
    every file, in order, is one unit (one replay, as ``edgelearn replay`` runs its
    sources by default).

    Raises ``ValueError`` naming a source that matches nothing."""
    if group not in GROUPS:
        raise ValueError(f"The 'group' parameter of expand_logs must be one of {GROUPS}. "
                         f"Got {group!r}.")
    if group == "all":
        return [tuple(f for unit in expand_logs(sources, "file") for f in unit)]
    units: list[tuple[str, ...]] = []
    for source in sources:
        source = os.fspath(source)
        if os.path.isdir(source):
            files = sorted(glob.glob(os.path.join(glob.escape(source), "*.msgpack")))
            if group == "dir" and files:
                units.append(tuple(files))
                continue
        elif os.path.isfile(source):
            files = [source]
        else:
            files = sorted(glob.glob(source))
        if not files:
            raise ValueError(f"no msgpack log matches {source!r}")
        units.extend((f,) for f in files)
    return units


def tasks_for(
    units: Iterable[Sequence[str] | str | os.PathLike],
    learner: str,
    param_sets: Iterable[dict],
    label_policy: str = "from_data",
    max_streams: int = 1024,
    jit: bool = True,
    windows: str | None = None,
    csv_label: str | None = None,
) -> list[Task]:
    """Every unit of logs with every parameter set, units varying fastest."""
    units = [(os.fspath(u),) if isinstance(u, (str, os.PathLike)) else tuple(map(os.fspath, u))
             for u in units]
    return [Task(unit, learner, dict(params), label_policy, max_streams, jit, windows, csv_label)
            for params in param_sets for unit in units]


#: Files a unit may hold besides msgpack logs: CSVs, read as ``edgelearn replay`` reads them.
CSV_SUFFIXES = (".csv", ".csv.gz")


def _csv_records(files: Sequence[str], label: str | None, times: dict[str, list]):
    """The CSVs' readings as records, in file order; each stream's reading times go to
    ``times``."""
    from .csv_source import csv_source

    for path in files:
        source = csv_source(path, label)
        stamps = times.setdefault(source.stream, [])
        for record in source.records:
            stamps.append(record.received_at)
            yield record


def nab_score_parts(times: Sequence[float], alarms: Sequence[bool], windows: list) -> dict[str, float]:
    """A series' part of a NAB score of its alarms (the detector's own, no threshold
    tuned; standard profile): ``nab_raw``, ``nab_null`` and ``nab_perfect``, which sum
    over series and normalize as ``100 (raw - null) / (perfect - null)``
    (:mod:`edgelearn.nab`). ``windows``: NAB's ``[start, end]`` timestamps."""
    import numpy as np

    from edgelearn.nab import PROFILES, NabSeries, Sweep

    stamps = np.array(times, dtype=np.float64).astype("datetime64[s]")
    rows = []
    for start, end in windows:
        found = [np.flatnonzero(stamps == np.datetime64(t[:19].replace(" ", "T"))) for t in (start, end)]
        if any(len(f) != 1 for f in found):
            raise ValueError(f"NAB window {start} .. {end} matches no single reading of the series.")
        rows.append((int(found[0][0]), int(found[1][0])))
    sweep = Sweep([NabSeries("series", stamps, np.zeros(len(stamps)), rows)], PROFILES["standard"])
    raw = sweep.raw_at([np.asarray(alarms, dtype=np.float64)], 0.5)
    return {"nab_raw": raw, "nab_null": sweep.null, "nab_perfect": sweep.perfect}


def _windows_of(windows: dict, path: str) -> list | None:
    """The windows NAB's file names for the CSV at ``path`` (matched by its last two
    path parts, ``DIR/NAME.csv``, a ``.gz`` dropped), or None."""
    parts = os.path.normpath(path).removesuffix(".gz").split(os.sep)
    return windows.get("/".join(parts[-2:]))


#: The prequential scores of a stream's status a task result keeps (by its task).
SCORE_KEYS = ("accuracy", "f1", "hamming_loss", "micro_f1", "mae", "rmse", "coverage", "alarms",
              "precision", "recall")


def run_task(task: Task) -> dict[str, Any]:
    """Replay ``task``'s logs; the per-stream summary and totals, as plain values."""
    from .replay import replay_records
    from ..pipeline import Pipeline
    from ..wire.logfile import LogError, iter_logs

    pipeline = Pipeline(task.learner, task.params, label_policy=task.label_policy,
                        max_streams=task.max_streams)
    corrupt: list[str] = []

    def report(error: LogError) -> None:
        corrupt.append(str(error))

    csvs = [f for f in task.logs if f.endswith(CSV_SUFFIXES)]
    times: dict[str, list] = {}
    if csvs:
        if len(csvs) != len(task.logs):
            raise ValueError(f"A unit is msgpack logs or CSVs, not both. Got {list(task.logs)}.")
        records = _csv_records(csvs, task.csv_label, times)
    else:
        records = iter_logs(list(task.logs), on_error=report)
    scored_by_nab = task.windows is not None and pipeline.task == "anomaly" and bool(csvs)
    result = replay_records(pipeline, records, jit=task.jit, keep_predictions=scored_by_nab)
    status = pipeline.status()
    streams = {}
    for name, s in status["streams"].items():
        streams[name] = {
            "messages": s["data"],
            "scored": s["scored"],
            **{k: s[k] for k in SCORE_KEYS if k in s},
            "query_rate": s["query_rate"],
            "labels_used": s["learned"],
            "unusable_labels": s["unusable_labels"],
            "channels": s["channels"],
            "path": result["paths"].get(name, ""),
        }
    if scored_by_nab:
        with open(task.windows, encoding="utf-8") as f:
            windows = json.load(f)
        for path in csvs:
            from .csv_source import csv_source

            name = csv_source(path, task.csv_label).stream
            labelled = _windows_of(windows, path)
            if labelled is None:
                raise ValueError(f"{task.windows} names no windows for {path} (as DIR/NAME.csv).")
            alarms = result["outputs"].get(name, {}).get("y", [])
            streams[name].update(nab_score_parts(times[name], alarms, labelled))
    counters = status["counters"]
    return {
        "key": task.key,
        "logs": list(task.logs),
        "learner": task.learner,
        "params": dict(task.params),
        "streams": streams,
        "messages": counters["messages"],
        "rejected": counters["rejected"],
        "corrupt_records": corrupt,
    }


def warm_up() -> None:
    """Compile (or load from numba's disk cache) the kernels a replay uses, by
    replaying a tiny log in memory."""
    from edgelearn import PAACDS, replay
    import numpy as np

    from .replay import replay_records
    from ..pipeline import Pipeline
    from ..wire import encode_data
    from ..wire.logfile import LogRecord

    X = np.array([[1.0, np.nan], [0.5, -1.0], [-1.0, 2.0]])
    replay(PAACDS(), X, np.array([True, False, True]))
    records = [LogRecord("sensors/w/data", float(i), encode_data(float(i), i, {"a": float(i)}, i % 2 == 0))
               for i in range(4)]
    for policy in ("from_data", "all"):
        replay_records(Pipeline("paacds", {}, label_policy=policy), records)


def run_grid(
    tasks: Sequence[Task],
    jobs: int = 1,
    scheduler: str | None = None,
    progress: Callable[[dict, int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Run ``tasks``; their results in task order. ``progress(result, done, total)``
    is called as each task finishes (in finishing order)."""
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ValueError(f"The 'jobs' parameter of run_grid must be an int >= 1. Got {jobs!r}.")
    tasks = list(tasks)
    total = len(tasks)
    warm_up()  # here first: fills numba's disk cache that local workers load from
    if scheduler is not None:
        return _run_dask(tasks, scheduler, progress)
    if jobs == 1 or total <= 1:
        results = []
        for task in tasks:
            results.append(run_task(task))
            if progress is not None:
                progress(results[-1], len(results), total)
        return results
    try:
        from joblib import Parallel, delayed
    except ImportError:  # pragma: no cover - depends on the install
        raise ImportError("--jobs needs joblib: pip install 'edgelearn[fanout]'") from None
    results: list[dict] = []
    parallel = Parallel(n_jobs=jobs, return_as="generator", backend="loky")
    for result in parallel(delayed(run_task)(task) for task in tasks):
        results.append(result)
        if progress is not None:
            progress(result, len(results), total)
    return results


def _run_dask(tasks: list[Task], scheduler: str, progress) -> list[dict[str, Any]]:
    try:
        from dask.distributed import Client, as_completed
    except ImportError:  # pragma: no cover - depends on the install
        raise ImportError("--scheduler needs dask.distributed: pip install 'edgelearn[dask]'") from None
    with Client(scheduler, timeout="30s") as client:
        client.run(warm_up)  # every worker loads (or compiles once) before any task
        futures = client.map(run_task, tasks, pure=False)
        index = {future.key: i for i, future in enumerate(futures)}
        results: list[Any] = [None] * len(tasks)
        done = 0
        for future in as_completed(futures):
            results[index[future.key]] = future.result()
            done += 1
            if progress is not None:
                progress(results[index[future.key]], done, len(tasks))
    return results
