"""The gateway service loads what it runs and nothing else.

Every module is resident memory on a Raspberry Pi: the service imports the
learner kind it is configured for (and its kernels), never the other kinds,
the evaluation stack (``edgelearn.evaluate``, ``datasets``, ``streams``,
``bench``) or the references the tests compare against (River, scikit-learn).
``edgelearn.metrics`` is loaded: the pipeline keeps each stream's prequential
accuracy for the status message with it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The service's import path: the CLI's parser (which registers the gateway
# subcommand), the configuration, the pipeline it builds, one message through it.
SERVICE = textwrap.dedent("""
    import json, sys
    from firmware_bridge.cli import build_parser, run_gateway
    from firmware_bridge.service.config import load_config
    from firmware_bridge.service.gateway import Gateway
    from firmware_bridge.wire import encode_data

    args = build_parser().parse_args(["gateway", "--config", sys.argv[1]])
    assert args.func is run_gateway
    config, errors = load_config(sys.argv[1])
    assert not errors, errors
    pipeline = config.make_pipeline()
    out = pipeline.handle("sensors/s1/data", encode_data(1.0, 0, {"t": 20.5}, y=True), 0.0)
    assert out and pipeline.counters()["predictions"] == 1
    pipeline.status()
    print(json.dumps(sorted(sys.modules)))
""")

EVALUATION = ["edgelearn.evaluate", "edgelearn.checks", "edgelearn.river", "edgelearn.datasets", "edgelearn.streams", "edgelearn.bench",
              "river", "sklearn", "matplotlib", "pandas", "joblib", "dask", "prometheus_client"]
LEARNER_MODULES = {
    "paacds": ["edgelearn.learners.paacds", "edgelearn.kernels.paacds"],
    "pa": ["edgelearn.learners.pa", "edgelearn.kernels.pa"],
    "pafe": ["edgelearn.learners.pafe", "edgelearn.kernels.pafe"],
    "synthesis_nb": ["edgelearn.learners.synthesis_nb", "edgelearn.kernels.synthesis_nb"],
    "kelm_multilabel": ["edgelearn.learners.kelm", "edgelearn.kernels.kelm"],
    "ensemble": ["edgelearn.learners.ensemble", "edgelearn.kernels.ensemble"],
    "active_arow": ["edgelearn.learners.arow", "edgelearn.kernels.arow"],
}


def _service_modules(tmp_path, kind: str) -> set[str]:
    config = tmp_path / "gateway.toml"
    config.write_text(f'[learner]\nkind = "{kind}"\n')
    result = subprocess.run([sys.executable, "-c", SERVICE, str(config)], capture_output=True,
                            text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("kind", ["paacds", "pa"])
def test_the_service_loads_only_its_learner_kind(tmp_path, kind):
    modules = _service_modules(tmp_path, kind)
    for wanted in LEARNER_MODULES[kind]:
        assert wanted in modules, f"{wanted} not loaded: the check below would prove nothing"
    others = [m for k, ms in LEARNER_MODULES.items() if k != kind for m in ms]
    loaded = sorted(set(others) & modules)
    assert not loaded, f"a {kind} gateway loaded other learner kinds: {loaded}"


def test_the_service_loads_no_evaluation_stack(tmp_path):
    modules = _service_modules(tmp_path, "paacds")
    loaded = sorted(m for m in modules if m.split(".")[0] in EVALUATION or m in EVALUATION)
    assert not loaded, f"the gateway service imported {loaded}"


def test_the_library_still_offers_everything_by_name():
    # Lazy is invisible to users: every public name resolves, in a fresh process.
    code = ("import edgelearn; import edgelearn.learners as L; "
            "print([getattr(edgelearn, n).__name__ for n in edgelearn.__all__ if n[0].isupper() and n not in ('KINDS', 'LEARNERS', 'DEFAULT_KIND', 'TASKS', 'CAPABILITIES')]); "
            "print(sorted(c.__name__ for c in edgelearn.KINDS.values())); "
            "print(edgelearn.evaluate.__name__, edgelearn.replay.__module__)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "OnlineEnsemble" in lines[0] and "ChannelSpace" in lines[0]
    assert lines[1] == str(sorted(["ActiveAROW", "MultiLabelKELM", "OnlineEnsemble", "PA", "PAACDS", "PAFE",
                                   "SynthesisNB", "AROWRegressor", "SurpriseDetector"]))
    assert lines[2] == "edgelearn.evaluate edgelearn.evaluate"


GATEWAY = textwrap.dedent("""
    import json, sys
    from firmware_bridge.service.config import load_config
    from firmware_bridge.service.gateway import Gateway

    config, errors = load_config(sys.argv[1])
    assert not errors, errors
    gateway = Gateway(config)  # built, not started: no broker needed
    print(json.dumps(sorted(sys.modules)))
""")


@pytest.mark.parametrize("enabled", [False, True])
def test_a_gateway_with_the_fleet_off_loads_none_of_its_code(tmp_path, enabled):
    # The fleet's exchange code (edgelearn.contributions) loads only with [fleet] on.
    # (The sink's module itself is read for its configuration section, as every
    # sink's is: firmware_bridge.service.sinks.)
    config = tmp_path / "gateway.toml"
    config.write_text(f'[learner]\nkind = "active_arow"\n[fleet]\nenabled = {str(enabled).lower()}\n'
                      f'[checkpoints]\ndirectory = "{tmp_path}"\n')
    result = subprocess.run([sys.executable, "-c", GATEWAY, str(config)], capture_output=True,
                            text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    modules = set(json.loads(result.stdout.strip().splitlines()[-1]))
    assert "edgelearn.learners.arow" in modules
    assert ("edgelearn.contributions" in modules) is enabled
