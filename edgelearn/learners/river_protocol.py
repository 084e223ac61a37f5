"""River's estimator protocol, duck-typed: what River asks of an estimator beyond
``learn_one``/``predict_one``, for every edgelearn learner (mixed into
:class:`~edgelearn.learners.base.Learner`). River is never imported here, except by
``|`` (a River pipeline), which only River code reaches."""

from __future__ import annotations

import gc
import sys
import types

import numpy as np


class RiverProtocol:
    """``_get_params``, ``_supervised``, ``_multiclass``, ``_tags``, ``mutate``,
    ``_unit_test_params``, ``_raw_memory_usage`` and ``|``, for a class that has
    ``get_params()`` and ``task``."""

    def _get_params(self) -> dict:
        return self.get_params()

    @property
    def _supervised(self) -> bool:
        # River's anomaly detectors learn without labels; everything else with them.
        return self.task != "anomaly"

    @property
    def _multiclass(self) -> bool:
        return self.task == "multiclass"

    def _more_tags(self) -> set:
        return set()

    @property
    def _tags(self) -> set:
        return set(self._more_tags())

    @property
    def _mutable_attributes(self) -> set:
        return set()

    def mutate(self, new_attrs: dict) -> None:
        """River's ``mutate``: no parameter of a fixed-budget learner changes in place."""
        for name in new_attrs:
            raise ValueError(f"'{name}' is not a mutable attribute of {type(self).__name__}")

    @classmethod
    def _unit_test_params(cls):
        yield {}

    def _unit_test_skips(self) -> set:
        return set()

    @property
    def _is_stochastic(self) -> bool:
        return self.get_params().get("seed", 0) is None

    @property
    def _raw_memory_usage(self) -> int:
        """Bytes of the object graph (River's measure; the budget is :meth:`memory_bytes`)."""
        skip = (type, types.ModuleType, types.FunctionType)
        seen: set = set()
        size = 0
        pending: list = [self]
        while pending:
            fresh = []
            for obj in pending:
                if isinstance(obj, skip) or id(obj) in seen:
                    continue
                seen.add(id(obj))
                size += sys.getsizeof(obj)
                if isinstance(obj, np.ndarray) and obj.base is None:
                    size += obj.nbytes
                fresh.append(obj)
            pending = gc.get_referents(*fresh)
        return size

    def __or__(self, other):
        from river import compose  # only reached from River code

        return compose.Pipeline(self, other)

    def __ror__(self, other):
        from river import compose  # only reached from River code

        if isinstance(other, compose.Pipeline):
            return other.__or__(self)
        return compose.Pipeline(other, self)
