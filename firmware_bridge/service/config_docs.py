"""``configs/gateway.toml`` as ``edgelearn config --print-default`` writes it: every key of
the schema with its default and documentation, and the learners' kinds and parameters
made from their code (:mod:`edgelearn.learners.docs`), never by hand."""

from __future__ import annotations

import textwrap

from edgelearn.learners.docs import parameter_docs, summary
from edgelearn.learners.registry import DEFAULT_KIND, kinds, learner_class

from .config import GATEWAY_LEARNER_DEFAULTS, SCHEMA
from .settings import comment, toml_value

__all__ = ["render_default_config"]

_HEADER = """\
# edgelearn gateway configuration: every key with its default.
#
# Made by `edgelearn config --print-default` from the schema in
# firmware_bridge/service/config.py (tests/test_config.py holds this file to it).
#
# Every key is checked at start-up (`edgelearn gateway --config FILE --check-config`
# checks without starting): an unknown key, a value of the wrong type or out of range,
# or keys that contradict each other are all reported at once, and the gateway exits
# with status 2. Omitted keys take the default shown here. The command line may
# override the broker (--broker HOST:PORT), the checkpoint directory (--state-dir DIR)
# and the gateway id (--gateway-id ID).
#
# Budgets are fixed at start: the gateway never grows a table past what is set here,
# and reports the memory they add up to in its status message ("memory"): about
# 10 MiB with these defaults. The process is much larger than its tables: Python,
# NumPy, numba and its LLVM library come to about 160 MiB before the first message.
# docs/bench-memory.md (python tools/bench_memory.py) measured a peak RSS of 228 MiB
# (these defaults, PAACDS, 1 or 100 streams, kernels compiled in the process; 199
# MiB when `edgelearn warmup` filled the Numba cache first, as the unit does), flat
# however long the stream. The systemd unit's MemoryHigh (288M) and MemoryMax (352M)
# leave 1.25x and 1.5x that figure at least. The defaults suit a Raspberry Pi 3/4/5
# (64-bit) serving a few dozen sensor streams.
"""


#: What a gateway's default-kind streams take when ``[learner.params]`` leaves a key out
#: (the shipped file shows them as set).
GATEWAY_LEARNER_PARAMS = GATEWAY_LEARNER_DEFAULTS[DEFAULT_KIND]


def _learner_lines(plugins: bool) -> list[str]:
    """``[learner.params]``: the values the shipped file sets, then each kind (the
    default first), its summary and tasks, and every parameter with its default, what
    it must be and its documentation."""
    lines = ["[learner.params]"]
    default = parameter_docs(kinds(False)[DEFAULT_KIND].load())
    lines += comment(f"""
        Parameters of the learner (edgelearn.make_learner(kind, params)); anything the
        learner does not take is an error. A gateway's {DEFAULT_KIND} streams take
        these two values when they are left out (the learner's own defaults, for a
        notebook: {", ".join(
            f"{name} = {toml_value(default[name].default)}" for name in GATEWAY_LEARNER_PARAMS)}):""")
    lines += [f"{name} = {toml_value(value)}" for name, value in GATEWAY_LEARNER_PARAMS.items()]
    lines += comment("""
        Every other parameter, left out, takes the learner's own default, shown below
        for each kind. A River estimator's parameters are its constructor's. The
        kinds:""")
    found = kinds(plugins)
    order = [DEFAULT_KIND] + [name for name in found if name != DEFAULT_KIND]
    for name in order:
        cls = found[name].load()
        tasks = ", ".join(sorted(getattr(cls, "tasks", None) or learner_class(name).tasks))
        origin = "" if found[name].origin == "edgelearn" else f" (from {found[name].origin})"
        lines.append("#")
        lines += comment(f'kind = "{name}"{origin}: {summary(cls)} Tasks: {tasks}.'
                         + (" The default kind." if name == DEFAULT_KIND else ""))
        for doc in parameter_docs(cls).values():
            value = "..." if doc.default is None else toml_value(doc.default)
            lines.append(f"# {doc.name} = {value}")
            text = doc.text or ""
            must = f"It must be {doc.constraint}." if doc.constraint else ""
            omitted = " Omitted: none." if doc.default is None else ""
            for line in textwrap.wrap(" ".join(f"{text}{omitted} {must}".split()), 80):
                lines.append("#     " + line)
    return lines


def render_default_config(plugins: bool = True) -> str:
    """``configs/gateway.toml``: every key of :data:`SCHEMA` with its default and its
    documentation, and the learners' parameters (``edgelearn config --print-default``;
    with ``plugins``, the installed plug-ins' kinds too)."""
    lines = [_HEADER]
    for name, section in SCHEMA.items():
        lines.append(f"[{name}]")
        lines.extend(comment(section.doc))
        for key, setting in section.keys.items():
            lines.extend(comment(setting.doc))
            if setting.optional:
                lines.append(f"# {key} = {toml_value(setting.example)}")
            else:
                lines.append(f"{key} = {toml_value(setting.value)}")
        lines.append("")
    lines.extend(_learner_lines(plugins))
    return "\n".join(lines) + "\n"
