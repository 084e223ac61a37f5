"""Smoke test of tools/results_kelm.py on a small slice, and checks of its parts."""

import json
import re

import numpy as np
import pytest

from results_pages import cells, decimals, load_tool, sections


def test_quick_run_on_a_slice_writes_every_table_and_the_summary(tmp_path, capsys):
    script = load_tool("results_kelm")
    out = tmp_path / "report.md"
    assert script.main(["--quick", "--limit", "300", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    command = f"python tools/results_kelm.py --quick --limit 300 --out {out}"
    assert f"`{command}`" in text
    page = sections(text, level=None)
    table = {}
    for rate in ("10% labelled", "20% labelled"):
        rows = [line for line in page[rate].splitlines() if line.startswith("| ") and "---" not in line]
        assert [row.split(" | ")[0][2:] for row in rows[1:]] == list(script.METHODS)
        for row in rows[1:]:
            values = decimals(row)
            assert len(values) == 6 * 2 + 1, row  # mean ± std per metric, then the CPU ratio
            assert all(0.0 <= v <= 1.0 for v in values[:12]), row
            table[rate, row.split(" | ")[0][2:]] = row
        assert table[rate, "River CC"].endswith("| 1.00 |")
    verdict = page["Verdict"]
    aim = re.search(r"emotions, 20% labelled: micro-F1 KELM ([\d.]+), River CC ([\d.]+) \(([+-][\d.]+)\): "
                    r"\*\*(met|not met)\*\*", verdict)
    assert aim is not None
    ours, theirs = float(aim[1]), float(aim[2])
    assert aim[4] == ("met" if ours >= theirs else "not met")
    assert cells(table["20% labelled", "KELM"])[1].startswith(f"{ours:.3f} ±")  # micro-F1, the second metric
    assert cells(table["20% labelled", "River CC"])[1].startswith(f"{theirs:.3f} ±")
    assert len(re.findall(r"KELM is better than River (BR|CC) on \*\*\d of 6\*\* metrics", verdict)) == 4
    assert len(re.findall(r"\*\*(Met|Not met)\*\*", verdict)) == 2
    j0 = [line for line in page["emotions: J0"].splitlines() if re.match(r"\| \d", line)]
    assert len(j0) == 2 * 2 and sum("(default)" in line for line in j0) == 2  # two J0 at each rate
    cut = [line for line in page["emotions: cut"].splitlines() if re.match(r"\| [A-Zm]", line)]
    assert len(cut) == 2 * 2 and sum("(default)" in line for line in cut) == 2
    assert all(0.0 <= v <= 1.0 for line in j0 + cut for v in decimals(line)[-6:])
    # The headline rows beside the page, one per method, data set and rate.
    summary = json.loads((tmp_path / "docs" / "data" / "report.json").read_text(encoding="utf-8"))
    assert summary["command"] == command
    rows = summary["rows"]
    assert len(rows) == 2 * len(script.METHODS)
    by = {(r["protocol"], r["learner"]): r for r in rows}
    cc = by["multi-label KELM protocol, emotions, 20% labelled (runs 0-0)", "River CC"]
    kelm = by["multi-label KELM protocol, emotions, 20% labelled (runs 0-0)", "KELM"]
    assert (cc["library"], kelm["library"], kelm["label_rate"]) == ("river", "edgelearn", 0.2)
    assert round(kelm["metrics"]["micro_f1"], 3) == ours and round(cc["metrics"]["micro_f1"], 3) == theirs
    assert set(kelm["metrics"]) == set(script.MULTILABEL_METRICS) and kelm["cpu_us_per_instance"] > 0
    assert "emotions" in capsys.readouterr().err


def test_runs_are_reproducible_and_the_labelled_sets_nested():
    script = load_tool("results_kelm")
    order, rank = script.run_stream(500, 3, None)
    again, rank_again = script.run_stream(500, 3, None)
    np.testing.assert_array_equal(order, again)
    np.testing.assert_array_equal(rank, rank_again)
    assert sorted(order.tolist()) == list(range(500))
    ten, twenty = script.labelled_mask(rank, 0.1), script.labelled_mask(rank, 0.2)
    assert (ten.sum(), twenty.sum()) == (50, 100) and not (ten & ~twenty).any()
    other, _ = script.run_stream(500, 1003, None)  # a tuning seed: another stream
    assert not np.array_equal(order, other)
    limited, limited_rank = script.run_stream(500, 3, 120)
    np.testing.assert_array_equal(limited, order[:120])
    assert sorted(limited_rank.tolist()) == list(range(120))


def test_block_means_skip_the_first_and_incomplete_blocks():
    from edgelearn.metrics import multilabel_metrics

    script = load_tool("results_kelm")
    rng = np.random.default_rng(0)
    Y = rng.random((350, 4)) < 0.4
    scores = rng.normal(size=(350, 4))
    means = script.block_means(Y, scores > 0, scores, 100)
    blocks = [multilabel_metrics(Y[s:s + 100], scores[s:s + 100] > 0, scores[s:s + 100]) for s in (100, 200)]
    for name, value in means.items():
        assert value == pytest.approx(np.mean([b[name] for b in blocks]), abs=1e-12)


def test_wins_count_by_direction_of_each_metric():
    script = load_tool("results_kelm")
    better = {"hamming_loss": 0.1, "micro_f1": 0.9, "average_precision": 0.9, "ranking_loss": 0.1,
              "one_error": 0.1, "macro_auc": 0.4}
    worse = {"hamming_loss": 0.2, "micro_f1": 0.8, "average_precision": 0.8, "ranking_loss": 0.2,
             "one_error": 0.2, "macro_auc": 0.6}
    results = {0.1: {"KELM": {k: np.array([v]) for k, v in better.items()},
                     "River BR": {k: np.array([v]) for k, v in worse.items()}}}
    assert script.wins(results, 0.1, "KELM", "River BR") == [
        "hamming_loss", "micro_f1", "average_precision", "ranking_loss", "one_error"]
