import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, f1_score

from edgelearn.metrics import ClassificationMetrics, accuracy, f1_binary, f1_macro

TOL = 1e-12

ALPHABETS = [
    [0, 1, 2, 3, 4, 5],
    ["a", "b", "c", "d"],
    [-1, 1],
    [True, False],
    [10, 20, 30],
]


@st.composite
def label_pairs(draw, alphabet_size=None):
    alphabet = draw(st.sampled_from(ALPHABETS))
    k = draw(st.integers(1, len(alphabet))) if alphabet_size is None else alphabet_size
    labels = st.sampled_from(alphabet[:k])
    n = draw(st.integers(1, 60))
    y_true = draw(st.lists(labels, min_size=n, max_size=n))
    y_pred = draw(st.lists(labels, min_size=n, max_size=n))
    return alphabet[:k], y_true, y_pred


def streamed(y_true, y_pred, **kw):
    m = ClassificationMetrics(**kw)
    for t, p in zip(y_true, y_pred):
        m.update(t, p)
    return m


@settings(max_examples=100, deadline=None)
@given(label_pairs())
def test_accuracy_and_macro_f1_match_sklearn(case):
    _, y_true, y_pred = case
    ref_acc = accuracy_score(y_true, y_pred)
    ref_f1 = f1_score(y_true, y_pred, average="macro", zero_division=0)
    m = streamed(y_true, y_pred)
    assert abs(accuracy(np.array(y_true), np.array(y_pred)) - ref_acc) <= TOL
    assert abs(m.accuracy - ref_acc) <= TOL
    assert abs(f1_macro(np.array(y_true), np.array(y_pred)) - ref_f1) <= TOL
    assert abs(f1_macro(y_true, y_pred) - ref_f1) <= TOL
    assert abs(m.f1 - ref_f1) <= TOL


@settings(max_examples=100, deadline=None)
@given(label_pairs(alphabet_size=2), st.booleans())
def test_binary_f1_matches_sklearn(case, first_is_positive):
    alphabet, y_true, y_pred = case
    positive = alphabet[0] if first_is_positive else alphabet[1]
    ref = f1_score(y_true, y_pred, pos_label=positive, average="binary",
                   zero_division=0)
    assert abs(f1_binary(np.array(y_true), np.array(y_pred), positive=positive) - ref) <= TOL
    m = streamed(y_true, y_pred, positive=positive)
    assert abs(m.f1 - ref) <= TOL
    assert abs(m.accuracy - accuracy_score(y_true, y_pred)) <= TOL


@pytest.mark.parametrize("y_true, y_pred", [
    ([0, 0, 0], [0, 0, 0]),          # single class, all right
    ([0, 0, 0], [1, 1, 1]),          # no true positives at all
    ([1, 1, 1], [1, 1, 1]),          # only positives
    ([0, 1, 0], [0, 0, 0]),          # positive never predicted
    ([0, 0, 0], [0, 1, 0]),          # positive never true
    ([0], [1]),
])
def test_degenerate_cases(y_true, y_pred):
    ref_bin = f1_score(y_true, y_pred, pos_label=1, zero_division=0)
    ref_mac = f1_score(y_true, y_pred, average="macro", zero_division=0)
    assert f1_binary(y_true, y_pred, positive=1) == pytest.approx(ref_bin, abs=TOL)
    assert f1_macro(y_true, y_pred) == pytest.approx(ref_mac, abs=TOL)
    assert streamed(y_true, y_pred, positive=1).f1 == pytest.approx(ref_bin, abs=TOL)
    assert streamed(y_true, y_pred).f1 == pytest.approx(ref_mac, abs=TOL)
    assert accuracy(y_true, y_pred) == pytest.approx(accuracy_score(y_true, y_pred))


def test_default_positive_is_true():
    y_true = np.array([True, False, True, True])
    y_pred = np.array([True, True, False, True])
    assert f1_binary(y_true, y_pred) == pytest.approx(
        f1_score(y_true, y_pred, zero_division=0), abs=TOL)


def test_streaming_values_before_and_after_updates():
    m = ClassificationMetrics()
    assert (m.n, m.accuracy, m.f1) == (0, 0.0, 0.0)
    m.update("x", "y")
    assert m.labels == ["x", "y"]
    assert m.f1_per_label() == {"x": 0.0, "y": 0.0}
    m.reset()
    assert m.n == 0 and m.labels == []


def test_numpy_scalars_and_python_scalars_are_the_same_label():
    m = ClassificationMetrics()
    m.update(np.int64(1), 1)
    m.update(1, np.int32(1))
    assert m.labels == [1] and m.f1 == 1.0


def test_binary_mode_treats_other_labels_as_negative_and_keeps_no_labels():
    m = streamed([2, 0, 1], [2, 1, 1], positive=2)
    assert m.f1 == 1.0 and m.labels == []
    with pytest.raises(AttributeError):
        ClassificationMetrics().precision


def test_max_labels_bound():
    m = ClassificationMetrics(max_labels=3)
    m.update(0, 1)
    m.update(2, 2)
    with pytest.raises(ValueError, match="max_labels=3"):
        m.update(0, 3)
    # The failed update changed nothing.
    assert m.n == 2 and m.labels == [0, 1, 2]
    assert m.f1 == pytest.approx(f1_score([0, 2], [1, 2], average="macro",
                                          zero_division=0), abs=TOL)


def test_default_max_labels_is_1024():
    m = ClassificationMetrics()
    for i in range(1024):
        m.update(i, i)
    with pytest.raises(ValueError, match="max_labels=1024"):
        m.update(1024, 0)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_max_labels_validated(bad):
    with pytest.raises((ValueError, TypeError), match="'max_labels' parameter of "
                       "ClassificationMetrics must be an int in"):
        ClassificationMetrics(max_labels=bad)


@pytest.mark.parametrize("fn", [accuracy, f1_binary, f1_macro])
def test_vector_input_checks(fn):
    with pytest.raises(ValueError, match="different lengths"):
        fn([1, 2], [1])
    with pytest.raises(ValueError, match="empty"):
        fn([], [])
    with pytest.raises(ValueError, match="1-D"):
        fn([[1, 2]], [[1, 2]])


def test_f1_macro_with_unsortable_labels():
    y_true = np.array(["a", 1, "a", 2], dtype=object)
    y_pred = np.array(["a", 1, 1, 2], dtype=object)
    # a: tp 1, true 2, pred 1 -> 2/3;  1: tp 1, true 1, pred 2 -> 2/3;  2: 1.
    assert f1_macro(y_true, y_pred) == pytest.approx((2 / 3 + 2 / 3 + 1) / 3, abs=TOL)
