"""The gateway's unit under a real systemd: a Debian bookworm root booted with
``systemd-nspawn --boot --register=no --keep-unit``, the gateway installed there by
``tools/install-gateway.sh`` (the one command of the README's Raspberry Pi section),
talking to the test's mosquitto on loopback. In order, as an operator meets them:
install, install again, Type=notify readiness and watchdog pings, a watchdog-triggered
restart of a stopped (SIGSTOP) gateway, a clean ``systemctl stop``, and
``systemd-analyze verify`` and ``security`` of configs/edgelearn-gateway.service.

The tests of this module share one booted root and run in order."""

from __future__ import annotations

import re
import time

import pytest
from brokers import Broker, wait_until
from harness import REPO, Mqtt, Timer, occupancy_readings, toml
from machine import BootedRoot, pip_cache

UNIT = "edgelearn-gateway.service"
GATEWAY_ID = "gwsd"


@pytest.fixture(scope="module")
def booted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("systemd")
    broker = Broker(tmp / "broker")
    broker.start()
    test_dir = tmp / "test"
    test_dir.mkdir()
    (test_dir / "gateway.toml").write_text(toml({
        "gateway": {"id": GATEWAY_ID, "status_interval_seconds": 2.0},
        "mqtt": {"host": "127.0.0.1", "port": broker.port,
                 "reconnect_min_delay_seconds": 1, "reconnect_max_delay_seconds": 2},
        "checkpoints": {"interval_seconds": 3.0},
    }))
    machine = BootedRoot(tmp / "machine", [
        (REPO, "/opt/edgelearn/src", True),          # a clone, read-only
        (test_dir, "/opt/edgelearn-test", True),
        (pip_cache(), "/root/.cache/pip", False),   # wheels kept across boots
    ])
    mqtt = Mqtt(broker.port, gateway_id=GATEWAY_ID)
    try:
        with Timer("systemd: boot the nspawn root (volatile overlay)"):
            state = machine.start()
        assert state in ("running", "degraded")
        Timer.note("systemd in the nspawn root: " + machine.run(
            "systemctl", "--version").stdout.splitlines()[0])
        yield machine, mqtt
    finally:
        mqtt.close()
        machine.stop()
        broker.kill()


def install(machine: BootedRoot) -> str:
    result = machine.run("sh", "/opt/edgelearn/src/tools/install-gateway.sh",
                         "--config", "/opt/edgelearn-test/gateway.toml", timeout=900)
    return result.stdout + result.stderr


def main_pid(machine: BootedRoot) -> int:
    return int(machine.show(UNIT, "MainPID")["MainPID"])


def wait_status(mqtt: Mqtt, pid: int, timeout: float = 60) -> dict:
    return wait_until(lambda: (s := mqtt.status()) and s.get("pid") == pid
                      and s["state"] == "online" and s["connected"] and s,
                      timeout, f"the online status of pid {pid}", interval=0.2)


def test_the_install_script_installs_enables_and_starts_the_gateway(booted):
    machine, mqtt = booted
    with Timer("systemd: tools/install-gateway.sh, first run (venv, wheels, warm-up, unit)"):
        out = install(machine)
    assert "creating the venv" in out and "installed /etc/systemd/system/" in out, out
    assert machine.run("systemctl", "is-enabled", UNIT).stdout.strip() == "enabled"
    props = machine.show(UNIT, "ActiveState", "SubState", "Type", "NotifyAccess", "WatchdogUSec")
    assert props == {"ActiveState": "active", "SubState": "running", "Type": "notify",
                     "NotifyAccess": "main", "WatchdogUSec": "30s"}, props
    status = wait_status(mqtt, main_pid(machine))
    assert status["gateway"] == GATEWAY_ID
    # The configuration installed is the one given, and the warm-up filled the cache.
    assert machine.run("cmp", "/opt/edgelearn-test/gateway.toml",
                       "/etc/edgelearn/gateway.toml", check=False).returncode == 0
    assert "kernels compiled" in out or "loaded from the cache" in out, out


def test_a_second_run_changes_nothing(booted):
    machine, mqtt = booted
    pid = main_pid(machine)
    with Timer("systemd: tools/install-gateway.sh, second run (nothing to do)"):
        out = install(machine)
    assert "venv /opt/edgelearn/venv in place" in out, out
    assert "edgelearn already installed from the same source" in out, out
    assert "/etc/edgelearn/gateway.toml unchanged" in out and "unchanged" in out, out
    assert "restarting" not in out, out
    assert main_pid(machine) == pid  # not restarted


