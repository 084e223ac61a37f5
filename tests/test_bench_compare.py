"""tools/bench_compare.py on tiny inputs: its table, its skips and its exit codes.

BASE is this checkout's own directory (a tree used as it is, with its compiled
kernels), so the runs take seconds; unpacking a commit is tested apart."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "bench_compare.py"
sys.path.insert(0, str(ROOT / "tools"))

import bench_compare  # noqa: E402

ROW = re.compile(r"^\|\s*(?P<row>[^|]+?)\s*\|\s*(?P<n>[\d,]+)\s*\|\s*(?P<head>[\d.]*)\s*\|"
                 r"\s*(?P<base>[\d.]*)\s*\|\s*(?P<ratio>[^|]*?)\s*\|\s*(?P<flag>[^|]*?)\s*\|$")


def run(*args):
    return subprocess.run([sys.executable, str(TOOL), "--base", str(ROOT), "--rounds", "1",
                           "--n", "2000", "--quiet", *args],
                          capture_output=True, text=True, timeout=120, cwd=str(ROOT))


def table(stdout):
    return {m["row"]: m for m in map(ROW.match, stdout.splitlines()) if m}


def test_rows_ratios_and_skips():
    # --flag-below 0: no row flagged, whatever the noise of a tiny run
    done = run("--benches", "array_replay,pipeline", "--kinds", "paacds,no_such_kind", "--flag-below", "0")
    assert done.returncode == 0, done.stderr
    assert "flagged" not in done.stdout
    rows = table(done.stdout)
    assert list(rows) == ["array replay", "pipeline paacds", "pipeline no_such_kind"]
    for name in ("array replay", "pipeline paacds"):
        r = rows[name]
        head, base = float(r["head"]), float(r["base"])
        assert head > 0 and base > 0
        # the same tree twice: the ratio is base / head as printed, near 1
        ratio = float(r["ratio"].rstrip("x"))
        assert abs(ratio - base / head) < 0.01
        assert 0.25 < ratio < 4
        assert r["n"] == "2,000"
        assert r["flag"] == ""
    skipped = rows["pipeline no_such_kind"]
    assert skipped["ratio"] == "skipped"
    assert "no_such_kind" in skipped["flag"]


def test_a_flagged_row_fails_the_run_when_strict():
    strict = run("--benches", "array_replay", "--flag-below", "1000", "--strict")
    assert strict.returncode == 1, strict.stderr
    assert table(strict.stdout)["array replay"]["flag"] == "SLOWER"
    assert "flagged (HEAD slower than 1000.0x BASE): array replay" in strict.stdout


def test_a_commit_is_unpacked_and_a_bad_one_refused(tmp_path):
    tree = bench_compare.unpack("HEAD", tmp_path / "tree")
    committed = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", "HEAD", "edgelearn"],
                               capture_output=True, text=True, check=True).stdout.split()
    unpacked = sorted(str(p.relative_to(tree)) for p in (tree / "edgelearn").rglob("*") if p.is_file())
    assert unpacked == sorted(committed) and "edgelearn/kernels/replay.py" in unpacked
    refused = subprocess.run([sys.executable, str(TOOL), "--base", "no-such-revision-xyz", "--quiet"],
                             capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert refused.returncode == 2
    assert "no-such-revision-xyz" in refused.stderr


def test_bad_arguments_name_what_they_must_be():
    done = run("--benches", "array_replay,warp_drive")
    assert done.returncode == 2
    assert "--benches must be a comma-separated list of array_replay, log_replay, pipeline, batch_pass" in done.stderr
    assert "warp_drive" in done.stderr


def test_the_batch_rows_time_handle_and_handle_many():
    done = run("--benches", "batch_pass,batch_many", "--kinds", "paacds", "--flag-below", "0")
    assert done.returncode == 0, done.stderr
    rows = table(done.stdout)
    assert list(rows) == ["batch pass paacds", "batch many paacds"]
    for r in rows.values():
        assert float(r["head"]) > 0 and float(r["base"]) > 0 and r["flag"] == ""
