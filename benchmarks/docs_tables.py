"""Every table of the benchmark docs (and docs/interpret.md's CoinRun table), generated from the result
files in ``benchmarks/results/``.

    python benchmarks/docs_tables.py            # write the tables into the docs
    python benchmarks/docs_tables.py --check    # exit 1 where a doc differs from the results
    python benchmarks/docs_tables.py --print at-a-glance

A generated table sits in a doc between two markers naming it::

    <!-- generated: NAME -->
    | ... |
    <!-- end generated: NAME -->

and is rewritten from ``TABLES[NAME]``; everything outside the markers is prose, left alone.
``--check`` rewrites nothing: it names the doc, the table and its first line that differs from
what the results give, so a figure copied by hand, or a result added without regenerating the
docs, fails the test suite (tests/benchmarks/test_docs_tables.py).

The tables reuse what the other scripts compute: ``summarize.py`` (the full label-efficiency
table and how a result's options are named), ``ablation.py`` (which preset a result ran, the
ablation table), ``frontier.py`` (DeepMind Control beside the published table). A new table is
one entry of :data:`TABLES` (a function of :class:`Results` returning Markdown) and a pair of
markers in a doc; a table that compares settings side by side is one :class:`Comparison`
naming its result folders.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import math
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from prefrl.run import sweep_report
from prefrl.run.sweep_report import ENOUGH_SEEDS, worst_seed

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
DOCS = (
    REPO / "docs" / "benchmarks.md",
    *sorted((REPO / "docs" / "benchmarks").glob("*.md")),
    REPO / "docs" / "interpret.md",  # the CoinRun table
)
FIGURES_DIR = REPO / "docs" / "figures"
OPEN = re.compile(r"^<!-- generated: (?P<name>[\w.-]+) -->\s*$")
CLOSE = "<!-- end generated: {name} -->"


@functools.cache  # one module object per script, shared with ablation.py's own loads
def _load(name: str) -> Any:
    if name == "ablation":
        spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    return _load("ablation")._load(name)


# ------------------------------------------------------------------------------ results
class Results:
    """The result files under ``root``, loaded once and shared by every table."""

    def __init__(self, root: Path = RESULTS) -> None:
        if not root.is_dir():
            raise SystemExit(f"{root}: not a folder of benchmark results")
        self.root = root

    @functools.cached_property
    def all(self) -> list[dict[str, Any]]:
        """Every label-efficiency ``result.json`` (``summarize.load_results``)."""
        return list(_load("summarize").load_results(self.root))

    @functools.cached_property
    def presets(self) -> dict[str, dict[str, object]]:
        """label_efficiency.py's technique presets, in their order."""
        return dict(_load("summarize").presets())

    def folder(self, name: str) -> dict[str, Any]:
        """The result of one folder under ``root`` (as the full table reads it)."""
        path = self.root / name / "result.json"
        if not path.is_file():
            raise SystemExit(f"{path}: no such result (a table names it; run the benchmark or fix the table)")
        (result,) = _load("summarize").load_results(path)
        return dict(result)

    def json(self, name: str) -> Any:
        """A JSON file under ``root`` (speed, overhead and backend benchmarks)."""
        path = self.root / name
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            raise SystemExit(f"{path}: no such result file (a table reads it)") from None
        except json.JSONDecodeError as e:
            raise SystemExit(f"{path}: not a JSON result file ({e})") from e

    @functools.cached_property
    def auto_output(self) -> dict[str, str]:
        """Environment -> the reward output ``auto`` resolved there (``tanh``, ``linear``), as the
        learned runs that did not set it recorded it (``seed<k>-learned.json``)."""
        seen: dict[str, set[str]] = {}
        for path in sorted(self.root.rglob("result.json")):
            result = json.loads(path.read_text())
            if "reward.output" in (result.get("loop_options") or {}) or "env" not in result:
                continue
            for seed in path.parent.glob("seed*-learned.json"):
                out = json.loads(seed.read_text()).get("reward_output")
                if out is not None:
                    seen.setdefault(result["env"], set()).add(out)
        return {env: outs.pop() for env, outs in seen.items() if len(outs) == 1}


# ---------------------------------------------------------------------------- formatting
def with_worst(median: float, scores: list[float], digits: int = 2, worst: float | None = None) -> str:
    """``**median**, worst W (seed, seed, ...)``: the median over seeds, the worst seed's score
    (``worst``, else the lowest of ``scores``: a median hides a failed seed) and every seed's;
    ``**median** (1 seed)`` for one."""
    if len(scores) == 1:
        return f"**{median:.{digits}f}** (1 seed)"
    every = ", ".join(f"{s:.{digits}f}" for s in scores)
    low = min(scores) if worst is None else worst
    return f"**{median:.{digits}f}**, worst {low:.{digits}f} ({every})"


def per_seed(result: dict[str, Any]) -> str:
    """A label-efficiency result as :func:`with_worst` writes it, its worst seed as
    ``summarize.worst`` reads it (recorded, or from the scores of a result combined before)."""
    worst = _load("summarize").worst(result)
    low = None if worst is None else worst[0]
    return with_worst(result["median_normalized_score"], list(result["scores"]), worst=low)


def ret(x: float) -> str:
    return f"{x:,.1f}".replace("-", "−")


def markdown_table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


# ---------------------------------------------------------------------------- at a glance
TARGET = 0.9
"""The score a row has to reach: 90% of the way from a random policy to the true-reward agent."""


def default_columns(res: Results) -> dict[str, str]:
    """Environment -> the ablation column that holds runs at today's defaults there.

    ``prefrl train`` turns on a broad first reward (``--loop.initial-steps-per-label`` and
    ``--trainer.l2-init`` auto) where random actions only meet time limits, and the bounded
    reward output where they reach a termination: both follow one check of the environment,
    so the output the runs recorded says which column is today's default (``broad`` where it
    was linear, ``active_warm``, today's queries and nothing else, where it was tanh)."""
    return {env: "broad" if out == "linear" else "active_warm" for env, out in res.auto_output.items()}


def at_defaults(res: Results) -> dict[str, list[dict[str, Any]]]:
    """Environment -> its results at today's defaults (oracle teacher, the reward reading s'),
    one per label budget and step count (the one with more seeds where two ran)."""
    ablation, columns = _load("ablation"), default_columns(res)
    out: dict[tuple[str, int, int], dict[str, Any]] = {}
    for r in res.all:
        got = ablation.method_of(r, res.presets)
        if got is None or r.get("teacher", "oracle") != "oracle" or columns.get(r["env"]) != got[0]:
            continue
        if not got[1]:  # the reward reads s' by default
            continue
        key = (r["env"], r["labels"], r["steps"])
        if key not in out or len(r["scores"]) > len(out[key]["scores"]):
            out[key] = r
    for name in todays_runs():  # newer than those: measured at the run watch's defaults
        if (res.root / name / "result.json").is_file():  # (a missing one fails its own table)
            r = res.folder(name)
            out[(r["env"], r["labels"], r["steps"])] = r
    by_env: dict[str, list[dict[str, Any]]] = {}
    for (env, _, _), r in sorted(out.items()):
        by_env.setdefault(env, []).append(r)
    return by_env


def todays_runs() -> list[str]:
    """Result folders that ran at today's defaults but that :func:`at_defaults` cannot tell by
    their options: every comparison's column headed "... (today's default)" (series folders
    measured since a default changed, whose options name today's values or nothing; runs of
    their rows from before are in the other columns), in the order of :data:`COMPARISONS`, so a
    later comparison's run of the same row wins. They replace the older runs of the same
    environment, budget and steps."""
    out = []
    for table in COMPARISONS.values():
        for col, head in enumerate(table.head[1:]):
            if head.endswith("(today's default)"):
                out += [cells[col] for _, cells in table.rows if isinstance(cells[col], str)]
    return out


