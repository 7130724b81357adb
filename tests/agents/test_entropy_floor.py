"""The entropy floor (--agent.min-entropy): an on-policy agent on a reward that pays one action
keeps sampling the others, and the floor resolves, refuses and resumes as documented."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, cast

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback, CallbackList

from prefrl.agents.entropy_floor import MIN_COEF, EntropyFloor, max_entropy
from prefrl.agents.learned_reward import LearnedRewardVecEnv
from prefrl.agents.recorder import TrajectoryRecorder
from prefrl.agents.reward_signal import LearnedReward
from prefrl.agents.sb3 import AgentConfig, make_agent, make_vec_env, resolve_min_entropy
from prefrl.rewards import MLPReward
from prefrl.training.config import LoopConfig
from tests.training.test_loop import build


class PaysAction0(gym.Env):
    """Four actions, random observations, 1 for action 0 and 0 otherwise, episodes of 20 steps: a
    reward that consistently pays one action, as a learned reward can (Pong's paid one button)."""

    observation_space = spaces.Box(-1.0, 1.0, (3,))
    action_space = spaces.Discrete(4)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.t += 1
        return self.observation_space.sample(), float(action == 0), False, self.t >= 20, {}


class _Entropies(BaseCallback):
    """The mean action entropy of each update, as SB3 logs it, read before the next rollout."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[float] = []

    def _on_rollout_start(self) -> None:
        loss = self.model.logger.name_to_value.get("train/entropy_loss")
        if loss is not None:
            self.seen.append(-float(loss))

    def _on_step(self) -> bool:
        return True


def _entropy(agent, floor: EntropyFloor | None, steps: int = 64 * 60) -> float:
    """The mean entropy of the agent's last 30 updates (the floor's bonus lags the entropy, so
    the entropy swings around the floor rather than sitting on it)."""
    seen = _Entropies()
    agent.learn(steps, callback=CallbackList([seen] + ([floor] if floor else [])), progress_bar=False)
    return float(np.mean(seen.seen[-30:]))


def _agent(ent_coef: float = 0.0):
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([PaysAction0])
    cfg = AgentConfig(
        algo="ppo", net_arch=[16], n_steps=64, batch_size=64, learning_rate=0.01, ent_coef=ent_coef
    )
    return make_agent(cfg, venv, seed=0)


def test_max_entropy_of_discrete_spaces_and_none_for_continuous() -> None:
    assert max_entropy(spaces.Discrete(6)) == pytest.approx(math.log(6))
    assert max_entropy(spaces.MultiDiscrete([2, 3])) == pytest.approx(math.log(6))
    assert max_entropy(spaces.MultiBinary(3)) == pytest.approx(3 * math.log(2))
    with pytest.raises(ValueError, match="discrete actions"):
        max_entropy(spaces.Box(-1, 1, (2,)))


class _TracedFloor(EntropyFloor):
    """An entropy floor that keeps the bonus it set after every update."""

    def __init__(self, share: float, base: float) -> None:
        super().__init__(share, base)
        self.trace: list[float] = []

    def _on_rollout_start(self) -> None:
        super()._on_rollout_start()
        self.trace.append(self.coef)


def test_without_a_floor_ppo_stops_sampling_with_one_it_keeps_the_floor() -> None:
    """On a reward paying one action, PPO's entropy falls near 0; with a floor of half the
    maximum (ln 4 here), it stays about the floor, and the bonus it raised shows it."""
    free = _entropy(_agent(), None)
    assert free < 0.1 * math.log(4)
    floor = _TracedFloor(0.5, base=0.0)
    agent = _agent()
    held = _entropy(agent, floor)
    assert held > 0.35 * math.log(4)
    # The bonus was raised well above where it starts. Its value after the last update swings
    # with the entropy around the floor (1.99e-3 on one machine, far more on another), so the
    # test reads the largest bonus it set over the run.
    assert max(floor.trace) > 10 * MIN_COEF


def test_the_bonus_never_falls_below_the_configured_one_and_comes_back_down() -> None:
    """Above its floor the bonus shrinks back to the configured one (a floor of 0.05 of the
    maximum lies below where an agent paid nothing but the bonus stays)."""
    floor = EntropyFloor(0.05, base=0.02, coef=0.5)
    agent = _agent(ent_coef=0.02)
    _entropy(agent, floor, steps=64 * 10)
    assert floor.coef < 0.5 and agent.ent_coef >= 0.02
    unused = EntropyFloor(0.05, base=0.0)  # never below its floor: exactly the configured bonus
    agent = _agent()
    _entropy(agent, unused, steps=64 * 10)
    assert unused.coef == 1e-3 and agent.ent_coef == 0.0


def _learned_venv(env_id: str):
    rec = TrajectoryRecorder(make_vec_env(env_id, 1, seed=0))
    net = MLPReward(rec.observation_space, rec.action_space, hidden=(8,), ensemble_size=1)
    return LearnedRewardVecEnv(rec, LearnedReward(net))


def test_auto_is_on_for_on_policy_agents_on_learned_rewards_of_images_only() -> None:
    dot = "prefrl/MovingDot-v0"
    assert resolve_min_entropy(AgentConfig(algo="ppo"), _learned_venv(dot)) == 0.5
    assert resolve_min_entropy(AgentConfig(algo="ppo"), make_vec_env(dot, 1, seed=0)) == 0.0  # game reward
    assert resolve_min_entropy(AgentConfig(algo="dqn"), _learned_venv(dot)) == 0.0
    assert resolve_min_entropy(AgentConfig(algo="ppo"), _learned_venv("CartPole-v1")) == 0.0
    assert resolve_min_entropy(AgentConfig(algo="ppo", min_entropy=0.3), _learned_venv("CartPole-v1")) == 0.3
    assert resolve_min_entropy(AgentConfig(algo="ppo", min_entropy=0.0), _learned_venv(dot)) == 0.0


@pytest.mark.parametrize(
    ("cfg", "env_id", "match"),
    [
        (AgentConfig(algo="sac", min_entropy=0.5), "Pendulum-v1", "on-policy sb3"),
        (AgentConfig(algo="ppo", min_entropy=0.5), "Pendulum-v1", "discrete actions"),
        (AgentConfig(algo="dqn", min_entropy=0.5), "CartPole-v1", "on-policy sb3"),
    ],
)
def test_a_floor_the_agent_cannot_keep_is_refused_when_it_is_built(cfg, env_id, match) -> None:
    with pytest.raises(ValueError, match=match):
        make_agent(cfg, _learned_venv(env_id))


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5])
def test_min_entropy_is_a_share(bad: float) -> None:
    with pytest.raises(ValueError, match="min_entropy"):
        AgentConfig(min_entropy=bad)


def test_the_loop_logs_the_raised_bonus_and_a_resumed_run_keeps_it(tmp_path) -> None:
    """agent/ent_coef in the metrics where the floor acts, and the checkpoint holds the raised
    bonus, so a resumed run goes on from it rather than from the configured one."""
    cfg = LoopConfig(total_steps=400, total_labels=4, iterations=2, initial_steps=100, fragment_length=10,
                     floor_after_queries=True)  # fmt: skip
    loop = build(cfg, algo="ppo", env_id="CartPole-v1", tmp=tmp_path)
    loop.agent.prefrl_config = dataclasses.replace(loop.agent.prefrl_config, min_entropy=0.9)
    loop.run()
    coefs = [h.get("agent/ent_coef") for h in loop.state.history]
    assert all(c is not None for c in coefs) and coefs[-1] > 0.0  # ln 2 x 0.9: out of reach, raised
    state = loop.agent_step.state_dict()
    assert state["entropy_coef"] == pytest.approx(coefs[-1])
    again = build(cfg, algo="ppo", env_id="CartPole-v1")
    again.agent_step.load_state_dict(state)
    assert again.agent_step.entropy_coef == pytest.approx(coefs[-1])
    del state["entropy_coef"]  # a checkpoint from before the floor
    again.agent_step.load_state_dict(state)
    assert again.agent_step.entropy_coef is None
    np.testing.assert_equal(build(cfg, algo="ppo", env_id="CartPole-v1").agent_step.stats(), {})


def test_after_the_last_query_the_agent_trains_at_its_configured_bonus(tmp_path) -> None:
    """The floor acts while labels are still to be asked; the last iteration's steps make no clip
    that is compared, so there the agent trains at its configured bonus, and the floor's raised
    bonus is kept for a resumed run. With floor_after_queries it acts to the end."""
    cfg = LoopConfig(total_steps=600, total_labels=6, iterations=3, initial_steps=100, fragment_length=10)
    loop = build(cfg, algo="ppo", env_id="CartPole-v1", tmp=tmp_path)
    base = loop.agent.ent_coef
    loop.agent.prefrl_config = dataclasses.replace(loop.agent.prefrl_config, min_entropy=0.99)
    loop.run()
    history = loop.state.history
    assert [h["agent/floor"] for h in history] == [1.0, 1.0, 0.0]
    assert history[1]["agent/ent_coef"] > base  # ln 2 x 0.99: out of reach, raised
    assert history[2]["agent/ent_coef"] == base and loop.agent.ent_coef == base
    assert loop.agent_step.entropy_coef == pytest.approx(history[1]["agent/ent_coef"])
    kept = build(dataclasses.replace(cfg, floor_after_queries=True), algo="ppo", env_id="CartPole-v1")
    kept.agent.prefrl_config = dataclasses.replace(kept.agent.prefrl_config, min_entropy=0.99)
    kept.run()
    assert [h["agent/floor"] for h in kept.state.history] == [1.0, 1.0, 1.0]
    assert kept.state.history[2]["agent/ent_coef"] > base


def test_a_labels_floor_fades_with_the_budget_still_to_be_asked(tmp_path) -> None:
    """floor_schedule=labels: the floor acts with the share of the label budget still to be asked
    after each iteration's queries (agent/floor falls from near 1 to 0 at the last query), the
    agent's floor is built at the configured share times that scale."""
    cfg = LoopConfig(total_steps=800, total_labels=20, iterations=4, initial_steps=100, fragment_length=10,
                     floor_schedule="labels", query_schedule="constant")  # fmt: skip
    loop = build(cfg, algo="ppo", env_id="CartPole-v1", tmp=tmp_path)
    loop.agent.prefrl_config = dataclasses.replace(loop.agent.prefrl_config, min_entropy=0.99)
    loop.run()
    scales = [h["agent/floor"] for h in loop.state.history]
    assert scales[-1] == 0.0 and all(0.0 < s < 1.0 for s in scales[:-1])
    assert scales == sorted(scales, reverse=True) and len(set(scales)) == len(scales)
    floor = loop.agent_step._floor(0.25)
    assert floor is not None and floor.share == pytest.approx(0.99 * 0.25)
    with pytest.raises(ValueError, match="floor_scale"):
        loop.agent_step.learn(10, 1.5)


def test_a_labels_floor_cannot_also_be_kept_after_the_queries() -> None:
    with pytest.raises(ValueError, match="floor_after_queries"):
        LoopConfig(floor_schedule="labels", floor_after_queries=True)
    with pytest.raises(ValueError, match="floor_schedule"):
        LoopConfig(floor_schedule=cast(Any, "sometimes"))
