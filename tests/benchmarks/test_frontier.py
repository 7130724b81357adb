"""benchmarks/frontier.py: the published DMC protocol, its resumable runs and the table."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from prefrl.training.budget import query_allocation

ROOT = Path(__file__).resolve().parents[2]


def _frontier() -> ModuleType:
    spec = importlib.util.spec_from_file_location("frontier", ROOT / "benchmarks/frontier.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_protocol_run_is_the_published_schedule(tmp_path: Path) -> None:
    fr = _frontier()
    cfg = fr.learned_config("walker_walk", "protocol", 0, tmp_path / "r", 500_000, 100)
    loop = cfg.loop
    assert cfg.env.id == "dm_control/walker-walk-v0" and loop.fragment_length == 50
    assert (loop.random_steps, loop.pretrain_steps) == (1_000, 9_000)  # not prefrl's 100 per label
    assert cfg.trainer.l2_init == 0.0  # the reward fit of the protocol's first seeds
    assert cfg.eval_interval == 10_000 and cfg.eval_episodes == 10
    alloc = query_allocation(loop)
    steps_per_iteration = loop.agent_steps // loop.iterations
    assert steps_per_iteration == 10_000 and alloc.sum() == 100
    asked_at = [i for i, n in enumerate(alloc) if n]
    assert all(alloc[i] == 10 for i in asked_at)  # 10 labels every 20,000 steps until the 100 are in
    assert [b - a for a, b in zip(asked_at, asked_at[1:])] == [2] * 9
    defaults = fr.learned_config("walker_walk", "defaults", 0, tmp_path / "d", 500_000, 100)
    assert defaults.loop.labels_per_round is None and defaults.loop.pretrain_steps == 0
    assert defaults.agent == cfg.agent  # the same agent on every side


def test_table_names_sources_and_puts_prefrl_beside_the_published(tmp_path: Path) -> None:
    fr = _frontier()
    task = tmp_path / "walker_walk"
    task.mkdir()
    for side, seed, last10 in [("protocol", 0, 800.0), ("protocol", 1, 900.0), ("protocol", 2, 950.0),
                               ("true", 0, 960.0)]:  # fmt: skip
        res = {
            "seed": seed,
            "last10_mean": last10,
            "final_return": last10 - 5,
            "labels_used": 100,
            "steps": 500_000,
        }
        (task / f"{side}-seed{seed}.json").write_text(json.dumps(res))
    copies = tmp_path / "copies"
    table = fr.summarize(tmp_path, copies)
    row = table["walker_walk"]["prefrl"]["protocol"]
    assert row["median_last10"] == 900.0 and row["seeds"] == [0, 1, 2]
    assert "defaults" not in table["walker_walk"]["prefrl"]
    assert sorted(p.name for p in (copies / "walker_walk").iterdir())[0] == "protocol-seed0.json"
    md = fr.markdown(table)
    published = "| walker_walk | 100 / 500k | 453 | 661 | 415 | 796 | 908 |"
    want = f"{published} 900 (worst 800, 3 seeds) | — | 960 (1 seed) |"
    assert want in md, md
    assert "PPE (NeurIPS 2025), Table 1" in md


@pytest.mark.slow
def test_each_side_runs_resumes_and_writes_its_result(tmp_path: Path) -> None:
    """A short variant of the protocol on cheetah_run: three runs, each a result file; a rerun
    skips them."""
    cmd = [sys.executable, str(ROOT / "benchmarks/frontier.py"), "--task", "cheetah_run", "--steps", "11000",
           "--labels", "10", "--seeds", "1", "--jobs", "3", "--out", str(tmp_path)]  # fmt: skip
    subprocess.run(cmd, check=True, timeout=1500)
    for side in ("protocol", "defaults", "true"):
        res = json.loads((tmp_path / "cheetah_run" / f"{side}-seed0.json").read_text())
        assert res["steps"] == 11000 and res["evaluations"][-1][0] == 11000
        assert res["labels_used"] == (0 if side == "true" else 10)
        assert {"cpu", "cpu_capability", "commit"} <= set(res["machine"])  # where it ran
    done = subprocess.run(cmd, check=True, timeout=120, capture_output=True, text=True)
    assert "started" not in done.stderr


def test_runs_in_progress_are_shown_with_their_latest_evaluation(tmp_path: Path) -> None:
    fr = _frontier()
    run = tmp_path / "walker_walk" / "protocol-seed1"
    run.mkdir(parents=True)
    (run / "evaluations.csv").write_text("step,true_return\n10000,50.5\n20000,120.25\n")
    true = tmp_path / "walker_walk" / "true-seed0"
    true.mkdir()
    (true / "state.json").write_text(json.dumps({"steps": 50000, "evaluations": [[50000, 588.5]]}))
    copies = tmp_path / "copies"
    table = fr.summarize(tmp_path, copies)
    going = table["walker_walk"]["in_progress"]
    assert going["protocol"] == [{"seed": 1, "steps": 20000, "evaluations": [[10000, 50.5], [20000, 120.25]]}]
    assert "running: 120 at 20k" in fr.markdown(table) and "running: 588 at 50k" in fr.markdown(table)
    assert json.loads((copies / "walker_walk" / "true-seed0.progress.json").read_text())["steps"] == 50000
    # once the run finishes, its result replaces the progress file among the copies
    result = {"seed": 0, "last10_mean": 960.0, "final_return": 965.0, "labels_used": 0, "steps": 500000}
    (tmp_path / "walker_walk" / "true-seed0.json").write_text(json.dumps(result))
    fr.summarize(tmp_path, copies)
    assert (copies / "walker_walk" / "true-seed0.json").exists()
    assert not (copies / "walker_walk" / "true-seed0.progress.json").exists()


def test_seed_without_side_is_refused_rather_than_running_seed_0() -> None:
    """``--seed 1`` without ``--side`` once started the driver's seed 0 beside a running seed 0."""
    with pytest.raises(SystemExit):
        _frontier().main(["--task", "cheetah_run", "--seed", "1"])


