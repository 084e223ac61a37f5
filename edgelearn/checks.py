"""The checks every learner passes, chosen by its capabilities (in the spirit of
``river.checks``). A new learner's author runs::

    >>> import edgelearn
    >>> edgelearn.check_learner(edgelearn.PA())

It raises ``AssertionError`` naming the check that failed. :func:`yield_checks`
lists the checks for one learner (each takes a fresh learner). River's own
``check_estimator`` is separate (``tests/test_river.py``); these checks need no
River.
"""

from __future__ import annotations

import copy
import inspect
import math
import pickle
import random
from typing import Callable, Iterator


from .constraints import format_value
from .learners.base import Learner

__all__ = ["check_learner", "yield_checks"]


#: The tasks whose answers are labels a learner registers and gives back.
_LABELLED_TASKS = ("binary", "multiclass", "multilabel")


def _labels_for(learner: Learner, kind: str) -> Callable[[float], object]:
    """A function from a score to an answer of the learner's task: a label, a
    reference value (regression) or an operator's verdict (anomaly)."""
    task = learner.task
    if task == "regression":
        return lambda v: 20.0 + 3.0 * v
    if task == "anomaly":  # a verdict in one of the two forms the wire allows
        return (lambda v: int(v > 1.5)) if kind == "0/1" else (lambda v: v > 1.5)
    if task == "multilabel":
        return lambda v: {"pos": v > 0, "big": v > 0.5}
    if task == "multiclass":
        return lambda v: "low" if v < -0.5 else ("mid" if v < 0.5 else "high")
    return {
        "bool": lambda v: v > 0,
        "yes/no": lambda v: "yes" if v > 0 else "no",
        "±1": lambda v: 1 if v > 0 else -1,
        "0/1": lambda v: int(v > 0),
    }[kind]


def _stream(n: int, seed: int, make_label, n_channels: int = 6, p_missing: float = 0.3):
    rng = random.Random(seed)
    weights = [rng.gauss(0, 1) for _ in range(n_channels)]
    for _ in range(n):
        values = [rng.gauss(0, 1) for _ in range(n_channels)]
        x = {f"ch{j}": 10 * j + v for j, v in enumerate(values) if rng.random() > p_missing}
        yield x, make_label(sum(w * v for w, v in zip(weights, values)))


def _drive(model: Learner, data) -> list:
    """Prequential active loop; what the learner decided, instance by instance."""
    out = []
    for x, y in data:
        d = model.decide_one(x)
        if d.ask:
            model.learn(d.slots, d.z, y)
        out.append((_hashable(d.label), d.score, d.ask))
    return out


def _hashable(label):
    return tuple(sorted(label.items())) if isinstance(label, dict) else label


# -- checks ------------------------------------------------------------------------


#: The public method(s) each capability promises (edgelearn.learners.base.CAPABILITIES).
_CAPABILITY_METHODS = {
    "decide_learn": ("decide_and_learn", "decide_learn_claimed"),
    "array_loop": ("replay_arrays",),
    "log_loop": ("run_rows",),
    "batch_pass": ("run_rows",),
    "label_rate": (),
    "merge": ("contribution", "merge", "from_group", "load_group"),
}


def check_declares_capabilities(learner: Learner) -> None:
    """The task and capabilities are declared as class data (frozensets of known
    names), the instance's task is one of the class's, and each capability the
    instance has comes with the public method it names."""
    cls = type(learner)
    assert isinstance(cls.tasks, frozenset) and cls.tasks, f"{cls.__name__}.tasks must name its tasks"
    assert isinstance(cls.capabilities, frozenset), f"{cls.__name__}.capabilities must be a frozenset"
    assert isinstance(cls.asks_selectively, bool), f"{cls.__name__}.asks_selectively must be a bool"
    assert learner.task in cls.tasks, \
        f"{cls.__name__} is {learner.task} but declares the tasks {sorted(cls.tasks)}"
    for capability, methods in _CAPABILITY_METHODS.items():
        if learner.can(capability):
            for method in methods:
                assert callable(getattr(learner, method, None)), \
                    f"{cls.__name__} can {capability!r} but has no method {method}()"


