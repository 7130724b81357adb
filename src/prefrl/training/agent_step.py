"""The agent stage of :class:`~prefrl.training.loop.PreferenceLoop`: the agent's environment steps.

:class:`AgentStep` runs the agent: the random-action steps before the first query, PEBBLE's
unsupervised pre-training, and the agent's
share of each iteration's steps, telling the loop's callbacks about progress every 100 steps
while it trains. It saves the agent (policy, replay buffer) into a checkpoint and loads it back.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path
from typing import TypedDict, cast

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.vec_env import VecEnv

from prefrl.agents.entropy_floor import EntropyFloor, logged_entropy
from prefrl.agents.policy_io import save_agent
from prefrl.agents.protocols import Agent
from prefrl.agents.rollout import Policy
from prefrl.agents.sb3 import (
    AgentConfig,
    configured_ent_coef,
    load_replay_buffer,
    resolve_min_entropy,
    save_replay_buffer,
)
from prefrl.training.config import LoopConfig, ResetLayers

AgentLoader = Callable[[Path], Agent]
"""``agent_loader(path) -> agent``: the agent rebuilt from a checkpoint's ``policy.zip`` on the
same env stack."""


class AgentState(TypedDict):
    """The agent stage's part of a checkpoint (``state.json``)."""

    env_steps: int
    started: bool
    agent_num_timesteps: int | None
    """The agent's own step counter (``None`` without an agent); its policy file holds it too."""
    entropy_coef: float | None
    """The entropy floor's raised bonus (``None``: no floor yet; absent in older checkpoints)."""


