"""A learner's parameters as documentation: each one's default, its constraint and its
text, read from the class itself (the constructor's signature, ``_parameter_constraints``
and the numpydoc ``Parameters`` section of its docstring), so the configuration's
documentation (``configs/gateway.toml``, ``edgelearn config --print-default``) is made,
never written by hand, and cannot drift from the code.

>>> from edgelearn.learners.pa import PA
>>> doc = parameter_docs(PA)["C"]
>>> doc.default, doc.constraint, doc.text.split(";")[0]
(1.0, 'a float in (0, inf]', 'Aggressiveness: the largest step of an update (PA-I), or the softness of PA-II')
"""

from __future__ import annotations

import inspect
import re
from typing import Any, NamedTuple

__all__ = ["ParameterDoc", "parameter_docs", "summary"]

# A full stop that ends a sentence (not "et al." or "e.g.").
_SENTENCE_END = re.compile(r"(?<!\bal)(?<!e\.g)\.\s+(?=[A-Z(])")
_SECTION = re.compile(r"^([A-Z][A-Za-z ]+)\n-{3,}$", re.MULTILINE)


class ParameterDoc(NamedTuple):
    """One constructor parameter: its ``name``, ``default``, the ``constraint`` it must
    meet (a noun phrase, "an int in [1, inf)") and its documentation ``text`` (one
    paragraph; empty when the docstring does not document it)."""

    name: str
    default: Any
    constraint: str
    text: str


def summary(cls: type) -> str:
    """The first sentence (or line) of ``cls``'s docstring."""
    doc = inspect.getdoc(cls) or ""
    first = " ".join(doc.split("\n\n", 1)[0].split())
    sentence = _SENTENCE_END.split(first, 1)[0]
    return sentence.rstrip(".") + "." if sentence else ""


def _documented(cls: type) -> dict[str, str]:
    """``name -> text`` from the numpydoc ``Parameters`` section; an entry naming
    several parameters (``a, b``) gives each the text."""
    doc = inspect.getdoc(cls) or ""
    sections = list(_SECTION.finditer(doc))
    for i, match in enumerate(sections):
        if match.group(1).strip() != "Parameters":
            continue
        end = sections[i + 1].start() if i + 1 < len(sections) else len(doc)
        body = doc[match.end():end]
        texts: dict[str, str] = {}
        names: list[str] = []
        lines: list[str] = []

        def close() -> None:
            for name in names:
                texts[name] = " ".join(" ".join(lines).split())

        for line in body.splitlines():
            if line and not line[0].isspace():
                if names:
                    close()
                # "name", "name : type", or "a, b"; a line of prose ends the section.
                head = line.split(" : ")[0]
                candidates = [n.strip() for n in head.split(",")]
                if not all(n.isidentifier() for n in candidates):
                    names = []
                    break
                names, lines = candidates, []
            elif names:
                lines.append(line.strip())
        if names:
            close()
        return texts
    return {}


def parameter_docs(cls: type) -> dict[str, ParameterDoc]:
    """Every constructor parameter of ``cls``, in signature order."""
    documented = _documented(cls)
    constraints = getattr(cls, "_parameter_constraints", {})
    out = {}
    for name, param in inspect.signature(cls.__init__).parameters.items():
        if name == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        constraint = constraints.get(name)
        out[name] = ParameterDoc(
            name,
            None if param.default is param.empty else param.default,
            constraint.describe() if constraint is not None else "",
            documented.get(name, ""),
        )
    return out
