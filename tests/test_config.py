"""Tests for the gateway configuration (configs/gateway.toml, firmware_bridge.service.config's
schema and load_config, the command line in firmware_bridge.cli) and the shipped
systemd and mosquitto examples."""

from __future__ import annotations

import argparse
import pathlib
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

import edgelearn
from firmware_bridge.cli.service import add_gateway_arguments, overrides_from_args, run_gateway
from firmware_bridge.service.config import SCHEMA, GatewayConfig, load_config
from firmware_bridge.service.config_docs import render_default_config
from firmware_bridge.wire import DEFAULT_LIMITS, JsonFields, Topics

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"
SHIPPED = CONFIGS / "gateway.toml"


def parse(argv):
    return add_gateway_arguments(argparse.ArgumentParser()).parse_args(argv)


def test_the_shipped_config_validates_and_uses_the_documented_defaults():
    config, errors = load_config(SHIPPED)
    assert errors == []
    assert isinstance(config, GatewayConfig)
    assert config.topics == Topics() and config.limits == DEFAULT_LIMITS
    assert config.mqtt.client_id == "edgelearn-gw1"
    assert config.mqtt.clean_start is False and config.mqtt.subscribe_qos == 1
    assert config.label_request_qos == 1
    assert config.checkpoint_interval_s >= 60  # minutes, for SD cards
    assert config.learner_kind == edgelearn.DEFAULT_KIND and config.learner_params["capacity"] == 64
    config.make_pipeline()  # builds


def test_the_shipped_file_is_the_schema_rendered():
    # configs/gateway.toml is `edgelearn config --print-default`: every key with its
    # default and documentation, nothing else.
    assert SHIPPED.read_text() == render_default_config(), (
        "configs/gateway.toml is stale: edgelearn config --print-default > configs/gateway.toml"
    )
    raw = tomllib.loads(SHIPPED.read_text())
    for section_name, section in SCHEMA.items():
        table = raw
        for part in section_name.split("."):
            table = table[part]
        for key, setting in section.keys.items():
            assert setting.doc.strip() or section.doc.strip(), f"[{section_name}] {key}"
            if setting.optional:
                assert key not in table
            else:
                # The file's value is the default, and passes the key's own constraint.
                assert setting.constraint.convert(table[key]) == setting.value, key


def test_print_default_is_the_shipped_file():
    result = subprocess.run(
        [sys.executable, "-m", "firmware_bridge.cli", "config", "--print-default"],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == SHIPPED.read_text()


def test_defaults_have_one_source():
    # A key that feeds a parameter takes that parameter's default: the config and the
    # objects cannot disagree (Pipeline(max_streams=...) once said 16 and the file 32).
    import inspect

    from firmware_bridge.service.mqtt import MqttSettings
    from firmware_bridge.pipeline import Pipeline

    config, errors = load_config(None)
    assert errors == []
    pipeline_defaults = {name: p.default for name, p in
                         inspect.signature(Pipeline).parameters.items()}
    for name, value in config.pipeline_params().items():
        if name not in ("topics", "limits", "json_fields"):
            assert value == pipeline_defaults[name], name
    assert config.pipeline_params()["json_fields"] == JsonFields()  # Pipeline's None
    assert config.max_streams == pipeline_defaults["max_streams"] == 32
    defaults = MqttSettings()
    for name in ("host", "port", "brokers", "protocol", "keepalive_seconds",
                 "max_inflight_messages", "max_queued_messages", "subscribe_qos"):
        assert getattr(config.mqtt, name) == getattr(defaults, name), name


def test_every_constraint_rejects_its_invalid_values():
    # Each key's constraint, checked through load_config: every invalid value is one
    # error in the one format, naming the key.
    for section_name, section in SCHEMA.items():
        for key, setting in section.keys.items():
            for bad in setting.constraint.invalid_values():
                if bad is None and setting.optional:
                    continue  # an optional key's None is "left out"
                config, errors = load_config(None, {f"{section_name}.{key}": bad})
                assert config is None, (section_name, key, bad)
                assert any(f"The '{key}' parameter of [{section_name}] must be" in e
                           for e in errors), (section_name, key, bad, errors)


def test_a_broken_config_prints_every_error_and_exits_2(tmp_path, capsys):
    broken = tmp_path / "broken.toml"
    broken.write_text(
        """
[gateway]
id = "has space"
max_streams = 0
inbound_queue_lenght = 10

[topics]
data = "sensors/+/data"

[limits]
max_channels = 1000

[mqtt]
port = "1883"
protocol = "MQTTv4"
subscribe_qos = 2
reconnect_min_delay_seconds = 10
reconnect_max_delay_seconds = 5
password_file = "/nonexistent/password"

[mqtt.tls]
ca_file = "/nonexistent/ca.crt"

[checkpoints]
interval_seconds = 0.5

[learner]
kind = "svm"

[surprise]
x = 1
"""
    )
    status = run_gateway(parse(["--config", str(broken)]))
    assert status == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("edgelearn gateway: error:")]
    expected = [
        "unknown section [surprise]",
        "[gateway] unknown key inbound_queue_lenght",
        "The 'id' parameter of [gateway] must be 1 to 24 of A-Z a-z 0-9 _ . : -. Got 'has space'.",
        "The 'max_streams' parameter of [gateway] must be an int in [1, 100000]. Got 0.",
        "[topics] The 'data_template' parameter of Topics must not contain a wildcard",
        "[limits] The 'max_channels' parameter of Limits must be <= max_container_len",
        "The 'port' parameter of [mqtt] must be an int in [1, 65535]. Got '1883'.",
        "The 'protocol' parameter of [mqtt] must be one of {'MQTTv5', 'MQTTv311'}. Got 'MQTTv4'.",
        "The 'subscribe_qos' parameter of [mqtt] must be one of {0, 1}. Got 2.",
        "[mqtt] reconnect_max_delay_seconds must be >= reconnect_min_delay_seconds (10), got 5",
        "[mqtt] password_file needs a username",
        "[mqtt] password_file must be a readable UTF-8 file, got '/nonexistent/password'",
        "[mqtt.tls] enabled must be true when ca_file, cert_file or key_file is set",
        "The 'interval_seconds' parameter of [checkpoints] must be a float in [1, 604800]. Got 0.5.",
        "The 'kind' parameter of [learner] must be one of {" + ", ".join(map(repr, edgelearn.KINDS))
        + "} or 'river:MODULE.CLASS'. Got 'svm'.",
    ]
    for fragment in expected:
        assert any(fragment in line for line in lines), f"missing error: {fragment}\n{err}"
    assert len(lines) == len(expected)
    assert all(str(broken) in line for line in lines)


