"""What mergeable learners share: contributions, group models, and the exact
arithmetic that combines them.

A learner that declares the ``"merge"`` capability (``ActiveAROW``, ``PA``,
``PAACDS``, ``AROWRegressor``)
answers three calls:

* ``learner.contribution()``: a plain dict (lists, floats, channel *names*; msgpack
  can pack it) of what the learner learned **since its last contribution**, so a
  group that adds every contribution it receives counts nothing twice;
* ``Kind.merge(contributions, weights, group=None)``: the group model, ``group`` (or
  nothing) plus each contribution times its weight;
* ``Kind.from_group(group, **params)`` (or ``learner.load_group(group)`` on a learner
  that has learned nothing): a learner that starts from the group model.

A contribution and a group model have one format, so a group model is the
contribution of a learner that would have seen everything the group saw.  Channels
are matched by name, never by slot: two learners that met their channels in
different orders merge channel by channel.

Channel statistics (count, mean, population variance) are merged with Chan, Golub
& LeVeque's parallel formula ("Updating formulae and a pairwise algorithm for
computing sample variances", 1979); a contribution's statistics are those of the
readings since the last contribution, taken out of the running totals with the
same formula solved the other way (:func:`split_statistics`).

This module imports only the standard library and NumPy; it knows no broker.
"""

from __future__ import annotations

import math

import numpy as np

#: The format of contributions and group models this build writes and reads.
CONTRIBUTION_VERSION = 1

#: No contribution's weight in a merge may exceed this: one contributor cannot
#: outweigh this many equal ones.
MAX_WEIGHT = 100.0


def combine_statistics(n_a, mean_a, var_a, n_b, mean_b, var_b):
    """Count, mean and population variance of two samples together, from each
    one's (Chan et al.'s parallel formula; arrays or floats, an empty side is
    ``n = 0``).

    >>> a, b = np.array([1.0, 2.0, 4.0]), np.array([3.0, 9.0])
    >>> n, m, v = combine_statistics(3, a.mean(), a.var(), 2, b.mean(), b.var())
    >>> n, round(float(m), 12), round(float(v), 12) == round(float(np.r_[a, b].var()), 12)
    (5, 3.8, True)
    """
    n_a, n_b = np.asarray(n_a, dtype=np.float64), np.asarray(n_b, dtype=np.float64)
    n = n_a + n_b
    safe = np.where(n > 0, n, 1.0)
    delta = np.asarray(mean_b, dtype=np.float64) - mean_a
    mean = np.where(n > 0, mean_a + delta * n_b / safe, 0.0)
    m2 = n_a * var_a + n_b * var_b + delta * delta * n_a * n_b / safe
    var = np.where(n > 0, m2 / safe, 0.0)
    return _same_kind(n, n_a, n_b), mean, var


def split_statistics(n, mean, var, n_before, mean_before, var_before):
    """Count, mean and population variance of the readings that came after a
    sample's first ``n_before`` ones, from the statistics of all ``n`` and of the
    first ``n_before``: :func:`combine_statistics` solved for its second side.
    Where nothing came after, ``(0, 0.0, 0.0)``.

    >>> x = np.array([1.0, 2.0, 4.0, 3.0, 9.0])
    >>> n, m, v = split_statistics(5, x.mean(), x.var(), 3, x[:3].mean(), x[:3].var())
    >>> n, round(float(m), 12), round(float(v), 12)
    (2, 6.0, 9.0)
    """
    n = np.asarray(n, dtype=np.float64)
    n_before = np.asarray(n_before, dtype=np.float64)
    n_after = n - n_before
    safe = np.where(n_after > 0, n_after, 1.0)
    mean_after = np.where(n_after > 0, (n * mean - n_before * mean_before) / safe, 0.0)
    delta = mean_after - mean_before
    m2_after = n * var - n_before * var_before - delta * delta * n_before * n_after / np.where(n > 0, n, 1.0)
    var_after = np.where(n_after > 0, np.maximum(m2_after, 0.0) / safe, 0.0)
    return _same_kind(n_after, n, n_before), mean_after, var_after


