"""One rule for a binary margin of exactly 0: the negative label, in every path of
every binary learner with a one-call path (the gateway asks the learner which side
through ``zero_margin_positive``, so it must say what the paths do)."""

import numpy as np
import pytest

from edgelearn import ActiveAROW, PAACDS
from edgelearn.evaluate import replay


def _taught(make):
    """A learner that has learned one positive label from channel "a" and so
    knows its labels, with no intercept: an instance of a channel it never
    learned ("b") scores exactly 0."""
    model = make()
    d = model.decide_one({"a": 1.0})
    model.learn(d.slots, d.z, True)
    return model


MAKERS = {
    "paacds": lambda: PAACDS(learn_intercept=False, seed=0),
    "active_arow": lambda: ActiveAROW(learn_intercept=False, seed=0, target_query_rate=None),
}


@pytest.mark.parametrize("kind", MAKERS)
def test_a_zero_margin_predicts_the_negative_label_in_every_path(kind):
    make = MAKERS[kind]
    assert make().zero_margin_positive is False
    model = _taught(make)
    assert model.predict_one({"b": 3.0}) is False
    d = _taught(make).decide_one({"b": 3.0})
    assert d.score == 0.0 and d.label is False
    d, _ = _taught(make).decide_and_learn({"b": 3.0}, True)
    assert d.score == 0.0 and d.label is False


def test_paacds_replay_predicts_the_negative_label_at_a_zero_margin():
    # Row 0 teaches channel 0 (every label asked without a budget); row 1 has only
    # channel 1, which no update has made active: a margin of exactly 0.
    X = np.array([[1.0, np.nan], [np.nan, 3.0]])
    model = PAACDS(learn_intercept=False, seed=0)
    assert not replay(model, X, np.array([True, True])).predictions[1]
    dict_path = PAACDS(learn_intercept=False, seed=0)
    d = dict_path.decide_one({"0": 1.0})
    dict_path.learn(d.slots, d.z, True)
    d = dict_path.decide_one({"1": 3.0})
    assert d.score == 0.0 and d.label is False
