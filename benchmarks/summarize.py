"""Table and plot of label-efficiency results (``result.json`` files of label_efficiency.py).

    python benchmarks/summarize.py benchmarks/results --plot docs/figures/label_efficiency.png

Prints a Markdown table (environment, agent, labels, steps, seeds, median score, the worst
seed's score and which seed, per-seed scores, returns, wall time) and, with ``--plot``, draws
the median score against the label budget, one line per environment, with each seed's score
as a dot.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import Any

from prefrl.run.sweep_report import worst_seed


def load_results(root: Path) -> list[dict[str, Any]]:
    """Every ``result.json`` below ``root`` (or ``root`` itself when it is a file).

    A result in a folder of its own below ``root`` (``label_efficiency.py --out root/NAME``,
    e.g. runs of a changed agent that must not reuse the true-reward runs of the old one) gets
    ``series = NAME``, shown among its options.
    """
    paths = [root] if root.is_file() else sorted(root.rglob("*.json"))
    out = []
    for p in paths:
        try:
            data = json.loads(p.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise SystemExit(f"{p}: not a JSON result file ({e})") from e
        if isinstance(data, dict) and "median_normalized_score" in data:
            parts = p.relative_to(root).parts if p != root else ()
            depth = str(data.get("env", "")).count("/") + 2  # [env prefix/] result folder / file
            if len(parts) > depth:
                data["series"] = "/".join(parts[: len(parts) - depth])
            out.append(data)
    if not out:
        raise SystemExit(f"{root}: no label-efficiency result files found")
    return sorted(out, key=lambda r: (r["env"], options(r), r["labels"], r["steps"]))


@functools.cache
def presets() -> dict[str, dict[str, object]]:
    """label_efficiency.py's technique presets, every one with committed results (``MEASURED``,
    ``--method``'s and the retired ones), loaded from beside this file."""
    import importlib.util

    here = Path(__file__).with_name("label_efficiency.py")
    spec = importlib.util.spec_from_file_location("label_efficiency", here)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.MEASURED


LEGACY_MEASURE = "logit"
"""The disagreement measure of runs that name neither it nor ``query_selection`` (the default
until 2026-11-25)."""


SELECTION_KEYS = (
    "active_selection",
    "uncertainty_measure",
    "active_selection_from",
    "active_selection_share",
)
"""The loop options that say how queries are chosen (none of them matter with uniform queries)."""

BROAD_KEYS = {"initial_steps_per_label": "initial_steps_per_label", "trainer.l2_init": "l2_init"}
"""Options of a broad first reward -> the keys a result records them under (resolved, ``auto``
included). Zero, the default before 2026-11-26, goes unnamed, recorded or named."""
BONUS_KEYS = ("exploration_bonus", "exploration_bonus_gate", "exploration_bonus_schedule")
"""The exploration bonus's options, recorded as resolved (``auto`` included) since 2026-11-30:
spelled out where the bonus was on, unnamed where it was off (with its schedule and gate)."""


def loop_options(result: dict[str, Any]) -> dict[str, object]:
    """A result's learned-run options with its query selection spelled out: where the runs
    recorded it (``query_selection``, ``selection_from``), as recorded; else a run with active
    selection and no measure ran with the default of its time (``LEGACY_MEASURE``), and one that
    names no ``active_selection_from`` chose by disagreement from its first query (runs before
    2026-11-25 had no warm-up). The random steps per label and the L2 of the first reward
    are spelled out where the runs recorded them non-zero (:data:`BROAD_KEYS`), and the
    exploration bonus where it was on (:data:`BONUS_KEYS`), so a run at today's defaults that
    resolved a broad first reward or the gated bonus files as one."""
    opts = dict(result.get("loop_options") or {})
    for key, recorded in BROAD_KEYS.items():
        if result.get(recorded) is not None:
            opts[key] = result[recorded]
        if key in opts and not opts[key]:
            del opts[key]
    for key in BONUS_KEYS:
        if result.get(key) is not None:
            opts[key] = result[key]
    if not opts.get("exploration_bonus"):  # off: its schedule and gate do nothing
        for key in BONUS_KEYS:
            opts.pop(key, None)
    else:  # no gate (named as 0 or not) and RUNE's per-step decay are a given weight's own
        if not opts.get("exploration_bonus_gate"):
            opts.pop("exploration_bonus_gate", None)
        if opts.get("exploration_bonus_schedule") == "steps":
            opts.pop("exploration_bonus_schedule")
    chosen = result.get("query_selection")
    if chosen == "uniform" or (chosen is None and opts.get("active_selection") is False):
        for k in SELECTION_KEYS:  # uniform queries, recorded or named: as if not named
            opts.pop(k, None)
        return opts
    if chosen is not None:
        opts.update(active_selection=True, uncertainty_measure=chosen)
    elif opts.get("active_selection"):
        opts.setdefault("uncertainty_measure", LEGACY_MEASURE)
    if opts.get("active_selection"):
        given = opts.get("active_selection_from", 0)
        opts["active_selection_from"] = int(result.get("selection_from", given))
        share = float(result.get("selection_share", opts.get("active_selection_share", 1.0)))
        opts.pop("active_selection_share", None)
        if share != 1.0:  # all queries by disagreement unless named
            opts["active_selection_share"] = share
    return opts


