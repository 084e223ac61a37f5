import math

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
@given(label_pairs())
def test_balanced_accuracy_matches_sklearn(case):
    import warnings

    from sklearn.metrics import balanced_accuracy_score

    from edgelearn.metrics import balanced_accuracy

    _, y_true, y_pred = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "y_pred contains classes not in y_true"
        ref = balanced_accuracy_score(y_true, y_pred)
        t, p = np.array(y_true) == y_true[0], np.array(y_pred) == y_true[0]
        ref_bool = balanced_accuracy_score(t, p)
    assert abs(balanced_accuracy(y_true, y_pred) - ref) <= TOL
    assert abs(balanced_accuracy(t, p) - ref_bool) <= TOL


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


# -- multi-label ----------------------------------------------------------------

from sklearn.metrics import (  # noqa: E402
    hamming_loss as sk_hamming_loss,
    label_ranking_average_precision_score,
    label_ranking_loss,
    roc_auc_score,
)

from edgelearn.metrics import (  # noqa: E402
    MultiLabelMetrics,
    average_precision,
    hamming_loss,
    macro_auc,
    micro_f1,
    multilabel_metrics,
    one_error,
    ranking_loss,
)


@st.composite
def multilabel_cases(draw):
    """Truths, predictions and scores; scores drawn from few values so that
    ties (which the ranking metrics must break as scikit-learn does) are common.
    At least two labels: scikit-learn reads a single column as a binary task."""
    n = draw(st.integers(1, 30))
    m = draw(st.integers(2, 7))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    p_true = draw(st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]))
    Y_true = rng.random((n, m)) < p_true
    Y_pred = rng.random((n, m)) < 0.5
    levels = draw(st.sampled_from([2, 4, 1000]))
    scores = rng.integers(0, levels, size=(n, m)) / levels - 0.5
    return Y_true.astype(int), Y_pred.astype(int), scores


def one_error_by_hand(Y_true, scores):
    """The definition, one instance at a time: is the top-scored label
    (first in column order among ties) absent?"""
    errors = 0
    for truth, row in zip(Y_true, scores):
        top = max(range(len(row)), key=lambda j: (row[j], -j))
        errors += not truth[top]
    return errors / len(Y_true)


@settings(max_examples=150, deadline=None)
@given(multilabel_cases())
def test_multilabel_metrics_match_sklearn(case):
    Y_true, Y_pred, scores = case
    assert hamming_loss(Y_true, Y_pred) == pytest.approx(sk_hamming_loss(Y_true, Y_pred), abs=TOL)
    assert micro_f1(Y_true, Y_pred) == pytest.approx(
        f1_score(Y_true, Y_pred, average="micro", zero_division=0), abs=TOL)
    assert average_precision(Y_true, scores) == pytest.approx(
        label_ranking_average_precision_score(Y_true, scores), abs=TOL)
    assert ranking_loss(Y_true, scores) == pytest.approx(label_ranking_loss(Y_true, scores), abs=TOL)
    assert one_error(Y_true, scores) == pytest.approx(one_error_by_hand(Y_true, scores), abs=TOL)
    both = [j for j in range(Y_true.shape[1]) if 0 < Y_true[:, j].sum() < len(Y_true)]
    if both:
        expected = roc_auc_score(Y_true[:, both], scores[:, both], average="macro")
        assert macro_auc(Y_true, scores) == pytest.approx(expected, abs=TOL)
    else:
        assert math.isnan(macro_auc(Y_true, scores))
    together = multilabel_metrics(Y_true, Y_pred, scores)
    assert together["ranking_loss"] == pytest.approx(label_ranking_loss(Y_true, scores), abs=TOL)
    assert together["hamming_loss"] == pytest.approx(sk_hamming_loss(Y_true, Y_pred), abs=TOL)
    assert together["micro_f1"] == pytest.approx(f1_score(Y_true, Y_pred, average="micro", zero_division=0), abs=TOL)
    assert together["average_precision"] == pytest.approx(
        label_ranking_average_precision_score(Y_true, scores), abs=TOL)
    assert together["one_error"] == pytest.approx(one_error_by_hand(Y_true, scores), abs=TOL)


def test_multilabel_metrics_accept_bools_and_signs_alike():
    Y_true = np.array([[True, False], [False, True], [True, True]])
    scores = np.array([[0.3, -0.2], [0.1, 0.5], [0.2, 0.2]])
    Y_pred = scores > 0
    assert hamming_loss(Y_true, Y_pred) == hamming_loss(Y_true.astype(int), Y_pred.astype(int))
    assert one_error(Y_true, scores) == 0.0


