"""``edgelearn replay`` of CSVs as users have them, for the anomaly and regression tasks:
a NAB series as it is (``timestamp,value``, no label column) and a soft-sensor CSV
with its reference column. The curve's rows must be exactly what the task's default
learner decides over the same readings in process (the replay's ``from_data`` policy:
a recorded answer is learned only when the learner asks for it)."""

from __future__ import annotations

import csv
import gzip
import json
import math
import random
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

import edgelearn

ROOT = Path(__file__).resolve().parents[1]
NAB = ROOT / "benchmarks" / "nab"
SERIES = "artificialWithAnomaly/art_daily_jumpsup.csv"


def replay(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "firmware_bridge", "replay", *args, "--quiet", "--json"],
                         capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def read_curve(path: Path) -> tuple[list[str], list[dict]]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return reader.fieldnames, list(reader)


def test_a_nab_file_as_it_is_replays_with_score_and_alarm_per_reading(tmp_path):
    series = tmp_path / Path(SERIES).name  # the CSV as NAB ships it, not gzipped
    series.write_bytes(gzip.decompress((NAB / "data" / f"{SERIES}.gz").read_bytes()))
    with open(series, newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["timestamp", "value"]
    curve = tmp_path / "out.csv"
    summary = replay(str(series), "--task", "anomaly", "--label", "none", "--curve", str(curve))
    assert summary["task"] == "anomaly" and summary["learner"].startswith("SurpriseDetector(")
    header, out = read_curve(curve)
    assert header == ["stream", "reading", "received_at", "score", "alarm", "asked", "y"]
    assert len(out) == len(rows) == summary["streams"]["art_daily_jumpsup"]["messages"]
    # exactly the default detector over the column, reading by reading
    detector = edgelearn.make_learner(task="anomaly")
    for row, written in zip(rows, out):
        d = detector.decide_one({"value": float(row["value"])})
        assert float(written["score"]) == d.score and written["alarm"] == str(int(d.label))
        assert written["asked"] == str(int(d.ask)) and written["y"] == ""
        stamp = datetime.fromisoformat(row["timestamp"] + "+00:00").timestamp()
        assert float(written["received_at"]) == stamp
    alarms = [i for i, r in enumerate(out) if r["alarm"] == "1"]
    assert summary["streams"]["art_daily_jumpsup"]["alarms"] == len(alarms) >= 1
    # NAB's labelled window of this series holds an alarm
    windows = json.loads((NAB / "labels" / "combined_windows.json").read_text())[SERIES]
    stamps = [r["timestamp"] for r in rows]
    inside = [i for i in alarms for start, end in windows
              if start[:19] <= stamps[i] <= end[:19]]
    assert inside, (alarms, windows)


def test_a_soft_sensor_csv_replays_with_prediction_interval_and_asked(tmp_path):
    rng = random.Random(2)
    lines = ["timestamp,temp,hum,co2"]
    data = []
    for i in range(1500):
        t, h = rng.gauss(20, 3), rng.gauss(50, 10)
        y = round(400 + 30 * t + 2 * h + rng.gauss(0, 10), 2)
        hum = "" if i % 7 == 3 else f"{h:.3f}"  # a channel missing now and then
        lines.append(f"{1700000000 + 60 * i},{t:.3f},{hum},{y}")
        data.append(({"temp": float(f"{t:.3f}"), **({"hum": float(hum)} if hum else {})}, y))
    path = tmp_path / "room.csv"
    path.write_text("\n".join(lines) + "\n")
    curve = tmp_path / "curve.csv"
    summary = replay(str(path), "--task", "regression", "--label", "co2", "--curve", str(curve))
    stream = summary["streams"]["room"]
    assert summary["task"] == "regression" and summary["learner"].startswith("AROWRegressor(")
    header, out = read_curve(curve)
    assert header == ["stream", "reading", "received_at", "y", "prediction", "lower", "upper", "asked"]
    assert len(out) == 1500
    model = edgelearn.make_learner(task="regression")
    errors, covered, intervals = [], 0, 0
    for (x, y), written in zip(data, out):
        d = model.decide_one(x)
        assert float(written["y"]) == y and float(written["prediction"]) == d.label
        assert written["asked"] == str(int(d.ask))
        lower, upper = d.extra["lower"], d.extra["upper"]
        if math.isfinite(lower):
            assert (float(written["lower"]), float(written["upper"])) == (lower, upper)
            intervals += 1
            covered += lower <= y <= upper
        else:  # no interval before two references: empty cells
            assert written["lower"] == written["upper"] == ""
        errors.append(abs(d.label - y))
        if d.ask:
            model.learn(d.slots, d.z, y)
    assert stream["mae"] == pytest.approx(sum(errors) / len(errors))
    assert stream["coverage"] == pytest.approx(covered / intervals)
    # the learner's own default budget (20% of the references), held
    assert stream["labels_used"] == sum(r["asked"] == "1" for r in out)
    assert abs(stream["labels_used"] / 1500 - 0.2) < 0.02


def test_tune_ranks_an_anomaly_detector_by_its_nab_score(tmp_path):
    names = ["artificialWithAnomaly/art_daily_jumpsup.csv", "artificialWithAnomaly/art_daily_flatmiddle.csv"]
    files = [str(NAB / "data" / f"{name}.gz") for name in names]
    out = subprocess.run([sys.executable, "-m", "firmware_bridge", "tune", "--task", "anomaly", *files,
                          "--grid", "alarm_threshold=0.5,0.9", "--results", str(tmp_path / "r.jsonl"),
                          "--json", "--quiet"], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    ranked = json.loads(out.stdout)["ranked"]
    assert json.loads(out.stdout)["metric"] == "nab"
    assert ranked[0]["nab"] >= ranked[1]["nab"]
    # each set's score, computed here: the default detector's own alarms, NAB's scorer
    from edgelearn.nab import PROFILES, NabSeries, Sweep, normalized

    windows = json.loads((NAB / "labels" / "combined_windows.json").read_text())
    for row in ranked:
        series, alarms = [], []
        for name, path in zip(names, files):
            with gzip.open(path, "rt", newline="") as f:
                rows = list(csv.DictReader(f))
            stamps = [r["timestamp"] for r in rows]
            spans = [(stamps.index(a[:19]), stamps.index(b[:19])) for a, b in windows[name]]
            series.append(NabSeries(name, stamps, None, spans))
            detector = edgelearn.make_learner(task="anomaly", params=row["params"])
            alarms.append([float(detector.decide_one({"value": float(r["value"])}).label) for r in rows])
        sweep = Sweep(series, PROFILES["standard"])
        assert row["nab"] == pytest.approx(normalized(sweep.raw_at(alarms, 0.5), sweep), abs=1e-9)
        assert row["alarms"] == sum(sum(a) for a in alarms)
