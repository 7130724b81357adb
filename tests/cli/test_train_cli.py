"""``prefrl train`` configuration and bad input: each a clear error, nothing overwritten."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

import gymnasium as gym
import pytest
from stable_baselines3.common.base_class import BaseAlgorithm

from prefrl.cli.main import main
from prefrl.envs.config import EnvConfig
from prefrl.rewards.config import RewardNetConfig
from prefrl.rewards.mlp import MLPReward
from prefrl.run import config as run_config
from prefrl.run import train as run
from tests.narrow import present


def test_print_config_with_config_file_and_override(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["train", "--print-config", "--loop.total-labels", "7"]) == 0
    cfg = json.loads(capsys.readouterr().out)
    assert (
        cfg["env"]["id"] == "Pendulum-v1"
        and cfg["agent"]["algo"] == "auto"
        and cfg["loop"]["total_labels"] == 7
        and cfg["print_config"] is False  # the printed file trains when passed back with --config
    )
    cfg["loop"]["total_labels"] = 33
    cfg["agent"]["algo"] = "td3"
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    assert main(["train", "--config", str(tmp_path / "c.json"), "--agent.algo", "ppo", "--print-config"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["loop"]["total_labels"] == 33 and out["agent"]["algo"] == "ppo"


def test_help_documents_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = capsys.readouterr().out
    for opt in ["--loop.transition-oversampling", "--loop.max-labels-kept",
                "--loop.initial-label-frac",
                "--loop.initial-epoch-multiplier", "--loop.exploration-frac", "--trajectory-path",
                "--save-preferences", "--agent-path", "--loop.active-selection-oversampling",
                "--loop.uncertainty-measure", "--loop.checkpoint-interval",
                "--loop.query-schedule", "--teacher", "--store", "--resume"]:  # fmt: skip
        assert opt in text, opt
    for path_opt in ["--run-dir DIR", "--resume DIR", "--config FILE", "--store PATH|URL"]:
        assert path_opt in text, path_opt  # a metavar naming what to pass, not {None}|STR
    assert "``" not in text  # no raw reStructuredText markup


def test_help_says_what_and_default_not_results(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 34.4: measured results (``0.62 -> 0.99``) belong in docs/benchmarks/, not --help."""
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert not re.search(r"\d\.\d+ ?(->|→) ?\d", text), re.search(r".{60}\d\.\d+ ?(->|→) ?\d.{20}", text)
    assert "docs/benchmarks/defaults.md" in text  # where the evidence is


def test_help_rewraps_wrapped_docstring_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """A docstring wrapped in the source is one paragraph in --help, rewrapped to the terminal:
    not cut after the source line's last word ("... and report" / "its true return")."""
    import re

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    lines = [re.sub(r"[│╭╰─╮╯]", "", x).strip() for x in capsys.readouterr().out.splitlines()]
    at = next(i for i, x in enumerate(lines) if x.startswith("--final-agent-steps"))
    assert lines[at + 1].startswith("After training, train a fresh agent"), lines[at : at + 4]
    assert " ".join(lines[at + 1 : at + 4]).startswith(
        "After training, train a fresh agent this many steps on the final learned reward and report its"
    )
    assert not any(x.startswith("its true return") for x in lines), "the source's line break was kept"


