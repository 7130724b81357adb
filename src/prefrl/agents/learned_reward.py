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
from typing import Any, overload

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

from prefrl.agents.reward_signal import LearnedReward
from prefrl.agents.saved_reward import Normalize, check_spaces, load_learned_reward
from prefrl.config_types import HIDDEN_ENDS, HiddenEnd
from prefrl.data.arrays import Obs, obs_stack
from prefrl.threads import set_threads

__all__ = [
    "LearnedReward",
    "LearnedRewardVecEnv",
    "LearnedRewardVectorWrapper",
    "LearnedRewardWrapper",
    "learned_reward_env",
    "zoo_wrapper",
]


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
    def from_run(
        cls, env: gym.Env, source: str | Path, normalize: Normalize = "run", threads: int | None = 1
    ) -> LearnedRewardWrapper:
        """``env`` with the reward of a run directory or ``reward.safetensors`` file ``source``
        (see :func:`~prefrl.agents.saved_reward.load_learned_reward`), checked against its spaces;
        each step's reward runs on ``threads`` torch threads (``None``: the process's)."""

        reward = load_learned_reward(source, normalize, threads=threads)
        check_spaces(reward.net, env.observation_space, env.action_space, source)
        return cls(env, reward)

    def reset(
        self, *, seed: int | None = None, options: dict[str, object] | None = None
    ) -> tuple[object, dict[str, object]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self._obs = obs
        return obs, info

    def step(self, action: object) -> tuple[object, float, bool, bool, dict[str, object]]:
        obs, true_rew, terminated, truncated, info = self.env.step(action)

        def add(x: object) -> np.ndarray:  # a batch of one
            return np.asarray(x)[None]

        rew, raw = self.reward(add(self._obs), add(action), add(obs), np.array([terminated]))
        self._obs = obs
        info = {**info, "true_reward": float(true_rew), "learned_reward": float(raw[0])}
        return obs, float(rew[0]), terminated, truncated, info


def _take(obs: Obs, rows: np.ndarray | int) -> Obs:
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
        cls, env: VectorEnv, source: str | Path, normalize: Normalize = "run", threads: int | None = 1
    ) -> LearnedRewardVectorWrapper:
        """``env`` with the reward of a run directory or ``reward.safetensors`` file ``source``
        (see :func:`~prefrl.agents.saved_reward.load_learned_reward`), checked against its spaces;
        each step's reward runs on ``threads`` torch threads (``None``: the process's)."""

        reward = load_learned_reward(source, normalize, threads=threads)
        check_spaces(reward.net, env.single_observation_space, env.single_action_space, source)
        return cls(env, reward)

    def reset(
        self, *, seed: int | None = None, options: dict[str, object] | None = None
    ) -> tuple[object, dict[str, object]]:
        obs, info = self.env.reset(seed=seed, options=options)
        mask = (options or {}).get("reset_mask")
        if mask is None or self._obs is None:
            self._obs = obs
            self._restarting[:] = False
        else:  # Disabled autoreset: only the masked sub-environments started over
            self._obs = obs
            self._restarting[np.asarray(mask, dtype=bool)] = False
        return obs, info

    def step(self, actions: object) -> tuple[object, np.ndarray, np.ndarray, np.ndarray, dict[str, object]]:
        obs, true_rews, terminated, truncated, info = self.env.step(actions)
        n = self.num_envs
        next_obs = obs
        final = info.get("_final_obs")
        if self._mode == AutoresetMode.SAME_STEP and final is not None and np.any(final):
            next_obs = obs_stack([info["final_obs"][i] if final[i] else _take(obs, i) for i in range(n)])
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
        info = {
            **info,
            "true_reward": np.asarray(true_rews, dtype=np.float64),
            "_true_reward": every,
            "learned_reward": raw,
            "_learned_reward": every,
        }
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

    def __init__(
        self,
        venv: VecEnv,
        reward: LearnedReward,
        hide_terminations: bool = False,
        hidden_end: HiddenEnd = "truncation",
    ) -> None:
        super().__init__(venv)
        if hidden_end not in HIDDEN_ENDS:
            raise ValueError(f"unknown hidden_end {hidden_end!r}; choose from {list(HIDDEN_ENDS)}")
        self.reward = reward
        self.hide_terminations = hide_terminations
        """Withhold every termination from the agent, as the original work did on Atari: a learned
        reward's level then cannot pay for ending episodes (dying) or for avoiding their end."""
        self.hidden_end = hidden_end
        """How a hidden termination reaches the agent. ``"truncation"``: as a time limit
        (``info["TimeLimit.truncated"]``), so that it bootstraps from the last frame's value;
        ``"next_episode"``: not at all (``done`` is ``False``), so that its stream runs on into
        the next episode's first frame (the observation the environment returned) and it
        bootstraps from there. The recorder below keeps the true flags either way."""
        self._obs: Any = None
        self._acts: np.ndarray | None = None
        self.reward_s = 0.0
        """Seconds spent computing learned rewards in ``step_wait`` so far (profiling)."""

    @classmethod
    def from_run(
        cls, venv: VecEnv, source: str | Path, normalize: Normalize = "run", threads: int | None = 1
    ) -> LearnedRewardVecEnv:
        """``venv`` with the reward of a run directory or ``reward.safetensors`` file ``source``
        (see :func:`~prefrl.agents.saved_reward.load_learned_reward`), checked against its spaces;
        each step's reward runs on ``threads`` torch threads (``None``: the process's)."""

        reward = load_learned_reward(source, normalize, threads=threads)
        check_spaces(reward.net, venv.observation_space, venv.action_space, source)
        return cls(venv, reward)

    def reset(self) -> VecEnvObs:
        self._obs = self.venv.reset()
        return self._obs

    def step_async(self, actions: np.ndarray) -> None:
        self._acts = np.asarray(actions)
        self.venv.step_async(actions)

    def step_wait(self) -> VecEnvStepReturn:
        obs, true_rews, dones, infos = self.venv.step_wait()
        if isinstance(obs, tuple) or self._acts is None:
            raise TypeError("a learned reward reads array or dict observations after step_async (no tuples)")
        next_obs = obs
        if np.any(dones):  # swap in the real last observation of finished episodes
            rows = [
                infos[i]["terminal_observation"] if dones[i] else self._row(obs, i) for i in range(len(dones))
            ]
            next_obs = obs_stack(rows)
        terminal = np.array(
            [bool(d) and not info.get("TimeLimit.truncated", False) for d, info in zip(dones, infos)]
        )
        t0 = time.perf_counter()
        rews, raw = self.reward(self._obs, self._acts, next_obs, terminal)
        self.reward_s += time.perf_counter() - t0
        for i, info in enumerate(infos):
            info["true_reward"] = float(true_rews[i])
            info["learned_reward"] = float(raw[i])
        if self.hide_terminations and terminal.any():  # the recorder below kept the true flags
            if self.hidden_end == "truncation":
                for k in np.flatnonzero(terminal):
                    infos[k]["TimeLimit.truncated"] = True
            else:  # the next episode's first frame (obs) follows on, as if nothing had ended
                dones = np.where(terminal, False, dones)
        self._obs = obs
        return obs, rews.astype(np.float32), dones, infos

    @staticmethod
    def _row(obs: Obs, i: int) -> Obs:
        return {k: v[i] for k, v in obs.items()} if isinstance(obs, dict) else obs[i]


