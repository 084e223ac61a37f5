"""Write ``docs/leaderboard.md``: every edgelearn learner beside River and the papers.

The page is built from the results pages' summaries alone (``docs/data/*.json``, see
``tools/summaries.py``); it runs no protocol. For each protocol it lists every row
(edgelearn learners, their River peers, the paper's figure where the page has one)
with its mean metrics, label rate and CPU per instance where measured, the command
that rebuilds it and a link to its page. For each aim of issue 13 (items 2, 5 and 6)
it computes, from those rows, whether the aim is met and by how much; an aim whose
rows are missing says so and names the command that makes them. A results page whose
summary is missing is listed as missing with its command, never filled in.

Run from the repository root::

    .venv/bin/python tools/leaderboard.py           # or: make leaderboard
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path
from typing import NamedTuple

# tools/ is a folder of scripts, not a package: its sibling is importable from any cwd.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from summaries import DATA_DIR, LOWER_IS_BETTER, read_summaries  # noqa: E402

#: The results pages the leaderboard expects a summary from, in the page's order.
PAGES = ("results-label-budget", "results-paacds", "results-drift", "results-ensemble",
         "results-pafe", "results-kelm", "results-synthesis")
#: Column order of the metrics; a metric not named here comes after these, by name.
METRIC_ORDER = ("f1", "accuracy", "balanced_accuracy", "avg_realtime_accuracy", "micro_f1",
                "hamming_loss")
LIBRARY_ORDER = {"edgelearn": 0, "river": 1, "paper": 2}


class Aim(NamedTuple):
    """One aim of issue 13, as data: ``ours`` must be at least each of ``rivals`` on
    each of ``metrics`` in every protocol of page ``stem`` that each selector of
    ``protocols`` picks (a selector is a tuple of words a protocol's name must all
    contain, case-insensitively); and, if ``max_cpu_ratio`` is set, use at most that
    fraction of each rival's CPU per instance."""

    item: str
    text: str
    stem: str
    ours: str
    rivals: tuple[str, ...]
    metrics: tuple[str, ...]
    protocols: tuple[tuple[str, ...], ...]
    max_cpu_ratio: float | None = None


AIMS = (
    Aim("2", "at a 20% label budget, the new learner's mean F1 and mean accuracy at least River's "
        "EntropySampler (about 20% queries) and River's LogisticRegression with every label, under "
        "the PAACDS protocol and the haphazard-inputs protocol",
        "results-label-budget", "ActiveAROW", ("River EntropySampler", "River LR (all labels)"),
        ("f1", "accuracy"), (("paacds", "binary"), ("haphazard", "binary"))),
    Aim("5", "OnlineEnsemble at least River's ARFClassifier on SEA (ConceptDriftStream), Hyperplane "
        "and Electricity, at no more than 10% of ARF's CPU time per instance",
        "results-drift", "OnlineEnsemble (defaults)", ("River ARF",), ("accuracy",),
        (("sea", "conceptdriftstream"), ("hyperplane",), ("electricity",)), max_cpu_ratio=0.10),
    # The PAFE summary holds the mean over the 5 data sets; its page judges each one.
    Aim("6 (PAFE)", "PAFE at its defaults never below PA-I started fresh on the new channels on the "
        "5 paper data sets (X2 = X1 G, 10-row overlap); judged here on the mean over the data sets "
        "that the summary holds, each data set on its page",
        "results-pafe", "PAFE (defaults)", ("fresh PA-I", "fresh PA-I, PAFE's C"), ("accuracy",),
        (("x2 = x1 g", "10-row overlap"),)),
    Aim("6 (KELM)", "MultiLabelKELM at least River's classifier chain on micro-F1 on yeast and "
        "emotions at 20% labelled",
        "results-kelm", "KELM", ("River CC",), ("micro_f1",),
        (("yeast", "20%"), ("emotions", "20%"))),
)


def make_command(stem: str) -> str:
    """The command that writes page ``stem`` and its summary (the Makefile's target)."""
    return f"make {stem}"


def _by_stem(documents: list[dict]) -> dict[str, dict]:
    return {Path(document["page"]).stem: document for document in documents}


def _protocols(document: dict) -> dict[str, list[dict]]:
    """Protocol name -> its rows, in the order the summary first names each protocol."""
    grouped: dict[str, list[dict]] = {}
    for row in document["rows"]:
        grouped.setdefault(row["protocol"], []).append(row)
    return grouped


def _better_or_equal(metric: str, ours: float, theirs: float) -> bool:
    return ours <= theirs if metric in LOWER_IS_BETTER else ours >= theirs


def _gap(metric: str, ours: float, theirs: float) -> float:
    """How far ours is ahead (positive) or behind (negative), whichever way is better."""
    return theirs - ours if metric in LOWER_IS_BETTER else ours - theirs


def _select(aim: Aim, protocols: dict[str, list[dict]], problems: list[str]) -> list[str]:
    """The page's protocols the aim's selectors pick, each selector at least one."""
    chosen = []
    for selector in aim.protocols:
        picked = [p for p in protocols if all(word.lower() in p.lower() for word in selector)]
        if not picked:
            problems.append(f"no protocol of {aim.stem} names {' and '.join(map(repr, selector))}")
        chosen += [p for p in picked if p not in chosen]
    return chosen


