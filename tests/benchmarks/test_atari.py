"""benchmarks/atari.py: the same agent on both sides, the normalised score and the curves."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _atari() -> ModuleType:
    spec = importlib.util.spec_from_file_location("atari_bench", ROOT / "benchmarks/atari.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_learned_side_trains_the_true_sides_agent_on_clips_without_the_score(tmp_path: Path) -> None:
    at = _atari()
    cfg = at.learned_config("pong", 0, tmp_path / "r", 1_000_000, 1_400)
    assert cfg.env.id == "ALE/Pong-v5" and cfg.env.hide_score  # the score strip stays hidden
    assert cfg.agent == at.agent_config()  # the same agent as the true side
    assert cfg.agent.algo == "ppo" and cfg.agent.n_envs == 8 and cfg.agent.ent_coef == 0.01
    assert cfg.loop.total_labels == 1_400 and cfg.loop.fragment_length == 25
    assert cfg.loop.total_steps == 1_000_000 and cfg.loop.iterations == 20
    assert cfg.eval_interval == 50_000 and cfg.trainer.max_steps == at.FIT_STEPS
    assert cfg.reward.cnn_shared_trunk  # one convolution pass for the ensemble
    assert not cfg.reward.use_act and cfg.loop.hide_terminations  # the frames alone; no episode ends


def _write(root: Path, name: str, evals: list[list[float]], finished: bool) -> None:
    run = root / name
    run.mkdir(parents=True)
    if finished:
        res = {"evaluations": evals, "labels_used": 1400 if name.startswith("learned") else 0,
               "train_wall_s": 100.0}  # fmt: skip
        (root / f"{name}.json").write_text(json.dumps(res))
    else:
        (run / "state.json").write_text(json.dumps({"evaluations": evals}))


def test_table_normalises_at_the_same_steps_and_draws_the_curves(tmp_path: Path) -> None:
    at = _atari()
    root = tmp_path / "runs" / "pong"
    root.mkdir(parents=True)
    (root / "random.json").write_text(json.dumps({"random_return": -20.0}))
    steps = [[50_000 * (i + 1), 0.0] for i in range(4)]
    # a learned run evaluates a rollout's few steps past each multiple of the interval
    learned = [[s + 54, v] for (s, _), v in zip(steps, [-20.0, -10.0, 0.0, 2.0])]
    true = [[s, v] for (s, _), v in zip(steps, [-20.0, 0.0, 10.0, 20.0])]
    _write(root, "learned-seed0", learned, finished=True)
    _write(root, "true-seed0", true[:3], finished=False)  # running: compared where both have been
    copies = tmp_path / "copies"
    table = at.summarize(tmp_path / "runs", copies)
    t = table["pong"]
    # the last 3 evaluations at the steps both reached (50k-150k): learned -10, true -3.33
    assert t["normalized"][0] == pytest.approx((-10.0 + 20.0) / (-10.0 / 3 + 20.0))
    assert (copies / "pong" / "pong.png").stat().st_size > 1000
    assert (copies / "pong" / "learned-seed0.json").exists()
    assert json.loads((copies / "pong" / "true-seed0.progress.json").read_text())["steps"] == 150_000
    md = at.markdown(table)
    assert "| ALE/Pong-v5 |" in md and "running, 150k" in md, md  # the defaults: no ablation named
    assert f"| running: {t['normalized'][0]:.2f} |" in md, md  # the true side still runs


def test_a_running_learned_run_shows_its_rewards_accuracy_on_the_newest_clips(tmp_path: Path) -> None:
    at = _atari()
    root = tmp_path / "runs" / "pong"
    run = root / "learned-seed0"
    run.mkdir(parents=True)
    (run / "evaluations.csv").write_text("step,true_return\n50054,-20.0\n")
    rows = [
        "env_steps,reward/heldout_accuracy",
        "50950,",
        "100900,0.5",
        "150850,0.7",
        "200800,0.8",
        "250750,0.9",
    ]
    (run / "metrics.csv").write_text("\n".join(rows) + "\n")  # the first fit has no newest clips yet
    copies = tmp_path / "copies"
    table = at.summarize(tmp_path / "runs", copies)
    assert table["pong"]["sides"]["learned"][0]["heldout"][0] == [100900, 0.5]
    kept = json.loads((copies / "pong" / "learned-seed0.progress.json").read_text())
    assert kept["heldout"][-1] == [250750, 0.9]  # the committed copy keeps it
    assert "| 0.80 |" in at.markdown(table)  # the mean of the last 3 iterations
    (run / "metrics.csv").unlink()
    (run / "evaluations.csv").unlink()
    assert "| 0.80 |" in at.markdown(at.summarize(tmp_path / "copies", None))  # read back from the copy


def test_coinrun_runs_the_same_agent_on_its_levels_and_reads_frames_with_the_flat_cnn(tmp_path: Path) -> None:
    at = _atari()
    cfg = at.learned_config("coinrun", 1, tmp_path / "r", 1_000_000, 1_000)
    assert cfg.env.id == "procgen/coinrun" and not cfg.env.hide_score
    assert cfg.env.parsed_kwargs() == {"num_levels": 200, "start_level": 0, "distribution_mode": "easy"}
    assert cfg.agent == at.agent_config() and cfg.loop.total_labels == 1_000
    assert cfg.reward.cnn_features == "flat" and cfg.reward.cnn_shared_trunk


def test_coinrun_is_scored_as_a_share_of_the_true_sides_coin_rate(tmp_path: Path) -> None:
    at = _atari()
    root = tmp_path / "runs" / "coinrun"
    root.mkdir(parents=True)
    (root / "random.json").write_text(json.dumps({"random_return": 2.0}))
    steps = [50_000 * (i + 1) for i in range(3)]
    runs = [([4.0, 6.0, 8.0], [5.0, 8.0, 8.0]), ([1.0, 2.0, 3.0], [8.0, 8.0, 8.0])]  # (learned, true)
    for seed, (learned, true) in enumerate(runs):
        _write(root, f"learned-seed{seed}", [[s, v] for s, v in zip(steps, learned)], finished=True)
        _write(root, f"true-seed{seed}", [[s, v] for s, v in zip(steps, true)], finished=True)
    t = at.summarize(tmp_path / "runs", tmp_path / "copies")["coinrun"]
    assert t["normalized"] == {0: pytest.approx(6.0 / 7.0), 1: pytest.approx(2.0 / 8.0)}
    md = at.markdown({"coinrun": t})
    assert "| procgen/coinrun | 1000 / 1000k | 2.0 |" in md and "(worst 0.25, 2 seeds)" in md, md
    assert (tmp_path / "copies" / "coinrun" / "coinrun.png").stat().st_size > 1000


def test_finished_seeds_are_scored_by_their_final_policies(tmp_path: Path) -> None:
    """Both sides finished with a final evaluation: the figure is the ratio of those (many
    episodes), not of the last few noisy evaluations; a seed still running keeps the latter."""
    at = _atari()
    root = tmp_path / "runs" / "coinrun"
    root.mkdir(parents=True)
    (root / "random.json").write_text(json.dumps({"random_return": 5.0}))
    evals = [[50_000 * (i + 1), v] for i, v in enumerate([8.0, 6.0, 6.0])]
    for side, final in (("learned", 7.4), ("true", 6.9)):
        _write(root, f"{side}-seed0", evals if side == "true" else [[s + 54, v] for s, v in evals], True)
        r = json.loads((root / f"{side}-seed0.json").read_text())
        (root / f"{side}-seed0.json").write_text(
            json.dumps({**r, "final_eval": {"episodes": 100, "score": final}})
        )
    _write(root, "learned-seed1", [[s + 54, 8.0] for s, _ in evals], finished=False)
    _write(root, "true-seed1", [[s, 4.0] for s, _ in evals], finished=False)
    t = at.summarize(tmp_path / "runs", None)["coinrun"]
    assert t["normalized"] == {0: pytest.approx(7.4 / 6.9), 1: pytest.approx(2.0)}
    assert t["from_final"] == {0: True, 1: False}
    md = at.markdown({"coinrun": t})
    assert "| 7.4, 8.0 (running, 150k) |" in md and "procgen/coinrun 100" in md, md
    assert f"| {7.4 / 6.9:.2f} (1 seed); running: 2.00 |" in md, md  # finished apart from running


def test_the_label_budget_defaults_to_the_games(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = _atari()
    seen: list[int] = []

    def record(a: Any) -> int:
        seen.append(a.labels)
        return 0

    monkeypatch.setattr(at, "run_all", record)
    for task, labels in (("coinrun", 1_000), ("pong", 1_400)):
        assert at.main(["--task", task, "--out", str(tmp_path)]) == 0
        assert seen[-1] == labels
    assert at.main(["--task", "coinrun", "--labels", "300", "--out", str(tmp_path)]) == 0 and seen[-1] == 300


def test_a_finished_run_is_scored_by_its_final_policy_and_older_ones_can_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real (tiny) true-reward CoinRun run: its result holds its final policy's score over the
    game's final episodes; one without (finished before it existed) gets it from --final-eval."""
    pytest.importorskip("procgen", reason="needs the Procgen extra")
    at = _atari()
    monkeypatch.setitem(at.TASKS["coinrun"], "final_episodes", 2)
    monkeypatch.setattr(at, "EVAL_EPISODES", 1)
    out = ["--out", str(tmp_path)]
    assert (
        at.main(["--task", "coinrun", "--side", "true", "--steps", "1024", "--eval-interval", "1024", *out])
        == 0
    )
    result = tmp_path / "coinrun" / "true-seed0.json"
    r = json.loads(result.read_text())
    assert r["final_eval"]["episodes"] == 2 and 0.0 <= r["final_eval"]["score"] <= 10.0
    ends = r["final_eval"]["ends"]  # how each episode ended: a coin, a death or the time limit
    assert sum(ends.values()) == 2 and ends["scored"] * 10.0 / 2 == r["final_eval"]["score"]
    assert 0.1 < r["peak_memory_gib"] < 16  # what a run costs in memory, beside its wall time
    result.write_text(json.dumps({k: v for k, v in r.items() if k != "final_eval"}))
    assert at.main(["--task", "coinrun", "--final-eval", *out]) == 0
    again = json.loads(result.read_text())["final_eval"]
    assert again == r["final_eval"]  # the same policy over the same episodes
    older = {**r, "final_eval": {k: v for k, v in r["final_eval"].items() if k != "ends"}}
    result.write_text(json.dumps(older))  # scored before ends were counted: its policy is kept
    assert at.main(["--task", "coinrun", "--final-eval", *out]) == 0
    assert json.loads(result.read_text())["final_eval"] == r["final_eval"]


