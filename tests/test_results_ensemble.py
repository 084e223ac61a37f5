"""Smoke test of tools/results_ensemble.py on a small slice of its protocol."""

import importlib.util
import json
import re
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def _load(name):
    # tools/ is a folder of scripts, not a package: load it by path.
    spec = importlib.util.spec_from_file_location(f"_tools_{name}", TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sections(text):
    parts = re.split(r"^## ", text, flags=re.M)
    return {part.splitlines()[0]: part for part in parts[1:]}


def _subsections(section):
    parts = re.split(r"^### ", section, flags=re.M)
    return {part.splitlines()[0]: part for part in parts[1:]}


def _row(section, label):
    rows = [line for line in section.splitlines() if line.startswith(f"| {label} |")]
    assert len(rows) == 1, (label, section)
    return [cell.strip().strip("*") for cell in rows[0].strip("|").split("|")][1:]


def test_results_ensemble_on_a_slice(tmp_path):
    script = _load("results_ensemble")
    out, cache = tmp_path / "ensemble.md", tmp_path / "cache.json"
    argv = ["--n", "1200", "--streams", "sea,led_abrupt", "--models", "ac_oe_kelm,ac_oe_nb",
            "--compare-n", "800", "--compare-models", "ac_oe_kelm,hoeffding_tree",
            "--cache", str(cache), "--out", str(out)]
    assert script.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert f"`python tools/results_ensemble.py {' '.join(argv)}`" in text
    sections = _sections(text)
    paper = _subsections(sections["Beside the paper: 1,200 instances per stream"])
    sea = _row(paper["Average real-time accuracy (chunks of 100)"], "SEA")
    assert float(sea[0]) == script.PAPER["sea"]
    assert len(sea) == 3 and all(0.0 <= float(v) <= 1.0 for v in sea[1:])
    assert float(sea[1]) > 0.7  # a learner, not a coin
    assert len(_row(paper["Recovery (RSA) after each drift point"], "SEA")[0].split(" / ")) == 3
    compare = _subsections(sections["Beside River's ensembles: 800 instances per stream"])
    assert len(_row(compare["Average real-time accuracy (chunks of 100)"], "LED abrupt")) == 2
    assert "beats the paper's AC_OE on" in sections["Verdict"]
    assert set(json.loads(cache.read_text())) == {
        f"{s}|{m}|{n}|0" for s in ("sea", "led_abrupt")
        for m, n in (("ac_oe_kelm", 1200), ("ac_oe_nb", 1200), ("ac_oe_kelm", 800), ("hoeffding_tree", 800))
    }
    # A second run takes every result from the cache and reports the same numbers.
    again = tmp_path / "again.md"
    assert script.main([*argv[:-1], str(again)]) == 0
    paper_again = _subsections(_sections(again.read_text())["Beside the paper: 1,200 instances per stream"])
    assert _row(paper_again["Average real-time accuracy (chunks of 100)"], "SEA") == sea


def test_results_ensemble_rejects_unknown_streams(capsys):
    script = _load("results_ensemble")
    try:
        script.main(["--streams", "sea,covertype"])
    except SystemExit as exit:
        assert exit.code == 2
    assert "--streams must be a comma-separated subset of" in capsys.readouterr().err
