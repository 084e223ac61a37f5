"""edgelearn tune and the many-logs results table: ranking, the winner's section,
resuming from a results file, table/JSON/CSV output."""

import csv
import io
import json
import subprocess
import sys
import tomllib

import pytest

from firmware_bridge.offline import results_table
from firmware_bridge.offline.fanout import expand_logs
from firmware_bridge.wire.logfile import write_log
from firmware_bridge.offline.tune import grid_params, learner_section, random_params, rank, tune

from test_bulk_replay import _log_records

FIXED = {"target_query_rate": 0.2, "capacity": 8, "evict_after": 50}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tune")
    for k in range(2):
        write_log(folder / f"day{k}.msgpack", _log_records(20 + k, n=500))
    return folder


def test_tune_ranks_resumes_and_writes_a_section(logs, tmp_path):
    units = expand_logs([logs])
    sets = [{**FIXED, **p} for p in grid_params({"C": [0.05, 1.0, 20.0]})]
    fresh = tune(units, "paacds", sets)
    ranked = rank(fresh, "accuracy")
    assert len(ranked) == 3
    assert [r["accuracy"] for r in ranked] == sorted((r["accuracy"] for r in ranked), reverse=True)
    assert all(0.0 < r["query_rate"] < 1.0 for r in ranked)
    # interrupted after two tasks (and a half-written line): the rerun runs only the rest
    path = tmp_path / "results.jsonl"
    first = tune(units, "paacds", sets, results_path=path)
    lines = path.read_text().splitlines()
    assert len(lines) == 6 and first == fresh
    path.write_text("\n".join(lines[:2]) + "\n" + lines[2][:40])
    seen = []
    resumed = tune(units, "paacds", sets, results_path=path, progress=lambda r, d, t: seen.append(d))
    assert resumed == fresh
    assert seen == [3, 4, 5, 6]  # four tasks run (the cut line's one again), counted on from 2
    section = tomllib.loads(learner_section("paacds", ranked[0]["params"]))
    assert section["learner"]["kind"] == "paacds" and section["learner"]["params"] == ranked[0]["params"]


def test_random_search_is_seeded_and_in_range():
    a = random_params({"C": (0.01, 10.0, "log"), "B": (0.3, 0.9), "variant": ["PAACDS", "PAACDS-I"]}, 5, seed=1)
    assert a == random_params({"C": (0.01, 10.0, "log"), "B": (0.3, 0.9), "variant": ["PAACDS", "PAACDS-I"]}, 5, seed=1)
    assert all(0.01 <= p["C"] <= 10 and 0.3 <= p["B"] <= 0.9 for p in a)


def test_results_table_pools_streams(logs):
    results = tune(expand_logs([logs]), "paacds", [FIXED])
    rows = results_table.table_rows(results)
    streams = [r for r in rows if r["stream"] != "(overall)"]
    overall = [r for r in rows if r["stream"] == "(overall)"]
    assert len(overall) == 1 and len(streams) == sum(len(r["streams"]) for r in results) >= 6
    assert overall[0]["messages"] == sum(r["messages"] for r in streams)
    correct = sum(r["accuracy"] * r["scored"] for r in streams)
    assert overall[0]["accuracy"] == pytest.approx(correct / sum(r["scored"] for r in streams))
    parsed = list(csv.DictReader(io.StringIO(results_table.to_csv(rows))))
    assert len(parsed) == len(rows) and int(parsed[-1]["messages"]) == overall[0]["messages"]
    assert json.loads(results_table.to_json(rows))[-1]["stream"] == "(overall)"


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "firmware_bridge.cli", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=600)


def test_cli_replay_many_logs_and_tune(logs, tmp_path):
    out = _cli("replay", str(logs / "*.msgpack"), "--learner", "paacds", "--grid", "C=0.5,2", "--set", "capacity=8",
               "--json", "--csv", str(tmp_path / "r.csv"))
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert len([r for r in rows if r["stream"] == "(overall)"]) == 2
    assert (tmp_path / "r.csv").read_text().startswith("params,logs,stream,")
    out = _cli("tune", str(logs), "--learner", "paacds", "--grid", "C=0.5,2", "--set", "capacity=8", "--label-budget", "0.2",
               "--results", str(tmp_path / "t.jsonl"), "--write", str(tmp_path / "best.toml"))
    assert out.returncode == 0, out.stderr
    assert "ranked by accuracy" in out.stdout and "[learner.params]" in out.stdout
    assert "[4/4]" in out.stderr
    best = tomllib.loads((tmp_path / "best.toml").read_text())["learner"]["params"]
    assert best["capacity"] == 8 and best["target_query_rate"] == 0.2 and best["C"] in (0.5, 2)
    out = _cli("tune", str(logs), "--learner", "paacds", "--grid", "C=0.5,2", "--set", "capacity=8", "--label-budget", "0.2",
               "--results", str(tmp_path / "t.jsonl"))
    assert out.returncode == 0 and "[" not in out.stderr.split("\n", 1)[1]  # nothing rerun
    out = _cli("tune", str(logs), "--learner", "paacds", "--grid", "C=-1")
    assert out.returncode == 2 and "The 'C' parameter of PAACDS" in out.stderr
