"""A diagnosis of ActiveAROW's multiclass macro-F1 gap at a 10% budget (issue 26; session of
2026-11-27, branch macrof1), and the variants of ``tools/label_budget_variants.py`` (with
the switches of ``tools/label_budget_multiclass_variants.py``) measured on the multiclass
tasks alone.

Diagnosis (``diagnose``): per protocol and multiclass task, over the seeds, for the
variant and for River's softmax given every label: how many classes have a label by
the end of the stream, when each class gets its first label, each class's F1, and how
much of the macro-F1 gap to River is in classes never labelled or never predicted::

    .venv/bin/python tools/label_budget_multiclass_diagnosis.py \
        '{"refit": [10, 20, 40, 80, 160], "refit_z": 1, "refit_cap": 32}'

``--table VARIANT ...`` instead runs ``label_budget_variants.measure``'s units for the
multiclass tasks alone (the same cache), one line per variant with the gaps to River
(first in parentheses) and the deltas to the first variant (second).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from edgelearn import metrics

sys.path.insert(0, str(Path(__file__).resolve().parent))
from label_budget_variants import sibling  # noqa: E402  (sibling tools, by path; it registers them)


def _per_class(y, p, classes):
    """Per class: support, predicted count, F1 (0 when neither)."""
    y, p = np.asarray(y), np.asarray(p)
    out = {}
    for c in classes:
        tp = int(np.sum((y == c) & (p == c)))
        n_true, n_pred = int(np.sum(y == c)), int(np.sum(p == c))
        out[c] = (n_true, n_pred, 2.0 * tp / (n_true + n_pred) if n_true + n_pred else 0.0)
    return out


def diagnose_run(protocol, task, seed, variant):
    """One prequential run of the variant at 10% and of River's softmax with every label:
    ``{"classes", "first_label": {c: reading or None}, "labels": {c: n}, "ours": per class,
    "river": per class, "f1": (ours, river)}``."""
    from edgelearn.evaluate import prequential
    from edgelearn.streams import iter_array

    tool = sibling("results_label_budget")
    families = sibling("label_budget_families")
    variants = sibling("label_budget_variants")
    X, y, names = tool.task_data(task)
    Xr, yr = tool.protocol_stream(X, y, protocol, seed)
    model = variants.Variant(variant, target_query_rate=variants.BUDGET, seed=seed,
                             capacity=max(256, X.shape[1]), n_classes=families.n_classes(y))
    result = prequential(model, iter_array(Xr, yr, names))
    ours = [-1 if v is None else v for v in result.predictions]
    river_model = None
    from river import linear_model, preprocessing
    river_model = preprocessing.StandardScaler() | linear_model.SoftmaxRegression()
    river = []
    for x, label in iter_array(Xr, yr, names):
        guess = river_model.predict_one(x)
        river.append(-1 if guess is None else guess)
        river_model.learn_one(x, label)
    truth = list(np.asarray(yr).tolist())
    classes = sorted(set(truth))
    first, labels = {c: None for c in classes}, {c: 0 for c in classes}
    for i, (label, asked) in enumerate(zip(truth, result.asked)):
        if asked:
            labels[label] += 1
            if first[label] is None:
                first[label] = i
    return {"classes": classes, "n": len(truth), "first_label": first, "labels": labels,
            "ours": _per_class(truth, ours, classes), "river": _per_class(truth, river, classes),
            "f1": (100 * metrics.f1_macro(truth, ours), 100 * metrics.f1_macro(truth, river))}


def diagnose(variant, seeds, tasks=None):
    """Lines of the diagnosis, per protocol and task, means over ``seeds``."""
    tool = sibling("results_label_budget")
    families = sibling("label_budget_families")
    lines = []
    for protocol in tool.PROTOCOLS:
        for name in tasks or families.MULTICLASS_TASKS:
            task = families.multiclass_task(name)
            runs = [diagnose_run(protocol, task, s, variant) for s in seeds]
            classes = runs[0]["classes"]
            k = len(classes)
            labelled = np.mean([sum(1 for c in r["classes"] if r["labels"][c]) for r in runs])
            f1_ours = np.mean([r["f1"][0] for r in runs])
            f1_river = np.mean([r["f1"][1] for r in runs])
            # the gap, split by class: each class's F1 difference over the classes of the run
            never_labelled = never_predicted = rest = 0.0
            for r in runs:
                for c in r["classes"]:
                    diff = 100 * (r["ours"][c][2] - r["river"][c][2]) / len(r["classes"])
                    if not r["labels"][c]:
                        never_labelled += diff
                    elif r["ours"][c][1] == 0:
                        never_predicted += diff
                    else:
                        rest += diff
            n = len(runs)
            lines.append(f"{protocol} | {name} | {k} classes, {runs[0]['n']} readings | labelled by the end "
                         f"{labelled:.1f} | macro F1 ours {f1_ours:.1f} River {f1_river:.1f} | gap from classes "
                         f"never labelled {never_labelled / n:+.1f}, labelled but never predicted "
                         f"{never_predicted / n:+.1f}, the others {rest / n:+.1f}")
            for c in classes:
                support = np.mean([r["ours"][c][0] for r in runs])
                firsts = [r["first_label"][c] for r in runs]
                first = ", ".join("-" if f is None else str(f) for f in firsts)
                labels = np.mean([r["labels"][c] for r in runs])
                lines.append(f"    class {c}: support {support:.0f}, labels {labels:.1f}, "
                             f"first label at {first}, predicted {np.mean([r['ours'][c][1] for r in runs]):.0f} "
                             f"(River {np.mean([r['river'][c][1] for r in runs]):.0f}), F1 "
                             f"{100 * np.mean([r['ours'][c][2] for r in runs]):.1f} "
                             f"(River {100 * np.mean([r['river'][c][2] for r in runs]):.1f})")
    return lines


def measure_multiclass(variants, jobs, cache, seeds, per_task=None):
    """``label_budget_variants.measure`` on the multiclass tasks alone (the same runs, the
    same cache keys): ``{name: {protocol: (accuracy, macro F1, accuracy gap, F1 gap,
    labels %, balanced accuracy)}}``, gaps to River's softmax with every label."""
    import edgelearn

    tool = sibling("results_label_budget")
    families = sibling("label_budget_families")
    lbv = sibling("label_budget_variants")
    # the cache key's code digest as label_budget_variants.measure makes it (its file and the two siblings)
    here = Path(__file__).resolve()
    code = hashlib.sha256(Path(lbv.__file__).read_bytes()
                          + here.with_name("label_budget_belief_variants.py").read_bytes()
                          + here.with_name("label_budget_multiclass_variants.py").read_bytes()).hexdigest()[:16]

    def params_of(variant):
        params = {"target_query_rate": lbv.BUDGET}
        if variant:
            params["variant"] = tuple(sorted({**variant, "code": code}.items()))
        return params

    tasks = [families.multiclass_task(t) for t in families.MULTICLASS_TASKS]
    rival = families.RIVER_SOFTMAX
    units = [(p, t, s, m, tool.frozen(pr)) for v in variants for p in tool.PROTOCOLS for t in tasks
             for s in seeds for m, pr in ((tool.OURS, params_of(v)), (rival, {}))]
    edgelearn.ActiveAROW = lbv.Variant
    try:
        results = tool.run(units, jobs, cache, label="multiclass variants ")
    finally:
        edgelearn.ActiveAROW = lbv.Base
    table = {}
    for v in variants:
        name = json.dumps(v) if v else "base"
        rows = {}
        for p in tool.PROTOCOLS:
            def mean(method, pr, metric, only=None):
                return 100 * float(np.mean([results[(p, t, s, method, tool.frozen(pr))][metric]
                                            for t in (only or tasks) for s in seeds]))
            acc, f1, rate, balanced = (mean(tool.OURS, params_of(v), m)
                                       for m in ("accuracy", "f1", "query_rate", "balanced_accuracy"))
            rows[p] = (acc, f1, acc - mean(rival, {}, "accuracy"), f1 - mean(rival, {}, "f1"), rate, balanced)
            for t in tasks if per_task is not None else ():
                per_task[(p, t, name)] = tuple(mean(tool.OURS, params_of(v), m, [t]) for m in ("accuracy", "f1"))
                per_task[(p, t, rival)] = tuple(mean(rival, {}, m, [t]) for m in ("accuracy", "f1"))
        table[name] = rows
    return table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tools/label_budget_multiclass_diagnosis.py",
                                     description="A diagnosis of the multiclass macro-F1 gap at a 10% budget.")
    parser.add_argument("variants", nargs="+",
                        help="'base', or a JSON object of a variant of tools/label_budget_variants.py")
    parser.add_argument("--table", action="store_true",
                        help="instead of the diagnosis (of the first variant), each variant's multiclass line "
                             "as tools/label_budget_variants.py gives it, with the delta to the first")
    parser.add_argument("--per-task", action="store_true", help="with --table, a line per protocol and task")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time, in processes (default: 1)")
    parser.add_argument("--cache", default=".cache/label-budget-variants.json",
                        help="JSON file of finished runs (default: %(default)s); '' for none")
    parser.add_argument("--seeds", default="1000,1001,1002", help="tuning seeds (default: %(default)s)")
    parser.add_argument("--tasks", default=None, help="comma-separated multiclass tasks (default: all four)")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    if min(seeds) < 1000:
        parser.error(f"--seeds must be tuning seeds (1000 or more): the pages report seeds 0-9; got {args.seeds}")
    variants = [{} if v == "base" else {k: tuple(x) if isinstance(x, list) else x for k, x in json.loads(v).items()}
                for v in args.variants]
    if not args.table:
        for line in diagnose(variants[0], seeds, args.tasks.split(",") if args.tasks else None):
            print(line, flush=True)
        return 0
    per_task = {} if args.per_task else None
    table = measure_multiclass(variants, args.jobs, Path(args.cache) if args.cache else None, seeds, per_task)
    first = next(iter(table.values()))
    for name, rows in table.items():
        cells = [f"{p}: accuracy {acc:.1f} ({dacc:+.1f}; {acc - first[p][0]:+.1f}), macro F1 {f1:.1f} ({df1:+.1f}; "
                 f"{f1 - first[p][1]:+.1f}), labels {rate:.1f}%, balanced accuracy {balanced:.1f}"
                 for p, (acc, f1, dacc, df1, rate, balanced) in rows.items()]
        print(name, "|", " | ".join(cells), flush=True)
    for (p, t, name), (acc, f1) in (per_task or {}).items():
        print(f"per task | {p} | {t} | {name} | accuracy {acc:.1f}, macro F1 {f1:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
