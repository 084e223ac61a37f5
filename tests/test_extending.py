"""docs/extending.md's worked examples, run: a learner (held to the learner checks), a
plug-in (tests/test_registry.py installs the same file and replays the demo through
it), a task (every task has every piece the page lists), a sink (a gateway with it,
through a real mosquitto)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from brokers import broker, wait_until  # noqa: F401  (broker: a fixture)
from test_gateway_broker import Client, GATEWAY_ID

import edgelearn
from edgelearn.learners import TASKS
from edgelearn.learners.targets import targets_for
from firmware_bridge.wire import DEFAULT_LIMITS, Topics, encode_data
from firmware_bridge.wire.labels import label_problem

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "extending.md").read_text()


def code_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE, flags=re.S)


def example_files() -> dict[str, str]:
    """The page's ``# file: NAME`` blocks, by file name."""
    files = {}
    for block in code_blocks("python"):
        match = re.match(r"# file: (\S+)\n", block)
        if match:
            files[match.group(1)] = block
    return files


def write_examples(where: Path) -> dict:
    for name, text in example_files().items():
        (where / name).write_text(text)
    return {**os.environ, "PYTHONPATH": f"{where}:{ROOT}"}


def test_the_learner_example_passes_the_learner_checks(tmp_path):
    env = write_examples(tmp_path)
    check = next(b for b in code_blocks("python") if "check_learner" in b)
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr


def test_the_plug_in_entry_point_of_the_page_is_the_one_the_registry_reads():
    toml = next(b for b in code_blocks("toml") if "edgelearn.learners" in b)
    assert '[project.entry-points."edgelearn.learners"]' in toml
    assert 'perceptron = "my_perceptron:Perceptron"' in toml


@pytest.mark.parametrize("task", list(TASKS))
def test_every_task_has_every_piece_the_page_lists(task):
    from firmware_bridge.offline.curves import COLUMNS, TASK_COLUMNS
    from firmware_bridge.pipeline.tasks import rules_for
    from firmware_bridge.service.sinks.homeassistant import HomeAssistant
    from firmware_bridge.service.sinks.prometheus import STREAM_METRICS

    targets = targets_for(task, "Owner", 3)
    assert targets.task == task
    rules = rules_for(task)
    assert rules.task == task
    metrics = rules.new_metrics(type("L", (), {"targets": targets})())
    status = rules.status(metrics)
    assert status["scored"] == 0
    # Prometheus exposes each of the task's scores; the curves have the task's columns.
    keys = {key for key, *_ in STREAM_METRICS}
    assert set(status) <= keys
    assert TASK_COLUMNS.get(task, COLUMNS)[:3] == ("stream", "reading", "received_at")
    entities = HomeAssistant("gw").configs("s1", task)
    assert len(entities) >= 4
    # the wire has a rule for the task's answers: a good answer passes, junk does not
    good = {"binary": True, "multiclass": "walking", "multilabel": {"a": True},
            "regression": 21.5, "anomaly": True}[task]
    assert label_problem(good, DEFAULT_LIMITS, task) is None
    assert label_problem([1, 2], DEFAULT_LIMITS, task) is not None
    assert f"`{task}`" in (ROOT / "docs" / "protocol.md").read_text()


@pytest.mark.broker
def test_the_sink_example_runs_in_a_gateway(broker, tmp_path):  # noqa: F811
    env = write_examples(tmp_path)
    register = next(b for b in code_blocks("python") if "SINKS[" in b)
    rows = tmp_path / "predictions.csv"
    config = tmp_path / "gw.toml"
    config.write_text(f'[gateway]\nid = "{GATEWAY_ID}"\nstatus_interval_seconds = 1\n'
                      '[checkpoints]\ndirectory = ""\n'
                      f'[csv_log]\nenabled = true\npath = "{rows}"\n')
    run = register + ("from firmware_bridge.cli import main\n"
                      f"raise SystemExit(main(['gateway', '--config', {str(config)!r}, "
                      f"'--broker', '127.0.0.1:{broker.port}']))\n")
    observer = Client(broker.port)
    gateway = subprocess.Popen([sys.executable, "-c", run], env=env, cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: observer.status() and observer.status()["state"] == "online", 60,
                   "the gateway online")
        sender = Client(broker.port, client_id="sender")
        for seq in range(20):
            sender.publish(Topics().data("hall"), encode_data(float(seq), seq, {"t": float(seq)}))
        sender.wait_acked()
        wait_until(lambda: len(observer.seen("hall")) == 20, 60, "the predictions")
        sender.close()
    finally:
        gateway.terminate()
        out, _ = gateway.communicate(timeout=60)
        observer.close()
    assert gateway.returncode == 0, out.decode()
    lines = rows.read_text().splitlines()
    assert [line.split(",")[:2] for line in lines] == [["hall", str(seq)] for seq in range(20)]
    assert edgelearn.make_learner().task == "binary"  # the default learner made those rows
