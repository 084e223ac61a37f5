"""The picture of a replay: per stream, rolling accuracy, labels asked against the
budget, and channels present, over the readings (``edgelearn replay --plot FILE.png``).

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


def plot_curves(curves: Any, path: str, title: str = "") -> str:
    """Draw the series of a :class:`~firmware_bridge.curves.CurveRecorder` into the PNG
    ``path``; return ``path``."""
    plt = _matplotlib()
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
