"""What ``tools/results_label_budget.py`` adds to its binary 20% page: the 10% and
5% budgets, the multiclass tasks, the 10% verdict per protocol and task family,
and the learning-curve figure (accuracy against the labels used).

* Multiclass tasks: the four data sets of the PAACDS protocol whose raw labels
  have more than two classes (splice 3, dermatology 6, libras 15, arrhythmia
  13 present), every class kept.  ActiveAROW and PAACDS run with ``n_classes``
  the number of classes; River's multiclass rival is ``StandardScaler() |
  SoftmaxRegression()`` (its multinomial logistic regression) given every
  label.  F1 is the macro F1 over the classes (scikit-learn's ``average=
  "macro"``, :func:`edgelearn.metrics.f1_macro`).
* The 10% verdict: ActiveAROW at a 10% budget against River's logistic
  regression given every label, mean F1 and mean accuracy, per protocol and
  family, with the label rate ActiveAROW realized.
"""

from __future__ import annotations

import numpy as np

from edgelearn import metrics
from edgelearn.datasets import load

MULTICLASS_TASKS = ("splice", "libras", "dermatology", "arrhythmia")
SUFFIX = " (multiclass)"
RIVER_SOFTMAX = "River softmax (all labels)"
#: The budgets of the budget columns; 0.2 is the aim that picks the default learner.
BUDGETS = (0.2, 0.1, 0.05)
#: The budget whose verdict the page gives against River with every label.
AIM_BUDGET = 0.1


def multiclass(task: str) -> bool:
    return task.endswith(SUFFIX)


def multiclass_task(name: str) -> str:
    return name + SUFFIX


def column(method: str, budget: float) -> str:
    """A budget column's name: the 20% columns keep the learner's name alone."""
    return method if budget == BUDGETS[0] else f"{method} {budget:.0%}"


def multiclass_data(task: str):
    """``(X, y, names)`` of a multiclass task: every raw class of the data set."""
    ds = load(task[: -len(SUFFIX)])
    return ds.X, ds.y, list(ds.feature_names)


def n_classes(y) -> int:
    return max(2, len(np.unique(y)))


def multiclass_scores(y, predictions, asked, seconds) -> dict:
    """The multiclass scores of one run (predictions ``None`` before any label
    count as wrong)."""
    y = list(np.asarray(y).tolist())
    p = [-1 if v is None else v for v in predictions]
    return {
        "n": len(y),
        "f1": metrics.f1_macro(y, p),
        "accuracy": metrics.accuracy(y, p),
        "balanced_accuracy": metrics.balanced_accuracy(y, p),
        "query_rate": float(np.mean(asked)),
        "seconds": seconds,
    }


def river_softmax_run(Xr, yr, names, iter_array, process_time):
    """River's multinomial logistic regression, given every label."""
    from river import linear_model, preprocessing

    model = preprocessing.StandardScaler() | linear_model.SoftmaxRegression()
    predictions = []
    start = process_time()
    for x, label in iter_array(Xr, yr, names):
        predictions.append(model.predict_one(x))
        model.learn_one(x, label)
    return multiclass_scores(yr, predictions, np.ones(len(yr), dtype=bool), process_time() - start)


# -- tuning at a budget -------------------------------------------------------------------


def budget_check(run, frozen, ours, river_lr, protocols, binary_tasks, seeds, budget, params, jobs, cache):
    """ActiveAROW at ``budget`` with ``params`` (its other parameters at their
    defaults) on ``seeds`` (the tuning seeds: the page never reports them), on the
    binary and the multiclass tasks under every protocol, beside River's learner of
    the family given every label: one line per protocol and family (mean F1, mean
    accuracy, realized label rate, and the gaps to River)."""
    params = {**params, "target_query_rate": budget}
    families = {"binary": (list(binary_tasks), river_lr),
                "multiclass": ([multiclass_task(t) for t in MULTICLASS_TASKS], RIVER_SOFTMAX)}
    units = [(p, t, s, m, frozen(pr)) for p in protocols for tasks, rival in families.values() for t in tasks
             for s in seeds for m, pr in ((ours, params), (rival, {}))]
    results = run(units, jobs, cache, label="budget check ")
    lines = []
    for p in protocols:
        for family, (tasks, rival) in families.items():
            def mean(method, pr, metric):
                return 100 * float(np.mean([results[(p, t, s, method, frozen(pr))][metric]
                                            for t in tasks for s in seeds]))
            f1, acc, rate = (mean(ours, params, m) for m in ("f1", "accuracy", "query_rate"))
            rf1, racc = (mean(rival, {}, m) for m in ("f1", "accuracy"))
            lines.append(f"{p}, {family}: F1 {f1:.1f} ({f1 - rf1:+.1f}), accuracy {acc:.1f} ({acc - racc:+.1f}) "
                         f"vs {rival}; labels {rate:.1f}%")
    return lines


