"""Fill the Numba cache before the gateway first starts.

Numba compiles a kernel on its first call. In the gateway that first call is the
first sensor message, on the worker thread that also pings systemd's watchdog: on a
Raspberry Pi, compiling a learner's kernels takes longer than ``WatchdogSec`` and
systemd would kill the service it is starting. :func:`warm_up` runs the service's
own per-message path (:meth:`GatewayConfig.make_pipeline`, the same learner kind and
parameters, topics and limits) on a short synthetic stream, so every kernel that
path calls is compiled and written to the cache (``NUMBA_CACHE_DIR``, which the
systemd unit sets), and later processes load the machine code instead of compiling.

The stream is made to reach every branch a live stream reaches: channels that
appear, vanish and are replaced by others (PAFE's feature evolution, slot
eviction), labels inside data messages and as answers to label requests, more
labelled messages than an ensemble needs to fill and replace its members, and a
checkpoint round trip (``to_state`` / ``restore``). It then comes again as the
worker takes a burst, a queue of single readings in one ``Pipeline.handle_many``
(the stream's shared learner pass), and as batch messages, alone and queued:
those run the learners' row loops, kernels the one-by-one path never calls (a
burst after a restart used to compile them on the worker thread, for longer than
the watchdog waits on a loaded machine).

Counted from Numba's own per-kernel statistics: ``compiled`` kernels were not in
the cache (a second warm-up with the same cache must report 0), ``loaded`` came
from it. (A kernel loaded from the cache carries the kernels it calls, so a warm
run loads fewer than a cold one compiles.)
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import msgpack

import edgelearn

from ..pipeline import Pipeline
from ..wire import encode_batch, encode_data, encode_label

#: Messages of the synthetic stream: three phases (old channels, old and new,
#: new only) of 400, so PAFE sees a replacement (vanish_after=100) and an ensemble
#: of 10 members of 100 labels fills and replaces members.
MESSAGES = 1200

#: Readings of a burst (one ``handle_many`` of single readings): a fresh stream's
#: first burst holds every refit point of ActiveAROW's first labels (10 to 160),
#: the later ones come after it.
BURST = 200
#: Readings of a batch message, at most; fewer if the limits allow fewer (a reading
#: of the synthetic stream packs to at most about 110 bytes).
BATCH = 16
READING_BYTES = 128


@dataclass
class WarmupReport:
    kind: str
    compiled: int = 0
    loaded: int = 0
    kernels: list[str] = field(default_factory=list)
    cache_dirs: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        where = ", ".join(self.cache_dirs) or "(no kernel was called)"
        return (
            f"warmup {self.kind}: {self.compiled} kernels compiled, {self.loaded} loaded from "
            f"the cache, {self.seconds:.1f} s; cache {where}"
        )


def cache_counts() -> tuple[int, int]:
    """(compiled, loaded): kernel compilations that missed the cache and kernels
    loaded from it, in this process so far."""
    compiled = loaded = 0
    for dispatcher in _dispatchers().values():
        misses, hits = _counts(dispatcher)
        compiled += misses
        loaded += hits
    return compiled, loaded


def _counts(dispatcher: Any) -> tuple[int, int]:
    """(cache misses, cache hits) of one kernel so far."""
    stats = dispatcher.stats
    return sum(stats.cache_misses.values()), sum(stats.cache_hits.values())


def _dispatchers() -> dict[str, Any]:
    """Every jitted kernel of edgelearn imported so far, by qualified name."""
    from numba.core.registry import CPUDispatcher

    found = {}
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith("edgelearn.kernels."):
            continue
        for attr, value in vars(module).items():
            if isinstance(value, CPUDispatcher) and value.__module__ == name:
                found[f"{name}.{attr}"] = value
    return found


def _label(i: int, values: dict[str, float], task: str, n_classes: int) -> Any:
    """A label of ``task``'s kind, so the learner is warmed on what it will be taught
    (a regressor on numbers, not on 0/1)."""
    total = sum(values.values())
    if task == "multilabel":
        return {"warm": total > 0.0, "cold": values.get("c1", 0.0) > 0.3, "odd": i % 3 == 0}
    if task == "regression":
        return 2.0 * total + 0.5
    if task == "multiclass":
        return int(abs(total) * 3) % n_classes
    return total > 0.0  # binary; an anomaly verdict (True: a real anomaly)


def synthetic_stream(task: str, n_classes: int, messages: int, first_seq: int = 0):
    """(seq, channels, label) for a stream whose sensor set is replaced midway; seq
    counts on from ``first_seq`` (a restarted gateway's sensor did not restart)."""
    third = messages // 3
    for i in range(messages):
        phase = min(i // third, 2)
        names = [("a0", "a1", "a2", "c1"), ("a0", "a1", "a2", "c1", "b0", "b1"), ("b0", "b1", "c1")][phase]
        # Deterministic, varied values; a channel now and then missing (capricious).
        values = {
            name: math.sin(0.37 * i + 1.3 * k) + 0.1 * k
            for k, name in enumerate(names)
            if (i + k) % 7 != 0
        } or {names[0]: 0.5}
        yield first_seq + i, values, _label(i, values, task, n_classes)


def _answer_requests(pipeline: Pipeline, stream: str, outputs, labels: dict) -> None:
    """Answer each label request among ``outputs`` (lists of outbound messages) with
    the label of the reading it asks for (``labels`` by seq), as a labeller would."""
    request_topic = pipeline.topics.label_request(stream)
    label_topic = pipeline.topics.label(stream)
    for out in outputs:
        for message in out:
            if message.topic == request_topic:
                request = msgpack.unpackb(message.payload)
                pipeline.handle(label_topic, encode_label(request["req"], labels[request["seq"]]), 0.0)


def _in_message(seq: int, y: Any) -> Any:
    # Half the labels ride in the data message, the others answer label requests.
    return y if seq % 2 == 0 else None


def _drive(pipeline: Pipeline, stream: str, messages) -> None:
    data_topic = pipeline.topics.data(stream)
    for seq, values, y in messages:
        out = pipeline.handle(data_topic, encode_data(float(seq), seq, values, _in_message(seq, y)), 0.0)
        if _in_message(seq, y) is None:
            _answer_requests(pipeline, stream, [out], {seq: y})


def _drive_groups(pipeline: Pipeline, stream: str, messages) -> None:
    """The worker's grouped paths: bursts of single readings in one ``handle_many``,
    then batch messages, one at a time and queued together; labels as :func:`_drive`
    gives them."""
    data_topic = pipeline.topics.data(stream)
    readings = list(messages)
    labels = {seq: y for seq, _, y in readings}
    limits = pipeline.limits
    size = max(2, min(BATCH, limits.max_batch_readings, (limits.max_payload_bytes - 16) // READING_BYTES))
    half = len(readings) // 2
    singles, batched = readings[:half], readings[half:]
    for start in range(0, len(singles), BURST):
        _answer_requests(pipeline, stream, pipeline.handle_many([
            (data_topic, encode_data(float(seq), seq, values, _in_message(seq, y)), 0.0)
            for seq, values, y in singles[start:start + BURST]]), labels)
    batches = [encode_batch([(float(seq), seq, values, _in_message(seq, y))
                             for seq, values, y in batched[start:start + size]])
               for start in range(0, len(batched), size)]
    alone, queued = batches[:len(batches) // 2], batches[len(batches) // 2:]
    for payload in alone:
        _answer_requests(pipeline, stream, [pipeline.handle(data_topic, payload, 0.0)], labels)
    _answer_requests(pipeline, stream, pipeline.handle_many([(data_topic, payload, 0.0) for payload in queued]),
                     labels)


def warm_up(config, messages: int = MESSAGES) -> WarmupReport:
    """Compile (or load from the cache) every kernel ``config``'s gateway calls.

    ``config`` is a :class:`firmware_bridge.service.gateway.GatewayConfig`.
    """
    start = time.perf_counter()
    # Counts of earlier warm-ups in this process (another kind) are not this one's.
    before = {name: _counts(d) for name, d in _dispatchers().items()}
    pipeline = config.make_pipeline(clock=lambda: 0.0)
    prototype = edgelearn.make_learner(config.learner_kind, config.learner_params)
    n_classes = int(getattr(prototype, "n_classes", 2) or 2)
    _drive(pipeline, "warmup", synthetic_stream(prototype.task, n_classes, messages))
    pipeline.status()
    pipeline.memory()
    # A restart: the checkpointed learner predicts and learns on.
    again = config.make_pipeline(clock=lambda: 0.0)
    again.restore("warmup", pipeline.to_state("warmup"))
    _drive(again, "warmup", synthetic_stream(prototype.task, n_classes, 60, first_seq=messages))
    # The worker's grouped paths, on a fresh stream (refits pending) and after a restart.
    grouped = config.make_pipeline(clock=lambda: 0.0)
    _drive_groups(grouped, "warmup", synthetic_stream(prototype.task, n_classes, messages))
    again = config.make_pipeline(clock=lambda: 0.0)
    again.restore("warmup", grouped.to_state("warmup"))
    _drive_groups(again, "warmup", synthetic_stream(prototype.task, n_classes, 4 * BATCH, first_seq=messages))

    report = WarmupReport(kind=config.learner_kind, seconds=time.perf_counter() - start)
    dirs = set()
    for name, dispatcher in sorted(_dispatchers().items()):
        misses, hits = (now - was for now, was in zip(_counts(dispatcher), before.get(name, (0, 0))))
        if hits or misses:
            report.kernels.append(name)
            report.compiled += misses
            report.loaded += hits
            dirs.add(dispatcher.stats.cache_path)
    report.cache_dirs = sorted(dirs)
    return report
