"""tools/leaderboard.py on tiny folders of summaries, and the results tools that feed it."""

from pathlib import Path

import pytest

from results_pages import TOOLS, cells, load_tool, row, sections

leaderboard = load_tool("leaderboard")
summaries = load_tool("summaries")

PAACDS = "label budget 20%, PAACDS protocol (13 binary tasks, seeds 0-9)"
HAPHAZARD = "label budget 20%, haphazard inputs (13 binary tasks, seeds 0-4)"


def budget_rows(arow_accuracy_haphazard=0.816):
    """A label-budget summary in which ActiveAROW is at least both rivals, unless
    ``arow_accuracy_haphazard`` says otherwise (River LR has 0.81 there)."""
    rows = []
    for protocol, arow_accuracy in ((PAACDS, 0.83), (HAPHAZARD, arow_accuracy_haphazard)):
        rows += [
            {"protocol": protocol, "learner": "ActiveAROW", "library": "edgelearn",
             "metrics": {"f1": 0.78, "accuracy": arow_accuracy}, "label_rate": 0.205,
             "cpu_us_per_instance": 4.0},
            {"protocol": protocol, "learner": "River EntropySampler", "library": "river",
             "metrics": {"f1": 0.75, "accuracy": 0.80}, "label_rate": 0.21, "cpu_us_per_instance": 80.0},
            {"protocol": protocol, "learner": "River LR (all labels)", "library": "river",
             "metrics": {"f1": 0.77, "accuracy": 0.81}, "label_rate": 1.0, "cpu_us_per_instance": 40.0},
        ]
    return rows


def write(root, stem, rows, page=True):
    summaries.write_summary(stem, f"python tools/{stem.replace('-', '_')}.py", rows, root=root)
    if page:
        (root / "docs" / f"{stem}.md").write_text(f"# {stem}\n")


def aim_line(text, item):
    [line] = [l for l in sections(text)["The aims of issue 13"].splitlines()
              if l.startswith(f"* **Item {item}**")]
    return line


def test_a_verdict_flips_when_a_number_flips(tmp_path):
    write(tmp_path, "results-label-budget", budget_rows())
    text = leaderboard.render(tmp_path)
    line = aim_line(text, "2")
    assert "**Met** (8 of 8 comparisons" in line
    assert f"{HAPHAZARD}: accuracy 0.816 vs River LR (all labels) 0.810 (+0.006)" in line  # the closest

    write(tmp_path, "results-label-budget", budget_rows(arow_accuracy_haphazard=0.804))
    line = aim_line(leaderboard.render(tmp_path), "2")
    assert ("**Not met**: short in 1 of 8 comparisons: "
            f"{HAPHAZARD}: accuracy 0.804 vs River LR (all labels) 0.810 (-0.006). All:") in line


def test_protocol_tables_list_every_row_best_first_with_command_and_page(tmp_path):
    write(tmp_path, "results-label-budget", budget_rows())
    page = sections(leaderboard.render(tmp_path))
    tables = sections(page["results-label-budget"], level=3)
    table = tables[PAACDS]
    learners = [line.split("|")[1].strip() for line in table.splitlines()[4:] if line.startswith("| ")]
    assert learners == ["ActiveAROW", "River LR (all labels)", "River EntropySampler"]
    arow = cells(row(table, "ActiveAROW"))
    assert arow[:4] == ["edgelearn", "0.780", "0.830", "20.5%"]
    # CPU as a ratio to the first River row of the same run.
    assert arow[4] == "4.00 (0.05× River EntropySampler)"
    assert arow[5] == "[results-label-budget](results-label-budget.md)"
    assert arow[6] == "`python tools/results_label_budget.py`"


def test_a_missing_summary_is_listed_as_missing_never_invented(tmp_path):
    write(tmp_path, "results-label-budget", budget_rows())
    text = leaderboard.render(tmp_path)
    pages = sections(text)["Pages"]
    drift = cells(row(pages, "results-drift (no page)"))
    assert drift == ["missing", "—", "—", "`make results-drift`"]
    assert "results-drift" not in sections(text)  # no table of invented rows
    line = aim_line(text, "5")
    assert "**Cannot be judged**: the summary of results-drift is missing (`make results-drift` writes it)" in line
    assert "Computed from the rows below: 1 met, 0 not met, 3 cannot be judged" in text


