import csv
import fnmatch
import functools
import gzip
import io
import re
import shutil
import tomllib
from pathlib import Path

import numpy as np
import pytest

from edgelearn import datasets
from edgelearn.datasets import (
    BUNDLED_DIR,
    DATASETS,
    ENV_VAR,
    PAACDS_TASKS,
    binary_task,
    datasets_dir,
    load,
    verify,
)

ROOT = Path(__file__).resolve().parents[1]

# Labels and non-feature columns per data set, as SOURCES.md describes them.
NON_FEATURE_COLUMNS = {"occupancy": 2, "room_occupancy": 3, "yeast": 14, "emotions": 6, "air_quality": 2}


@functools.lru_cache(maxsize=None)
def cached(name):
    return load(name)


@functools.lru_cache(maxsize=None)
def cached_task(name):
    return binary_task(name)


@functools.lru_cache(maxsize=None)
def sources():
    return (BUNDLED_DIR / "SOURCES.md").read_text()


def sources_rows():
    """``{name: (rows, cols, sha256)}`` from the table in SOURCES.md."""
    rows = re.findall(r"^\| `(\w+)\.csv\.gz` \| (\d+) x (\d+) \|.*\| `([0-9a-f]{64})` \|$",
                      sources(), flags=re.M)
    return {name: (int(r), int(c), sha) for name, r, c, sha in rows}


def raw_rows(name):
    """The CSV's data rows, read with the stdlib alone."""
    text = gzip.decompress((BUNDLED_DIR / f"{name}.csv.gz").read_bytes()).decode()
    return list(csv.reader(io.StringIO(text, newline="")))[1:]


def test_sources_lists_exactly_the_bundled_files():
    files = sorted(p.name for p in BUNDLED_DIR.iterdir() if p.name != "SOURCES.md")
    assert files == sorted(f"{name}.csv.gz" for name in DATASETS)
    assert list(sources_rows()) == list(DATASETS)


def test_bundled_files_are_package_data():
    # An installed wheel carries exactly what pyproject's package-data globs match.
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())[
        "tool"]["setuptools"]["package-data"]["edgelearn"]
    package = ROOT / "edgelearn"
    assert BUNDLED_DIR.parent.parent == package
    for path in BUNDLED_DIR.iterdir():
        rel = path.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(rel, g) and rel.count("/") == g.count("/")
                   for g in globs), rel


def test_sources_md_names_a_licence_and_origin_for_each_file():
    for line in sources().splitlines():
        if re.match(r"^\| `\w+\.csv\.gz`", line):
            cells = [c.strip() for c in line.strip("|").split("|")]
            assert len(cells) == 6 and all(cells), line


@pytest.mark.parametrize("name", DATASETS)
def test_shapes_match_sources(name):
    rows, cols, _ = sources_rows()[name]
    ds = cached(name)
    n_drop = NON_FEATURE_COLUMNS.get(name, 1)
    assert ds.X.shape == (rows, cols - n_drop)
    assert ds.X.dtype == np.float64
    assert len(ds.feature_names) == cols - n_drop
    assert len(ds.y) == rows
    assert ds.name == name


def test_paacds_tasks_in_sources_order():
    names = list(sources_rows())
    assert PAACDS_TASKS == tuple(names[names.index("wdbc"):names.index("pima") + 1])
    assert len(PAACDS_TASKS) == 12


def test_arrhythmia_has_nans_where_the_file_has_question_marks():
    ds = cached("arrhythmia")
    rows = raw_rows("arrhythmia")
    n_question = sum(v == "?" for r in rows for v in r)
    assert n_question > 0
    assert int(np.isnan(ds.X).sum()) == n_question
    assert ds.label_name == "class" and "class" not in ds.feature_names
    assert not np.isnan(ds.X[:, ds.feature_names.index("age")]).any()


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
    rows = raw_rows("ionosphere")
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


def test_verify_matches_sources_digests():
    digests = verify()
    assert digests == {name: sha for name, (_, _, sha) in sources_rows().items()}


def test_verify_detects_a_changed_file(tmp_path, monkeypatch):
    for f in ("pima.csv.gz", "spect.csv.gz"):
        shutil.copy(BUNDLED_DIR / f, tmp_path / f)
    # Decompressed, the same content still verifies.
    (tmp_path / "pima.csv").write_bytes(gzip.decompress((tmp_path / "pima.csv.gz").read_bytes()))
    (tmp_path / "pima.csv.gz").unlink()
    changed = gzip.decompress((tmp_path / "spect.csv.gz").read_bytes()) + b"0" * 22 + b"\n"
    (tmp_path / "spect.csv.gz").write_bytes(gzip.compress(changed))
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert verify(["pima"])["pima"] == sources_rows()["pima"][2]
    with pytest.raises(ValueError, match=r"spect\.csv\.gz \(sha256 [0-9a-f]{16}, "
                       r"expected dc0d0f54f68c87d2\)"):
        verify(["pima", "spect"])


def test_env_var_wins(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert datasets_dir() == tmp_path
    with pytest.raises(FileNotFoundError, match=r"no pima\.csv\.gz \(or pima\.csv\)"):
        load("pima")


def test_env_var_pointing_nowhere(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "nope"))
    with pytest.raises(FileNotFoundError, match=ENV_VAR):
        datasets_dir()


def test_bundled_whatever_the_cwd(tmp_path, monkeypatch):
    # Nothing outside the package is searched: not the cwd, not its parents.
    monkeypatch.delenv(ENV_VAR, raising=False)
    (tmp_path / "shared" / "datasets").mkdir(parents=True)
    (tmp_path / "proj").mkdir()
    monkeypatch.chdir(tmp_path / "proj")
    assert datasets_dir() == BUNDLED_DIR
    assert BUNDLED_DIR.is_relative_to(ROOT / "edgelearn")


def test_missing_bundle_is_reported(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(datasets, "BUNDLED_DIR", tmp_path / "gone")
    with pytest.raises(FileNotFoundError, match=r"bundled data sets are missing.*EDGELEARN_DATASETS"):
        datasets_dir()


def test_malformed_file_is_reported(tmp_path, monkeypatch):
    lines = gzip.decompress((BUNDLED_DIR / "spect.csv.gz").read_bytes()).decode().splitlines()
    lines[3] = lines[3].replace("0", "x", 1)
    (tmp_path / "spect.csv").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(ValueError, match=r"spect\.csv: column 'F\d+', data row 3: "
                       "'x' is not a number"):
        load("spect")


def test_regression_tasks_are_numbers_from_other_channels():
    from edgelearn.datasets import HELD_OUT_REGRESSION_TASKS, REGRESSION_TASKS, regression_task

    assert set(HELD_OUT_REGRESSION_TASKS) <= set(REGRESSION_TASKS)
    for task in REGRESSION_TASKS:
        X, y, names = regression_task(task)
        assert y.dtype == np.float64 and np.isfinite(y).all() and len(y) == len(X) > 500
        assert X.shape[1] == len(names) >= 3
        # the target is never among its own channels, nor is another analyser's reference
        assert not any(name.endswith("(GT)") or name in ("Occupancy", "class") for name in names)
    X, y, names = regression_task("air_quality_co")
    raw = load("air_quality")
    assert len(y) == int(np.sum(raw.y != "")) == 7674  # the analyser's gaps are left out
