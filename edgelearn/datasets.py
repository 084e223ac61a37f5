"""Loaders for the data sets bundled with the package (``edgelearn/data/datasets``).

Each is a gzip-compressed CSV; ``SOURCES.md`` beside them gives every file's origin,
licence, shape, label and SHA-256.  They are package data, so an installed wheel has
them too.  Set the ``EDGELEARN_DATASETS`` environment variable to read the same files
(``NAME.csv.gz`` or ``NAME.csv``) from another folder instead.

* :func:`load` returns any of the files as a :class:`Dataset`: features as a float64
  matrix with NaN for missing values (``?`` or an empty cell), raw labels, names.
* :func:`binary_task` returns the binary task the PAACDS protocol uses for each of
  the 12 data sets in :data:`PAACDS_TASKS`.
* :func:`regression_task` returns a soft-sensor task (:data:`REGRESSION_TASKS`): a
  numeric target column predicted from the other channels.
* :func:`verify` checks the files against the SHA-256 digests ``SOURCES.md`` lists.

No pandas: the stdlib ``csv``/``gzip`` modules and NumPy.

>>> ds = load("pima")
>>> ds.X.shape, ds.label_name, np.bincount(ds.y).tolist()
((768, 8), 'target', [500, 268])
>>> X, y, names = binary_task("splice")
>>> X.shape, y.dtype, round(float(y.mean()), 3)
((3188, 60), dtype('bool'), 0.519)
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

from edgelearn._validation import check_choice

__all__ = [
    "Dataset",
    "DATASETS",
    "PAACDS_TASKS",
    "ENV_VAR",
    "BUNDLED_DIR",
    "datasets_dir",
    "load",
    "binary_task",
    "REGRESSION_TASKS",
    "HELD_OUT_REGRESSION_TASKS",
    "regression_task",
    "verify",
]

ENV_VAR = "EDGELEARN_DATASETS"

#: Where the package keeps its data sets (and ``SOURCES.md``).
BUNDLED_DIR = Path(__file__).resolve().parent / "data" / "datasets"

_MISSING = ("?", "")


class _Spec(NamedTuple):
    file: str
    rows: int
    cols: int                      # columns in the file, labels and all
    labels: tuple[str, ...] | int  # label column names, or "the first N columns"
    sha256: str                    # of the uncompressed CSV, as SOURCES.md lists it
    meta: tuple[str, ...] = ()     # columns that are neither features nor labels
    multilabel: bool = False


_SPECS: dict[str, _Spec] = {
    "occupancy": _Spec("occupancy.csv.gz", 20560, 7, ("Occupancy",),
        "c5ac87029402ce9c9a8bf9d29588805a64fc361c0b21dc07b85a79578911f11b", meta=("Date",)),
    "wdbc": _Spec("wdbc.csv.gz", 569, 31, ("target",),
        "2da52bb18d5720de5908b3f6ad15d6e654bae4b39af53430a87d293b54bc33ba"),
    "splice": _Spec("splice.csv.gz", 3188, 61, ("target",),
        "8002d28ff7b65dfadf757ea0ebe3086e27dd81383711be94662d6c2a966d6ef7"),
    "credit_a": _Spec("credit_a.csv.gz", 690, 16, ("target",),
        "af95392033299878af141489dac11cceffc136f7b2dc9f63841093684a813731"),
    "svmguide3": _Spec("svmguide3.csv.gz", 1243, 22, ("0",),
        "f0b9f179d5b3388c169fcfdd605522d6643a3f71785cdd63dcb3c4a952504bff"),
    "spambase": _Spec("spambase.csv.gz", 4601, 58, ("target",),
        "32bc03a132483163cb1c49df64b31af4287e2f6429a4890c5f18d81970454314"),
    "ionosphere": _Spec("ionosphere.csv.gz", 351, 35, ("target",),
        "6c72ca484bc6c68eb963817138cfa21b937ac009ff3ed7a1aaecebc37735b8b1"),
    "spect": _Spec("spect.csv.gz", 267, 23, ("target",),
        "dc0d0f54f68c87d2ad5b4b4c7abd1125f3086459e264329d99193eab0de1cfef"),
    "libras": _Spec("libras.csv.gz", 360, 91, ("target",),
        "80e3e44363b92ae4060af047e326db400fd82e9c1fc1b60c0ce9e0be0a8d7b14"),
    "dermatology": _Spec("dermatology.csv.gz", 366, 35, ("target",),
        "cfc9dd74a38c09a83a441eeed0d35dbe07cac4fa66ccb8a59bf17cb751aa9a80"),
    "arrhythmia": _Spec("arrhythmia.csv.gz", 452, 280, ("class",),
        "7bc2f0f877ce210d5794ec426d0604ec72b11ee9d575386f5c3a56d50531a2e1"),
    "kr_vs_kp": _Spec("kr_vs_kp.csv.gz", 3196, 37, ("target",),
        "e9fbd3b5801b9612e6f8f48d62a71b6d70eeac332fa9419745d2e768ebe719a1"),
    "pima": _Spec("pima.csv.gz", 768, 9, ("target",),
        "49046818a041b8bbfb5444c93ecb3bc41a8171fcd7390980105dd99d0f6200af"),
    "yeast": _Spec("yeast.csv.gz", 2417, 117, tuple(f"Class{i}" for i in range(1, 15)),
        "fd17cb9b53acaaf5e82a9e0795e2667167775915c0e32c1f6fe0fadb0d3bd703",
        multilabel=True),
    "emotions": _Spec("emotions.csv.gz", 593, 78, 6,
        "1d18e5a32fba9a24334d124375206b82d7afbc8badf1bdc94ba3da11d9e1766c",
        multilabel=True),
    "elec2": _Spec("elec2.csv.gz", 45312, 7, ("class",),
        "cdf901433885f29eca6911f70c0eeafb50d90596c879c30c5b99f5a2e8e734ff"),
    "sea": _Spec("sea.csv.gz", 40000, 4, ("class",),
        "d5d55f2ebb4c69f0c6dc26e6d1228e0b689a11706af94b8c41ed1c9d0669bf13"),
    "room_occupancy": _Spec("room_occupancy.csv.gz", 10129, 19, ("Room_Occupancy_Count",),
        "70f9a5c459fa14cadfe4fb4d27fc15abace4d4e3180a38a2916471378ff16366", meta=("Date", "Time")),
    "trump_approval": _Spec("trump_approval.csv.gz", 1001, 7, ("five_thirty_eight",),
        "aef188d04b606270e9590013282e2ede3f5f92edae1106d85d3defa483189cb0"),
    "chick_weights": _Spec("chick_weights.csv.gz", 578, 4, ("weight",),
        "0dc2c24ced9d447958d16be9d1537db1e6973c867223553623708c879080be3f"),
    "air_quality": _Spec("air_quality.csv.gz", 9357, 14, ("CO(GT)",),
        "327b55a4f5fcbc5f9baf0a64928fb893b64270e04e7090c97f9afaaeee70d63c", meta=("Date",)),
}

#: Every data set :func:`load` knows, in ``SOURCES.md``'s order.
DATASETS: tuple[str, ...] = tuple(_SPECS)

# The binary task of each PAACDS-protocol data set (SOURCES.md), from its raw labels.
_BINARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "wdbc": lambda y: y == 1,                      # malignant
    "splice": lambda y: y == 2,                    # "neither" vs the rest
    "credit_a": lambda y: y == 1,
    "svmguide3": lambda y: y == 1,                 # +1
    "spambase": lambda y: y == 1,                  # spam
    "ionosphere": lambda y: y == 1,
    "spect": lambda y: y == 1,
    "libras": lambda y: (y >= 1) & (y <= 7),       # classes 1..7 vs the rest
    "dermatology": lambda y: y == 1,               # class 1 vs the rest
    "arrhythmia": lambda y: y == 1,                # normal vs the rest
    "kr_vs_kp": lambda y: y == 1,
    "pima": lambda y: y == 1,
}

#: The 12 data sets of the PAACDS protocol, in ``SOURCES.md``'s order.
PAACDS_TASKS: tuple[str, ...] = tuple(_BINARY)

# The soft-sensor (regression) tasks: (data set, target column, channels left out
# besides the target). A virtual sensor predicts the target from the other channels.
_REGRESSION: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # occupancy: the label (Occupancy) is a person's judgement, not a sensor: left out
    "occupancy_co2": ("occupancy", "CO2", ()),
    "occupancy_humidity": ("occupancy", "Humidity", ()),
    # elec2: New South Wales demand from the period, prices, Victoria's demand and the
    # transfer; its class (price up or down) is derived from the target's market: out
    "elec2_demand": ("elec2", "nswdemand", ()),
    "trump_approval": ("trump_approval", "five_thirty_eight", ()),
    "chick_weights": ("chick_weights", "weight", ()),
    # the held-out set: CO from the five metal-oxide sensors and T, RH, AH; the
    # other certified analysers (the *(GT) columns) are references too: left out
    "air_quality_co": ("air_quality", "CO(GT)", ("NMHC(GT)", "C6H6(GT)", "NOx(GT)", "NO2(GT)")),
}

#: The soft-sensor tasks of :func:`regression_task`, the held-out one last.
REGRESSION_TASKS: tuple[str, ...] = tuple(_REGRESSION)
#: The soft-sensor task held out from the project: nothing is tuned on it.
HELD_OUT_REGRESSION_TASKS: tuple[str, ...] = ("air_quality_co",)


@dataclass
class Dataset:
    """One loaded data set.

    ``y`` holds the raw labels (int64 when every label is an integer, else float64,
    else str); for multi-label sets it is an ``(n, m)`` int64 0/1 matrix whose
    columns are ``label_names`` (and ``label_name`` is those names joined by
    commas). ``meta`` holds the non-feature columns (e.g. ``Date``) as str arrays.
    """

    X: np.ndarray
    y: np.ndarray
    feature_names: list[str]
    label_name: str
    label_names: list[str] = field(default_factory=list)
    name: str = ""
    meta: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def multilabel(self) -> bool:
        return self.y.ndim == 2


def datasets_dir() -> Path:
    """The data set folder: ``$EDGELEARN_DATASETS`` if set, else the bundled one.

    Raises ``FileNotFoundError`` when the variable names no folder, or when the
    bundled folder is missing (a broken install).
    """
    env = os.environ.get(ENV_VAR)
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"{ENV_VAR}={env!r} is not a directory")
        return path
    if not BUNDLED_DIR.is_dir():
        raise FileNotFoundError(
            f"the bundled data sets are missing: {BUNDLED_DIR} is not a directory "
            f"(reinstall edgelearn, or set {ENV_VAR} to a folder holding the files)")
    return BUNDLED_DIR


def _path(spec: _Spec) -> Path:
    """The file of ``spec`` in :func:`datasets_dir`: ``NAME.csv.gz``, else ``NAME.csv``."""
    root = datasets_dir()
    path = root / spec.file
    if not path.is_file():
        plain = root / spec.file.removesuffix(".gz")
        if plain.is_file():
            return plain
        raise FileNotFoundError(f"no {spec.file} (or {plain.name}) in {root}")
    return path


def _read_bytes(path: Path) -> bytes:
    raw = path.read_bytes()
    return gzip.decompress(raw) if path.suffix == ".gz" else raw


def _spec(name: str, owner: str) -> _Spec:
    return _SPECS[check_choice("name", name, owner, DATASETS)]


def _read_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    reader = csv.reader(io.StringIO(_read_bytes(path).decode("utf-8-sig"), newline=""))
    header = next(reader)
    rows = [row for row in reader if row]
    return header, rows


def _parse_float(block: np.ndarray, path: Path, names: list[str]) -> np.ndarray:
    stripped = np.char.strip(block)
    missing = np.isin(stripped, _MISSING)
    try:
        return np.where(missing, "nan", stripped).astype(np.float64)
    except ValueError:
        pass
    # Find the offending cell to say where it is.
    for j, name in enumerate(names):
        for i, v in enumerate(stripped[:, j]):
            if not missing[i, j]:
                try:
                    float(v)
                except ValueError:
                    raise ValueError(f"{path.name}: column {name!r}, data row {i + 1}: "
                                     f"{str(v)!r} is not a number") from None
    raise AssertionError("unreachable")  # pragma: no cover


def _parse_labels(column: np.ndarray) -> np.ndarray:
    for dtype in (np.int64, np.float64):
        try:
            return column.astype(dtype)
        except (ValueError, OverflowError):
            continue
    return column


def load(name: str) -> Dataset:
    """Load one data set by name (one of :data:`DATASETS`).

    >>> ds = load("arrhythmia")
    >>> ds.X.shape, int(np.isnan(ds.X).sum()), ds.label_name
    ((452, 279), 408, 'class')
    >>> ds = load("emotions")
    >>> ds.X.shape, ds.y.shape, ds.label_names[:2]
    ((593, 72), (593, 6), ['amazed-suprised', 'happy-pleased'])
    """
    spec = _spec(name, "load")
    path = _path(spec)
    header, rows = _read_rows(path)
    if len(header) != spec.cols:
        raise ValueError(f"{path}: expected {spec.cols} columns, found {len(header)}")
    bad = next((i for i, r in enumerate(rows) if len(r) != len(header)), None)
    if bad is not None:
        raise ValueError(f"{path}: data row {bad + 1} has {len(rows[bad])} fields, "
                         f"the header has {len(header)}")
    label_names = list(header[:spec.labels]) if isinstance(spec.labels, int) \
        else list(spec.labels)
    missing_cols = [c for c in (*label_names, *spec.meta) if c not in header]
    if missing_cols:
        raise ValueError(f"{path}: no column(s) {missing_cols}")
    non_features = set(label_names) | set(spec.meta)
    feature_names = [c for c in header if c not in non_features]

    table = np.array(rows, dtype=str).reshape(len(rows), len(header))
    col = {c: j for j, c in enumerate(header)}
    X = _parse_float(table[:, [col[c] for c in feature_names]], path, feature_names)
    if spec.multilabel:
        y = _parse_labels(table[:, [col[c] for c in label_names]])
        if y.dtype != np.int64 or not np.isin(y, (0, 1)).all():
            raise ValueError(f"{path}: multi-label columns must hold 0/1")
        label_name = ",".join(label_names)
    else:
        y = _parse_labels(np.char.strip(table[:, col[label_names[0]]]))
        label_name = label_names[0]
    meta = {c: table[:, col[c]].copy() for c in spec.meta}
    return Dataset(X=X, y=y, feature_names=feature_names, label_name=label_name,
                   label_names=label_names, name=name, meta=meta)


def read_csv(path, label: str | None = None, *, unlabelled: bool = False,
             meta_columns: tuple[str, ...] = ()) -> Dataset:
    r"""Read any sensor CSV with a header row (``.csv`` or ``.csv.gz``).

    ``label`` names the label column (default: the last one); with ``unlabelled``
    there is none (``y`` is all NaN). Columns that do not parse as numbers
    (timestamps, ids), and those named in ``meta_columns`` (a ``ts`` of epoch seconds,
    say), are kept in ``meta``, not used as channels; ``?`` and empty cells are
    missing (NaN).

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "log.csv")
    ...     _ = open(path, "w").write("time,temp,co2,occupied\n10:00,20.5,,1\n10:01,20.7,410,0\n")
    ...     ds = read_csv(path)
    >>> ds.feature_names, ds.X.tolist(), ds.y.tolist(), ds.label_name, list(ds.meta)
    (['temp', 'co2'], [[20.5, nan], [20.7, 410.0]], [1, 0], 'occupied', ['time'])
    """
    path = Path(path)
    header, rows = _read_rows(path)
    if not header:
        raise ValueError(f"{path}: no header row")
    if unlabelled:
        label = None
    else:
        label = header[-1] if label is None else label
        if label not in header:
            raise ValueError(f"{path}: no label column {label!r}; the columns are {header}")
    bad = next((i for i, r in enumerate(rows) if len(r) != len(header)), None)
    if bad is not None:
        raise ValueError(f"{path}: data row {bad + 1} has {len(rows[bad])} fields, the header has {len(header)}")
    table = np.array(rows, dtype=str).reshape(len(rows), len(header))
    features, meta = [], {}
    for j, name in enumerate(header):
        if name == label:
            continue
        if name in meta_columns:
            meta[name] = table[:, j].copy()
            continue
        column = np.char.strip(table[:, j])
        try:
            np.where(np.isin(column, _MISSING), "nan", column).astype(np.float64)
            features.append(j)
        except ValueError:
            meta[name] = table[:, j].copy()
    names = [header[j] for j in features]
    X = _parse_float(table[:, features], path, names)
    if label is None:
        return Dataset(X=X, y=np.full(len(rows), np.nan), feature_names=names, label_name="",
                       label_names=[], name=path.stem, meta=meta)
    y = _parse_labels(np.char.strip(table[:, header.index(label)]))
    return Dataset(X=X, y=y, feature_names=names, label_name=label, label_names=[label],
                   name=path.stem, meta=meta)


def binary_task(name: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(X, y, feature_names)`` of a PAACDS-protocol data set, ``y`` a bool array.

    The positive class: 1 for the 0/1-target files; ``+1`` for svmguide3; ``2``
    ("neither") for splice; classes 1..7 for libras; class 1 for dermatology; class
    1 ("normal") for arrhythmia.

    >>> X, y, _ = binary_task("libras")
    >>> int(y.sum()), len(y)
    (168, 360)
    """
    name = check_choice("name", name, "binary_task", PAACDS_TASKS)
    ds = load(name)
    return ds.X, np.asarray(_BINARY[name](ds.y), dtype=bool), ds.feature_names


