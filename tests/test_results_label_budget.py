"""Smoke test of tools/results_label_budget.py on a tiny slice (two small
tasks, one seed per protocol, a short discount search)."""

import json
import re

import pytest

import edgelearn
from results_pages import cells, decimals, load_tool, row, sections


def test_tiny_run_writes_the_page_and_reuses_its_cache(tmp_path, capsys, monkeypatch):
    tool = load_tool("results_label_budget")
    out = tmp_path / "page.md"
    cache = tmp_path / "cache.json"
    # Two bisection steps for River's discount_factor instead of twelve.
    argv = ["--tasks", "spect", "ionosphere", "--multiclass-tasks", "dermatology", "--seeds", "1",
            "--discount-steps", "2", "--out", str(out), "--cache", str(cache)]
    assert tool.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert f"`python tools/results_label_budget.py {' '.join(argv)}`" in text
    page = sections(text, level=None)
    verdict = page["Verdict"]
    assert len(re.findall(r"^\* (paacds|haphazard): ActiveAROW", verdict, flags=re.M)) == 4
    # the 10% verdict: one line per protocol and task family, with the realized rate
    ten = re.findall(r"^\* (PAACDS protocol|haphazard inputs), (binary|multiclass) tasks: ActiveAROW at 10% "
                     r"\(realized ([0-9.]+)% of the labels", verdict, flags=re.M)
    assert len(ten) == 4 and all(8.0 < float(rate) < 16.0 for *_, rate in ten), ten
    assert "**The 10% aim is met**" in verdict or "**The 10% aim is not met**" in verdict
    assert (tmp_path / "page.png").stat().st_size > 10_000 and "](page.png)" in verdict
    met = "**The aim is met**" in verdict
    assert met or "**The aim is not met**" in verdict
    expected = "active_arow" if met else "paacds"
    assert f"the default learner kind is `{expected!r}`" in verdict
    assert ("(they agree)" in verdict) == (expected == edgelearn.DEFAULT_KIND)

    for title in ("F1", "accuracy", "balanced accuracy", "query rate"):
        section = page[title]
        for label in ("spect", "ionosphere", "**mean over 2 tasks**"):
            values = decimals(row(section, label))[:4]
            assert len(values) == 4 and all(0.0 <= v <= 100.0 for v in values), (title, label, values)
    # The headline rows for the leaderboard, beside the page, agree with its mean rows.
    summary = json.loads((tmp_path / "docs" / "data" / "page.json").read_text())
    assert summary["command"] == f"python tools/results_label_budget.py {' '.join(argv)}"
    binary = [r for r in summary["rows"] if "binary tasks" in r["protocol"]]
    by_key = {(r["protocol"].split(",")[1].split("(")[0].strip(), r["learner"]): r for r in binary}
    budgeted = {f"{m} {b}%" for m in ("ActiveAROW", "PAACDS") for b in (10, 5)} | {"ActiveAROW 10% before refit"}
    assert {learner for _, learner in by_key} == {"ActiveAROW", "River EntropySampler", "River LR (all labels)",
                                                 "PAACDS"} | budgeted
    assert len(binary) == 18
    multiclass = {r["learner"] for r in summary["rows"] if "multiclass tasks" in r["protocol"]}
    assert multiclass == {"ActiveAROW", "PAACDS", "River softmax (all labels)"} | budgeted
    for title, metric in (("F1", "f1"), ("accuracy", "accuracy"), ("balanced accuracy", "balanced_accuracy")):
        # page[title] is the last protocol's table: haphazard inputs
        means = decimals(row(page[title], "**mean over 2 tasks**"))[:4]
        for learner, value in zip(("ActiveAROW", "River EntropySampler", "River LR (all labels)", "PAACDS"), means):
            assert 100 * by_key[("haphazard inputs", learner)]["metrics"][metric] == pytest.approx(value, abs=0.051)
    assert by_key[("haphazard inputs", "River LR (all labels)")]["label_rate"] == 1.0
    assert by_key[("haphazard inputs", "River LR (all labels)")]["library"] == "river"
    assert by_key[("haphazard inputs", "ActiveAROW")]["cpu_us_per_instance"] > 0

    rates = cells(row(page["query rate"], "spect"))
    assert float(rates[2]) == 100.0  # River LR learns every label
    assert 10.0 < float(rates[0]) < 30.0  # ActiveAROW holds about 20%

    # Everything is cached now: a rebuild runs nothing.
    n_cached = len(json.loads(cache.read_text()))
    monkeypatch.setattr(tool, "run_one", lambda *a: (_ for _ in ()).throw(AssertionError("ran")))
    assert tool.main(argv) == 0
    assert len(json.loads(cache.read_text())) == n_cached
    assert "aim" in capsys.readouterr().err


def test_haphazard_stream_keeps_three_quarters_of_the_features():
    import numpy as np

    tool = load_tool("results_label_budget")
    X = np.arange(40000, dtype=float).reshape(2000, 20)
    y = np.arange(2000) % 2 == 0
    Xr, yr = tool.protocol_stream(X, y, "haphazard", 3)
    assert abs(np.isfinite(Xr).mean() - 0.75) < 0.01
    again, _ = tool.protocol_stream(X, y, "haphazard", 3)
    np.testing.assert_array_equal(np.isnan(Xr), np.isnan(again))
    # rows are shuffled with their labels
    rows = (np.nanmax(Xr, axis=1) // 20).astype(int)
    np.testing.assert_array_equal(yr, rows % 2 == 0)


def test_default_kind_follows_the_committed_pages_verdict():
    # The page computes the verdict from its numbers; DEFAULT_KIND must agree with it,
    # and the leaderboard's rows beside it must be the page's.
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    text = (root / "docs" / "results-label-budget.md").read_text(encoding="utf-8")
    verdict = sections(text, level=None)["Verdict"]
    met = "**The aim is met**" in verdict
    assert met or "**The aim is not met**" in verdict
    assert edgelearn.DEFAULT_KIND == ("active_arow" if met else "paacds")
    assert "(they agree)" in verdict
    summary = json.loads((root / "docs" / "data" / "results-label-budget.json").read_text(encoding="utf-8"))
    assert summary["page"] == "docs/results-label-budget.md"
    assert summary["command"] in text
    ours = [r for r in summary["rows"] if r["learner"] == "ActiveAROW" and "binary tasks" in r["protocol"]]
    assert len(ours) == 2
    means = decimals(row(sections(text, level=None)["F1"], "**mean over 13 tasks**"))
    assert 100 * ours[1]["metrics"]["f1"] == pytest.approx(means[0], abs=0.051)
