"""One suite of checks applied to every learner (in the spirit of river.checks).

Add a learner to ``LEARNERS`` and it is held to all of them: the public
``edgelearn.check_learner`` suite (bad parameters drawn from the declared
constraints, the user's labels in and out, probabilities, key order, clone,
pickle, state) and, here, an exact byte-level state round trip, input not
mutated, channels that come and go, and a memory budget that does not move over
a long stream.
"""

import copy
import gc
import random
import tracemalloc

import numpy as np
import pytest

import edgelearn
from edgelearn import state as checkpoint
from edgelearn.checks import yield_checks

# (id, factory, label maker) -- the label maker turns a score into a label the
# learner accepts.
LEARNERS = [
    ("PA", lambda: edgelearn.PA(), lambda v: v > 0),
    ("PA-raw-II", lambda: edgelearn.PA(mode=2, standardize=False, C=0.5), lambda v: 1 if v > 0 else -1),
    ("PAACDS", lambda: edgelearn.PAACDS(target_query_rate=0.3, seed=3), lambda v: v > 0),
    ("PAACDS-I-lam", lambda: edgelearn.PAACDS(variant="PAACDS-I", lam=3.0, B=0.5, seed=4), lambda v: int(v > 0)),
    ("PAACDS-3", lambda: edgelearn.PAACDS(n_classes=3, seed=5), lambda v: "low" if v < -0.5 else ("mid" if v < 0.5 else "high")),
    ("PAACDS-intercept", lambda: edgelearn.PAACDS(learn_intercept=True, target_query_rate=0.3, seed=6), lambda v: v > 0.3),
    (
        "PAACDS-I-3-intercept",
        lambda: edgelearn.PAACDS(variant="PAACDS-I", n_classes=3, learn_intercept=True, lam=3.0, seed=7),
        lambda v: "low" if v < -0.5 else ("mid" if v < 0.5 else "high"),
    ),
    ("PAFE", lambda: edgelearn.PAFE(C=0.1), lambda v: v > 0),
    (
        "PAFE-s-intercept",
        lambda: edgelearn.PAFE(variant="PAFE-s", learn_intercept=True, vanish_after=20, max_old=4, seed=2),
        lambda v: 1 if v > 0 else -1,
    ),
    ("SynthesisNB", lambda: edgelearn.SynthesisNB(seed=1), lambda v: v > 0),
    (
        "SynthesisNB-3-forget",
        lambda: edgelearn.SynthesisNB(n_classes=3, half_life=200.0, seed=2),
        lambda v: "low" if v < -0.5 else ("mid" if v < 0.5 else "high"),
    ),
    ("OnlineEnsemble", lambda: edgelearn.OnlineEnsemble(chunk_size=20, n_members=3, reservoir_size=15), lambda v: v > 0),
    (
        "OnlineEnsemble-nb-3",
        lambda: edgelearn.OnlineEnsemble(base="nb", chunk_size=15, n_members=2, reservoir_size=10, n_classes=3, seed=2),
        lambda v: "low" if v < -0.5 else ("mid" if v < 0.5 else "high"),
    ),
    (
        "OnlineEnsemble-pa",
        lambda: edgelearn.OnlineEnsemble(base="pa", chunk_size=10, n_members=4, reservoir_size=0, alpha=0.5),
        lambda v: 1 if v > 0 else -1,
    ),
    ("ActiveAROW", lambda: edgelearn.ActiveAROW(seed=8), lambda v: v > 0),
    (
        "ActiveAROW-3-fixed",
        lambda: edgelearn.ActiveAROW(n_classes=3, target_query_rate=None, threshold=2.0, query_power=1.0,
                                     learn_intercept=False, seed=9),
        lambda v: "low" if v < -0.5 else ("mid" if v < 0.5 else "high"),
    ),
    # Multi-label learners take and predict label sets (dicts of name to bool).
    (
        "MultiLabelKELM",
        lambda: edgelearn.MultiLabelKELM(window=32, block_size=8, max_labels=3, J0=1.0, refactor_every=20),
        lambda v: {"pos": v > 0, "big": v > 0.5},
    ),
    (
        "MultiLabelKELM-budget",
        lambda: edgelearn.MultiLabelKELM(window=24, block_size=4, target_query_rate=0.3, gamma=0.2, gam=0.0),
        lambda v: {"pos": v > 0} if abs(v) > 0.2 else {"pos": v > 0, "near": True},
    ),
    # The regression task's learner takes numbers (references); the anomaly task's
    # takes an operator's verdicts (True: a real anomaly).
    ("AROWRegressor", lambda: edgelearn.AROWRegressor(seed=3), lambda v: 20.0 + 3.0 * v),
    ("AROWRegressor-bins-every", lambda: edgelearn.AROWRegressor(n_bins=4, target_query_rate=1.0, capacity=16),
     lambda v: -5.0 * v),
    ("SurpriseDetector", lambda: edgelearn.SurpriseDetector(), lambda v: v > 1.5),
    (
        "SurpriseDetector-adaptive",
        lambda: edgelearn.SurpriseDetector(evidence=("level", "shift", "context", "stuck"), season=0,
                                           target_alarm_rate=0.02, warmup=5, capacity=16),
        lambda v: int(v > 1.0),
    ),
]
IDS = [name for name, _, _ in LEARNERS]


