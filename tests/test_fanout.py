"""The same grid over many logs serially, on joblib processes and on a real
dask.distributed LocalCluster: identical results."""

import sys
import subprocess

import pytest

from firmware_bridge.offline.fanout import Task, expand_logs, run_grid, run_task, tasks_for
from firmware_bridge.wire.logfile import write_log

from test_bulk_replay import _log_records


@pytest.fixture(scope="module")
def log_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("logs")
    for k in range(3):
        write_log(folder / f"day{k}.msgpack", _log_records(10 + k, n=600))
    return folder


GRID = [{"C": 0.5, "target_query_rate": 0.2, "capacity": 8, "evict_after": 50},
        {"C": 2.0, "target_query_rate": 0.1, "capacity": 8, "evict_after": 50}]


def test_expand_logs_folders_globs_and_errors(log_folder):
    assert len(expand_logs([log_folder])) == 3
    assert expand_logs([log_folder], group="dir") == [tuple(sorted(str(p) for p in log_folder.glob("*.msgpack")))]
    assert len(expand_logs([str(log_folder / "day[01].msgpack")])) == 2
    with pytest.raises(ValueError, match="no msgpack log matches"):
        expand_logs([str(log_folder / "nothing*.msgpack")])


def test_serial_joblib_and_dask_agree(log_folder):
    from dask.distributed import Client, LocalCluster

    tasks = tasks_for(expand_logs([log_folder]), "paacds", GRID)
    assert len(tasks) == 6
    serial = run_grid(tasks)
    assert [r["key"] for r in serial] == [t.key for t in tasks]
    assert all(s["path"] == "jitted" for r in serial for s in r["streams"].values())
    # a task's result is the replay's: the same as running it alone
    assert serial[4] == run_task(tasks[4])
    assert serial[0] != serial[3]  # the parameter sets differ in what they learn
    seen = []
    joblib_results = run_grid(tasks, jobs=2, progress=lambda r, done, total: seen.append((done, total)))
    assert joblib_results == serial
    assert seen[-1] == (6, 6)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        dask_results = run_grid(tasks, scheduler=cluster.scheduler_address)
        with Client(cluster.scheduler_address) as client:
            assert len(client.scheduler_info()["workers"]) == 2
    assert dask_results == serial


def test_the_gateway_does_not_import_joblib_or_dask():
    code = ("import sys, firmware_bridge.service.gateway, firmware_bridge.cli, firmware_bridge.offline.fanout; "
            "print(any(m.split('.')[0] in ('joblib', 'dask', 'distributed') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_jobs_must_be_a_positive_int():
    with pytest.raises(ValueError, match="The 'jobs' parameter of run_grid must be an int >= 1. Got 0."):
        run_grid([Task(("x",), "paacds")], jobs=0)
