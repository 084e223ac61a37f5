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


def test_flags_round_trip_through_hex_at_any_length():
    import numpy as np

    for n in (0, 1, 7, 8, 9, 100):
        flags = np.random.default_rng(n).random(n) < 0.5
        assert np.array_equal(runs.unpack_bits(runs.pack_bits(flags), n), flags)


def test_test_then_train_predicts_each_reading_before_learning_its_label():
    from river import linear_model

    from edgelearn import ActiveAROW

    rows = [{"x": 1.0}, {"x": -1.0}] * 30
    labels = [True, False] * 30
    # River: the first prediction comes from an untrained model, the last from a trained one
    correct = runs.test_then_train(linear_model.LogisticRegression(), rows, labels)
    assert correct.shape == (60,) and correct[-10:].all()
    # edgelearn learns from its own decision; the same stream is learned as well
    learner = ActiveAROW()
    correct = runs.test_then_train(learner, rows, labels)
    assert correct[-10:].all() and learner.W.any()