def _same_kind(value, *inputs):
    # Counts stay ints when they came in as ints (a weighted merge makes floats).
    if all(np.asarray(v).ndim == 0 for v in (value, *inputs)):
        v = float(value)
        return int(v) if v.is_integer() else v
    return value


def check_weights(contributions: list, weights) -> list[float]:
    """The merge's weights as floats, one per contribution, each finite and in
    [0, MAX_WEIGHT]; ``None`` gives every contribution weight 1."""
    if weights is None:
        return [1.0] * len(contributions)
    weights = list(weights)
    if len(weights) != len(contributions):
        raise ValueError(f"The 'weights' parameter of merge must be a list of one weight per contribution "
                         f"({len(contributions)}). Got {len(weights)} weights.")
    checked = []
    for w in weights:
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) \
                or not 0.0 <= w <= MAX_WEIGHT:
            raise ValueError(f"The 'weights' parameter of merge must be a list of floats in "
                             f"[0, {MAX_WEIGHT:g}]. Got {w!r}.")
        checked.append(float(w))
    return checked


def check_kind(owner: str, contribution: dict, structure: dict) -> None:
    """A contribution (or group model) is of ``owner``'s kind, of this format's
    version, and has the ``structure`` (the parameters that size it) given."""
    if not isinstance(contribution, dict):
        raise TypeError(f"A contribution to {owner} must be a dict. Got {type(contribution).__name__}.")
    if contribution.get("kind") != owner:
        raise ValueError(f"This contribution is of a {contribution.get('kind')!r}, not a {owner}.")
    if contribution.get("version") != CONTRIBUTION_VERSION:
        raise ValueError(f"{owner} contribution version {contribution.get('version')!r} is not supported "
                         f"(this build reads {CONTRIBUTION_VERSION}).")
    if contribution.get("structure") != structure:
        raise ValueError(f"This {owner} contribution has the structure {contribution.get('structure')!r}; "
                         f"the group's is {structure!r}.")


class ChannelTable:
    """Rows of per-channel numbers keyed by channel name: the working form of a
    contribution's ``channels`` part while contributions are added up.

    ``columns`` maps a column name to its width (1: a number per channel; k: a
    list of k per channel).  Channel statistics are the columns ``n``, ``mean``,
    ``var``; everything else is added."""

    def __init__(self, columns: dict[str, int]):
        self.columns = columns
        self.rows: dict = {}

    @classmethod
    def from_part(cls, part: dict, columns: dict[str, int]) -> "ChannelTable":
        table = cls(columns)
        names = part["names"]
        arrays = {c: np.asarray(part[c], dtype=np.float64).reshape(len(names), w)
                  for c, w in columns.items()}
        for i, name in enumerate(names):
            table.rows[name] = {c: arrays[c][i].copy() for c in columns}
        return table

    def add(self, other: "ChannelTable", weight: float, flip: tuple = ()) -> None:
        """Add ``other``'s rows times ``weight`` (statistics by Chan's formula with
        counts times ``weight``); the columns in ``flip`` change sign first (a
        binary model whose labels are the other way round)."""
        for name, row in other.rows.items():
            mine = self.rows.get(name)
            if mine is None:
                mine = self.rows[name] = {c: np.zeros(w) for c, w in self.columns.items()}
            if "n" in self.columns:
                n, mean, var = combine_statistics(mine["n"], mine["mean"], mine["var"],
                                                  weight * row["n"], row["mean"], row["var"])
                mine["n"], mine["mean"], mine["var"] = n, mean, var
            for c in self.columns:
                if c in ("n", "mean", "var"):
                    continue
                mine[c] = mine[c] + weight * (-row[c] if c in flip else row[c])

    def to_part(self) -> dict:
        names = list(self.rows)
        part: dict = {"names": names}
        for c, w in self.columns.items():
            values = [self.rows[name][c] for name in names]
            part[c] = [float(v[0]) for v in values] if w == 1 else [[float(x) for x in v] for v in values]
        return part