# -- the page ---------------------------------------------------------------------------


def table_lines(summary, tasks, metric, metric_name, pct, extra=None) -> list[str]:
    """One markdown table: a row per task and the mean row, a column per learner
    (``extra``: a last column's header and its value per task)."""
    header = ["task"] + list(summary) + ([extra[0]] if extra else [])
    lines = [f"### {metric_name}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for task in tasks:
        cells = [task] + [pct(summary[m][metric]["per_task"][task]) for m in summary]
        lines.append("| " + " | ".join(cells + ([extra[1](task)] if extra else [])) + " |")
    mean = [f"**mean over {len(tasks)} tasks**"] + [pct(summary[m][metric]["mean"]) for m in summary]
    lines.append("| " + " | ".join(mean + ([""] if extra else [])) + " |")
    lines.append("")
    return lines


def aim_lines(families: dict, ours: str, rivals: dict, protocols: dict, pct) -> tuple[list[str], bool]:
    """The 10% verdict: per protocol and family, ``ours`` against the family's
    rival given every label; returns the lines and whether every one is met."""
    lines, met_all = [], True
    for family, by_protocol in families.items():
        rival = rivals[family]
        for protocol, summary in by_protocol.items():
            a, r = summary[ours], summary[rival]
            gaps = {m: a[m]["mean"] - r[m]["mean"] for m in ("f1", "accuracy")}
            met = all(g >= 0.0 for g in gaps.values())
            met_all &= met
            rates = a["query_rate"]["per_task"].values()
            lines.append(
                f"* {protocols[protocol]['short']}, {family} tasks: ActiveAROW at {AIM_BUDGET:.0%} "
                f"(realized {pct(a['query_rate']['mean'])}% of the labels, {pct(min(rates))}-{pct(max(rates))}% "
                f"per task) {'**meets**' if met else '**does not meet**'} {rival}: mean F1 "
                f"{pct(a['f1']['mean'])} vs {pct(r['f1']['mean'])} ({100 * gaps['f1']:+.1f}), mean accuracy "
                f"{pct(a['accuracy']['mean'])} vs {pct(r['accuracy']['mean'])} ({100 * gaps['accuracy']:+.1f})."
            )
    return lines, met_all


def draw_curves(path, families: dict, curves: dict, protocols: dict) -> None:
    """The figure: per protocol and family, mean accuracy against the mean share of
    labels used, a line per budgeted learner through its budgets and River's
    learners as points (``curves``: ``{learner: [column, ...]}``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(f, p) for f in families for p in families[f]]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False)
    for ax, (family, protocol) in zip(axes[0], panels):
        summary = families[family][protocol]
        for learner, columns in curves.items():
            columns = [c for c in columns if c in summary]
            if not columns:
                continue
            x = [100 * summary[c]["query_rate"]["mean"] for c in columns]
            y = [100 * summary[c]["accuracy"]["mean"] for c in columns]
            style = "o--" if learner.startswith("River") else "o-"
            ax.plot(x, y, style, label=learner)
        ax.set_xscale("log")
        ax.set_xticks([5, 10, 20, 50, 100])
        ax.set_xticklabels(["5", "10", "20", "50", "100"])
        ax.set_xlabel("labels used (%)")
        ax.set_ylabel("mean accuracy (%)")
        ax.set_title(f"{protocols[protocol]['short']}, {family}", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
