"""What a stream's task decides: its metrics, which answers its learner can take, how a
prediction is scored against the answer that came with a reading, and what its status
reports. One rules object per task (:func:`rules_for`); the pipeline, the jitted passes,
the outputs and the status ask it, never a learner's kind.

* classification (``binary``, ``multiclass``, ``multilabel``): labels; accuracy and F1
  (multi-label: Hamming loss and micro-F1); a binary stream keeps its own record of its
  two labels (``sides``), so its metrics count the positive one whatever the learner;
* ``regression``: numbers; MAE, RMSE and the coverage of the predicted intervals;
* ``anomaly``: an operator's verdicts (True: a real anomaly); alarms counted on every
  reading, verdicts (a data message's ``"y"`` or an answer to a label request) scored
  against them.
"""

from __future__ import annotations

import math
from typing import Any

from edgelearn.learners.base import BinaryTargets
from edgelearn.metrics import ClassificationMetrics, MultiLabelMetrics
from edgelearn.stream_metrics import AnomalyMetrics, RegressionMetrics

from .tally import Tally

__all__ = ["SETTLED_TYPES", "TaskRules", "rules_for"]

# Label types whose value alone settles a binary stream's verdict (keyed with the
# type: 1, 1.0 and True are equal in Python but are not all the same label).
SETTLED_TYPES = frozenset({str, int, bool})


class TaskRules:
    """The rules of one task (see the module docstring); one shared object per task."""

    task = ""
    #: Called for every prediction as ``note(stream, label)`` (None: nothing to note).
    note = None

    def new_metrics(self, learner: Any) -> Any:
        raise NotImplementedError

    def new_sides(self, name: str, learner: Any) -> BinaryTargets | None:
        """A binary stream's own record of its two labels; None for other tasks."""
        return None

    def label_problem(self, stream: Any, y: Any) -> str | None:
        """Why ``stream``'s learner cannot take the (wire-valid) answer ``y``, or None."""
        targets = stream.learner.targets
        if not targets.accepts(y):
            return self.refusal(targets, y)
        return None

    def refusal(self, targets: Any, y: Any) -> str:
        return f"a {self.task} stream's learner cannot take {y!r}"

    def score(self, stream: Any, y: Any, predicted: Any, extra: dict | None,
              tally: Tally) -> bool:
        """Count the prediction against the answer ``y`` that came with its reading;
        False if the stream's learner cannot take ``y`` (counted as unusable)."""
        raise NotImplementedError

    def outputs(self, extra: dict) -> dict:
        """The task's own outputs of a decision (``Decision.extra``) as the prediction
        message, the label request and the scoring take them."""
        return extra

    def on_answer(self, stream: Any, predicted: Any, y: Any) -> None:
        """An answer to a label request was learned (``predicted``: what the request
        said the learner predicted)."""

    def status(self, metrics: Any) -> dict[str, Any]:
        raise NotImplementedError


class BinaryRules(TaskRules):
    task = "binary"

    def new_metrics(self, learner):
        # The stream's own two labels, whatever they are ("occupied"/"empty", 1/0,
        # True/False): metrics count the positive one (True/1, else the first seen).
        return ClassificationMetrics(positive=True)

    def new_sides(self, name, learner):
        sides = BinaryTargets(name)
        sides.load(learner.targets.to_state())  # a restored learner's labels
        return sides

    def label_problem(self, stream, y):
        if isinstance(y, dict):
            return "multi-label maps need a multi-label learner"
        targets = stream.learner.targets
        if not targets.accepts(y):
            return f"the learner knows the labels {targets.labels!r} and can hold {targets.capacity}"
        if not stream.sides.accepts(y):
            return f"a binary stream whose labels were {stream.sides.labels!r}"
        return None

    def score(self, stream, y, predicted, extra, tally):
        # label -> (its type, verdict): 1 and True are one dict key, so the type is
        # checked too; a label of the other type just takes the full checks.
        settled = stream.settled_sides
        known_y = settled.get(y) if y.__class__ in SETTLED_TYPES else None
        if known_y is not None and known_y[0] is y.__class__:
            known_p = settled.get(predicted)
            if known_p is not None and known_p[0] is predicted.__class__:
                stream.metrics.update(known_y[1], known_p[1])
                return True
        problem = self.label_problem(stream, y)
        if problem:
            tally.unusable(stream, y, problem)
            return False
        sides = stream.sides
        truth = sides.sign(y) > 0
        # A prediction that is neither of the stream's labels (a learner that knows
        # none yet predicts False) is wrong either way.
        guess = sides.sign(predicted) > 0 if predicted in sides.labels else not truth
        stream.metrics.update(truth, guess)
        if (y.__class__ in SETTLED_TYPES and None not in sides.to_state()
                and len(stream.learner.targets.labels) == 2 and len(settled) < 8):
            settled.setdefault(y, (y.__class__, truth))
            for label in sides.labels:  # what predictions are made of
                if label.__class__ in SETTLED_TYPES:
                    settled.setdefault(label, (label.__class__, sides.sign(label) > 0))
        return True

    def status(self, metrics):
        # None (unknown, NaN on /metrics) until something is scored: 0.0 would say
        # every prediction was wrong.
        scored = metrics.n > 0
        return {"scored": metrics.n, "accuracy": metrics.accuracy if scored else None,
                "f1": metrics.f1 if scored else None}


