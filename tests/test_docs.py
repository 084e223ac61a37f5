"""The pages under docs/ and the README stay true to the code and to the repository.

* docs/protocol.md names every reject reason and counter the gateway can report, its
  limit and topic defaults are the code's, and every example payload on it gets the
  verdict written beside it;
* every docs/ page the README or a page points to exists;
* no tracked file reaches outside the repository (the material the project came from,
  or an absolute path of the machine a file was written on).
"""

import re
import subprocess
from dataclasses import fields
from pathlib import Path

import pytest

from firmware_bridge.pipeline import REJECT_COUNTERS
from firmware_bridge.wire import (
    COUNTER_KEYS,
    INBOUND_KINDS,
    KINDS,
    DataBatch,
    DataMessage,
    LabelMessage,
    Limits,
    Reject,
    Topics,
    parse_message,
)

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = (ROOT / "docs" / "protocol.md").read_text()


def table_first_cells(text):
    """The first cell of every markdown table row, without its backticks."""
    return {m.strip("`") for m in re.findall(r"^\| (`[^`|]+`) \|", text, flags=re.M)}


def test_protocol_page_names_every_reject_reason():
    # The tables of the Rejects section list exactly the reasons the code counts.
    rejects = PROTOCOL.split("\n## Rejects\n", 1)[1]
    listed = table_first_cells(rejects)
    missing = [reason for reason in REJECT_COUNTERS if reason not in listed]
    assert not missing, f"docs/protocol.md has no row for {missing}"
    stale = sorted(listed - set(REJECT_COUNTERS))
    assert not stale, f"docs/protocol.md lists reasons the code does not define: {stale}"
    assert "`non_finite_values`" in rejects and "non_finite_values" in COUNTER_KEYS


def test_protocol_page_limits_are_the_defaults():
    rows = dict(re.findall(r"^\| `(max_\w+)` \| (\d+) \|", PROTOCOL, flags=re.M))
    defaults = Limits()
    assert rows == {f.name: str(getattr(defaults, f.name)) for f in fields(Limits)}


def test_protocol_page_topics_are_the_defaults():
    topics = Topics()
    for kind in KINDS:
        template = getattr(topics, f"{kind}_template")
        assert f"`{template}`" in PROTOCOL, template
    assert INBOUND_KINDS == ("data", "label")


EXAMPLE = re.compile(
    r"^printf '((?:\\[0-7]{3})+)' \| mosquitto_pub -h localhost -t (\S+) -q 1 -s"
    r"  # (accepted|rejected: \w+)(.*)$",
    flags=re.M,
)


def examples():
    found = EXAMPLE.findall(PROTOCOL)
    # Every printf line on the page is an example this test reads.
    assert len(found) == PROTOCOL.count("\nprintf '")
    return found


def test_protocol_page_has_examples_of_both_verdicts():
    verdicts = [v.split(":")[0] for _, _, v, _ in examples()]
    assert verdicts.count("accepted") >= 3 and verdicts.count("rejected") >= 4


@pytest.mark.parametrize("octal, topic, verdict, rest", examples())
def test_protocol_page_examples(octal, topic, verdict, rest):
    payload = bytes(int(o, 8) for o in re.findall(r"\\([0-7]{3})", octal))
    task = re.match(r" \(an? (\w+) stream\)", rest)  # an answer of a regression or anomaly stream
    result = parse_message(topic, payload, Topics(), task=task.group(1) if task else "binary")
    if verdict == "accepted":
        assert isinstance(result, (DataMessage, DataBatch, LabelMessage)), result
        kind = Topics().parse(topic)[0]
        assert isinstance(result, (DataMessage, DataBatch) if kind == "data" else LabelMessage)
        if isinstance(result, DataBatch):  # every reading of an accepted batch is used
            assert result.readings and not result.rejects, result
    else:
        assert isinstance(result, Reject), result
        assert result.reason == verdict.split(": ")[1], result


def test_protocol_page_json_matches_the_first_example():
    # The JSON shown for the first data message is what its bytes decode to.
    octal, topic, _, _ = examples()[0]
    payload = bytes(int(o, 8) for o in re.findall(r"\\([0-7]{3})", octal))
    message = parse_message(topic, payload, Topics())
    assert (message.ts, message.seq, message.channels) == (1732420800.5, 42, {"temp": 21.5, "co2": 640.0})
    assert '{"ts": 1732420800.5, "seq": 42, "ch": {"temp": 21.5, "co2": 640}}' in PROTOCOL


def doc_links(text, base):
    """Paths of the docs pages ``text`` points to, resolved against ``base``."""
    targets = set(re.findall(r"`(docs/[\w.-]+\.md)`", text))
    targets |= set(re.findall(r"\]\(([\w./-]+\.md)\)", text))
    return {target: (ROOT if target.startswith("docs/") else base) / target for target in targets}


def test_every_docs_page_the_readme_names_exists():
    links = doc_links((ROOT / "README.md").read_text(), ROOT)
    assert {"docs/architecture.md", "docs/protocol.md", "docs/learners.md"} <= set(links)
    missing = [target for target, path in links.items() if not path.is_file()]
    assert not missing, f"README.md points to missing pages: {missing}"


def test_every_link_between_docs_pages_resolves():
    for page in (ROOT / "docs").glob("*.md"):
        for target, path in doc_links(page.read_text(), page.parent).items():
            assert path.is_file(), f"{page.name} points to missing {target}"


# Spelled in pieces so that this file does not match itself.
OUTSIDE = [
    re.escape(".." + "/shared"),
    re.escape("/" + "work/"),
    re.escape("/" + "home/"),
    r"\b\d{3}_[0-9a-f]{16}\." + "txt",  # a seed file of the papers
]


def test_no_tracked_file_reaches_outside_the_repository():
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    pattern = re.compile("|".join(OUTSIDE))
    hits = []
    for name in listed.stdout.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file() or path.suffix in (".gz", ".msgpack"):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{name}:{number}: {line.strip()[:80]}")
    assert not hits, "\n".join(hits)
