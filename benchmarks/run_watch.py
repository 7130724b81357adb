"""Which label-free signal predicts the failed seeds, and how early (issue 48): the run watch read
back from the metrics logs of label-efficiency runs.

    python benchmarks/run_watch.py FOLDER [FOLDER ...] --out benchmarks/results/watch/NAME.json

Each FOLDER is an output folder of ``benchmarks/label_efficiency.py``
(``<env>-<agent>-<teacher>-<labels>l-<steps>s[-opts]``). For every learned seed there with a
``learned-seed<k>/metrics.csv`` the result file keeps its per-iteration signals and truths (the
columns of :data:`COLUMNS`, ``null`` where not logged), its normalised score (``result.json``'s,
or computed from the seed files as ``label_efficiency.combine`` does while it is missing) and
whether it failed (score below 0.5). A seed still running has rows but no score.

Each candidate signal of :data:`SIGNALS` fires at an iteration where its rule holds (never where
its inputs were not measured). Per signal the summary gives

* run level: failed seeds it fired on / failed seeds, good seeds it fired on / good seeds, and
  its false alarms: the share of good seeds' measured iterations it fired at;
* how early: the first firing step on each failed seed as a fraction of the run's steps;
* against the truth, iteration by iteration (every seed, scored or not): the share of the
  iterations where the reward was wrong where the agent is (``pearson_true < 0`` or
  ``heldout_accuracy < 0.55``, both measured before the fit) that it fired at, and the share of
  its firings that were at such iterations (beside the base rate of wrong iterations).

The summary is printed as JSON on stdout and written with the rows to ``--out``;
``benchmarks/docs_tables.py`` makes the table of docs/benchmarks/label-efficiency.md's section
"The run watch" from the newest file in ``benchmarks/results/watch/``.
"""

from __future__ import annotations

import argparse
import csv
import functools
import importlib.util
import json
import math
import re
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from prefrl.run.sweep_report import FAILED_SEED
from prefrl.storage.checkpoint import dumps
from prefrl.training.config import LoopConfig

HERE = Path(__file__).resolve().parent

COLUMNS: dict[str, str] = {
    "step": "step",
    "agreement": "watch/agreement",
    "novelty": "watch/novelty",
    "learned_gain": "watch/learned_gain",
    "stay_margin": "watch/stay_margin",
    "alarm": "watch/alarm",
    "restore_gap": "watch/restore_gap",
    "reward_newer": "watch/reward_newer",
    "teacher_newer": "watch/teacher_newer",
    "fresh_accuracy": "reward/fresh_accuracy",
    "fresh_hits": "reward/fresh_hits",
    "fresh_n": "reward/fresh_n",
    "pearson_true": "reward/pearson_true",
    "heldout_accuracy": "reward/heldout_accuracy",
    "true_return": "rollout/true_return",
}
"""Name in the result file -> column of ``metrics.csv``: the label-free signals, then the truths."""

WRONG_PEARSON, WRONG_HELDOUT = 0.0, 0.55
"""An iteration's reward is wrong where the agent is: ``pearson_true`` below the first or
``heldout_accuracy`` below the second."""

Row = Mapping[str, float | None]


def _below(name: str, x: float) -> Callable[[Row], bool | None]:
    def rule(r: Row) -> bool | None:
        v = r.get(name)
        return None if v is None else v < x

    return rule


def _above(name: str, x: float) -> Callable[[Row], bool | None]:
    def rule(r: Row) -> bool | None:
        v = r.get(name)
        return None if v is None else v > x

    return rule


def _alarm_and_gain(r: Row) -> bool | None:
    a, g = r.get("agreement"), r.get("learned_gain")
    return None if a is None or g is None else a < 0.4 and g > 0


def _unseen_progress(r: Row) -> bool | None:
    t, w = r.get("teacher_newer"), r.get("reward_newer")
    return None if t is None or w is None else t < 0.5 < w