def test_missing_rows_and_protocols_are_named(tmp_path):
    protocol = "PAFE protocol, X2 = X1 G with a 10-row overlap, 5 data sets"
    rows = [{"protocol": protocol, "learner": learner, "library": "edgelearn", "metrics": {"accuracy": 0.7}}
            for learner in ("PAFE (defaults)", "fresh PA-I")]
    write(tmp_path, "results-pafe", rows, page=False)
    line = aim_line(leaderboard.render(tmp_path), "6 (PAFE)")
    assert "**Cannot be judged**" in line
    assert f"""{protocol} has no row "fresh PA-I, PAFE's C" (its rows: 'PAFE (defaults)', 'fresh PA-I')""" in line
    # The other way round: the rows are there, the protocol the aim names is not.
    write(tmp_path, "results-pafe", [dict(r, protocol="PAFE protocol, X2 = X1 G with a 50-row overlap")
                                     for r in rows], page=False)
    line = aim_line(leaderboard.render(tmp_path), "6 (PAFE)")
    assert "no protocol of results-pafe names 'x2 = x1 g' and '10-row overlap'" in line


def test_two_rows_of_one_learner_in_a_protocol_are_not_judged(tmp_path):
    rows = budget_rows()
    write(tmp_path, "results-label-budget", rows + [dict(rows[0], metrics={"f1": 0.1, "accuracy": 0.1})])
    line = aim_line(leaderboard.render(tmp_path), "2")
    assert "**Cannot be judged**" in line and f"{PAACDS} has more than one row named 'ActiveAROW'" in line


def test_cpu_ratio_and_lower_is_better(tmp_path):
    def drift(cpu_ours):
        return [{"protocol": f"{stream}, 10 seeds", "learner": learner, "library": library,
                 "metrics": {"accuracy": accuracy}, "cpu_us_per_instance": cpu}
                for stream in ("SEA (ConceptDriftStream)", "Hyperplane", "Electricity")
                for learner, library, accuracy, cpu in (("OnlineEnsemble (defaults)", "edgelearn", 0.9, cpu_ours),
                                                        ("River ARF", "river", 0.89, 100.0))]

    write(tmp_path, "results-drift", drift(cpu_ours=9.0))
    assert "**Met** (6 of 6 comparisons" in aim_line(leaderboard.render(tmp_path), "5")
    write(tmp_path, "results-drift", drift(cpu_ours=12.0))
    line = aim_line(leaderboard.render(tmp_path), "5")
    assert "**Not met**: short in 3 of 6 comparisons: SEA (ConceptDriftStream), 10 seeds: " in line
    assert "OnlineEnsemble (defaults)'s CPU per instance 0.120 of River ARF's (at most 0.10)" in line

    # Hamming loss is marked as better lower.
    write(tmp_path, "results-kelm", [
        {"protocol": "yeast, 20% labelled", "learner": name, "library": library,
         "metrics": {"micro_f1": f1, "hamming_loss": loss}}
        for name, library, f1, loss in (("KELM", "edgelearn", 0.60, 0.25), ("River CC", "river", 0.59, 0.21))])
    text = leaderboard.render(tmp_path)
    table = sections(sections(text)["results-kelm"], level=3)["yeast, 20% labelled"]
    assert "hamming loss ↓" in table
    assert "no protocol of results-kelm names 'emotions' and '20%'" in aim_line(text, "6 (KELM)")


def test_main_writes_the_page(tmp_path):
    write(tmp_path, "results-label-budget", budget_rows())
    assert leaderboard.main(["--root", str(tmp_path)]) == 0
    text = (tmp_path / "docs" / "leaderboard.md").read_text(encoding="utf-8")
    assert text.startswith("# Leaderboard") and "`python tools/leaderboard.py`" in text


@pytest.fixture
def tools_on_path(monkeypatch):
    # The results tools run as scripts, with tools/ on sys.path for `summaries`.
    monkeypatch.syspath_prepend(str(TOOLS))