@pytest.mark.parametrize("fn", [hamming_loss, micro_f1, average_precision, ranking_loss, one_error, macro_auc])
def test_multilabel_input_checks(fn):
    with pytest.raises(ValueError, match="different shapes"):
        fn([[1, 0]], [[1, 0, 1]])
    with pytest.raises(ValueError, match="2-D"):
        fn([1, 0], [1, 0])
    with pytest.raises(ValueError, match="empty"):
        fn(np.zeros((0, 2)), np.zeros((0, 2)))


@settings(max_examples=80, deadline=None)
@given(multilabel_cases())
def test_streaming_multilabel_metrics_match_sklearn(case):
    Y_true, Y_pred, _ = case
    names = [f"l{j}" for j in range(Y_true.shape[1])]
    m = MultiLabelMetrics()
    for truth, pred in zip(Y_true, Y_pred):
        # a prediction may leave out absent labels: they count as predicted absent
        m.update(dict(zip(names, map(bool, truth))), {k: True for k, v in zip(names, pred) if v})
    assert m.n == len(Y_true) and m.n_entries == Y_true.size
    assert m.hamming_loss == pytest.approx(sk_hamming_loss(Y_true, Y_pred), abs=TOL)
    assert m.micro_f1 == pytest.approx(f1_score(Y_true, Y_pred, average="micro", zero_division=0), abs=TOL)


def test_streaming_multilabel_metrics_skip_missing_labels():
    m = MultiLabelMetrics()
    assert (m.hamming_loss, m.micro_f1) == (0.0, 0.0)
    m.update({"a": True, "b": None}, {"a": False, "b": True, "c": True})
    assert (m.n, m.n_entries, m.n_wrong) == (1, 1, 1)
    assert m.micro_f1 == 0.0
    m.reset()
    assert m.n == 0 and m.n_entries == 0


# --- concept-drift metrics (AC_OE) ----------------------------------------------------

import naive  # noqa: E402
from edgelearn.metrics import (  # noqa: E402
    average_realtime_accuracy, cumulative_accuracy, realtime_accuracies, recovery, robustness,
)


def test_realtime_accuracies_by_hand_with_a_partial_last_chunk():
    y_true = np.zeros(250, dtype=np.int64)
    y_pred = np.zeros(250, dtype=np.int64)
    y_pred[[3, 50, 99]] = 1          # chunk 0: 97 right of 100
    y_pred[100:120] = 2              # chunk 1: 80 of 100
    y_pred[200:210] = 1              # chunk 2 (50 predictions): 40 of 50
    r = realtime_accuracies(y_true, y_pred, chunk=100)
    assert r.dtype == np.float64 and r.tolist() == [0.97, 0.8, 0.8]
    # Each chunk counts once in the average, the partial one too...
    assert average_realtime_accuracy(y_true, y_pred, chunk=100) == pytest.approx((0.97 + 0.8 + 0.8) / 3)
    # ...while the cumulative accuracy counts predictions.
    assert cumulative_accuracy(y_true, y_pred) == pytest.approx(217 / 250)
    # One chunk longer than the stream: the plain accuracy.
    assert realtime_accuracies(y_true, y_pred, chunk=1000).tolist() == [217 / 250]
    assert realtime_accuracies(["a", "b"], ["a", "c"], chunk=1).tolist() == [1.0, 0.0]


@settings(max_examples=60, deadline=None)
@given(label_pairs(), st.integers(1, 25))
def test_cumulative_and_chunk_accuracies_match_sklearn(case, chunk):
    _, y_true, y_pred = case
    assert abs(cumulative_accuracy(y_true, y_pred) - accuracy_score(y_true, y_pred)) <= TOL
    r = realtime_accuracies(y_true, y_pred, chunk=chunk)
    starts = range(0, len(y_true), chunk)
    expected = [accuracy_score(y_true[s:s + chunk], y_pred[s:s + chunk]) for s in starts]
    assert np.allclose(r, expected, rtol=0, atol=TOL)
    assert average_realtime_accuracy(y_true, y_pred, chunk) == pytest.approx(np.mean(expected), abs=TOL)