def merge_contributions(owner: str, structure: dict, columns: dict[str, int], summed: tuple,
                        contributions: list, weights, group: dict | None, flip: tuple = (),
                        by_class: tuple = ()) -> dict:
    """The group model ``group`` (or an empty one) plus each contribution times
    its weight: channels by name (``columns``), the top-level lists ``summed``
    added, a binary model's labels aligned (a contribution whose labels are the
    other way round adds its ``flip`` columns and top-level lists with their sign
    changed). A multiclass model's (``structure["n_classes"]``) columns and lists in
    ``by_class`` hold one block per class, in its labels' order: each
    contribution's blocks are put in the group's label order first
    (:func:`align_classes`)."""
    weights = check_weights(contributions, weights)
    n_classes = structure.get("n_classes") if isinstance(structure, dict) else None
    if group is None:
        group = empty_group(owner, structure, columns, summed,
                            {key: n_classes for key in summed if key in by_class} if n_classes else None)
    check_kind(owner, group, structure)
    table = ChannelTable.from_part(group["channels"], columns)
    totals = {key: np.asarray(group[key], dtype=np.float64) for key in summed}
    labels = list(group["labels"])
    for contribution, weight in zip(contributions, weights):
        check_kind(owner, contribution, structure)
        if n_classes:
            labels, order = align_classes(owner, labels, list(contribution["labels"]), n_classes)
            contribution = in_class_order(contribution, order, n_classes, by_class)
            reversed_labels = False
        else:
            labels, reversed_labels = align_labels(owner, labels, list(contribution["labels"]))
        sign_flip = flip if reversed_labels else ()
        table.add(ChannelTable.from_part(contribution["channels"], columns), weight, sign_flip)
        for key in summed:
            value = np.asarray(contribution[key], dtype=np.float64)
            totals[key] = totals[key] + weight * (-value if key in sign_flip else value)
    return {"kind": owner, "version": CONTRIBUTION_VERSION, "structure": dict(structure),
            "labels": labels, "channels": table.to_part(),
            **{key: [float(v) for v in totals[key]] for key in summed}}


def align_labels(owner: str, group: list, other: list) -> tuple[list, bool]:
    """The group's labels after a contribution's, and whether the contribution's are
    the other way round. Labels are ``[negative, positive]`` (None: not met yet) or,
    before any, empty; a side one has not met takes the other's label.

    >>> align_labels("PA", ["no", "yes"], ["yes", "no"]), align_labels("PA", ["no", "yes"], [None, "yes"])
    ((['no', 'yes'], True), (['no', 'yes'], False))
    >>> align_labels("PA", [None, "yes"], ["yes", "no"])
    (['no', 'yes'], True)
    """
    if not other:
        return group, False
    if not group:
        return other, False
    for candidate, turned in ((other, False), (other[::-1], True)):
        if all(a is None or b is None or a == b for a, b in zip(group, candidate)):
            if turned and all(a is None or b is None or a == b for a, b in zip(group, other)):
                turned = False  # fits both ways (one label each, on different sides): keep it
                candidate = other
            return [a if a is not None else b for a, b in zip(group, candidate)], turned
    raise ValueError(f"This {owner} contribution knows the labels {other!r}; the group's are {group!r}.")


def align_classes(owner: str, group: list, other: list, n_classes: int) -> tuple[list, list[int]]:
    """The group's labels after a multiclass contribution's, and for each of the
    contribution's labels (its blocks' order) the group's block it goes to; a label
    the group has not met takes the next free block.

    >>> align_classes("ActiveAROW", ["a", "b"], ["c", "a"], 3)
    (['a', 'b', 'c'], [2, 0])
    """
    labels = list(group)
    order = []
    for label in other:
        if label not in labels:
            if len(labels) >= n_classes:
                raise ValueError(f"This {owner} contribution knows the labels {other!r}; with the group's "
                                 f"{group!r} they are more than n_classes={n_classes}.")
            labels.append(label)
        order.append(labels.index(label))
    return labels, order


