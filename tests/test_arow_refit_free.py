"""ActiveAROW frees its refit buffer (``refit_values``, ``refit_targets`` and their scratch)
once its refits are over: on every path at the same reading, predicting as the learner that
kept it did (digests pinned from the code before the release, and a learner whose release
is skipped), with its memory, its state (an old state with the dead buffer loads freed) and
its merges."""

import hashlib

import numpy as np
import pytest

import edgelearn
from edgelearn import ActiveAROW
from edgelearn import state as checkpoint
from edgelearn.kernels import log_replay
from edgelearn.learners.arrays import RowsPass
from test_arow_refit import _early_rows, _stream

#: The default refit (until reading 160; 26 labels kept at a 10% budget) on a small learner.
PARAMS = dict(capacity=8, seed=4, target_query_rate=0.1)
#: Label and ask of each of ``_stream(500, 11, n_classes)``'s readings through ``decide_one``
#: and ``learn`` of the labels asked, computed by the code before the release (91aaa69).
PINNED = {2: "7ad9cc1b6e04b746", 3: "fb3185a0ae0a7b10"}
BUFFERS = ("refit_values", "refit_targets", "_refit_slots", "_refit_z")


def _freed(model) -> bool:
    return all(getattr(model, name).size == 0 for name in BUFFERS)


def _keeping(monkeypatch):
    """ActiveAROW as it was before the release: the refits end, the buffer stays."""
    def refits_over(self):
        self._refitting = False
    monkeypatch.setattr(ActiveAROW, "_refits_over", refits_over)


def _decide_learn(model, stream, path: str):
    """Each reading's (label, ask, margin bits) and the first reading after which the
    buffer is freed, through one per-message path."""
    out, freed_at = [], None
    for i, (x, y) in enumerate(stream):
        if path == "decide_and_learn":
            d, _ = model.decide_and_learn(x, y, only_if_asked=True)
        else:
            d = model.decide_one(x)
            if d.ask:
                model.learn(d.slots, d.z, y)
        out.append((d.label, d.ask, d.score.hex()))
        if freed_at is None and _freed(model):
            freed_at = i
    return out, freed_at


def _digest(out) -> str:
    return hashlib.sha256(" ".join(f"{label}{ask:d}" for label, ask, _ in out).encode()).hexdigest()[:16]


def _same_learned(a, b, skip=("refit_values", "refit_targets")):
    sa, sb = a.to_state(), b.to_state()
    for name, value in sa["learned"].items():
        if name not in skip:
            assert np.asarray(value).tobytes() == np.asarray(sb["learned"][name]).tobytes(), name


@pytest.mark.parametrize("n_classes", [2, 3])
def test_every_per_message_path_frees_at_the_last_refit_and_predicts_as_before(n_classes, monkeypatch):
    stream = _stream(500, 11, n_classes)
    paths = ["decide_one"] + (["decide_and_learn"] if n_classes == 2 else [])
    runs = {path: _decide_learn(ActiveAROW(n_classes=n_classes, **PARAMS), stream, path) for path in paths}
    with monkeypatch.context() as patch:
        _keeping(patch)
        kept = ActiveAROW(n_classes=n_classes, **PARAMS)
        before, never = _decide_learn(kept, stream, "decide_one")
    assert never is None and kept.refit_values.shape == (26, 8) and kept.refit_count[0] == -1
    assert _digest(before) == PINNED[n_classes]
    for path, (out, freed_at) in runs.items():
        assert freed_at == 160, path  # the reading whose refit is the last one
        assert out == before, path  # labels, asks and margins, bit for bit
    model = ActiveAROW(n_classes=n_classes, **PARAMS)
    _decide_learn(model, stream, "decide_one")
    _same_learned(model, kept)
    assert model.refit_values.shape == (0, 8) and model.refit_values.dtype == np.float64
    assert model._refit_slots.dtype == np.int32 and model.refit_count.tolist() == [-1]