def test_every_registered_kind_is_held_to_the_checks():
    # The kinds come from the registry: a new one without an entry above fails here.
    from edgelearn.learners.registry import BUILTIN

    checked = {type(factory()) for _, factory, _ in LEARNERS}
    missing = [kind for kind in BUILTIN if edgelearn.KINDS[kind] not in checked]
    assert not missing, f"add these kinds to LEARNERS: {missing}"


def stream(n, seed, make_label, n_channels=6, p_missing=0.3):
    rng = random.Random(seed)
    weights = [rng.gauss(0, 1) for _ in range(n_channels)]
    for _ in range(n):
        values = [rng.gauss(0, 1) for _ in range(n_channels)]
        x = {f"ch{j}": 10 * j + v for j, v in enumerate(values) if rng.random() > p_missing}
        yield x, make_label(sum(w * v for w, v in zip(weights, values)))


def drive(model, data):
    """Prequential active loop; returns what the learner decided."""
    out = []
    for x, y in data:
        d = model.decide_one(x)
        if d.ask:
            model.learn(d.slots, d.z, y)
        out.append((d.label, d.score, d.ask))
    return out


@pytest.mark.parametrize("name,factory,make_label", LEARNERS, ids=IDS)
def test_state_round_trip_is_exact(name, factory, make_label):
    data = list(stream(1500, 1, make_label))
    model = factory()
    drive(model, data[:1000])
    state = model.to_state()
    restored = edgelearn.from_state(checkpoint.loads(checkpoint.dumps(state)))

    again = restored.to_state()
    for key, value in state["learned"].items():
        if isinstance(value, np.ndarray):
            assert value.dtype == again["learned"][key].dtype
            assert value.tobytes() == again["learned"][key].tobytes(), key
        else:
            assert value == again["learned"][key], key
    for key in ("count", "mean", "var", "last_seen"):
        assert state["channels"][key].tobytes() == again["channels"][key].tobytes()
    assert restored.get_params() == model.get_params()
    # Identical next decisions, query draws included.
    assert drive(restored, data[1000:]) == drive(model, data[1000:])


CHECKS = [(name, factory, check) for name, factory, _ in LEARNERS for check in yield_checks(factory())]


@pytest.mark.parametrize("name,factory,check", CHECKS,
                         ids=[f"{name}-{check.__name__}" for name, _, check in CHECKS])
def test_check_learner(name, factory, check):
    """edgelearn.check_learner's suite (bad parameters drawn from each
    learner's declared constraints, labels in the user's own form, probabilities,
    key order, clone/deepcopy/pickle, state round trip, fixed budget)."""
    check(factory())


class Forgetful(edgelearn.PA):
    """A PA that answers True/False whatever labels it learned."""

    def _label_of(self, code):
        return bool(code)


class Unchecked(edgelearn.PA):
    """A PA that declares its constraints but does not check them."""

    def _set_params(self, given):
        for name in self._param_names():
            setattr(self, name, given[name])


def test_check_learner_catches_a_learner_that_breaks_the_contract():
    with pytest.raises(AssertionError, match="check_labels_round_trip"):
        edgelearn.check_learner(Forgetful())
    with pytest.raises(AssertionError, match="check_every_parameter_is_constrained"):
        edgelearn.check_learner(Unchecked())


def test_check_learner_is_public_and_runs_the_whole_suite():
    edgelearn.check_learner(edgelearn.PA())
    with pytest.raises(TypeError, match="takes an edgelearn Learner"):
        edgelearn.check_learner(object())


