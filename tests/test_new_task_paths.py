"""The new tasks' default learners (SurpriseDetector: anomaly; AROWRegressor:
regression) on the jitted paths: their row loops against ``decide_one`` and
``learn`` reading by reading, bit for bit."""

import math

import numpy as np
import pytest

from edgelearn import make_learner
from edgelearn.learners.arrays import RowsPass


def _rows(n: int, seed: int, task: str):
    """A stream's rows: 6 channels a quarter missing, two that appear mid-stream
    (beyond the learner's capacity, so slots are recycled), a spike now and then,
    and references (regression: numbers) or verdicts (anomaly) on about 60% of the
    rows; a few labels the learner cannot take."""
    rng = np.random.default_rng(seed)
    names = [f"c{j}" for j in range(6)] + ["late", "later"]
    X = rng.normal(size=(n, len(names))) + np.arange(len(names))
    spikes = rng.random(n) < 0.03
    X[spikes, 1] += 12.0
    X[rng.random(X.shape) < 0.25] = np.nan
    X[: n // 3, 6] = np.nan
    X[: 2 * n // 3, 7] = np.nan
    X[n // 2: n // 2 + 120, 0] = np.nan  # c0 away long enough to lose its slot
    if task == "regression":
        y = 3.0 * np.nan_to_num(X[:, 1]) - np.nan_to_num(X[:, 2]) + rng.normal(size=n)
        labels = [float(v) for v in y] + ["warm", math.inf]
        code = np.arange(n, dtype=float)
        bad = rng.random(n) < 0.02
        code[bad] = n + rng.integers(0, 2, size=int(bad.sum()))
    else:
        labels = [True, False, 0, 1, "yes", 2]
        code = np.where(spikes, rng.choice([0, 3], n), rng.choice([1, 2], n)).astype(float)
        bad = rng.random(n) < 0.02
        code[bad] = 4 + rng.integers(0, 2, size=int(bad.sum()))
    code[rng.random(n) < 0.4] = -1.0
    return X, names, code, labels


def _usable_codes(model, codes, labels):
    """The codes a pipeline hands the loop: labels the learner cannot take are -1."""
    ok = np.array([model.targets.accepts(y) for y in labels])
    taken = codes >= 0
    out = codes.copy()
    out[taken & ~ok[np.maximum(codes, 0).astype(int)]] = -1.0
    return out


def _per_message(model, X, names, codes, labels, learn_if_asked):
    out = {"label": [], "score": [], "asked": [], "extra": [], "feat": []}
    for i in range(X.shape[0]):
        x = {name: float(v) for name, v in zip(names, X[i]) if math.isfinite(v)}
        d = model.decide_one(x)
        out["label"].append(d.label)
        out["score"].append(d.score)
        out["asked"].append(d.ask)
        out["extra"].append(d.extra)
        out["feat"].append((d.slots.copy(), np.asarray(d.z).copy()))
        c = int(codes[i])
        if c >= 0 and (d.ask or not learn_if_asked):
            model.learn(d.slots, d.z, labels[c])
    return out


def _assert_same_state(a, b):
    a, b = a.to_state(), b.to_state()
    for part in ("learned", "channels"):
        for name, value in a[part].items():
            if isinstance(value, np.ndarray):
                assert value.tobytes() == b[part][name].tobytes(), name
            else:
                assert value == b[part][name], name


@pytest.mark.parametrize("kind, task, params", [
    ("surprise", "anomaly", {"warmup": 10, "season": 7, "target_query_rate": 0.3}),
    ("surprise", "anomaly", {"warmup": 10, "season": 0, "target_alarm_rate": 0.05,
                             "evidence": ("level", "change", "shift", "context", "stuck", "range")}),
    ("arow_regressor", "regression", {"target_query_rate": 0.3, "n_bins": 4}),
    ("arow_regressor", "regression", {"target_query_rate": 1.0}),
])
@pytest.mark.parametrize("learn_if_asked", [True, False])
def test_jitted_row_loop_is_decide_one_and_learn_bit_for_bit(kind, task, params, learn_if_asked):
    params = {"capacity": 6, "evict_after": 60, **params}
    if kind == "arow_regressor":
        params["seed"] = 5
    X, names, codes, labels = _rows(900, seed=len(params), task=task)
    reference, jitted = make_learner(kind, params), make_learner(kind, params)
    codes = _usable_codes(reference, codes, labels)
    expected = _per_message(reference, X, names, codes, labels, learn_if_asked)
    half = X.shape[0] // 2  # two passes, as a replay's chunks: the state carries over
    got = [jitted.run_rows(RowsPass(X[a:b], names, codes[a:b], labels, learn_if_asked, True))
           for a, b in ((0, half), (half, X.shape[0]))]
    asked = np.concatenate([g.asked for g in got])
    assert asked.tolist() == expected["asked"]
    assert 0 < asked.sum() < len(asked) or params.get("target_query_rate") == 1.0
    assert np.concatenate([g.margins for g in got]).tobytes() == np.array(expected["score"]).tobytes()
    if task == "anomaly":
        alarms = np.concatenate([g.pred for g in got]).astype(bool)
        assert alarms.tolist() == expected["label"]
        assert 0 < alarms.sum() < len(alarms)
        tops = [tuple(names[j] for j in row if j >= 0) for g in got for row in g.extra["top"]]
        assert tops == [e["top"] for e in expected["extra"]]
        assert any(tops)
    else:
        for key in ("lower", "upper"):
            got_key = np.concatenate([g.extra[key] for g in got])
            assert got_key.tobytes() == np.array([e[key] for e in expected["extra"]]).tobytes()
        yhat = np.concatenate([g.extra["yhat"] for g in got])
        assert yhat.tobytes() == np.array(expected["label"]).tobytes()
    width = got[0].z_width
    feats = [(g.feat_slots[i, :g.feat_k[i]], g.feat_z[i, :g.feat_k[i] * width]) for g in got
             for i in range(len(g.asked))]
    for (sa, za), (sb, zb) in zip(feats, expected["feat"], strict=True):
        assert sa.tolist() == sb.tolist() and za.tobytes() == zb.tobytes()
    _assert_same_state(reference, jitted)
    assert reference.channels.n_evicted > 0