def smallest_reaching(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The result with the fewest labels whose median score reached :data:`TARGET` (more seeds,
    then the higher median, among results of that budget); ``None`` when none did."""
    hits = [r for r in results if r["median_normalized_score"] >= TARGET]
    if not hits:
        return None
    return min(hits, key=lambda r: (r["labels"], -len(r["scores"]), -r["median_normalized_score"]))


def fewer_or_more_seeds(other: dict[str, Any], mine: dict[str, Any]) -> bool:
    """Whether ``other`` reached the target with fewer labels than ``mine``, or with as many
    labels and more seeds (worth showing beside today's defaults)."""
    if other["labels"] != mine["labels"]:
        return bool(other["labels"] < mine["labels"])
    return len(other["scores"]) > len(mine["scores"])


def at_a_glance(res: Results) -> str:
    """One row per environment: the fewest labels with which today's defaults reached a median
    score of 0.9, and the fewest with which any measured setting did, where that is fewer."""
    options = _load("summarize").options
    defaults = at_defaults(res)
    oracle = [r for r in res.all if r.get("teacher", "oracle") == "oracle"]
    rows = []
    for env in sorted({r["env"] for r in oracle}):
        mine = defaults.get(env, [])
        best = smallest_reaching(mine)
        anyone = smallest_reaching([r for r in oracle if r["env"] == env])
        shown = best or anyone or max((r for r in oracle if r["env"] == env), key=lambda r: r["labels"])
        if best is not None:
            labels, score = f"**{best['labels']}**", per_seed(best)
        elif mine:
            top = max(mine, key=lambda r: (r["labels"], r["median_normalized_score"]))
            shown = top
            labels, score = f"not reached ({', '.join(str(r['labels']) for r in mine)} tried)", per_seed(top)
        else:
            labels, score = "not measured", "–"
        if anyone is not None and (best is None or fewer_or_more_seeds(anyone, best)):
            opts = options(anyone) or "–"
            other = f"{anyone['labels']}: {per_seed(anyone)}, {anyone['steps']:,} steps, options {opts}"
        elif best is not None:
            other = "the same"
        else:
            other = "none reached 0.9"
        rows.append([
            env, shown["agent"].upper(), labels, score, f"{shown['steps']:,}",
            f"{ret(shown['oracle_return'])} ({ret(shown['random_return'])})", other,
        ])  # fmt: skip
    order = {row[0]: i for i, row in enumerate(rows)}

    def rank(row: list[str]) -> tuple[int, int, int]:
        m = re.match(r"\*\*(\d+)\*\*", row[2])
        return (0, int(m.group(1)), order[row[0]]) if m else (1, 0, order[row[0]])

    head = ["environment", "agent", "labels at today's defaults", "median score, worst seed (per seed)",
            "steps", "true-reward agent's return (random)",
            "any setting: fewest labels reaching 0.9"]  # fmt: skip
    return markdown_table(head, sorted(rows, key=rank))


# ------------------------------------------------------------------- tables of other scripts
def label_efficiency(res: Results) -> str:
    """Every label-efficiency result, one row each (``summarize.py``)."""
    return str(_load("summarize").table(res.all))


def ablation(res: Results) -> str:
    """The techniques ablation (``ablation.py``)."""
    ab = _load("ablation")
    return str(ab.table(ab.rows(res.all, res.presets), list(res.presets)))


def dmc(res: Results) -> str:
    """DeepMind Control beside the published table (``frontier.py``)."""
    frontier = _load("frontier")
    return str(frontier.markdown(frontier.summarize(res.root / "frontier", None)))


# ------------------------------------------------------------------- speed, overhead, backends
SPEED_FILE = "reward_learning-2026-11-22.json"
SPEED_ROWS = (  # (figure, prefrl key, imitation key, ratio key, target)
    ("training, single 32x32 MLP (comparisons/s)", "single.comparisons_per_s",
     "single.comparisons_per_s", "ratio.single", ">= 15x"),
    ("training, ensemble of 5 vs imitation's 3 (comparisons/s)", "ensemble5.comparisons_per_s",
     "ensemble3.comparisons_per_s", "ratio.ensemble5_vs_imitation_ensemble3", ">= 10x"),
    ("disagreement selection, ensemble of 3 (candidate pairs/s)", "selection.candidate_pairs_per_s",
     "selection.candidate_pairs_per_s", "ratio.selection", ">= 15x"),
    ("CNN reward on 84x84x4 uint8, 25-step clips (comparisons/s)", "image.comparisons_per_s",
     None, None, None),
    ("keypoint CNN reward, moving dot (comparisons/s)", "keypoints.comparisons_per_s", None, None, None),
)  # fmt: skip
"""The rows of the speed table; the targets are issue 1's."""


def speed(res: Results) -> str:
    """prefrl's core engine against imitation 1.0.1 (``reward_learning.py``'s JSON)."""
    data = res.json(SPEED_FILE)
    imitation = data.get("imitation", {})
    rows = []
    for figure, key, imit, ratio, target in SPEED_ROWS:
        if key not in data:
            continue
        threads = data.get("threads", {}).get(key)
        ours = f"{data[key]:,.0f}" + (f" ({threads} threads)" if threads else "")
        theirs = f"{imitation[imit]:,.0f}" if imit in imitation else "–"
        rows.append(
            [figure, ours, theirs, f"**{data[ratio]:.1f}x**" if ratio in data else "–", target or "–"]
        )
    if "peak_rss_mib" in data:
        rows.append(["peak RSS of the benchmark process", f"{data['peak_rss_mib']:,.0f} MiB", "", "", ""])
    return markdown_table(["figure", "prefrl", "imitation 1.0.1", "ratio", "target"], rows)


OVERHEAD_FILE = "overhead-Pendulum-v1-15000s.json"
OVERHEAD_VERSIONS = {
    "before_numpy_reward_path": "before: per-step reward through PyTorch",
    "after": "after: per-step reward in NumPy (FastReward)",
}
SHARES = (  # (heading, key of learned_split_share)
    ("agent updates + env steps", "agent_updates_and_env_steps_s"),
    ("per-step reward inference", "reward_inference_s"),
    ("reward training", "reward_training_s"),
    ("relabelling", "relabel_s"),
    ("rest", "other_s"),
)


def overhead(res: Results) -> str:
    """CPU time of the learned-reward run against the true-reward run (``overhead.py``'s JSON)."""
    data = res.json(OVERHEAD_FILE)
    rows = []
    for key, run in data.items():
        per_round = ", ".join(f"{x:.3f}" for x in run["cpu_ratios"])
        shares = [f"{run['learned_split_share'][k]:.1%}" for _, k in SHARES]
        rows.append([OVERHEAD_VERSIONS.get(key, key), f"**{run['cpu_ratio']:.3f}**", per_round, *shares])
    head = ["version", "CPU ratio (median)", "per round", *(h for h, _ in SHARES)]
    return markdown_table(head, rows)


def backends(res: Results) -> str:
    """SB3 against SBX (``agent_backends.py``'s JSON files, ``backends-*.json``)."""
    rows = []
    for path in sorted(res.root.glob("backends-*.json")):
        data = res.json(path.name)
        for backend in ("sb3", "sbx"):
            b = data[backend]
            rows.append([
                data["env"], str(data["labels"]), f"{data['steps']:,}", str(len(data["seeds"])), backend,
                f"{b['learned_steps_per_s']:.0f}", f"{b['oracle_steps_per_s']:.0f}",
                f"{b['learned_cpu_s']:.0f} s / {b['oracle_cpu_s']:.0f} s",
                with_worst(b["median_normalized_score"], b["scores"]),
            ])  # fmt: skip
    head = ["env", "labels", "steps", "seeds", "backend", "learned run, env steps/s",
            "true-reward run, env steps/s", "CPU time, learned / true-reward run",
            "median score, worst seed (per seed)"]  # fmt: skip
    return markdown_table(head, rows)


# ------------------------------------------------------------------- settings side by side
class Text(NamedTuple):
    """A cell written as it is (a note such as "= uniform"), not a result."""

    text: str


Cell = str | Text | None
"""A result folder under ``benchmarks/results/`` (its median and per-seed scores), a note, or
nothing (not run)."""


class Comparison(NamedTuple):
    """Settings side by side: one row per setting of the environment, one column per option set,
    each cell the result of one folder of ``benchmarks/results/``.

    (NamedTuples, not dataclasses: the benchmark scripts are loaded from their files, outside
    ``sys.modules``, where a dataclass cannot resolve its own module.)"""

    head: tuple[str, ...]
    rows: tuple[tuple[str, tuple[Cell, ...]], ...]

    def __call__(self, res: Results) -> str:
        out = []
        for label, cells in self.rows:
            if len(cells) != len(self.head) - 1:
                raise SystemExit(
                    f"comparison row {label!r}: {len(cells)} cells for {len(self.head) - 1} columns"
                )
            out.append([label, *(self.cell(res, c) for c in cells)])
        return markdown_table(list(self.head), out)

    @staticmethod
    def cell(res: Results, cell: Cell) -> str:
        if cell is None:
            return "–"
        if isinstance(cell, Text):
            return cell.text
        return per_seed(res.folder(cell))


HC = "HalfCheetah-v5-sac-{teacher}-{labels}l-100000s"
HC50 = HC.format(teacher="oracle", labels=50)
HC100_NOISY, HC100_MISTAKE = HC.format(teacher="noisy", labels=100), HC.format(teacher="mistake", labels=100)
HOP = "Hopper-v5-sac-oracle-100l-100000s"
PEND10, PEND20 = "Pendulum-v1-sac-oracle-10l-15000s", "Pendulum-v1-sac-oracle-20l-15000s"
ACRO, CART = "Acrobot-v1-ppo-oracle-100l-100000s", "CartPole-v1-ppo-oracle-50l-50000s"
IDP, IP = "InvertedDoublePendulum-v5-sac-oracle-50l-30000s", "InvertedPendulum-v5-sac-oracle-30l-15000s"
REACH, SWIM = "Reacher-v5-sac-oracle-30l-15000s", "Swimmer-v5-sac-oracle-30l-15000s"
PUSH = "Pusher-v5-sac-oracle-30l-15000s"
WALK50, WALK100 = "Walker2d-v5-sac-oracle-50l-30000s", "Walker2d-v5-sac-oracle-100l-100000s"
NEXT = "-reward.use_next_obs=True"
PROB = "-active_selection=True-uncertainty_measure=probability"  # from the first query (`active`)
WARM = "-active_selection=True-active_selection_from=30"  # after a 30-label warm-up (`active_warm`)

WATCH = "watch-2026-11-27/"  # the run watch's rows (issue 48), in their own folder
LUNAR, CART10 = "LunarLanderContinuous-v3-sac-oracle-50l-50000s", "CartPole-v1-ppo-oracle-10l-50000s"
ACRO30 = "Acrobot-v1-ppo-oracle-30l-100000s"
RESTORE, OLDER = "-watch_restore=True", "-watch_against_older=True"  # restore: margin 2
WATCH28, RESTORE36 = "watch-2026-11-28/", "-watch_restore=3.6"  # the restore's default margin
EARLY, EARLY_ON = "watch-early/", "-watch_against_older_early=True"  # early newest-vs-older queries
SWIM50 = "Swimmer-v5-sac-oracle-50l-15000s"
TIES, NO_PROBE = "tie-probe/", "-tie_probe=0"  # the tie probe's rows, in their own folder
EXPLORE, STUCK = "tie-explore/", "-tie_exploration_stuck=True"  # standardised tie exploration's rows
CART10_WATCH = "watch-2026-11-28/" + CART10 + "-watch_restore=3.6"  # CartPole 10 at the defaults before
OLDER30 = "against-older-2026-11-30/"  # the failed HalfCheetah seed again, on the machine of sessions 41-48
OLDER28 = "against-older-2026-11-28/"  # newest-vs-older forms and today's default, on a second machine
CONFIRM_ON = "-watch_against_older_confirm=True"  # the early queries until confirmed (removed)
PROBE_ON = "-watch_older_probe=True"  # one newest-vs-older query a round (removed)
RESET, RESET_ON = "agent-reset/", "-agent_reset_at=0.5"  # the agent restarted half-way, in their own folder
HEADS_ON = "-agent_reset_layers=heads"  # the restart of the heads only (an on-policy agent's last layers)
TRIAL_ON = "-agent_reset_trial=2"  # the restart as a trial, undone where the fresh agent is paid less
RESET28 = "agent-reset-2026-11-28/"  # the same rows again on another machine (runs differ across machines)
RESET29 = "agent-reset-2026-11-29/"  # LunarLander-v3 again, on the machine of the heads-only restart
DOT200 = "prefrl/MovingDot-v0-ppo-oracle-200l-100000s"  # (its rows name fragment_length=10 after the restart)
LANDER = "LunarLander-v3-ppo-oracle-50l-100000s"  # PPO on LunarLander's discrete actions, chosen on nothing
LANDER100 = "LunarLander-v3-ppo-oracle-100l-100000s"
FLOOR, FLOOR_ON = "entropy-floor/", "-agent.min_entropy=0.5"  # the entropy floor's rows, in their own folder
LIFTED, KEPT = "-floor_after_queries=False", "-floor_after_queries=True"  # lifted: today's default
TIMING = "label-timing/"  # when the moving dot's labels come in, against the agent's steps
DOT200_CLIPS = DOT200 + "-fragment_length=10"  # the 10-step clips of the 2-core budget, after the restart
DOT_LIFTED = FLOOR + DOT200 + LIFTED + "-fragment_length=10"  # today's default on the dot (floor lifted)
DOT_AGAIN = OLDER30 + DOT200_CLIPS + EARLY_ON  # today's default again (asks nothing)
DOT_THIRD = "dot-machine-2026-11-30/"  # the dot's default and heads-only restart, on a third machine
DOT_FADE = "floor-fade-2026-11-30/" + DOT200 + "-floor_schedule=labels-fragment_length=10"  # the fading floor
KW32 = '-env.kwargs={"size": 32}'  # the moving dot at 32 px
DOT32 = "prefrl/MovingDot-v0-ppo-oracle-400l-50000s"  # at 400 labels and 50,000 steps
DOT32_29 = "dot32-2026-11-29/" + DOT32  # its rows of 2026-11-29

COMPARISONS: dict[str, Comparison] = {
    "reward-inputs": Comparison(
        ("environment, labels, steps", "reward reads (s, a)", "reward reads (s, a, s')"),
        (
            ("HalfCheetah-v5, 50, 100,000", (HC50, HC50 + NEXT)),
            ("Hopper-v5, 100, 100,000 (bounded output)", (HOP + "-reward.output=tanh", HOP + NEXT)),
            ("Acrobot-v1 (PPO), 100, 100,000", (ACRO, ACRO + NEXT)),
            ("CartPole-v1 (PPO), 50, 50,000", (CART, CART + NEXT)),
            ("Pendulum-v1, 20, 15,000", (PEND20, PEND20 + NEXT)),
            ("Pendulum-v1, 10, 15,000", (PEND10, PEND10 + NEXT)),
            (
                "InvertedDoublePendulum-v5, 50, 30,000 (bounded output)",
                (IDP + "-reward.output=tanh", IDP + NEXT),
            ),
            ("InvertedPendulum-v5, 30, 15,000 (bounded output)", (IP + "-reward.output=tanh", IP + NEXT)),
        ),
    ),
    "five-seeds": Comparison(
        ("setting", "uniform queries", "disagreement by probability, from the first query"),
        (
            ("Hopper-v5, 100 labels", (HOP + NEXT, HOP + PROB)),
            ("HalfCheetah-v5, 50 labels", (HC50 + NEXT, HC50 + PROB)),
            ("Pendulum-v1, 10 labels", (PEND10 + NEXT, PEND10 + PROB)),
        ),
    ),
    "warm-up": Comparison(
        ("setting", "uniform", "disagreement from the first query", "warm-up (30 labels)"),
        (
            ("Walker2d-v5, 100 labels (chosen on nothing)", (WALK100, None, WALK100 + WARM)),
            ("HalfCheetah-v5, 50 labels", (HC50 + NEXT, HC50 + PROB, HC50 + WARM)),
            ("CartPole-v1, 50 labels", (CART + NEXT, CART + PROB, CART + WARM)),
            ("InvertedDoublePendulum-v5, 50 labels", (IDP + NEXT, IDP + PROB, IDP + WARM)),
            (
                "Acrobot-v1, 100 labels, tie exploration",
                (ACRO + "-tie_exploration=True", None, ACRO + WARM + "-tie_exploration=True"),
            ),
            ("Hopper-v5, 100 labels", (HOP + NEXT, HOP + PROB, Text("= from the first query"))),
            (
                "HalfCheetah-v5, 100 `noisy` labels",
                (HC100_NOISY + NEXT, HC100_NOISY + PROB, Text("= from the first query")),
            ),
            (
                "HalfCheetah-v5, 100 `mistake` labels",
                (HC100_MISTAKE + NEXT, HC100_MISTAKE + PROB, Text("= from the first query")),
            ),
            ("Pendulum-v1, 10 labels", (PEND10 + NEXT, PEND10 + PROB, Text("= uniform"))),
            ("Reacher-v5, 30 labels", (REACH + "-active_selection=False", REACH + PROB, Text("= uniform"))),
        ),
    ),
    "broad": Comparison(
        ("row", "today's default before (`active_warm`; Hopper 100: `active`)", "broad"),
        (
            ("HalfCheetah-v5, 50 oracle labels", (HC50 + WARM, HC50 + "-method=broad")),
            (
                "HalfCheetah-v5, 100 `mistake` labels (uniform queries)",
                (HC100_MISTAKE + NEXT, HC100_MISTAKE + "-method=broad"),
            ),
            ("Swimmer-v5, 30 labels", (SWIM + "-method=active_warm", SWIM + "-method=broad")),
            ("Reacher-v5, 30 labels", (REACH + "-method=active_warm", REACH + "-method=broad")),
            ("Pendulum-v1, 10 labels", (PEND10 + "-method=active_warm", PEND10 + "-method=broad")),
            ("Pendulum-v1, 20 labels", (PEND20 + "-method=active_warm", PEND20 + "-method=broad")),
            (
                "Acrobot-v1, 100 labels (tie exploration)",
                (ACRO + WARM + "-tie_exploration=True", ACRO + "-method=broad"),
            ),
            ("CartPole-v1, 50 labels", (CART + WARM, CART + "-method=broad")),
            ("InvertedPendulum-v5, 30 labels", (IP + "-method=active_warm", IP + "-method=broad")),
            ("InvertedDoublePendulum-v5, 50 labels", (IDP + WARM, IDP + "-method=broad")),
            ("Walker2d-v5, 100 labels", (WALK100 + WARM, WALK100 + "-method=broad")),
            (
                "Walker2d-v5, 50 labels, 30,000 steps",
                (WALK50 + "-method=active_warm", WALK50 + "-method=broad"),
            ),
            ("Hopper-v5, 100 labels", (HOP + PROB, HOP + "-method=broad")),
        ),
    ),
    "varied": Comparison(
        ("row", "broad (today's default)", "varied+broad", "varied_mixed+broad"),
        (
            ("Pusher-v5", (PUSH + "-method=broad", PUSH + "-method=varied", PUSH + "-method=varied_mixed")),
            (
                "Reacher-v5",
                (REACH + "-method=broad", REACH + "-method=varied", REACH + "-method=varied_mixed"),
            ),
            ("Swimmer-v5", (SWIM + "-method=broad", None, SWIM + "-method=varied_mixed")),
            ("Pendulum-v1, 10 labels", (PEND10 + "-method=broad", None, PEND10 + "-method=varied_mixed")),
        ),
    ),
    "run-watch-actions": Comparison(
        (
            "row (5 seeds unless named)",
            "no action (the default until 2026-11-27)",
            "`--loop.watch-requery`",
            "`--loop.watch-end-clips` (the default from 2026-11-27)",
            "+ `--loop.watch-restore 2`",
            "+ `--loop.watch-restore 3.6` (today's default)",
            "+ `--loop.watch-against-older`",
            "+ `--loop.watch-against-older-early`",
        ),
        (
            (
                "LunarLanderContinuous-v3, 50 labels, 50,000 steps",
                (
                    WATCH + LUNAR,
                    WATCH + LUNAR + "-watch_requery=True",
                    WATCH + LUNAR + "-watch_end_clips=True",
                    WATCH + LUNAR + RESTORE,
                    WATCH28 + LUNAR + RESTORE36,
                    WATCH + LUNAR + OLDER,
                    EARLY + LUNAR + EARLY_ON,
                ),
            ),
            (
                "CartPole-v1 (PPO), 10 labels, 50,000 steps",
                (
                    WATCH + CART10,
                    None,
                    WATCH + CART10 + "-watch_end_clips=True",
                    WATCH + CART10 + RESTORE,
                    WATCH28 + CART10 + RESTORE36,
                    WATCH + CART10 + OLDER,
                    None,
                ),
            ),
            (
                "Acrobot-v1 (PPO), 30 labels, 100,000 steps (3 seeds; ending is the goal)",
                (
                    WATCH + ACRO30,
                    None,
                    WATCH + ACRO30 + "-watch_end_clips=True",
                    None,
                    None,
                    None,
                    None,
                ),
            ),
            (
                "Hopper-v5, 100 labels, 100,000 steps",
                (
                    Text("the same runs: it never fired"),
                    None,
                    WATCH + HOP + "-watch_end_clips=True",
                    WATCH + HOP + RESTORE,
                    WATCH28 + HOP + RESTORE36,
                    None,
                    None,
                ),
            ),
            (
                "HalfCheetah-v5, 50 labels, 100,000 steps (episodes never end)",
                (
                    Text("the same runs"),
                    None,
                    HC50 + "-method=broad",
                    WATCH + HC50 + RESTORE,
                    Text("the same runs: it never fired at 2"),
                    WATCH + HC50 + OLDER,
                    EARLY + HC50 + EARLY_ON,
                ),
            ),
            (
                "Walker2d-v5, 100 labels, 100,000 steps (3 seeds; a row no action was chosen on)",
                (WALK100 + WARM, None, None, None, WATCH28 + WALK100 + RESTORE36, None, None),
            ),
            (
                "InvertedDoublePendulum-v5, 50 labels, 30,000 steps (3 seeds; the same)",
                (IDP + WARM, None, None, None, WATCH28 + IDP + RESTORE36, None, None),
            ),
            (
                "Pendulum-v1, 10 labels, 15,000 steps (the same)",
                (
                    PEND10 + "-method=broad",
                    None,
                    None,
                    None,
                    WATCH28 + PEND10 + RESTORE36,
                    None,
                    EARLY + PEND10 + EARLY_ON,
                ),
            ),
            *(
                (
                    f"{name}, 30 labels, 15,000 steps ({n} seeds; episodes never end; the same)",
                    (row + "-method=broad", None, None, None, None, None, EARLY + row + EARLY_ON),
                )
                for name, row, n in (
                    ("Reacher-v5", REACH, 5),
                    ("Swimmer-v5", SWIM, 5),
                )
            ),
            (
                "Swimmer-v5, 50 labels, 15,000 steps (20 labels past the warm-up; the same)",
                (None, None, None, None, EARLY + SWIM50, None, EARLY + SWIM50 + EARLY_ON),
            ),
        ),
    ),
    "against-older-confirm": Comparison(
        (
            "row (5 seeds unless named)",
            "today's default",
            "`--loop.watch-against-older-early`",
            "a probe (removed)",
            "until confirmed (removed)",
        ),
        (
            (
                "HalfCheetah-v5, 50 labels, 100,000 steps",
                (HC50 + "-method=broad", EARLY + HC50 + EARLY_ON, None, None),
            ),
            (
                "the same, 2026-11-28 (another machine; default, early and probe: seeds 0 and 1)",
                (
                    OLDER28 + HC50,
                    OLDER28 + HC50 + EARLY_ON,
                    OLDER28 + HC50 + PROBE_ON,
                    OLDER28 + HC50 + CONFIRM_ON,
                ),
            ),
            (
                "the same, 2026-11-30 (the 2-core machine of sessions 41-48; seed 1 alone)",
                (OLDER30 + HC50, OLDER30 + HC50 + EARLY_ON, None, None),
            ),
            (
                "prefrl/MovingDot-v0, 200 labels, 100,000 steps, 10-step clips (default: 3 seeds on another "
                "machine, 2026-11-28; the switch: 2 seeds, 2026-11-30, where it asks nothing, so its runs "
                "are today's default there: the gap is the machine's or the code's, not the switch's)",
                (DOT_LIFTED, DOT_AGAIN, None, None),
            ),
            (
                "Swimmer-v5, 30 labels, 15,000 steps",
                (SWIM + "-method=broad", EARLY + SWIM + EARLY_ON, None, None),
            ),
            (
                "the same, 2026-11-28 (another machine)",
                (OLDER28 + SWIM, None, None, OLDER28 + SWIM + CONFIRM_ON),
            ),
            (
                "LunarLanderContinuous-v3, 50 labels, 50,000 steps",
                (WATCH28 + LUNAR + RESTORE36, EARLY + LUNAR + EARLY_ON, None, None),
            ),
            (
                "the same, 2026-11-28 (another machine)",
                (OLDER28 + LUNAR, None, OLDER28 + LUNAR + PROBE_ON, OLDER28 + LUNAR + CONFIRM_ON),
            ),
        ),
    ),
    "run-watch-seed": Comparison(
        (
            "HalfCheetah-v5, 50 labels, 100,000 steps",
            "today's default",
            "`--loop.watch-requery`",
            "`--loop.watch-penalty 1`",
        ),
        (
            (
                "the failed seed (1) alone",
                (WATCH + HC50, WATCH + HC50 + "-watch_requery=True", WATCH + HC50 + "-watch_penalty=1.0"),
            ),
        ),
    ),
    "tie-probe": Comparison(
        (
            "row (5 seeds unless named)",
            "`--loop.tie-probe 0` (every round asks its share, the default until 2026-11-27)",
            "`--loop.tie-probe 5` (today's default)",
        ),
        (
            ("Acrobot-v1 (PPO), 30 labels, 100,000 steps", (TIES + ACRO30 + NO_PROBE, TIES + ACRO30)),
            ("CartPole-v1 (PPO), 50 labels, 50,000 steps (3 seeds)", (TIES + CART + NO_PROBE, TIES + CART)),
        ),
    ),
    "tie-exploration": Comparison(
        (
            "row (5 seeds)",
            "raw state entropy (until 2026-11-27)",
            "standardised (today's default)",
            "standardised, and `--loop.tie-exploration-stuck`",
        ),
        (
            (
                "Acrobot-v1 (PPO), 30 labels, 100,000 steps",
                (TIES + ACRO30, EXPLORE + ACRO30, EXPLORE + ACRO30 + STUCK),
            ),
            (
                "CartPole-v1 (PPO), 10 labels, 50,000 steps",
                (CART10_WATCH, EXPLORE + CART10, EXPLORE + CART10 + STUCK),
            ),
        ),
    ),
    "agent-reset": Comparison(
        (
            "row (PPO)",
            "no restart (today's default)",
            "restarted half-way, `--loop agent_reset_at=0.5`",
            "+ as a trial of 2 iterations, `--loop agent_reset_trial=2`",
        ),
        (
            (
                "prefrl/MovingDot-v0, 200 labels, 100,000 steps, 10-step clips (3 seeds)",
                (
                    "pixels-2026-11-27/" + DOT200 + "-fragment_length=10",
                    RESET + DOT200 + RESET_ON + "-fragment_length=10",
                    RESET + DOT200 + RESET_ON + TRIAL_ON + "-fragment_length=10",
                ),
            ),
            (
                "Acrobot-v1, 30 labels, 100,000 steps (5 seeds)",
                (EXPLORE + ACRO30, RESET + ACRO30 + RESET_ON, RESET + ACRO30 + RESET_ON + TRIAL_ON),
            ),
            (
                "the same, measured again on 2026-11-28 (another machine)",
                (None, RESET28 + ACRO30 + RESET_ON, None),
            ),
            (
                "CartPole-v1, 10 labels, 50,000 steps (5 seeds)",
                (EXPLORE + CART10, RESET + CART10 + RESET_ON, RESET + CART10 + RESET_ON + TRIAL_ON),
            ),
            (
                "LunarLander-v3 (chosen on nothing), 50 labels, 100,000 steps "
                "(5 and 3 seeds, against the same 5 true-reward runs)",
                (RESET + LANDER, RESET + LANDER + RESET_ON, None),
            ),
            (
                "the same, measured again on 2026-11-28 (another machine; 10, 5 and 10 seeds, against "
                "10 true-reward runs: those of seeds 0-4 above and 5 more)",
                (RESET28 + LANDER, RESET28 + LANDER + RESET_ON, RESET + LANDER + RESET_ON + TRIAL_ON),
            ),
            (
                "LunarLander-v3, 100 labels, 100,000 steps (10 seeds, 2026-11-28; the same true-reward runs)",
                (RESET28 + LANDER100, None, None),
            ),
            (
                "the same, a trial of 1 iteration (`--loop agent_reset_trial=1`) in the last column",
                (None, None, RESET + LANDER + RESET_ON + "-agent_reset_trial=1"),
            ),
        ),
    ),
    "entropy-floor": Comparison(
        (
            "row (PPO; the floor is on by default on images)",
            "no floor",
            "a floor of half the largest entropy, to the end (until 2026-11-28)",
            "the floor lifted after the last query (today's default)",
            "the same without the entropy bonus of 0.01 (`--loop agent.ent_coef=0.0`; 2 seeds)",
            "the floor fading with the labels still to be asked "
            "(`--loop floor_schedule=labels`; 2 seeds, 2026-11-30)",
            "today's default again, on the fading floor's machine the same day (2 seeds; the runs of "
            "`--loop watch_against_older_early=true`, which asks nothing here)",
        ),
        (
            (
                "prefrl/MovingDot-v0, 200 labels, 100,000 steps, 10-step clips (3 seeds)",
                (
                    "pixels-2026-11-27/" + DOT200 + "-fragment_length=10",
                    FLOOR + DOT200 + "-fragment_length=10",
                    DOT_LIFTED,
                    FLOOR + DOT200 + "-agent.ent_coef=0.0" + LIFTED + "-fragment_length=10",
                    DOT_FADE,
                    DOT_AGAIN,
                ),
            ),
        ),
    ),
    "dot-label-timing": Comparison(
        (
            "row (PPO, 200 labels)",
            "today's default: 10,000 random steps, 60 labels before the agent trains, the rest hyperbolic",
            "1,000 random steps (`--loop initial_steps_per_label=0`; 2 seeds)",
            "every label in the first third of the run (`--loop query_schedule=front`; 2 seeds)",
            "100 labels before the agent trains (`--loop initial_label_frac=0.5`)",
        ),
        (
            (
                "prefrl/MovingDot-v0, 100,000 steps, 10-step clips",
                (
                    DOT_LIFTED,
                    TIMING + DOT200_CLIPS + "-initial_steps_per_label=0",
                    TIMING + DOT200_CLIPS + "-query_schedule=front",
                    TIMING + DOT200_CLIPS + "-initial_label_frac=0.5",
                ),
            ),
        ),
    ),
    "dot-reset-heads": Comparison(
        (
            "row (PPO)",
            "today's default: no restart (the entropy floor, lifted after the last query)",
            "restarted half-way from fresh weights (`--loop agent_reset_at=0.5`; "
            "before the floor, 2026-11-27)",
            "restarted half-way, the heads only "
            "(`--loop agent_reset_at=0.5 --loop agent_reset_layers=heads`)",
        ),
        (
            (
                "prefrl/MovingDot-v0, 200 labels, 100,000 steps, 10-step clips (3 seeds)",
                (
                    DOT_LIFTED,
                    RESET + DOT200 + RESET_ON + "-fragment_length=10",
                    RESET + DOT200 + RESET_ON + HEADS_ON + "-fragment_length=10",
                ),
            ),
            (
                "LunarLander-v3 (chosen on nothing), 50 labels, 100,000 steps (7 and 10 seeds, "
                "2026-11-29, the machine of the heads-only rows; against the 10 true-reward runs "
                "of the 2026-11-28 rows of the restart's table)",
                (RESET29 + LANDER, None, RESET29 + LANDER + RESET_ON + HEADS_ON),
            ),
        ),
    ),
    "dot-32px": Comparison(
        (
            "row (PPO, 400 labels, 50,000 steps, 10-step clips)",
            "the reward's training shortened to 10 epochs per update (`--loop trainer.epochs=10`)",
            "today's default",
            "restarted half-way, the heads only "
            "(`--loop agent_reset_at=0.5 --loop agent_reset_layers=heads`)",
        ),
        (
            (
                "prefrl/MovingDot-v0 at 32 px (`--loop 'env.kwargs={\"size\": 32}'`)",
                (
                    "unnamed-check/" + DOT32 + KW32 + "-fragment_length=10-trainer.epochs=10",
                    DOT32_29 + KW32 + "-fragment_length=10",
                    DOT32_29 + RESET_ON + HEADS_ON + KW32 + "-fragment_length=10",
                ),
            ),
        ),
    ),
    "dot-machines": Comparison(
        (
            "row (PPO): today's default on three 2-core machines of one kind, then the heads-only restart "
            "on two",
            "2026-11-28 (the floor's rows)",
            "2026-11-30, the forty-eighth session's machine (2 seeds)",
            "2026-11-30, a third machine: AMD EPYC family 25 model 17, AVX512 kernels (today's default)",
            "restarted half-way, the heads only (`--loop agent_reset_at=0.5 --loop "
            "agent_reset_layers=heads`), 2026-11-29 (the machine of the heads-only rows)",
            "the same, 2026-11-30, on the third machine",
        ),
        (
            (
                "prefrl/MovingDot-v0, 200 labels, 100,000 steps, 10-step clips",
                (
                    DOT_LIFTED,
                    DOT_AGAIN,
                    DOT_THIRD + DOT200_CLIPS,
                    RESET + DOT200 + RESET_ON + HEADS_ON + "-fragment_length=10",
                    DOT_THIRD + DOT200 + RESET_ON + HEADS_ON + "-fragment_length=10",
                ),
            ),
        ),
    ),
    "entropy-floor-states": Comparison(
        (
            "row (PPO; no floor on states by default)",
            "no floor (today's default on states)",
            "`--agent.min-entropy 0.5`, to the end",
            "`--agent.min-entropy 0.5`, lifted after the last query",
        ),
        (
            (
                "Acrobot-v1, 30 labels, 100,000 steps (5, 3 and 5 seeds)",
                (EXPLORE + ACRO30, FLOOR + ACRO30 + FLOOR_ON, FLOOR + ACRO30 + FLOOR_ON + LIFTED),
            ),
            (
                "the same, the floor to the end again with the code of 2026-11-28 (seeds 0 and 1)",
                (None, FLOOR + ACRO30 + FLOOR_ON + KEPT, None),
            ),
            (
                "CartPole-v1, 10 labels, 50,000 steps (5 seeds)",
                (EXPLORE + CART10, FLOOR + CART10 + FLOOR_ON, FLOOR + CART10 + FLOOR_ON + LIFTED),
            ),
            (
                "LunarLander-v3, 50 labels, 100,000 steps (10, 5 and 10 seeds)",
                (RESET28 + LANDER, FLOOR + LANDER + FLOOR_ON, FLOOR + LANDER + FLOOR_ON + LIFTED),
            ),
        ),
    ),
}
"""Tables of settings side by side, named by the prose around them."""


# ------------------------------------------------------------------------------ pixels
def dmc_runs(res: Results) -> str:
    """Each DeepMind Control run of the table above, seed by seed (``frontier.py``)."""
    return str(_load("frontier").runs_table(res.root / "frontier"))


def dmc_options(res: Results) -> str:
    """DeepMind Control runs with ``--loop`` options beside the same seeds without them."""
    return str(_load("frontier").options_table(res.root / "frontier", res.root / "frontier-options"))


def atari_table(res: Results, folder: str) -> str:
    """``atari.py``'s table of the results under ``folder`` (of ``benchmarks/results``)."""
    at = _load("atari")
    return str(at.markdown(at.summarize(res.root / folder, None)))


def atari(res: Results) -> str:
    """Atari from preferences beside the same agent on the game's reward (``atari.py``)."""
    return atari_table(res, "atari")


def atari_flat_cnn(res: Results) -> str:
    """CoinRun's learned side run again with the flat CNN's learning rate and linear output of
    2026-11-28 (``atari.py``, its results under ``atari-flat-cnn-2026-11-28``), beside the same
    true-reward seeds as the committed rows."""
    return atari_table(res, "atari-flat-cnn-2026-11-28")


def atari_pong_broad(res: Results) -> str:
    """Pong's learned side run again with a broad first reward (``atari.py --set
    loop.initial_steps_per_label=100``, its results under ``atari-pong-broad-2026-11-28``), beside
    the same true-reward seed as the committed row."""
    return atari_table(res, "atari-pong-broad-2026-11-28")


def atari_enduro_floor(res: Results) -> str:
    """Enduro's learned side run again with the entropy floor (today's default; ``atari.py``, its
    results under ``atari-enduro-floor-2026-11-28``), beside the same true-reward seed as the
    committed row."""
    return atari_table(res, "atari-enduro-floor-2026-11-28")


def atari_coinrun_floor(res: Results) -> str:
    """CoinRun's learned sides run again with the entropy floor, lifted after the last query
    (today's defaults; ``atari.py``, its results under ``atari-coinrun-floor-2026-11-29``), beside
    the same true-reward seeds as the pixel rows."""
    return atari_table(res, "atari-coinrun-floor-2026-11-29")


COINRUN_ENDS = (
    ("the entropy floor, lifted after the last query (today's default)", "atari-coinrun-floor-2026-11-29"),
    ("the same, hidden ends as the next episode (`--set loop.hidden_end=next_episode`)",
     "atari-coinrun-next-2026-11-29"),
    ("the same, and the reward reads the end flag (`--set reward.use_done=true`; seeds 1 and 2)",
     "atari-coinrun-next-done-2026-11-29"),
    ("today's default, the reward reading the end flag (`--set reward.use_done=true`; seeds 1 and 2)",
     "atari-coinrun-usedone-2026-11-29"),
    ("today's default, the agent's reward kept centred (`--set loop.center_hidden_ends=true`; seeds 0 and 1)",
     "atari-coinrun-center-2026-11-29"),
    ("hidden ends as the next episode, the agent's reward kept centred (both `--set`s; seeds 1 and 2)",
     "atari-coinrun-next-center-2026-11-29"),
    ("ends told to the agent, each worth its median step (`--set loop.hide_terminations=false "
     "--set loop.end_value=median`)", "atari-coinrun-median-2026-11-29"),
    ("the same, and the reward trained with an end worth its batch's median step "
     "(`--set reward.absorbing=median`)", "atari-coinrun-anchor-2026-11-29"),
    ("ends told to the agent, each worth its median step, the entropy floor fading with the labels "
     "still to be asked (`--set loop.floor_schedule=labels`)", "atari-coinrun-fade-2026-11-29"),
)  # fmt: skip
"""CoinRun's learned sides whose final evaluations counted how episodes ended: (row, folder)."""


def coinrun_ends(res: Results) -> str:
    """How the final policies' CoinRun episodes ended (``atari.py``'s ``final_eval.ends``: a coin,
    a death, a time limit), per learned run of each folder of :data:`COINRUN_ENDS` that exists; a
    run stopped before it finished by its newest checkpoint's policy (``--stopped-eval``)."""
    rows = []
    for label, folder in COINRUN_ENDS:
        root = res.root / folder / "coinrun"
        finished = [json.loads(p.read_text()) for p in sorted(root.glob("learned-seed[0-9].json"))]
        stopped = [json.loads(p.read_text()) for p in sorted(root.glob("learned-seed*.stopped.json"))]
        evals = [(r["final_eval"], "") for r in finished if "ends" in r.get("final_eval", {})]
        evals += [(r["final_eval"], f" (stopped, {r['env_steps'] // 1000}k steps)") for r in stopped]
        if not evals:
            continue
        kinds = ("scored", "ended", "time_limit")  # a coin, a death, the time limit
        ends = [" / ".join(str(e["ends"][k]) for k in kinds) + at for e, at in evals]
        share = {k: statistics.median(e["ends"][k] / e["episodes"] for e, _ in evals) for k in kinds[1:]}
        rows.append([label, ", ".join(ends), f"{share['ended']:.0%} / {share['time_limit']:.0%}"])
    head = ["learned side (PPO, 1,000 labels, 1M steps)",
            "coins / deaths / time limits of 100 final episodes (seeds)",
            "deaths / time limits, median of seeds"]  # fmt: skip
    return markdown_table(head, rows)


def atari_coinrun_next(res: Results) -> str:
    """CoinRun's learned sides with hidden ends told as the next episode (``atari.py --set
    loop.hidden_end=next_episode``, its results under ``atari-coinrun-next-2026-11-29``; stopped
    part-way), beside the same true-reward seeds as the pixel rows."""
    return atari_table(res, "atari-coinrun-next-2026-11-29")


def atari_coinrun_usedone(res: Results) -> str:
    """CoinRun's learned sides whose reward reads the end flag (``atari.py --set
    reward.use_done=true``, its results under ``atari-coinrun-usedone-2026-11-29``), beside the
    same true-reward seeds as the pixel rows."""
    return atari_table(res, "atari-coinrun-usedone-2026-11-29")


def atari_coinrun_center(res: Results) -> str:
    """CoinRun's learned sides whose agent's reward stays centred where it is told no episode
    end (``atari.py --set loop.center_hidden_ends=true``, its results under
    ``atari-coinrun-center-2026-11-29``), beside the same true-reward seeds as the pixel rows."""
    return atari_table(res, "atari-coinrun-center-2026-11-29")


def atari_coinrun_median(res: Results) -> str:
    """CoinRun's learned sides told every episode end, an end worth the agent's median step
    (``atari.py --set loop.hide_terminations=false --set loop.end_value=median``, its results
    under ``atari-coinrun-median-2026-11-29``), beside the same true-reward seeds as the pixel rows."""
    return atari_table(res, "atari-coinrun-median-2026-11-29")


def atari_coinrun_anchor(res: Results) -> str:
    """CoinRun's learned sides told every episode end, an end worth the agent's median step, whose
    reward was trained with an end worth its batch's median step (``atari.py --set
    loop.hide_terminations=false --set loop.end_value=median --set reward.absorbing=median``, its
    results under ``atari-coinrun-anchor-2026-11-29``), beside the same true-reward seeds."""
    return atari_table(res, "atari-coinrun-anchor-2026-11-29")


def atari_coinrun_fade(res: Results) -> str:
    """CoinRun's learned sides told every episode end, an end worth the agent's median step, whose
    entropy floor fades with the share of the label budget still to be asked (``atari.py --set
    loop.hide_terminations=false --set loop.end_value=median --set loop.floor_schedule=labels``,
    its results under ``atari-coinrun-fade-2026-11-29``), beside the same true-reward seeds."""
    return atari_table(res, "atari-coinrun-fade-2026-11-29")


def atari_coinrun_next_center(res: Results) -> str:
    """CoinRun's learned sides with hidden ends told as the next episode and the agent's reward
    kept centred (``atari.py --set loop.hidden_end=next_episode --set
    loop.center_hidden_ends=true``, its results under ``atari-coinrun-next-center-2026-11-29``),
    beside the same true-reward seeds as the pixel rows."""
    return atari_table(res, "atari-coinrun-next-center-2026-11-29")


def atari_pong_floor(res: Results) -> str:
    """Pong's learned side with the entropy floor (``--agent.min-entropy auto``, today's default;
    its results under ``atari-pong-floor-2026-11-28``), beside the same true-reward seed as the
    committed row."""
    return atari_table(res, "atari-pong-floor-2026-11-28")


def image_reward(res: Results) -> str:
    """The offline image-reward probe (``image_reward.py``): per file, each variant's median
    held-out accuracy (with its worst draw), correlation with the true reward, share of its own
    labelled pairs ordered, share of per-step rewards saturated (tanh) and fitting time over its
    draws (files from before the last two were measured show "–")."""
    rows = []
    for path in sorted((res.root / "image_reward").glob("*.json")):
        summary = json.loads(path.read_text())["summary"]
        variants = [k for k, v in summary.items() if isinstance(v, dict)]
        for name in variants:
            v = summary[name]
            budget = [str(summary[k]) for k in ("labels", "steps", "draws")]
            accuracy, pearson = with_worst(v["accuracy"], v["accuracies"], 3), f"{v['pearson']:.2f}"
            fitted = f"{v['train_accuracy']:.3f}" if "train_accuracy" in v else "–"
            saturated = f"{v['saturated']:.2f}" if "saturated" in v else "–"
            fit_s = f"{v['fit_s']:.0f}"
            rows.append([summary["env"], *budget, name, accuracy, pearson, fitted, saturated, fit_s])
    head = [
        "env",
        "labels",
        "optimiser steps",
        "draws",
        "variant",
        "held-out accuracy: median, worst draw (draws)",
        "pearson",
        "labelled pairs ordered",
        "saturated",
        "fit s",
    ]
    return markdown_table(head, rows)


def held_out(record: dict[str, Any]) -> str:
    """A refit record's held-out accuracy and its number of pairs ("–" where all were ties)."""
    acc = record["held_out_accuracy"]
    return f"{'–' if acc is None else f'{acc:.2f}'} ({record['held_out_pairs']})"


def refit(res: Results) -> str:
    """A run's own labels fitted again offline (``refit_labels.py``, files under ``refit/``): per
    file, the run's own reward as it left it, then per variant the records after the first,
    second and last stretch of optimiser steps."""

    def num(x: float | None, fmt: str) -> str:
        return "–" if x is None else format(x, fmt)

    rows = []
    for path in sorted((res.root / "refit").glob("*.json")):
        records = json.loads(path.read_text())["records"]
        for key in dict.fromkeys((r["output"], r["lr"]) for r in records):
            mine = [
                r for r in records if (r["output"], r["lr"]) == key and (r["steps"] == 0) == (key[1] is None)
            ]
            for r in [*mine[:2], mine[-1]] if len(mine) > 3 else mine:
                level = " / ".join(f"{x:.1f}" for x in r["level"])
                fit = "the run's own" if r["lr"] is None else f"refit, lr {r['lr']:g}"
                rows.append([path.stem, f"{r['output']}, {fit}", str(r["steps"]), num(r["train_loss"], ".3f"),
                             num(r["train_accuracy"], ".2f"), held_out(r), level, f"{r['saturated']:.2f}",
                             num(r.get("spread"), ".2g")])  # fmt: skip
    head = ["labels of", "reward", "optimiser steps", "loss", "fitted pairs ordered",
            "held-out pairs ordered (pairs)", "level per member (before the squash)",
            "rewards at +-1", "spread of the rewards"]  # fmt: skip
    return markdown_table(head, rows)


def refit_policies(res: Results) -> str:
    """How each refit reward ranks the policies given to ``refit_labels.py --compare`` (records
    with ``per_step_in_spreads``): every record, each policy's mean reward per step in units of
    the per-step rewards' spread, and the order, best first."""
    rows = []
    for path in sorted((res.root / "refit").glob("*.json")):
        records = [r for r in json.loads(path.read_text())["records"] if "per_step_in_spreads" in r]
        names = list(records[0]["per_step_in_spreads"]) if records else []
        for r in records:
            fit = "the run's own" if r["lr"] is None else f"refit, lr {r['lr']:g}"
            per = ", ".join(f"{n} {r['per_step_in_spreads'][n]:+.2f}" for n in names)
            rows.append([path.stem, f"{r['output']}, {fit}", str(r["steps"]), held_out(r), per,
                         " > ".join(r["order"])])  # fmt: skip
    head = ["labels of", "reward", "optimiser steps", "held-out pairs ordered (pairs)",
            "reward per step of each policy (spreads of the per-step reward)", "order"]  # fmt: skip
    return markdown_table(head, rows)


def frozen(res: Results) -> str:
    """Agents trained on a finished run's frozen reward (``prefrl train --reward-from RUN
    --eval-interval N``, reports under ``frozen/``): steps, the mean of the last 10 evaluations,
    the final policy's true return, and a random policy's."""
    rows = []
    for path in sorted((res.root / "frozen").glob("*.json")):
        r = json.loads(path.read_text())
        rows.append([path.stem, r["env"], r["agent"], f"{r['env_steps']:,}", str(r["reward_from"]),
                     f"{r['eval_last10_mean']:.1f}", f"**{r['true_return']:.1f}**",
                     f"{r['random_return']:.1f}"])  # fmt: skip
    head = ["run", "env", "agent", "steps", "frozen reward of", "mean of the last 10 evaluations",
            "final policy", "random policy"]  # fmt: skip
    return markdown_table(head, rows)


def refit_events(res: Results) -> str:
    """Where each refit reward puts the value of sparse events (``refit_labels.py --events``, files
    under ``refit-events/``): every record, with the oracle labels of other play it was given
    (``--extra-labels``), per events file the share of each event value's true net kept and the
    share of the reward's per-step variance the events explain."""
    rows = []
    for path in sorted((res.root / "refit-events").glob("*.json")):
        for r in json.loads(path.read_text())["records"]:
            fit = "the run's own" if r["lr"] is None else f"refit, lr {r['lr']:g}"
            extra = str(r.get("extra_labels", 0)) if r["lr"] is not None else "–"
            per = "; ".join(
                f"{name}: skipped ({e['skipped']})"
                if "skipped" in e
                else f"{name}: "
                + ", ".join(f"{v} kept {k:.2f}" for v, k in e["kept"].items())
                + f", explained {e['explained']:.2f}"
                for name, e in r["events"].items()
            )
            rows.append([path.stem, f"{r['output']}, {fit}", extra, str(r["steps"]), held_out(r), per])
    head = ["labels of", "reward", "oracle labels of skilled play added", "optimiser steps",
            "held-out pairs ordered (pairs)", "each rollout file: share of each event's value kept, "
            "share of the reward's variance the events explain"]  # fmt: skip
    return markdown_table(head, rows)


def policies(res: Results) -> str:
    """Policies ranked by a run's learned reward and by the true one (``prefrl interpret policies``,
    files under ``policies/``): per file, each policy's rewards per step (two standard errors)
    and per episode, then the command's verdict."""

    def pm(x: float | None, se: float | None) -> str:
        return "–" if x is None else f"{x:+.4f} ± {2 * (se or 0.0):.4f}"

    rows = []
    for path in sorted((res.root / "policies").glob("*.json")):
        r = json.loads(path.read_text())
        for p in r["policies"]:
            true_ret = "–" if p["true_return"] is None else f"{p['true_return']:.1f}"
            rows.append([path.stem, p["name"], f"{p['steps']:,} ({p['episodes']})",
                         pm(p["true_per_step"], p["true_per_step_se"]),
                         pm(p["learned_per_step"], p["learned_per_step_se"]), true_ret,
                         f"{p['learned_return']:.1f}"])  # fmt: skip
        rows.append([path.stem, "**verdict**", "", "", "", "", str(r["verdict"])])
    head = ["run", "policy", "steps (episodes)", "true reward per step", "learned reward per step",
            "true return per episode", "learned return per episode"]  # fmt: skip
    return markdown_table(head, rows)


def events(res: Results) -> str:
    """Where a run's learned reward puts the value of the true reward's events (``prefrl interpret
    events``, files ``events/RUN-POLICY.json``): per event value, the learned reward's largest
    response near the event, both rewards' net over the window, the share kept, and the share of
    the learned reward's per-step variance that the events explain (one figure per file)."""
    rows = []
    for path in sorted((res.root / "events").glob("*.json")):
        r = json.loads(path.read_text())
        run, _, policy = path.stem.rpartition("-")
        for e in r["events"]:
            rows.append([run, policy, f"{e['value']:+g}", str(e["count"]),
                         f"{e['peak']:+.2f} at {e['peak_offset']:+d}", f"{e['learned_net']:+.1f}",
                         f"{e['true_net']:+.1f}", f"**{e['kept']:.2f}**",
                         f"{r['explained']:.2f}"])  # fmt: skip
    head = ["run", "rollouts of", "event", "events", "learned reward near it (sd, offset)",
            "learned net over the window", "true net", "share kept",
            "learned reward's variance the events explain"]  # fmt: skip
    return markdown_table(head, rows)


def coinrun(res: Results) -> str:
    """CoinRun rewards from preferences beside their supervised twins (``coinrun.py``, one result
    file each under ``coinrun/``, ``coinrun.json`` first): ranking of clips that reach the coin,
    saliency on the coin and the reward kept with the coin painted out."""
    files = sorted(
        (res.root / "coinrun").glob("coinrun*.json"), key=lambda p: (p.name != "coinrun.json", p.name)
    )
    rows = []
    for path in files:
        r = json.loads(path.read_text())
        features = {"flat": "flat", "spatial": "keypoints"}[r["args"]["features"]]
        erase = r["args"].get("erase_share", 0.0)
        trained = {"preference": f"{r['labels']:,} oracle labels, {r['args']['steps']:,} steps",
                   "supervised": f"true reward of {r['train']['steps']:,} steps"}  # fmt: skip
        if erase:  # random erasing: a share of the clips (and a copy of every frame) partly painted over
            trained = {"preference": f"{trained['preference']}, {erase:.0%} of clips erased",
                       "supervised": f"{trained['supervised']} and an erased copy"}  # fmt: skip
        for name, v in r["rewards"].items():
            for where in ("held_out", "unseen_levels"):
                m = v[where]
                sal = m["saliency_on_coin"]
                rows.append([
                    name, features, trained.get(name, ""), where.replace("_", " "),
                    f"{m['coin_accuracy']:.3f}", f"{m['coin_vs_death']:.3f}", f"{sal['gradient']:.3f}",
                    f"{sal['integrated_gradients']:.3f}", f"{m['saliency_chance']:.3f}",
                    f"{m['without_coin']:.2f}", f"{v['fit_s']:.0f}",
                ])  # fmt: skip
    head = ["reward", "CNN features", "trained on", "clips of", "coin clips ranked first", "vs deaths",
            "saliency on coin: gradient", "integrated gradients", "flat map", "reward kept without coin",
            "fit s"]  # fmt: skip
    return markdown_table(head, rows)


# ----------------------------------------------------------------------------- the run watch
def run_watch(res: Results) -> str:
    """Which label-free signal predicts the failed seeds, and how early (``run_watch.py``): the
    newest ``watch-*.json`` of ``benchmarks/results/watch/``, one row per signal, then each seed's
    first firing of each signal."""
    files = sorted((res.root / "watch").glob("watch-*.json"))
    if not files:
        raise SystemExit(f"{res.root / 'watch'}: no watch-*.json (run benchmarks/run_watch.py --out there)")
    name = files[-1].relative_to(res.root).as_posix()
    s = res.json(name)["summary"]

    def share(k: int, n: int) -> str:
        return f"{k / n:.2f} ({k}/{n})" if n else "–"

    def fraction(x: float | None) -> str:
        return "–" if x is None else f"{x:.2f}"

    rows = []
    for sig in s["signals"].values():
        early = [e["fraction"] for e in sig["first_fraction_failed"]]
        first = (
            f"**{sig['median_first_fraction']:.2f}** ({', '.join(f'{x:.2f}' for x in early)})"
            if early
            else "–"
        )
        rows.append([
            f"`{sig['rule']}`", f"{sig['failed_fired']}/{sig['failed']}",
            f"{sig['good_fired']}/{sig['good']}", share(sig["good_firings"], sig["good_iterations"]), first,
            share(sig["firings_at_wrong_n"], sig["iterations_wrong"]),
            share(sig["firings_at_wrong_n"], sig["firings_judged"]),
        ])  # fmt: skip
    head = ["signal fires where", "failed seeds it fired on", "good seeds it fired on",
            "false alarms (good seeds' iterations)", "first firing on failed seeds (share of steps)",
            "wrong-reward iterations it fired at", "its firings at wrong-reward iterations"]  # fmt: skip
    names = list(s["signals"])
    seeds = [
        [f"`{p['folder']}`", str(p["seed"]), "running" if p["score"] is None else f"{p['score']:.2f}",
         "–" if p["failed"] is None else "yes" if p["failed"] else "no",
         *(fraction(p["first_fraction"][n]) for n in names)]
        for p in s["per_seed"]
    ]  # fmt: skip
    rules = [f"`{s['signals'][n]['rule']}`" for n in names]
    intro = (
        f"From `benchmarks/results/{name}`: {s['seeds']} learned seeds of {len(s['runs'])} run(s) "
        f"({', '.join(f'`{r}`' for r in s['runs'])}), "
        f"{s['scored']} scored, {s['failed']} failed (score below {s['failed_below']:g}). The reward was "
        f"wrong where the agent was (`{s['wrong_reward']}`) at {s['iterations_wrong']} of the "
        f"{s['iterations_judged']} iterations with a truth measured ({fraction(s['wrong_share'])})."
    )  # fmt: skip
    per_seed = markdown_table(["run", "seed", "score", "failed", *rules], seeds)
    each = "Each seed's first firing of each signal, as a share of its steps (–: never):"
    return f"{intro}\n\n{markdown_table(head, rows)}\n\n{each}\n\n{per_seed}"


# --------------------------------------------------------------------- rows that need more seeds
class SeedRow(NamedTuple):
    """A median of seeds that a doc shows: where its result lives, its seeds' scores and median."""

    name: str
    seeds: list[int]
    scores: list[float]
    median: float
    worst: tuple[float, int] | None


def seed_rows(res: Results) -> list[SeedRow]:
    """Every median of normalised scores over seeds behind the docs' tables: each label-efficiency
    result (by its folder under ``benchmarks/results/``), each Atari game with normalised seeds,
    each backend of ``agent_backends.py``'s files, and each DeepMind Control side scored as its
    return over the true-reward run's (:func:`dmc_scores`)."""
    summarize, out = _load("summarize"), []
    for path in sorted(res.root.rglob("result.json")):
        r = json.loads(path.read_text())
        if isinstance(r, dict) and "median_normalized_score" in r:
            name = path.parent.relative_to(res.root).as_posix()
            out.append(SeedRow(name, list(r["seeds"]), list(r["scores"]), r["median_normalized_score"],
                               summarize.worst(r)))  # fmt: skip
    if (res.root / "atari").is_dir():
        for task, t in _load("atari").summarize(res.root / "atari", None).items():
            if t["normalized"]:
                seeds, scores = list(t["normalized"]), list(t["normalized"].values())
                out.append(SeedRow(f"atari/{task}", seeds, scores, t["median_normalized"],
                                   worst_seed(scores, seeds)))  # fmt: skip
    if (res.root / "frontier").is_dir():
        out += dmc_scores(_load("frontier").summarize(res.root / "frontier", None))
    for path in sorted(res.root.glob("backends-*.json")):
        data = res.json(path.name)
        for backend in ("sb3", "sbx"):
            b, seeds = data[backend], list(data["seeds"])
            out.append(SeedRow(f"{path.name} ({backend})", seeds, list(b["scores"]),
                               b["median_normalized_score"], worst_seed(b["scores"], seeds)))  # fmt: skip
    return out


def dmc_scores(table: dict[str, Any]) -> list[SeedRow]:
    """DeepMind Control's learned sides (``frontier.summarize``) as scores: each seed's return
    (mean of the last 10 evaluations) over the median of the true-reward runs', a random policy's
    return counted as 0 (DMC returns run from 0 to 1,000; no random runs were measured)."""
    out = []
    for task, t in table.items():
        true = t["prefrl"].get("true")
        for side, r in t["prefrl"].items():
            if side == "true" or true is None or true["median_last10"] <= 0:
                continue
            scores = [x / true["median_last10"] for x in r["last10"]]
            median = r["median_last10"] / true["median_last10"]
            out.append(SeedRow(f"frontier/{task} ({side})", list(r["seeds"]), scores, median,
                               worst_seed(scores, r["seeds"])))  # fmt: skip
    return out


def needs_more_seeds(res: Results) -> str:
    """The rows whose seeds disagree and that ran fewer than :data:`ENOUGH_SEEDS` seeds (the rule
    and its constants: ``prefrl.run.sweep_report.needs_more_seeds``), so that nobody reads their
    median as a figure before the missing seeds run."""
    rows, every = [], seed_rows(res)
    for r in every:
        if not sweep_report.needs_more_seeds(r.scores):
            continue
        worst = "–" if r.worst is None else f"{r.worst[0]:.2f} (seed {r.worst[1]})"
        best = max(s for s in r.scores if not math.isnan(s))  # NaN: a seed without a score
        rows.append([f"`{r.name}`", str(len(r.seeds)), f"**{r.median:.2f}**", worst, f"{best:.2f}"])
    rule = sweep_report.disagreement_rule()
    head = f"{len(rows)} of {len(every)} medians of seeds need {ENOUGH_SEEDS} seeds. The rule: {rule}."
    table = markdown_table(["result (under `benchmarks/results/`)", "seeds", "median score", "worst seed",
                            "best seed"], rows)  # fmt: skip
    return f"{head}\n\n{table}" if rows else head


# ------------------------------------------------------------------------------ registry
TABLES: dict[str, Callable[[Results], str]] = {
    "at-a-glance": at_a_glance,
    "label-efficiency": label_efficiency,
    "ablation": ablation,
    "dmc": dmc,
    "speed": speed,
    "overhead": overhead,
    "backends": backends,
    "atari": atari,
    "dmc-options": dmc_options,
    "dmc-runs": dmc_runs,
    "image-reward": image_reward,
    "atari-flat-cnn": atari_flat_cnn,
    "atari-pong-broad": atari_pong_broad,
    "atari-pong-floor": atari_pong_floor,
    "atari-enduro-floor": atari_enduro_floor,
    "atari-coinrun-floor": atari_coinrun_floor,
    "coinrun-ends": coinrun_ends,
    "atari-coinrun-next": atari_coinrun_next,
    "atari-coinrun-usedone": atari_coinrun_usedone,
    "atari-coinrun-center": atari_coinrun_center,
    "atari-coinrun-next-center": atari_coinrun_next_center,
    "atari-coinrun-median": atari_coinrun_median,
    "atari-coinrun-anchor": atari_coinrun_anchor,
    "atari-coinrun-fade": atari_coinrun_fade,
    "refit": refit,
    "refit-policies": refit_policies,
    "refit-events": refit_events,
    "frozen": frozen,
    "policies": policies,
    "events": events,
    "coinrun": coinrun,
    "run-watch": run_watch,
    "needs-more-seeds": needs_more_seeds,
    **COMPARISONS,
}
"""Table name (as the doc markers write it) -> the function that renders it from the results.
Add a benchmark's table here (e.g. ``"atari": lambda res: ...``) and put its markers in a doc."""


# --------------------------------------------------------------------------- the figures
def defaults_rows(res: Results) -> list[dict[str, Any]]:
    """Every run at today's defaults (:func:`at_defaults`) as the seed-strip figure draws it:
    environment, labels, steps, seeds and their scores (4 digits), by environment and budget."""
    return [
        {
            "env": env,
            "labels": r["labels"],
            "steps": r["steps"],
            "seeds": list(r["seeds"]),
            "scores": [round(float(s), 4) for s in r["scores"]],
        }
        for env, results in sorted(at_defaults(res).items())
        for r in results
    ]


def ablation_rows(res: Results) -> list[dict[str, Any]]:
    """The ablation grid (``ablation.py``) as its figure draws it: one row per environment,
    teacher, budget, steps and reward inputs, with each technique's per-seed scores (4 digits) in
    the table's column order."""
    ab = _load("ablation")
    grid = ab.rows(res.all, res.presets)
    used = ab.columns(grid, list(res.presets))
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


def draw_seed_strips(rows: list[dict[str, Any]], png: Path) -> None:
    """Every seed of every run at today's defaults (``docs_figures.seed_strips``)."""
    _load("docs_figures").seed_strips(rows, png)


def draw_ablation(rows: list[dict[str, Any]], png: Path) -> None:
    """``ablation.py``'s panels (score against labels, one line per technique) from the rows of
    :func:`ablation_rows`."""
    grid = {(r["env"], r["teacher"], r["labels"], r["steps"], r["next_obs"]): r["scores"] for r in rows}
    methods = list(dict.fromkeys(m for r in rows for m in r["scores"]))
    _load("ablation").plot(grid, methods, png)


Rows = list[dict[str, Any]]
"""A figure's numbers: JSON rows, kept beside its PNG."""

FIGURES: dict[str, tuple[Callable[[Results], Rows], Callable[[Rows, Path], None]]] = {
    "label_efficiency.png": (defaults_rows, draw_seed_strips),
    "ablation.png": (ablation_rows, draw_ablation),
}
"""Figure file (under ``docs/figures/``) -> the rows it shows (a function of the results, kept as
``<name>.data.json`` beside it) and how it is drawn from them."""


def sync_figures(res: Results, folder: Path, check: bool) -> list[str]:
    """Draw (or, with ``check``, compare) every figure of :data:`FIGURES` in ``folder``; the
    problems found (a figure that does not show what the results give)."""
    figs = _load("docs_figures")
    problems = []
    for name, (rows_of, draw) in FIGURES.items():
        png, rows = folder / name, rows_of(res)
        why = figs.stale(png, rows)
        if why is not None:
            problems.append(f"{rel(png)}: figure {why}")
            if not check:
                figs.write(png, rows, draw)
    return problems


# ---------------------------------------------------------------------------- the docs
class Region(NamedTuple):
    """One generated table in a doc: its name and the lines between its markers."""

    doc: Path
    name: str
    start: int  # index of the first line after the opening marker
    end: int  # index of the closing marker

    def where(self) -> str:
        return f"{rel(self.doc)}:{self.start}"


def rel(path: Path) -> str:
    try:
        return path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


def regions(doc: Path, lines: list[str]) -> list[Region]:
    """The generated regions of ``doc``; a marker that does not close, or closes another name,
    is refused with its line."""
    out = []
    i = 0
    while i < len(lines):
        m = OPEN.match(lines[i])
        if m is None:
            if lines[i].startswith("<!-- end generated:"):
                raise SystemExit(f"{rel(doc)}:{i + 1}: {lines[i].strip()} without its opening marker")
            i += 1
            continue
        name, close = m.group("name"), CLOSE.format(name=m.group("name"))
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("<!-- ")), None)
        if end is None or lines[end].strip() != close:
            found = "nothing" if end is None else repr(lines[end].strip())
            raise SystemExit(f"{rel(doc)}:{i + 1}: generated table {name!r} is not closed by {close!r} "
                             f"(found {found})")  # fmt: skip
        if name not in TABLES:
            raise SystemExit(
                f"{rel(doc)}:{i + 1}: no generated table named {name!r} (known: {', '.join(TABLES)})"
            )
        out.append(Region(doc, name, i + 1, end))
        i = end + 1
    return out


