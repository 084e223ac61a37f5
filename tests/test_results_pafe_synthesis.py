"""Smoke tests of tools/results_pafe.py and tools/results_synthesis.py on tiny
slices of their protocols."""

import json
import re

import numpy as np

import pytest
from results_pages import decimals, load_tool, row, sections


def test_results_pafe_on_a_slice(tmp_path, capsys):
    script = load_tool("results_pafe")
    out = tmp_path / "docs" / "results-pafe.md"
    argv = ["--tasks", "pima", "--runs", "2", "--long-overlap", "30", "--occupancy-rows", "3000",
            "--out", str(out)]
    assert script.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert f"`python tools/results_pafe.py {' '.join(argv)}`" in text
    page = sections(text)
    values = decimals(row(page["Accuracy over period 2"], "pima"))
    assert len(values) == 2 * len(script.METHODS) and all(0.0 <= v <= 1.0 for v in values)
    assert len(decimals(row(page["Not told T2 (doubling trick)"], "pima"))) == 4
    assert len(decimals(row(page["Beyond the paper: an overlap of 30 rows"], "pima"))) == 2 * len(script.LONG + script.DEFAULT_ROWS)
    occupancy = page["Occupancy: one sensor set replaced by another"]
    for method in script.OCCUPANCY_METHODS:
        assert len(decimals(row(occupancy, method))) == 2 * 4  # whole period and 3 windows
    defaults = page["PAFE at its defaults against a fresh PA-I"]
    values = decimals(row(defaults, "pima"))
    assert len(values) == 2 * len(script.DEFAULT_ROWS) + len(script.FRESH_METHODS)
    gaps = values[-2:]
    assert [abs(g) for g in gaps] == pytest.approx([abs(values[0] - values[2]), abs(values[0] - values[4])], abs=1.5e-3)
    for gap, cell in zip(gaps, row(defaults, "pima").split("|")[-3:-1]):
        assert ("**not met**" in cell) == (cell.strip().split()[-1].startswith("-"))
    verdict = page["Verdict"]
    assert len(re.findall(r"Aim: PAFE at its defaults never loses", verdict)) == 2
    assert re.search(r"PAFE \(defaults\) [\d.]+ µs \([\d.]+×\)", verdict)
    # The headline rows beside the page, for the leaderboard.
    summary = json.loads((tmp_path / "docs" / "data" / "results-pafe.json").read_text(encoding="utf-8"))
    assert summary["page"] == "docs/results-pafe.md" and summary["command"] == f"python tools/results_pafe.py {' '.join(argv)}"
    learners = {(r["protocol"].split(";")[0], r["learner"]) for r in summary["rows"]}
    assert len(learners) == len(summary["rows"])
    for name in (script.DEFAULTS, "PAFE-c", "PA-I", script.FRESH):
        assert any(learner == name for _, learner in learners)
    main_rows = [r for r in summary["rows"] if "10-row overlap" in r["protocol"]]
    assert all(0 < r["metrics"]["accuracy"] <= 1 and r["cpu_us_per_instance"] > 0 for r in main_rows)
    assert re.search(r"found the overlap at row T1 - 10 and the second period at row T1 in \d of 2 runs", verdict)
    assert "pima" in capsys.readouterr().err


def test_pafe_protocol_stream_layout_and_seeds():
    script = load_tool("results_pafe")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(41, 3)) * [1, 10, 100]
    y = rng.random(41) < 0.5
    Z, yr, names, t1 = script.evolved_stream(X, y, 3, 10)
    assert t1 == 20 and names == ["old_0", "old_1", "old_2", "new_0", "new_1", "new_2"]
    present = ~np.isnan(Z)
    assert present[:20, :3].all() and not present[20:, :3].any()
    assert present[10:, 3:].all() and not present[:10, 3:].any()
    assert np.nanmin(Z[:, :3]) >= 0.0 and np.nanmax(Z[:, :3]) <= 1.0  # scaled to [0, 1]
    again = script.evolved_stream(X, y, 3, 10)
    np.testing.assert_array_equal(Z, again[0])
    np.testing.assert_array_equal(yr, again[1])
    other = script.evolved_stream(X, y, 4, 10)
    assert not np.allclose(np.nan_to_num(Z), np.nan_to_num(other[0]))
    # Every row survives the shuffle with its own label.
    rows = {tuple(np.round(r, 9)): bool(v) for r, v in zip(script.min_max(X), y)}
    for row, label in zip(Z[:20, :3], yr[:20]):
        assert rows[tuple(np.round(row, 9))] == label


def test_results_synthesis_on_a_slice(tmp_path, capsys):
    script = load_tool("results_synthesis")
    out = tmp_path / "synthesis.md"
    argv = ["--repetitions", "2", "--n", "1500", "--out", str(out)]
    assert script.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert f"`python tools/results_synthesis.py {' '.join(argv)}`" in text
    page = sections(text)
    for noise in ("0%", "10%", "40%"):
        values = decimals(row(page["Accuracy"], noise))
        assert len(values) == 2 * len(script.METHODS) and all(0.0 <= v <= 1.0 for v in values)
    beside = page["Beside the paper (Table 1)"]
    assert "0.840" in row(beside, "10%") and "—" in row(beside, "0%")
    verdict = page["Verdict"]
    assert re.search(r"SynthesisNB \(num=5, paper\) \*\*(beats|does not beat)\*\*", verdict)
    assert "noise 40%" in capsys.readouterr().err
