"""edgelearn's learners as River estimators (River 0.26, the dev extra).

River is imported here, so edgelearn.river registers the learners with River's
abstract base classes; the last tests check, in fresh processes, that nothing
in edgelearn or the gateway imports River on its own.
"""

import copy
import gzip
import pickle
import shutil
import subprocess
import sys
import textwrap

import pytest
from river import active, base, checks, compose, datasets, ensemble, evaluate, metrics, multiclass, preprocessing

import edgelearn
from edgelearn import datasets as edgelearn_datasets

# Every registered kind's class (edgelearn.learners.registry), and the binary ones.
LEARNERS = [edgelearn.KINDS[kind].__name__ for kind in edgelearn.learners.registry.BUILTIN]
BINARY = [name for name in LEARNERS if "binary" in edgelearn.LEARNERS[name].tasks]


@pytest.fixture
def river_music(tmp_path, monkeypatch):
    """River's Music data set is a download; it is the emotions data set the
    project already has (same file, same columns), put where River looks."""
    target = tmp_path / "Music" / "music.csv"
    target.parent.mkdir()
    source = edgelearn_datasets.datasets_dir() / "emotions.csv.gz"
    if source.is_file():
        with gzip.open(source, "rb") as compressed, open(target, "wb") as plain:
            shutil.copyfileobj(compressed, plain)
    else:
        shutil.copy(source.with_suffix(""), target)
    monkeypatch.setenv("RIVER_DATA", str(tmp_path))
    assert datasets.Music().is_downloaded


class _Occupancy:
    """Stands in for River's CreditCard, a download its anomaly checks read: the bundled
    occupancy data's readings, with its labels, as River's datasets yield them."""

    def take(self, n):
        data = edgelearn_datasets.load("occupancy")
        for row, y in zip(data.X[:n], data.y[:n]):
            yield dict(zip(data.feature_names, map(float, row))), bool(y)


@pytest.fixture
def river_credit_card(monkeypatch):
    monkeypatch.setattr(datasets, "CreditCard", _Occupancy)


@pytest.mark.parametrize("name", LEARNERS)
def test_check_estimator_at_defaults(name, river_music, river_credit_card):
    model = getattr(edgelearn, name)()
    task = edgelearn.LEARNERS[name].tasks
    expected = {"multilabel": base.MultiLabelClassifier, "regression": base.Regressor,
                "anomaly": base.AnomalyDetector}.get(min(task), base.Classifier)
    assert isinstance(model, expected), (name, task)
    ran = []
    for check in checks.yield_checks(model):
        check(model.clone())
        ran.append(check.__name__)
    # The data-driven checks ran, the shuffled feature order among them (River runs
    # that one for classifiers and regressors).
    assert "check_pickling" in ran, ran
    if expected is not base.AnomalyDetector:
        assert "check_shuffle_features_no_impact" in ran, ran
    if expected is base.Classifier:
        assert "check_predict_proba_one" in ran


def test_check_estimator_multiclass():
    model = edgelearn.PAACDS(n_classes=7)
    assert model._multiclass
    checks.check_estimator(model)


@pytest.mark.parametrize("name", BINARY)
def test_progressive_val_score_on_phishing_with_a_scaler(name):
    model = preprocessing.StandardScaler() | getattr(edgelearn, name)()
    assert isinstance(model, compose.Pipeline)
    auc, logloss, accuracy = metrics.ROCAUC(), metrics.LogLoss(), metrics.Accuracy()
    evaluate.progressive_val_score(datasets.Phishing(), model, auc + logloss + accuracy)
    assert auc.get() > 0.85, auc
    assert accuracy.get() > 0.8, accuracy
    assert 0.1 < logloss.get() < 2.0, logloss  # probabilities, not bools read as 0/1


def test_river_wrappers():
    sampler = active.EntropySampler(edgelearn.PAACDS(), seed=1)
    accuracy = metrics.Accuracy()
    evaluate.progressive_val_score(datasets.Phishing(), sampler, accuracy)
    assert accuracy.get() > 0.8

    ovr = multiclass.OneVsRestClassifier(edgelearn.PA())
    accuracy = metrics.Accuracy()
    evaluate.progressive_val_score(datasets.ImageSegments(), ovr, accuracy)
    assert accuracy.get() > 0.7

    bag = ensemble.BaggingClassifier(edgelearn.SynthesisNB(), n_models=3, seed=1)
    auc = metrics.ROCAUC()
    evaluate.progressive_val_score(datasets.Phishing(), bag, auc)
    assert auc.get() > 0.85


