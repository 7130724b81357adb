"""benchmarks/run_watch.py: which label-free signal fired on the failed seeds, how early, and how often
it fired where the reward was wrong, read from the metrics logs of a label-efficiency folder; and the
generated table of docs/benchmarks/label-efficiency.md's section "The run watch"."""

from __future__ import annotations

import csv
import importlib.util
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
STEPS = 1000
FOLDER = f"CartPole-v1-ppo-oracle-10l-{STEPS}s"


def _module(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


rw = _module("run_watch")

# step, agreement, novelty, learned_gain, fresh_accuracy, pearson_true, heldout_accuracy
GOOD = [  # seed 0: the ensemble agrees throughout; one fresh-label miss (a false alarm of that signal)
    (200, None, None, None, None, None, None),
    (400, 0.7, 1.0, None, 0.4, 0.5, 0.50),  # wrong (held-out accuracy below 0.55)
    (600, 0.8, 0.9, 0.2, 0.6, 0.6, 0.80),
    (800, 0.9, 0.8, 0.1, 0.7, 0.7, 0.85),
    (1000, 0.9, 0.8, 0.1, 0.8, 0.8, 0.90),
]
FAILED = [  # seed 1: agreement falls below 0.4 at step 600 and stays there
    (200, None, None, None, None, None, None),
    (400, 0.6, 1.2, None, 0.6, 0.3, 0.70),
    (600, 0.3, 1.7, 0.5, 0.6, -0.2, 0.40),  # wrong
    (800, 0.1, 1.4, -0.1, 0.4, -0.3, 0.45),  # wrong
    (1000, 0.35, 1.1, 0.2, 0.4, 0.2, 0.60),
]
HEADER = ["step", "iteration", "rollout/true_return", "watch/agreement", "watch/novelty",
          "watch/learned_gain", "reward/fresh_accuracy", "reward/fresh_hits", "reward/fresh_n",
          "reward/pearson_true", "reward/heldout_accuracy"]  # fmt: skip


def _write_run(folder: Path, seed: int, rows: Sequence[tuple[float | None, ...]], learned: float) -> None:
    run = folder / f"learned-seed{seed}"
    run.mkdir(parents=True)
    with (run / "metrics.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)  # no watch/alarm column: a log from before it, recomputed from agreement
        for i, (step, agree, nov, gain, fresh, pearson, held) in enumerate(rows):
            cells = [step, i, 10.0 * i, agree, nov, gain, fresh, 1, 2, pearson, held]
            w.writerow(["" if x is None else x for x in cells])
    (run / "config.json").write_text(json.dumps({"loop": {"total_steps": STEPS}}))
    (run / "report.json").write_text(json.dumps({"random_return": 0.0, "true_return": learned}))
    cell = {"env": "CartPole-v1", "agent": "ppo", "seed": seed, "steps": STEPS}
    for side, ret in (("learned", learned), ("oracle", 100.0)):
        res = {"cell": {**cell, "kind": side}, "return": ret, "train_wall_s": 1.0, "eval": "deterministic"}
        (folder / f"seed{seed}-{side}.json").write_text(json.dumps(res))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    out = tmp_path / FOLDER
    _write_run(out, 0, GOOD, learned=90.0)  # score 0.9 (random 0, true-reward runs 100)
    _write_run(out, 1, FAILED, learned=10.0)  # score 0.1: failed
    return out


def test_scores_and_per_signal_figures_of_a_failed_and_a_good_seed(folder: Path) -> None:
    read = rw.read_folder(folder)
    assert read["scores_from"] == "seed files"  # no result.json yet: combined as label_efficiency does
    (good, failed) = read["seeds"]
    assert (good["score"], good["failed"], failed["score"], failed["failed"]) == (0.9, False, 0.1, True)
    assert failed["iterations"]["alarm"] == [None, 0.0, 1.0, 1.0, 1.0]  # recomputed: agreement < 0.4
    s = rw.summarize([read])
    alarm = s["signals"]["alarm"]
    assert (alarm["failed_fired"], alarm["failed"], alarm["good_fired"], alarm["good"]) == (1, 1, 0, 1)
    assert alarm["false_alarm_rate"] == 0.0 and alarm["good_iterations"] == 4  # measured iterations only
    assert [e["fraction"] for e in alarm["first_fraction_failed"]] == [600 / STEPS]
    assert alarm["median_first_fraction"] == 0.6
    # against the truth: 3 wrong iterations (seed 0 at 400, seed 1 at 600 and 800); the alarm fired at
    # 600, 800 and 1000 of seed 1: caught 2 of 3, and 2 of its 3 firings were at wrong iterations
    assert (s["iterations_judged"], s["iterations_wrong"]) == (8, 3)
    assert alarm["firings_at_wrong_n"] == 2
    assert (alarm["wrong_caught"], alarm["firings_at_wrong"]) == (0.6667, 0.6667)
    deep = s["signals"]["agreement<0.2"]  # only at 800: later, rarer, always right
    assert deep["median_first_fraction"] == 0.8
    assert (deep["wrong_caught"], deep["firings_at_wrong"]) == (0.3333, 1.0)
    fresh = s["signals"]["fresh_accuracy<0.5"]  # fired on the good seed once in its 4 measured iterations
    assert (fresh["good_fired"], fresh["false_alarm_rate"], fresh["median_first_fraction"]) == (1, 0.25, 0.8)
    novelty = s["signals"]["novelty>1.5"]
    assert novelty["median_first_fraction"] == 0.6 and novelty["failed_fired"] == 1
    both = s["signals"]["alarm+gain"]  # agreement < 0.4 with a positive gain: 600 and 1000, not 800
    assert both["firings_judged"] == 2 and both["firings_at_wrong"] == 0.5
    per_seed = {p["seed"]: p["first_fraction"] for p in s["per_seed"]}
    assert per_seed[0]["alarm"] is None and per_seed[0]["fresh_accuracy<0.5"] == 0.4
    assert per_seed[1]["alarm"] == 0.6


def test_result_json_scores_win_and_a_running_seed_has_rows_but_no_score(folder: Path) -> None:
    (folder / "result.json").write_text(json.dumps({"seeds": [0, 1], "scores": [0.95, 0.2]}))
    _write_run(folder, 2, FAILED[:3], learned=0.0)
    (folder / "seed2-learned.json").unlink()  # still training
    read = rw.read_folder(folder)
    assert read["scores_from"] == "result.json"
    assert [(x["seed"], x["score"], x["failed"]) for x in read["seeds"]] == [
        (0, 0.95, False), (1, 0.2, True), (2, None, None)
    ]  # fmt: skip
    s = rw.summarize([read])
    assert (s["seeds"], s["scored"], s["failed"]) == (3, 2, 1)
    assert s["signals"]["alarm"]["failed_fired"] == 1  # the running seed's firing is no failed seed's


def test_the_command_writes_nan_free_rows_and_prints_the_summary(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "watch" / "watch-test.json"
    assert rw.main([str(folder), "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)

    def refuse(x: str) -> None:
        raise AssertionError(f"non-finite number {x} in the result file")

    data = json.loads(out.read_text(), parse_constant=refuse)
    assert data["summary"] == printed
    seed = data["folders"][0]["seeds"][0]
    assert set(seed["iterations"]) == set(rw.COLUMNS)  # only those columns are kept
    assert seed["iterations"]["step"] == [200, 400, 600, 800, 1000]
    assert seed["iterations"]["agreement"][0] is None  # not measured at the first iteration: null


def test_a_folder_without_metrics_is_named_in_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "HalfCheetah-v5-sac-oracle-50l-100000s"
    empty.mkdir()
    (empty / "seed0-oracle.json").write_text("{}")
    with pytest.raises(SystemExit) as e:
        rw.main([str(empty)])
    msg = str(e.value)
    assert msg.startswith(f"{empty}: no learned-seed<k>/metrics.csv") and "\n" not in msg
    with pytest.raises(SystemExit, match="no such folder"):
        rw.main([str(tmp_path / "missing")])


def test_a_log_from_before_the_watch_is_refused_naming_its_file(folder: Path) -> None:
    log = folder / "learned-seed0" / "metrics.csv"
    log.write_text("step,rollout/true_return\n200,1.0\n")
    with pytest.raises(SystemExit, match=re.escape(f"{log}: no 'watch/agreement' column")):
        rw.read_folder(folder)


def test_the_table_is_generated_into_the_run_watch_section(folder: Path, tmp_path: Path) -> None:
    dt = _module("docs_tables")
    results = tmp_path / "results"
    rw.main([str(folder), "--out", str(results / "watch" / "watch-2026-01-01.json")])
    table = dt.TABLES["run-watch"](dt.Results(results))
    assert "From `benchmarks/results/watch/watch-2026-01-01.json`: 2 learned seeds of 1 run(s)" in table
    row = "| `agreement < 0.4` | 1/1 | 0/1 | 0.00 (0/4) | **0.60** (0.60) | 0.67 (2/3) | 0.67 (2/3) |"
    assert row in table
    assert f"| `{FOLDER}` | 1 | 0.10 | yes | 0.60 |" in table
    page = (ROOT / "docs" / "benchmarks" / "label-efficiency.md").read_text()
    section = page.split("\n## The run watch\n")[1].split("\n## ")[0]
    assert "<!-- generated: run-watch -->" in section and "<!-- end generated: run-watch -->" in section
    committed = dt.TABLES["run-watch"](dt.Results())  # the committed result is what the section shows
    assert committed in section
