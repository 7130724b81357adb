"""Issue 34, item 2: one RewardNetConfig builds every default reward network; the preference
wrapper's default for state observations is prefrl train's."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

from prefrl.envs.config import EnvConfig
from prefrl.preference_env.env_process import IMAGE_REWARD, default_config, default_net
from prefrl.rewards import CNNReward, MLPReward
from prefrl.run.config import TrainConfig
from prefrl.run.resolve import probe_spaces, resolve


@pytest.mark.parametrize("env_id", ["Pendulum-v1", "CartPole-v1"])
def test_the_wrappers_default_network_is_prefrl_trains(env_id: str) -> None:
    cfg = resolve(TrainConfig(env=EnvConfig(id=env_id)))
    obs_space, act_space = probe_spaces(cfg)
    wrapper = default_config(obs_space, act_space)
    assert dataclasses.replace(wrapper, output=cfg.reward.output) == cfg.reward  # output: probed by train
    mine, theirs = default_net(obs_space, act_space), cfg.reward.build(obs_space, act_space)
    assert isinstance(mine, MLPReward) and mine.ensemble_size == 3 and mine.use[2] is True
    assert {k: v.shape for k, v in mine.state_dict().items()} == {
        k: v.shape for k, v in theirs.state_dict().items()
    }


def test_images_get_one_flat_cnn_the_environment_process_scores_fast() -> None:
    from prefrl.preference_env.rewarder import overlappable
    from prefrl.rewards.inference import FastReward

    obs_space, act_space = gym.spaces.Box(0, 255, (40, 40, 3), np.uint8), gym.spaces.Discrete(5)
    net = default_net(obs_space, act_space)
    assert isinstance(net, CNNReward) and net.ensemble_size == IMAGE_REWARD.ensemble_size == 1
    assert not net.spatial and not net.use_next_obs and not net.action_heads
    assert FastReward.of(net) is not None and overlappable(net)  # NumPy path; the rewarder can pre-score
