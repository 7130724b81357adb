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
from typing import Any

TARGET = 0.9
"""The score a row has to reach (drawn as a line)."""


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
    if not isinstance(drawn, list) or not all(isinstance(r, dict) for r in drawn):
        return f"{data_path(png).name} is not a list of rows"
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


def write(png: Path, rows: list[dict[str, Any]], draw: Callable[[list[dict[str, Any]], Path], None]) -> None:
    """Draw ``png`` from ``rows`` and keep the rows beside it (``<name>.data.json``)."""
    png.parent.mkdir(parents=True, exist_ok=True)
    draw(rows, png)
    data_path(png).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


def _strip(ax: Any, y: float, scores: list[float], colours: list[str] | str = "tab:blue") -> None:
    """One line of a strip figure at height ``y``: each score a dot, the median a black bar, a
    grey line from the lowest to the highest."""
    ax.scatter(scores, [y] * len(scores), s=18, c=colours, alpha=0.75, zorder=3)
    ax.plot([statistics.median(scores)] * 2, [y - 0.3, y + 0.3], color="black", lw=2.1, zorder=4)
    ax.plot([min(scores), max(scores)], [y, y], color="grey", lw=0.8, zorder=2)


def _references(ax: Any, labelled: bool = False) -> None:
    """Vertical lines at a random policy (0), the target (0.9) and the true-reward agent (1)."""
    for x, style, what in ((0.0, ":", "random policy (0)"), (TARGET, "--", "target (0.9)"),
                           (1.0, "-", "true-reward agent (1)")):  # fmt: skip
        ax.axvline(x, color="grey", ls=style, lw=0.9, label=what if labelled else None)
    ax.grid(axis="x", color="0.92", zorder=0)


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
        _strip(ax, y, scores, ["tab:red" if s == worst and s < TARGET else "tab:blue" for s in scores])
    _references(ax, labelled=True)
    ax.set_yticks(range(n))
    ax.set_yticklabels([f"{r['env']}  {r['labels']} labels, {r['steps'] // 1000}k steps ({len(r['scores'])})"
                        for r in rows], fontsize=8)  # fmt: skip
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("score: (learned - random) / (true reward - random), per seed")
    ax.set_title("Today's defaults, oracle labels (seeds in brackets):\n"
                 "every seed a dot, the median a bar, a worst seed below 0.9 in red", fontsize=9)  # fmt: skip
    ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -2.0 / (n + 1.5)), ncol=3, frameon=False)
    fig.tight_layout()
    fig.savefig(png, dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)


def technique_strips(rows: list[dict[str, Any]], png: Path) -> None:
    """The ablation as small panels: one per row of the ablation table that compares two or more
    techniques, each technique a line of its seeds' scores (dots) and median (bar).

    ``rows``: ``{"env", "teacher", "labels", "steps", "next_obs", "scores": {technique: [s, ...]}}``
    (the table's rows, techniques in its column order); rows with one technique are left out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in rows if len(r["scores"]) >= 2]
    if not shown:  # a figure that says so, rather than none
        fig, ax = plt.subplots(figsize=(6.0, 1.0))
        ax.axis("off")
        ax.text(0.5, 0.5, "no row of the ablation compares two techniques yet", ha="center", va="center")
        fig.savefig(png, dpi=100, metadata={"Software": None})
        plt.close(fig)
        return
    cols = 3
    grid = [shown[k : k + cols] for k in range(0, len(shown), cols)]
    heights = [max(len(r["scores"]) for r in line) + 1.2 for line in grid]
    fig, axes = plt.subplots(len(grid), cols, figsize=(5.0 * cols, 0.27 * sum(heights) + 1.0),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)  # fmt: skip
    for ax in axes.flat[len(shown) :]:
        ax.set_visible(False)
    for ax, r in zip(axes.flat, shown):
        names = list(r["scores"])
        for y, name in enumerate(names):
            _strip(ax, y, r["scores"][name])
        _references(ax)
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names, fontsize=7.5)
        ax.set_ylim(len(names) - 0.5, -0.7)
        ax.tick_params(axis="x", labelsize=7.5)
        reads = "s, a, s'" if r["next_obs"] else "s, a"
        name = f"{r['env']}, {r['teacher']}, {r['labels']} labels, {r['steps'] // 1000}k steps ({reads})"
        ax.set_title(name, fontsize=8)
    what = ("The techniques side by side: each seed's score (dots), the median (bar); lines at a random "
            "policy (0), the target (0.9) and the true-reward agent (1)")  # fmt: skip
    fig.suptitle(what, fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=100, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
