"""RL Zoo's Atari treatment of discrete actions on images: policies are evaluated by sampled
actions there (the mean action elsewhere; sampled evaluations are reproducible and leave torch's
generator alone), and PPO / A2C get an entropy bonus."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

import prefrl  # noqa: F401  (registers prefrl/MovingDot-v0)
from prefrl.agents.evaluate import evaluate_returns, evaluation_mode, samples_actions
from prefrl.agents.sb3 import AgentConfig, make_agent, make_env, make_vec_env


class DictImageEnv(gym.Env):
    """A Dict observation holding an image and a vector; ``Discrete`` or ``Box`` actions."""

    def __init__(self, discrete: bool = True) -> None:
        self.observation_space = spaces.Dict(
            {"image": spaces.Box(0, 255, (8, 8, 3), np.uint8), "vec": spaces.Box(-1, 1, (2,), np.float32)}
        )
        self.action_space = spaces.Discrete(3) if discrete else spaces.Box(-1, 1, (2,), np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        return self.observation_space.sample(), 0.0, False, True, {}


@pytest.mark.parametrize(
    ("env_id", "kwargs", "want"),
    [
        ("prefrl/MovingDot-v0", {}, "sampled"),  # Discrete actions, uint8 images
        ("prefrl/MovingDot-v0", {"obs_type": "state"}, "deterministic"),  # the same task from a vector
        ("CartPole-v1", {}, "deterministic"),
        ("Pendulum-v1", {}, "deterministic"),
    ],
)
def test_discrete_actions_on_images_are_evaluated_by_sampling(env_id: str, kwargs: dict, want: str) -> None:
    assert evaluation_mode(env_id, kwargs) == want


def test_a_dict_observation_with_an_image_counts_as_images() -> None:
    assert samples_actions(DictImageEnv(discrete=True))
    assert not samples_actions(DictImageEnv(discrete=False))


def test_sampled_evaluation_is_reproducible_and_leaves_torch_rng_alone() -> None:
    kwargs = {"size": 16, "max_steps": 30}
    agent = make_agent(AgentConfig(algo="ppo", n_steps=64, batch_size=32), make_vec_env(
        "prefrl/MovingDot-v0", 1, kwargs), seed=0)  # fmt: skip
    assert samples_actions(make_env("prefrl/MovingDot-v0", kwargs))
    state = torch.get_rng_state()
    auto = evaluate_returns("prefrl/MovingDot-v0", agent, 4, env_kwargs=kwargs)
    assert torch.equal(torch.get_rng_state(), state)
    again = evaluate_returns("prefrl/MovingDot-v0", agent, 4, env_kwargs=kwargs, deterministic=False)
    np.testing.assert_array_equal(auto, again)  # auto = sampled, and the same draws each call
    argmax = evaluate_returns("prefrl/MovingDot-v0", agent, 4, env_kwargs=kwargs, deterministic=True)
    assert not np.array_equal(auto, argmax)  # an untrained policy's argmax walks one way


@pytest.mark.parametrize(
    ("env_id", "kwargs", "algo", "agent_cfg", "learned", "want"),
    [
        ("prefrl/MovingDot-v0", {"size": 16}, "ppo", {}, True, 0.01),  # auto: learned reward, discrete images
        ("prefrl/MovingDot-v0", {"size": 16}, "a2c", {}, True, 0.01),
        ("prefrl/MovingDot-v0", {"size": 16}, "ppo", {}, False, 0.0),  # the true reward: SB3's default
        ("prefrl/MovingDot-v0", {"obs_type": "state"}, "ppo", {}, True, 0.0),  # the same task from a vector
        ("CartPole-v1", {}, "ppo", {}, True, 0.0),
        ("CartPole-v1", {}, "ppo", {"ent_coef": 0.05}, False, 0.05),  # as given
        ("prefrl/MovingDot-v0", {"size": 16}, "ppo", {"extra": '{"ent_coef": 0.2}'}, True, 0.2),  # extra wins
    ],
)
def test_on_policy_agents_on_a_learned_reward_over_discrete_images_get_an_entropy_bonus(
    env_id: str, kwargs: dict, algo: str, agent_cfg: dict, learned: bool, want: float
) -> None:
    from prefrl.agents.learned_reward import LearnedRewardVecEnv
    from prefrl.agents.reward_signal import LearnedReward
    from prefrl.rewards import CNNReward, MLPReward
    from prefrl.rewards.spaces import is_image_space

    venv = make_vec_env(env_id, 1, kwargs)
    if learned:
        obs, act = venv.observation_space, venv.action_space
        net = (CNNReward(obs, act, features="spatial", channels=(4,), kernels=(1,), strides=(1,))
               if is_image_space(obs) else MLPReward(obs, act))  # fmt: skip
        venv = LearnedRewardVecEnv(venv, LearnedReward(net))
    agent = make_agent(AgentConfig(algo=algo, n_steps=32, batch_size=32, **agent_cfg), venv)
    assert isinstance(agent, OnPolicyAlgorithm) and agent.ent_coef == pytest.approx(want)
