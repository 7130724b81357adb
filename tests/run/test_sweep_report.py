"""A sweep's results.jsonl and summary cover every finished cell in its folder, whichever
``prefrl sweep`` invocation ran it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from prefrl.run.sweep import Cell
from prefrl.run.sweep_report import write_reports


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
