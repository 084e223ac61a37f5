"""Smoke tests of tools/results_pafe.py and tools/results_synthesis.py on tiny
slices of their protocols."""

import importlib.util
import re
from pathlib import Path

import numpy as np

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def _load(name):
    # tools/ is a folder of scripts, not a package: load each by path.
    spec = importlib.util.spec_from_file_location(f"_tools_{name}", TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sections(text):
    parts = re.split(r"^## ", text, flags=re.M)
    return {part.splitlines()[0]: part for part in parts[1:]}


def _row(section, label):
    rows = [line for line in section.splitlines() if line.startswith(f"| {label} |")]
    assert len(rows) == 1, (label, section)
    return rows[0]


def _decimals(row):
    return [float(v) for v in re.findall(r"(?<![\d.])\d+\.\d+", row)]


def test_results_pafe_on_a_slice(tmp_path, capsys):
    script = _load("results_pafe")
    out = tmp_path / "pafe.md"
    argv = ["--tasks", "pima", "--runs", "2", "--long-overlap", "30", "--occupancy-rows", "3000",
            "--out", str(out)]
    assert script.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert f"`python tools/results_pafe.py {' '.join(argv)}`" in text
    sections = _sections(text)
    values = _decimals(_row(sections["Accuracy over period 2"], "pima"))
    assert len(values) == 2 * len(script.METHODS) and all(0.0 <= v <= 1.0 for v in values)
    assert len(_decimals(_row(sections["Not told T2 (doubling trick)"], "pima"))) == 4
    assert len(_decimals(_row(sections["Beyond the paper: an overlap of 30 rows"], "pima"))) == 2 * len(script.LONG)
    occupancy = sections["Occupancy: one sensor set replaced by another"]
    for method in script.OCCUPANCY_METHODS:
        assert len(_decimals(_row(occupancy, method))) == 2 * 4  # whole period and 3 windows
    verdict = sections["Verdict"]
    assert re.search(r"found the overlap at row T1 - 10 and the second period at row T1 in \d of 2 runs", verdict)
    assert "pima" in capsys.readouterr().err


def test_pafe_protocol_stream_layout_and_seeds():
    script = _load("results_pafe")
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
    script = _load("results_synthesis")
    out = tmp_path / "synthesis.md"
    argv = ["--repetitions", "2", "--n", "1500", "--out", str(out)]
    assert script.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert f"`python tools/results_synthesis.py {' '.join(argv)}`" in text
    sections = _sections(text)
    for noise in ("0%", "10%", "40%"):
        values = _decimals(_row(sections["Accuracy"], noise))
        assert len(values) == 2 * len(script.METHODS) and all(0.0 <= v <= 1.0 for v in values)
    beside = sections["Beside the paper (Table 1)"]
    assert "0.840" in _row(beside, "10%") and "—" in _row(beside, "0%")
    verdict = sections["Verdict"]
    assert re.search(r"SynthesisNB \(num=5, paper\) \*\*(beats|does not beat)\*\*", verdict)
    assert "noise 40%" in capsys.readouterr().err