def test_episode_ends_tell_a_score_a_plain_end_and_a_time_limit_apart() -> None:
    at = _atari()
    ends = at.episode_ends([10.0, 0.0, 0.0, 0.0], [True, True, False, True], [False, False, True, False])
    assert ends == {"scored": 1, "ended": 2, "time_limit": 1}


def test_an_ablation_changes_one_option_of_the_learned_side_and_its_children_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = _atari()
    sets = ["loop.initial_steps_per_label=100", "trainer.adaptive_l2=true", "reward.output=tanh"]
    cfg = at.learned_config("pong", 0, tmp_path / "r", 1_000, 10, sets)
    assert cfg.loop.initial_steps_per_label == 100 and cfg.trainer.adaptive_l2 is True
    assert cfg.reward.output == "tanh"  # not JSON: kept as the string
    assert cfg.loop.hide_terminations and cfg.agent == at.agent_config()  # the rest of the setup kept
    for bad in ("loop.no_such_option=1", "initial_steps_per_label=100", "loop.fragment_length"):
        with pytest.raises(ValueError, match=r"section\.field=value"):
            at.learned_config("pong", 0, tmp_path / "r", 1_000, 10, [bad])
    jobs: list[list[str]] = []

    def run_jobs(js: list[tuple[str, list[str]]], *args: object, **kwargs: object) -> bool:
        jobs.extend(cmd for _, cmd in js)
        return False  # none failed

    monkeypatch.setattr("prefrl.run.jobs.run_jobs", run_jobs)
    monkeypatch.setattr(at, "random_score", lambda task, out: 0.0)
    argv = ["--task", "pong", "--seeds", "1", "--sides", "learned", "--out", str(tmp_path)]
    assert at.main([*argv, "--set", sets[0], "--set", sets[1]]) == 0
    (cmd,) = jobs
    assert cmd[-4:] == ["--set", sets[0], "--set", sets[1]]  # each run process applies them