@overload
def learned_reward_env(
    env: VecEnv, source: str | Path, normalize: Normalize = "run", threads: int | None = 1
) -> LearnedRewardVecEnv: ...
@overload
def learned_reward_env(
    env: VectorEnv, source: str | Path, normalize: Normalize = "run", threads: int | None = 1
) -> LearnedRewardVectorWrapper: ...
@overload
def learned_reward_env(
    env: gym.Env, source: str | Path, normalize: Normalize = "run", threads: int | None = 1
) -> LearnedRewardWrapper: ...
def learned_reward_env(
    env: VecEnv | VectorEnv | gym.Env,
    source: str | Path,
    normalize: Normalize = "run",
    threads: int | None = 1,
) -> LearnedRewardVecEnv | LearnedRewardVectorWrapper | LearnedRewardWrapper:
    """``env`` (a ``gymnasium.Env``, a Gymnasium ``VectorEnv`` or an SB3 ``VecEnv``) with the reward of
    ``source``, in the matching wrapper of this module (``threads``: as ``from_run``'s)."""
    if isinstance(env, VecEnv):
        return LearnedRewardVecEnv.from_run(env, source, normalize, threads)
    if isinstance(env, VectorEnv):
        return LearnedRewardVectorWrapper.from_run(env, source, normalize, threads)
    if isinstance(env, gym.Env):
        return LearnedRewardWrapper.from_run(env, source, normalize, threads)
    raise TypeError(f"expected a gymnasium.Env, a gymnasium VectorEnv or an SB3 VecEnv, got {type(env)}")


def zoo_wrapper(env: gym.Env, run_dir: str, normalize: Normalize = "run", threads: int | None = 1) -> gym.Env:
    """RL Baselines3 Zoo's ``env_wrapper``: the learned reward of ``run_dir`` (a run directory or a
    reward file) in place of the environment's. In a hyperparameter file::

        Pendulum-v1:
          env_wrapper:
            - prefrl.agents.learned_reward.zoo_wrapper:
                run_dir: runs/pendulum

    The Zoo's ``Monitor`` sits below the wrapper, so its episode returns (``rollout/ep_rew_mean``,
    ``monitor.csv``) stay the true ones.

    ``threads``: CPU threads of the process the Zoo builds the environment in, set when it does
    (:func:`prefrl.threads.set_threads`), as the Zoo's ``--num-threads`` would: the Zoo trains on
    torch's default of one thread per core unless told, which on a loaded machine makes its agent
    many times slower. ``threads: null`` keeps the Zoo's setting (``--num-threads`` or torch's
    default). The learned reward runs on one thread per step either way.
    """
    if threads is not None:
        set_threads(threads)
    return LearnedRewardWrapper.from_run(env, run_dir, normalize)
