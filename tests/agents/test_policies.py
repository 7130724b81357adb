"""The agent's image feature extractor (``--agent.cnn``): keypoints for small images."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.dqn.policies import DQNPolicy

import prefrl  # noqa: F401  (registers prefrl/MovingDot-v0)
from prefrl.agents.evaluate import evaluate_returns
from prefrl.agents.policies import SpatialSoftmaxCNN, check_cnn, resolve_cnn
from prefrl.agents.policy_io import load_agent, save_agent
from prefrl.agents.sb3 import AgentConfig, make_agent, make_vec_env
from prefrl.rewards.layers import standardize_maps
from tests.narrow import array


def image(shape: tuple[int, ...]) -> spaces.Box:
    return spaces.Box(0, 255, shape, np.uint8)


@pytest.mark.parametrize(
    ("shape", "backend", "want"),
    [((40, 40, 3), "sb3", "spatial"), ((3, 64, 64), "sb3", "spatial"), ((3, 65, 65), "sb3", "nature"),
     ((4, 84, 84), "sb3", "nature"), ((84, 84, 3), "sb3", "nature"), ((40, 40, 3), "sbx", "nature"),
     ((3,), "sb3", "nature")],
)  # fmt: skip
def test_auto_extractor_is_chosen_by_image_size_and_backend(
    shape: tuple[int, ...], backend: str, want: str
) -> None:
    space = image(shape) if len(shape) == 3 else spaces.Box(-1.0, 1.0, shape)
    assert resolve_cnn("auto", space, backend) == want
    assert resolve_cnn("nature", space, backend) == "nature"


def test_bad_or_unbuildable_extractor_is_refused_with_the_option_named() -> None:
    with pytest.raises(ValueError, match=r"unknown --agent\.cnn 'resnet'"):
        check_cnn("resnet")
    with pytest.raises(ValueError, match=r"--agent\.cnn spatial is a PyTorch extractor"):
        AgentConfig(backend="sbx", cnn="spatial")


def test_keypoint_extractor_reads_where_the_dot_is() -> None:
    space = image((3, 40, 40))
    ext = SpatialSoftmaxCNN(space, features_dim=16)
    x = torch.zeros(2, 3, 40, 40)
    x[0, 0, 4:7, 4:7] = 1.0
    x[1, 0, 30:33, 30:33] = 1.0
    out = ext(x)
    assert out.shape == (2, 16) and not torch.allclose(out[0], out[1])


def test_keypoints_point_at_the_objects_before_any_training() -> None:
    """Standardised maps: an untrained extractor's keypoint of the dot's channel is the dot
    (not the image centre, as an unsharpened softmax over 400 positions would give)."""
    ext = SpatialSoftmaxCNN(image((3, 40, 40)), features_dim=16)
    x = torch.zeros(2, 3, 40, 40)
    x[0, 0, 2:5, 2:5] = 1.0  # top left: about (-0.9, -0.9)
    x[1, 0, 34:37, 30:33] = 1.0  # bottom right, x < y
    kp = ext.keypoints(x)  # [2, 3 + 8, 2]
    assert kp.shape == (2, 11, 2)
    assert (kp[0, 0] < -0.75).all(), kp[0, 0]
    assert kp[1, 0, 0] > 0.5 and kp[1, 0, 1] > kp[1, 0, 0], kp[1, 0]
    torch.testing.assert_close(kp[:, 2], torch.zeros(2, 2))  # an empty channel: the centre


def test_standardised_maps_have_zero_mean_and_unit_spread() -> None:
    x = torch.rand(2, 3, 5, 7) * 10 + 3
    x[1, 2] = 4.0  # a constant map
    z = standardize_maps(x)
    torch.testing.assert_close(z[0].mean((1, 2)), torch.zeros(3), atol=1e-5, rtol=0)
    torch.testing.assert_close(z[0].std((1, 2)), torch.ones(3), atol=1e-3, rtol=0)
    assert torch.equal(z[1, 2], torch.zeros(5, 7))
    with pytest.raises(ValueError, match=r"\[B, C, H, W\]"):
        standardize_maps(torch.zeros(3, 4, 4))


@pytest.mark.slow
def test_ppo_learns_the_moving_dot_from_pixels_with_keypoints() -> None:
    """True reward, 20,000 steps: well above a random policy (about 0; 11-25 after 100,000
    steps with keypoints of three random 3x3 convolutions, 65-115 with these)."""
    venv = make_vec_env("prefrl/MovingDot-v0", 1, seed=1)
    agent = make_agent(AgentConfig(algo="ppo"), venv, seed=1)
    agent.learn(total_timesteps=20_000)
    assert evaluate_returns("prefrl/MovingDot-v0", agent, 5).mean() > 30


def test_ppo_on_the_moving_dot_trains_the_keypoint_extractor() -> None:
    venv = make_vec_env("prefrl/MovingDot-v0", 1)
    agent = make_agent(AgentConfig(algo="ppo", n_steps=128, batch_size=64), venv, seed=0)
    ext = agent.policy.features_extractor
    assert isinstance(ext, SpatialSoftmaxCNN)
    before = {k: v.clone() for k, v in ext.named_parameters()}
    agent.learn(total_timesteps=256)
    assert all(not torch.equal(v, before[k]) for k, v in ext.named_parameters())
    nature = make_agent(AgentConfig(algo="ppo", n_steps=128, batch_size=64, cnn="nature"), venv, seed=0)
    assert not isinstance(nature.policy.features_extractor, SpatialSoftmaxCNN)
    obs = array(venv.reset())
    assert gym.spaces.Discrete(5).contains(int(agent.predict(obs, deterministic=True)[0][0]))


def test_images_too_small_for_the_nature_cnn_get_keypoints_not_an_mlp() -> None:
    """A 16x16 moving dot: SB3's Nature CNN needs 36 px, the keypoint extractor reads it."""
    venv = make_vec_env("prefrl/MovingDot-v0", 1, {"size": 16})
    agent = make_agent(AgentConfig(algo="ppo", n_steps=64, batch_size=32), venv, seed=0)
    assert isinstance(agent.policy.features_extractor, SpatialSoftmaxCNN)
    before = {k: v.clone() for k, v in agent.policy.features_extractor.named_parameters()}
    agent.learn(total_timesteps=128)
    ext = agent.policy.features_extractor
    assert all(not torch.equal(v, before[k]) for k, v in ext.named_parameters())
    nature = make_agent(AgentConfig(algo="ppo", n_steps=64, batch_size=32, cnn="nature"), venv, seed=0)
    assert type(nature.policy.features_extractor).__name__ == "FlattenExtractor"  # MlpPolicy, as before


