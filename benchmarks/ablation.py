"""Ablation table and plot of the label-efficiency techniques, from result files.

    python benchmarks/ablation.py benchmarks/results --plot runs/ablation.png

Reads every ``result.json`` of ``label_efficiency.py`` below the folder that ran a technique
preset (``--method``; older results, run with older defaults, are left to ``summarize.py``)
with nothing else changed, and prints a Markdown table: one row per environment,
teacher, label budget and step count, one column per method, each cell the median score
over seeds with its worst seed and seed count. ``--write`` puts the table into a Markdown file
between ``<!-- generated: ablation -->`` and ``<!-- end generated: ablation -->`` (the docs get it,
with every other table, from ``docs_tables.py``); ``--plot`` draws each row that compares two or
more techniques as a panel, every seed's score and the median per technique.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
START, END = "<!-- generated: ablation -->", "<!-- end generated: ablation -->"
"""The markers of the table in docs/benchmarks/ablation.md, as ``docs_tables.py`` writes them."""


@functools.cache  # one module object per name: method_of runs once per result
def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


NEXT_OBS = "reward.use_next_obs"
"""The reward's inputs are a column of their own: s' became a default of the MLP reward, and
results from before and after must not share a cell."""


def method_of(result: dict[str, Any], presets: dict[str, dict[str, object]]) -> tuple[str, bool] | None:
    """The preset a result ran with and whether its reward read s'; ``None`` for results with
    options beyond a preset."""
    if result.get("iterations", 14) != 14:
        return None
    name = result.get("method")  # results from before the presets ran with older defaults: left out
    opts = _load("summarize").loop_options(result)
    next_obs = bool(result.get("reward_next_obs", opts.pop(NEXT_OBS, False)))
    opts.pop(NEXT_OBS, None)
    if name is None:
        return None
    summarize = _load("summarize")
    comparable = summarize.comparable
    if name in presets and opts == comparable(presets[name]):
        return name, next_obs
    # a technique on top of a broad first reward (today's default resolved it, the preset does
    # not name it) has a column of its own: its baseline is the broad column, not active_warm;
    # on top of the gated bonus too (since 2026-11-30), its baseline the gated column
    broad_keys = set(summarize.BROAD_KEYS)
    for base, keys in (("broad", broad_keys), ("gated", broad_keys | set(summarize.BONUS_KEYS))):
        under = comparable(presets.get(base, {}))
        on_base = name != base and keys <= opts.keys() and all(opts[k] == under.get(k) for k in keys)
        if on_base and name in presets and not keys & presets[name].keys():
            if {k: v for k, v in opts.items() if k not in keys} == comparable(presets[name]):
                return f"{name}+{base}", next_obs
    # a preset's options given one by one (--loop active_selection=true) are that preset
    same = [m for m, o in presets.items() if comparable(o) == opts]
    return (same[0], next_obs) if same else None


def cell(scores: list[float]) -> str:
    """``**median** (worst W, n seeds)``: a median hides a failed seed, so the worst is named."""
    s = np.asarray(scores)
    seeds = f"worst {s.min():.2f}, {len(s)} seeds" if len(s) > 1 else "1 seed"
    return f"**{np.median(s):.2f}** ({seeds})"


def rows(
    results: list[dict[str, Any]], presets: dict[str, dict[str, object]]
) -> dict[tuple, dict[str, list]]:
    """``{(env, teacher, labels, steps, reads s'): {method: per-seed scores}}``.

    Two result sets for one cell (e.g. the same method run once with ``--method`` and once with
    its options spelled out) do not overwrite each other by chance: the one with more seeds
    is kept, and a warning names both."""
    out: dict[tuple, dict[str, list]] = {}
    for r in results:
        got = method_of(r, presets)
        if got is None:
            continue
        m, next_obs = got
        key = (r["env"], r.get("teacher", "oracle"), r["labels"], r["steps"], next_obs)
        cell_of = out.setdefault(key, {})
        if m in cell_of:
            keep = max(cell_of[m], list(r["scores"]), key=len)
            seeds = f"{len(cell_of[m])} and {len(r['scores'])} seeds"
            shown = f"the table shows the {len(keep)}-seed one"
            print(f"ablation: two results for {key[:4]} {m} ({seeds}); {shown}", file=sys.stderr)
            cell_of[m] = keep
        else:
            cell_of[m] = list(r["scores"])
    return out


def columns(grid: dict[tuple, dict[str, list]], methods: list[str]) -> list[str]:
    """The methods with results, in preset order, each ``<preset>+broad`` and ``<preset>+gated``
    after its preset."""
    order = [c for m in methods for c in (m, f"{m}+broad", f"{m}+gated")]
    return [m for m in order if any(m in v for v in grid.values())]


def table(grid: dict[tuple, dict[str, list]], methods: list[str]) -> str:
    used = columns(grid, methods)
    head = "| environment | teacher | labels | steps | reward reads | " + " | ".join(used) + " |"
    lines = [head, "|" + "---|" * (5 + len(used))]
    for (env, teacher, labels, steps, next_obs), by in sorted(grid.items()):
        cells = [cell(by[m]) if m in by else "" for m in used]
        reads = "s, a, s'" if next_obs else "s, a"
        lines.append(f"| {env} | {teacher} | {labels} | {steps:,} | {reads} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def figure_rows(grid: dict[tuple, dict[str, list]], methods: list[str]) -> list[dict[str, Any]]:
    """The grid as its figure draws it (``docs_figures.technique_strips``): one row per
    environment, teacher, budget, steps and reward inputs, each technique's per-seed scores (4
    digits) in the table's column order."""
    used = columns(grid, methods)
    return [
        {
            "env": env,
            "teacher": teacher,
            "labels": labels,
            "steps": steps,
            "next_obs": bool(nxt),
            "scores": {m: [round(float(x), 4) for x in by[m]] for m in used if m in by},
        }
        for (env, teacher, labels, steps, nxt), by in sorted(grid.items())
    ]


def plot(grid: dict[tuple, dict[str, list]], methods: list[str], path: Path) -> None:
    """Each row that compares two or more techniques: every seed's score and the median per
    technique (the figure of docs/benchmarks/ablation.md)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _load("docs_figures").technique_strips(figure_rows(grid, methods), path)


def write_into(doc: Path, text: str) -> None:
    """Replace the part of ``doc`` between the ablation markers with ``text``."""
    body = doc.read_text()
    if START not in body or END not in body:
        raise SystemExit(f"{doc}: no {START} ... {END} markers to write the table between")
    head, rest = body.split(START, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(f"{head}{START}\n{text}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", type=Path, help="a directory searched for result.json files")
    p.add_argument("--plot", type=Path, default=None, help="draw the techniques side by side here (.png)")
    p.add_argument("--write", type=Path, default=None, help="put the table into this Markdown file")
    a = p.parse_args(argv)
    summarize = _load("summarize")
    presets = summarize.presets()  # label_efficiency.py's MEASURED, loaded once
    grid = rows(summarize.load_results(a.results), presets)
    if not grid:
        raise SystemExit(f"{a.results}: no results of a technique preset")
    text = table(grid, list(presets))
    print(text)
    if a.write is not None:
        write_into(a.write, text)
    if a.plot is not None:
        plot(grid, list(presets), a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