class AgentStep:
    """The agent's environment steps (see the module docstring).

    Args:
        agent: an SB3 agent whose env is ``LearnedRewardVecEnv(TrajectoryRecorder(...))``;
            ``None`` for offline reward learning (no steps).
        config: the loop's schedule (steps, iterations, random steps, pre-training).
        on_steps: called with the run's environment steps every ~100 steps while the agent trains.

    An on-policy agent keeps its entropy floor (``--agent.min-entropy``,
    :class:`~prefrl.agents.entropy_floor.EntropyFloor`) while it learns.

    State (:meth:`state_dict`): the environment steps taken, whether the agent has learned, and
    the entropy floor's raised bonus.
    """

    def __init__(self, agent: Agent | None, config: LoopConfig, on_steps: Callable[[int], None]) -> None:
        self.agent, self.config, self.on_steps = agent, config, on_steps
        self.env_steps = 0
        self.started = False
        self.entropy_coef: float | None = None
        layers = config.agent_reset_layers
        if config.reset_iteration is not None and layers not in (None, "all") and agent is not None:
            _heads_of(agent)  # an agent whose heads cannot restart fails here, not mid-run

    @property
    def off_policy(self) -> bool:
        """Whether the agent learns from a replay buffer (relabelled, saved in checkpoints)."""
        return isinstance(self.agent, OffPolicyAlgorithm)

    def steps_for(self, i: int) -> int:
        """Agent training steps after reward update ``i``."""
        n, total = self.config.iterations, self.config.agent_steps
        return total // n + (1 if i < total % n else 0)

    def policy(self) -> Policy | None:
        """The agent's action for an observation (``None`` without an agent: random actions)."""
        agent = self.agent
        return None if agent is None else (lambda o: agent.predict(o)[0])

    def learn(self, steps: int, floor_scale: float = 1.0) -> None:
        """Train the agent ``steps`` environment steps (on whatever reward its env gives now),
        its entropy floor's share scaled by ``floor_scale`` in [0, 1] (``floor_schedule``); 0:
        without the floor, at its configured entropy bonus (the floor's raised bonus is kept for a
        later ``learn``)."""
        if steps <= 0:
            return
        assert self.agent is not None
        if not 0.0 <= floor_scale <= 1.0:
            raise ValueError(f"floor_scale must lie in [0, 1], got {floor_scale}")
        hook = _StepHook(self.on_steps, self.env_steps)
        floor = self._floor(floor_scale)
        if floor is not None and floor_scale <= 0:
            cast(OnPolicyAlgorithm, self.agent).ent_coef = floor.base
            floor = None
        callback = hook if floor is None else CallbackList([hook, floor])
        self.agent.learn(steps, callback=callback, reset_num_timesteps=not self.started, progress_bar=False)
        self.started = True
        self.env_steps += steps
        if floor is not None:
            self.entropy_coef = floor.coef

    def _floor(self, scale: float = 1.0) -> EntropyFloor | None:
        """The agent's entropy floor (``--agent.min-entropy``, its share times ``scale`` where
        ``scale`` > 0), starting from the bonus it had raised so far; ``None`` for an agent
        without one."""
        agent = self.agent
        config = getattr(agent, "prefrl_config", None)
        if not isinstance(agent, OnPolicyAlgorithm) or not isinstance(config, AgentConfig):
            return None
        venv = agent.get_env()
        share = 0.0 if venv is None else resolve_min_entropy(config, venv)
        if venv is None or share <= 0:
            return None
        return EntropyFloor(
            share * (scale if scale > 0 else 1.0), configured_ent_coef(config, venv), self.entropy_coef
        )

    def stats(self) -> dict[str, float]:
        """What the agent's last update said of its policy: ``agent/entropy``, the mean entropy
        of its action distribution over its last minibatches (on-policy agents, which log it as
        ``train/entropy_loss``; near 0 the policy has stopped sampling, and labels of its clips
        can only show the reward one behaviour). Empty where the agent logged none."""
        entropy = logged_entropy(self.agent)
        out = {} if entropy is None else {"agent/entropy": entropy}
        if self.entropy_coef is not None:  # the entropy floor's bonus: above the configured one, it acted
            out["agent/ent_coef"] = float(getattr(self.agent, "ent_coef", math.nan))
        return out

    def reset(self, seed: int, layers: ResetLayers = "all") -> None:
        """Give the agent fresh weights drawn from ``seed``; its step counter, environment and
        (off-policy) replay buffer stay (``agent_reset_at``). ``layers``: ``all`` (policy,
        critics, optimisers) or ``heads`` (``agent_reset_layers``: an on-policy agent's action
        and value heads and its optimiser; the layers that read the observation stay), or only
        one of those heads (``action``, ``value``) and the optimiser."""
        agent = self.agent
        if agent is None:
            return
        if not isinstance(agent, BaseAlgorithm):
            raise TypeError(
                f"agent_reset_at restarts stable-baselines3 algorithms, not {type(agent).__name__}"
            )
        if layers != "all":
            _reset_heads(agent, seed, layers)
            return
        buffer = agent.replay_buffer if isinstance(agent, OffPolicyAlgorithm) else None
        own = agent.seed
        agent.seed = seed  # _setup_model draws the new weights from it
        try:
            agent._setup_model()
        finally:
            agent.seed = own
        if isinstance(agent, OffPolicyAlgorithm) and buffer is not None:
            agent.replay_buffer = buffer

    def initial_collection(self, entropy: Callable[[], AbstractContextManager[None]]) -> None:
        """Random-action steps, then ``pretrain_steps`` on the state-entropy reward ``entropy()``
        gives while inside it (PEBBLE), before the first query."""
        c = self.config
        if isinstance(self.agent, OffPolicyAlgorithm):
            # the first learn() call restarts the agent's step counter (also for a warm start)
            self.agent.learning_starts = c.random_steps
            self.learn(c.random_steps)
        elif c.random_steps > 0:
            self._random_steps(c.random_steps)
        if c.pretrain_steps > 0:
            with entropy():
                self.learn(c.pretrain_steps)
        self.started = True

    def _venv(self) -> VecEnv | None:
        return self.agent.get_env() if self.agent is not None else None

    def _random_steps(self, steps: int) -> None:
        """Step the agent's env stack with random actions (on-policy initial collection)."""
        venv = self._venv()
        assert venv is not None
        venv.reset()
        for _ in range(math.ceil(steps / venv.num_envs)):
            venv.step(np.stack([venv.action_space.sample() for _ in range(venv.num_envs)]))
        self.env_steps += steps  # the agent has never learned, so its first learn() resets the env

    # ------------------------------------------------------------------ checkpoints
    def save_files(self, path: Path) -> None:
        """The agent's files in the checkpoint directory ``path``: ``policy.zip``, ``replay_buffer.npz``."""
        if self.agent is None:
            return
        if not isinstance(self.agent, BaseAlgorithm):
            raise TypeError(
                f"a checkpoint saves stable-baselines3 algorithms, not {type(self.agent).__name__}"
            )
        save_agent(self.agent, path / "policy.zip")
        if isinstance(self.agent, OffPolicyAlgorithm):
            assert self.agent.replay_buffer is not None
            save_replay_buffer(self.agent.replay_buffer, path / "replay_buffer.npz")

    def load_files(self, path: Path, agent_loader: AgentLoader | None) -> None:
        """The agent of the checkpoint directory ``path`` (its policy and replay buffer), rebuilt by
        ``agent_loader``. First of a resume: one that fails to load leaves every file as it was."""
        if self.agent is None:
            return
        if agent_loader is None:
            raise ValueError("resuming an agent run needs an agent_loader")
        self.agent = agent_loader(path / "policy.zip")
        if isinstance(self.agent, OffPolicyAlgorithm):
            assert self.agent.replay_buffer is not None
            load_replay_buffer(self.agent.replay_buffer, path / "replay_buffer.npz")

    def state_dict(self) -> AgentState:
        """The checkpointed state: environment steps taken, whether the agent has learned."""
        steps = None if self.agent is None else int(self.agent.num_timesteps)
        return {"env_steps": self.env_steps, "started": self.started, "agent_num_timesteps": steps,
                "entropy_coef": self.entropy_coef}  # fmt: skip

    def load_state_dict(self, state: AgentState) -> None:
        self.env_steps, self.started = int(state["env_steps"]), bool(state["started"])
        coef = state.get("entropy_coef")
        self.entropy_coef = None if coef is None else float(coef)


