"""Helpers of the smoke tests of the tools that write pages under docs/: load a
tool by path and pick a page apart by headings and table rows."""

import importlib.util
import re
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def load_tool(name):
    """``tools/<name>.py`` as a module (tools/ is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"_tools_{name}", TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sections(text, level=2):
    """Heading text -> what follows it, for headings of ``level`` ``#`` (None: any level)."""
    marker = r"#+ " if level is None else "#" * level + " "
    parts = re.split(rf"^{marker}", text, flags=re.M)
    return {part.splitlines()[0]: part for part in parts[1:]}


def row(section, label):
    """The one table row of ``section`` whose first cell is ``label``."""
    rows = [line for line in section.splitlines() if line.startswith(f"| {label} |")]
    assert len(rows) == 1, (label, section)
    return rows[0]


def cells(line):
    """A table row's cells after the first, bold marks removed."""
    return [cell.strip().strip("*") for cell in line.strip("|").split("|")][1:]


def decimals(line):
    """The decimal numbers of a row (integers such as counts are left out)."""
    return [float(v) for v in re.findall(r"(?<![\d.])\d+\.\d+", line)]
