"""Smoke test of tools/results_drift.py on tiny streams."""

import json

import pytest

from results_pages import cells, decimals, load_tool, row, sections


def test_results_drift_on_tiny_streams(tmp_path, monkeypatch):
    script = load_tool("results_drift")
    out, cache = tmp_path / "docs" / "results-drift.md", tmp_path / "cache.json"
    argv = ["--n", "400", "--elec2-n", "400", "--seeds", "3", "--cache", str(cache), "--out", str(out)]
    assert script.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    shown = " ".join(argv).replace(str(cache), "FILE")
    assert f"`python tools/results_drift.py {shown}`" in text and str(cache) not in text
    page = sections(text)
    accuracy = page["Prequential accuracy (mean over seeds)"]
    for stream in script.STREAM_NAMES.values():
        values = decimals(row(accuracy, stream))
        assert len(values) == 3 and all(0.0 <= v <= 1.0 for v in values)
    assert decimals(row(accuracy, "Electricity"))[0] > 0.7  # a learner, not a coin
    timing = page["CPU µs per instance (predict and learn) and the ratio to ARF"]
    us = [float(v.replace(",", "")) for v in cells(row(timing, "all streams"))]
    assert all(v > 0 for v in us) and us[3] == pytest.approx(us[0] / us[2], abs=0.002)
    verdict = page["Verdict"]
    assert "Accuracy aim" in verdict and "Time aim" in verdict and "of 3 streams" in verdict
    # The headline rows beside the page, one per learner per stream.
    summary = json.loads((tmp_path / "docs" / "data" / "results-drift.json").read_text())
    assert summary["page"] == "docs/results-drift.md" and summary["command"].endswith(shown)
    assert len(summary["rows"]) == 9
    assert {r["library"] for r in summary["rows"]} == {"edgelearn", "river"}
    assert all(r["cpu_us_per_instance"] > 0 and r["label_rate"] == 1.0 for r in summary["rows"])
    # A second run takes every result from the cache and writes the same numbers.
    def no_runs(*args):
        raise AssertionError(f"ran {args} though the cache had it")

    monkeypatch.setattr(script, "run_one", no_runs)
    assert script.main(argv) == 0
    assert sections(out.read_text())["Prequential accuracy (mean over seeds)"] == accuracy


def test_results_drift_rejects_bad_arguments(capsys):
    script = load_tool("results_drift")
    for argv, message in ((["--streams", "sea,covertype"], "--streams must be a comma-separated subset of"),
                          (["--models", "ac_oe"], "--models must contain oe and arf"),
                          (["--seeds", "a"], "--seeds must be comma-separated non-negative integers"),
                          (["--n", "10"], "--n must be at least 400")):
        with pytest.raises(SystemExit) as exit:
            script.main(argv)
        assert exit.value.code == 2
        assert message in capsys.readouterr().err
