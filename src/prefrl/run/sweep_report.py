"""What a person reads after ``prefrl sweep``: a results file, a summary table and plots.

score = (learned return - random return) / (true-reward return - random return), with the
true-reward return averaged over the seeds of that environment, as in
``benchmarks/label_efficiency.py``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict, TypeGuard

import numpy as np

from prefrl.storage.checkpoint import read_json, write_json

if TYPE_CHECKING:
    from prefrl.run.sweep import Cell


@dataclass(frozen=True)
class FoundCell:
    """A finished cell of an earlier grid in the same folder (from its ``result.json``), under
    the folder name it ran in."""

    kind: str
    env: str
    agent: str
    steps: int
    seed: int
    teacher: str
    labels: int
    name: str


GridCell: TypeAlias = "Cell | FoundCell"
"""A cell of this sweep's grid, or one found in the folder."""

Row = TypedDict(
    "Row",
    {
        "env": str,
        "agent": str,
        "teacher": str,
        "labels": int,
        "steps": int,
        "seed": int,
        "return": float,
        "true_reward_return": float | None,
        "random_return": float,
        "score": float | None,
        "wall_s": float,
        "labels_used": int | None,
        "node_id": str | None,
    },
)
"""One finished learned cell, scored (a line of ``results.jsonl``)."""


CellResult = TypedDict(
    "CellResult", {"return": float, "wall_s": float, "labels_used": int, "node_id": str}, total=False
)
"""What the report reads of a cell's ``result.json`` (:func:`prefrl.run.sweep.run_cell` writes it)."""


class ReportSummary(TypedDict):
    """What :func:`write_reports` wrote: how many learned cells it scored, and the summary table."""

    results: int
    table: str


def normalized_score(ret: float, true_reward_return: float, random_ret: float) -> float | None:
    """(return - random return) / (true-reward return - random return): 0 is a random policy, 1
    the agent trained on the true reward; ``None`` when the two reference returns are equal."""
    denom = true_reward_return - random_ret
    return (ret - random_ret) / denom if denom != 0 else None


def random_return(out: Path, env_id: str, episodes: int) -> float:
    """Mean return of random actions in ``env_id`` (cached in ``out/random/``)."""
    from prefrl.agents.evaluate import evaluate_returns

    path = out / "random" / f"{env_id.replace('/', '_')}.json"
    if path.exists():
        return float(read_json(path, "random-return file")["return"])
    ret = float(evaluate_returns(env_id, None, episodes).mean())
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, {"env": env_id, "episodes": episodes, "return": ret})
    return ret


def resolved_reward(run: Path) -> dict[str, object]:
    """:func:`resolved_settings` of a learned run's ``config.json``, so a per-seed result names
    them without its run directory; empty where the file is missing or unreadable."""
    try:
        cfg = json.loads((run / "config.json").read_text())
    except (OSError, ValueError):
        return {}
    return resolved_settings(cfg) if isinstance(cfg, dict) else {}


def resolved_settings(cfg: Mapping[str, Any]) -> dict[str, object]:
    """What a learned run's config (``config.json``'s object) resolved of the ``auto`` settings:
    what its reward read and output (``reward_next_obs``, ``reward_output``), how it chose its
    queries (``query_selection``: ``uniform`` or the disagreement measure, and
    ``selection_from``: the labels before disagreement took over), how broad its first reward
    was (``initial_steps_per_label``, ``l2_init``) and the exploration bonus it paid
    (``exploration_bonus``, with its schedule and gate where on); empty where the config lacks
    them (a run made before they were resolved)."""
    reward = cfg.get("reward")
    if not isinstance(reward, dict):
        return {}
    out: dict[str, object] = {}
    loop = cfg.get("loop") or {}
    if "active_selection" in loop:
        out["query_selection"] = loop.get("uncertainty_measure") if loop["active_selection"] else "uniform"
        if loop["active_selection"]:
            out["selection_from"] = int(loop.get("active_selection_from", 0))
            out["selection_share"] = float(loop.get("active_selection_share", 1.0))
    if loop.get("initial_steps_per_label") is not None:  # auto resolved (a broad first reward)
        out["initial_steps_per_label"] = int(loop["initial_steps_per_label"])
    if (cfg.get("trainer") or {}).get("l2_init") is not None:
        out["l2_init"] = float(cfg["trainer"]["l2_init"])
    if loop.get("exploration_bonus") is not None:  # auto resolved (the gated bonus)
        out["exploration_bonus"] = bonus = float(loop["exploration_bonus"])
        if bonus > 0:
            out["exploration_bonus_schedule"] = str(loop.get("exploration_bonus_schedule", "steps"))
            out["exploration_bonus_gate"] = float(loop.get("exploration_bonus_gate") or 0.0)
    if reward.get("use_next_obs") is not None:
        out["reward_next_obs"] = bool(reward["use_next_obs"])
    if reward.get("output") not in (None, "auto"):
        out["reward_output"] = reward["output"]
    return out