class Signal(NamedTuple):
    """A candidate: its rule as the docs write it, and whether it fires at a row (``None``: not
    measured there)."""

    rule: str
    fires: Callable[[Row], bool | None]


SIGNALS: dict[str, Signal] = {
    "alarm": Signal("agreement < 0.4", _below("agreement", 0.4)),
    "agreement<0.2": Signal("agreement < 0.2", _below("agreement", 0.2)),
    "fresh_accuracy<0.5": Signal("fresh_accuracy < 0.5", _below("fresh_accuracy", 0.5)),
    "novelty>1.5": Signal("novelty > 1.5", _above("novelty", 1.5)),
    "alarm+gain": Signal("agreement < 0.4 and learned_gain > 0", _alarm_and_gain),
    "ending_pays": Signal("stay_margin < 0", _below("stay_margin", 0.0)),
    "earlier_paid_more": Signal("restore_gap > 2", _above("restore_gap", 2.0)),
    "unseen_progress": Signal("teacher_newer < 0.5 < reward_newer", _unseen_progress),
}
"""The candidate signals, by the name the result file and the table give them."""


# ---------------------------------------------------------------------------- reading a folder
@functools.cache
def _label_efficiency() -> Any:
    """benchmarks/label_efficiency.py (its ``combine``), loaded only where a score is computed."""
    spec = importlib.util.spec_from_file_location("label_efficiency", HERE / "label_efficiency.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _number(text: str | None) -> float | None:
    if text is None or text.strip() == "":
        return None
    x = float(text)
    return None if math.isnan(x) or math.isinf(x) else x


def read_metrics(path: Path, floor: float) -> dict[str, list[float | None]]:
    """The :data:`COLUMNS` of one ``metrics.csv``, one entry per iteration (a step logged twice,
    after a resume: its last row), rounded to 4 decimals; ``alarm`` recomputed from
    ``agreement`` < ``floor`` where the log has no such column (logs from before it)."""
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        rows = list(reader)
    for need in ("step", "watch/agreement"):
        if need not in header:
            raise SystemExit(
                f"{path}: no {need!r} column (a run from before the run watch, or not a metrics log)"
            )
    if rows and None in rows[-1].values():
        rows = rows[:-1]  # a line the run is still writing
    by_step: dict[int, dict[str, float | None]] = {}
    for n, row in enumerate(rows, start=2):
        try:
            values = {k: _number(row.get(col)) for k, col in COLUMNS.items()}
        except ValueError as e:
            raise SystemExit(f"{path}:{n}: not a number ({e})") from e
        if values["step"] is None:
            raise SystemExit(f"{path}:{n}: no step")
        if "watch/alarm" not in header:
            a = values["agreement"]
            values["alarm"] = None if a is None else float(a < floor)
        by_step[int(values["step"])] = values
    steps = sorted(by_step)
    out: dict[str, list[float | None]] = {"step": [int(s) for s in steps]}
    for k in COLUMNS:
        if k != "step":
            out[k] = [None if (v := by_step[s][k]) is None else round(v, 4) for s in steps]
    return out


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"{path}: not a readable JSON file ({e})") from e


def random_return(folder: Path, runs: Sequence[Path]) -> float:
    """A random policy's return as the benchmark measured it: a learned run's ``report.json``
    records the same evaluation (env, episodes, env kwargs); else measured as
    ``label_efficiency.py`` measures it."""
    for run in runs:
        report = run / "report.json"
        if report.is_file() and (r := _json(report).get("random_return")) is not None:
            return float(r)
    cell = _json(next(folder.glob("seed*-learned.json")))["cell"]
    oracle = next(folder.glob("seed*-oracle.json"), None)
    kwargs = _json(oracle).get("env_kwargs") if oracle else None
    from prefrl.agents.evaluate import evaluate_returns

    print(f"{folder.name}: no report.json with random_return: evaluating random actions", file=sys.stderr)
    return float(evaluate_returns(cell["env"], None, 10, env_kwargs=kwargs or None).mean())


