"""Record the episodes a ``VecEnv`` plays, with true rewards, as :class:`TrajectoryBatch` es.

Place :class:`TrajectoryRecorder` directly around the environments (inside any reward
wrapper) so it sees the true reward and the actions actually executed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

from prefrl.data.arrays import Obs, obs_stack
from prefrl.data.trajectories import Trajectory, TrajectoryBatch


def _row(obs: VecEnvObs, i: int) -> Obs:
    return {k: np.array(v[i]) for k, v in obs.items()} if isinstance(obs, dict) else np.array(obs[i])


class TrajectoryRecorder(VecEnvWrapper):
    """Keeps every finished episode (obs, acts, true rews, frames when rendering).

    Args:
        venv: the environments (true reward).
        render: store ``get_images()`` frames in ``infos["frames"]`` (``render_mode="rgb_array"``
            environments), for human teachers.
        max_steps: keep at most this many recent finished transitions (oldest dropped).
    """

    def __init__(self, venv: VecEnv, render: bool = False, max_steps: int = 200_000) -> None:
        super().__init__(venv)
        self.render_frames, self.max_steps = render, max_steps
        self.finished: list[Trajectory] = []
        self.episode_returns: list[float] = []
        self.total_steps = 0
        self._reset_buffers()
        self._obs: Any = None

    def _reset_buffers(self) -> None:
        n = self.num_envs
        self._o: list[list[Obs]] = [[] for _ in range(n)]
        self._a: list[list[np.ndarray]] = [[] for _ in range(n)]
        self._r: list[list[float]] = [[] for _ in range(n)]
        self._f: list[list[np.ndarray]] = [[] for _ in range(n)]

    def reset(self) -> VecEnvObs:
        obs = self.venv.reset()
        self._reset_buffers()
        for i in range(self.num_envs):
            self._o[i].append(_row(obs, i))
        self._obs = obs
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        if self.render_frames:
            for i, img in enumerate(self.venv.get_images()):
                self._f[i].append(np.asarray(img, dtype=np.uint8))
        for i in range(self.num_envs):
            self._a[i].append(np.array(actions[i]))
        self.venv.step_async(actions)

    def step_wait(self) -> VecEnvStepReturn:
        obs, rews, dones, infos = self.venv.step_wait()
        self.total_steps += self.num_envs
        for i in range(self.num_envs):
            self._r[i].append(float(rews[i]))
            if dones[i]:
                self._o[i].append(infos[i]["terminal_observation"])
                truncated = bool(infos[i].get("TimeLimit.truncated", False))
                self._finish(i, terminated=not truncated, truncated=truncated)
                self._o[i].append(_row(obs, i))
            else:
                self._o[i].append(_row(obs, i))
        return obs, rews, dones, infos

    def _episode(self, i: int, terminated: bool, truncated: bool) -> Trajectory:
        frames = {"frames": np.stack(self._f[i])} if self.render_frames and self._f[i] else None
        return Trajectory(
            obs=obs_stack(self._o[i]),
            acts=np.stack(self._a[i]),
            rews=np.asarray(self._r[i], dtype=np.float32),
            terminated=terminated,
            truncated=truncated,
            infos=frames,
        )

    def _finish(self, i: int, terminated: bool, truncated: bool) -> None:
        traj = self._episode(i, terminated, truncated)
        self.finished.append(traj)
        assert traj.rews is not None  # the recorder keeps the env's rewards
        self.episode_returns.append(float(np.sum(traj.rews)))
        while sum(len(t) for t in self.finished) > self.max_steps and len(self.finished) > 1:
            self.finished.pop(0)
        self._o[i], self._a[i], self._r[i], self._f[i] = [], [], [], []

    def pop_episodes(self, include_partial: bool = False) -> TrajectoryBatch | None:
        """Finished episodes since the last call (``None`` if there are none).

        With ``include_partial``, unfinished episodes are added as truncated copies
        (they stay in progress).
        """
        trajs = list(self.finished)
        if include_partial:
            trajs += [self._episode(i, False, True) for i in range(self.num_envs) if self._a[i]]
        self.finished = []
        return TrajectoryBatch.from_trajectories(trajs) if trajs else None

    def pop_returns(self) -> list[float]:
        """True returns of episodes finished since the last call."""
        out, self.episode_returns = self.episode_returns, []
        return out