def test_recovery_by_hand():
    # Drift at chunk 6. With n_ref=4, eps=0.06: chunks 6 and 7 are followed by a
    # jump; chunk 8 is followed by steps of 0.05, 0.01, 0.01, 0 and halves
    # (0.855 vs 0.87) within eps: convergence after 2 steps, mean of
    # racc_6..racc_8 = 2/3, RSA = 2 * (1 - 2/3).
    r = [0.9] * 6 + [0.5, 0.7, 0.8, 0.85, 0.86, 0.87, 0.87, 0.88, 0.88, 0.88]
    (rsa,) = recovery(r, [6], n_ref=4, eps=0.06)
    assert rsa == pytest.approx(2 / 3)
    # A steady climb of 0.04 per chunk passes the step test but not the halves
    # test (0.08 apart) until it flattens: t = 5, mean(racc_0..racc_5) = 0.6.
    climb = [0.5, 0.54, 0.58, 0.62, 0.66, 0.70, 0.74, 0.78, 0.80, 0.80, 0.80, 0.80, 0.80, 0.80]
    assert recovery(climb, [0], n_ref=4, eps=0.06) == [pytest.approx(5 * 0.4)]
    # With eps above the halves' gap (0.08) the climb converges at once.
    assert recovery(climb, [0], n_ref=4, eps=0.09) == [0.0]
    # Steady from the drift chunk on: zero steps, RSA 0.
    assert recovery([0.7] * 12, [0, 6], n_ref=4, eps=0.02) == [0.0, 0.0]


def test_recovery_none_when_the_reference_points_do_not_fit_before_the_next_drift():
    r = [0.5, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]
    # From drift chunk 0 the first convergence point is 1 (needs chunks 2..5).
    assert recovery(r, [0], n_ref=4, eps=0.02) == [pytest.approx(1 * (1 - 0.7))]
    # A next drift at chunk 5 cuts chunk 5 off the reference points: no convergence.
    assert recovery(r, [0, 5], n_ref=4, eps=0.02) == [None, 0.0]
    assert recovery(r, [0, 6], n_ref=4, eps=0.02)[0] == pytest.approx(0.3)
    # Never steady: an oscillation larger than eps.
    assert recovery([0.6, 0.9] * 20, [3, 20], n_ref=4, eps=0.1) == [None, None]
    # Too short after the last drift.
    assert recovery([0.9] * 10, [7], n_ref=4, eps=0.02) == [None]
    assert recovery([0.9] * 10, [], n_ref=4) == []


@pytest.mark.parametrize("seed", range(12))
def test_recovery_matches_a_plain_search(seed):
    rng = np.random.default_rng(seed)
    n_chunks = 300
    if seed % 2:
        # Noisy plateaus with dips at drifts, continuous values.
        r = np.clip(0.85 + 0.015 * rng.standard_normal(n_chunks), 0, 1)
        drifts = sorted(rng.choice(np.arange(1, n_chunks), size=4, replace=False).tolist())
        for d in drifts:
            r[d:d + 15] -= np.linspace(0.4, 0.0, 15)[: len(r[d:d + 15])]
        eps = float(rng.uniform(0.01, 0.05))
    else:
        # Chunk accuracies of 100 predictions (multiples of 0.01) with an eps that
        # no difference of them can tie.
        r = np.round(np.clip(0.8 + 0.03 * rng.standard_normal(n_chunks), 0, 1), 2)
        drifts = [0, 75, 150, 225]
        eps = 0.0251
    for n_ref in (2, 4, 10):
        got = recovery(r, drifts, n_ref=n_ref, eps=eps)
        want = naive.recovery(r.tolist(), drifts, n_ref, eps)
        assert [g is None for g in got] == [w is None for w in want]
        assert all(g == pytest.approx(w, abs=1e-12) for g, w in zip(got, want) if w is not None)