def test_an_omitted_learner_section_takes_what_the_shipped_file_shows(tmp_path):
    """The shipped file says omitted keys take the values it shows; for the default
    kind that is capacity 64 and target_query_rate 0.1, not the learner's own 256 and
    0.2 (issue 28, defect 3). Keys set override them; other kinds keep their own."""
    shipped = {key: value for key, value in tomllib.loads(SHIPPED.read_text())["learner"]
               ["params"].items()}
    path = tmp_path / "g.toml"
    for text, expected in [
        ("", shipped),
        ("[learner]\n", shipped),
        ("[learner.params]\ncapacity = 32\n", {**shipped, "capacity": 32}),
        (f'[learner]\nkind = "{edgelearn.DEFAULT_KIND}"\n', shipped),
    ]:
        path.write_text(text)
        config, errors = load_config(path)
        assert errors == [], (text, errors)
        learner = edgelearn.make_learner(config.learner_kind, config.learner_params)
        assert {key: getattr(learner, key) for key in expected} == expected, text
    path.write_text('[learner]\nkind = "paacds"\n')
    config, errors = load_config(path)
    assert errors == [] and config.learner_params == {}


def test_learner_params_are_checked_by_the_learner(tmp_path, capsys):
    path = tmp_path / "g.toml"
    path.write_text('[learner]\nkind = "pa"\n[learner.params]\ncapacity = 0\nC = 1.0\ngamma = 2\n')
    assert run_gateway(parse(["--config", str(path)])) == 2
    err = capsys.readouterr().err
    assert "[learner.params] PA has no parameter 'gamma'" in err


def test_toml_syntax_errors_and_missing_files_exit_2(tmp_path, capsys):
    path = tmp_path / "g.toml"
    path.write_text("[gateway\nid = 1\n")
    assert run_gateway(parse(["--config", str(path)])) == 2
    assert "not valid TOML" in capsys.readouterr().err
    assert run_gateway(parse(["--config", str(tmp_path / "missing.toml")])) == 2
    assert "cannot read the configuration" in capsys.readouterr().err


