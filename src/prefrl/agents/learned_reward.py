"""Replace an environment's reward with a learned one, normalised for RL.

Three wrappers share one :class:`LearnedReward`:

- :class:`LearnedRewardWrapper` for a single :class:`gymnasium.Env`;
- :class:`LearnedRewardVectorWrapper` for a Gymnasium vector env (``gym.make_vec``,
  ``SyncVectorEnv``, as CleanRL uses) and :class:`LearnedRewardVecEnv` for a
  stable-baselines3 ``VecEnv``: one batched reward call per vector step, whatever the number
  of environments.

All keep the environment's own reward in ``info["true_reward"]`` (and the raw,
unnormalised learned reward, measured from the absorbing state's, in
``info["learned_reward"]``) so logs can show both. Each has ``from_run(env, RUN)``: the
reward a finished run saved, normalised as the run's agent saw it
(:mod:`prefrl.agents.saved_reward`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from prefrl.rewards.nets import RewardNet
from prefrl.rewards.normalization import RewardNormalizer

if TYPE_CHECKING:
    from prefrl.agents.saved_reward import Normalize

FAST_MAX_BATCH = 256
"""Batches up to this size take the NumPy fast path (per-step rewards); larger ones (replay
buffer relabelling) the network itself, where its batched kernels win."""


class LearnedReward:
    """A reward network's ensemble-mean reward plus the normaliser the agent sees.

    Rewards are measured from the network's absorbing-state reward (``r - r_absorbing``),
    so ending an episode is worth exactly 0 to the agent, as it is to SB3's value targets.
    In environments that can terminate the loop switches the normaliser to scale-only
    (``normalizer.center = False``) so that this anchor survives normalisation.

    Args:
        net: the reward network (its weights may change between calls: it is read live).
        normalize: divide by a running std (and subtract the running mean).
        update_stats: fold every batch of rewards computed by the wrappers into the
            running statistics (on-policy agents); off-policy loops reset them instead.
    """

    def __init__(self, net: RewardNet, normalize: bool = True, update_stats: bool = True) -> None:
        self.net = net
        self.normalize = normalize
        self.update_stats = update_stats
        self.normalizer = RewardNormalizer()
        self.intrinsic: Any = None
        """When set (``f(next_obs) -> [B]``), it replaces the learned reward (unsupervised pre-training)."""
        self.bonus = 0.0
        """Weight of the exploration bonus (RUNE): ``bonus x`` the ensemble's std is added to
        the reward, so the agent seeks what the reward model is unsure about (the loop decays it)."""
        self.fast = False
        """Compute small batches (an agent's per-step rewards) with the NumPy inference path of
        :class:`~prefrl.rewards.inference.FastReward`, compiled from the network's weights; the
        owner must call :meth:`refresh` whenever the weights change (the loop does)."""
        self._fast_fn: Any = None  # compiled lazily; False: the network has no fast path
        self._absorbing: float | None = None

    def refresh(self) -> None:
        """The network's weights changed: recompile the fast path on next use."""
        self._fast_fn, self._absorbing = None, None

    @torch.no_grad()
    def raw(self, obs: Any, acts: Any, next_obs: Any, dones: Any = None) -> np.ndarray:
        """Ensemble-mean reward ``[*lead]`` for transitions ``[*lead, ...]``, minus the
        absorbing-state reward (unnormalised), plus ``bonus x`` the ensemble std."""
        if self.fast and not self.bonus and isinstance(acts, np.ndarray) and len(acts) <= FAST_MAX_BATCH:
            if self._fast_fn is None:
                from prefrl.rewards.inference import FastReward

                self._fast_fn = FastReward.of(self.net) or False
                self._absorbing = self.net.absorbing_value()
            if self._fast_fn:
                d = np.zeros(len(acts), dtype=np.float32) if dones is None else np.asarray(dones, np.float32)
                return (self._fast_fn(obs, acts, next_obs, d) - self._absorbing).astype(np.float32)
        mean, std = self.net.predict(obs, acts, next_obs, dones)
        out = mean - self.net.absorbing_value()
        if self.bonus:
            out = out + self.bonus * std
        return out.astype(np.float32)

    def __call__(
        self, obs: Any, acts: Any, next_obs: Any, dones: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(rewards for the agent, raw learned rewards)``, both ``[*lead]``."""
        if self.intrinsic is not None:
            return self.intrinsic(next_obs), self.raw(obs, acts, next_obs, dones)
        raw = self.raw(obs, acts, next_obs, dones)
        if not self.normalize:
            return raw, raw
        if self.update_stats:
            self.normalizer.update(raw)
        return self.normalizer(raw), raw


class LearnedRewardWrapper(gym.Wrapper):
    """A Gymnasium wrapper whose reward is a learned one; the true reward goes to ``info``.

    Example:
        >>> import gymnasium as gym
        >>> from prefrl.rewards import MLPReward
        >>> env = gym.make("Pendulum-v1")
        >>> net = MLPReward(env.observation_space, env.action_space)
        >>> env = LearnedRewardWrapper(env, LearnedReward(net))
        >>> obs, _ = env.reset(seed=0)
        >>> obs, rew, term, trunc, info = env.step(env.action_space.sample())
        >>> sorted(k for k in info if k.endswith("_reward"))
        ['learned_reward', 'true_reward']
    """

    def __init__(self, env: gym.Env, reward: LearnedReward) -> None:
        super().__init__(env)
        self.reward = reward
        self._obs: Any = None

    @classmethod
    def from_run(cls, env: gym.Env, source: str | Path, normalize: Normalize = "run") -> LearnedRewardWrapper:
        """``env`` with the reward of a run directory or ``reward.safetensors`` file ``source``
        (see :func:`~prefrl.agents.saved_reward.load_learned_reward`), checked against its spaces."""
        from prefrl.agents.saved_reward import check_spaces, load_learned_reward

        reward = load_learned_reward(source, normalize)
        check_spaces(reward.net, env.observation_space, env.action_space, source)
        return cls(env, reward)

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._obs = obs
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, true_rew, terminated, truncated, info = self.env.step(action)
        add = lambda x: np.asarray(x)[None]  # noqa: E731 -- a batch of one
        rew, raw = self.reward(add(self._obs), add(action), add(obs), np.array([terminated]))
        self._obs = obs
        info = {**info, "true_reward": float(true_rew), "learned_reward": float(raw[0])}
        return obs, float(rew[0]), terminated, truncated, info


def _stack_obs(items: list[Any]) -> Any:
    if isinstance(items[0], dict):
        return {k: np.stack([o[k] for o in items]) for k in items[0]}
    return np.stack(items)


def _take(obs: Any, rows: np.ndarray) -> Any:
    """Rows ``rows`` of a batch of observations (an array, or a dict of arrays)."""
    return {k: v[rows] for k, v in obs.items()} if isinstance(obs, dict) else obs[rows]


class LearnedRewardVectorWrapper(VectorWrapper):
    """A Gymnasium vector env (``gym.make_vec``, ``SyncVectorEnv``, ``AsyncVectorEnv``) with a
    learned reward: one batched reward call per step; ``info["true_reward"]`` and
    ``info["learned_reward"]`` are ``[num_envs]`` arrays.

    Every autoreset mode works: with ``NextStep`` (Gymnasium's default) the step that only resets
    a finished sub-environment is no transition and pays 0, as the environment's own reward does;
    with ``SameStep`` the terminal observation comes from ``info["final_obs"]``.

    Example:
        >>> import gymnasium as gym
        >>> from prefrl.rewards import MLPReward
        >>> envs = gym.make_vec("Pendulum-v1", num_envs=2)
        >>> net = MLPReward(envs.single_observation_space, envs.single_action_space)
        >>> envs = LearnedRewardVectorWrapper(envs, LearnedReward(net))
        >>> _ = envs.reset(seed=0)
        >>> obs, rews, term, trunc, info = envs.step(envs.action_space.sample())
        >>> rews.shape, info["true_reward"].shape
        ((2,), (2,))
    """

    def __init__(self, env: VectorEnv, reward: LearnedReward) -> None:
        super().__init__(env)
        self.reward = reward
        self._obs: Any = None
        self._mode = AutoresetMode(env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP))
        self._restarting = np.zeros(env.num_envs, dtype=bool)  # NextStep: these only reset this step

    @classmethod
    def from_run(
        cls, env: VectorEnv, source: str | Path, normalize: Normalize = "run"
    ) -> LearnedRewardVectorWrapper:
        """``env`` with the reward of a run directory or ``reward.safetensors`` file ``source``
        (see :func:`~prefrl.agents.saved_reward.load_learned_reward`), checked against its spaces."""
        from prefrl.agents.saved_reward import check_spaces, load_learned_reward

        reward = load_learned_reward(source, normalize)
        check_spaces(reward.net, env.single_observation_space, env.single_action_space, source)
        return cls(env, reward)

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        mask = (options or {}).get("reset_mask")
        if mask is None or self._obs is None:
            self._obs = obs
            self._restarting[:] = False
        else:  # Disabled autoreset: only the masked sub-environments started over
            self._obs = obs
            self._restarting[np.asarray(mask, dtype=bool)] = False
        return obs, info

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, true_rews, terminated, truncated, info = self.env.step(actions)
        n = self.num_envs
        next_obs = obs
        final = info.get("_final_obs")
        if self._mode == AutoresetMode.SAME_STEP and final is not None and np.any(final):
            next_obs = _stack_obs([info["final_obs"][i] if final[i] else _take(obs, i) for i in range(n)])
        keep = ~self._restarting  # rows that are transitions
        rews, raw = np.zeros(n, dtype=np.float32), np.zeros(n, dtype=np.float32)
        if keep.any():
            acts = np.asarray(actions)
            rews[keep], raw[keep] = self.reward(
                _take(self._obs, keep), acts[keep], _take(next_obs, keep), np.asarray(terminated)[keep]
            )
        if self._mode == AutoresetMode.NEXT_STEP:
            self._restarting = np.logical_or(terminated, truncated)
        self._obs = obs
        every = np.ones(n, dtype=bool)
        info = {**info, "true_reward": np.asarray(true_rews, dtype=np.float64), "_true_reward": every,
                "learned_reward": raw, "_learned_reward": every}  # fmt: skip
        return obs, rews, terminated, truncated, info


class LearnedRewardVecEnv(VecEnvWrapper):
    """A ``VecEnv`` wrapper with a learned reward: one batched reward call per vector step.

    Terminal observations come from ``info["terminal_observation"]`` (the returned
    observation of a finished sub-environment is already the next episode's first one).

    Example:
        >>> import gymnasium as gym
        >>> from stable_baselines3.common.vec_env import DummyVecEnv
        >>> from prefrl.rewards import MLPReward
        >>> venv = DummyVecEnv([lambda: gym.make("Pendulum-v1")] * 2)
        >>> net = MLPReward(venv.observation_space, venv.action_space)
        >>> venv = LearnedRewardVecEnv(venv, LearnedReward(net))
        >>> _ = venv.reset()
        >>> obs, rews, dones, infos = venv.step(np.stack([venv.action_space.sample()] * 2))
        >>> rews.shape, "true_reward" in infos[0]
        ((2,), True)
    """

    def __init__(self, venv: VecEnv, reward: LearnedReward) -> None:
        super().__init__(venv)
        self.reward = reward
        self._obs: Any = None
        self._acts: np.ndarray | None = None
        self.reward_s = 0.0
        """Seconds spent computing learned rewards in ``step_wait`` so far (profiling)."""

    @classmethod
    def from_run(cls, venv: VecEnv, source: str | Path, normalize: Normalize = "run") -> LearnedRewardVecEnv:
        """``venv`` with the reward of a run directory or ``reward.safetensors`` file ``source``
        (see :func:`~prefrl.agents.saved_reward.load_learned_reward`), checked against its spaces."""
        from prefrl.agents.saved_reward import check_spaces, load_learned_reward

        reward = load_learned_reward(source, normalize)
        check_spaces(reward.net, venv.observation_space, venv.action_space, source)
        return cls(venv, reward)

    def reset(self) -> Any:
        self._obs = self.venv.reset()
        return self._obs

    def step_async(self, actions: np.ndarray) -> None:
        self._acts = np.asarray(actions)
        self.venv.step_async(actions)

    def step_wait(self) -> Any:
        obs, true_rews, dones, infos = self.venv.step_wait()
        next_obs = obs
        if np.any(dones):  # swap in the real last observation of finished episodes
            rows = [
                infos[i]["terminal_observation"] if dones[i] else self._row(obs, i) for i in range(len(dones))
            ]
            next_obs = _stack_obs(rows)
        terminal = np.array(
            [bool(d) and not info.get("TimeLimit.truncated", False) for d, info in zip(dones, infos)]
        )
        t0 = time.perf_counter()
        rews, raw = self.reward(self._obs, self._acts, next_obs, terminal)
        self.reward_s += time.perf_counter() - t0
        for i, info in enumerate(infos):
            info["true_reward"] = float(true_rews[i])
            info["learned_reward"] = float(raw[i])
        self._obs = obs
        return obs, rews.astype(np.float32), dones, infos

    @staticmethod
    def _row(obs: Any, i: int) -> Any:
        return {k: v[i] for k, v in obs.items()} if isinstance(obs, dict) else obs[i]