def test_learn_one_frees_at_a_label_beyond_the_buffer_as_decide_one_and_learn():
    """``learn_one`` of every label fills the 26 rows by reading 26: the 27th label ends the
    refits and frees the buffer, on both paths at that reading."""
    stream = _stream(300, 12)
    one, split = ActiveAROW(**PARAMS), ActiveAROW(**PARAMS)
    freed = {}
    for i, (x, y) in enumerate(stream):
        one.learn_one(x, y)
        d = split.decide_one(x)
        split.learn(d.slots, d.z, y)
        for name, model in (("one", one), ("split", split)):
            if _freed(model):
                freed.setdefault(name, i)
    assert freed == {"one": 26, "split": 26}
    _same_learned(one, split, skip=("rng_state", "threshold"))


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("refit_labels", [32, 6])
def test_run_rows_frees_after_the_pass_that_ends_the_refits(n_classes, refit_labels, monkeypatch):
    """The jitted row loops (replay's log loop, the gateway's batch pass): freed when the
    pass that ended the refits returns, so one row a pass frees at the per-message path's
    reading; a pass with a freed buffer runs the same compiled loop (no new signature)
    and gives the margins of a learner that kept it."""
    params = dict(capacity=6, evict_after=10, n_classes=n_classes, target_query_rate=0.2, seed=5,
                  refit_until=160, refit_labels=refit_labels)
    X, names, codes, labels = _early_rows(300, seed=n_classes, n_labels=2 if n_classes == 2 else 5)
    rows = lambda a, b: RowsPass(X[a:b], names, codes[a:b], labels, True, False)  # noqa: E731
    by_row, reference = ActiveAROW(**params), ActiveAROW(**params)
    freed = {}
    for i in range(X.shape[0]):
        by_row.run_rows(rows(i, i + 1))
        x = {name: float(v) for name, v in zip(names, X[i]) if np.isfinite(v)}
        d = reference.decide_one(x)
        c = int(codes[i])
        if c >= 0 and reference.targets.accepts(labels[c]) and d.ask:
            reference.learn(d.slots, d.z, labels[c])
        for name, model in (("rows", by_row), ("messages", reference)):
            if _freed(model):
                freed.setdefault(name, i)
    assert freed["rows"] == freed["messages"] == (160 if refit_labels == 32 else freed["rows"])
    assert refit_labels == 32 or freed["rows"] < 160  # 6 labels: a 7th ends the refits early
    _same_learned(by_row, reference, skip=())
    kernel = log_replay.arow_binary_log_loop if n_classes == 2 else log_replay.arow_multiclass_log_loop
    with monkeypatch.context() as patch:
        _keeping(patch)
        kept = ActiveAROW(**params)
        before = kept.run_rows(rows(0, 200))
        after_kept = kept.run_rows(rows(200, 300))
    freed_model = ActiveAROW(**params)
    assert freed_model.run_rows(rows(0, 200)).margins.tobytes() == before.margins.tobytes()
    assert _freed(freed_model) and not _freed(kept)
    signatures = len(kernel.signatures)
    after = freed_model.run_rows(rows(200, 300))
    assert len(kernel.signatures) == signatures  # empty arrays of the same types
    assert after.margins.tobytes() == after_kept.margins.tobytes()
    assert after.asked.tolist() == after_kept.asked.tolist()


@pytest.mark.parametrize("n_classes", [2, 3])
def test_memory_falls_by_the_buffer(n_classes):
    model = ActiveAROW(n_classes=n_classes, **PARAMS)
    plain = ActiveAROW(n_classes=n_classes, refit_until=0, **PARAMS)
    full = model.memory_bytes()
    assert full - plain.memory_bytes() == 8 * 26 * (8 + 1) + 8 + 12 * 8  # the documented bound
    _decide_learn(model, _stream(200, 11, n_classes), "decide_one")
    assert full - model.memory_bytes() == 8 * 26 * (8 + 1) + 12 * 8  # all but the count
    assert model.memory_bytes() == plain.memory_bytes() + 8
    # the defaults (256 slots, 52 labels at 20%): 109,984 bytes freed of the 109,992
    default = ActiveAROW()
    full = default.memory_bytes()
    for x, y in _stream(200, 11):
        default.learn_one(x, y)
    assert full - default.memory_bytes() == 8 * 52 * 257 + 12 * 256 == 109_984