@pytest.mark.parametrize(
    "command",
    [["train"], ["rollouts"], ["evaluate"], ["interpret"], ["interpret", "report"], ["interpret", "curves"],
     ["interpret", "evaluate"], ["interpret", "shape"]],
)  # fmt: skip
def test_help_has_no_set_metavars_or_markup(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 15.8: --help said {None}|INT, {None}|{[INT [INT ...]]} and showed ``markup``."""
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    text = capsys.readouterr().out
    assert "{None}" not in text and "``" not in text, text


def test_every_command_names_the_environment_env_id(capsys: pytest.CaptureFixture[str]) -> None:
    """One spelling: train, rollouts and interpret all take --env.id."""
    for command in (["train"], ["rollouts"], ["interpret", "curves"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        assert "--env.id" in capsys.readouterr().out, command


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--env.id", "Pendulum-v9"], "unknown Gymnasium environment id 'Pendulum-v9'"),
        (["--env.id", "CartPole-v1", "--agent.algo", "sac"], "'sac' needs a continuous"),
        (["--env.kwargs", "{bad"], "env kwargs must be a JSON object"),
        (["--agent.algo", "dqn"], "agent 'dqn' needs a Discrete action space"),
        (["--agent.algo", "dpg"], "unknown agent 'dpg'"),
        (["--teacher", "web"], "--store"),
        (
            ["--loop.active-selection", "True", "--reward.ensemble-size", "1"],
            "needs --reward.ensemble-size >= 2",
        ),
        (["--loop.seed", "3"], "--loop.seed is set from --seed"),
        (["--trainer.seed=3"], "--trainer.seed is set from --seed"),
        (["--env.id", "CartPole-v1", "--reward.kind", "cnn"], "needs uint8 image observations"),
        (["--device", "tpu"], "--device 'tpu': not a device"),
        (["--device", "meta"], "prefrl runs on cpu or cuda"),
        *([] if __import__("torch").cuda.is_available() else [(["--device", "cuda"], "no CUDA device")]),
    ],
)
def test_bad_input_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                    message: str) -> None:  # fmt: skip
    code = main(["train", "--run-dir", str(tmp_path / "r"), *args])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r").exists()  # refused before any file is written: the fixed command runs


@pytest.mark.parametrize("args", [["--loop.query-schedule", "linear"], ["--loop.uncertainty-measure", "x"]])
def test_bad_choice_is_refused_at_parse_time_with_the_choices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    assert main(["train", "--run-dir", str(tmp_path / "r"), *args]) == 2
    assert "invalid choice" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_existing_run_dir_needs_force_and_resume_needs_same_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "keep.txt").write_text("precious")
    assert main(["train", "--run-dir", str(run)]) == 2
    assert "--force" in capsys.readouterr().err and (run / "keep.txt").read_text() == "precious"
    cfg = run_config.config_to_dict(run_config.TrainConfig())
    (run / "config.json").write_text(json.dumps(cfg))
    assert main(["train", "--resume", str(run), "--loop.total-labels", "99"]) == 2
    err = capsys.readouterr().err
    assert "--loop.total-labels 20 -> 99" in err and "the run's config.json has the first value" in err
    (run / "config.json").write_text("{not json")
    assert main(["train", "--resume", str(run)]) == 2
    assert "corrupt run config" in capsys.readouterr().err


def test_rollouts_then_offline_reward_learning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rollouts", "--out", str(tmp_path / "t.npz"), "--episodes", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["steps"] == 400
    run = tmp_path / "off"
    args = [
        "--trajectory-path",
        str(tmp_path / "t.npz"),
        "--loop.total-labels",
        "40",
        "--loop.iterations",
        "2",
    ]
    assert main(["train", "--run-dir", str(run), "--no-progress", *args]) == 0
    rep = json.loads((run / "report.json").read_text())
    assert rep["labels_used"] == 40 and "policy" not in rep["files"]
    assert rep["reward_accuracy"] > 0.7  # the learned reward ranks fresh clips like the true one
    # with the progress bar: it counts reward updates (no environment steps happen offline), and
    # the default run directory is named for what ran (no agent trains)
    capsys.readouterr()
    import os

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main(["train", *args]) == 0
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    assert "2/2" in err and "iteration" in err and "/15000" not in err
    [made] = list((tmp_path / "runs").iterdir())
    assert made.name.startswith("Pendulum-v1-offline-")


def test_evaluate_needs_a_run_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", str(tmp_path)]) == 2
    assert "config.json" in capsys.readouterr().err


def test_evaluate_measures_true_return_and_records_video(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from prefrl.agents.policy_io import save_agent
    from prefrl.agents.sb3 import AgentConfig, make_agent, make_vec_env

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(run_config.config_to_dict(run_config.TrainConfig())))
    save_agent(make_agent(AgentConfig(net_arch=[8]), make_vec_env("Pendulum-v1")), run / "policy.zip")
    assert main(["evaluate", str(run), "--episodes", "2", "--videos", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["episodes"] == 2 and -2000 < out["true_return"] <= 0 and out["random_return"] < 0
    assert out["eval"] == "deterministic"  # continuous actions: the mean action
    assert (run / "videos" / "episode_0.mp4").stat().st_size > 1000
    assert json.loads((run / "evaluation.json").read_text()) == out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from prefrl import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"prefrl {__version__}"


def test_ctrl_c_prints_the_resume_command_not_a_traceback(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "prefrl.cli.main", "train", "--run-dir", str(run), "--no-progress",
           "--loop.total-steps", "40000", "--loop.iterations", "40", "--loop.initial-steps", "200",
           "--loop.total-labels", "10", "--loop.fragment-length", "10", "--trainer.epochs", "1",
           "--agent.algo", "ppo", "--agent.n-steps", "64", "--agent.batch-size", "64"]  # fmt: skip
    # a shell running the tests in the background ignores SIGINT for its children: undo that, as a
    # terminal's Ctrl-C reaches a foreground process
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    try:
        deadline, latest = time.time() + 120, run / "checkpoints" / "LATEST"
        while not latest.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert latest.exists(), present(proc.stderr).read() if proc.poll() is not None else ""
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert f"prefrl train --resume {run}" in err and "from its last checkpoint" in err
    assert (run / "preferences.npz").exists()


def test_web_teacher_says_where_to_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "labels.db")
    cfg = run_config.TrainConfig(teacher="web", store=store, run_dir=str(tmp_path / "run"), progress=False)
    run.build_run(cfg)
    err = capsys.readouterr().err
    assert f"prefrl label serve --store {store}" in err and "http://127.0.0.1:8000/" in err
    assert f"prefrl label add-user --store {store} NAME" in err


def _needs_extra(**_: Any) -> NoReturn:
    import gymnasium as gym

    raise gym.error.DependencyNotInstalled('FooSim is not installed, run `pip install "foosim"`')


def test_missing_optional_dependency_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import gymnasium as gym

    if "prefrl-test/NeedsExtra-v0" not in gym.registry:
        gym.register("prefrl-test/NeedsExtra-v0", entry_point=_needs_extra)
    assert main(["train", "--env.id", "prefrl-test/NeedsExtra-v0", "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "needs a package that is not installed" in err and 'pip install "foosim"' in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(("env_id", "want"), [("CartPole-v1", "tanh"), ("Pendulum-v1", "linear")])
def test_auto_reward_output_is_bounded_where_episodes_terminate(env_id: str, want: str) -> None:
    """One probe of random actions settles both: a bounded reward output, and no extra random
    steps, where they reach a termination; a linear output and 100 random steps per label where
    episodes run to their time limit."""
    cfg = run_config.TrainConfig(env=EnvConfig(id=env_id))
    assert cfg.reward.output == "auto" and cfg.loop.initial_steps_per_label is cfg.trainer.l2_init is None
    from prefrl.run.resolve import resolve

    out = resolve(cfg)
    assert out.reward.output == want
    assert out.loop.initial_steps_per_label == (0 if want == "tanh" else 100)
    assert out.trainer.l2_init == (0.0 if want == "tanh" else 0.01)


@pytest.mark.parametrize(
    ("args", "want"),
    [
        (["--env.id", "Pendulum-v1"], (3.0, "labels", 0.75)),  # never ends, a state reward: on
        (["--env.id", "CartPole-v1"], (0.0, "steps", 0.0)),  # random episodes end: off
        (["--env.id", "prefrl/MovingDot-v0"], (0.0, "steps", 0.0)),  # an image reward: off
        (["--loop.uncertainty-penalty", "0.1"], (0.0, "steps", 0.0)),  # pessimism: off
        (["--loop.pretrain-steps", "1000"], (0.0, "steps", 0.0)),  # PEBBLE's pre-training explored: off
        (["--reward.ensemble-size", "1"], (0.0, "steps", 0.0)),  # no disagreement to pay
        (["--loop.exploration-bonus", "0.05"], (0.05, "steps", 0.0)),  # RUNE's as published
        (["--loop.exploration-bonus-gate", "0.9"], (3.0, "labels", 0.9)),  # a named gate is kept
    ],
)
def test_the_gated_bonus_is_on_where_the_broad_first_reward_is(args: list[str], want: tuple) -> None:
    """``--loop.exploration-bonus`` auto: RUNE's bonus at 3, fading with the labels and gated by
    the fresh labels' accuracy, where random episodes only meet time limits and the reward reads
    state vectors; off elsewhere; a weight given keeps RUNE's own schedule and no gate."""
    from prefrl.run.resolve import resolve

    loop = resolve(run_config.parse_args(args)).loop
    assert (loop.exploration_bonus, loop.exploration_bonus_schedule, loop.exploration_bonus_gate) == want


def test_headless_rendering_prints_no_sdl_error() -> None:
    """Issue 15.5: drawing clips on a machine without a display printed SDL's alarming
    "XDG_RUNTIME_DIR is invalid" line first thing."""
    drop = ("DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "SDL_VIDEODRIVER")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    code = (
        "from prefrl.cli.main import headless_rendering; headless_rendering(); import gymnasium as gym; "
        "e = gym.make('Pendulum-v1', render_mode='rgb_array'); e.reset(seed=0); "
        "assert e.render().shape == (500, 500, 3)"
    )
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "XDG_RUNTIME_DIR" not in r.stderr, r.stderr


def test_device_auto_is_resolved_recorded_and_followed_by_the_agent(tmp_path: Path) -> None:
    import torch

    cfg = run_config.parse_args(["--run-dir", str(tmp_path / "r"), "--loop.total-steps", "600",
                                "--loop.initial-steps", "200", "--no-progress"])  # fmt: skip
    assert cfg.device == "auto" and cfg.agent.device == "auto"
    r = run.build_run(cfg)
    want = "cuda" if torch.cuda.is_available() else "cpu"
    conf = json.loads((tmp_path / "r" / "config.json").read_text())
    assert conf["device"] == want and conf["agent"]["device"] == want  # a resume uses the same
    agent = r.loop.agent
    assert isinstance(agent, BaseAlgorithm)  # an SB3 agent
    assert r.loop.net.device.type == want and agent.device.type == want
    r.logger.close()


def test_auto_next_obs_input_is_resolved_and_recorded(tmp_path: Path) -> None:
    """--reward.use-next-obs auto: the MLP reward reads s' (config.json says so, and so does the
    net), an explicit choice is kept, and a resumed run whose config predates the option keeps
    the inputs its network was built with."""
    base = ["--loop.total-steps", "600", "--loop.initial-steps", "200", "--no-progress"]
    cfg = run_config.parse_args(["--run-dir", str(tmp_path / "a"), *base])
    assert cfg.reward.use_next_obs is None
    r = run.build_run(cfg)
    assert json.loads((tmp_path / "a" / "config.json").read_text())["reward"]["use_next_obs"] is True
    assert isinstance(r.loop.net, MLPReward) and r.loop.net.use[2] is True
    r.logger.close()
    cfg = run_config.parse_args(["--run-dir", str(tmp_path / "b"), "--reward.use-next-obs", "False", *base])
    r = run.build_run(cfg)
    assert isinstance(r.loop.net, MLPReward) and r.loop.net.use[2] is False
    r.logger.close()
    unresolved = RewardNetConfig().build(*_spaces("Pendulum-v1"))
    assert isinstance(unresolved, MLPReward) and not unresolved.use[2]  # unresolved: as before


def _spaces(env_id: str) -> tuple[gym.spaces.Space[object], gym.spaces.Space[object]]:
    import gymnasium as gym

    env = gym.make(env_id)
    return env.observation_space, env.action_space