def regression_task(name: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(X, y, channel_names)`` of a soft-sensor task (one of
    :data:`REGRESSION_TASKS`), ``y`` float64 in the target's units, in the file's
    (time) order.  Rows whose target is missing (air_quality: the analyser's
    ``-200`` gaps, empty cells in our copy) are left out: there is no reference to
    score them against.  A data set's label column that is not the target
    (occupancy's ``Occupancy``, elec2's ``class``) is not a channel.

    >>> X, y, names = regression_task("occupancy_co2")
    >>> X.shape, names
    ((20560, 4), ['Temperature', 'Humidity', 'Light', 'HumidityRatio'])
    >>> X, y, names = regression_task("air_quality_co")
    >>> X.shape, names[:2], names[-3:]
    ((7674, 8), ['PT08.S1(CO)', 'PT08.S2(NMHC)'], ['T', 'RH', 'AH'])
    """
    name = check_choice("name", name, "regression_task", REGRESSION_TASKS)
    source, target, left_out = _REGRESSION[name]
    ds = load(source)
    if ds.label_name == target:
        # a label column with missing cells loads as str: missing becomes NaN
        y = np.where(np.isin(ds.y, _MISSING), "nan", ds.y).astype(np.float64) \
            if ds.y.dtype.kind == "U" else np.asarray(ds.y, dtype=np.float64)
        keep = [j for j, c in enumerate(ds.feature_names) if c not in left_out]
    else:
        t = ds.feature_names.index(target)
        y = ds.X[:, t].copy()
        keep = [j for j, c in enumerate(ds.feature_names) if c != target and c not in left_out]
    rows = np.isfinite(y)
    return ds.X[rows][:, keep], y[rows], [ds.feature_names[j] for j in keep]


def verify(names: list[str] | tuple[str, ...] | None = None) -> dict[str, str]:
    """Check files against the SHA-256 digests of ``SOURCES.md``; return the digests.

    The digest is that of the uncompressed CSV, so a file recompressed, or
    decompressed into ``$EDGELEARN_DATASETS``, still verifies.  Raises
    ``ValueError`` naming every file whose digest differs (and
    ``FileNotFoundError`` for a missing file).

    >>> verify(["pima"])["pima"][:16]
    '49046818a041b8bb'
    """
    if names is None:
        names = DATASETS
    for name in names:
        _spec(name, "verify")
    digests: dict[str, str] = {}
    bad: list[str] = []
    for name in names:
        spec = _SPECS[name]
        path = _path(spec)
        digest = hashlib.sha256(_read_bytes(path)).hexdigest()
        digests[name] = digest
        if digest != spec.sha256:
            bad.append(f"{path.name} (sha256 {digest[:16]}, expected {spec.sha256[:16]})")
    if bad:
        raise ValueError(f"data set files differ from SOURCES.md in {datasets_dir()}: "
                         + "; ".join(bad))
    return digests
