"""The Numenta Anomaly Benchmark's scoring, written anew (numpy only).

NAB (Lavin and Ahmad, "Evaluating Real-time Anomaly Detection Algorithms: the
Numenta Anomaly Benchmark", ICMLA 2015; v1.1, github numenta/NAB) scores a
detector that emits, for every row of every series, an anomaly score in [0, 1]
computed online. A row is a *detection* when its score is at least a threshold,
one threshold for the whole corpus. What follows is NAB's own sweeper, read from
its ``nab/sweeper.py``, ``optimizer.py`` and ``runner.py``:

* **Probation.** The first ``min(floor(0.15 n), 750)`` rows of a series of ``n``
  rows are not scored (a window reaching into them is scored on its other rows;
  a window wholly inside them is not scored at all).
* **Row weights.** ``S(x) = 2 / (1 + exp(5 x)) - 1`` (``-1`` for ``x > 3``). A row
  ``i`` inside a window of rows ``[l, r]`` (width ``w = r - l + 1``) is worth
  ``tp * S(-(r - i + 1) / w) / S(-1)``: about ``tp`` early in the window, 0 at its
  right edge. A row outside every window is worth ``fp * S(|r' - i| / (w' - 1))``
  after a window whose right edge is ``r'`` and width ``w'`` (a detection just
  after a window costs little, one far from it the full ``fp``), and ``-fp``
  before the first window.
* **A series' raw score** at a threshold: the weights of its detections outside
  windows, plus, per window, the largest weight among its detections, or ``-fn``
  if it has none. The corpus' raw score is the sum over series.
* **Profiles** (``config/profiles.json``): standard (tp 1, fp 0.11, fn 1),
  reward_low_FP_rate (fp 0.22), reward_low_FN_rate (fn 2).
* **The optimized threshold**: the corpus raw score at every distinct score value
  (a detection is ``score >= t``; 1.1 detects nothing), the best one kept (the
  highest threshold among equal bests, as NAB's stable sort does).
* **Normalized score**: ``100 (raw - null) / (perfect - null)`` with
  ``perfect = tp * windows`` and ``null`` the raw score of NAB's null detector (a
  constant 0.5) at its own optimized threshold, which is ``-fn`` per scored window.

``tests/test_nab.py`` holds this module to NAB's published scores from the
per-row outputs NAB ships (numenta HTM 70.1, CAD OSE 69.9, windowed Gaussian 39.6
on the standard profile, and the other two profiles), per file and for the corpus.

>>> f = NabSeries("toy", np.arange(20), np.zeros(20), [(10, 13)])
>>> scores = np.zeros(20); scores[11] = 0.9
>>> sweep = Sweep([f], PROFILES["standard"])
>>> round(sweep.raw_at([scores], 0.5), 4)      # one detection early in the window
0.967
>>> threshold, raw = sweep.optimize([scores]); threshold
0.9
>>> round(normalized(raw, sweep), 2)
98.35
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np

__all__ = [
    "PROFILES", "Profile", "NabSeries", "Sweep", "normalized", "probation_length",
    "scaled_sigmoid", "load_corpus", "read_scores",
]


class Profile(NamedTuple):
    """A scoring profile: the weights of a true positive, a false positive, a false negative."""

    tp: float
    fp: float
    fn: float


#: NAB v1.1's three profiles (``config/profiles.json``).
PROFILES = {
    "standard": Profile(1.0, 0.11, 1.0),
    "reward_low_FP_rate": Profile(1.0, 0.22, 1.0),
    "reward_low_FN_rate": Profile(1.0, 0.11, 2.0),
}

PROBATION_PERCENT = 0.15
#: Threshold that detects nothing (NAB starts its sweep there).
NO_DETECTION = 1.1


def probation_length(n: int, percent: float = PROBATION_PERCENT) -> int:
    """Rows not scored at the start of a series of ``n`` rows.

    >>> probation_length(4032), probation_length(1000)
    (604, 150)
    """
    return int(min(math.floor(percent * n), percent * 5000))


def scaled_sigmoid(x: np.ndarray) -> np.ndarray:
    """NAB's ``S(x) = 2 / (1 + exp(5 x)) - 1``, and ``-1`` where ``x > 3``.

    >>> scaled_sigmoid(np.array([-1.0, 0.0, 4.0])).round(5).tolist()
    [0.98661, 0.0, -1.0]
    """
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        s = 2.0 / (1.0 + np.exp(5.0 * x)) - 1.0
    return np.where(x > 3.0, -1.0, s)


class NabSeries(NamedTuple):
    """One series: its name (path under ``data/``), timestamps, values and its
    labelled windows as ``(first row, last row)`` pairs, both included."""

    name: str
    timestamps: np.ndarray
    values: np.ndarray
    windows: list


def _row_weights(n: int, windows: Sequence, profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """Each row's weight and window number (-1 outside every window)."""
    weight = np.empty(n)
    window = np.full(n, -1, dtype=np.int64)
    i = np.arange(n, dtype=np.float64)
    max_tp = float(scaled_sigmoid(np.array(-1.0)))
    weight[:] = -profile.fp  # before the first window
    for k, (left, right) in enumerate(windows):
        width = right - left + 1
        inside = slice(left, right + 1)
        weight[inside] = scaled_sigmoid(-(right - i[inside] + 1.0) / width) * profile.tp / max_tp
        window[inside] = k
        end = windows[k + 1][0] if k + 1 < len(windows) else n
        after = slice(right + 1, end)
        # NAB divides by (width - 1): a one-row window would divide by zero there too.
        weight[after] = scaled_sigmoid(np.abs(right - i[after]) / (width - 1.0)) * profile.fp
    return weight, window