@pytest.mark.parametrize("n_classes", [2, 3])
def test_a_freed_learner_saves_and_loads_and_an_old_full_buffer_state_loads_freed(n_classes, monkeypatch):
    stream = _stream(500, 11, n_classes)
    model = ActiveAROW(n_classes=n_classes, **PARAMS)
    _decide_learn(model, stream[:200], "decide_one")
    state = model.to_state()
    assert state["learned"]["refit_values"].shape == (0, 8) and state["learned"]["refit_count"].tolist() == [-1]
    restored = edgelearn.from_state(checkpoint.loads(checkpoint.dumps(state)))
    assert _freed(restored) and not restored._refitting
    assert restored.memory_bytes() == model.memory_bytes()
    with monkeypatch.context() as patch:  # a checkpoint saved before the release: the dead buffer
        _keeping(patch)
        kept = ActiveAROW(n_classes=n_classes, **PARAMS)
        _decide_learn(kept, stream[:200], "decide_one")
        old = kept.to_state()
    assert old["learned"]["refit_values"].shape == (26, 8) and old["learned"]["refit_count"].tolist() == [-1]
    loaded = edgelearn.from_state(checkpoint.loads(checkpoint.dumps(old)))
    assert _freed(loaded) and loaded.memory_bytes() == model.memory_bytes()
    outs = [_decide_learn(m, stream[200:], "decide_one")[0] for m in (model, restored, loaded)]
    assert outs[0] == outs[1] == outs[2]
    # a state saved mid-refits loads its buffer and frees it at the last refit
    early = ActiveAROW(n_classes=n_classes, **PARAMS)
    _decide_learn(early, stream[:100], "decide_one")
    mid = edgelearn.from_state(checkpoint.loads(checkpoint.dumps(early.to_state())))
    assert mid.refit_values.shape == (26, 8) and mid._refitting
    a, freed_at = _decide_learn(mid, stream[100:], "decide_one")
    assert freed_at == 60 and a == _decide_learn(early, stream[100:], "decide_one")[0]


def test_a_freed_learner_merges_and_a_group_start_holds_no_buffer():
    from edgelearn import contributions

    model = ActiveAROW(**PARAMS)
    _decide_learn(model, _stream(300, 13), "decide_one")
    assert _freed(model) and model.can("merge")
    contribution = model.contribution()
    contributions.check(contribution)
    group = ActiveAROW.merge([contribution])
    student = ActiveAROW.from_group(group, seed=3, capacity=8, target_query_rate=0.1)
    assert _freed(student) and student.memory_bytes() < ActiveAROW(**PARAMS).memory_bytes()
    _decide_learn(student, _stream(50, 14), "decide_one")
    contributions.check(student.contribution())


def test_the_gateway_batch_pass_and_the_replay_log_loop_free_as_reading_by_reading():
    from test_bulk_replay import _assert_same, _log_records, _pipeline
    from test_jitted_batches import _assert_same_state, _run

    from firmware_bridge.offline.replay import replay_records

    jitted, plain = _run("from_data", 2, kind="active_arow")  # the default refit, sized
    _assert_same_state(jitted, plain)
    records = _log_records(2, n=2000)
    live, bulk = _pipeline("from_data", "active_arow"), _pipeline("from_data", "active_arow")
    replay_records(live, records, jit=False)
    assert set(replay_records(bulk, records, chunk=45)["paths"].values()) == {"jitted"}
    _assert_same(live, bulk)
    for pipeline in (jitted, plain, live, bulk):
        for name in pipeline.streams:
            learner = pipeline.learner(name)
            assert learner.refit_count[0] == -1 and _freed(learner), name
            assert pipeline.status()["streams"][name]["memory_bytes"] == learner.memory_bytes()
