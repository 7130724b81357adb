"""The environment is probed once (issue 46, item 4): ``prefrl train`` makes its environment once
to learn what resolving and building the run need (spaces, whether random episodes terminate,
how policies are evaluated), then only the environments that train and evaluate.

Before, a run made it three times before training (the spaces for resolving, a random rollout
for the reward's output, the spaces again for building) and once more at the end (the
evaluation mode): 10 constructions for the run below, 7 now."""

from __future__ import annotations

import inspect
import json
from collections import Counter
from pathlib import Path

import gymnasium as gym
from gymnasium.envs.classic_control.pendulum import PendulumEnv

from prefrl.cli.main import main

COUNTED = "prefrl-test/CountedPendulum-v0"
BUILT: list[str] = []
"""For each construction of the counted environment in this process, the prefrl function that
asked for it."""


def _builder() -> str:
    """The prefrl function that made the environment (``make_env`` and the vector env's factory
    are only the way there)."""
    for frame in inspect.stack(0)[2:]:
        module = str(frame.frame.f_globals.get("__name__", ""))
        if module.startswith("prefrl.") and frame.function not in ("make_env", "<lambda>"):
            return frame.function
    return "?"


class CountedPendulum(PendulumEnv):
    """Pendulum-v1, recording who makes it."""

    def __init__(self, render_mode: str | None = None, g: float = 10.0) -> None:
        super().__init__(render_mode=render_mode, g=g)
        BUILT.append(_builder())


if COUNTED not in gym.registry:
    gym.register(COUNTED, entry_point=f"{__name__}:CountedPendulum", max_episode_steps=200)

TINY = ["--loop.total-steps", "600", "--loop.initial-steps", "200", "--loop.total-labels", "4",
        "--loop.iterations", "2", "--loop.fragment-length", "20", "--agent.net-arch", "16", "16",
        "--agent.batch-size", "32", "--reward.hidden", "16", "16", "--trainer.epochs", "2",
        "--eval-episodes", "1", "--no-page", "--no-progress", "--threads", "1"]  # fmt: skip


def test_a_run_makes_its_environment_once_before_the_ones_it_trains_on(tmp_path: Path) -> None:
    BUILT.clear()
    run = tmp_path / "r"
    assert main(["train", "--env.id", COUNTED, "--run-dir", str(run), "--agent.n-envs", "2", *TINY]) == 0
    # the probe (spaces and the random rollout that picks the reward's output), the loop's side
    # environment, the agent's 2 training environments; then the final evaluation of the policy
    # and of random actions, and the fresh clips of the held-out reward accuracy
    assert BUILT == ["probe_env", "build_run", "make_vec_env", "make_vec_env", "evaluate_episodes",
                     "evaluate_episodes", "reward_accuracy"]  # fmt: skip
    conf = json.loads((run / "config.json").read_text())
    assert conf["reward"]["output"] == "linear"  # the probe's rollout: random swings never terminate
    assert conf["loop"]["initial_steps_per_label"] == 100 and conf["agent"]["algo"] == "sac"
    assert json.loads((run / "report.json").read_text())["eval"] == "deterministic"  # from the probe

    BUILT.clear()  # an agent on the finished run's reward: its environment, probed once as well
    more = ["--loop.total-steps", "300", "--eval-episodes", "1", "--no-page", "--no-progress"]
    assert main(["train", "--reward-from", str(run), "--run-dir", str(tmp_path / "f"), *more]) == 0
    assert Counter(BUILT) == {"probe_env": 1, "make_vec_env": 1, "evaluate_episodes": 2, "reward_accuracy": 1}
    assert BUILT[0] == "probe_env"
