"""``--threads`` on every ``prefrl`` command that computes with torch: it is in ``--help``, and running
the command sets the process's torch, BLAS and OpenMP threads (and the ``*_NUM_THREADS`` variables
child processes read) to it, on tiny real inputs; a bad value is a one-line error."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from prefrl.agents.policy_io import save_agent
from prefrl.agents.rollout import collect_episodes
from prefrl.agents.sb3 import AgentConfig, make_agent, make_vec_env
from prefrl.cli.main import main as prefrl_main
from prefrl.rewards import MLPReward, save_reward_net
from prefrl.run.config import TrainConfig, config_to_dict
from prefrl.threads import ENV_VARS

THREADS = 3  # neither torch's default on the test machines (their cores) nor the tests' (1)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Pendulum run directory as ``prefrl train`` leaves it: config, an (untrained) SAC policy in
    prefrl's format, a reward file and a trajectory file."""
    run = tmp_path_factory.mktemp("run")
    (run / "config.json").write_text(json.dumps(config_to_dict(TrainConfig())))
    venv = make_vec_env("Pendulum-v1", 1)
    config = AgentConfig(algo="sac", net_arch=[16])
    save_agent(make_agent(config, venv), run / "policy.zip", config)
    env = gym.make("Pendulum-v1")
    save_reward_net(
        MLPReward(env.observation_space, env.action_space, hidden=(16,)), run / "reward.safetensors"
    )
    collect_episodes(env, n_episodes=1, seed=0).save(run / "episodes.npz")
    return run


@pytest.fixture
def process_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Give the test process its threads and variables back after a command changed them."""
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    with threadpool_limits(limits=None):  # restores the BLAS/OpenMP counts it found on exit
        yield
    torch.set_num_threads(1)


def commands(run: Path, out: Path) -> dict[str, list[str]]:
    """Each command on a tiny input that ends in a second or two."""
    return {
        "evaluate": ["evaluate", str(run), "--episodes", "1"],
        "rollouts": ["rollouts", "--out", str(out / "t.npz"), "--env.id", "Pendulum-v1", "--steps", "20"],
        "report": ["report", str(run), "--out", str(out / "page"), "--pairs", "0", "--no-video",
                   "--episodes", "1"],
        "interpret": [
            "interpret", "curves", "--reward", str(run / "reward.safetensors"),
            "--trajectories", str(run / "episodes.npz"), "--out", str(out / "interpret"),
        ],
        "train": [
            "train", "--reward-from", str(run), "--run-dir", str(out / "agent"), "--loop.total-steps", "64",
            "--loop.initial-steps", "32", "--eval-episodes", "1", "--no-page", "--no-progress",
        ],
    }  # fmt: skip


@pytest.mark.parametrize("name", ["evaluate", "rollouts", "report", "interpret", "train"])
def test_threads_is_in_every_commands_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [name, "curves", "--help"] if name == "interpret" else [name, "--help"]
    with pytest.raises(SystemExit) as e:
        prefrl_main(argv)
    assert e.value.code == 0
    assert "--threads INT" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["evaluate", "rollouts", "report", "interpret", "train"])
def test_threads_sets_torch_blas_and_openmp_threads(
    name: str, run: Path, tmp_path: Path, process_threads: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert torch.get_num_threads() == 1
    assert prefrl_main([*commands(run, tmp_path)[name], "--threads", str(THREADS)]) == 0, (
        capsys.readouterr().err
    )
    assert torch.get_num_threads() == THREADS
    pools = {p["user_api"]: p["num_threads"] for p in threadpool_info()}
    assert pools == {"blas": THREADS, "openmp": THREADS}  # NumPy's OpenBLAS and torch's libgomp
    assert {os.environ[v] for v in ENV_VARS} == {str(THREADS)}


def test_default_is_one_thread(run: Path, tmp_path: Path, process_threads: None) -> None:
    torch.set_num_threads(2)
    assert prefrl_main(commands(run, tmp_path)["rollouts"]) == 0
    assert torch.get_num_threads() == 1
    assert {p["num_threads"] for p in threadpool_info()} == {1}


@pytest.mark.parametrize("bad", ["0", "-2"])
def test_a_bad_thread_count_is_a_one_line_error(
    bad: str, run: Path, tmp_path: Path, process_threads: None, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("evaluate", "rollouts", "report", "interpret", "train"):
        assert prefrl_main([*commands(run, tmp_path)[name], "--threads", bad]) == 2
        err = capsys.readouterr().err.strip()
        assert err == f"prefrl {name}: error: --threads must be a whole number of threads >= 1, got {bad}"
    assert torch.get_num_threads() == 1  # nothing was changed
