"""The picture of a replay: per stream, rolling accuracy, labels asked against the
budget, and channels present, over the readings (``edgelearn replay --plot FILE.png``);
a regression stream's prediction with its interval and the references that came, or an
anomaly stream's score with its alarms and the verdicts that came.

Needs matplotlib (``pip install 'edgelearn[plot]'``), imported only here and only
when a picture is asked for; it draws with the headless Agg backend, so it works on a
gateway or a CI machine without a display.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["plot_curves"]


def _matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise ImportError(
            "--plot needs matplotlib, an optional extra: pip install 'edgelearn[plot]' "
            "(or use --curve FILE.csv, which needs nothing)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plot_task(plt: Any, curves: Any, path: str, title: str) -> str:
    """A regression or anomaly replay: a panel per stream."""
    n = max(1, len(curves.series))
    fig, axes = plt.subplots(n, 1, figsize=(10, 3.2 * n), squeeze=False, constrained_layout=True)
    for ax, (stream, series) in zip(axes[:, 0], curves.series.items()):
        p = series.points
        x = np.asarray(p["reading"], dtype=float)
        asked = np.asarray(p["asked"], dtype=float) > 0
        truth = np.asarray(p["y"], dtype=float)
        if curves.task == "regression":
            ax.fill_between(x, np.asarray(p["lower"], dtype=float),
                            np.asarray(p["upper"], dtype=float), color="C0", alpha=0.2, lw=0,
                            label="interval")
            ax.plot(x, p["prediction"], color="C0", lw=1.0, label="prediction")
            ax.plot(x, truth, color="0.4", lw=0.6, label="reference (when it came)")
            ax.plot(x[asked], truth[asked], "o", color="C3", ms=3, label="references asked")
            ax.set_ylabel(stream)
        else:
            ax.plot(x, p["score"], color="C0", lw=0.8, label="score")
            alarm = np.asarray(p["alarm"], dtype=float) > 0
            ax.plot(x[alarm], np.asarray(p["score"], dtype=float)[alarm], "v", color="C3",
                    ms=4, label="alarms")
            real = truth > 0
            if real.any():
                ax.plot(x[real], np.ones(int(real.sum())) * 1.02, "|", color="k", ms=6,
                        label="anomalies (verdicts)")
            ax.set_ylim(-0.02, 1.06)
            ax.set_ylabel(f"{stream}\nscore")
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", fontsize="small")
    axes[-1, 0].set_xlabel("reading")
    if title:
        fig.suptitle(title, fontsize="medium")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_curves(curves: Any, path: str, title: str = "") -> str:
    """Draw the series of a :class:`~firmware_bridge.offline.curves.CurveRecorder` into
    the PNG ``path``; return ``path``."""
    plt = _matplotlib()
    if getattr(curves, "task", None) in ("regression", "anomaly"):
        return _plot_task(plt, curves, path, title)
    fig, (acc, labels, channels) = plt.subplots(3, 1, figsize=(10, 8.5), sharex=True,
                                                constrained_layout=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (stream, series) in enumerate(curves.series.items()):
        color = colors[i % len(colors)]
        p = series.points
        x = np.asarray(p["reading"], dtype=float)
        acc.plot(x, p["rolling_accuracy"], color=color, lw=1.2, label=stream)
        asked, learned = p["labels_asked"], p["labels_learned"]
        budget = np.asarray(p["label_budget"], dtype=float)
        if len(x) and not np.isnan(budget).all():
            labels.plot(x, budget, color="0.6", lw=7, alpha=0.45, solid_capstyle="butt",
                        label=f"{stream}: budget {curves.budget_rate(stream):.0%} "
                              f"({budget[-1]:,.0f})")
        labels.plot(x, asked, color=color, lw=1.6,
                    label=f"{stream}: asked ({asked[-1]:,})" if asked else stream)
        labels.plot(x, learned, color="black", lw=1.0, ls=":",
                    label=f"{stream}: learned ({learned[-1]:,})" if learned else stream)
        present = np.asarray(p["channels_present"], dtype=float)
        channels.fill_between(x, present, step="post", color=color, alpha=0.18, lw=0)
        width = max(1, min(len(present), curves.window // series.stride))
        mean = np.convolve(present, np.ones(width) / width, mode="valid")
        channels.plot(x[width - 1:], mean, color=color, lw=1.6,
                      label=f"{stream}: mean of the last {curves.window}")
    acc.set_ylabel(f"accuracy\n(last {curves.window} labelled)")
    acc.set_ylim(0, 1.02)
    acc.grid(alpha=0.3)
    acc.legend(loc="lower right", fontsize="small")
    labels.set_ylabel("labels (cumulative)")
    labels.grid(alpha=0.3)
    labels.legend(loc="upper left", fontsize="small")
    labels.set_title("labels asked against the budget", fontsize="small", loc="left")
    acc.set_title("rolling accuracy (prequential: predicted before the label is seen)",
                  fontsize="small", loc="left")
    channels.set_title("channels present in each reading (shaded) and their running mean",
                       fontsize="small", loc="left")
    channels.set_ylabel("channels present")
    channels.set_ylim(bottom=0)
    channels.legend(loc="lower right", fontsize="small")
    channels.set_xlabel("reading")
    channels.grid(alpha=0.3)
    channels.yaxis.get_major_locator().set_params(integer=True)
    if title:
        fig.suptitle(title, fontsize="medium")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
