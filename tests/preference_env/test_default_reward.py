"""Issue 34, item 2: one RewardNetConfig builds every default reward network; the preference
wrapper's default is prefrl train's, for state and image observations alike."""

from __future__ import annotations

import dataclasses
import json

import gymnasium as gym
import pytest

from prefrl.envs.config import EnvConfig
from prefrl.preference_env.env_process import default_config, default_net
from prefrl.rewards import CNNReward, MLPReward
from prefrl.run.config import TrainConfig
from prefrl.run.resolve import resolve_run


@pytest.mark.parametrize(
    "env_id", ["Pendulum-v1", "CartPole-v1", "prefrl/MovingDot-v0", "prefrl/MovingDot-v0:size=84"]
)
def test_the_wrappers_default_network_is_prefrl_trains(env_id: str) -> None:
    """Same config (output aside: only prefrl train probes an environment), same layers, same
    kind of network; images included (small ones: keypoints of s and s'; 84 px: a flat CNN
    with a head per action). Each has a NumPy per-step path in the environment process."""
    from prefrl.rewards.inference import FastReward

    env_id, _, kw = env_id.partition(":")
    env_kwargs: dict[str, object] = {"obs_type": "pixels"} if "MovingDot" in env_id else {}
    if kw:
        env_kwargs[kw.split("=")[0]] = int(kw.split("=")[1])
    cfg, probe = resolve_run(TrainConfig(env=EnvConfig(id=env_id, kwargs=json.dumps(env_kwargs))))
    obs_space, act_space = probe.obs_space, probe.act_space
    assert isinstance(obs_space, gym.spaces.Box)
    wrapper = default_config(obs_space, act_space)
    assert dataclasses.replace(wrapper, output=cfg.reward.output) == cfg.reward  # output: probed by train
    mine = default_net(obs_space, act_space)
    theirs = dataclasses.replace(cfg.reward, output="linear").build(obs_space, act_space)
    assert type(mine) is type(theirs) and mine.config == theirs.config
    assert {k: v.shape for k, v in mine.state_dict().items()} == {
        k: v.shape for k, v in theirs.state_dict().items()
    }
    assert mine.ensemble_size == 3 and FastReward.of(mine) is not None
    if isinstance(mine, MLPReward):
        assert mine.use[2] is True
    else:
        assert isinstance(mine, CNNReward)
        small = obs_space.shape[0] <= 64
        assert mine.spatial == small and mine.use_next_obs == small and mine.options.action_heads != small
