"""The results of many replays as one table: a row per stream, a row per
parameter set overall; printed aligned, as JSON or as CSV.

Overall rows pool the streams of every log replayed with one parameter set:
``messages``, ``scored`` and ``labels_used`` are sums, ``accuracy`` is weighted
by each stream's scored messages (so it is the accuracy over all scored
messages), ``query_rate`` by its messages (all queries over all messages), and
``f1`` is the mean of the streams' F1 (macro over streams: F1 does not pool).
Regression streams pool ``mae`` and ``coverage`` weighted by scored readings and
``rmse`` as the root of the pooled mean square; anomaly streams sum ``alarms``, and
streams scored on NAB pool ``nab``, NAB's normalized score over all their series.

>>> results = [{"params": {"C": 1.0}, "logs": ["a.msgpack"], "streams": {
...     "s1": {"messages": 10, "scored": 8, "accuracy": 0.75, "f1": 0.5, "query_rate": 0.2,
...            "labels_used": 2, "path": "jitted"},
...     "s2": {"messages": 30, "scored": 24, "accuracy": 1.0, "f1": 1.0, "query_rate": 0.1,
...            "labels_used": 3, "path": "jitted"}}}]
>>> overall = table_rows(results)[-1]
>>> overall["stream"], overall["messages"], overall["accuracy"], round(overall["query_rate"], 3)
('(overall)', 40, 0.9375, 0.125)
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

__all__ = ["COLUMNS", "overall_by_params", "table_rows", "to_csv", "to_json", "to_text"]

COLUMNS = ("params", "logs", "stream", "messages", "scored", "accuracy", "f1", "mae", "rmse",
           "coverage", "alarms", "nab", "query_rate", "labels_used", "path")


def _params_text(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(params.items())) or "(defaults)"


def _pool(streams: list[dict]) -> dict[str, Any]:
    messages = sum(s["messages"] for s in streams)
    scored = sum(s.get("scored", 0) for s in streams)
    row: dict[str, Any] = {
        "messages": messages,
        "scored": scored,
        "labels_used": sum(s.get("labels_used", 0) for s in streams),
        "query_rate": (sum(s["query_rate"] * s["messages"] for s in streams) / messages
                       if messages else 0.0),
    }
    if streams and all("accuracy" in s for s in streams):
        # A stream with nothing scored has no accuracy (None): it weighs nothing.
        judged = [s for s in streams if s["accuracy"] is not None]
        row["accuracy"] = (sum(s["accuracy"] * s.get("scored", 0) for s in judged) / scored
                           if scored else None)
        row["f1"] = sum(s["f1"] for s in judged) / len(judged) if judged else None
    judged = [s for s in streams if s.get("mae") is not None]
    weight = sum(s["scored"] for s in judged)
    if judged and weight:
        row["mae"] = sum(s["mae"] * s["scored"] for s in judged) / weight
        row["rmse"] = (sum(s["rmse"] ** 2 * s["scored"] for s in judged) / weight) ** 0.5
        covered = [s for s in judged if s.get("coverage") is not None]
        if covered:
            row["coverage"] = (sum(s["coverage"] * s["scored"] for s in covered)
                               / sum(s["scored"] for s in covered))
    if streams and all("alarms" in s for s in streams):
        row["alarms"] = sum(s["alarms"] for s in streams)
    if streams and all("nab_raw" in s for s in streams):
        # NAB's corpus score: its parts sum over series, then normalize.
        raw, null, perfect = (sum(s[k] for s in streams) for k in ("nab_raw", "nab_null", "nab_perfect"))
        row["nab"] = 100.0 * (raw - null) / (perfect - null) if perfect != null else None
    return row


def overall_by_params(results: list[dict]) -> list[dict[str, Any]]:
    """One pooled row per parameter set, in order of first appearance."""
    groups: dict[str, tuple[dict, list]] = {}
    for result in results:
        key = _params_text(result["params"])
        groups.setdefault(key, (result["params"], []))[1].extend(result["streams"].values())
    return [{"params": params, **_pool(streams)} for params, streams in groups.values()]


def table_rows(results: list[dict]) -> list[dict[str, Any]]:
    """Per stream rows (each task's streams, in task order), then one overall row
    per parameter set (``stream`` is ``"(overall)"``)."""
    rows = []
    for result in results:
        for name, s in result["streams"].items():
            rows.append({"params": _params_text(result["params"]), "logs": " ".join(result["logs"]),
                         "stream": name, **{k: s.get(k) for k in COLUMNS[3:]}})
    for pooled in overall_by_params(results):
        rows.append({**pooled, "params": _params_text(pooled["params"]), "logs": "(all)",
                     "stream": "(overall)", "path": ""})
    return rows


def to_json(rows: list[dict]) -> str:
    return json.dumps(rows, indent=2, default=float)


def to_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in COLUMNS})
    return out.getvalue()


def to_text(rows: list[dict], columns: tuple[str, ...] | None = None) -> str:
    """An aligned table of ``columns`` (default: all but ``logs``); numbers
    right-aligned, rates to 4 places."""
    def cell(key: str, value: Any) -> str:
        if value is None:
            return ""
        if key in ("accuracy", "f1", "query_rate", "mae", "rmse", "coverage"):
            return f"{value:.4f}"
        if key == "nab":
            return f"{value:.2f}"
        if isinstance(value, int):
            return f"{value:,}"
        return str(value)

    shown = list(columns) if columns is not None else [c for c in COLUMNS if c != "logs"]
    cells = [[cell(k, row.get(k)) for k in shown] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(shown)]
    numeric = {"rank", "messages", "scored", "accuracy", "f1", "mae", "rmse", "coverage",
               "query_rate", "labels_used"}
    def line(values):
        return "  ".join(v.rjust(w) if k in numeric else v.ljust(w)
                         for k, v, w in zip(shown, values, widths)).rstrip()
    return "\n".join([line(shown)] + [line(r) for r in cells])
