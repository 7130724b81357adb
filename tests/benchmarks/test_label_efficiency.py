"""The label-efficiency benchmark: its options (any section of the train config), oracle reuse, the
committed result layout, and a real short run on Ray through prefrl sweep's runner (rerun: skip or resume)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import time
from pathlib import Path

import pytest

from prefrl.run.config import TrainConfig

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("label_efficiency", ROOT / "benchmarks/label_efficiency.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_options_reach_every_section_of_the_train_config() -> None:
    le = _module()
    opts = le.parse_loop_options(
        ["end_clip_frac=0.5", "trainer.weight_decay=0.01", "reward.output=tanh", "reward.hidden=[8,8]"]
    )
    assert opts == {"end_clip_frac": 0.5, "trainer.weight_decay": 0.01, "reward.output": "tanh",
                    "reward.hidden": [8, 8]}  # fmt: skip
    cfg = le.apply_options(TrainConfig(), opts)
    assert cfg.loop.end_clip_frac == 0.5 and cfg.trainer.weight_decay == 0.01
    assert cfg.reward.output == "tanh" and list(cfg.reward.hidden) == [8, 8]
    # options that take JSON text (env.kwargs) keep it as text, as the run's config holds it
    assert le.parse_loop_options(['env.kwargs={"size": 32}']) == {"env.kwargs": '{"size": 32}'}
    cfg = le.apply_options(TrainConfig(), le.parse_loop_options(['env.kwargs={"size": 32}']))
    assert cfg.env.parsed_kwargs() == {"size": 32}
    for bad in ["nosuch=1", "trainer.nosuch=1", "teacher.x=1", "end_clip_frac"]:
        with pytest.raises(SystemExit, match="expected NAME=VALUE"):
            le.parse_loop_options([bad])


def test_true_reward_runs_are_reused_across_label_budgets_and_options(tmp_path) -> None:
    le = _module()
    done = tmp_path / "Hopper-v5-sac-oracle-200l-100000s"
    done.mkdir()
    (done / "seed1-oracle.json").write_text(json.dumps({"return": 900.0, "wall_s": 1.0, "cpu_s": 1.0}))
    hit = le.find_oracle(tmp_path, "Hopper-v5", "sac", 100_000, 1)
    assert hit == done / "seed1-oracle.json"
    assert le.find_oracle(tmp_path, "Hopper-v5", "sac", 100_000, 2) is None  # another seed
    assert le.find_oracle(tmp_path, "Hopper-v5", "sac", 10_000, 1) is None  # other steps
    assert le.find_oracle(tmp_path, "Hopper-v5", "td3", 100_000, 1) is None  # another agent
    # another environment: the learned runs get env kwargs, so the reference must have had them too
    assert le.find_oracle(tmp_path, "Hopper-v5", "sac", 100_000, 1, {"ctrl_cost_weight": 0.0}) is None
    other = tmp_path / "Hopper-v5-sac-oracle-50l-100000s-env.kwargs={...}"
    other.mkdir()
    (other / "seed1-oracle.json").write_text(
        json.dumps({"return": 1.0, "wall_s": 1.0, "cpu_s": 1.0, "env_kwargs": {"ctrl_cost_weight": 0.0}})
    )
    assert le.find_oracle(tmp_path, "Hopper-v5", "sac", 100_000, 1, {"ctrl_cost_weight": 0.0}) == (
        other / "seed1-oracle.json"
    )
    assert le.find_oracle(tmp_path, "Hopper-v5", "sac", 100_000, 1) == done / "seed1-oracle.json"
    # evaluated another way than the benchmark evaluates now: not a match (none recorded: deterministic)
    assert le.find_oracle(tmp_path, "Hopper-v5", "sac", 100_000, 1, evaluation="deterministic") == (
        done / "seed1-oracle.json"
    )
    assert le.find_oracle(tmp_path, "Hopper-v5", "sac", 100_000, 1, evaluation="sampled") is None


def test_results_evaluated_the_old_way_are_evaluated_again_from_their_policy(tmp_path: Path, capsys) -> None:
    """A moving-dot result written before discrete policies on images were evaluated by sampling
    is evaluated again from its saved policy (no training); one whose policy is gone is kept and
    the combined result says the evaluations are mixed."""
    from prefrl.agents.evaluate import evaluate_returns
    from prefrl.agents.policy_io import save_agent
    from prefrl.agents.sb3 import AgentConfig, make_agent, make_vec_env

    le = _module()
    env, kw = "prefrl/MovingDot-v0", {"size": 16, "max_steps": 30}
    agent = make_agent(AgentConfig(algo="ppo", n_steps=64, batch_size=32), make_vec_env(env, 1, kw), seed=0)
    out = tmp_path / "bench"
    (out / "learned-seed0").mkdir(parents=True)
    save_agent(agent, out / "learned-seed0" / "policy.zip")
    (out / "seed0-learned.json").write_text(json.dumps({"return": 1.5, "train_wall_s": 2.0, "cpu_s": 2.0}))
    (out / "seed1-learned.json").write_text(json.dumps({"return": 3.0, "train_wall_s": 2.0, "cpu_s": 2.0}))
    oracle = {"return": 20.0, "eval": "sampled", "train_wall_s": 1.0, "cpu_s": 1.0}
    (out / "seed0-oracle.json").write_text(json.dumps(oracle))
    le.reevaluate(out, env, "ppo", kw, 3)
    got = json.loads((out / "seed0-learned.json").read_text())
    want = float(evaluate_returns(env, agent, 3, env_kwargs=kw, deterministic=False).mean())
    assert got["eval"] == "sampled" and got["return"] == pytest.approx(want)
    assert got["returns_by_eval"] == {"deterministic": 1.5, "sampled": pytest.approx(want)}
    assert got["train_wall_s"] == 2.0  # the rest of the result is kept
    assert json.loads((out / "seed1-learned.json").read_text()) == {"return": 3.0, "train_wall_s": 2.0,
                                                                     "cpu_s": 2.0}  # fmt: skip
    assert json.loads((out / "seed0-oracle.json").read_text()) == oracle  # already sampled
    assert "seed1-learned.json: evaluated deterministic, not sampled" in capsys.readouterr().err
    assert le.combine(out, 0.0)["eval"] == "mixed"


def test_combine_lists_the_machines_and_commits_its_seeds_ran_on(tmp_path: Path) -> None:
    """Runs repeat seed for seed only on one machine: a row names every machine its seeds ran
    on, and the commits of its learned runs; files written before they recorded it name none."""
    le = _module()
    zen = {"cpu": "AMD EPYC (family 25, model 17)", "cpu_capability": "AVX512", "cpus": 2, "commit": "abc"}
    other = {**zen, "cpu_capability": "AVX2", "commit": "def"}
    seeds = {"seed0-learned.json": zen, "seed1-learned.json": other, "seed0-oracle.json": zen}
    for name, machine in seeds.items():
        (tmp_path / name).write_text(json.dumps({"return": 1.0, "train_wall_s": 1.0, "machine": machine}))
    got = le.combine(tmp_path, 0.0)
    assert got["machines"] == ["AMD EPYC (family 25, model 17), AVX2, 2 cores",
                               "AMD EPYC (family 25, model 17), AVX512, 2 cores"]  # fmt: skip
    assert got["commits"] == ["abc", "def"]
    for name in seeds:
        (tmp_path / name).write_text(json.dumps({"return": 1.0, "train_wall_s": 1.0}))
    assert "machines" not in le.combine(tmp_path, 0.0)


def test_seeds_run_under_different_defaults_are_not_combined(tmp_path: Path) -> None:
    """A seed kept from before a default changed, beside seeds run after it, would make a median
    of two settings: combining stops and names the setting and the seeds; a seed that recorded
    nothing (written before it was recorded) conflicts with none."""
    le = _module()
    base = {"return": 1.0, "train_wall_s": 1.0}
    gated = {"exploration_bonus": 3.0, "exploration_bonus_gate": 0.75}
    runs = {0: {"exploration_bonus": 0.0}, 1: gated, 2: {}}
    for seed, resolved in runs.items():
        (tmp_path / f"seed{seed}-learned.json").write_text(json.dumps({**base, **resolved}))
    (tmp_path / "seed0-oracle.json").write_text(json.dumps({"return": 2.0, "train_wall_s": 1.0}))
    with pytest.raises(SystemExit, match=r"exploration_bonus: seeds 0: 0.0; seeds 1: 3.0"):
        le.combine(tmp_path, 0.0)
    (tmp_path / "seed0-learned.json").write_text(json.dumps({**base, "exploration_bonus": 3.0}))
    got = le.combine(tmp_path, 0.0)
    assert got["seeds"] == [0, 1, 2]  # seed 2 recorded nothing: the row names no bonus


def test_true_reward_run_gets_the_learned_runs_environment_options() -> None:
    from prefrl.run.sweep import reference_env_kwargs

    opts = {"env.kwargs": '{"size": 32}', "env.hide_score": True, "reward.hidden": [8],
            "loop.fragment_length": 10}  # fmt: skip
    assert reference_env_kwargs(opts) == {"size": 32, "hide_score": True}
    assert reference_env_kwargs({"agent.learning_rate": 0.1}) == {}


COMMITTED = ROOT / "benchmarks/results/Pendulum-v1-sac-oracle-10l-15000s"


def _last_json(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_committed_per_seed_files_combine_to_the_committed_result(tmp_path: Path, capsys) -> None:
    le = _module()
    out = tmp_path / COMMITTED.name
    out.mkdir()
    for p in COMMITTED.glob("seed*.json"):  # the per-seed files written before the benchmark ran on Ray
        shutil.copy(p, out / p.name)
    args = ["--env", "Pendulum-v1", "--labels", "10", "--steps", "15000", "--seeds", "3",
            "--out", str(tmp_path)]  # fmt: skip
    assert le.main([*args, "--combine"]) == 0
    res = _last_json(capsys)
    old = json.loads((COMMITTED / "result.json").read_text())
    assert res.pop("eval") == "deterministic"  # recorded since the evaluation rule; Pendulum's is unchanged
    # recorded since issue 48: the worst seed, as readers compute it from the committed scores and seeds
    worst, seed = min(zip(old["scores"], old["seeds"]))
    assert res.pop("worst_normalized_score") == pytest.approx(worst) and res.pop("worst_seed") == seed
    assert set(res) == set(old) and json.loads((out / "result.json").read_text())["seeds"] == res["seeds"]
    for k, v in old.items():
        if k != "wall_s":
            assert res[k] == (pytest.approx(v) if isinstance(v, float) else v), k


def test_an_oracle_run_on_disk_is_reused_without_starting_ray(tmp_path: Path, monkeypatch, capsys) -> None:
    le = _module()
    shutil.copytree(COMMITTED, tmp_path / COMMITTED.name, ignore=shutil.ignore_patterns("learned-seed*"))
    monkeypatch.setattr("prefrl.run.sweep._ray_init", lambda sc: pytest.fail("Ray started"))
    args = ["--env", "Pendulum-v1", "--labels", "20", "--steps", "15000", "--seeds", "2", "--first-seed", "1",
            "--eval-episodes", "1", "--out", str(tmp_path)]  # fmt: skip
    assert le.main([*args, "--only", "oracle"]) == 0
    new = tmp_path / "Pendulum-v1-sac-oracle-20l-15000s"
    assert sorted(p.name for p in new.iterdir()) == ["seed1-oracle.json", "seed2-oracle.json"]
    assert (new / "seed2-oracle.json").read_bytes() == (COMMITTED / "seed2-oracle.json").read_bytes()
    assert "seed 1: oracle reused from Pendulum-v1-sac-oracle-10l-15000s" in capsys.readouterr().err


def _tree(root: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every file under ``root`` but result.json: modification time, and the bytes of JSON files."""
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.read_bytes() if p.suffix == ".json" else None)
            for p in root.rglob("*") if p.is_file() and p.name != "result.json"}  # fmt: skip