def scores(folder: Path, runs: Sequence[Path]) -> tuple[dict[int, float | None], str]:
    """Each learned seed's normalised score and where it came from: ``result.json`` where it
    scores every finished seed, else ``label_efficiency.combine`` over the seed files (``{}``
    while no learned seed or no true-reward run has finished)."""
    finished = {int(p.name[4:].split("-")[0]) for p in folder.glob("seed*-learned.json")}
    result = folder / "result.json"
    if result.is_file():
        r = _json(result)
        got = {int(s): _score(x) for s, x in zip(r["seeds"], r["scores"])}
        if finished <= set(got):
            return got, "result.json"
    if not finished or not any(folder.glob("seed*-oracle.json")):
        return {}, "none yet"
    res = _label_efficiency().combine(folder, random_return(folder, runs))
    return {int(s): _score(x) for s, x in zip(res["seeds"], res["scores"])}, "seed files"


def _score(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def read_folder(folder: Path) -> dict[str, Any]:
    """One label-efficiency folder: its learned seeds' rows, scores and whether each failed."""
    if not folder.is_dir():
        raise SystemExit(f"{folder}: no such folder (give label_efficiency.py output folders)")
    runs = sorted((p.parent for p in folder.glob("learned-seed*/metrics.csv")), key=_seed_of_run)
    if not runs:
        raise SystemExit(f"{folder}: no learned-seed<k>/metrics.csv (not a label_efficiency.py folder, "
                         "or no learned run has started)")  # fmt: skip
    got, source = scores(folder, runs)
    seeds = []
    for run in runs:
        config = _json(run / "config.json") if (run / "config.json").is_file() else {}
        loop = config.get("loop", {})
        floor = loop.get("watch_agreement", LoopConfig.watch_agreement)
        seed = _seed_of_run(run)
        score = got.get(seed)
        seeds.append({
            "seed": seed, "steps": loop.get("total_steps") or _steps_of(folder),
            "score": None if score is None else round(score, 4),
            "failed": None if score is None else score < FAILED_SEED,
            "iterations": read_metrics(run / "metrics.csv", floor),
        })  # fmt: skip
    return {"folder": folder.name, "scores_from": source, "seeds": seeds}


def _seed_of_run(run: Path) -> int:
    return int(run.name.removeprefix("learned-seed"))


def _steps_of(folder: Path) -> int:
    """The run's steps as the folder's name gives them (``...-50000s[-opts]``)."""
    part = next((p for p in folder.name.split("-") if p.endswith("s") and p[:-1].isdigit()), None)
    if part is None:
        raise SystemExit(f"{folder}: no steps in its name and no config.json in its runs")
    return int(part[:-1])


# ------------------------------------------------------------------------------ the summary
def rows_of(seed: Mapping[str, Any]) -> list[dict[str, float | None]]:
    """A seed's iterations as rows (the result file keeps them as columns)."""
    cols: Mapping[str, list[float | None]] = seed["iterations"]
    return [{k: v[i] for k, v in cols.items()} for i in range(len(cols["step"]))]


def wrong(row: Row) -> bool | None:
    """Whether the reward was wrong where the agent was (``None``: no truth measured there)."""
    p, h = row.get("pearson_true"), row.get("heldout_accuracy")
    if p is None and h is None:
        return None
    return (p is not None and p < WRONG_PEARSON) or (h is not None and h < WRONG_HELDOUT)


def _share(k: int, n: int) -> float | None:
    return round(k / n, 4) if n else None


def first_firing(seed: Mapping[str, Any], signal: Signal) -> int | None:
    """The step of the first iteration where ``signal`` fired on ``seed``."""
    return next((int(r["step"] or 0) for r in rows_of(seed) if signal.fires(r)), None)


Seeds = Sequence[tuple[str, Mapping[str, Any]]]
"""(folder name, seed record) pairs."""


def signal_figures(
    sig: Signal, failed: Seeds, good: Seeds, judged: Sequence[tuple[Row, bool]]
) -> dict[str, Any]:
    """One signal's figures: run level, how early on the failed seeds, and against the truth."""
    fires_good = [x for _, s in good for r in rows_of(s) if (x := sig.fires(r)) is not None]
    early = [
        {"folder": f, "seed": s["seed"], "first_step": step, "fraction": round(step / s["steps"], 4)}
        for f, s in failed
        if (step := first_firing(s, sig)) is not None
    ]
    at_wrong = [w for r, w in judged if sig.fires(r)]
    n_wrong, hits = sum(w for _, w in judged), sum(at_wrong)
    return {
        "rule": sig.rule,
        "failed_fired": len(early), "failed": len(failed),
        "good_fired": sum(first_firing(s, sig) is not None for _, s in good), "good": len(good),
        "good_firings": sum(fires_good), "good_iterations": len(fires_good),
        "false_alarm_rate": _share(sum(fires_good), len(fires_good)),
        "first_fraction_failed": early,
        "median_first_fraction": round(statistics.median(e["fraction"] for e in early), 4) if early else None,
        "firings_judged": len(at_wrong), "firings_at_wrong_n": hits, "iterations_wrong": n_wrong,
        "wrong_caught": _share(hits, n_wrong), "firings_at_wrong": _share(hits, len(at_wrong)),
    }  # fmt: skip


def summarize(folders: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The per-signal figures (see the module docstring) over every seed of ``folders``, and each
    seed's first firing of each signal as a fraction of its steps (``per_seed``)."""
    seeds = [(f["folder"], s) for f in folders for s in f["seeds"]]
    failed = [(f, s) for f, s in seeds if s["failed"] is True]
    good = [(f, s) for f, s in seeds if s["failed"] is False]
    judged = [(r, w) for _, s in seeds for r in rows_of(s) if (w := wrong(r)) is not None]
    n_wrong = sum(w for _, w in judged)
    per_seed = []
    for f, s in seeds:
        first = {name: first_firing(s, sig) for name, sig in SIGNALS.items()}
        per_seed.append({
            "folder": f, "seed": s["seed"], "score": s["score"], "failed": s["failed"], "steps": s["steps"],
            "iterations": len(s["iterations"]["step"]),
            "first_fraction": {k: None if v is None else round(v / s["steps"], 4) for k, v in first.items()},
        })  # fmt: skip
    return {
        "runs": [f["folder"] for f in folders],
        "seeds": len(seeds), "scored": len(failed) + len(good), "failed": len(failed),
        "failed_below": FAILED_SEED,
        "wrong_reward": f"pearson_true < {WRONG_PEARSON:g} or heldout_accuracy < {WRONG_HELDOUT:g}",
        "iterations_judged": len(judged), "iterations_wrong": n_wrong,
        "wrong_share": _share(n_wrong, len(judged)),
        "signals": {name: signal_figures(sig, failed, good, judged) for name, sig in SIGNALS.items()},
        "per_seed": per_seed,
    }  # fmt: skip


def write_result(path: Path, result: Mapping[str, Any]) -> None:
    """``result`` as indented JSON with each list of numbers on one line (the rows stay short)."""
    text = dumps(result, indent=2)  # in the order written: SIGNALS, then folders and seeds
    text = NUMBER_LIST.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text + "\n")
    tmp.replace(path)


NUMBER_LIST = re.compile(r"\[\s*((?:-?[\d.eE+-]+|null)(?:,\s*(?:-?[\d.eE+-]+|null))*)\s*\]")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folders", type=Path, nargs="+", metavar="FOLDER",
                   help="label_efficiency.py output folders (with learned-seed<k>/metrics.csv)")  # fmt: skip
    p.add_argument("--out", type=Path, default=None,
                   help="the result file to write (rows and summary), e.g. benchmarks/results/watch/"
                        "watch-DATE.json; default: print the summary only")  # fmt: skip
    a = p.parse_args(argv)
    folders = [read_folder(f) for f in a.folders]
    summary = summarize(folders)
    if a.out is not None:
        write_result(a.out, {"summary": summary, "folders": folders})
    print(dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
