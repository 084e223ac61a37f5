"""edgelearn.nab against NAB's published scores, from the per-row outputs NAB ships.

NAB's own tables (benchmarks/nab/results/<detector>/<detector>_<profile>_scores.csv)
give, per file, the raw score and row counts at the threshold NAB's optimizer chose;
results/final_results.json gives the normalized corpus scores. The scorer must
reproduce every file's row of every table, and the normalized scores.
"""

import csv
import functools
import gzip
import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

from edgelearn import nab

ROOT = Path(__file__).resolve().parents[1]
NAB = ROOT / "benchmarks" / "nab"
DETECTORS = ("numenta", "contextOSE", "windowedGaussian")


@functools.lru_cache(maxsize=None)
def corpus():
    return nab.load_corpus(NAB)


@functools.lru_cache(maxsize=None)
def scores(detector):
    by_name = nab.read_scores(NAB / "results" / detector / "anomaly_scores.csv.gz")
    return [by_name[s.name] for s in corpus()]


def table(detector, profile):
    with open(NAB / "results" / detector / f"{detector}_{profile}_scores.csv") as f:
        return list(csv.DictReader(f))


def published():
    with open(NAB / "results" / "final_results.json") as f:
        return json.load(f)


def test_sources_lists_every_bundled_file_with_its_sha256():
    rows = dict(re.findall(r"^\| `([^`]+)` \| `([0-9a-f]{64})` \|$",
                           (NAB / "SOURCES.md").read_text(), flags=re.M))
    files = {str(p.relative_to(NAB)) for p in NAB.rglob("*") if p.is_file() and p.name != "SOURCES.md"}
    assert set(rows) == files
    for name, digest in rows.items():
        data = (NAB / name).read_bytes()
        if name.startswith("data/"):
            data = gzip.decompress(data)  # the digest of NAB's own (uncompressed) CSV
        assert hashlib.sha256(data).hexdigest() == digest, name


def test_corpus_is_nab_v1_1():
    series = corpus()
    assert len(series) == 58
    assert sum(len(s.windows) for s in series) == 116
    assert sum(len(s.values) for s in series) == 365558  # NAB's tables' Total_Count
    profiles = json.loads((NAB / "config" / "profiles.json").read_text())
    for name, profile in nab.PROFILES.items():
        cost = profiles[name]["CostMatrix"]
        assert profile == (cost["tpWeight"], cost["fpWeight"], cost["fnWeight"])


@pytest.mark.parametrize("detector", DETECTORS)
@pytest.mark.parametrize("profile", list(nab.PROFILES))
def test_every_file_scores_as_nab_at_nab_threshold(detector, profile):
    rows = {r["File"] or r["Detector"]: r for r in table(detector, profile)}
    threshold = float(next(iter(rows.values()))["Threshold"])
    by_name = dict(zip((s.name for s in corpus()), scores(detector)))
    for series in corpus():
        row = rows[series.name]
        sweep = nab.Sweep([series], nab.PROFILES[profile])
        got = sweep.counts_at([by_name[series.name]], float(row["Threshold"]))
        assert got["raw"] == pytest.approx(float(row["Score"]), abs=1e-9), series.name
        for key in ("tp", "tn", "fp", "fn"):
            assert got[key] == int(row[key.upper()]), (series.name, key)
    sweep = nab.Sweep(corpus(), nab.PROFILES[profile])
    raw = sweep.raw_at(scores(detector), threshold)
    assert raw == pytest.approx(float(rows["Totals"]["Score"]), abs=1e-8)
    assert nab.normalized(raw, sweep) == pytest.approx(published()[detector][profile], abs=1e-8)


@pytest.mark.parametrize("detector", DETECTORS)
@pytest.mark.parametrize("profile", list(nab.PROFILES))
def test_optimizer_finds_nab_threshold_score(detector, profile):
    sweep = nab.Sweep(corpus(), nab.PROFILES[profile])
    threshold, raw = sweep.optimize(scores(detector))
    assert sweep.raw_at(scores(detector), threshold) == pytest.approx(raw, abs=1e-9)
    thresholds, raws = sweep.curve(scores(detector))
    # The curve is the corpus score at every threshold: spot-check it against raw_at.
    for i in np.linspace(0, len(thresholds) - 1, 7).astype(int):
        assert raws[i] == pytest.approx(sweep.raw_at(scores(detector), thresholds[i]), rel=1e-9)
    score = nab.normalized(raw, sweep)
    expected = published()[detector][profile]
    if (detector, profile) == ("numenta", "reward_low_FP_rate"):
        # NAB's published threshold for this pair (config/thresholds.json, 0.5751955...)
        # was optimized on per-row scores of more digits than the ones NAB ships; on
        # the shipped ones a lower threshold (0.5431) scores higher, 63.21 > 63.12,
        # and at NAB's threshold the score is NAB's (test above).
        assert score == pytest.approx(63.2092, abs=1e-3)
        assert score > expected
    else:
        assert score == pytest.approx(expected, abs=1e-8)


def test_headline_scores():
    # The numbers, rounded as NAB's scoreboard prints them.
    got = {}
    for detector in DETECTORS:
        sweep = nab.Sweep(corpus(), nab.PROFILES["standard"])
        got[detector] = round(nab.normalized(sweep.optimize(scores(detector))[1], sweep), 1)
    assert got == {"numenta": 70.1, "contextOSE": 69.9, "windowedGaussian": 39.6}


def test_bad_scores_are_rejected_with_the_parameter_named():
    series = corpus()[:2]
    sweep = nab.Sweep(series, nab.PROFILES["standard"])
    with pytest.raises(ValueError, match="'scores' parameter of Sweep must be a sequence of 2"):
        sweep.optimize([np.zeros(len(series[0].values))])
    bad = [np.zeros(len(s.values)) for s in series]
    bad[1][5] = np.nan
    with pytest.raises(ValueError, match="must be finite"):
        sweep.raw_at(bad, 0.5)
    with pytest.raises(ValueError, match="must have"):
        sweep.raw_at([np.zeros(3), np.zeros(3)], 0.5)


def test_window_rows_follow_nab_weights():
    # A window of rows 10..13 in a 20-row series (probation 3 rows): an early detection
    # is worth about tp, one at the right edge 0, one far after the window -fp.
    series = nab.NabSeries("toy", np.arange(20), np.zeros(20), [(10, 13)])
    sweep = nab.Sweep([series], nab.PROFILES["standard"])
    def raw(*rows):
        s = np.zeros(20)
        s[list(rows)] = 1.0
        return sweep.raw_at([s], 1.0)
    assert raw() == -1.0
    sig = lambda x: 2 / (1 + np.exp(5 * x)) - 1  # noqa: E731
    assert raw(10) == pytest.approx(1.0)  # the window's first row: position -1, worth tp
    assert raw(13) == pytest.approx(sig(-0.25) / sig(-1.0))  # its last row: position -1/4
    assert raw(11, 13) == raw(11)  # a window counts its best detection once
    assert raw(5) == pytest.approx(-1.0 - 0.11)  # before the window: -fp, and the window missed
    assert raw(10, 19) == pytest.approx(raw(10) + 0.11 * float(nab.scaled_sigmoid(np.array(6 / 3))))
    assert raw(1) == -1.0  # probation: not scored
