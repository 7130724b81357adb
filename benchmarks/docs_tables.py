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
markers in a doc; a table that compares settings side by side is one ``Comparison`` of
``docs_comparisons.py``, naming its result folders.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import math
import re
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

    @functools.cached_property
    def state_broad(self) -> set[str]:
        """Environments where ``prefrl train`` resolves a broad first reward with an L2 on its fit:
        a state (MLP) reward where random episodes only meet time limits, where it also resolves
        the gated bonus (since 2026-11-30), as the results that did not set the L2 recorded it."""
        seen: dict[str, set[bool]] = {}
        for r in self.all:
            if "trainer.l2_init" not in (r.get("loop_options") or {}) and r.get("l2_init") is not None:
                seen.setdefault(r["env"], set()).add(float(r["l2_init"]) > 0)
        return {env for env, got in seen.items() if got == {True}}


# ---------------------------------------------------------------------------- formatting
_comparisons, _pixels = _load("docs_comparisons"), _load("docs_pixels")
_comparisons._load = _pixels._load = _load  # they load the scripts they read through this file's loader
with_worst, per_seed, ret = _comparisons.with_worst, _comparisons.per_seed, _comparisons.ret
markdown_table, COMPARISONS = _comparisons.markdown_table, _comparisons.COMPARISONS


# ---------------------------------------------------------------------------- at a glance
TARGET = 0.9
"""The score a row has to reach: 90% of the way from a random policy to the true-reward agent."""


def default_columns(res: Results) -> dict[str, str]:
    """Environment -> the ablation column that holds runs at today's defaults there.

    ``prefrl train`` turns on a broad first reward (``--loop.initial-steps-per-label`` and
    ``--trainer.l2-init`` auto) where random actions only meet time limits, and the bounded
    reward output where they reach a termination: both follow one check of the environment,
    so the output the runs recorded says which column is today's default (``broad`` where it
    was linear, ``active_warm``, today's queries and nothing else, where it was tanh). Where the
    reward reads state vectors there (an L2 on the first fit, :attr:`Results.state_broad`) it
    also pays the gated bonus since 2026-11-30: the ``gated`` column."""
    state = res.state_broad
    return {
        env: ("gated" if env in state else "broad") if out == "linear" else "active_warm"
        for env, out in res.auto_output.items()
    }


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
            if columns.get(r["env"]) == "gated" and not _gated(r):
                continue  # measured before the gated bonus became the default there
            out[(r["env"], r["labels"], r["steps"])] = r
    by_env: dict[str, list[dict[str, Any]]] = {}
    for (env, _, _), r in sorted(out.items()):
        by_env.setdefault(env, []).append(r)
    return by_env


def _gated(result: dict[str, Any]) -> bool:
    """Whether a result's learned runs paid the gated bonus (named or resolved)."""
    opts = _load("summarize").loop_options(result)
    gated = _load("label_efficiency").GATED
    return all(opts.get(k) == v for k, v in gated.items())


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


# ------------------------------------------------------------------------------ pixels
def dmc_runs(res: Results) -> str:
    """Each DeepMind Control run of the table above, seed by seed (``frontier.py``)."""
    return str(_load("frontier").runs_table(res.root / "frontier"))


def dmc_options(res: Results) -> str:
    """DeepMind Control runs with ``--loop`` options beside the same seeds without them."""
    return str(_load("frontier").options_table(res.root / "frontier", res.root / "frontier-options"))


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
    "dmc-options": dmc_options,
    "dmc-runs": dmc_runs,
    "run-watch": run_watch,
    "needs-more-seeds": needs_more_seeds,
    **_pixels.TABLES,
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
    """The ablation grid as its figure draws it (``ablation.figure_rows``)."""
    ab = _load("ablation")
    return list(ab.figure_rows(ab.rows(res.all, res.presets), list(res.presets)))


def draw_seed_strips(rows: list[dict[str, Any]], png: Path) -> None:
    """Every seed of every run at today's defaults (``docs_figures.seed_strips``)."""
    _load("docs_figures").seed_strips(rows, png)


def draw_ablation(rows: list[dict[str, Any]], png: Path) -> None:
    """The ablation's techniques side by side, row by row (``docs_figures.technique_strips``)."""
    _load("docs_figures").technique_strips(rows, png)


Rows = list[dict[str, Any]]
"""A figure's numbers: JSON rows, kept beside its PNG."""

FIGURES: dict[str, tuple[Callable[[Results], Rows], Callable[[Rows, Path], None]]] = {
    "label_efficiency.png": (defaults_rows, draw_seed_strips),
    "ablation.png": (ablation_rows, draw_ablation),
}
"""Figure file (under ``docs/figures/``) -> the rows it shows (a function of the results, kept as
``<name>.data.json`` beside it) and how it is drawn from them."""


def sync_figures(res: Results, folder: Path, check: bool, redraw: bool = False) -> list[str]:
    """Draw (or, with ``check``, compare) every figure of :data:`FIGURES` in ``folder``; the
    problems found (a figure that does not show what the results give). ``redraw``: draw every
    figure, its numbers changed or not (after a change to how it is drawn)."""
    figs = _load("docs_figures")
    problems = []
    for name, (rows_of, draw) in FIGURES.items():
        png, rows = folder / name, rows_of(res)
        why = figs.stale(png, rows)
        if why is not None:
            problems.append(f"{rel(png)}: figure {why}")
        if not check and (why is not None or redraw):
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
    docs: list[Path],
    res: Results,
    check: bool,
    every_table: bool = True,
    figures: Path | None = None,
    redraw: bool = False,
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
        problems += sync_figures(res, figures, check, redraw)
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
    p.add_argument("--redraw", action="store_true",
                   help="draw every figure again (after a change to how it is drawn)")  # fmt: skip
    p.add_argument("--print", default=None, metavar="NAME", choices=list(TABLES), help="print one table")
    a = p.parse_args(argv)
    res = Results(a.results)
    if a.print is not None:
        print(TABLES[a.print](res))
        return 0
    docs = list(a.docs) if a.docs else list(DOCS)
    figures = a.figures if a.figures is not None else (FIGURES_DIR if a.docs is None else None)
    problems = sync(docs, res, a.check, every_table=a.docs is None, figures=figures, redraw=a.redraw)
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
