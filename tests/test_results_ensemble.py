"""Smoke test of tools/results_ensemble.py on a small slice of its protocol."""

import json

import pytest

from results_pages import cells, load_tool, row, sections


def test_results_ensemble_on_a_slice(tmp_path, monkeypatch):
    script = load_tool("results_ensemble")
    out, cache = tmp_path / "ensemble.md", tmp_path / "cache.json"
    argv = ["--n", "1200", "--streams", "sea,led_abrupt", "--models", "ac_oe_kelm,ac_oe_nb",
            "--compare-n", "800", "--compare-models", "ac_oe_kelm,hoeffding_tree",
            "--cache", str(cache), "--out", str(out)]
    assert script.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert f"`python tools/results_ensemble.py {' '.join(argv)}`" in text
    page = sections(text)
    paper = sections(page["Beside the paper: 1,200 instances per stream"], level=3)
    sea = cells(row(paper["Average real-time accuracy (chunks of 100)"], "SEA"))
    assert float(sea[0]) == script.PAPER["sea"]
    assert len(sea) == 3 and all(0.0 <= float(v) <= 1.0 for v in sea[1:])
    assert float(sea[1]) > 0.7  # a learner, not a coin
    assert len(cells(row(paper["Recovery (RSA) after each drift point"], "SEA"))[0].split(" / ")) == 3
    compare = sections(page["Beside River's ensembles: 800 instances per stream"], level=3)
    assert len(cells(row(compare["Average real-time accuracy (chunks of 100)"], "LED abrupt"))) == 2
    assert "beats the paper's AC_OE on" in page["Verdict"]
    assert set(json.loads(cache.read_text())) == {
        f"{s}|{m}|{n}|0" for s in ("sea", "led_abrupt")
        for m, n in (("ac_oe_kelm", 1200), ("ac_oe_nb", 1200), ("ac_oe_kelm", 800), ("hoeffding_tree", 800))
    }
    # A second run takes every result from the cache (running one would fail) and
    # reports the same numbers.
    def no_runs(*args):
        raise AssertionError(f"ran {args} though the cache had it")

    monkeypatch.setattr(script, "run_one", no_runs)
    again = tmp_path / "again.md"
    assert script.main([*argv[:-1], str(again)]) == 0
    paper_again = sections(sections(again.read_text())["Beside the paper: 1,200 instances per stream"], level=3)
    assert cells(row(paper_again["Average real-time accuracy (chunks of 100)"], "SEA")) == sea


def test_results_ensemble_rejects_unknown_streams(capsys):
    script = load_tool("results_ensemble")
    with pytest.raises(SystemExit) as exit:
        script.main(["--streams", "sea,covertype"])
    assert exit.value.code == 2
    assert "--streams must be a comma-separated subset of" in capsys.readouterr().err