def _compare(aim: Aim, protocol: str, rows: dict[str, dict], problems: list[str]) -> list[dict]:
    """Ours against each rival on one protocol: every metric, and the CPU ratio if the
    aim bounds it. A row or figure the comparison needs and lacks goes to ``problems``."""
    missing = [name for name in (aim.ours, *aim.rivals) if name not in rows]
    if missing:
        problems.append(f"{protocol} has no row {', '.join(map(repr, missing))} "
                        f"(its rows: {', '.join(map(repr, rows))})")
        return []
    ours, comparisons = rows[aim.ours], []
    for rival in aim.rivals:
        for metric in aim.metrics:
            if metric not in ours["metrics"] or metric not in rows[rival]["metrics"]:
                problems.append(f"{protocol}: {aim.ours} or {rival} has no {metric}")
                continue
            a, b = ours["metrics"][metric], rows[rival]["metrics"][metric]
            comparisons.append({"protocol": protocol, "rival": rival, "metric": metric,
                                "ours": a, "theirs": b, "gap": _gap(metric, a, b),
                                "ok": _better_or_equal(metric, a, b)})
        if aim.max_cpu_ratio is None:
            continue
        mine, theirs = ours["cpu_us_per_instance"], rows[rival]["cpu_us_per_instance"]
        if mine is None or theirs is None or theirs <= 0:
            problems.append(f"{protocol}: CPU per instance of {aim.ours} or {rival} not measured")
            continue
        ratio = mine / theirs
        comparisons.append({"protocol": protocol, "rival": rival, "metric": "CPU ratio",
                            "ours": ratio, "theirs": aim.max_cpu_ratio,
                            "gap": aim.max_cpu_ratio - ratio, "ok": ratio <= aim.max_cpu_ratio})
    return comparisons


def judge(aim: Aim, documents: dict[str, dict]) -> dict:
    """``{"status": "met" | "not met" | "cannot be judged", "line": markdown}``."""
    head = f"* **Item {aim.item}**: {aim.text}."
    document = documents.get(aim.stem)
    if document is None:
        return {"status": "cannot be judged",
                "line": f"{head} **Cannot be judged**: the summary of {aim.stem} is missing "
                        f"(`{make_command(aim.stem)}` writes it)."}
    protocols, problems = _protocols(document), []
    chosen = _select(aim, protocols, problems)
    comparisons = []
    for protocol in chosen:
        names = [r["learner"] for r in protocols[protocol]]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            problems.append(f"{protocol} has more than one row named {', '.join(map(repr, twice))}")
            continue
        comparisons += _compare(aim, protocol, {r["learner"]: r for r in protocols[protocol]}, problems)
    if problems:
        return {"status": "cannot be judged",
                "line": f"{head} **Cannot be judged** from {aim.stem} (`{document['command']}`): "
                        + "; ".join(problems) + "."}
    detail = "; ".join(
        f"{protocol}: " + ", ".join(_comparison(aim, c, with_protocol=False)
                                    for c in comparisons if c["protocol"] == protocol)
        for protocol in chosen) + _label_rates(aim, protocols, chosen)
    short = [c for c in comparisons if not c["ok"]]
    if not short:
        closest = min(comparisons, key=lambda c: c["gap"])
        return {"status": "met",
                "line": f"{head} **Met** ({len(comparisons)} of {len(comparisons)} comparisons; "
                        f"the closest: {_comparison(aim, closest)}). All: {detail}."}
    return {"status": "not met",
            "line": f"{head} **Not met**: short in {len(short)} of {len(comparisons)} comparisons: "
                    + "; ".join(_comparison(aim, c) for c in sorted(short, key=lambda c: c["gap"]))
                    + f". All: {detail}."}


def _label_rates(aim: Aim, protocols: dict[str, list[dict]], chosen: list[str]) -> str:
    """The labels each side learned, where ours did not learn them all: a verdict at a
    label budget is read beside the budget actually spent."""
    parts = []
    for protocol in chosen:
        rows = {row["learner"]: row for row in protocols[protocol]}
        rates = [(name, rows[name]["label_rate"]) for name in (aim.ours, *aim.rivals)]
        if rates[0][1] is not None and rates[0][1] < 1.0:
            parts.append(f"{protocol}: " + ", ".join(
                f"{name} {'—' if rate is None else f'{rate:.1%}'}" for name, rate in rates))
    return f". Labels learned: {'; '.join(parts)}" if parts else ""


def _comparison(aim: Aim, c: dict, with_protocol: bool = True) -> str:
    where = f"{c['protocol']}: " if with_protocol else ""
    if c["metric"] == "CPU ratio":
        return (f"{where}{aim.ours}'s CPU per instance {c['ours']:.3f} of "
                f"{c['rival']}'s (at most {c['theirs']:.2f})")
    return f"{where}{c['metric']} {c['ours']:.3f} vs {c['rival']} {c['theirs']:.3f} ({c['gap']:+.3f})"


