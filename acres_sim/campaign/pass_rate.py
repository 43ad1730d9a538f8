"""The pass rate over a campaign's swept keys as a PNG (ROS-free, matplotlib without a screen): a panel
per key, a bar per value (a key drawn from a range, and numbers with more than MAX_BARS distinct
values, fall into at most MAX_BARS equal bins), each bar's height the share of its runs that passed
and its label passed/finished.
"""

from __future__ import annotations

from pathlib import Path

from acres_sim.campaign.run import said, status_counts

MAX_BARS = 8


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def groups(cells: list[str], passed: list[bool], ranged: bool = False) -> list[tuple[str, int, int]]:
    """(label, passed, runs) for each value of one key's column, or each bin of it (`ranged`: the
    key is drawn from a range)."""
    numbers = [_number(c) for c in cells]
    distinct = sorted(set(cells), key=lambda c: (_number(c) is None, _number(c) or 0.0, c))
    if all(n is not None for n in numbers) and (len(distinct) > MAX_BARS or (ranged and len(distinct) > 1)):
        low, high = min(numbers), max(numbers)  # type: ignore[type-var]
        bins = min(MAX_BARS, len(distinct))
        width = (high - low) / bins
        out = []
        for b in range(bins):
            a, z = low + b * width, low + (b + 1) * width
            members = [p for n, p in zip(numbers, passed)
                       if a <= n < z or (b == bins - 1 and n == high)]  # type: ignore[operator]
            out.append((f"{a:.3g} to {z:.3g}", sum(members), len(members)))
        return out
    return [(value, sum(p for c, p in zip(cells, passed) if c == value), cells.count(value))
            for value in distinct]


def draw(path: Path, title: str, keys: list[str], rows: list[dict[str, str]],
         ranged: frozenset[str] = frozenset()) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = keys or ["(all runs)"]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    passed = [r["status"] == "passed" for r in rows]
    for ax, key in zip(axes[0], panels):
        cells = [r.get(key, "") for r in rows] if keys else ["all"] * len(rows)
        bars = groups(cells, passed, key in ranged)
        rates = [p / n if n else 0.0 for _, p, n in bars]
        xs = range(len(bars))
        ax.bar(xs, rates, color="tab:green", edgecolor="black")
        for x, (_, p, n) in zip(xs, bars):
            ax.text(x, min(1.02, (p / n if n else 0.0) + 0.02), f"{p}/{n}", ha="center", fontsize=8)
        ax.set_xticks(list(xs), [label for label, _, _ in bars], rotation=30, ha="right", fontsize=8)
        ax.set_ylim(0.0, 1.12)
        ax.set_xlabel(key)
        ax.set_ylabel("pass rate")
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"{title}: {len(rows)} runs ({said(status_counts(r['status'] for r in rows))})",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