def check_every_parameter_is_constrained(learner: Learner) -> None:
    """Every constructor parameter has a constraint, and every invalid value the
    constraint names is refused by name, in the one message format."""
    cls = type(learner)
    params = learner.get_params()
    missing = set(params) - set(cls._parameter_constraints)
    assert not missing, f"{cls.__name__} declares no constraint for {sorted(missing)}"
    for name, constraint in cls._parameter_constraints.items():
        for bad in constraint.invalid_values():
            try:
                cls(**{**params, name: bad})
            except (TypeError, ValueError) as error:
                message = str(error)
                assert message.startswith(f"The '{name}' parameter of {cls.__name__} must be "), message
                assert message.endswith(f"Got {format_value(bad)}."), message
            else:
                raise AssertionError(f"{cls.__name__}({name}={bad!r}) was accepted; "
                                     f"it must be {constraint.describe()}")


def check_defaults_are_immutable(learner: Learner) -> None:
    for p in inspect.signature(type(learner)).parameters.values():
        assert p.default is inspect.Parameter.empty or isinstance(
            p.default, (type(None), bool, int, float, str, tuple)), f"mutable default for {p.name}"


def check_clone(learner: Learner) -> None:
    """``clone()`` is untrained with the same parameters and budget (once it has seen
    the same readings: ActiveAROW's falls when its refits end);
    ``clone(include_attributes=True)``, deepcopy and pickle continue exactly."""
    make_label = _labels_for(learner, "bool")
    data = list(_stream(400, 2, make_label))
    _drive(learner, data[:200])
    fresh = learner.clone()
    assert fresh.get_params() == learner.get_params() and repr(fresh) == repr(learner)
    assert fresh.channels.n_assigned == 0
    if learner.task in _LABELLED_TASKS:  # a regressor's and a detector's answers are not labels
        assert fresh.classes == []
    _drive(fresh, data[:200])
    assert fresh.memory_bytes() == learner.memory_bytes()
    copies = [learner.clone(include_attributes=True), copy.deepcopy(learner),
              pickle.loads(pickle.dumps(learner))]
    expected = _drive(learner, data[200:])
    for other in copies:
        assert _drive(other, data[200:]) == expected


def check_state_round_trip(learner: Learner) -> None:
    """``to_state``/``from_state`` through the checkpoint codec is exact."""
    from . import state as checkpoint

    make_label = _labels_for(learner, "yes/no")
    data = list(_stream(600, 1, make_label))
    _drive(learner, data[:400])
    restored = type(learner).from_state(checkpoint.loads(checkpoint.dumps(learner.to_state())))
    assert restored.get_params() == learner.get_params()
    assert restored.classes == learner.classes
    assert _drive(restored, data[400:]) == _drive(learner, data[400:])


def check_input_not_mutated(learner: Learner) -> None:
    make_label = _labels_for(learner, "bool")
    for x, y in _stream(100, 3, make_label):
        x["broken"] = float("nan")
        before = copy.deepcopy(x)
        learner.predict_one(x)
        if learner.task != "regression":  # a regressor has no probabilities
            learner.predict_proba_one(x)
        d = learner.decide_one(x)
        learner.learn(d.slots, d.z, y)
        learner.learn_one(x, y)
        assert x.keys() == before.keys()
        assert all(x[k] == before[k] or (x[k] != x[k] and before[k] != before[k]) for k in x)


def check_before_any_label(learner: Learner) -> None:
    """The one rule (learners/base.py): a learner that knows no label predicts
    False / None / {} with River's neutral probabilities; a detector that has seen
    nothing raises no alarm ({False: 1.0, True: 0.0}); a regressor predicts its
    prior, 0.0, and has no probabilities."""
    x = {"a": 1.0, "b": -2.0}
    if learner.task == "regression":
        assert learner.predict_one(x) == 0.0 and learner.decide_one(x).label == 0.0
        try:
            learner.predict_proba_one(x)
        except TypeError:
            return
        raise AssertionError(f"{type(learner).__name__} is a regressor but gave probabilities")
    expected = {"binary": (False, {False: 0.5, True: 0.5}), "anomaly": (False, {False: 1.0, True: 0.0}),
                "multiclass": (None, {}), "multilabel": ({}, {})}[learner.task]
    assert learner.predict_one(x) == expected[0] and learner.predict_proba_one(x) == expected[1]
    assert learner.decide_one(x).label == expected[0]