def in_class_order(contribution: dict, order: list[int], n_classes: int, by_class: tuple) -> dict:
    """``contribution`` with its per-class blocks (the columns and lists in
    ``by_class``) moved to the group's blocks ``order``; blocks of classes it has
    not met (beyond its labels) are left out: it learned nothing of them."""
    def moved(values, rows_first: bool):
        a = np.asarray(values, dtype=np.float64)
        a = a.reshape((len(a), n_classes, -1) if rows_first else (n_classes, -1))
        out = np.zeros_like(a)
        for mine, theirs in enumerate(order):
            if rows_first:
                out[:, theirs] = a[:, mine]
            else:
                out[theirs] = a[mine]
        return out.reshape(len(a), -1).tolist() if rows_first else out.reshape(-1).tolist()

    part = dict(contribution["channels"])
    for column in by_class:
        if column in part:
            part[column] = moved(part[column], True) if part["names"] else part[column]
    out = {**contribution, "channels": part}
    for key in by_class:
        if key in contribution and key not in part:
            out[key] = moved(contribution[key], False)
    return out


def empty_group(owner: str, structure: dict, columns: dict[str, int], summed: tuple,
                summed_sizes: dict | None = None) -> dict:
    """A group model that knows nothing."""
    sizes = summed_sizes or {}
    return {"kind": owner, "version": CONTRIBUTION_VERSION, "structure": dict(structure), "labels": [],
            "channels": ChannelTable(columns).to_part(),
            **{key: [0.0] * sizes.get(key, 1) for key in summed}}


def channel_statistics_since(space, baseline: dict | None, slots: np.ndarray):
    """The channel statistics of ``slots`` over the readings since ``baseline``
    (a copy of the space's ``names``, ``count``, ``mean``, ``var`` at the last
    contribution; None: since the start) and a mask of the slots whose baseline
    still holds (the same channel, not reset since)."""
    count = space.count[slots]
    if baseline is None:
        kept = np.zeros(len(slots), dtype=bool)
        n0, m0, v0 = np.zeros(len(slots)), np.zeros(len(slots)), np.zeros(len(slots))
    else:
        # A slot given to another channel, or reset and met again, starts from nothing.
        kept = np.array([baseline["names"][s] == space.name_of(s) for s in slots], dtype=bool) \
            & (count >= baseline["count"][slots])
        n0 = np.where(kept, baseline["count"][slots], 0)
        m0 = np.where(kept, baseline["mean"][slots], 0.0)
        v0 = np.where(kept, baseline["var"][slots], 0.0)
    n, mean, var = split_statistics(count, space.mean[slots], space.var[slots], n0, m0, v0)
    return n, mean, var, kept


def space_baseline(space) -> dict:
    """What :func:`channel_statistics_since` compares with later."""
    return {"names": [space.name_of(s) for s in range(space.capacity)],
            "count": space.count.copy(), "mean": space.mean.copy(), "var": space.var.copy()}


def load_channels(space, part: dict, capacity: int) -> list[tuple[int, int]]:
    """Give the group's channels slots in an empty channel space, the most
    observed first, at most ``capacity``, with the group's statistics; returns
    ``(index in part, slot)`` pairs."""
    order = sorted(range(len(part["names"])), key=lambda i: -float(part["n"][i]))[:capacity]
    placed = []
    for i in order:
        name = part["names"][i]
        slots, _ = space.claim({name: 0.0})
        if len(slots) == 0:
            continue
        s = int(slots[0])
        space.count[s] = int(round(float(part["n"][i])))
        space.mean[s] = float(part["mean"][i])
        space.var[s] = float(part["var"][i])
        space.last_seen[s] = space.t
        placed.append((i, s))
    return placed
