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


# --- through the pipeline: log replay and the gateway's batches ------------------------

import msgpack  # noqa: E402

from firmware_bridge.offline.replay import replay_records  # noqa: E402
from firmware_bridge.pipeline import Pipeline  # noqa: E402
from firmware_bridge.wire import Limits, encode_batch, encode_data, encode_label  # noqa: E402
from firmware_bridge.wire.logfile import LogRecord, iter_logs, write_log  # noqa: E402

_PARAMS = {"surprise": {"capacity": 8, "evict_after": 50, "target_query_rate": 0.2, "warmup": 10,
                        "season": 5},
           "arow_regressor": {"capacity": 8, "evict_after": 50, "target_query_rate": 0.2, "seed": 3,
                              "n_bins": 2}}


def _answer(kind: str, base, rng):
    """A reading's answer: a verdict (anomaly) or a reference (regression); now and
    then one the wire refuses for the task (its message is rejected as bad_label)."""
    if rng.random() < 0.02:
        return "maybe"
    if kind == "surprise":
        return bool(base[1] > 2.0) if rng.random() < 0.5 else int(base[1] > 2.0)
    return float(3.0 * base[0] - base[1] + 0.1 * rng.normal()) if rng.random() < 0.9 else int(base[0] * 10)


def _log_records(kind: str, seed: int, n: int = 2500) -> list[LogRecord]:
    """Three streams and a fourth beyond max_streams, channels that vanish and come
    back, bursts of new names (slots recycled), spikes, answers on most messages,
    non-finite values, batches (one malformed now and then), malformed payloads,
    unknown topics and stray label answers."""
    rng = np.random.default_rng(seed)
    records, seqs, t = [], {}, 0.0
    for i in range(n):
        t += 0.5
        stream = ["kitchen", "hall", "attic", "garage"][min(int(rng.integers(0, 31)) // 10, 3)]
        seq = seqs[stream] = seqs.get(stream, -1) + 1
        base = rng.normal(size=6)
        if rng.random() < 0.03:
            base[1] += 10.0
        channels = {f"c{j}": float(base[j]) for j in range(6)
                    if not ((j in (2, 3) and rng.random() < 0.3) or (j == 5 and (i // 400) % 2))}
        if i % 150 == 75:
            for j in range(6, 12):
                channels[f"x{i}_{j}"] = float(rng.normal())
        if rng.random() < 0.02:
            channels["c1"] = math.nan
        y = _answer(kind, base, rng) if rng.random() < 0.7 else None
        payload = encode_data(t, seq, channels, y)
        if i % 97 == 5:
            more = [(t + 0.1 * k, seq + k, channels, y) for k in range(1, 4)]
            seqs[stream] = seq + 3
            payload = encode_batch([(t, seq, channels, y), *more])
            if i % 3 == 0:
                payload = payload.replace(b"seq", b"sex", 1)
        elif rng.random() < 0.01:
            payload = payload[:-3]
        if rng.random() < 0.005:
            seqs[stream] += 2
        records.append(LogRecord(f"sensors/{stream}/data", t, payload))
        if rng.random() < 0.01:
            records.append(LogRecord("sensors/kitchen/oops", t, b"\x80"))
        if rng.random() < 0.01:
            records.append(LogRecord(f"edgelearn/{stream}/label", t, encode_label("gw1-9", True)))
    return records


def _replay_pipeline(kind: str, policy: str) -> Pipeline:
    return Pipeline(kind, _PARAMS[kind], max_streams=3, label_policy=policy,
                    limits=Limits(max_channels=16))


def _equal_tree(a, b, path="state"):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            _equal_tree(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), path
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _equal_tree(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert a == b or (a != a and b != b), path
    else:
        assert a == b and type(a) is type(b), path


def _assert_same(live: Pipeline, bulk: Pipeline) -> None:
    assert live.counters() == bulk.counters()
    assert live.status()["streams"] == bulk.status()["streams"]
    assert live.streams == bulk.streams
    for name in live.streams:
        _equal_tree(live.to_state(name), bulk.to_state(name), name)
        assert live.metrics(name).as_dict() == bulk.metrics(name).as_dict()
        _equal_tree(live.last_output(name), bulk.last_output(name), f"{name}.last_output")


@pytest.mark.parametrize("kind", ["surprise", "arow_regressor"])
@pytest.mark.parametrize(("seed", "policy", "chunk"), [(0, "from_data", 65_536), (1, "all", 65_536),
                                                       (2, "from_data", 97)])
def test_jitted_log_replay_equals_the_live_pipeline(kind, seed, policy, chunk):
    records = _log_records(kind, seed)
    live, bulk = _replay_pipeline(kind, policy), _replay_pipeline(kind, policy)
    ran = replay_records(live, records, jit=False, keep_predictions=True)
    jitted = replay_records(bulk, records, keep_predictions=True, chunk=chunk)
    assert set(jitted["paths"].values()) == {"jitted"} and len(jitted["paths"]) == 3
    c = bulk.counters()
    assert c["too_many_streams"] > 0 and c["bad_label"] > 0 and c["non_finite_values"] > 0
    assert c["batches"] > 0 and c["seq_missing"] > 0 and c["learned"] > 0 and c["asked"] > 0
    assert any(s["channels_evicted"] > 0 for s in bulk.status()["streams"].values())
    for name in live.streams:
        a, b = ran["outputs"][name], jitted["outputs"][name]
        assert a["ask"] == b["ask"]
        assert [(type(v), v) for v in a["y"]] == [(type(v), v) for v in b["y"]]
        assert np.array(a["score"]).tobytes() == np.array(b["score"]).tobytes()
    if kind == "surprise":
        assert sum(live.metrics(name).alarms for name in live.streams) > 0
    _assert_same(live, bulk)


@pytest.mark.parametrize("kind", ["surprise", "arow_regressor"])
def test_replay_of_a_written_log(kind, tmp_path):
    path = tmp_path / "a.msgpack"
    write_log(path, _log_records(kind, 5, n=800))
    live, bulk = _replay_pipeline(kind, "from_data"), _replay_pipeline(kind, "from_data")
    replay_records(live, iter_logs([path]), jit=False)
    result = replay_records(bulk, iter_logs([path]))
    assert set(result["paths"].values()) == {"jitted"}
    _assert_same(live, bulk)


def _traffic(kind: str, seed: int, n: int = 400):
    """Batches of two streams (channels that come and go, names beyond capacity,
    NaN values, gaps, spikes), answers on a fifth of the readings, single readings,
    and answers to label requests."""
    rng = np.random.default_rng(seed)
    seqs = {"s": 0, "t": 0}
    for i in range(n):
        stream = "s" if rng.random() < 0.7 else "t"
        readings = []
        for _ in range(int(rng.integers(1, 9))):
            base = rng.normal(size=6)
            if rng.random() < 0.03:
                base[1] += 10.0
            channels = {f"c{j}": float(base[j]) for j in range(6)
                        if not (j in (2, 3) and rng.random() < 0.3) and not (j == 5 and (i // 80) % 2)}
            if i % 60 == 30:
                channels[f"new{i}"] = 1.0
            if rng.random() < 0.02:
                channels["c1"] = math.nan
            y = _answer(kind, base, rng) if rng.random() < 0.2 else None
            readings.append((float(i), seqs[stream], channels, y))
            seqs[stream] += 1 if rng.random() > 0.02 else 3
        payload = encode_batch(readings) if len(readings) > 1 or rng.random() < 0.5 else encode_data(*readings[0])
        yield "data", f"sensors/{stream}/data", payload
        if rng.random() < 0.3:
            yield "answer", int(rng.integers(0, 1000)), _answer(kind, rng.normal(size=6), rng)


def _run_batches(kind: str, policy: str, seed: int, many: bool = False):
    """Both pipelines through the traffic, ``many``: four data messages at a time
    through ``handle_many`` (each stream's batches in one pass). Label requests are
    named by stream and seq (different streams' may be issued in another order by
    ``handle_many``), answered as the reference issued them."""
    params = {**_PARAMS[kind], "evict_after": 40, "capacity": 6}
    jitted = Pipeline(kind, params, label_policy=policy, limits=Limits(max_channels=16))
    plain = Pipeline(kind, params, label_policy=policy, limits=Limits(max_channels=16))
    plain.batch_path = None
    lessons = {id(jitted): [], id(plain): []}
    for p in (jitted, plain):
        p.on_learn = lambda stream, n, slots, z, y, into=lessons[id(p)]: into.append(
            (stream, n, slots.tolist(), np.asarray(z).tobytes(), y))
    issued = {id(jitted): {}, id(plain): {}}  # (topic, seq) -> request id
    order = []  # the reference's requests, in the order it issued them

    def normalized(outputs, p):
        out = []
        for o in outputs:
            body = msgpack.unpackb(o.payload)
            if "req" in body:
                key = (o.topic, body["seq"])
                issued[id(p)][key] = body["req"]
                order.extend([key] if p is plain else [])
                body["req"] = key
            # a prediction message bit for bit; a request as its fields
            out.append((o.topic, o.qos, o.retain, o.payload if "req" not in body else None, body))
        return out

    pending = []
    for what, a, b in _traffic(kind, seed):
        if what == "data":
            pending.append((a, b, 1.0))
            if many and len(pending) < 4:
                continue
            want = [normalized(plain.handle(*item), plain) for item in pending]
            outs = jitted.handle_many(pending) if many else [jitted.handle(*pending[0])]
            assert [normalized(out, jitted) for out in outs] == want
            pending = []
        elif order:
            key = order[a % len(order)]
            for p in (jitted, plain):
                p.handle("edgelearn/s/label", encode_label(issued[id(p)][key], b), 1.0)
    for stream in ("s", "t"):  # each stream's lessons in its order
        assert ([x for x in lessons[id(jitted)] if x[0] == stream]
                == [x for x in lessons[id(plain)] if x[0] == stream])
    assert len(lessons[id(jitted)]) == len(lessons[id(plain)]) > 0
    return jitted, plain


@pytest.mark.parametrize("kind", ["surprise", "arow_regressor"])
@pytest.mark.parametrize(("policy", "seed", "many"), [("request", 0, False), ("request", 1, True),
                                                      ("from_data", 2, False), ("all", 3, True)])
def test_jitted_batches_answer_as_reading_by_reading(kind, policy, seed, many):
    jitted, plain = _run_batches(kind, policy, seed, many)
    _assert_same(plain, jitted)
    c = jitted.counters()
    assert c["batches"] > 0 and c["bad_label"] > 0 and c["learned"] > 0
    if policy == "request":
        assert c["label_requests"] > 0 and c["label_answered"] > 0
    assert len(jitted.batch_path.decoder().names) > 0  # the jitted path ran


# --- the new kernels against the plain references in tests/naive.py ---------------------

import naive  # noqa: E402
from edgelearn.kernels import anomaly as AK  # noqa: E402
from edgelearn.kernels import arow_regression as RK  # noqa: E402
from edgelearn.kernels.log_replay_anomaly import top_columns  # noqa: E402
from firmware_bridge.pipeline.kernels.task_rows import regression_sums  # noqa: E402


def _full_first_row(seed: int, n: int, d: int):
    """Rows whose first has every channel (so column j holds slot j), a quarter of
    the later values missing, and spikes."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 3.0, d) + rng.uniform(-5, 5, d)
    X[rng.random(n) < 0.03, 1] += 30.0
    X[1:][rng.random((n - 1, d)) < 0.25] = np.nan
    return X


@pytest.mark.parametrize("learn_if_asked", [True, False])
def test_surprise_log_loop_matches_the_reference(learn_if_asked):
    from test_surprise import FIELDS, channel_dict, naive_params

    det = make_learner("surprise", {"warmup": 5, "season": 7, "capacity": 8, "target_query_rate": 0.3,
                                    "evidence": ("level", "change", "range", "season", "shift")})
    n, d = 500, 5
    X = _full_first_row(1, n, d)
    codes = np.where(np.random.default_rng(2).random(n) < 0.5, (np.nan_to_num(X[:, 1]) > 15).astype(float), -1.0)
    real = [-1.0, 1.0]
    p = naive_params(det)
    start = ({c: channel_dict(det.st[c]) for c in range(d)}, {c: det.hist[c].copy() for c in range(d)},
             {c: det.trans[c].copy() for c in range(d)}, {c: det.ring[c].copy() for c in range(d)},
             {c: list(det.weight[c]) for c in range(d)}, {c: [list(e) for e in det.conf[c]] for c in range(d)})
    expected, (weights, confirmed, ctl) = naive.surprise_rows(
        X, codes, real, learn_if_asked, *start, p, list(det.ctl), list(det._q), det.n_top,
        det.false_alarm_shrink, det.confirm_tolerance)
    names = [f"c{j}" for j in range(d)]
    got = det.run_rows(RowsPass(X, names, codes, [False, True], learn_if_asked, False))
    assert got.asked.tolist() == [e[2] for e in expected]
    assert got.pred.astype(bool).tolist() == [e[1] for e in expected]
    assert 0 < got.asked.sum() <= got.pred.sum()  # a request needs an alarm
    np.testing.assert_allclose(got.margins, [e[0] for e in expected], rtol=1e-9, atol=1e-12)
    assert [[j for j in row if j >= 0] for row in got.extra["top"].tolist()] == [e[3] for e in expected]
    np.testing.assert_allclose(det.ctl, ctl, rtol=1e-9, atol=1e-12)
    for c in range(d):
        np.testing.assert_allclose(det.weight[c], weights[c], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(det.conf[c], confirmed[c], rtol=1e-9, atol=1e-12)
    assert any(det.weight[c].min() != 1.0 for c in range(d)) or any(det.conf[:d, :, 1].ravel() > 0)
    assert set(FIELDS) <= set(channel_dict(det.st[0]))


@pytest.mark.parametrize("learn_if_asked, target, n_bins", [(True, 0.3, 2), (False, 0.3, 0), (True, 1.0, 3)])
def test_arow_regressor_log_loop_matches_the_reference(learn_if_asked, target, n_bins):
    from edgelearn.kernels.rng import new_state

    model = make_learner("arow_regressor", {"capacity": 8, "n_bins": n_bins, "target_query_rate": target,
                                            "seed": 5, "calibration_window": 32})
    n, d = 400, 5
    X = _full_first_row(3, n, d)
    y = 2.0 * np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 2]) + np.random.default_rng(4).normal(size=n)
    codes = np.where(np.random.default_rng(5).random(n) < 0.6, np.arange(n), -1).astype(float)
    stats = model.stats
    st = {"offset": stats[RK.OFFSET], "n_ref": 0, "sigma2": stats[RK.SIGMA2], "n_noise": 0,
          "alpha_t": stats[RK.ALPHA_T], "q": stats[RK.QUANT], "gauss_q": stats[RK.GAUSS_Q], "scores": [],
          "window": 32, "log_sd_mean": 0.0, "n_widths": 0, "threshold": stats[RK.THRESHOLD],
          "tokens": stats[RK.TOKENS], "covered": 0, "scored": 0, "last_e": 0.0, "last_t": -1,
          "y_mean": 0.0, "y_var": 0.0, "last_beyond": False, "rejected": 0}
    space = model.channels
    ch = {"count": space.count.copy(), "mean": space.mean.copy(), "var": space.var.copy(),
          "last_seen": space.last_seen.copy()}
    start = {name: getattr(model, name).copy() for name in ("W", "S", "b", "Sb")}
    expected, (ref_model, ref_st, _, ref_freq, _) = naive.arowr_rows(
        X, codes, list(y), learn_if_asked, model._edges, model.bin_freq.copy(), model.capacity, start, st,
        ch, 0, space.evict_after, {}, model.n_lags, model.r, model.variance_floor, model.huber,
        model.reject, 1.0 - model.coverage, model.aci_gamma, model._noise_forget, model.query_power,
        int(new_state(5)[0]), target, model.budget_gain, model._width_forget, model.burst, space.forget,
        space.eps, space.z_max)
    got = model.run_rows(RowsPass(X, [f"c{j}" for j in range(d)], codes, list(y), learn_if_asked, False))
    assert got.asked.tolist() == [bool(e[4]) for e in expected]
    assert 0 < got.asked.sum()
    for k, key in enumerate(("yhat", "sd", "lower", "upper")):
        values = got.margins if key == "sd" else got.extra[key]
        np.testing.assert_allclose(values, [e[k] for e in expected], rtol=1e-9, atol=1e-9, err_msg=key)
    for name in ("W", "S", "b", "Sb"):
        np.testing.assert_allclose(getattr(model, name), ref_model[name], rtol=1e-9, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(model.bin_freq, ref_freq, rtol=1e-9, atol=1e-12)
    assert model.stats[RK.N_REF] == ref_st["n_ref"] > 2


def test_top_columns_and_regression_sums_match_the_references():
    rng = np.random.default_rng(9)
    for _ in range(300):
        k = int(rng.integers(0, 7))
        strengths = rng.choice([0.0, 0.5, 1.0, 2.0, 3.5], size=k)  # ties on purpose
        slots = rng.permutation(8)[:k].astype(np.int32)
        slot_col = rng.permutation(8).astype(np.int64)
        ev = np.zeros(max(k, 1) * AK.EV_ROW)
        ev[AK.EV_STRENGTH::AK.EV_ROW][:k] = strengths
        out = np.empty(3, dtype=np.int64)
        top_columns(slots, k, ev, slot_col, out)
        want = naive.surprise_top(list(strengths), [int(slot_col[s]) for s in slots], 3)
        assert [j for j in out.tolist() if j >= 0] == want
        assert all(j == -1 for j in out.tolist()[len(want):])
    n = 500
    y, pred = rng.normal(size=n) * 10, rng.normal(size=n) * 10
    lower, upper = pred - rng.uniform(0, 15, n), pred + rng.uniform(0, 15, n)
    lower[rng.random(n) < 0.1] = -math.inf
    sums, counts = np.zeros(2), np.zeros(2, dtype=np.int64)
    regression_sums(y, pred, lower, upper, sums, counts)
    abs_sum, sq_sum, n_intervals, n_covered = naive.regression_sums(y.tolist(), pred.tolist(),
                                                                    lower.tolist(), upper.tolist())
    assert (sums[0], sums[1]) == (abs_sum, sq_sum)  # the same sums in the same order: the same bits
    assert (counts[0], counts[1]) == (n_intervals, n_covered) and 0 < n_covered < n_intervals < n


def test_a_regression_decoder_reads_float_references_as_numbers():
    """A regression stream's float references are read into ``label_number`` (label
    LABEL_NUMBER) rather than the label table; an int stays a table label; NaN or
    inf is the exact path's (the wire refuses it)."""
    from firmware_bridge.wire.bulk_decode import LABEL_NUMBER, REC_PYTHON, FastDecoder

    decoder = FastDecoder(task="regression")
    ys = [1.5, -0.0, 3, 1e300, 2.5, math.nan, math.inf, None]
    decoded = decoder.decode_payloads([encode_data(float(i), i, {"a": 1.0}, y) for i, y in enumerate(ys)])
    assert decoded.kind.tolist()[5:7] == [REC_PYTHON, REC_PYTHON]
    label, number = decoded.label.tolist(), decoded.label_number.tolist()
    got = [number[i] if label[i] == LABEL_NUMBER else decoder.labels.values[label[i]] if label[i] >= 0
           else None for i in range(len(label))]
    want = [1.5, -0.0, 3, 1e300, 2.5, None]
    assert [(type(v), v) for v in got] == [(type(v), v) for v in want]
    assert math.copysign(1.0, got[1]) == -1.0
    # in the table: the int alone; NaN and inf went to the exact path, not the table
    assert sorted(map(repr, decoder.labels.values)) == ["3"]
    binary = FastDecoder(task="binary").decode_payloads([encode_data(0.0, 0, {"a": 1.0}, 1.5)])
    assert binary.label.tolist() != [LABEL_NUMBER]  # other tasks: not a number


def test_float_labels_of_other_tasks_go_to_the_exact_path_and_never_grow_the_label_table():
    # A classifier's sensor that sends a number as its label (a bug, or a flood of
    # distinct values): each message is the exact path's, which refuses or takes it;
    # a table entry per distinct number would grow without bound.
    from firmware_bridge.wire.bulk_decode import REC_PYTHON, FastDecoder

    for task in ("binary", "multiclass", "anomaly"):
        decoder = FastDecoder(task=task)
        decoded = decoder.decode_payloads([encode_data(float(i), i, {"a": 1.0}, 0.5 + i)
                                           for i in range(500)])
        assert decoded.kind.tolist() == [REC_PYTHON] * 500, task
        assert len(decoder.labels) == 0, task


@pytest.mark.parametrize("kind", ["surprise", "arow_regressor"])
@pytest.mark.parametrize(("policy", "seed", "group"), [("request", 4, 24), ("all", 5, 64),
                                                       ("from_data", 6, 17)])
def test_queued_single_readings_share_a_pass_and_answer_as_one_by_one(kind, policy, seed, group,
                                                                     monkeypatch):
    """A stream's single readings handed over together (``handle_many``, as the
    gateway's worker takes what is queued) share one decode and one learner pass, each
    answered with its own prediction message (the task's own outputs in it) byte for
    byte as ``handle`` one by one; the same label requests, lessons, counters and
    state. Spikes, a NaN now and then (its message goes one by one) and answers the
    wire refuses."""
    import firmware_bridge.pipeline.batches as batches

    passes = []
    run_pass = batches.run_pass
    monkeypatch.setattr(batches, "run_pass",
                        lambda p, *args: passes.append(p) or run_pass(p, *args))
    params = {**_PARAMS[kind], "evict_after": 40, "capacity": 6}
    grouped = Pipeline(kind, params, label_policy=policy, limits=Limits(max_channels=16))
    plain = Pipeline(kind, params, label_policy=policy, limits=Limits(max_channels=16))
    plain.batch_path = None
    lessons = {id(grouped): [], id(plain): []}
    for p in (grouped, plain):
        p.on_learn = lambda stream, n, slots, z, y, into=lessons[id(p)]: into.append(
            (stream, n, slots.tolist(), np.asarray(z).tobytes(), y))
    rng = np.random.default_rng(seed)
    items = []
    for i in range(1200):
        base = rng.normal(size=6)
        if rng.random() < 0.03:
            base[1] += 10.0
        channels = {f"c{j}": float(base[j]) for j in range(6)
                    if not (j in (2, 3) and rng.random() < 0.05)}
        if rng.random() < 0.01:
            channels["c1"] = math.nan
        y = _answer(kind, base, rng) if rng.random() < 0.5 else None
        items.append(("sensors/s/data", encode_data(float(i), i, channels, y), 1.0 + i))

    def normalized(outputs):
        bodies = [msgpack.unpackb(o.payload) for o in outputs]
        return [(o.topic, o.qos, o.retain, o.payload if "req" not in body else None,
                 {k: v for k, v in body.items() if k != "req"})
                for o, body in zip(outputs, bodies)]

    for start in range(0, len(items), group):
        chunk = items[start:start + group]
        want = [normalized(plain.handle(*item)) for item in chunk]
        assert [normalized(out) for out in grouped.handle_many(chunk)] == want
    assert lessons[id(grouped)] == lessons[id(plain)] and lessons[id(plain)]
    _assert_same(plain, grouped)
    assert grouped.last_output("s") == plain.last_output("s")
    assert len(passes) >= len(items) // group // 2 and grouped.counters()["batches"] == 0
