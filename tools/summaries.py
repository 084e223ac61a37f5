"""Machine-readable headlines of the results pages, for ``docs/leaderboard.md``.

Each results tool writes its page ``docs/<stem>.md`` and, beside it, the page's
headline rows as ``docs/data/<stem>.json`` through :func:`write_summary`; the
leaderboard tool reads every such file with :func:`read_summaries` and never reruns a
protocol itself. One row is one learner's mean result on one protocol:

    {"protocol": "label budget 20%, PAACDS protocol (13 binary tasks, seeds 0-9)",
     "learner": "ActiveAROW",            # as the page names it
     "library": "edgelearn",             # "edgelearn", "river" or "paper"
     "metrics": {"f1": 0.766, "accuracy": 0.808},   # fractions in [0, 1]
     "label_rate": 0.208,                # fraction of labels learned; None: not stated
     "cpu_us_per_instance": 3.1}         # None: not measured

Metric names used so far: accuracy, f1, balanced_accuracy, avg_realtime_accuracy,
micro_f1, hamming_loss (lower is better: listed in LOWER_IS_BETTER).
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path

LIBRARIES = ("edgelearn", "river", "paper")
LOWER_IS_BETTER = frozenset({"hamming_loss", "ranking_loss", "one_error"})
DATA_DIR = Path("docs") / "data"


def _check_row(row: dict, where: str) -> dict:
    for key in ("protocol", "learner", "library", "metrics"):
        if key not in row:
            raise ValueError(f"{where}: a summary row needs '{key}'. Got keys {sorted(row)}.")
    if row["library"] not in LIBRARIES:
        raise ValueError(f"{where}: 'library' must be one of {LIBRARIES}. Got {row['library']!r}.")
    if not row["metrics"]:
        raise ValueError(f"{where}: 'metrics' must name at least one metric. Got {{}}.")
    for name, value in row["metrics"].items():
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{where}: metric '{name}' must be a finite number. Got {value!r}.")
    rate = row.get("label_rate")
    if rate is not None and not 0.0 <= rate <= 1.0:
        raise ValueError(f"{where}: 'label_rate' must be in [0, 1] or None. Got {rate!r}.")
    return {
        "protocol": str(row["protocol"]),
        "learner": str(row["learner"]),
        "library": row["library"],
        "metrics": {str(k): float(v) for k, v in row["metrics"].items()},
        "label_rate": None if rate is None else float(rate),
        "cpu_us_per_instance": (None if row.get("cpu_us_per_instance") is None
                                else float(row["cpu_us_per_instance"])),
    }


def write_summary(stem: str, command: str, rows: list[dict], root: Path | str = ".") -> Path:
    """Write ``docs/data/<stem>.json`` (under ``root``) for the page ``docs/<stem>.md``
    that ``command`` wrote; returns the file's path."""
    checked = [_check_row(row, f"{stem} row {i}") for i, row in enumerate(rows)]
    path = Path(root) / DATA_DIR / f"{stem}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "page": f"docs/{stem}.md",
        "command": command,
        "written": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "rows": checked,
    }
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return path


def read_summaries(root: Path | str = ".") -> list[dict]:
    """Every ``docs/data/*.json`` summary under ``root``, sorted by file name, rows checked."""
    documents = []
    for path in sorted((Path(root) / DATA_DIR).glob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        document["rows"] = [_check_row(row, f"{path.name} row {i}")
                            for i, row in enumerate(document["rows"])]
        documents.append(document)
    return documents