def test_an_ablations_table_names_the_options_its_learned_side_ran_with(tmp_path: Path) -> None:
    at = _atari()
    root = tmp_path / "pong"
    root.mkdir()
    (root / "random.json").write_text(json.dumps({"random_return": -20.0}))
    _write(root, "learned-seed0", [[50_054, -15.0]], finished=True)
    result = root / "learned-seed0.json"
    r = json.loads(result.read_text())
    sets = ["loop.agent_reset_at=0.3", "loop.initial_steps_per_label=100"]
    result.write_text(json.dumps({**r, "overrides": sets, "train_wall_s": 5400.0, "peak_memory_gib": 5.24}))
    md = at.markdown(at.summarize(tmp_path, None))
    game = "| ALE/Pong-v5 (learned side: `loop.agent_reset_at=0.3`, `loop.initial_steps_per_label=100`) |"
    assert game in md
    assert "Training time of each finished run: ALE/Pong-v5 learned side 1.5 h, at most 5.2 GiB." in md


def test_a_stopped_learned_run_is_scored_by_its_newest_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--stopped-eval: a learned run stopped part-way (no result file) gets its newest
    checkpoint's policy scored as a final policy is, into <run>.stopped.json, and the table's
    copy keeps it; a finished run is left alone."""
    pytest.importorskip("procgen", reason="needs the Procgen extra")
    from prefrl.agents.policy_io import save_agent
    from prefrl.agents.sb3 import make_agent, make_vec_env

    at = _atari()
    monkeypatch.setitem(at.TASKS["coinrun"], "final_episodes", 2)
    root = tmp_path / "coinrun"
    t, cfg = at.TASKS["coinrun"], at.agent_config()
    venv = make_vec_env(t["env"], 1, t["env_kwargs"], seed=0)
    for seed, newest in ((0, "iter_000003"), (1, "iter_000001")):
        for it in ("iter_000001", newest):
            ckpt = root / f"learned-seed{seed}" / "checkpoints" / it
            ckpt.mkdir(parents=True, exist_ok=True)
            save_agent(make_agent(cfg, venv, seed=seed), ckpt / "policy.zip", cfg)
            (ckpt / "state.json").write_text(json.dumps({"env_steps": 1000 * int(it[-1])}))
        (root / f"learned-seed{seed}" / "checkpoints" / "LATEST").write_text(newest)
        (root / f"learned-seed{seed}" / "evaluations.csv").write_text("step,true_return\n50000,4.0\n")
    venv.close()
    (root / "learned-seed1.json").write_text(json.dumps({"evaluations": [[50_000, 4.0]]}))  # finished
    assert at.main(["--task", "coinrun", "--stopped-eval", "--out", str(tmp_path)]) == 0
    stopped = json.loads((root / "learned-seed0.stopped.json").read_text())
    assert stopped["seed"] == 0 and stopped["env_steps"] == 3000 and stopped["checkpoint"] == "iter_000003"
    ev = stopped["final_eval"]
    assert ev["episodes"] == 2 and sum(ev["ends"].values()) == 2 and ev["score"] == 5.0 * ev["ends"]["scored"]
    assert not (root / "learned-seed1.stopped.json").exists()
    (root / "random.json").write_text(json.dumps({"random_return": 5.0}))
    (root / "learned-seed1.json").unlink()
    at.summarize(tmp_path, tmp_path / "copy")
    assert json.loads((tmp_path / "copy" / "coinrun" / "learned-seed0.stopped.json").read_text()) == stopped
