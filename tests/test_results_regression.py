"""Smoke test of tools/results_regression.py on a tiny slice (River's two small
regression sets, one seed)."""

import json
import math

from results_pages import cells, load_tool, row, sections


def test_tiny_run_writes_the_page_and_reuses_its_cache(tmp_path, monkeypatch):
    tool = load_tool("results_regression")
    out, cache = tmp_path / "page.md", tmp_path / "cache.json"
    argv = ["--tasks", "chick_weights", "trump_approval", "--seeds", "1", "--out", str(out), "--cache", str(cache)]
    assert tool.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert f"`python tools/results_regression.py {' '.join(argv)}`" in text
    page = sections(text)
    verdict = page["Verdict"]
    for task in ("chick_weights", "trump_approval"):
        mae, lr, ratio, coverage, refs, aim, best = cells(row(verdict, task))
        assert best.split(",")[0] in ("LinearRegression", "PARegressor", "ARFRegressor")
        # the ratio (3 decimals) of the two MAEs (4 significant digits each)
        assert math.isclose(float(ratio), float(mae) / float(lr), rel_tol=2e-3, abs_tol=1e-3)
        assert 0.0 < float(coverage) <= 100.0
        assert float(refs) <= 20.0  # the token bucket: never more than the budget
        assert aim == "met" or aim.startswith("not met (")
        # the verdict is computed from the numbers it shows
        met = float(ratio) <= 1.0 and 85.0 <= float(coverage) <= 95.0 and float(refs) <= 20.0
        assert (aim == "met") == met, (task, aim)
    assert "The aim is met on" in verdict
    refs = page["References used (%)"]
    for task in ("chick_weights", "trump_approval"):
        values = [float(v) for v in cells(row(refs, task))]
        assert values[2:] == [100.0] * 4  # every reference: ours, River's three
        assert 18.0 <= values[0] <= 20.0 and 18.0 <= values[1] <= 20.0
    cpu = [float(v) for v in cells(row(page["CPU time per reading (µs)"], "trump_approval"))]
    assert all(v > 0 for v in cpu)
    assert "What was tuned on what" in page

    # Everything is cached now: a rebuild runs nothing.
    n_cached = len(json.loads(cache.read_text()))
    monkeypatch.setattr(tool, "run_one", lambda *a: (_ for _ in ()).throw(AssertionError("ran")))
    assert tool.main(argv) == 0
    assert len(json.loads(cache.read_text())) == n_cached
