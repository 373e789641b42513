"""Markdown tables and PNG bar plots shared by every eval (matplotlib, Agg backend, no display)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


def _fmt(value: object, digits: int) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.{digits}f}"  # counts: no decimals
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(
    rows: Sequence[Mapping[str, object]],
    columns: Sequence[str],
    headers: Sequence[str] | None = None,
    digits: int = 3,
) -> str:
    """A GitHub Markdown table; missing cells print as an en dash."""
    headers = list(headers or columns)
    if len(headers) != len(columns):
        raise ValueError("headers and columns must have the same length")
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(_fmt(row.get(c), digits) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def grouped_bar_plot(
    series: Mapping[str, Mapping[str, float | None]],
    metrics: Sequence[str],
    path: str | Path,
    title: str,
    ylabel: str = "score",
    ylim: tuple[float, float] | None = (0.0, 1.0),
) -> Path:
    """One group of bars per metric, one bar per series (e.g. per mode); None values are left out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    names = list(series)
    n = max(len(names), 1)
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(metrics) * max(1, n) * 0.6), 4.0))
    try:
        for i, name in enumerate(names):
            xs, ys = [], []
            for j, metric in enumerate(metrics):
                value = series[name].get(metric)
                if value is not None:
                    xs.append(j - 0.4 + width * (i + 0.5))
                    ys.append(float(value))
            bars = ax.bar(xs, ys, width=width, label=name)
            ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
        ax.set_xticks(range(len(metrics)))
        ax.set_xticklabels(metrics, rotation=20 if len(metrics) > 6 else 0)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        if ylim is not None:
            ax.set_ylim(*ylim)
        if names:
            ax.legend(fontsize=8, loc="best")
        fig.tight_layout()
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
    return path