class Sweep:
    """The corpus' scorable rows and their weights under one profile, ready to be
    scored at any threshold (:meth:`raw_at`) or swept (:meth:`curve`, :meth:`optimize`).

    ``scores`` arguments are sequences of arrays, one per series of ``series``, in order.
    """

    def __init__(self, series: Sequence[NabSeries], profile: Profile):
        self.series = list(series)
        self.profile = profile
        weights, windows, keep, self.lengths = [], [], [], []
        n_windows = 0
        for s in self.series:
            n = len(s.timestamps)
            w, k = _row_weights(n, s.windows, profile)
            scorable = np.arange(n) >= probation_length(n)
            k = np.where(k >= 0, k + n_windows, -1)
            n_windows += len(s.windows)
            weights.append(w)
            windows.append(k)
            keep.append(scorable)
            self.lengths.append(n)
        self._keep = np.concatenate(keep) if keep else np.zeros(0, bool)
        self.weight = np.concatenate(weights)[self._keep] if weights else np.zeros(0)
        self.window = np.concatenate(windows)[self._keep] if windows else np.zeros(0, np.int64)
        #: Windows with at least one scored row (those NAB counts).
        self.scored_windows = np.unique(self.window[self.window >= 0])
        self.n_windows = n_windows

    def _scorable(self, scores: Sequence[np.ndarray]) -> np.ndarray:
        if len(scores) != len(self.series):
            raise ValueError(f"The 'scores' parameter of Sweep must be a sequence of "
                             f"{len(self.series)} arrays (one per series). Got {len(scores)}.")
        for s, a, n in zip(self.series, scores, self.lengths):
            if len(a) != n:
                raise ValueError(f"The 'scores' parameter of Sweep must have {n} rows for "
                                 f"{s.name}. Got {len(a)}.")
        flat = np.concatenate([np.asarray(a, dtype=np.float64) for a in scores])
        if not np.all(np.isfinite(flat)):
            raise ValueError("The 'scores' parameter of Sweep must be finite. Got NaN or inf.")
        return flat[self._keep]

    @property
    def null(self) -> float:
        """NAB's null detector's raw score: ``-fn`` per scored window."""
        return -self.profile.fn * len(self.scored_windows)

    @property
    def perfect(self) -> float:
        """``tp`` per labelled window."""
        return self.profile.tp * self.n_windows

    def counts_at(self, scores: Sequence[np.ndarray], threshold: float) -> dict:
        """Raw score and NAB's row counts (TP, TN, FP, FN over scored rows) at ``threshold``."""
        flat = self._scorable(scores)
        detected = flat >= threshold
        inside = self.window >= 0
        best = np.full(self.n_windows, -np.inf)
        np.maximum.at(best, self.window[detected & inside], self.weight[detected & inside])
        best = best[self.scored_windows]
        raw = float(np.sum(self.weight[detected & ~inside])
                    + np.sum(np.where(np.isfinite(best), best, -self.profile.fn)))
        return {"raw": raw, "tp": int(np.sum(detected & inside)),
                "tn": int(np.sum(~detected & ~inside)), "fp": int(np.sum(detected & ~inside)),
                "fn": int(np.sum(~detected & inside))}

    def raw_at(self, scores: Sequence[np.ndarray], threshold: float) -> float:
        """The corpus' raw score at ``threshold`` (a detection is ``score >= threshold``)."""
        return self.counts_at(scores, threshold)["raw"]

    def curve(self, scores: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """``(thresholds, raw scores)``: 1.1 (nothing detected), then every distinct
        score value in decreasing order, each with the raw score of detecting the
        rows scored at least that."""
        flat = self._scorable(scores)
        order = np.argsort(-flat, kind="stable")
        s, w, k = flat[order], self.weight[order], self.window[order]
        inside = k >= 0
        gain = np.where(inside, 0.0, w)  # each outside detection adds its weight
        # Inside a window, a detection adds how much it raises the window's best
        # weight (which starts at -fn): a running maximum per window, in this order.
        rows = np.flatnonzero(inside)
        if len(rows):
            by_window = rows[np.argsort(k[rows], kind="stable")]
            kw = k[by_window]
            span = float(np.max(np.abs(w))) * 2.0 + 2.0 * self.profile.fn + 1.0
            shifted = w[by_window] + kw * span
            running = np.maximum.accumulate(shifted) - kw * span
            first = np.r_[True, kw[1:] != kw[:-1]]
            before = np.where(first, -self.profile.fn, np.r_[-self.profile.fn, running[:-1]])
            gain[by_window] = np.maximum(running, -self.profile.fn) - np.maximum(before, -self.profile.fn)
        total = self.null + np.cumsum(gain)
        last_of_tie = np.r_[s[1:] != s[:-1], True] if len(s) else np.zeros(0, bool)
        thresholds = np.r_[NO_DETECTION, s[last_of_tie]]
        raws = np.r_[self.null, total[last_of_tie]]
        return thresholds, raws

    def optimize(self, scores: Sequence[np.ndarray]) -> tuple[float, float]:
        """NAB's corpus-optimized threshold and its raw score (the highest threshold
        among equal bests)."""
        thresholds, raws = self.curve(scores)
        best = int(np.argmax(raws))
        return float(thresholds[best]), float(raws[best])


def normalized(raw: float, sweep: Sweep) -> float:
    """``100 (raw - null) / (perfect - null)``: 0 is the null detector, 100 perfect."""
    if sweep.perfect == sweep.null:
        raise ValueError("The 'sweep' parameter of normalized must cover at least one scored "
                         "window. Got a corpus with none.")
    return 100.0 * (raw - sweep.null) / (sweep.perfect - sweep.null)


# -- reading NAB's files -------------------------------------------------------------


def _open_text(path: Path):
    return gzip.open(path, "rt") if path.suffix == ".gz" else open(path)


def _read_series_file(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with _open_text(path) as f:
        header = f.readline().strip().split(",")
        if header[:2] != ["timestamp", "value"]:
            raise ValueError(f"{path} must start with the columns timestamp,value. Got {header}.")
        stamps, values = [], []
        for line in f:
            t, v = line.rstrip("\n").split(",")[:2]
            stamps.append(t)
            values.append(float(v))
    return np.array(stamps, dtype="datetime64[s]"), np.array(values)


def load_corpus(root: str | Path, windows_file: str = "labels/combined_windows.json") -> list[NabSeries]:
    """The series under ``root/data`` (``.csv`` or ``.csv.gz``), with their windows
    from ``root/windows_file``, sorted by name. A window's timestamps must be rows
    of its series (as NAB requires)."""
    root = Path(root)
    with open(root / windows_file) as f:
        labelled = json.load(f)
    series = []
    for path in sorted((root / "data").glob("*/*.csv*")):
        name = str(path.relative_to(root / "data")).removesuffix(".gz")
        stamps, values = _read_series_file(path)
        windows = []
        for start, end in labelled.get(name, []):
            rows = [np.flatnonzero(stamps == np.datetime64(t[:19].replace(" ", "T")))
                    for t in (start, end)]
            if any(len(r) != 1 for r in rows):
                raise ValueError(f"Window {start} .. {end} of {name} does not match its rows.")
            windows.append((int(rows[0][0]), int(rows[1][0])))
        series.append(NabSeries(name, stamps, values, windows))
    return series


def read_scores(path: str | Path) -> dict[str, np.ndarray]:
    """Per-row scores from a ``file,timestamp,anomaly_score`` CSV (gzipped or not),
    by series name."""
    by_name: dict[str, list] = {}
    with _open_text(Path(path)) as f:
        f.readline()
        for line in f:
            name, _, score = line.rstrip("\n").split(",")
            by_name.setdefault(name, []).append(float(score))
    return {k: np.array(v) for k, v in by_name.items()}