def test_results_tools_write_the_summaries_beside_their_pages(tmp_path, tools_on_path):
    docs = tmp_path / "docs"
    synthesis = load_tool("results_synthesis")
    argv = ["--repetitions", "1", "--n", "300", "--out", str(docs / "results-synthesis.md")]
    assert synthesis.main(argv) == 0
    paacds = load_tool("results_paacds")
    assert paacds.main(["--quick", "--tasks", "spect", "--out", str(docs / "results-paacds.md")]) == 0
    documents = {d["page"]: d for d in summaries.read_summaries(tmp_path)}
    assert set(documents) == {"docs/results-synthesis.md", "docs/results-paacds.md"}
    assert documents["docs/results-synthesis.md"]["command"] == (
        "python tools/results_synthesis.py " + " ".join(argv))
    rows = documents["docs/results-synthesis.md"]["rows"]
    assert len({r["protocol"] for r in rows}) == len(synthesis.NOISE_LEVELS)
    # The page's own table: the 10% row's cells are the methods' mean accuracies, in METHODS' order.
    page = sections((docs / "results-synthesis.md").read_text(encoding="utf-8"))
    ten = [r for r in rows if r["protocol"].startswith("SSBOIL moving hyperplane, 10%")]
    for method in ("SynthesisNB", "SynthesisNB defaults", "River PA-I"):
        ours = next(r for r in ten if r["learner"] == synthesis.HEADINGS[method])
        cell = cells(row(page["Accuracy"], "10%"))[synthesis.METHODS.index(method)]
        assert f"{ours['metrics']['accuracy']:.3f}" == cell.split(" ±")[0]
    assert next(r for r in ten if r["learner"] == synthesis.HEADINGS["River PA-I"])["library"] == "river"
    assert next(r for r in ten if r["learner"] == "paper SSBOIL")["metrics"] == {"accuracy": 0.84}

    rows = documents["docs/results-paacds.md"]["rows"]
    by_learner = {r["learner"]: r for r in rows}
    assert by_learner["River StandardScaler+PA-I (all labels)"]["library"] == "river"
    assert by_learner["River StandardScaler+PA-I (all labels)"]["label_rate"] == 1.0
    assert 0.1 < by_learner["PAACDS (~20% labels)"]["label_rate"] < 0.35
    assert by_learner["paper PAACDS (~20% labels)"]["library"] == "paper"

    text = leaderboard.render(tmp_path)
    assert "[results-paacds](results-paacds.md)" in text
    assert "SSBOIL moving hyperplane, 40% label noise (1 seed(s) x 300 instances)" in sections(text, level=3)


def test_results_ensemble_writes_its_summary_from_a_run_or_a_complete_cache(tmp_path, tools_on_path,
                                                                          monkeypatch):
    ensemble = load_tool("results_ensemble")
    out, cache = tmp_path / "docs" / "results-ensemble.md", tmp_path / "cache.json"
    argv = ["--n", "400", "--compare-n", "400", "--streams", "sea", "--models", "ac_oe_nb",
            "--compare-models", "ac_oe_nb,hoeffding_tree", "--cache", str(cache), "--out", str(out)]
    assert ensemble.main(argv) == 0
    [document] = summaries.read_summaries(tmp_path)
    # The two runs stay apart even at the same length.
    rows = {(r["protocol"].split(", mean")[0], r["learner"], r["library"]): r for r in document["rows"]}
    assert len(rows) == len(document["rows"])
    paper, river = "AC_OE protocol beside the paper", "AC_OE protocol beside River's ensembles"
    assert set(rows) == {(paper, "OnlineEnsemble (nb)", "edgelearn"), (paper, "paper AC_OE", "paper"),
                         (river, "OnlineEnsemble (nb)", "edgelearn"), (river, "River HoeffdingTree", "river")}
    assert rows[(paper, "paper AC_OE", "paper")]["metrics"] == {"avg_realtime_accuracy": ensemble.PAPER["sea"]}
    # The page's mean row shows the same average real-time accuracy.
    page = sections(sections(out.read_text())["Beside the paper: 400 instances per stream"], level=3)
    ours = rows[(paper, "OnlineEnsemble (nb)", "edgelearn")]["metrics"]["avg_realtime_accuracy"]
    assert cells(row(page["Average real-time accuracy (chunks of 100)"], "mean"))[1] == f"{ours:.4f}"
    # With every run cached, the summary is rewritten without running anything.
    (tmp_path / "docs" / "data" / "results-ensemble.json").unlink()
    monkeypatch.setattr(ensemble, "run_one", lambda *args: pytest.fail(f"ran {args}"))
    assert ensemble.main(argv) == 0
    assert summaries.read_summaries(tmp_path)[0]["rows"] == document["rows"]


def test_a_page_outside_docs_writes_no_summary(tmp_path, tools_on_path):
    synthesis = load_tool("results_synthesis")
    assert synthesis.main(["--repetitions", "1", "--n", "300", "--out", str(tmp_path / "s.md")]) == 0
    assert not (tmp_path / "data").exists() and not list(tmp_path.rglob("*.json"))


def test_the_repository_summaries_are_valid_and_the_page_is_current():
    # Every committed summary reads back; the committed page names every one of them.
    root = TOOLS.parent
    text = (root / "docs" / "leaderboard.md").read_text(encoding="utf-8")
    for document in summaries.read_summaries(root):
        stem = Path(document["page"]).stem
        assert f"| [{stem}]({stem}.md) | docs/data/{stem}.json |" in text
