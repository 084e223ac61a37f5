import csv
import functools
import re
import shutil

import numpy as np
import pytest

from edgelearn import datasets
from edgelearn.datasets import (
    DATASETS,
    ENV_VAR,
    PAACDS_TASKS,
    binary_task,
    datasets_dir,
    load,
    verify,
)

# Labels and non-feature columns per data set, as the README describes them.
NON_FEATURE_COLUMNS = {
    "occupancy": 2, "room_occupancy": 3, "yeast": 14, "emotions": 6,
}


@functools.lru_cache(maxsize=None)
def cached(name):
    return load(name)


@functools.lru_cache(maxsize=None)
def cached_task(name):
    return binary_task(name)


@functools.lru_cache(maxsize=None)
def readme():
    return (datasets_dir() / "README.md").read_text()


def readme_shapes():
    rows = re.findall(r"^\| `([\w.]+)` \| (\d+) x (\d+) \|", readme(), flags=re.M)
    return {f.split(".")[0]: (int(r), int(c)) for f, r, c in rows}


def readme_sha_prefixes():
    text = " ".join(readme().split("sha256 (first 16 hex digits):", 1)[1].split())
    return dict(re.findall(r"(\w+) ([0-9a-f]{16})", text))


def test_readme_lists_exactly_our_data_sets():
    assert set(readme_shapes()) == set(DATASETS)
    assert set(readme_sha_prefixes()) == set(DATASETS)


@pytest.mark.parametrize("name", DATASETS)
def test_shapes_match_readme(name):
    rows, cols = readme_shapes()[name]
    ds = cached(name)
    n_drop = NON_FEATURE_COLUMNS.get(name, 1)
    assert ds.X.shape == (rows, cols - n_drop)
    assert ds.X.dtype == np.float64
    assert len(ds.feature_names) == cols - n_drop
    assert len(ds.y) == rows
    assert ds.name == name


def test_paacds_tasks_in_readme_order():
    protocol = [f.split(".")[0] for f, use in re.findall(
        r"^\| `([\w.]+)` \|[^|]*\|[^|]*\| ([^|]*)\|", readme(), flags=re.M)
        if "PAACDS protocol" in use]
    assert PAACDS_TASKS == tuple(protocol)
    assert len(PAACDS_TASKS) == 12


def test_arrhythmia_has_nans_where_the_file_has_question_marks():
    ds = cached("arrhythmia")
    with open(datasets_dir() / "arrhythmia.csv", newline="") as f:
        rows = list(csv.reader(f))[1:]
    n_question = sum(v == "?" for r in rows for v in r)
    assert n_question > 0
    assert int(np.isnan(ds.X).sum()) == n_question
    assert ds.label_name == "class" and "class" not in ds.feature_names
    assert not np.isnan(ds.X[:, ds.feature_names.index("age")]).any()


def test_room_occupancy_empty_cells_are_nan_and_date_time_are_meta():
    ds = cached("room_occupancy")
    assert np.isnan(ds.X).any()
    assert "Date" not in ds.feature_names and "Time" not in ds.feature_names
    assert ds.meta["Date"][0] == "2017-12-22" and ds.meta["Time"][0] == "10:49:41"
    assert sorted(np.unique(ds.y).tolist()) == [0, 1, 2, 3]


def test_occupancy_date_is_not_a_feature():
    ds = cached("occupancy")
    assert ds.feature_names == ["Temperature", "Humidity", "Light", "CO2",
                                "HumidityRatio"]
    assert ds.label_name == "Occupancy"
    assert len(ds.meta["Date"]) == len(ds.y)


def test_svmguide3_label_is_column_0():
    ds = cached("svmguide3")
    assert ds.label_name == "0"
    assert ds.feature_names == [str(i) for i in range(1, 22)]
    assert sorted(np.unique(ds.y).tolist()) == [-1, 1]


def test_values_parse_exactly_like_float():
    ds = cached("ionosphere")
    with open(datasets_dir() / "ionosphere.csv", newline="") as f:
        rows = list(csv.reader(f))[1:]
    ref = np.array([[float(v) for v in r[:-1]] for r in rows])
    assert np.array_equal(ref.view(np.int64), ds.X.view(np.int64))
    assert ds.y.tolist() == [int(r[-1]) for r in rows]