def check_labels_round_trip(learner: Learner) -> None:
    """Labels come back in the user's own form: any two labels for a binary
    learner ("yes"/"no", bool, ±1, 0/1), any hashable for multiclass, label sets
    for multi-label."""
    kinds = ["yes/no", "bool", "±1", "0/1"] if learner.task == "binary" else ["bool"]
    for kind in kinds:
        model = learner.clone()
        make_label = _labels_for(model, kind)
        data = list(_stream(300, 5, make_label))
        seen: set = set()
        for x, y in data:
            d = model.decide_one(x)
            if model.classes and model.task != "multilabel":
                assert d.label in model.classes, f"{kind}: predicted {d.label!r}, knows {model.classes!r}"
            model.learn(d.slots, d.z, y)
            seen |= set(y) if isinstance(y, dict) else {y}
        if model.task == "multilabel":
            assert set(model.classes) == seen
        else:
            assert set(model.classes) == seen, (kind, model.classes, seen)
            assert {model.predict_one(x) for x, _ in data} <= seen


def check_predict_proba_one(learner: Learner) -> None:
    """Probabilities sum to 1 (per label for multi-label), cover the learned
    labels, and the prediction is the most probable label."""
    make_label = _labels_for(learner, "yes/no")
    for x, y in _stream(300, 6, make_label):
        learner.learn_one(x, y)
        proba = learner.predict_proba_one(x)
        label = learner.predict_one(x)
        if learner.task == "multilabel":
            assert set(proba) == set(learner.classes)
            for name, p in proba.items():
                assert set(p) == {False, True} and math.isclose(sum(p.values()), 1.0)
                if abs(p[True] - 0.5) > 1e-9:
                    assert label[name] == (p[True] > 0.5)
            continue
        assert set(proba) == set(learner.classes), (proba, learner.classes)
        assert all(0.0 <= p <= 1.0 for p in proba.values())
        assert math.isclose(sum(proba.values()), 1.0)
        top = max(proba.values())
        if sum(math.isclose(p, top, rel_tol=0, abs_tol=1e-12) for p in proba.values()) == 1:
            assert proba[label] == top, (label, proba)


def check_regression_outputs(learner: Learner) -> None:
    """A regressor's decision is a finite number with its interval: ``label`` a
    float, ``score`` (its predictive sd) >= 0, ``extra`` ``{"lower", "upper"}``
    around the prediction; ``predict_one`` is a float; a reference that is not a
    finite number is refused by a ValueError."""
    make_value = _labels_for(learner, "bool")
    for x, y in _stream(300, 9, make_value):
        d = learner.decide_one(x)
        assert type(d.label) is float and math.isfinite(d.label), d.label
        assert d.score >= 0.0, d.score
        assert d.extra is not None and set(d.extra) >= {"lower", "upper"}, d.extra
        assert d.extra["lower"] <= d.label <= d.extra["upper"], (d.extra, d.label)
        assert isinstance(learner.predict_one(x), float)
        learner.learn(d.slots, d.z, y)
    for bad in (True, "21.5", float("nan"), float("inf"), None):
        try:
            learner.learn(d.slots, d.z, bad)
        except ValueError:
            continue
        raise AssertionError(f"{type(learner).__name__} learned the reference {bad!r}")


def check_anomaly_outputs(learner: Learner) -> None:
    """A detector's decision is an alarm (a bool) with a score in [0, 1] and the
    names of the reading's channels behind it (``extra["top"]``); ``score_one`` and
    ``predict_proba_one`` agree with the score, learning nothing; a verdict that is
    not True/1 or False/0 is refused by a ValueError."""
    rng = random.Random(10)
    for i in range(400):
        x = {"a": rng.gauss(0, 1), "b": 5.0 + rng.gauss(0, 1)}
        if i % 97 == 96:
            x["b"] = 60.0  # a spike
        if i % 3 == 0:
            del x["a"]
        score = learner.score_one(x)
        proba = learner.predict_proba_one(x)
        assert 0.0 <= score <= 1.0 and set(proba) == {False, True}, (score, proba)
        assert math.isclose(proba[True], score) and math.isclose(sum(proba.values()), 1.0)
        d = learner.decide_one(x)
        assert type(d.label) is bool and 0.0 <= d.score <= 1.0, d
        assert math.isclose(d.score, score, rel_tol=1e-9, abs_tol=1e-12), (d.score, score)
        assert d.extra is not None and isinstance(d.extra.get("top"), tuple), d.extra
        assert set(d.extra["top"]) <= set(x), (d.extra["top"], x)
        learner.learn(d.slots, d.z, x["b"] > 50.0)
    for bad in ("yes", 2, -1, None):
        try:
            learner.learn(d.slots, d.z, bad)
        except ValueError:
            continue
        raise AssertionError(f"{type(learner).__name__} learned the verdict {bad!r}")