def test_loop_options_reach_the_learned_sides_and_bad_ones_are_refused(tmp_path: Path) -> None:
    fr = _frontier()
    p = fr.argparse.ArgumentParser()
    opts = fr.loop_options(["watch_against_older_early=true", "archive_steps=20000"], p)
    assert opts == {"watch_against_older_early": True, "archive_steps": 20_000}
    cfg = fr.learned_config("walker_walk", "protocol", 1, tmp_path / "r", 500_000, 100, opts)
    assert cfg.loop.watch_against_older_early is True and cfg.loop.archive_steps == 20_000
    assert cfg.loop.labels_per_round == 10  # the protocol's schedule stays
    for bad in ("no_such_option=1", "watch_restore", "archive_share=2"):
        with pytest.raises(SystemExit):
            fr.loop_options([bad], p)


def test_runs_with_loop_options_are_set_beside_the_same_seeds_without_them(tmp_path: Path) -> None:
    fr = _frontier()

    def result(path: Path, seed: int, last10: float, options: dict[str, object] | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        res = {"task": "walker_walk", "side": "protocol", "seed": seed, "last10_mean": last10}
        path.write_text(json.dumps({**res, **({"loop_options": options} if options else {})}))

    defaults, options = tmp_path / "frontier", tmp_path / "frontier-options"
    result(defaults / "walker_walk" / "protocol-seed1.json", 1, 617.2)
    evals = [[k * 10_000, 100.0 * k] for k in range(1, 31)]  # the committed seed 3: 100 per 10k steps
    (defaults / "walker_walk" / "protocol-seed3.json").write_text(json.dumps({"evaluations": evals}))
    early = options / "watch_against_older_early=True" / "walker_walk"
    for seed, last10 in ((2, 950.0), (1, 844.8)):
        result(early / f"protocol-seed{seed}.json", seed, last10, {"watch_against_older_early": True})
    going = {"seed": 3, "steps": 230_000, "evaluations": [[k * 10_000, 250.0 + k] for k in range(1, 24)]}
    (early / "protocol-seed3.progress.json").write_text(json.dumps(going))  # not finished
    table = fr.options_table(defaults, options).splitlines()
    assert len(table) == 3, table
    assert table[2] == ("| walker_walk | protocol | `--loop watch_against_older_early=true` "
                        "| seed 1: 845, seed 2: 950, seed 3: 272 (at 230k) "
                        "| seed 1: 617, seed 2: not run, seed 3: 2200 at the same steps |")  # fmt: skip
    (early / "protocol-seed1.json").unlink()
    (early / "protocol-seed2.json").unlink()  # no finished run names the options: no row
    assert len(fr.options_table(defaults, options).splitlines()) == 2


def test_each_run_is_a_row_with_when_it_passed_the_best_published_figure(tmp_path: Path) -> None:
    fr = _frontier()
    task = tmp_path / "walker_walk"
    task.mkdir()

    def result(side: str, seed: int, evals: list[list[float]], labels: int = 100) -> None:
        res = {"seed": seed, "last10_mean": evals[-1][1], "final_return": evals[-1][1] + 1, "steps": 500_000,
               "labels_used": labels, "train_wall_s": 7200.0, "evaluations": evals}  # fmt: skip
        (task / f"{side}-seed{seed}.json").write_text(json.dumps(res))

    result("protocol", 0, [[10_000, 300.0], [20_000, 910.0], [30_000, 880.0], [40_000, 950.0]])
    result("protocol", 1, [[10_000, 300.0], [20_000, 600.0]])  # never reaches PPE's 908
    result("true", 0, [[10_000, 930.0]], labels=0)
    (task / "protocol-seed2.progress.json").write_text("{}")  # a running run is not a row
    rows = fr.runs_table(tmp_path).splitlines()
    assert rows[2] == "| walker_walk | protocol | 0 | 100 | 950.0 | 951.0 | 20k | 880 | 2.0 |"
    assert rows[3] == "| walker_walk | protocol | 1 | 100 | 600.0 | 601.0 | never | – | 2.0 |"
    assert rows[4] == "| walker_walk | true | 0 | – | 930.0 | 931.0 | 10k | 930 | 2.0 |"
    assert len([r for r in rows if r.startswith("| walker_walk")]) == 3
    assert "walker_walk 908" in rows[-1]
    assert fr.summarize(tmp_path, None)["walker_walk"]["prefrl"]["protocol"]["seeds"] == [0, 1]