def test_a_short_benchmark_runs_its_seeds_on_ray_and_a_rerun_skips_or_resumes(tmp_path: Path, capsys) -> None:
    pytest.importorskip("ray")
    le = _module()
    args = ["--env", "Pendulum-v1", "--labels", "4", "--steps", "600", "--seeds", "2", "--iterations", "2",
            "--eval-episodes", "2", "--out", str(tmp_path)]  # fmt: skip
    assert le.main(args) == 0
    res = _last_json(capsys)
    assert res["seeds"] == [0, 1] and len(res["scores"]) == 2 and "median_normalized_score" in res
    assert (res["iterations"], res["labels"], res["steps"], res["agent"]) == (2, 4, 600, "sac")
    assert res["reward_next_obs"] is True  # the runs' resolved reward inputs (auto: s' for the MLP)
    # and how they chose their queries: the default, disagreement after a warm-up of 30 labels
    assert (res["query_selection"], res["selection_from"], res["selection_share"]) == ("probability", 30, 1.0)
    # and the broad first reward Pendulum resolves (random episodes there only meet time limits)
    assert (res["initial_steps_per_label"], res["l2_init"]) == (100, 0.01)
    # and the gated bonus it resolves there (a state reward): the ablation's gated column
    bonus = (res["exploration_bonus"], res["exploration_bonus_schedule"], res["exploration_bonus_gate"])
    assert bonus == (3.0, "labels", 0.75)
    out = tmp_path / "Pendulum-v1-sac-oracle-4l-600s-iterations=2"
    assert json.loads((out / "result.json").read_text()) == res
    for s in (0, 1):
        assert (out / f"learned-seed{s}/policy.zip").exists() and (
            out / f"oracle-seed{s}/policy.zip"
        ).exists()
        learned = json.loads((out / f"seed{s}-learned.json").read_text())
        assert learned["labels_used"] == 4 and learned["cell"]["seed"] == s
        # each seed's result names the reward's resolved settings, without its run directory
        assert learned["reward_next_obs"] is True and learned["reward_output"] == "linear"
        assert (learned["query_selection"], learned["selection_from"]) == ("probability", 30)
        assert (learned["initial_steps_per_label"], learned["l2_init"]) == (100, 0.01)
    before = _tree(tmp_path)

    t0 = time.perf_counter()
    assert le.main(args) == 0  # everything finished: nothing runs again
    again = _last_json(capsys)
    assert time.perf_counter() - t0 < 10 and _tree(tmp_path) == before
    assert {k: v for k, v in again.items() if k != "wall_s"} == {
        k: v for k, v in res.items() if k != "wall_s"
    }

    # a learned run that lost its result file resumes from its last checkpoint: nothing else runs
    (out / "seed1-learned.json").unlink()
    assert le.main([*args, "--only", "learned"]) == 0
    assert len(_last_json(capsys)["scores"]) == 2  # both sides are there: --only still scores them
    others = {k: v for k, v in before.items() if "seed1-learned" not in k and "learned-seed1" not in k}
    assert {k: v for k, v in _tree(tmp_path).items() if k in others} == others
    resumed = json.loads((out / "seed1-learned.json").read_text())
    assert resumed["return"] == pytest.approx(res["learned_returns"][1]) and resumed["labels_used"] == 4
    assert json.loads((out / "learned-seed1/report.json").read_text())["resumed"] is True
    assert le.main([*args, "--combine"]) == 0
    assert len(_last_json(capsys)["scores"]) == 2
    for s in (0, 1):  # committed results travel without run directories: combine still names s'
        shutil.rmtree(out / f"learned-seed{s}")
    assert le.main([*args, "--combine"]) == 0
    assert _last_json(capsys)["reward_next_obs"] is True