@pytest.mark.parametrize("name", BINARY + ["PAACDS-3"])
def test_yes_no_in_yes_no_out(name):
    model = edgelearn.PAACDS(n_classes=3) if name == "PAACDS-3" else getattr(edgelearn, name)()
    predictions = set()
    for x, y in datasets.Phishing().take(400):
        predictions.add(model.predict_one(x))
        model.learn_one(x, "yes" if y else "no")
    assert sorted(model.predict_proba_one(x)) == ["no", "yes"]
    after = {model.predict_one(x) for x, _ in datasets.Phishing().take(400)}
    assert after == {"yes", "no"}
    # Before the first label, the one rule: False (binary) or None (multiclass).
    assert predictions - {"yes", "no"} == ({None} if name == "PAACDS-3" else {False})


def test_clone_signature_deepcopy_and_pickle():
    model = edgelearn.PAACDS(target_query_rate=0.3, seed=3)
    for x, y in datasets.Phishing().take(300):
        model.learn_one(x, y)
    changed = model.clone(new_params={"C": 0.5})
    assert changed.C == 0.5 and changed.channels.n_assigned == 0
    for other in (model.clone(include_attributes=True), copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert other.channels.n_assigned == model.channels.n_assigned
        for x, _ in datasets.Phishing().take(50):
            assert other.predict_proba_one(x) == model.predict_proba_one(x)
    # The clone's channel space forgets slots into the clone, not the original.
    clone = model.clone(include_attributes=True)
    assert clone.channels._listeners[0].__self__ is clone


def _run_fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, check=True).stdout.strip()


def test_edgelearn_and_the_gateway_never_import_river():
    out = _run_fresh("""
        import sys
        import edgelearn, edgelearn.checks
        import firmware_bridge.cli, firmware_bridge.service.gateway, firmware_bridge.pipeline
        from firmware_bridge.pipeline import Pipeline
        from firmware_bridge.wire import encode_data
        for kind in ("pa", "paacds", "kelm_multilabel", "ensemble"):
            pipeline = Pipeline(kind, {"capacity": 8})
            for i in range(50):
                pipeline.handle("sensors/s1/data", encode_data(float(i), i, {"t": 20.0 + i % 3}), 0.0)
        model = edgelearn.PA()
        model.learn_one({"a": 1.0}, "yes")
        model.predict_proba_one({"a": 1.0})
        edgelearn.check_learner(edgelearn.PA(capacity=16))
        print(sorted(m for m in sys.modules if m == "river" or m.startswith("river.")))
    """)
    assert out == "[]"


def test_importing_edgelearn_after_river_registers_the_learners():
    out = _run_fresh("""
        import river.base, edgelearn
        print(isinstance(edgelearn.PA(), river.base.Classifier),
              isinstance(edgelearn.MultiLabelKELM(), river.base.MultiLabelClassifier))
    """)
    assert out == "True True"


def test_importing_river_after_edgelearn_registers_the_learners():
    """The notebook order: edgelearn first, River later, nothing else imported."""
    out = _run_fresh("""
        import edgelearn
        from river import base, linear_model
        print(isinstance(edgelearn.PA(), base.Classifier),
              isinstance(edgelearn.MultiLabelKELM(), base.MultiLabelClassifier),
              isinstance(edgelearn.ActiveAROW(), base.Classifier))
    """)
    assert out == "True True True"


def test_paacds_key_order_does_not_change_a_prediction_on_phishing():
    """Pruning ties go to the smaller hash of the channel name, not the lower slot
    (slots follow first-seen key order): shuffling every instance's keys changes
    none of the 1,250 decisions. With ties to the lower slot (commit cc7d094), this
    same loop changed 112 predictions and 132 query decisions."""
    import random

    plain, shuffled = edgelearn.PAACDS(), edgelearn.PAACDS()
    rng = random.Random(0)
    changed = n = 0
    for x, y in datasets.Phishing():
        keys = list(x)
        rng.shuffle(keys)
        d1, d2 = plain.decide_one(x), shuffled.decide_one({k: x[k] for k in keys})
        changed += d1.label != d2.label or d1.ask != d2.ask
        n += 1
        if d1.ask:
            plain.learn(d1.slots, d1.z, y)
        if d2.ask:
            shuffled.learn(d2.slots, d2.z, y)
    assert n == 1250 and changed == 0