def collect(out: Path, learned: Sequence[GridCell], oracle: Sequence[GridCell], episodes: int) -> list[Row]:
    """One record per finished learned cell, scored against the finished reference runs."""

    def result(cell: GridCell) -> CellResult | None:
        path = out / "cells" / cell.name / "result.json"
        return read_json(path, "cell result") if path.exists() else None

    ref: dict[tuple[str, str, int], list[float]] = {}
    for c in oracle:
        r = result(c)
        if r is not None:
            ref.setdefault((c.env, c.agent, c.steps), []).append(float(r["return"]))
    rows: list[Row] = []
    for c in learned:
        r = result(c)
        if r is None:
            continue
        rand = random_return(out, c.env, episodes)
        refs = ref.get((c.env, c.agent, c.steps))
        oracle_ret = float(np.mean(refs)) if refs else None
        score = None if oracle_ret is None else normalized_score(float(r["return"]), oracle_ret, rand)
        rows.append(
            {
                "env": c.env,
                "agent": c.agent,
                "teacher": c.teacher,
                "labels": c.labels,
                "steps": c.steps,
                "seed": c.seed,
                "return": float(r["return"]),
                "true_reward_return": oracle_ret,
                "random_return": rand,
                "score": score,
                "wall_s": float(r["wall_s"]),
                "labels_used": r.get("labels_used"),
                "node_id": r.get("node_id"),
            }
        )
    return rows


SEED_SPREAD = 0.3
"""Seeds disagree when their scores, each capped at :data:`SCORE_CAP`, span more than this."""

SCORE_CAP = 1.0
"""Scores above this count as this much when seeds are compared: a seed whose agent beat the one
trained on the true reward worked, and by how much says nothing about the others failing."""

FAILED_SEED = 0.5
"""A worst seed below this under a median of at least :data:`GOOD_MEDIAN` is a failure that the
median hides: the seeds disagree whatever their spread."""

GOOD_MEDIAN = 0.8
"""The median at which a failed seed (:data:`FAILED_SEED`) is hidden by it."""

ENOUGH_SEEDS = 5
"""Seeds a result whose seeds disagree needs before its median is read as a figure."""


def _scored(x: float | None) -> TypeGuard[float]:
    return x is not None and not math.isnan(x)


def worst_seed(scores: Sequence[float | None], seeds: Sequence[int]) -> tuple[float, int] | None:
    """The lowest score and its seed (the first such seed where two tie); ``None`` when no seed
    has a score (``None`` or NaN: the reference returns were equal)."""
    scored = [(float(x), int(s)) for x, s in zip(scores, seeds, strict=True) if _scored(x)]
    return min(scored) if scored else None


def seeds_disagree(scores: Sequence[float | None]) -> bool:
    """Whether the seeds' scores disagree: capped at :data:`SCORE_CAP`, they span more than
    :data:`SEED_SPREAD`, or the worst is below :data:`FAILED_SEED` while the median is at least
    :data:`GOOD_MEDIAN`. One scored seed cannot disagree.

    >>> seeds_disagree([0.9, 0.95, 0.2]), seeds_disagree([1.0, 1.6, 0.85]), seeds_disagree([0.7])
    (True, False, False)
    """
    s = np.asarray([x for x in scores if _scored(x)], dtype=float)
    if len(s) < 2:
        return False
    capped = np.minimum(s, SCORE_CAP)
    spread = float(capped.max() - capped.min())
    return spread > SEED_SPREAD or (float(s.min()) < FAILED_SEED and float(np.median(s)) >= GOOD_MEDIAN)


def needs_more_seeds(scores: Sequence[float | None]) -> bool:
    """Whether a result's seeds disagree (:func:`seeds_disagree`) and it has fewer than
    :data:`ENOUGH_SEEDS` of them: run :data:`ENOUGH_SEEDS` before reading its median."""
    return len(scores) < ENOUGH_SEEDS and seeds_disagree(scores)


def disagreement_rule() -> str:
    """The rule of :func:`needs_more_seeds` in words, from its constants."""
    return (
        f"seeds disagree where their scores, capped at {SCORE_CAP:g}, span more than {SEED_SPREAD:g}, "
        f"or where the worst is below {FAILED_SEED:g} under a median of at least {GOOD_MEDIAN:g}; "
        f"a row whose seeds disagree needs {ENOUGH_SEEDS} seeds while it has fewer"
    )


