"""Benchmarks: replay throughput against River, and memory over a long stream.

These measure; they assert nothing.  ``edgelearn bench`` prints them and
``tools/bench_replay.py`` writes them to ``docs/``.
"""

from __future__ import annotations

import gc
import os
import platform
import random
import time

import numpy as np

from .evaluate import replay
from .learners import PAACDS
from .streams import drop_features


def synthetic_stream(n: int, d: int, alpha: float = 0.5, seed: int = 0):
    """A linear concept over ``d`` channels with 5% label noise, then the
    PAACDS protocol's capricious removal (each instance loses a uniform
    fraction in [0, alpha] of its channels)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    y = X @ w > 0
    y ^= rng.random(n) < 0.05
    return drop_features(X, alpha=alpha, seed=seed), y


def _machine() -> dict:
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
    }


def replay_throughput(n: int = 1_000_000, d: int = 64, river_n: int = 200_000,
                      target_query_rate: float = 0.2, repeats: int = 3, seed: int = 0) -> dict:
    """Instances/s of PAACDS's jitted replay over ``n`` instances at ``d``
    channels (best of ``repeats``, after a warm-up that compiles), and of
    River's ``PAClassifier`` (predict_one then learn_one, every label) over
    the first ``river_n`` instances of the same stream as dicts, built
    beforehand so that only River's work is timed; and River again with the
    conversion of the array rows to dicts included (``river_from_array``:
    what replaying the same array through River costs).  River is optional:
    if it is not installed its entry is None."""
    X, y = synthetic_stream(n, d, seed=seed)
    replay(PAACDS(target_query_rate=target_query_rate), X[:2000], y[:2000])  # compile
    runs = []
    for _ in range(repeats):
        model = PAACDS(target_query_rate=target_query_rate, seed=seed)
        result = replay(model, X, y)
        runs.append(result)
    best = max(runs, key=lambda r: r.instances_per_s)
    out = {
        "n": n,
        "d": d,
        "paacds": {
            "instances_per_s": best.instances_per_s,
            "runs_instances_per_s": [r.instances_per_s for r in runs],
            "accuracy": best.accuracy,
            "f1": best.f1,
            "query_rate": best.query_rate,
        },
        "river": None,
        "machine": _machine(),
    }
    out["default"] = _default_learner_rows(X, y, target_query_rate, repeats, seed)
    try:
        from river.linear_model import PAClassifier
    except ImportError:
        return out
    names = [str(j) for j in range(d)]

    def as_dicts(rows, labels):
        # What a River user writes to replay an array with missing values.
        for row, label in zip(rows.tolist(), labels.tolist()):
            yield {names[j]: v for j, v in enumerate(row) if v == v}, label

    prebuilt = list(as_dicts(X[:river_n], y[:river_n]))
    river = PAClassifier(C=1.0, mode=1)
    correct = 0
    start = time.perf_counter()
    for x, label in prebuilt:
        correct += river.predict_one(x) == label
        river.learn_one(x, label)
    seconds = time.perf_counter() - start
    out["river"] = {"n": river_n, "instances_per_s": river_n / seconds, "accuracy": correct / river_n}
    out["ratio"] = best.instances_per_s / out["river"]["instances_per_s"]
    river = PAClassifier(C=1.0, mode=1)
    start = time.perf_counter()
    for x, label in as_dicts(X[:river_n], y[:river_n]):
        river.predict_one(x)
        river.learn_one(x, label)
    seconds = time.perf_counter() - start
    out["river_from_array"] = {"n": river_n, "instances_per_s": river_n / seconds}
    out["ratio_from_array"] = best.instances_per_s / out["river_from_array"]["instances_per_s"]
    return out


def _default_learner_rows(X, y, target_query_rate: float, repeats: int, seed: int) -> dict:
    """The default learner (:data:`~edgelearn.learners.DEFAULT_KIND`) on the same rows
    through its jitted loop over rows (``run_rows``, the ``"log_loop"`` capability:
    what ``edgelearn replay`` of a log runs), a label learned when the learner asks
    for it; best of ``repeats`` after a warm-up, timed as ``replay`` times its loop.
    None for a default learner without that loop."""
    from .learners import DEFAULT_KIND, make_learner
    from .learners.arrays import RowsPass

    def fresh():
        return make_learner(DEFAULT_KIND, {"target_query_rate": target_query_rate, "seed": seed})

    if not fresh().can("log_loop"):
        return None
    names = [str(j) for j in range(X.shape[1])]
    codes = np.asarray(y, dtype=np.int64)  # False -> label 0, True -> label 1

    def run(rows, model):
        start = time.perf_counter()
        result = model.run_rows(RowsPass(rows, names, codes[: len(rows)], [False, True],
                                         learn_if_asked=True, keep_features=False))
        return time.perf_counter() - start, result

    run(X[:2000], fresh())  # compile
    runs = [run(X, fresh()) for _ in range(repeats)]
    seconds, result = min(runs, key=lambda r: r[0])
    return {
        "kind": DEFAULT_KIND,
        "instances_per_s": len(X) / seconds,
        "runs_instances_per_s": [len(X) / s for s, _ in runs],
        "accuracy": float(np.mean((result.pred == 1) == np.asarray(y, dtype=bool))),
        "query_rate": float(result.asked.mean()),
    }


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory_over_stream(n: int = 1_000_000, distinct_names: int = 100_000, capacity: int = 256,
                       every: int = 100_000, seed: int = 0, progress=None) -> dict:
    """Drive PAACDS's dict path (``decide_one``, learning every asked label)
    over ``n`` instances, each carrying 4 steady channels and one of
    ``distinct_names`` rotating names, sampling ``memory_bytes()`` and the
    process RSS every ``every`` instances."""
    rng = random.Random(seed)
    # evict_after well below the rotation so slots are recycled, not just refused
    model = PAACDS(target_query_rate=0.2, capacity=capacity, evict_after=100, seed=seed)
    samples = []
    names = [f"sensor-{i:06d}" for i in range(distinct_names)]
    gc.collect()
    for i in range(n):
        a, b = rng.gauss(0, 1), rng.gauss(0, 1)
        x = {"a": a, "b": b, "c": rng.gauss(0, 1), "d": rng.gauss(0, 1), names[i % distinct_names]: rng.gauss(0, 1)}
        decision = model.decide_one(x)
        if decision.ask:
            model.learn(decision.slots, decision.z, a + b > 0)
        if (i + 1) % every == 0:
            gc.collect()
            samples.append({"instances": i + 1, "memory_bytes": model.memory_bytes(), "rss_bytes": _rss_bytes()})
            if progress is not None:
                progress(i + 1, n)
    return {
        "n": n,
        "distinct_names": distinct_names,
        "capacity": capacity,
        "samples": samples,
        "channels_ignored": model.channels.n_ignored,
        "channels_evicted": model.channels.n_evicted,
        "machine": _machine(),
    }
