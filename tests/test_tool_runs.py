"""tools/runs.py: the results tools' runner (in process or on a pool) and cache."""

import json

from results_pages import load_tool

runs = load_tool("runs")

TASKS = [(2, 10), (3, 4), (5, 3), (7, 2)]


def test_finished_gives_every_task_its_result_in_process_and_on_a_pool():
    # pow is picklable by name, as a worker process needs
    serial = list(runs.finished(pow, TASKS, 1))
    assert serial == [(task, pow(*task)) for task in TASKS]  # in order, in process
    pooled = list(runs.finished(pow, TASKS, 2))
    assert sorted(pooled) == sorted(serial)  # as they finish, each once


def test_finished_passes_the_extra_arguments_after_the_task():
    assert list(runs.finished(pow, [(3, 4)], 1, 5)) == [((3, 4), pow(3, 4, 5))]


def test_the_cache_round_trips_and_is_replaced_whole(tmp_path):
    path = tmp_path / "deep" / "cache.json"
    assert runs.load_cache(path) == {} and runs.load_cache(None) == {}
    runs.save_cache(path, {"a|1": {"accuracy": 0.5}})
    runs.save_cache(path, {"a|1": {"accuracy": 0.5}, "b|2": [1, 2]})
    assert runs.load_cache(path) == {"a|1": {"accuracy": 0.5}, "b|2": [1, 2]}
    assert json.loads(path.read_text())["b|2"] == [1, 2]
    assert [p.name for p in path.parent.iterdir()] == ["cache.json"]  # no temporary left
    runs.save_cache(None, {"ignored": 1})  # no path: nothing written, no error
