"""tools/results_nab.py and tools/results_faults.py on tiny inputs: they run, and their
pages say what the aims are and report every detector they ran."""

from results_pages import load_tool, sections


def test_results_nab_runs_on_a_few_series(tmp_path):
    tool = load_tool("results_nab")
    out = tmp_path / "nab.md"
    assert tool.main(["--series", "3", "--river", "sad", "--variants", "2", "--out", str(out)]) == 0
    page = out.read_text()
    parts = sections(page)
    assert "NAB standard profile, optimized threshold, at least 70.5" in parts["Aims"]
    assert "| SurpriseDetector (default) |" in parts["SurpriseDetector and the variants tried"]
    assert "| River StandardAbsoluteDeviation |" in parts["River's detectors, same harness"]
    assert "| CAD OSE | 69.9 |" in page
    assert "exactly the array loop's scores on every series: yes" in page


def test_results_faults_runs_on_a_short_stream(tmp_path):
    tool = load_tool("results_faults")
    out = tmp_path / "faults.md"
    assert tool.main(["--rows", "3000", "--seeds", "0", "--faults", "5", "--river", "hst",
                      "--out", str(out)]) == 0
    page = out.read_text()
    parts = sections(page)
    assert "Held out (Statlog Shuttle): own alarms against River HalfSpaceTrees" in parts["Aims"]
    held_out = parts["Held out: Statlog Shuttle (river.datasets.Shuttle)"]
    assert "| SurpriseDetector (defaults) | 10% missing |" in held_out
    assert "| River HalfSpaceTrees | as is |" in held_out
    assert "| SurpriseDetector (defaults) |" in parts["occupancy: dropouts only"]
    assert "| River HalfSpaceTrees |" in parts["room_occupancy: dropouts and 10% of readings missing at random"]


def test_fault_injection_marks_what_it_changes():
    import numpy as np

    tool = load_tool("results_faults")
    X = np.random.default_rng(0).normal(size=(2000, 3))
    Y, faults = tool.inject(X, 5, np.random.default_rng(1))
    assert sorted(f[0] for f in faults) == sorted(tool.KINDS)
    changed = np.flatnonzero(np.any(Y != X, axis=1))
    spans = [(s, e) for _, _, s, e in faults]
    assert all(any(s <= i < max(e, s + 1) for s, e in spans) for i in changed)
    # scoring by event: one alarm in each fault and one outside
    alarms = np.zeros(2000, dtype=bool)
    for _, _, s, _ in faults:
        alarms[s] = True
    alarms[5] = True
    r = tool.event_scores(alarms, faults)
    assert r["recall"] == 1.0 and r["precision"] == 5 / 6 and r["delay"] == 0.0
    # a detector alarming on every reading: perfect recall, precision the faulty share
    r = tool.event_scores(np.ones(2000, dtype=bool), faults)
    inside = np.zeros(2000, dtype=bool)
    for _, _, s, e in faults:
        inside[s:e + tool.GRACE + 1] = True
    assert r["recall"] == 1.0 and r["precision"] == inside.mean() < 1.0
