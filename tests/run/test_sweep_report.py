"""A sweep's results.jsonl and summary cover every finished cell in its folder, whichever
``prefrl sweep`` invocation ran it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from prefrl.run.sweep import Cell
from prefrl.run.sweep_report import (
    ENOUGH_SEEDS,
    SCORE_CAP,
    SEED_SPREAD,
    needs_more_seeds,
    seeds_disagree,
    worst_seed,
    write_reports,
)


def _finish(out: Path, cell: Cell, ret: float) -> None:
    res = {"return": ret, "train_wall_s": 1.0, "cpu_s": 1.0, "wall_s": 2.0, "labels_used": cell.labels,
           "cell": dataclasses.asdict(cell)}  # fmt: skip
    (out / "cells" / cell.name).mkdir(parents=True)
    (out / "cells" / cell.name / "result.json").write_text(json.dumps(res))


def test_a_second_grid_keeps_the_first_grids_cells(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    (out / "random").mkdir(parents=True)
    (out / "random" / "Pendulum-v1.json").write_text(json.dumps({"return": -1000.0}))
    oracle = [Cell("oracle", "Pendulum-v1", "sac", 100, s) for s in (0, 1)]
    first = [Cell("learned", "Pendulum-v1", "sac", 100, s, "oracle", 10) for s in (0, 1)]
    second = [Cell("learned", "Pendulum-v1", "sac", 100, s, "noisy", 10) for s in (0, 1)]
    for c in [*oracle, *first, *second]:
        _finish(out, c, -200.0)
    (out / "cells" / "broken").mkdir()
    (out / "cells" / "broken" / "result.json").write_text("{not json")  # skipped, not fatal
    rep = write_reports(out, second, oracle, episodes=1)  # the second invocation's grid only
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert rep["results"] == 4 and sorted(r["teacher"] for r in rows) == [
        "noisy",
        "noisy",
        "oracle",
        "oracle",
    ]
    summary = (out / "summary.md").read_text()
    assert "| oracle | 10 |" in summary and "| noisy | 10 |" in summary
    assert all(r["true_reward_return"] == -200.0 for r in rows)


def _grid(out: Path, returns: dict[str, list[float]]) -> tuple[list[Cell], list[Cell]]:
    """Pendulum cells, one learned cell per teacher and seed with the given returns; random
    return −1,000 and true-reward return −200, so a return r scores (r + 1000) / 800."""
    (out / "random").mkdir(parents=True)
    (out / "random" / "Pendulum-v1.json").write_text(json.dumps({"return": -1000.0}))
    seeds = range(max(len(v) for v in returns.values()))
    oracle = [Cell("oracle", "Pendulum-v1", "sac", 100, s) for s in seeds]
    learned = [
        Cell("learned", "Pendulum-v1", "sac", 100, s, t, 10)
        for t, v in returns.items()
        for s in range(len(v))
    ]
    for c in oracle:
        _finish(out, c, -200.0)
    for c in learned:
        _finish(out, c, returns[c.teacher][c.seed])
    return learned, oracle


def _row(summary: str, teacher: str) -> dict[str, str]:
    lines = summary.splitlines()
    head = [h.strip() for h in lines[0].strip("|").split("|")]
    row = next(x for x in lines[2:] if f"| {teacher} |" in x)
    return dict(zip(head, (c.strip() for c in row.strip("|").split("|")), strict=True))


def test_the_summary_names_the_worst_seed_and_flags_seeds_that_disagree(tmp_path: Path) -> None:
    """A median of 0.90 hides a seed at 0.20: the summary shows that seed's score and number and
    asks for 5 seeds; seeds that agree are not flagged, nor 5 seeds that disagree asked for more."""
    out = tmp_path / "sweep"
    returns = {
        "oracle": [-200.0, -280.0, -840.0],  # scores 1.00, 0.90, 0.20
        "noisy": [-200.0, -240.0, -280.0],  # 1.00, 0.95, 0.90
        "mistake": [-200.0, -840.0, -280.0, -200.0, -200.0],  # five seeds, one at 0.20
    }
    learned, oracle = _grid(out, returns)
    table = write_reports(out, learned, oracle, episodes=1)["table"]
    assert (out / "summary.md").read_text() == table + "\n"
    bad, good, five = _row(table, "oracle"), _row(table, "noisy"), _row(table, "mistake")
    assert bad["median score"] == "**0.90**" and bad["worst seed"] == "0.20 (seed 2)", bad
    assert bad["score range"] == "0.20–1.00" and bad["seeds disagree"] == "yes: run 5 seeds", bad
    assert good["worst seed"] == "0.90 (seed 2)" and good["seeds disagree"] == "–", good
    assert five["seeds"] == "5" and five["worst seed"] == "0.20 (seed 1)" and five["seeds disagree"] == "yes"


def test_seeds_disagree_by_their_capped_spread_or_a_failure_under_a_good_median() -> None:
    assert not seeds_disagree([0.9, 0.9 - SEED_SPREAD + 0.01])  # within the spread
    assert seeds_disagree([0.9, 0.9 - SEED_SPREAD - 0.01])
    assert not seeds_disagree([SCORE_CAP + 2.0, SCORE_CAP, SCORE_CAP - 0.1])  # above 1 counts as 1
    assert seeds_disagree([SCORE_CAP + 2.0, SCORE_CAP - SEED_SPREAD - 0.1])
    assert not seeds_disagree([0.4]) and not seeds_disagree([])  # one seed cannot disagree
    assert not seeds_disagree([0.3, None, float("nan")])  # unscored seeds are not compared
    assert worst_seed([0.5, None, 0.2, 0.2], [3, 4, 7, 1]) == (0.2, 1)
    assert worst_seed([None, float("nan")], [0, 1]) is None
    disagree = [1.0, 1.0, 0.1]
    assert needs_more_seeds(disagree) and not needs_more_seeds(disagree + [1.0] * (ENOUGH_SEEDS - 3))
    assert not needs_more_seeds([1.0, 0.95, 0.9])