class MulticlassRules(BinaryRules):
    task = "multiclass"

    def new_metrics(self, learner):
        return ClassificationMetrics(max_labels=learner.targets.capacity + 1)

    def new_sides(self, name, learner):
        return None

    def label_problem(self, stream, y):
        if isinstance(y, dict):
            return "multi-label maps need a multi-label learner"
        targets = stream.learner.targets
        if not targets.accepts(y):
            return f"the learner knows the labels {targets.labels!r} and can hold {targets.capacity}"
        return None

    def score(self, stream, y, predicted, extra, tally):
        problem = self.label_problem(stream, y)
        if problem is None:
            try:
                stream.metrics.update(y, predicted)
                return True
            except ValueError as exc:  # more distinct labels than the learner has classes
                problem = str(exc)
        tally.unusable(stream, y, problem)
        return False


class MultiLabelRules(MulticlassRules):
    task = "multilabel"

    def new_metrics(self, learner):
        return MultiLabelMetrics()

    def label_problem(self, stream, y):
        if not isinstance(y, dict):
            return "a multi-label learner takes a map of label name to bool"
        targets = stream.learner.targets
        if not targets.accepts(y):
            return f"the learner knows the labels {targets.labels!r} and can hold {targets.capacity}"
        return None

    def status(self, metrics):
        scored = metrics.n > 0
        return {"scored": metrics.n, "hamming_loss": metrics.hamming_loss if scored else None,
                "micro_f1": metrics.micro_f1 if scored else None}


class RegressionRules(TaskRules):
    task = "regression"

    def new_metrics(self, learner):
        return RegressionMetrics()

    def refusal(self, targets, y):
        return "a regression stream takes finite numbers"

    def outputs(self, extra):
        # A bound that is not finite (a learner's whole line before it knows its
        # noise) is no interval: nil on the wire, and not counted in the coverage.
        lower, upper = extra.get("lower"), extra.get("upper")
        if lower is None or upper is None or (math.isfinite(lower) and math.isfinite(upper)):
            return extra
        return {**extra, "lower": None, "upper": None}

    def score(self, stream, y, predicted, extra, tally):
        problem = self.label_problem(stream, y)
        if problem:
            tally.unusable(stream, y, problem)
            return False
        lower = upper = None
        if extra:
            lower, upper = extra.get("lower"), extra.get("upper")
        stream.metrics.update(y, predicted, lower, upper)
        return True

    def status(self, metrics):
        return metrics.as_dict()


class AnomalyRules(TaskRules):
    task = "anomaly"

    def new_metrics(self, learner):
        return AnomalyMetrics()

    @staticmethod
    def note(stream, alarm):
        stream.metrics.update(alarm)

    def refusal(self, targets, y):
        return "an anomaly stream takes verdicts: True/1 (a real anomaly) or False/0"

    def score(self, stream, y, predicted, extra, tally):
        problem = self.label_problem(stream, y)
        if problem:
            tally.unusable(stream, y, problem)
            return False
        stream.metrics.judge(bool(predicted), stream.learner.targets.sign(y) > 0)
        return True

    def on_answer(self, stream, predicted, y):
        stream.metrics.judge(bool(predicted), stream.learner.targets.sign(y) > 0)

    def status(self, metrics):
        return metrics.as_dict()


_RULES = {rules.task: rules for rules in (BinaryRules(), MulticlassRules(), MultiLabelRules(),
                                          RegressionRules(), AnomalyRules())}


def rules_for(task: str) -> TaskRules:
    """The rules of ``task`` (one of ``edgelearn.learners.base.TASKS``)."""
    return _RULES[task]