def test_combine_adopts_an_oracle_found_elsewhere(tmp_path: Path, capsys) -> None:
    """--combine gives a learned seed without a true-reward result a copy of one found under --out."""
    le = _module()
    shutil.copytree(COMMITTED, tmp_path / COMMITTED.name, ignore=shutil.ignore_patterns("learned-seed*"))
    new = tmp_path / "Pendulum-v1-sac-oracle-10l-15000s-active_selection=True"
    new.mkdir()
    shutil.copy(COMMITTED / "seed1-learned.json", new / "seed1-learned.json")  # learned only, seed 1
    args = ["--env", "Pendulum-v1", "--labels", "10", "--steps", "15000", "--seeds", "3",
            "--eval-episodes", "1", "--out", str(tmp_path), "--loop", "active_selection=true",
            "--combine"]  # fmt: skip
    assert le.main(args) == 0
    assert sorted(p.name for p in new.iterdir()) == ["result.json", "seed1-learned.json", "seed1-oracle.json"]
    assert (new / "seed1-oracle.json").read_bytes() == (COMMITTED / "seed1-oracle.json").read_bytes()
    res = _last_json(capsys)
    oracle = json.loads((COMMITTED / "seed1-oracle.json").read_text())["return"]
    assert res["seeds"] == [1] and res["oracle_returns"] == [oracle]
    empty = tmp_path / "Pendulum-v1-sac-oracle-10l-30000s"  # no learned result: nothing to adopt or score
    empty.mkdir()
    with pytest.raises(SystemExit, match="need at least one learned and one oracle"):
        le.main(["--env", "Pendulum-v1", "--labels", "10", "--steps", "30000", "--seeds", "1",
                 "--eval-episodes", "1", "--out", str(tmp_path), "--combine"])  # fmt: skip
    assert list(empty.iterdir()) == []