def _metric_names(rows: list[dict]) -> list[str]:
    names = {name for row in rows for name in row["metrics"]}
    known = [m for m in METRIC_ORDER if m in names]
    return known + sorted(names - set(known))


def _label(metric: str) -> str:
    return metric.replace("_", " ") + (" ↓" if metric in LOWER_IS_BETTER else "")


def protocol_table(protocol: str, rows: list[dict], document: dict, page_exists: bool) -> list[str]:
    """One protocol's rows, best first on its first metric, with the rebuilding command."""
    metrics = _metric_names(rows)
    first = metrics[0]
    sign = 1 if first in LOWER_IS_BETTER else -1

    def order(row):
        value = row["metrics"].get(first)
        return (value is None, sign * value if value is not None else 0.0,
                LIBRARY_ORDER[row["library"]])

    stem = Path(document["page"]).stem
    where = f"[{stem}]({stem}.md)" if page_exists else f"{stem} (page missing)"
    # CPU as a ratio to the first River row measured in the same run, where there is one.
    reference = next((r for r in rows if r["library"] == "river"
                      and r["cpu_us_per_instance"] is not None), None)
    header = ["learner", "library", *map(_label, metrics), "label rate", "CPU µs/instance",
              "page", "rebuilt by"]
    lines = [f"### {protocol}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in sorted(rows, key=order):
        cells = [row["learner"], row["library"]]
        cells += [f"{row['metrics'][m]:.3f}" if m in row["metrics"] else "—" for m in metrics]
        cells.append("—" if row["label_rate"] is None else f"{row['label_rate']:.1%}")
        cpu = row["cpu_us_per_instance"]
        if cpu is None:
            cells.append("—")
        elif reference is not None:
            cells.append(f"{cpu:.2f} ({cpu / reference['cpu_us_per_instance']:.2f}× "
                         f"{reference['learner']})")
        else:
            cells.append(f"{cpu:.2f}")
        cells += [where, f"`{document['command']}`"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def render(root: Path | str = ".") -> str:
    root = Path(root)
    documents = _by_stem(read_summaries(root))
    stems = list(PAGES) + sorted(set(documents) - set(PAGES))
    verdicts = [judge(aim, documents) for aim in AIMS]
    counts = {status: sum(v["status"] == status for v in verdicts)
              for status in ("met", "not met", "cannot be judged")}
    lines = [
        "# Leaderboard: edgelearn beside River and the papers",
        "",
        f"Produced by `python tools/leaderboard.py` (or `make leaderboard`) on "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}, from the results "
        f"pages' summaries in `{DATA_DIR.as_posix()}/` alone: it runs no protocol. Each row comes "
        "from one results page and names the command that rebuilt it; rerunning that command "
        "rewrites the page and its summary, and rerunning this one rewrites this page.",
        "",
        "## The aims of issue 13",
        "",
        f"Computed from the rows below: {counts['met']} met, {counts['not met']} not met, "
        f"{counts['cannot be judged']} cannot be judged. \"At least\" compares means as the "
        "summaries hold them (fractions, before rounding); a metric marked ↓ is better lower.",
        "",
        *(v["line"] for v in verdicts),
        "",
        "## Pages",
        "",
        "| page | summary | written | rows | command |",
        "|---|---|---|---|---|",
    ]
    for stem in stems:
        document = documents.get(stem)
        page = f"[{stem}]({stem}.md)" if (root / "docs" / f"{stem}.md").is_file() else f"{stem} (no page)"
        if document is None:
            lines.append(f"| {page} | **missing** | — | — | `{make_command(stem)}` |")
        else:
            lines.append(f"| {page} | {DATA_DIR.as_posix()}/{stem}.json | {document['written']} | "
                         f"{len(document['rows'])} | `{document['command']}` |")
    lines += ["", "Mean metrics as fractions; label rate is the fraction of labels learned; CPU per "
              "instance only where the page measured CPU time (wall-clock throughput is not "
              "copied here), with its ratio to the River row measured in the same run. Within a "
              "protocol, rows are sorted best first on its first metric.", ""]
    for stem in stems:
        document = documents.get(stem)
        if document is None:
            continue
        lines += [f"## {stem}", ""]
        page_exists = (root / "docs" / f"{stem}.md").is_file()
        for protocol, rows in _protocols(document).items():
            lines += protocol_table(protocol, rows, document, page_exists)
    return "\n".join(lines)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="tools/leaderboard.py",
        description="Write docs/leaderboard.md from the results pages' summaries "
                    "(docs/data/*.json): every learner beside River and the papers, and issue "
                    "13's aims computed from the rows.")
    parser.add_argument("--root", default=".",
                        help="repository root whose docs/data/ is read (default: .)")
    parser.add_argument("--out", default=None,
                        help="markdown file to write (default: ROOT/docs/leaderboard.md)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    out = Path(args.out) if args.out else Path(args.root) / "docs" / "leaderboard.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(args.root), encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