def test_vector_observations_keep_the_plain_mlp_policy() -> None:
    venv = make_vec_env("CartPole-v1", 1)
    agent = make_agent(AgentConfig(algo="ppo", n_steps=64, batch_size=32, cnn="spatial"), venv, seed=0)
    assert type(agent.policy).__name__ == "ActorCriticPolicy"  # MlpPolicy
    assert not isinstance(agent.policy.features_extractor, SpatialSoftmaxCNN)
    assert "features_extractor_class" not in agent.policy_kwargs


@pytest.mark.parametrize("algo", ["a2c", "dqn"])
def test_other_pixel_agents_get_the_keypoint_extractor(algo: str) -> None:
    venv = make_vec_env("prefrl/MovingDot-v0", 1)
    agent = make_agent(AgentConfig(algo=algo, n_steps=16, buffer_size=100), venv, seed=0)
    policy = agent.policy
    assert isinstance(policy, DQNPolicy) == (algo == "dqn")
    nets = [policy.q_net, policy.q_net_target] if isinstance(policy, DQNPolicy) else [policy]
    assert all(isinstance(n.features_extractor, SpatialSoftmaxCNN) for n in nets)


def test_saved_keypoint_policy_loads_and_acts_the_same(tmp_path: Path) -> None:
    venv = make_vec_env("prefrl/MovingDot-v0", 1, seed=3)
    agent = make_agent(AgentConfig(algo="ppo", n_steps=64, batch_size=32), venv, seed=0)
    save_agent(agent, tmp_path / "policy.zip")
    loaded = load_agent("ppo", tmp_path / "policy.zip", venv)
    assert isinstance(loaded.policy.features_extractor, SpatialSoftmaxCNN)
    obs = np.stack([array(venv.reset()) for _ in range(4)])[:, 0]  # [4, H, W, C]
    np.testing.assert_array_equal(
        agent.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0]
    )


@pytest.mark.skipif(importlib.util.find_spec("sbx") is None, reason='needs pip install "prefrl[sbx]"')
def test_sbx_keeps_its_own_cnn_on_small_images() -> None:
    """In a child process, as in test_sbx_backend.py: JAX must not be loaded in a pytest process
    that later forks."""
    code = """
        import prefrl, sbx
        from prefrl.agents.sb3 import AgentConfig, make_agent, make_vec_env
        agent = make_agent(AgentConfig(backend="sbx"), make_vec_env("prefrl/MovingDot-v0", 1), seed=0)
        print(type(agent) is sbx.PPO, type(agent.policy).__name__, sorted(agent.policy_kwargs))
    """
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["True", "CnnPolicy", "['net_arch']"]