def comparable(preset: dict[str, object]) -> dict[str, object]:
    """A preset's options as :func:`loop_options` writes them (uniform queries go unnamed)."""
    return {k: v for k, v in preset.items() if not (k == "active_selection" and v is False)}


def options(result: dict[str, Any]) -> str:
    """The options a result was run with, as ``name=value`` text (empty for defaults): a
    technique preset by name, a teacher other than the oracle, explicit options, and the
    evaluation where it was not the policy's mean action (``eval=sampled``)."""
    method = result.get("method", "baseline")
    named = loop_options(result)
    preset = comparable(presets().get(method, {}))
    if method != "baseline" and not preset.items() <= named.items():
        method = "baseline"  # the preset has changed since (e.g. "active"'s measure): name the options
    if method != "baseline":  # a preset of label_efficiency.py by name, plus what was set beside it
        named = {k: v for k, v in named.items() if k not in preset or preset[k] != v}
        named["method"] = method
    if result.get("teacher", "oracle") != "oracle":
        named["teacher"] = result["teacher"]
    if result.get("iterations", 14) != 14:
        named["iterations"] = result["iterations"]
    if result.get("series"):
        named["series"] = result["series"]
    if result.get("eval") not in (None, "deterministic"):  # sampled actions (discrete on images), or mixed
        named["eval"] = result["eval"]
    return " ".join(f"{k}={v}" for k, v in sorted(named.items()))


def worst(result: dict[str, Any]) -> tuple[float, int] | None:
    """A result's worst seed, ``(score, seed)``: as ``combine()`` recorded it
    (``worst_normalized_score``, ``worst_seed``), or, in results combined before it did, the
    lowest of ``scores`` and its seed; ``None`` when no seed has a score."""
    if result.get("worst_seed") is not None:
        return float(result["worst_normalized_score"]), int(result["worst_seed"])
    return worst_seed(result["scores"], result["seeds"])


def worst_cell(result: dict[str, Any]) -> str:
    """``0.63 (seed 1)``: the worst seed's score and which seed it was."""
    w = worst(result)
    return "–" if w is None else f"{w[0]:.2f} (seed {w[1]})"


def table(results: list[dict[str, Any]]) -> str:
    """Markdown table, one row per result."""
    head = ("| environment | agent | options | labels | steps | seeds | median score | worst seed "
            "| per-seed scores | learned / oracle / random return | wall time per learned run |")  # fmt: skip
    rows = [head, "|" + "---|" * 11]
    for r in results:
        scores = ", ".join(f"{s:.2f}" for s in r["scores"])
        rows.append(
            f"| {r['env']} | {r['agent']} | {options(r) or '–'} | {r['labels']} | {r['steps']:,} "
            f"| {len(r['seeds'])} "
            f"| **{r['median_normalized_score']:.2f}** | {worst_cell(r)} | {scores} "
            f"| {r['learned_return']:.1f} / {r['oracle_return']:.1f} / {r['random_return']:.1f} "
            f"| {r['learned_train_wall_s']:.0f} s |"
        )
    return "\n".join(rows)


def plot(results: list[dict[str, Any]], path: Path) -> None:
    """Median score against labels per environment (line), seeds as dots."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10.0, 5.0))
    keys = sorted({(r["env"], options(r)) for r in results})
    envs = sorted({env for env, _ in keys})
    opt_sets = sorted({opts for _, opts in keys})
    markers = "os^Dvpx*<>h"
    for env, opts in keys:
        rs = sorted((r for r in results if (r["env"], options(r)) == (env, opts)), key=lambda r: r["labels"])
        color = f"C{envs.index(env) % 10}"  # one colour per environment,
        k = opt_sets.index(opts)  # one marker and line style per set of options
        style = dict(color=color, marker=markers[k % len(markers)], ls="-" if k % 2 == 0 else "--")
        name = f"{env} ({rs[0]['agent']}{', ' + opts if opts else ''})"
        ax.plot([r["labels"] for r in rs], [r["median_normalized_score"] for r in rs], label=name, **style)
        for r in rs:
            ax.scatter([r["labels"]] * len(r["scores"]), r["scores"], s=12, color=color, alpha=0.35,
                       marker=style["marker"])  # fmt: skip
    ax.axhline(0.9, color="grey", ls="--", lw=0.8)
    ax.axhline(0.0, color="grey", lw=0.5)
    ax.set_xscale("log")
    ax.set_xlabel("labels (comparisons)")
    ax.set_ylabel("score: (learned - random) / (true reward - random)")
    ax.set_title("Agent trained on the learned reward vs on the true reward")
    ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", type=Path, help="a result.json, or a directory searched for them")
    p.add_argument("--plot", type=Path, default=None, help="write the score-vs-labels plot here (.png)")
    a = p.parse_args(argv)
    results = load_results(a.results)
    print(table(results))
    if a.plot is not None:
        plot(results, a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
