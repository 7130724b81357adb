"""The benchmark docs' figures, drawn from the result files as their tables are (docs_tables.py).

A figure is a PNG in ``docs/figures/`` and, beside it, the numbers it was drawn from
(``<name>.data.json``). ``python benchmarks/docs_tables.py`` redraws a figure whose numbers
differ from what the results give (and leaves an unchanged one alone, so its bytes do not churn);
``--check`` compares the numbers, so a figure that no longer shows the committed results fails
the test suite like a stale table does.

Only the drawing lives here: what a figure shows is computed in docs_tables.py (e.g. the runs at
today's defaults), as plain JSON rows.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

TARGET = 0.9
"""The score a row has to reach (drawn as a line)."""


class Figure(NamedTuple):
    """One generated figure: its file and how to draw it from its rows."""

    file: str  # name under the figures folder, e.g. "label_efficiency.png"
    draw: Callable[[list[dict[str, Any]], Path], None]


def data_path(png: Path) -> Path:
    """``label_efficiency.png`` -> ``label_efficiency.data.json``."""
    return png.with_name(png.stem + ".data.json")


def stale(png: Path, rows: list[dict[str, Any]]) -> str | None:
    """Why ``png`` does not show ``rows`` (missing, or drawn from other numbers); ``None`` when it
    does."""
    if not png.is_file():
        return "is missing"
    try:
        drawn = json.loads(data_path(png).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return f"has no {data_path(png).name} saying what it shows"
    except json.JSONDecodeError as e:
        return f"{data_path(png).name} is not JSON ({e})"
    if drawn != rows:
        have, want = {_key(r) for r in drawn}, {_key(r) for r in rows}
        gone, new = sorted(have - want), sorted(want - have)
        if gone or new:
            return f"shows other rows (drawn, not in the results: {gone}; in the results, not drawn: {new})"
        changed = sorted(_key(a) for a, b in zip(drawn, rows) if a != b)
        return f"shows other numbers for {changed or 'the order of its rows'}"
    return None


def _key(row: dict[str, Any]) -> str:
    """A row's name in a message: its plain fields (``HalfCheetah-v5 50 100000``)."""
    return " ".join(str(v) for k, v in row.items() if k not in ("scores", "seeds"))


def write(png: Path, rows: list[dict[str, Any]], draw: Callable[[list[dict[str, Any]], Path], None]) -> bool:
    """Draw ``png`` from ``rows`` and keep the rows beside it, unless it shows them already;
    whether it was drawn."""
    if stale(png, rows) is None:
        return False
    png.parent.mkdir(parents=True, exist_ok=True)
    draw(rows, png)
    data_path(png).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return True


def seed_strips(rows: list[dict[str, Any]], png: Path) -> None:
    """Every seed's score of each row (environment, labels, steps), one line per row.

    ``rows``: ``{"env", "labels", "steps", "seeds": [k, ...], "scores": [s, ...]}``, drawn top
    to bottom in their order. Each seed is a dot; the median a black bar; the worst seed red
    where it falls below :data:`TARGET`. Vertical lines: a random policy (0), the target (0.9),
    the true-reward agent (1)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(rows)
    fig, ax = plt.subplots(figsize=(9.0, 0.32 * max(n, 4) + 1.6))
    lo = min([-0.2, *(s for r in rows for s in r["scores"])]) - 0.1
    hi = max([1.4, *(s for r in rows for s in r["scores"])]) + 0.1
    for y, r in enumerate(rows):
        scores = r["scores"]
        worst = min(scores)
        colours = ["tab:red" if s == worst and s < TARGET else "tab:blue" for s in scores]
        ax.scatter(scores, [y] * len(scores), s=22, c=colours, alpha=0.75, zorder=3)
        ax.plot([statistics.median(scores)] * 2, [y - 0.32, y + 0.32], color="black", lw=2.2, zorder=4)
        ax.plot([worst, max(scores)], [y, y], color="grey", lw=0.8, zorder=2)
    for x, style, what in ((0.0, ":", "random policy (0)"), (TARGET, "--", "target (0.9)"),
                           (1.0, "-", "true-reward agent (1)")):  # fmt: skip
        ax.axvline(x, color="grey", ls=style, lw=0.9, label=what)
    ax.set_yticks(range(n))
    ax.set_yticklabels([f"{r['env']}  {r['labels']} labels, {r['steps'] // 1000}k steps ({len(r['scores'])})"
                        for r in rows], fontsize=8)  # fmt: skip
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("score: (learned - random) / (true reward - random), per seed")
    ax.set_title("Today's defaults, oracle labels (seeds in brackets):\n"
                 "every seed a dot, the median a bar, a worst seed below 0.9 in red", fontsize=9)  # fmt: skip
    ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -2.0 / (n + 1.5)), ncol=3, frameon=False)
    ax.grid(axis="x", color="0.92", zorder=0)
    fig.tight_layout()
    fig.savefig(png, dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