def first_difference(region: Region, have: list[str], want: list[str]) -> str:
    """Which line of a table differs, as the doc has it and as the results give it."""
    for k, (a, b) in enumerate(zip(have, want)):
        if a != b:
            where = f"{rel(region.doc)}:{region.start + k + 1}"
            return (f"{where}: table {region.name!r} differs from the results at its line {k + 1}:\n"
                    f"  doc:     {a}\n  results: {b}")  # fmt: skip
    k = min(len(have), len(want))
    extra = have[k] if len(have) > k else None
    missing = want[k] if len(want) > k else None
    line = f"  doc:     {extra}" if extra is not None else f"  results: {missing}"
    what = "has a line the results do not give" if extra is not None else "lacks a line the results give"
    return (
        f"{rel(region.doc)}:{region.start + k + 1}: table {region.name!r} {what} (its line {k + 1}):\n{line}"
    )


def sync(
    docs: list[Path], res: Results, check: bool, every_table: bool = True, figures: Path | None = None
) -> list[str]:
    """Write (or, with ``check``, compare) every generated table of ``docs`` and every figure of
    :data:`FIGURES` in ``figures`` (none where it is ``None``); the problems found.

    With ``every_table``, a table of :data:`TABLES` that no doc shows is a problem too."""
    problems: list[str] = []
    rendered: dict[str, list[str]] = {}
    shown: set[str] = set()
    for doc in docs:
        try:
            lines = doc.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            raise SystemExit(f"{doc}: no such doc") from None
        found = regions(doc, lines)
        for region in reversed(found):  # from the end: earlier indices stay valid
            shown.add(region.name)
            if region.name not in rendered:
                rendered[region.name] = TABLES[region.name](res).splitlines()
            have, want = lines[region.start : region.end], rendered[region.name]
            if have != want:
                problems.append(first_difference(region, have, want))
                lines[region.start : region.end] = want
        if found and not check:
            doc.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if figures is not None:
        problems += sync_figures(res, figures, check)
    if every_table and figures is not None:
        texts = "".join(doc.read_text(encoding="utf-8") for doc in docs)
        problems += [f"figure {name!r} is in no doc ({', '.join(rel(d) for d in docs)})"
                     for name in FIGURES if f"figures/{name})" not in texts]  # fmt: skip
    if every_table:
        problems += [f"table {name!r} is in no doc ({', '.join(rel(d) for d in docs)})"
                     for name in TABLES if name not in shown]  # fmt: skip
    return sorted(problems)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 where a doc differs")
    p.add_argument("--results", type=Path, default=RESULTS, help="the result files (default: %(default)s)")
    p.add_argument("--docs", type=Path, nargs="+", default=None, metavar="FILE",
                   help="the docs to write or check (default: the benchmark pages)")  # fmt: skip
    p.add_argument("--figures", type=Path, default=None, metavar="DIR",
                   help=f"where the figures go (default: {rel(FIGURES_DIR)}; none with --docs)")  # fmt: skip
    p.add_argument("--print", default=None, metavar="NAME", choices=list(TABLES), help="print one table")
    a = p.parse_args(argv)
    res = Results(a.results)
    if a.print is not None:
        print(TABLES[a.print](res))
        return 0
    docs = list(a.docs) if a.docs else list(DOCS)
    figures = a.figures if a.figures is not None else (FIGURES_DIR if a.docs is None else None)
    problems = sync(docs, res, a.check, every_table=a.docs is None, figures=figures)
    if a.check and problems:
        print("\n".join(problems), file=sys.stderr)
        print(
            "\nthe docs differ from benchmarks/results: run python benchmarks/docs_tables.py", file=sys.stderr
        )
        return 1
    unplaced = [x for x in problems if "is in no doc" in x]
    if unplaced:
        print("\n".join(unplaced), file=sys.stderr)
        return 1
    changed = len(problems)
    print(f"docs_tables: {changed} table(s) or figure(s) rewritten" if changed else "docs_tables: up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
