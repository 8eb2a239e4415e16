"""One grouped bar chart: the main metrics (x) with one bar per mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalsets.metrics import RATIO_METRICS

PLOTTED = RATIO_METRICS


def plot_modes(report: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    modes: dict[str, dict[str, Any]] = report["modes"]
    # A metric no mode produces (e.g. em for single-round modes only) gets no slot.
    metrics = [m for m in PLOTTED if any(v.get(m) is not None for v in modes.values())]
    n_modes = max(len(modes), 1)
    width = 0.8 / n_modes
    fig, ax = plt.subplots(figsize=(max(7.0, 1.3 * len(metrics) + 3), 4.5))
    for i, (mode, values) in enumerate(modes.items()):
        xs = [j + (i - (n_modes - 1) / 2) * width for j in range(len(metrics))]
        ys = [values.get(m) for m in metrics]
        bars = ax.bar(
            [x for x, y in zip(xs, ys, strict=True) if y is not None],
            [y for y in ys if y is not None],
            width,
            label=mode,
        )
        ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
    ax.set_xticks(range(len(metrics)))
    ax.set_xticklabels(metrics, rotation=20, ha="right")
    ax.set_ylim(0, 1.08)
    ax.set_ylabel("score")
    ax.set_title(
        f"{report['dataset']}: {report['questions']} questions, "
        f"{report['corpus_passages']} passages, budget {report['budget']}"
    )
    # Outside the axes: bars near 1.0 are the interesting ones and must not hide.
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