@pytest.mark.parametrize("name,factory,make_label", LEARNERS, ids=IDS)
def test_input_is_not_mutated(name, factory, make_label):
    model = factory()
    for x, y in stream(300, 3, make_label):
        x["broken"] = float("nan")
        before = copy.deepcopy(x)
        model.predict_one(x)
        d = model.decide_one(x)
        model.learn(d.slots, d.z, y)
        model.learn_one(x, y)
        assert x.keys() == before.keys()
        assert all(x[k] == before[k] or (x[k] != x[k] and before[k] != before[k]) for k in x)


@pytest.mark.parametrize("name,factory,make_label", LEARNERS, ids=IDS)
def test_channels_that_appear_and_vanish(name, factory, make_label):
    model = factory()
    rng = random.Random(4)
    # Period 1 on {a, b}; then a vanishes and c appears; then only c; then nothing.
    phases = [("a", "b"), ("b", "c"), ("c",), ()]
    learned = set()
    for phase in phases:
        for _ in range(300):
            values = {"a": rng.gauss(0, 1), "b": rng.gauss(0, 1), "c": rng.gauss(0, 1)}
            x = {k: values[k] for k in phase}
            y = make_label(values["a"] + values["b"] + values["c"])
            d = model.decide_one(x)
            if isinstance(d.label, dict):  # a label set: the names learned so far, bools
                assert set(d.label) == learned and all(type(v) is bool for v in d.label.values())
                learned |= set(y)
            elif model.task == "regression":  # a number from the start
                assert type(d.label) is float and np.isfinite(d.label)
            else:
                # binary learners predict True/False whatever the labels' form
                assert d.label is None or d.label in {True, False} | {make_label(v) for v in (-1.0, 0.0, 1.0)}
            model.learn(d.slots, d.z, y)
    assert set(model.channels.names) == {"a", "b", "c"}
    # An empty instance is predicted, not an error; unknown names in a
    # read-only prediction are fine too.
    model.predict_one({})
    model.predict_one({"never-seen": 1.0})
    assert "never-seen" not in model.channels.names


@pytest.mark.parametrize("name,factory,make_label", LEARNERS, ids=IDS)
def test_memory_is_flat_over_a_long_stream_of_new_names(name, factory, make_label):
    """100k instances carrying 10k distinct channel names: the budget stays
    put, and so do the Python-level allocations once the tables are full."""
    model = factory()
    budget = model.memory_bytes()
    rng = random.Random(5)

    def instance(i):
        x = {"base": rng.gauss(0, 1), f"sensor-{i % 10_000}": rng.gauss(0, 1)}
        return x, make_label(x["base"])

    for i in range(20_000):  # fill the channel space and its name table
        x, y = instance(i)
        d = model.decide_one(x)
        model.learn(d.slots, d.z, y)
    assert model.memory_bytes() <= budget
    budget = model.memory_bytes()  # ActiveAROW's, less its refit buffer (freed after 160 readings)
    gc.collect()
    tracemalloc.start()
    start, _ = tracemalloc.get_traced_memory()
    for i in range(20_000, 100_000):
        x, y = instance(i)
        d = model.decide_one(x)
        model.learn(d.slots, d.z, y)
        assert model.memory_bytes() == budget if i % 10_000 == 0 else True
    gc.collect()
    end, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert model.memory_bytes() == budget
    assert model.channels.n_assigned == model.channels.capacity
    # every new name was either given a recycled slot or counted as ignored
    assert model.channels.n_evicted + model.channels.n_ignored + model.channels.capacity >= 10_001
    assert end - start < 64 * 1024, f"Python allocations grew by {end - start} bytes"


@pytest.mark.parametrize("y, error, text", [([1], TypeError, "labels must be hashable"),
                                            (float("nan"), ValueError, "labels must not be NaN")])
def test_multiclass_labels_that_cannot_be_classes_are_named(y, error, text):
    for model in (edgelearn.SynthesisNB(n_classes=3), edgelearn.OnlineEnsemble(n_classes=3),
                  edgelearn.PAACDS(n_classes=3)):
        model.learn_one({"a": 1.0}, "ok")
        with pytest.raises(error, match=text):
            model.learn_one({"a": 2.0}, y)
        assert model.classes == ["ok"]