def test_command_line_overrides(tmp_path, capsys):
    args = parse(
        ["--config", str(SHIPPED), "--broker", "10.0.0.5:8883", "--state-dir",
         str(tmp_path), "--gateway-id", "kitchen-gw"]
    )
    overrides, errors = overrides_from_args(args)
    config, config_errors = load_config(args.config, overrides)
    assert errors == [] and config_errors == []
    assert (config.mqtt.host, config.mqtt.port) == ("10.0.0.5", 8883)
    assert config.checkpoint_dir == str(tmp_path)
    assert config.gateway_id == "kitchen-gw" and config.mqtt.client_id == "edgelearn-kitchen-gw"
    assert config.topics.status(config.gateway_id) == "edgelearn/status/kitchen-gw"

    assert run_gateway(parse(["--config", str(SHIPPED), "--broker", "nohost",
                              "--gateway-id", "label"])) == 2
    err = capsys.readouterr().err
    assert "--broker must be HOST:PORT" in err
    assert "[gateway] id must not be one of the ids the topic layout reserves" in err


def test_password_file_is_read_and_never_shown(tmp_path):
    secret = tmp_path / "pw"
    secret.write_text("s3cret\n")
    config, errors = load_config(
        None, {"mqtt.username": "edgelearn-gw1", "mqtt.password_file": str(secret)}
    )
    assert errors == []
    assert config.mqtt.password == "s3cret"
    assert "s3cret" not in repr(config.mqtt) and "s3cret" not in repr(config)


@pytest.mark.parametrize("command", [
    ["firmware_bridge", "gateway"],  # python -m firmware_bridge is the edgelearn command
    ["firmware_bridge.gateway"],  # the service module's own entry, from before the rooms
])
def test_check_config_runs_as_a_module(command):
    result = subprocess.run(
        [sys.executable, "-m", *command, "--config", str(SHIPPED), "--check-config"],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith(": ok")


def test_systemd_unit_has_the_required_settings():
    text = (CONFIGS / "edgelearn-gateway.service").read_text()
    settings = {}
    for line in text.splitlines():
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key, value)
    assert settings["Type"] == "notify"
    assert int(settings["WatchdogSec"]) > 0
    assert settings["Restart"] == "on-failure"
    assert settings["RestartPreventExitStatus"] == "2"
    assert settings["DynamicUser"] == "yes"
    assert settings["StateDirectory"] == "edgelearn"
    assert settings["MemoryMax"].endswith("M")
    for hardening in ("NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp",
                      "RestrictAddressFamilies", "SystemCallFilter"):
        assert hardening in settings, hardening
    # numba's JIT needs writable+executable memory.
    assert "MemoryDenyWriteExecute" not in settings
    # The checkpoint directory of the shipped config is inside the StateDirectory.
    config, _ = load_config(SHIPPED)
    assert config.checkpoint_dir.startswith("/var/lib/edgelearn/")
    if shutil.which("systemd-analyze"):
        result = subprocess.run(
            ["systemd-analyze", "verify", str(CONFIGS / "edgelearn-gateway.service")],
            capture_output=True, text=True, timeout=60,
        )
        # Only the ExecStart binary (not installed here) may be reported.
        problems = [line for line in result.stderr.splitlines()
                    if line.strip() and "is not executable" not in line]
        assert problems == [], result.stderr


def _acl_writers(text: str, topic: str) -> set[str]:
    """Users an ACL file lets write ``topic`` (patterns apply to every user: '*')."""

    def matches(filter_: str) -> bool:
        f_levels, t_levels = filter_.split("/"), topic.split("/")
        for n, level in enumerate(f_levels):
            if level == "#":
                return True
            if n >= len(t_levels) or (level != "+" and level != t_levels[n]):
                return False
        return len(f_levels) == len(t_levels)

    writers, user = set(), None
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "user":
            user = words[1]
        elif words[0] in ("topic", "pattern"):
            access, filter_ = (words[1], words[2]) if len(words) == 3 else ("readwrite", words[1])
            if access in ("write", "readwrite") and matches(filter_.replace("%u", "x").replace("%c", "x")):
                writers.add("*" if words[0] == "pattern" else user)
    return writers


def test_mosquitto_acl_lets_only_the_labeller_write_labels():
    text = (CONFIGS / "mosquitto-acl.example").read_text()
    assert _acl_writers(text, Topics().label("kitchen")) == {"labeller"}
    assert _acl_writers(text, Topics().prediction("kitchen")) == {"edgelearn-gw1"}
    assert _acl_writers(text, Topics().data("x")) == {"*"}  # %u: the sensor's own stream
    conf = (CONFIGS / "mosquitto.conf.example").read_text()
    assert re.search(r"^allow_anonymous false$", conf, re.M)
    assert re.search(r"^persistence true$", conf, re.M)
    assert re.search(r"^acl_file ", conf, re.M)


@pytest.mark.parametrize("override", [{"mqtt.port": True}, {"limits.max_depth": 1},
                                      {"labels.ttl_seconds": float("nan")}])
def test_single_bad_values(override):
    config, errors = load_config(SHIPPED, override)
    assert config is None and len(errors) == 1
