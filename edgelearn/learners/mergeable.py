"""The ``"merge"`` capability: contributions, group models, starting from one.

A learner class that can merge inherits :class:`Mergeable` and says, per channel
slot, what it has learned as numbers that **add up** across learners (its
*shared totals*: ActiveAROW's precision above the prior and precision x mean,
PA's observations x weight), and how to load a group model's totals back into
its arrays. The mixin does the rest: what changed since the last contribution
(by channel name, so a slot recycled in between starts from nothing), the
merge (:func:`edgelearn.merging.merge_contributions`) and the start from a group
model. The last contribution is part of the learner's state, so a restored
checkpoint does not contribute again what it already did.

Memory: from its first contribution on (or its start from a group model) a
learner holds its shared totals as they were then, as many numbers again as
the arrays they come from; :meth:`memory_bytes` counts them from then on.
"""

from __future__ import annotations

import numpy as np

from ..merging import (
    CONTRIBUTION_VERSION,
    channel_statistics_since,
    check_kind,
    load_channels,
    merge_contributions,
    space_baseline,
)

_STATISTICS = {"n": 1, "mean": 1, "var": 1}


class Mergeable:
    """Mixin of the learners that declare ``"merge"`` (see the module docstring).

    A subclass defines ``_shared_columns(structure)`` (column name -> width per
    channel), ``_shared_summed`` (names of the model-wide totals, each a list),
    ``_shared_flip`` (the columns and totals whose sign a binary model's reversed
    labels change), ``_shared_structure()``, ``_shared_by_slot()`` (column ->
    array ``(capacity, width)``), ``_shared_model_wide()`` (total -> array) and
    ``_load_shared(placed, part, totals)``.
    """

    _shared_summed: tuple = ()
    _shared_flip: tuple = ()
    #: The columns and totals with one block per class (a multiclass model's, whose
    #: structure has "n_classes"), in its labels' order.
    _shared_by_class: tuple = ()
    #: Set by the first contribution or start from a group model: the shared
    #: totals then (see the module docstring).
    _last_contribution = None

    # -- what a subclass answers ------------------------------------------------------

    def _shared_structure(self) -> dict:
        raise NotImplementedError

    @classmethod
    def _shared_columns(cls, structure: dict) -> dict:
        raise NotImplementedError

    def _shared_by_slot(self) -> dict:
        raise NotImplementedError

    def _shared_model_wide(self) -> dict:
        raise NotImplementedError

    def _load_shared(self, placed: list, part: dict, totals: dict) -> None:
        raise NotImplementedError

    def _precision_per_reading(self) -> float | None:
        """The most a weight's precision can grow by learning one reading, with this
        learner's parameters (None: the kind shares no precision)."""
        return None

    def _learned_anything(self) -> bool:
        """Whether this learner has learned anything (a label met, by default)."""
        return self.targets.learned_any

    def _started_from_group(self) -> None:
        """What else changes in a learner that starts from a group model (its label
        budget, say); nothing by default."""

    # -- the capability -----------------------------------------------------------------

    def contribution(self) -> dict:
        """What this learner learned since its last contribution (or its start),
        as a plain dict of lists and floats keyed by channel names (see
        :mod:`edgelearn.merging`); the next one starts from here."""
        owner = type(self).__name__
        space = self.channels
        slots = np.array([s for s in range(space.n_assigned) if space.name_of(s) is not None], dtype=np.int64)
        base = self._last_contribution
        n, mean, var, kept = channel_statistics_since(space, base and base["space"], slots)
        now = self._shared_by_slot()
        part: dict = {"names": [space.name_of(int(s)) for s in slots],
                      "n": _floats(n), "mean": _floats(mean), "var": _floats(var)}
        for column, width in self._shared_columns(self._shared_structure()).items():
            before = base["columns"][column][slots] if base else np.zeros_like(now[column][slots])
            delta = now[column][slots] - np.where(kept[:, None], before, 0.0)
            part[column] = _floats(delta[:, 0]) if width == 1 else [_floats(row) for row in delta]
        totals_now = self._shared_model_wide()
        totals = {key: _floats(totals_now[key] - (base["summed"][key] if base else 0.0))
                  for key in self._shared_summed}
        self._remember_contribution(now, totals_now)
        return {"kind": owner, "version": CONTRIBUTION_VERSION, "structure": self._shared_structure(),
                "labels": list(self.targets.to_state()) if self.targets.learned_any else [],
                "channels": part, **totals}

    @classmethod
    def merge(cls, contributions: list, weights=None, group: dict | None = None) -> dict:
        """The group model: ``group`` (None: one that knows nothing) plus each of
        ``contributions`` times its weight (``weights``: one float in [0, 100] per
        contribution; None: all 1). Channels are matched by name; a binary model
        whose labels are the other way round is turned round first."""
        if not contributions and group is None:
            raise ValueError(f"{cls.__name__}.merge needs contributions or a group model.")
        first = group if group is not None else contributions[0]
        structure = first.get("structure") if isinstance(first, dict) else None
        check_kind(cls.__name__, first, structure)
        columns = {**_STATISTICS, **cls._shared_columns(structure)}
        return merge_contributions(cls.__name__, structure, columns, cls._shared_summed, list(contributions),
                                   weights, group, cls._shared_flip, cls._shared_by_class)

    def content_problem(self, total: dict, cumulative: bool = True) -> str | None:
        """What in ``total`` (a gateway's total, or a contribution: what it claims its
        streams learned) no learner with this learner's parameters could have
        learned, or None. The bounds: at most ``n_classes`` labels (2 if binary);
        each model-wide list one number per belief row; each channel's bin counts
        summing to between 0 and its ``n``; and, for a kind that shares precisions,
        no weight's precision above what its channel's ``n`` readings allow (``n``
        times the most one reading adds, :meth:`_precision_per_reading`). The last two hold for totals, not deltas (a
        label that comes after its reading was counted adds precision to the next
        contribution, never to the total beyond its readings): ``cumulative=False``
        (a single contribution) checks the first two only."""
        structure = total.get("structure") or {}
        n_classes = structure.get("n_classes", 0 if self.task == "regression" else 2)
        labels = total.get("labels") or []
        if len(labels) > n_classes:
            return f"it knows {len(labels)} labels; a learner of this group knows at most {n_classes}"
        rows = structure.get("n_classes", 1)
        for key in self._shared_summed:
            expected = rows if key in self._shared_by_class else 1
            if len(total.get(key, [])) != expected:
                return f"its '{key}' holds {len(total.get(key, []))} numbers; a learner of this group has {expected}"
        part = total["channels"]
        if not cumulative or not part["names"]:
            return None
        n = np.asarray(part["n"], dtype=np.float64)
        if "bin_counts" in part and len(part["bin_counts"][0]):
            # Each reading adds at most 1 to a channel's bin frequencies together (they sum
            # to 1), so its bin counts sum to at most its readings; one bin alone may fall
            # (a learner from the group moves away from the group's frequencies).
            sums = np.asarray(part["bin_counts"], dtype=np.float64).sum(axis=1)
            slack = 1e-6 * np.maximum(n, 1.0)
            beyond = (sums > n + slack) | (sums < -slack)
            if np.any(beyond):
                i = int(np.argmax(beyond))
                return f"channel {part['names'][i]!r} has bin counts summing to {sums[i]:g} for {n[i]:g} readings"
        per_reading = self._precision_per_reading()
        if per_reading is not None and "precision" in part:
            precision = np.asarray(part["precision"], dtype=np.float64).reshape(len(n), -1)
            bound = n * per_reading * (1.0 + 1e-9) + 1e-9
            beyond = precision.max(axis=1) > bound
            if np.any(beyond):
                i = int(np.argmax(beyond))
                return (f"channel {part['names'][i]!r} claims a precision of {precision[i].max():g}; its "
                        f"{n[i]:g} readings allow at most {bound[i]:g}")
        return None

    @classmethod
    def from_group(cls, group: dict, **params):
        """A new learner with ``params`` that starts from the group model."""
        learner = cls(**params)
        learner.load_group(group)
        return learner

    def load_group(self, group: dict) -> None:
        """Start from the group model (this learner must have learned nothing):
        the group's channels take slots, the most observed first, with the
        group's statistics and what the group learned of them."""
        owner = type(self).__name__
        if self.channels.n_assigned or self._learned_anything():
            raise ValueError(f"{owner}.load_group needs a learner that has learned nothing; "
                             f"this one knows {self.channels.n_assigned} channels.")
        check_kind(owner, group, self._shared_structure())
        part = group["channels"]
        placed = load_channels(self.channels, part, self.channels.capacity)
        totals = {key: np.asarray(group[key], dtype=np.float64) for key in self._shared_summed}
        if group["labels"]:
            self.targets.load(list(group["labels"]))
        self._load_shared(placed, part, totals)
        self._started_from_group()
        # What came from the group is not this learner's to contribute.
        self._remember_contribution(self._shared_by_slot(), self._shared_model_wide())

    def _remember_contribution(self, by_slot: dict, model_wide: dict) -> None:
        self._last_contribution = {"space": space_baseline(self.channels),
                                   "columns": {c: np.array(v, dtype=np.float64) for c, v in by_slot.items()},
                                   "summed": {k: np.array(v, dtype=np.float64) for k, v in model_wide.items()}}

    def memory_bytes(self) -> int:
        """The learner's budget, and from its first contribution on the totals it
        remembers (see the module docstring)."""
        return super().memory_bytes() + self._contribution_bytes()

    # -- state -------------------------------------------------------------------------------

    def to_state(self) -> dict:
        """The learner's state, with the last contribution's totals (so a restored
        learner's next contribution is again only what it learned since)."""
        state = super().to_state()
        contributed = self._contribution_state()
        if contributed is not None:
            state["learned"]["contributed"] = contributed
        return state

    @classmethod
    def from_state(cls, state: dict):
        model = super().from_state(state)
        model._load_contribution_state(state["learned"].get("contributed"))
        return model

    def _contribution_state(self) -> dict | None:
        """The last contribution's totals for a checkpoint (plain lists and arrays)."""
        base = self._last_contribution
        if base is None:
            return None
        return {"space": {**base["space"], "names": list(base["space"]["names"])},
                "columns": dict(base["columns"]), "summed": dict(base["summed"])}

    def _load_contribution_state(self, saved) -> None:
        if saved is None:
            self._last_contribution = None
            return
        space = saved["space"]
        self._last_contribution = {
            "space": {"names": list(space["names"]), "count": np.asarray(space["count"], dtype=np.int64),
                      "mean": np.asarray(space["mean"], dtype=np.float64),
                      "var": np.asarray(space["var"], dtype=np.float64)},
            "columns": {c: np.asarray(v, dtype=np.float64) for c, v in saved["columns"].items()},
            "summed": {k: np.asarray(v, dtype=np.float64) for k, v in saved["summed"].items()},
        }

    def _contribution_bytes(self) -> int:
        base = self._last_contribution
        if base is None:
            return 0
        arrays = [*base["columns"].values(), *base["summed"].values(),
                  base["space"]["count"], base["space"]["mean"], base["space"]["var"]]
        return int(sum(a.nbytes for a in arrays))


def _floats(values) -> list:
    return [float(v) for v in np.asarray(values, dtype=np.float64)]
