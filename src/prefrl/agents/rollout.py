"""Collect episodes from a Gymnasium environment into a :class:`TrajectoryBatch`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from prefrl.agents.protocols import Env
from prefrl.data.arrays import obs_map
from prefrl.data.trajectories import Trajectory, TrajectoryBatch

Policy = Callable[[Any], Any]


def _stack(items: list[Any]) -> Any:
    if isinstance(items[0], dict):
        return {k: np.stack([o[k] for o in items]) for k in items[0]}
    return np.stack(items)


def collect_episodes(
    env: Env,
    n_episodes: int | None = None,
    n_steps: int | None = None,
    policy: Policy | None = None,
    seed: int | None = None,
    render: bool = False,
) -> TrajectoryBatch:
    """Run ``policy`` (random actions when ``None``) for whole episodes.

    Stops after ``n_episodes`` episodes or once ``n_steps`` transitions were collected
    (the last episode is cut and marked truncated). With ``render``, ``env.render()``
    frames are kept in ``infos["frames"]`` (``[T, H, W, 3]`` per episode, last frame dropped).
    """
    if (n_episodes is None) == (n_steps is None):
        raise ValueError("give exactly one of n_episodes and n_steps")
    trajs: list[Trajectory] = []
    total = 0
    obs, _ = env.reset(seed=seed)
    if seed is not None:
        env.action_space.seed(seed)
    while True:
        o_list, a_list, r_list, frames = [obs], [], [], []
        terminated = truncated = False
        while not (terminated or truncated):
            if render:
                frames.append(np.asarray(env.render()))
            act = env.action_space.sample() if policy is None else policy(obs)
            obs, rew, terminated, truncated, _ = env.step(act)
            o_list.append(obs)
            a_list.append(np.asarray(act))
            r_list.append(float(rew))
            total += 1
            if n_steps is not None and total >= n_steps:
                truncated = truncated or not terminated
                break
        infos = {"frames": np.stack(frames)} if render else None
        trajs.append(
            Trajectory(
                obs=obs_map(np.asarray, _stack(o_list)),
                acts=np.stack(a_list),
                rews=np.asarray(r_list, dtype=np.float32),
                terminated=bool(terminated),
                truncated=bool(truncated),
                infos=infos,
            )
        )
        if (n_episodes is not None and len(trajs) >= n_episodes) or (
            n_steps is not None and total >= n_steps
        ):
            return TrajectoryBatch.from_trajectories(trajs)
        obs, _ = env.reset()
