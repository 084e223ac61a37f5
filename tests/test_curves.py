"""edgelearn replay --curve / --plot: the series agree with the replay's own summary,
and the picture is a real PNG drawn headless."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from firmware_bridge import cli
from firmware_bridge.offline.curves import COLUMNS, CurveRecorder
from firmware_bridge.pipeline import Pipeline
from firmware_bridge.wire import encode_data
from firmware_bridge.wire.logfile import write_log


def _log(path, n=600, streams=("a", "b")):
    rng = np.random.default_rng(3)
    records = []
    for i in range(n):
        for stream in streams:
            x = rng.normal(size=3)
            channels = {f"c{j}": float(v) for j, v in enumerate(x) if not (j == 2 and i % 50 < 10)}
            records.append((f"sensors/{stream}/data", float(i), encode_data(
                float(i), i, channels, y=bool(x[0] + x[1] > 0))))
        if i == 100:
            records.append(("sensors/a/data", float(i), b"\xc1"))  # a reject: no reading
    write_log(path, records)
    return n


def test_curve_csv_agrees_with_the_replay_summary(tmp_path, capsys):
    log = tmp_path / "log.msgpack"
    n = _log(log)
    curve = tmp_path / "out" / "curve.csv"
    plot = tmp_path / "out" / "picture.png"
    code = cli.main(["replay", str(log), "--curve", str(curve), "--plot", str(plot),
                     "--window", "100", "--json", "--quiet"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["files"] == {"curve": str(curve), "plot": str(plot)}
    with open(curve, newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == COLUMNS
    for stream in ("a", "b"):
        mine = [r for r in rows if r["stream"] == stream]
        assert [int(r["reading"]) for r in mine] == list(range(1, n + 1))
        last = mine[-1]
        s = summary["streams"][stream]
        assert int(last["labels_learned"]) == s["labels_used"]
        assert int(last["labels_asked"]) == round(s["query_rate"] * n)
        assert float(last["label_budget"]) == pytest.approx(0.1 * n)
        correct = [int(r["correct"]) for r in mine if r["correct"] != ""]
        assert len(correct) == n  # every reading carries its label: every one is scored
        assert sum(correct) / len(correct) == pytest.approx(s["accuracy"])
        assert float(last["rolling_accuracy"]) == pytest.approx(sum(correct[-100:]) / 100)
        present = [int(r["channels_present"]) for r in mine]
        assert present[:10] == [2] * 10 and present[10] == 3
    with open(plot, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    assert (width, height) == (1000, 850)


def test_thinned_series_stay_bounded_and_keep_the_ends_of_the_stride():
    pipeline = Pipeline("pa", {"capacity": 8}, label_policy="all")
    curves = CurveRecorder(pipeline, window=10, max_points=64)
    for i in range(1000):
        payload = encode_data(float(i), i, {"t": float(i % 7)}, y=i % 2 == 0)
        pipeline.handle("sensors/s/data", payload, float(i))
        curves.observe("sensors/s/data", payload, float(i))
    points = curves.series["s"].points
    assert len(points["reading"]) < 64
    stride = curves.series["s"].stride
    assert points["reading"] == list(range(1, 1001, stride))[: len(points["reading"])]
    assert all(math.isnan(b) for b in points["label_budget"])  # pa asks for every label


def test_plot_and_curve_options_are_checked(tmp_path, capsys):
    log = tmp_path / "log.msgpack"
    _log(log, n=10)
    assert cli.main(["replay", str(log), "--plot", str(tmp_path / "x.jpg")]) == 2
    assert "The '--plot' option must be a .png file name. Got" in capsys.readouterr().err
    # A CSV takes --curve too: its rows run through the pipeline, as a log's messages do.
    csv_path = tmp_path / "d.csv"
    csv_path.write_text("a,b,y\n1,2,1\n3,4,0\n")
    assert cli.main(["replay", str(csv_path), "--quiet", "--curve", str(tmp_path / "c.csv")]) == 0
    rows = (tmp_path / "c.csv").read_text().splitlines()
    assert rows[0].startswith("stream,reading,received_at,correct") and len(rows) == 3
    capsys.readouterr()
    with pytest.raises(SystemExit):
        cli.main(["replay", str(log), "--window", "0"])
    assert "The '--window' option must be an int in [1, 1000000]. Got '0'." in (
        capsys.readouterr().err)