@pytest.mark.parametrize("name, n_labels, first", [
    ("yeast", 14, "Class1"), ("emotions", 6, "amazed-suprised")])
def test_multilabel_sets(name, n_labels, first):
    ds = cached(name)
    assert ds.multilabel
    assert ds.y.shape == (ds.X.shape[0], n_labels) and ds.y.dtype == np.int64
    assert set(np.unique(ds.y).tolist()) == {0, 1}
    assert len(ds.label_names) == n_labels and ds.label_names[0] == first
    assert not set(ds.label_names) & set(ds.feature_names)
    # Every label is used, and some instance has several labels.
    assert (ds.y.sum(axis=0) > 0).all() and (ds.y.sum(axis=1) > 1).any()


def test_single_label_sets_have_label_names():
    ds = cached("pima")
    assert not ds.multilabel and ds.label_names == ["target"]


@pytest.mark.parametrize("name", PAACDS_TASKS)
def test_binary_tasks(name):
    X, y, names = cached_task(name)
    assert y.dtype == bool and y.shape == (X.shape[0],)
    assert 0.0 < y.mean() < 1.0
    assert names == cached(name).feature_names


@pytest.mark.parametrize("name, positives", [
    ("splice", 1655), ("svmguide3", 296), ("libras", 7 * 24),
    ("dermatology", 112), ("arrhythmia", 245), ("wdbc", 212), ("pima", 268),
])
def test_binary_task_definitions(name, positives):
    assert int(cached_task(name)[1].sum()) == positives


def test_binary_task_rejects_other_data_sets():
    with pytest.raises(ValueError, match="The 'name' parameter of binary_task must "
                       "be one of {'wdbc', 'splice'"):
        binary_task("occupancy")


def test_unknown_name():
    with pytest.raises(ValueError, match="The 'name' parameter of load must be one of"):
        load("iris")


def test_verify_matches_readme_prefixes():
    digests = verify()
    prefixes = readme_sha_prefixes()
    assert set(digests) == set(DATASETS)
    for name, digest in digests.items():
        assert digest.startswith(prefixes[name]), name


def test_verify_detects_a_changed_file(tmp_path, monkeypatch):
    src = datasets_dir()
    for f in ("pima.csv", "spect.csv"):
        shutil.copy(src / f, tmp_path / f)
    with open(tmp_path / "spect.csv", "a") as f:
        f.write("0" * 22 + "\n")
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    verify(["pima"])
    with pytest.raises(ValueError, match=r"spect\.csv \(sha256 [0-9a-f]{16}, "
                       r"expected dc0d0f54f68c87d2\)"):
        verify(["pima", "spect"])


def test_env_var_wins(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert datasets_dir() == tmp_path
    with pytest.raises(FileNotFoundError):
        load("pima")


def test_env_var_pointing_nowhere(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "nope"))
    with pytest.raises(FileNotFoundError, match=ENV_VAR):
        datasets_dir()


def test_found_from_the_module_location_whatever_the_cwd(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    expected = datasets_dir()
    monkeypatch.chdir(tmp_path)
    assert datasets_dir() == expected


def test_found_from_the_cwd(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    (tmp_path / "shared" / "datasets").mkdir(parents=True)
    (tmp_path / "proj" / "sub").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "proj" / "sub")
    assert datasets_dir() == tmp_path / "shared" / "datasets"


def test_not_found_names_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    fake = tmp_path / "pkg" / "edgelearn" / "datasets.py"
    fake.parent.mkdir(parents=True)
    monkeypatch.setattr(datasets, "__file__", str(fake))
    with pytest.raises(FileNotFoundError) as info:
        datasets_dir()
    msg = str(info.value)
    assert ENV_VAR in msg and str(tmp_path) in msg and str(fake.parent) in msg


def test_malformed_file_is_reported(tmp_path, monkeypatch):
    src = datasets_dir() / "spect.csv"
    lines = src.read_text().splitlines()
    lines[3] = lines[3].replace("0", "x", 1)
    (tmp_path / "spect.csv").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(ValueError, match=r"spect\.csv: column 'F\d+', data row 3: "
                       "'x' is not a number"):
        load("spect")
