"""One registry of counters that the status message, the CLI and exporters read.

Components either own :class:`Counter` objects made by :meth:`CounterRegistry.counter`
(``counter.inc()``), or keep their own counts on their hot path and register a
collector that returns them (``registry.register("pipeline", pipeline.counters)``), as
prometheus_client's custom collectors do; nothing here is imported from it.
Each counter is either a plain count or a *problem* (a reject, an error, a lost
connection): ``edgelearn status`` lists the problems that are not zero.

>>> registry = CounterRegistry()
>>> errors = registry.counter("worker_errors", "messages whose processing raised", problem=True)
>>> errors.inc()
>>> registry.register("bridge", lambda: {"connects": 2, "disconnects": 0},
...                   problems={"disconnects"})
>>> registry.collect()
{'worker_errors': 1, 'connects': 2, 'disconnects': 0}
>>> sorted(registry.problems())
['disconnects', 'worker_errors']
>>> print(registry.exposition(prefix="edgelearn_"), end="")
# HELP edgelearn_worker_errors_total messages whose processing raised
# TYPE edgelearn_worker_errors_total counter
edgelearn_worker_errors_total 1
# HELP edgelearn_connects_total connects
# TYPE edgelearn_connects_total counter
edgelearn_connects_total 2
# HELP edgelearn_disconnects_total disconnects
# TYPE edgelearn_disconnects_total counter
edgelearn_disconnects_total 0

(A counter without documentation gets its name as its HELP text.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping

__all__ = ["Counter", "CounterRegistry"]

_NAME = re.compile(r"[a-z_][a-z0-9_]*")


class Counter:
    """A count owned by one component; only goes up."""

    __slots__ = ("name", "doc", "value")

    def __init__(self, name: str, doc: str = ""):
        self.name = name
        self.doc = doc
        self.value = 0

    def inc(self, amount: int = 1) -> None:
        self.value += amount

    def __repr__(self) -> str:
        return f"Counter({self.name!r}, value={self.value})"


class CounterRegistry:
    """Every counter of one gateway, by name (a name belongs to one source)."""

    def __init__(self) -> None:
        self._counters: dict[str, Counter] = {}
        self._collectors: dict[str, Callable[[], Mapping[str, int]]] = {}
        self._problems: set[str] = set()
        # A source's rule applies to the names that source reports, and only to those.
        self._problem_rules: dict[str, Callable[[str], bool]] = {}
        self._docs: dict[str, str] = {}
        self._gauges: set[str] = set()

    def counter(self, name: str, doc: str = "", *, problem: bool = False) -> Counter:
        """A new counter registered under ``name``."""
        if not _NAME.fullmatch(name):
            raise ValueError(f"The 'name' parameter of CounterRegistry.counter must be "
                             f"lower_case_with_underscores. Got {name!r}.")
        if name in self._counters:
            raise ValueError(f"The 'name' parameter of CounterRegistry.counter must be new. "
                             f"Got {name!r}, registered already.")
        counter = self._counters[name] = Counter(name, doc)
        self._docs[name] = doc
        if problem:
            self._problems.add(name)
        return counter

    def register(
        self,
        source: str,
        collect: Callable[[], Mapping[str, int]],
        *,
        problems: Collection[str] | Callable[[str], bool] = (),
        docs: Mapping[str, str] | None = None,
        gauges: Collection[str] = (),
    ) -> None:
        """Add a component that keeps its own counts: ``collect()`` returns them.
        ``problems`` names the ones that count something gone wrong (or is a predicate
        on names); ``gauges`` the ones that go up and down (a queue's length)."""
        if source in self._collectors:
            raise ValueError(f"The 'source' parameter of CounterRegistry.register must be "
                             f"new. Got {source!r}, registered already.")
        self._collectors[source] = collect
        if callable(problems):
            self._problem_rules[source] = problems
        else:
            self._problems.update(problems)
        self._docs.update(docs or {})
        self._gauges.update(gauges)

    def collect(self) -> dict[str, int]:
        """Every counter's current value: own counters first, then each source's."""
        values = {name: c.value for name, c in self._counters.items()}
        for collect in self._collectors.values():
            values.update(collect())
        return values

    def problems(self, names: Collection[str] | None = None) -> set[str]:
        """The names, among ``names`` (default: all current), that count problems."""
        names = set(self.collect() if names is None else names)
        found = names & self._problems
        for source, rule in self._problem_rules.items():
            found.update(n for n in names & set(self._collectors[source]()) if rule(n))
        return found

    def exposition(self, prefix: str = "edgelearn_", labels: Mapping[str, str] | None = None) -> str:
        """The counters in Prometheus' text exposition format, for an exporter (or a
        node_exporter textfile collector) to serve (written by the one writer of the
        format, :mod:`firmware_bridge.service.sinks.prometheus_text`)."""
        from .sinks.prometheus_text import family

        sample_labels = dict(labels or {})
        return "".join(
            family(prefix + name, "gauge" if name in self._gauges else "counter",
                   self._docs.get(name) or name.replace("_", " "), [(sample_labels, value)])
            for name, value in self.collect().items())