def test_readiness_is_notified_and_the_watchdog_is_pinged(booted):
    machine, mqtt = booted
    with Timer("systemd: restart, READY=1, watchdog pings"):
        before = time.monotonic()
        machine.run("systemctl", "restart", UNIT, timeout=300)
        restart_s = time.monotonic() - before
        pid = main_pid(machine)
        # Type=notify: `systemctl restart` returns once READY=1 came, so the unit is
        # active at once, and the new process says online on MQTT right after.
        props = machine.show(UNIT, "ActiveState", "ExecMainStartTimestampMonotonic",
                             "ActiveEnterTimestampMonotonic", "StatusErrno")
        assert props["ActiveState"] == "active"
        assert int(props["ActiveEnterTimestampMonotonic"]) >= int(
            props["ExecMainStartTimestampMonotonic"])
        wait_status(mqtt, pid, timeout=30)
        first = int(machine.show(UNIT, "WatchdogTimestampMonotonic")["WatchdogTimestampMonotonic"])
        wait_until(lambda: int(machine.show(UNIT, "WatchdogTimestampMonotonic")[
            "WatchdogTimestampMonotonic"]) > first, 30, "a second watchdog ping", interval=0.5)
    assert restart_s < 120, restart_s


def test_a_stopped_gateway_is_restarted_by_the_watchdog_and_restores_its_stream(booted):
    machine, mqtt = booted
    pid = main_pid(machine)
    for channels, occupied in occupancy_readings(60):
        mqtt.reading("kitchen", channels, y=occupied)
    mqtt.wait_predicted("kitchen", 60)
    learned = wait_until(lambda: (s := mqtt.status()) and s.get("pid") == pid
                         and s["streams"].get("kitchen", {}).get("learned")
                         and s["streams"]["kitchen"], 30, "labels learned")["learned"]
    time.sleep(4)  # a checkpoint round (interval 3 s)
    restarts = int(machine.show(UNIT, "NRestarts")["NRestarts"])
    with Timer("systemd: SIGSTOP, watchdog timeout (WatchdogSec=30), restart, online"):
        machine.run("kill", "-STOP", str(pid))
        new_pid = wait_until(lambda: (p := main_pid(machine)) not in (0, pid) and machine.show(
            UNIT, "ActiveState")["ActiveState"] == "active" and p, 120,
            "a restart by the watchdog", interval=1)
        status = wait_status(mqtt, new_pid)
    assert int(machine.show(UNIT, "NRestarts")["NRestarts"]) == restarts + 1
    journal = machine.journal(UNIT)
    assert re.search(r"Watchdog timeout", journal), journal[-3000:]
    assert "kitchen" in status["checkpoints"]["restored"], status["checkpoints"]
    # The stream goes on where it was: its model and counts came back.
    assert status["streams"]["kitchen"]["learned"] >= learned


def test_systemctl_stop_is_clean(booted):
    machine, mqtt = booted
    pid = main_pid(machine)
    with Timer("systemd: systemctl stop"):
        machine.run("systemctl", "stop", UNIT, timeout=120)
    props = machine.show(UNIT, "ActiveState", "Result", "ExecMainStatus", "ExecMainCode")
    assert props["ActiveState"] == "inactive" and props["Result"] == "success", props
    assert props["ExecMainStatus"] == "0", props
    final = wait_until(lambda: (s := mqtt.status()) and s.get("pid") == pid
                       and s["state"] == "stopped" and s, 10, "the retained stopped status")
    assert final["state"] == "stopped"


def test_systemd_analyze_verify_and_security_of_the_unit(booted):
    machine, mqtt = booted
    with Timer("systemd: systemd-analyze verify and security"):
        verify = machine.run("systemd-analyze", "verify", f"/etc/systemd/system/{UNIT}",
                             check=False)
        security = machine.run("systemd-analyze", "security", "--no-pager", UNIT, check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert UNIT not in verify.stdout + verify.stderr, verify.stdout + verify.stderr
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+) (\w+)", security.stdout)
    assert match, security.stdout + security.stderr
    exposure, verdict = float(match.group(1)), match.group(2)
    Timer.note(f"systemd-analyze security {UNIT}: exposure {exposure} {verdict}")
    assert verdict in ("SAFE", "OK") and exposure < 4.0, security.stdout