def test_recovery_on_a_real_prediction_stream():
    # A predictor right 90% of the time, 40% for 300 instances after a drift at 5000.
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 10_000)
    right = rng.random(10_000) < np.where((np.arange(10_000) >= 5000) & (np.arange(10_000) < 5300), 0.4, 0.9)
    pred = np.where(right, y, 1 - y)
    r = realtime_accuracies(y, pred, chunk=100)
    (rsa,) = recovery(r, [5000 // 100], n_ref=10, eps=0.1)
    # It converges once the 3 poor chunks (accuracy ~0.4) are behind it: 3 steps,
    # averaged over those chunks and the first good one.
    assert (r[50:53] < 0.5).all() and (r[53:] > 0.75).all()
    assert rsa == pytest.approx(3 * (1 - r[50:54].mean()))


@pytest.mark.parametrize("kwargs, exc, shown", [
    ({"drift_chunks": [5, 3]}, ValueError,
     "The 'drift_chunks' parameter of recovery must be a strictly increasing sequence of ints in [0, 19]"),
    ({"drift_chunks": [20]}, ValueError, "'drift_chunks' parameter of recovery"),
    ({"drift_chunks": [-1]}, ValueError, "'drift_chunks' parameter of recovery"),
    ({"drift_chunks": [2.0]}, TypeError, "'drift_chunks' parameter of recovery"),
    ({"drift_chunks": 3}, TypeError, "'drift_chunks' parameter of recovery"),
    ({"n_ref": 3}, ValueError, "The 'n_ref' parameter of recovery must be an even int in [2, inf)"),
    ({"n_ref": 0}, ValueError, "'n_ref' parameter of recovery must be an int in [2, inf)"),
    ({"eps": 0}, ValueError, "The 'eps' parameter of recovery must be a float in (0, inf]. Got 0."),
    ({"raccs": [[0.5]]}, ValueError, "The 'raccs' parameter of recovery must be a non-empty 1-D"),
    ({"raccs": []}, ValueError, "'raccs' parameter of recovery"),
    ({"raccs": [0.5, np.nan] * 10}, ValueError, "'raccs' parameter of recovery"),
    ({"raccs": "abc"}, ValueError, "'raccs' parameter of recovery"),
])
def test_recovery_rejects_bad_arguments_by_name(kwargs, exc, shown):
    args = {"raccs": [0.8] * 20, "drift_chunks": [5]} | kwargs
    with pytest.raises(exc) as info:
        recovery(**args)
    assert shown in str(info.value)


def test_chunk_metrics_reject_bad_arguments_by_name():
    for fn in (realtime_accuracies, average_realtime_accuracy):
        with pytest.raises(ValueError, match=f"'chunk' parameter of {fn.__name__} must be an int in \\[1, inf\\)"):
            fn([0, 1], [0, 1], chunk=0)
        with pytest.raises(ValueError, match="different lengths"):
            fn([0, 1], [0], chunk=1)
    with pytest.raises(ValueError, match="empty input"):
        cumulative_accuracy([], [])


def test_robustness_by_hand():
    r = robustness({"A": {"sea": 0.8, "led": 0.6}, "B": {"sea": 0.9, "led": 0.3},
                    "C": {"led": 0.45, "sea": 0.8}})
    assert r["A"] == {"sea": 1.0, "led": 2.0, "total": 3.0}
    assert r["B"] == {"sea": 1.125, "led": 1.0, "total": 2.125}
    assert r["C"] == {"sea": 1.0, "led": 1.5, "total": 2.5}
    # Scale free: percentages give the same ratios; one algorithm is 1 everywhere.
    assert robustness({"A": {"x": 80.0}, "B": {"x": 90}})["B"]["x"] == 1.125
    assert robustness({"only": {"x": 0.5, "y": 0.7}}) == {"only": {"x": 1.0, "y": 1.0, "total": 2.0}}


@pytest.mark.parametrize("avgraccs, exc, shown", [
    ({}, TypeError, "The 'avgraccs' parameter of robustness must be a non-empty dict"),
    ([("A", {"x": 0.5})], TypeError, "'avgraccs' parameter of robustness"),
    ({"A": 0.5}, TypeError, "'avgraccs' parameter of robustness"),
    ({"A": {"x": 0.5}, "B": {"y": 0.5}}, ValueError, "the same data sets for every algorithm"),
    ({"A": {"x": 0.0}, "B": {"x": 0.5}}, ValueError, "Got 0.0 for 'A' on 'x'"),
    ({"A": {"x": "0.5"}}, ValueError, "'avgraccs' parameter of robustness"),
    ({"A": {"x": np.nan}}, ValueError, "'avgraccs' parameter of robustness"),
    ({"A": {"total": 0.5}}, ValueError, "'total' is reserved"),
])
def test_robustness_rejects_bad_input_by_name(avgraccs, exc, shown):
    with pytest.raises(exc) as info:
        robustness(avgraccs)
    assert shown in str(info.value)


def test_multilabel_metrics_reject_bad_matrices_by_name():
    with pytest.raises(ValueError, match="finite scores"):
        macro_auc(np.array([[1, 0], [0, 1]]), np.array([[np.nan, 0.1], [0.2, 0.3]]))
    with pytest.raises(TypeError, match="y_true of bools or numbers"):
        hamming_loss(np.array([["0", "1"]]), np.array([[0, 1]]))
    with pytest.raises(ValueError, match="rows of one length"):
        micro_f1([[1, 0], [1]], [[1, 0], [1, 0]])
    with pytest.raises(TypeError, match="y_true as a dict"):
        MultiLabelMetrics().update([1, 0], {"a": True})
