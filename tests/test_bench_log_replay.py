"""tools/bench_log_replay.py on tiny inputs: it writes the whole page."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import bench_log_replay  # noqa: E402


def test_the_tool_writes_its_page(tmp_path):
    out = tmp_path / "page.md"
    assert bench_log_replay.main(["--n", "400", "--per-message-n", "100", "--logs", "0",
                                  "--command-n", "300", "--command-d", "4", "--rounds", "1",
                                  "--out", str(out)]) == 0
    page = out.read_text()
    assert page.startswith("# Log replay")
    for kind in ("active_arow", "paacds"):
        assert f"| {kind} | msgpack log, jitted (`edgelearn replay LOG`), decoding included | 400 |" in page
        assert f"| {kind} | msgpack log, per message (`edgelearn replay --per-message LOG`) | 100 |" in page
    # the default learner's rows first
    assert page.index("| active_arow |") < page.index("| paacds |")
    assert "## The whole command, as a user times it" in page
    assert "active_arow: `jitted`" in page and "paacds: `jitted`" in page
    assert "load average" in page


def test_kinds_writes_the_new_tasks_section_and_keeps_the_rest(tmp_path):
    out = tmp_path / "page.md"
    out.write_text("# Log replay\n\nthe page as the full run wrote it\n")
    assert bench_log_replay.main(["--kinds", "surprise,arow_regressor", "--n", "400",
                                  "--per-message-n", "100", "--out", str(out)]) == 0
    page = out.read_text()
    assert page.startswith("# Log replay\n\nthe page as the full run wrote it\n")
    for kind, task in (("surprise", "anomaly"), ("arow_regressor", "regression")):
        assert f"| {kind} ({task}) | msgpack log, jitted (`edgelearn replay LOG`) | 400 |" in page
        assert f"| {kind} ({task}) | msgpack log, per message (`edgelearn replay --per-message LOG`) | 100 |" in page
        assert "its summary said `jitted`; on the first 100 rows the two paths left the same learner state" in page
    # a second run replaces the section, once
    assert bench_log_replay.main(["--kinds", "surprise", "--n", "300", "--per-message-n", "100",
                                  "--out", str(out)]) == 0
    page = out.read_text()
    assert page.count(bench_log_replay.TASK_SECTION) == 1
    assert "| surprise (anomaly) | msgpack log, jitted (`edgelearn replay LOG`) | 300 |" in page


def test_command_only_prints_the_whole_command_figures_and_leaves_the_page(tmp_path, capsys):
    out = tmp_path / "page.md"
    out.write_text("the page\n")
    assert bench_log_replay.main(["--command-only", "--command-n", "300", "--command-d", "4",
                                  "--rounds", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert out.read_text() == "the page\n"
    assert printed.startswith("PAACDS array replay: wall ")
    for kind in ("active_arow", "paacds"):
        assert f"\n{kind}: wall " in printed and "of the array replay" in printed
    assert "path jitted" in printed and "load average" in printed