def _heads_of(agent: object) -> ActorCriticPolicy:
    """The policy whose heads ``agent_reset_layers`` (heads, action, value) restarts;
    ``ValueError`` for an agent without such heads (off-policy agents, whose critics have no one
    value head)."""
    policy = getattr(agent, "policy", None)
    if not isinstance(agent, OnPolicyAlgorithm) or not isinstance(policy, ActorCriticPolicy):
        raise ValueError(
            f"agent_reset_layers other than all restarts the heads of on-policy agents (ppo, a2c), not "
            f"{type(agent).__name__}; use agent_reset_layers=all"
        )
    return policy


SOFT_KEEP = 0.1
"""``agent_reset_layers=soft``: the factor on the action head's weights and bias. At 0.1 the moving
dot's stuck policies (logits a few nats apart) sampled near uniformly again and, with the value
head redrawn, climbed on their frozen reward as fast as with both heads redrawn."""


def _reset_heads(agent: BaseAlgorithm, seed: int, layers: ResetLayers = "heads") -> None:
    """Re-draw an on-policy agent's last layers as stable-baselines3 first draws them (the
    action head at gain 0.01, so that the policy samples near uniformly again, with a Gaussian
    policy's log-std at its initial value; the value head at gain 1) and give it a fresh
    optimiser. ``layers``: both heads (``heads``), or only ``action`` or ``value``; ``soft``:
    the value head redrawn and the action head's weights and bias scaled by :data:`SOFT_KEEP`
    (near-uniform sampling that keeps the order of the policy's preferences)."""
    policy = _heads_of(agent)
    heads = [(policy.action_net, 0.01), (policy.value_net, 1.0)]
    chosen = {"heads": heads, "action": heads[:1], "value": heads[1:], "soft": heads[1:]}[layers]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for head, gain in chosen:
            if policy.ortho_init:
                head.apply(partial(policy.init_weights, gain=gain))
            else:
                cast(torch.nn.Linear, head).reset_parameters()
    if layers == "soft":
        with torch.no_grad():
            for param in policy.action_net.parameters():
                param.mul_(SOFT_KEEP)
    log_std = getattr(policy, "log_std", None)
    if layers != "value" and isinstance(log_std, torch.nn.Parameter):
        with torch.no_grad():
            log_std.fill_(policy.log_std_init)
    lr = agent.lr_schedule(agent._current_progress_remaining)
    policy.optimizer = policy.optimizer_class(policy.parameters(), lr=lr, **policy.optimizer_kwargs)  # type: ignore[call-arg]


class _StepHook(BaseCallback):
    """Calls ``on_steps(base + steps done)`` every 100 environment steps while the agent trains."""

    def __init__(self, on_steps: Callable[[int], None], base: int) -> None:
        super().__init__()
        self.on_steps, self.base, self.start = on_steps, base, -1

    def _on_step(self) -> bool:
        if self.start < 0:
            self.start = self.num_timesteps - self.training_env.num_envs
        done = self.num_timesteps - self.start
        if done % 100 < self.training_env.num_envs:
            self.on_steps(self.base + done)
        return True
