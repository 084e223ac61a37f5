"""The one registry of learner kinds: built-in kinds, plug-ins found through the
``edgelearn.learners`` entry-point group, and River estimators as ``river:MODULE.CLASS``;
and the task and capability declarations everything dispatches on."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import edgelearn
from edgelearn.checks import check_learner
from edgelearn.learners import CAPABILITIES, TASKS, registry
from edgelearn.learners.base import Learner

ROOT = Path(__file__).resolve().parents[1]


def test_every_built_in_kind_loads_its_class_with_its_declarations():
    for name, target in registry.BUILTIN.items():
        cls = edgelearn.KINDS[name]
        assert f"{cls.__module__}:{cls.__name__}" == target
        assert cls.tasks and cls.tasks <= set(TASKS), name
        assert cls.capabilities <= set(CAPABILITIES), name
        assert edgelearn.LEARNERS[cls.__name__] is cls
    assert registry.DEFAULT_KIND in registry.BUILTIN
    assert set(registry.TASK_DEFAULTS) <= set(TASKS)
    for task, kind in registry.TASK_DEFAULTS.items():
        assert task in edgelearn.KINDS[kind].tasks


def test_kinds_that_can_a_capability_are_the_classes_that_declare_it_and_the_fleet_doc_names_them():
    merging = registry.kinds_that_can("merge")
    assert merging == [name for name in registry.BUILTIN
                       if "merge" in edgelearn.KINDS[name].capabilities]
    assert "active_arow" in merging and "synthesis_nb" not in merging
    # [fleet]'s documentation lists them by hand (it is written at import time).
    from firmware_bridge.service.sinks.fleet import SECTION

    listed = re.search(r"\(([a-z_, ]+)\)\.\s*$", SECTION.doc.strip()).group(1)
    assert listed.split(", ") == merging


def test_a_declaration_of_an_unknown_task_or_capability_is_refused_when_the_class_is_made():
    with pytest.raises(TypeError, match="unknown tasks \\['forecast'\\]"):
        type("Bad", (edgelearn.PA,), {"tasks": frozenset({"forecast"})})
    with pytest.raises(TypeError, match="unknown capabilities \\['teleport'\\]"):
        type("Bad", (edgelearn.PA,), {"capabilities": frozenset({"teleport"})})


def test_the_older_supports_flags_still_declare_tasks():
    cls = type("Old", (edgelearn.PA,), {"supports_binary": True, "supports_multiclass": True})
    assert cls.tasks == {"binary", "multiclass"} and cls.supports_multiclass


def test_capabilities_are_refined_by_the_instance():
    binary, multiclass = edgelearn.PAACDS(), edgelearn.PAACDS(n_classes=3)
    assert binary.can("decide_learn") and binary.can("log_loop") and binary.can("array_loop")
    assert not multiclass.can("decide_learn")
    assert multiclass.can("array_loop") and multiclass.can("log_loop") and multiclass.can("merge")
    # Both kinds' jitted log loop, batch pass and merge serve both tasks
    for capability in ("log_loop", "batch_pass"):
        assert edgelearn.ActiveAROW().can(capability) and edgelearn.ActiveAROW(n_classes=3).can(capability)
    # merge once the refits of the first labels are over: a new default learner has them pending
    assert edgelearn.ActiveAROW(refit_until=0).can("merge") and edgelearn.ActiveAROW(n_classes=3, refit_until=0).can("merge")
    assert not edgelearn.ActiveAROW().can("merge") and "refits pending" in edgelearn.ActiveAROW().why_not("merge")
    assert not edgelearn.ActiveAROW(target_query_rate=None).can("label_rate")
    assert edgelearn.ActiveAROW(target_query_rate=0.1).can("label_rate")


def test_an_unknown_kind_names_every_kind_in_the_one_format():
    with pytest.raises(ValueError) as error:
        edgelearn.make_learner("svm")
    assert str(error.value).startswith("The 'kind' parameter of a learner configuration must be one of {")
    assert "'river:MODULE.CLASS'" in str(error.value) and str(error.value).endswith("Got 'svm'.")
    assert "svm" not in edgelearn.KINDS and "paacds" in edgelearn.KINDS


def test_the_task_picks_its_default_kind_and_a_kind_must_serve_its_task():
    assert type(edgelearn.make_learner(task="multilabel")) is edgelearn.MultiLabelKELM
    assert edgelearn.make_learner(task="multiclass", params={"n_classes": 3}).task == "multiclass"
    with pytest.raises(ValueError, match="serves \\['binary'\\], not the task 'regression'"):
        edgelearn.make_learner("pa", task="regression")
    with pytest.raises(ValueError, match="The 'task' parameter of a learner configuration"):
        registry.default_kind("forecast")


def test_river_kinds_resolve_without_importing_river_until_made():
    code = ("import sys, edgelearn.learners.registry as r; k = r.resolve('river:linear_model.LinearRegression'); "
            "print(k.origin, 'river' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["river", "False"]


def test_a_river_kind_whose_module_is_missing_says_what_to_install(tmp_path):
    # A Python whose path hides River: the error names the package to install.
    (tmp_path / "river").mkdir()
    (tmp_path / "river" / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'river'\", name='river')\n")
    code = ("import edgelearn\ntry:\n    edgelearn.make_learner('river:linear_model.LogisticRegression')\n"
            "except ValueError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": ""})
    assert "needs River, which is not installed: pip install river" in out.stdout


# The plug-in of docs/extending.md, as a user would install it.
PLUGIN = re.search(r"```python\n# file: my_perceptron.py\n(.*?)```",
                   (ROOT / "docs" / "extending.md").read_text(), flags=re.S).group(1)


def install_plugin(where: Path, module: str, text: str, entry: str) -> dict:
    """A distribution installed the way pip leaves one (a module and its dist-info
    with an entry point) in ``where``; the environment a process needs to see it."""
    (where / f"{module}.py").write_text(text)
    info = where / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[edgelearn.learners]\n{entry}\n")
    import os

    return {**os.environ, "PYTHONPATH": f"{where}:{os.environ.get('PYTHONPATH', '')}"}


def test_a_plug_in_learner_replays_the_demo_and_is_documented_and_configurable(tmp_path):
    env = install_plugin(tmp_path, "my_perceptron", PLUGIN, "perceptron = my_perceptron:Perceptron")
    edgelearn_cmd = [sys.executable, "-m", "firmware_bridge"]
    out = subprocess.run([*edgelearn_cmd, "replay", "--learner", "perceptron", "--quiet", "--json"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    import json

    summary = json.loads(out.stdout)
    stream = summary["streams"]["office-1"]
    assert stream["messages"] == 20560 and stream["accuracy"] > 0.8
    assert summary["learner"].startswith("Perceptron(lr=0.1")
    listing = subprocess.run([*edgelearn_cmd, "config", "--print-default"], capture_output=True,
                             text=True, env=env, cwd=tmp_path, timeout=300)
    assert ('kind = "perceptron" (from my_perceptron): A perceptron on the channels\' standardized'
            in listing.stdout.replace("\n# ", " "))
    config = tmp_path / "gw.toml"
    config.write_text('[learner]\nkind = "perceptron"\n\n[learner.params]\nlr = 0.5\n'
                      '[checkpoints]\ndirectory = ""\n')
    check = subprocess.run([*edgelearn_cmd, "gateway", "--config", str(config), "--check-config"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert check.returncode == 0 and check.stdout.strip().endswith(": ok"), check.stdout + check.stderr


def test_a_plug_in_cannot_take_a_built_in_name(tmp_path):
    env = install_plugin(tmp_path, "impostor", PLUGIN, "paacds = impostor:Perceptron")
    code = "import edgelearn; print(edgelearn.KINDS['paacds'].__module__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True)
    assert out.stdout.strip() == "edgelearn.learners.paacds"


def test_the_plug_in_example_passes_the_learner_checks(tmp_path, monkeypatch):
    (tmp_path / "checked_perceptron.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    cls = importlib.import_module("checked_perceptron").Perceptron
    check_learner(cls())
    assert issubclass(cls, Learner)


def test_the_configuration_documents_every_kind_from_its_code():
    from edgelearn.learners.docs import parameter_docs
    from firmware_bridge.service.config_docs import render_default_config

    text = render_default_config(plugins=False)
    for name in registry.BUILTIN:
        cls = edgelearn.KINDS[name]
        assert f'kind = "{name}"' in text
        for doc in parameter_docs(cls).values():
            assert doc.text, f"{cls.__name__}'s docstring does not document {doc.name}"
            assert doc.constraint, f"{cls.__name__} declares no constraint for {doc.name}"
    # the documented default is the learner's own: ActiveAROW's r
    assert f"# r = {edgelearn.ActiveAROW().r!r}\n" in text


def test_the_learner_kind_constraint_checks_without_importing(tmp_path):
    code = textwrap.dedent("""
        import sys
        from edgelearn.constraints import check
        from edgelearn.learners.registry import LearnerKind
        check("[learner]", "kind", "ensemble", LearnerKind())
        print(any(m.startswith("edgelearn.learners.ensemble") for m in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
