"""What the results tools share to run a protocol's independent runs: in this
process or on a pool of processes, each result as it finishes, and a JSON cache
of finished runs so that an interrupted page resumes where it stopped.

    cache = load_cache(path)
    for task, result in finished(run_one, todo, jobs):
        cache[key(task)] = result
        save_cache(path, cache)
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np


def finished(run: Callable[..., Any], tasks: Iterable[tuple], jobs: int,
             *extra: Any) -> Iterator[tuple[tuple, Any]]:
    """``(task, run(*task, *extra))`` for each task as it finishes: in order in
    this process with one job, else on ``jobs`` worker processes (``run`` must
    then be a module-level function, pickled by name)."""
    tasks = list(tasks)
    if jobs == 1:
        for task in tasks:
            yield task, run(*task, *extra)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run, *task, *extra): task for task in tasks}
        for future in as_completed(futures):
            yield futures[future], future.result()


def load_cache(path: Path | None) -> dict:
    """The finished runs kept in ``path`` (none without a path or a file)."""
    return json.loads(path.read_text()) if path is not None and path.exists() else {}


def save_cache(path: Path | None, cache: dict) -> None:
    """Write ``cache`` to ``path`` whole or not at all (a temporary file moved
    over it), so a run stopped mid-write leaves the previous cache readable."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(cache))
    os.replace(tmp, path)


def test_then_train(model: Any, rows: list[dict], labels: list) -> np.ndarray:
    """Prequential run of one model over a stream: whether each prediction,
    made before the model learns that reading's label, was right. An
    edgelearn ``OnlineEnsemble`` learns from its own decision (its slots and
    values) so it does not rebuild them; River-style models use
    ``predict_one`` then ``learn_one``."""
    correct = np.zeros(len(labels), dtype=bool)
    if hasattr(model, "decide_one"):
        for i, (x, label) in enumerate(zip(rows, labels)):
            decision = model.decide_one(x)
            correct[i] = decision.label == label
            model.learn(decision.slots, decision.z, label)
    else:
        for i, (x, label) in enumerate(zip(rows, labels)):
            correct[i] = model.predict_one(x) == label
            model.learn_one(x, label)
    return correct


def pack_bits(flags: np.ndarray) -> str:
    """A boolean array as hex text, eight flags a byte, for a JSON cache."""
    return np.packbits(flags).tobytes().hex()


def unpack_bits(text: str, n: int) -> np.ndarray:
    """The first ``n`` flags that ``pack_bits`` wrote."""
    return np.unpackbits(np.frombuffer(bytes.fromhex(text), dtype=np.uint8))[:n].astype(bool)
