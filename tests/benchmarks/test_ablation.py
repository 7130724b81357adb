"""The ablation table: results grouped by technique preset, median and range per cell."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / f"benchmarks/{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _result(tmp: Path, name: str, method: str | None, opts: dict, scores: list[float], **kw) -> None:
    d = tmp / name
    d.mkdir()
    res = {
        "env": "HalfCheetah-v5", "agent": "sac", "teacher": kw.get("teacher", "oracle"),
        "labels": kw.get("labels", 50), "steps": 100_000, "iterations": 14, "loop_options": opts,
        "scores": scores, "seeds": list(range(len(scores))), "learned_return": 1.0, "oracle_return": 2.0,
        "median_normalized_score": sorted(scores)[len(scores) // 2], "random_return": 0.0,
        "learned_train_wall_s": 1.0,
    }  # fmt: skip
    if method is not None:
        res["method"] = method
    for key in ("reward_next_obs", "query_selection"):
        if key in kw:
            res[key] = kw[key]
    (d / "result.json").write_text(json.dumps(res))


def test_table_has_a_column_per_method_and_a_row_per_setting(tmp_path: Path) -> None:
    ab, le = _module("ablation"), _module("label_efficiency")
    _result(tmp_path, "a", "baseline", {}, [0.2, 0.5, 0.4])
    _result(tmp_path, "b", "surf", le.MEASURED["surf"], [0.9, 0.7, 1.1])
    _result(tmp_path, "c", "rime", le.MEASURED["rime"], [0.8], teacher="mistake", labels=100)
    _result(tmp_path, "old", None, {}, [0.1])  # before presets (older defaults): left out
    _result(tmp_path, "next", "baseline", {"reward.use_next_obs": True}, [0.7])
    _result(tmp_path, "next_auto", "surf", le.MEASURED["surf"], [0.95], reward_next_obs=True)
    _result(tmp_path, "tuned", "surf", {**le.MEASURED["surf"], "trainer.lr": 0.1}, [2.0])  # not the preset
    # a preset's options passed with --loop (method "baseline" in the result) count as that preset
    _result(tmp_path, "by_options", "baseline", {"trainer.noise_filter": True}, [0.6], labels=25)
    doc = tmp_path / "doc.md"
    doc.write_text(f"# B\n\n{ab.START}\nold table\n{ab.END}\n\nafter\n")
    assert ab.main([str(tmp_path), "--write", str(doc), "--plot", str(tmp_path / "p.png")]) == 0
    text = doc.read_text()
    assert "old table" not in text and text.endswith("\n\nafter\n")
    lines = text.split(ab.START)[1].split(ab.END)[0].strip().splitlines()
    assert lines[0] == "| environment | teacher | labels | steps | reward reads | baseline | surf | rime |"
    assert lines[2] == "| HalfCheetah-v5 | mistake | 100 | 100,000 | s, a |  |  | **0.80** (1 seed) |"
    assert lines[3] == "| HalfCheetah-v5 | oracle | 25 | 100,000 | s, a |  |  | **0.60** (1 seed) |"
    # a median hides a failed seed: every cell of more seeds names its worst
    assert lines[4] == ("| HalfCheetah-v5 | oracle | 50 | 100,000 | s, a | **0.40** (worst 0.20, 3 seeds) "
                        "| **0.90** (worst 0.70, 3 seeds) |  |")  # fmt: skip
    # s' (named as an option, or resolved by the runs and recorded) is a row of its own
    want = "| HalfCheetah-v5 | oracle | 50 | 100,000 | s, a, s' | **0.70** (1 seed) | **0.95** (1 seed) |  |"
    assert lines[5] == want
    assert (tmp_path / "p.png").stat().st_size > 1000
    with pytest.raises(SystemExit, match="markers"):
        ab.write_into(tmp_path / "a" / "result.json", "x")


def test_query_selection_is_read_from_what_the_runs_recorded_or_the_default_of_their_time() -> None:
    ab, le, sm = _module("ablation"), _module("label_efficiency"), _module("summarize")
    presets = le.MEASURED
    old = {"method": "active", "loop_options": {"active_selection": True}}  # ran when logit was the default
    assert ab.method_of(old, presets) == ("active_logit", False)
    new = {"method": "baseline", "loop_options": {"active_selection": True}, "query_selection": "probability"}
    assert ab.method_of(new, presets) == ("active", False)
    named = {"method": "baseline", "loop_options": dict(presets["active"])}
    assert ab.method_of(named, presets) == ("active", False)
    uniform = {"method": "baseline", "loop_options": {}, "query_selection": "uniform"}
    assert ab.method_of(uniform, presets) == ("baseline", False)
    # a preset whose options changed since a result ran is not named for it
    assert sm.options(old) == "active_selection=True active_selection_from=0 uncertainty_measure=logit"
    # runs that recorded a warm-up of uniform queries (selection_from) are the active_warm preset
    warm = {**new, "selection_from": 30}
    assert ab.method_of(warm, presets) == ("active_warm", False)
    spelled = {"active_selection": True, "active_selection_from": 30}
    assert ab.method_of({"method": "baseline", "loop_options": spelled, "query_selection": "probability"},
                        presets) == ("active_warm", False)  # fmt: skip
    assert sm.options({"method": "active", "loop_options": dict(presets["active"])}) == "method=active"
    # the evaluation is named where actions were sampled (discrete actions on images), not otherwise
    assert sm.options({"loop_options": {}, "eval": "sampled"}) == "eval=sampled"
    assert sm.options({"loop_options": {}, "eval": "deterministic"}) == ""


def test_two_results_for_one_cell_keep_the_one_with_more_seeds(tmp_path: Path, capsys) -> None:
    ab, le = _module("ablation"), _module("label_efficiency")
    _result(tmp_path, "three", "baseline", {}, [0.2, 0.5, 0.4])
    _result(tmp_path, "two", "baseline", {"active_selection": False}, [0.9, 0.8], query_selection="uniform")
    grid = ab.rows(_module("summarize").load_results(tmp_path), le.MEASURED)
    assert grid == {("HalfCheetah-v5", "oracle", 50, 100_000, False): {"baseline": [0.2, 0.5, 0.4]}}
    assert "two results" in capsys.readouterr().err


def test_technique_presets_ask_uniformly_and_still_match_their_columns() -> None:
    ab, le = _module("ablation"), _module("label_efficiency")
    presets = le.MEASURED
    assert presets["surf"]["active_selection"] is False and "active_selection" not in presets["baseline"]
    # a run of the preset today (uniform recorded) and one from before (nothing recorded) share a column
    today = {"method": "surf", "loop_options": dict(presets["surf"]), "query_selection": "uniform"}
    old_opts = {k: v for k, v in presets["surf"].items() if k != "active_selection"}
    before = {"method": "surf", "loop_options": old_opts}
    assert ab.method_of(today, presets) == ab.method_of(before, presets) == ("surf", False)
    # a technique run on top of disagreement selection is not that preset's column
    warm = {**today, "query_selection": "probability", "selection_from": 30}
    assert ab.method_of(warm, presets) is None


def test_results_in_a_folder_of_their_own_are_a_series_named_in_the_table(tmp_path: Path) -> None:
    """``--out results/NAME`` (runs of a changed agent with their own true-reward runs): the
    table names the series, and a namespaced env id (prefrl/...) is not taken for one."""
    sm = _module("summarize")
    (tmp_path / "new").mkdir()
    _result(tmp_path / "new", "cheetah", None, {}, [0.9])
    (tmp_path / "prefrl").mkdir()
    _result(tmp_path / "prefrl", "dot", None, {}, [0.5])
    dot = json.loads((tmp_path / "prefrl/dot/result.json").read_text())
    (tmp_path / "prefrl/dot/result.json").write_text(json.dumps({**dot, "env": "prefrl/MovingDot-v0"}))
    got = {r["env"]: (r.get("series"), sm.options(r)) for r in sm.load_results(tmp_path)}
    assert got == {"HalfCheetah-v5": ("new", "series=new"), "prefrl/MovingDot-v0": (None, "")}
    assert "| HalfCheetah-v5 | sac | series=new |" in sm.table(sm.load_results(tmp_path))


def test_a_run_at_todays_defaults_files_as_the_first_reward_it_resolved() -> None:
    ab, le, sm = _module("ablation"), _module("label_efficiency"), _module("summarize")
    presets = le.MEASURED
    today = {"method": "baseline", "loop_options": {}, "query_selection": "probability", "selection_from": 30}
    # a long-episode environment resolves a broad first reward: the broad column, not active_warm
    long = {**today, "initial_steps_per_label": 100, "l2_init": 0.01}
    assert ab.method_of(long, presets) == ("broad", False)
    assert "initial_steps_per_label=100 trainer.l2_init=0.01" in sm.options(long)  # summarize.py names them
    # where random actions terminate it resolves 0 and 0, today's active_warm (as before 2026-11-26)
    falls = {**today, "initial_steps_per_label": 0, "l2_init": 0.0}
    assert ab.method_of(falls, presets) == ab.method_of(today, presets) == ("active_warm", False)
    # the old default pinned by name (=0) is the same column
    old_default = {**presets["active_warm"], "initial_steps_per_label": 0, "trainer.l2_init": 0.0}
    pinned = {**today, "method": "active_warm", "loop_options": old_default}
    assert ab.method_of(pinned, presets) == ("active_warm", False)
    # a technique on top of a broad first reward is not that technique's column but its own,
    # beside the technique's in the table
    smooth = {**long, "method": "smoothing", "loop_options": dict(presets["smoothing"])}
    assert ab.method_of(smooth, presets) == ("smoothing+broad", False)
    grid = {("Pusher-v5", "oracle", 30, 15000, True): {"smoothing+broad": [0.1], "broad": [0.2]},
            ("Hopper-v5", "oracle", 30, 15000, True): {"smoothing": [0.3]}}  # fmt: skip
    assert ab.columns(grid, list(presets)).index("smoothing") + 1 == ab.columns(grid, list(presets)).index(
        "smoothing+broad"
    )
    assert "| smoothing | smoothing+broad |" in ab.table(grid, list(presets)).splitlines()[0]
    # other first-reward settings beside a technique stay out of the table
    odd = {**smooth, "initial_steps_per_label": 50}
    assert ab.method_of(odd, presets) is None


def test_a_run_at_todays_defaults_files_as_the_bonus_it_resolved() -> None:
    """Since 2026-11-30 a run records the exploration bonus it resolved: the gated bonus (where
    the broad first reward is, on state rewards) files under ``gated``, as the same options named
    do; a run that resolved none stays ``broad``; RUNE's own weight stays ``rune``."""
    ab, le, sm = _module("ablation"), _module("label_efficiency"), _module("summarize")
    presets = le.MEASURED
    today = {"method": "baseline", "loop_options": {}, "query_selection": "probability", "selection_from": 30,
             "initial_steps_per_label": 100, "l2_init": 0.01}  # fmt: skip
    gated = {**today, "exploration_bonus": 3.0, "exploration_bonus_schedule": "labels",
             "exploration_bonus_gate": 0.75}  # fmt: skip
    assert ab.method_of(gated, presets) == ("gated", False)
    named = {**today, "loop_options": dict(le.GATED)}  # the options named, before the default
    assert ab.method_of(named, presets) == ("gated", False)
    assert sm.loop_options(gated) == sm.loop_options(named)
    off = {**today, "exploration_bonus": 0.0}  # resolved off: files as before the bonus
    assert ab.method_of(off, presets) == ("broad", False) and "exploration_bonus" not in sm.options(off)
    rune = {**today, "method": "rune", "loop_options": dict(presets["rune"]), "query_selection": "uniform",
            "exploration_bonus": 0.05, "exploration_bonus_schedule": "steps",
            "exploration_bonus_gate": 0.0}  # fmt: skip
    assert ab.method_of(rune, presets) == ("rune+broad", False)
    smooth = {**gated, "method": "smoothing", "loop_options": dict(presets["smoothing"])}
    assert ab.method_of(smooth, presets) == ("smoothing+gated", False)
    cols = ab.columns({("Pusher-v5", "oracle", 30, 15000, True): {"smoothing+gated": [0.1]}}, list(presets))
    assert cols == ["smoothing+gated"]