def test_method_offers_at_most_ten_presets_and_names_how_to_run_a_retired_one() -> None:
    """Issue 46: --method names only what people should try (at most 10); a retired preset keeps
    its results (MEASURED, the tables' columns) and is refused with the --loop options that run it,
    which give back exactly its options; one naming a removed option says so."""
    import argparse

    le = _module()
    assert len(le.METHODS) <= 10 and next(iter(le.METHODS)) == "baseline"
    assert all(le.MEASURED[name] == opts for name, opts in le.METHODS.items())
    assert set(le.MEASURED) == {*le.METHODS, *le.RETIRED} and not set(le.METHODS) & set(le.RETIRED)
    for name, opts in le.RETIRED.items():
        with pytest.raises(argparse.ArgumentTypeError) as e:
            le.method_name(name)
        if any(k in le.REMOVED_OPTIONS for k in opts):
            assert "removed" in str(e.value), name
            continue
        spelled = le.loop_spelling(opts)
        assert spelled in str(e.value)
        assert le.parse_loop_options(spelled.replace("--loop ", "").split()) == opts, name
    with pytest.raises(argparse.ArgumentTypeError, match="choose from baseline"):
        le.method_name("nosuch")
    # the docs list the presets --method offers and how to run every retired one
    doc = (ROOT / "docs" / "techniques.md").read_text()
    offered = doc.split("`benchmarks/label_efficiency.py --method NAME` runs a preset (")[1].split(")")[0]
    assert [x.strip(" `\n") for x in offered.split(",")] == list(le.METHODS)
    for name, opts in le.RETIRED.items():
        if not any(k in le.REMOVED_OPTIONS for k in opts):
            assert f"| `{name}` |" in doc and f"`{le.loop_spelling(opts)}`" in doc, name