def summary_table(rows: list[Row]) -> str:
    """Markdown: median score, the worst seed (its score and which), range and seeds per
    environment, agent, teacher and budget, and whether the seeds disagree
    (:func:`seeds_disagree`; ``run 5 seeds`` where fewer than :data:`ENOUGH_SEEDS` ran)."""
    groups: dict[tuple[str, str, str, int, int], list[Row]] = {}
    for r in rows:
        groups.setdefault((r["env"], r["agent"], r["teacher"], r["labels"], r["steps"]), []).append(r)
    lines = [
        "| environment | agent | teacher | labels | steps | seeds | median score | worst seed | score range "
        "| median return | true-reward return | random return | median wall time | seeds disagree |",
        "|" + "---|" * 14,
    ]
    for (env, agent, teacher, labels, steps), rs in sorted(groups.items()):
        scores = [r["score"] for r in rs if r["score"] is not None]
        med = f"**{np.median(scores):.2f}**" if scores else "–"
        worst = worst_seed([r["score"] for r in rs], [r["seed"] for r in rs])
        low = "–" if worst is None else f"{worst[0]:.2f} (seed {worst[1]})"
        rng = f"{min(scores):.2f}–{max(scores):.2f}" if scores else "–"
        ref = rs[0]["true_reward_return"]
        disagree = "–"
        if seeds_disagree(scores):
            disagree = f"yes: run {ENOUGH_SEEDS} seeds" if needs_more_seeds(scores) else "yes"
        lines.append(
            f"| {env} | {agent} | {teacher} | {labels} | {steps:,} | {len(rs)} | {med} | {low} | {rng} "
            f"| {np.median([r['return'] for r in rs]):.1f} | {'–' if ref is None else f'{ref:.1f}'} "
            f"| {rs[0]['random_return']:.1f} | {np.median([r['wall_s'] for r in rs]):.0f} s | {disagree} |"
        )
    return "\n".join(lines)


def plot_scores(rows: list[Row], path: Path) -> None:
    """Score against labels, one panel per environment, one line per teacher, seed range as a band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = sorted({r["env"] for r in rows})
    fig, axes = plt.subplots(1, len(envs), figsize=(4.5 * len(envs), 3.6), squeeze=False)
    for ax, env in zip(axes[0], envs):
        for k, teacher in enumerate(sorted({r["teacher"] for r in rows if r["env"] == env})):
            by: dict[int, list[float]] = {}
            for r in rows:
                if r["env"] == env and r["teacher"] == teacher and r["score"] is not None:
                    by.setdefault(r["labels"], []).append(r["score"])
            if not by:
                continue
            x = sorted(by)
            ax.plot(x, [np.median(by[n]) for n in x], marker="o", color=f"C{k}", label=teacher)
            ax.fill_between(x, [min(by[n]) for n in x], [max(by[n]) for n in x], color=f"C{k}", alpha=0.2)
        ax.axhline(0.9, color="grey", ls="--", lw=0.8)
        ax.axhline(0.0, color="grey", lw=0.5)
        ax.set_title(env, fontsize=9)
        ax.set_xlabel("labels")
        ax.set_ylabel("score (median; band: seed range)")
        ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_wall(out: Path, cells: Sequence[GridCell], path: Path) -> None:
    """Wall time of every finished cell (learned and reference runs), longest first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    times = []
    for c in cells:
        p = out / "cells" / c.name / "result.json"
        if p.exists():
            times.append((float(json.loads(p.read_text())["wall_s"]), c.name, c.kind))
    times.sort(reverse=True)
    fig, ax = plt.subplots(figsize=(8.0, 0.25 * len(times) + 1.2))
    ax.barh(
        [t[1] for t in times],
        [t[0] for t in times],
        color=["C1" if t[2] == "oracle" else "C0" for t in times],
    )
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=6)
    ax.set_xlabel("wall time per cell (s); orange: runs on the true reward")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def finished_cells(
    out: Path, learned: Sequence[GridCell], oracle: Sequence[GridCell]
) -> tuple[list[GridCell], list[GridCell]]:
    """The given cells plus every other cell of ``out/cells/`` with a result: a grid of an earlier
    ``prefrl sweep`` into the same folder stays in its results and summary."""
    known = {c.name for c in [*learned, *oracle]}
    more: dict[str, list[GridCell]] = {"learned": [], "oracle": []}
    fields = {"kind", "env", "agent", "steps", "seed", "teacher", "labels"}
    for path in sorted((out / "cells").glob("*/result.json")):
        if path.parent.name in known:
            continue
        try:
            cell = read_json(path, "cell result").get("cell")
        except (ValueError, FileNotFoundError, AttributeError):
            continue  # not a finished cell's result: the summary skips it, as a missing one
        if isinstance(cell, dict) and fields <= set(cell) and cell["kind"] in more:
            more[cell["kind"]].append(FoundCell(**{k: cell[k] for k in fields}, name=path.parent.name))
    return [*learned, *more["learned"]], [*oracle, *more["oracle"]]


def write_reports(
    out: Path, learned: Sequence[GridCell], oracle: Sequence[GridCell], episodes: int
) -> ReportSummary:
    """``results.jsonl``, ``summary.md``, ``score_vs_labels.png``, ``wall_time.png`` in ``out``,
    over every finished cell in ``out`` (this invocation's grid and earlier ones)."""
    learned, oracle = finished_cells(out, learned, oracle)
    rows = collect(out, learned, oracle, episodes)
    with open(out / "results.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    table = summary_table(rows)
    (out / "summary.md").write_text(table + "\n")
    if rows:
        plot_scores(rows, out / "score_vs_labels.png")
    plot_wall(out, [*oracle, *learned], out / "wall_time.png")
    return {"results": len(rows), "table": table}