def check_key_order_has_no_effect(learner: Learner) -> None:
    """Shuffling the keys of every instance changes no decision."""
    other = learner.clone()
    rng = random.Random(7)
    make_label = _labels_for(learner, "bool")
    for x, y in _stream(500, 8, make_label):
        keys = list(x)
        rng.shuffle(keys)
        d1 = learner.decide_one(x)
        d2 = other.decide_one({k: x[k] for k in keys})
        if learner.task == "regression":  # a sum in another order: the same to rounding
            assert math.isclose(d1.label, d2.label, rel_tol=1e-9, abs_tol=1e-9), (d1, d2)
        else:
            assert _hashable(d1.label) == _hashable(d2.label), (d1, d2)
        assert d1.ask == d2.ask, (d1, d2)
        assert math.isclose(d1.score, d2.score, rel_tol=1e-6, abs_tol=1e-9), (d1.score, d2.score)
        if d1.ask:
            learner.learn(d1.slots, d1.z, y)
            other.learn(d2.slots, d2.z, y)


def check_channels_come_and_go(learner: Learner) -> None:
    rng = random.Random(4)
    make_label = _labels_for(learner, "bool")
    for phase in [("a", "b"), ("b", "c"), ("c",), ()]:
        for _ in range(150):
            values = {"a": rng.gauss(0, 1), "b": rng.gauss(0, 1), "c": rng.gauss(0, 1)}
            d = learner.decide_one({k: values[k] for k in phase})
            learner.learn(d.slots, d.z, make_label(sum(values.values())))
    assert set(learner.channels.names) == {"a", "b", "c"}
    learner.predict_one({})
    learner.predict_one({"never-seen": 1.0})
    assert "never-seen" not in learner.channels.names


def check_budget_is_fixed(learner: Learner) -> None:
    """``memory_bytes`` is set at construction: new channel names and labels do
    not move it (a learner may free a part it no longer needs, as ActiveAROW frees
    its refit buffer once its refits are over: never above the budget, and fixed
    after)."""
    budget = learner.memory_bytes()
    rng = random.Random(5)
    make_label = _labels_for(learner, "bool")
    for rounds in range(2):
        for i in range(3 * learner.channels.capacity):
            x = {"base": rng.gauss(0, 1), f"sensor-{rounds}-{i}": rng.gauss(0, 1)}
            d = learner.decide_one(x)
            learner.learn(d.slots, d.z, make_label(x["base"]))
        assert learner.memory_bytes() <= budget if rounds == 0 else learner.memory_bytes() == budget
        budget = learner.memory_bytes()


def yield_checks(learner: Learner) -> Iterator[Callable[[Learner], None]]:
    """The checks that apply to ``learner``, by its task and capabilities."""
    yield check_declares_capabilities
    yield check_every_parameter_is_constrained
    yield check_defaults_are_immutable
    yield check_before_any_label
    yield check_clone
    yield check_state_round_trip
    yield check_input_not_mutated
    if learner.task in _LABELLED_TASKS:
        yield check_labels_round_trip
        yield check_predict_proba_one
    elif learner.task == "regression":
        yield check_regression_outputs
    elif learner.task == "anomaly":
        yield check_anomaly_outputs
    yield check_key_order_has_no_effect
    yield check_channels_come_and_go
    yield check_budget_is_fixed


def check_learner(learner: Learner) -> None:
    """Run every check that applies to ``learner`` (each on a fresh clone)."""
    if not isinstance(learner, Learner):
        raise TypeError(f"check_learner takes an edgelearn Learner. Got {type(learner).__name__}.")
    for check in yield_checks(learner):
        try:
            check(learner.clone())
        except AssertionError as error:
            raise AssertionError(f"{check.__name__} failed for {learner!r}: {error}") from error
