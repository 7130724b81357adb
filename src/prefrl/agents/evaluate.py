"""Measure policies on the true reward (and optionally record videos)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from prefrl.agents.rollout import collect_episodes
from prefrl.agents.sb3 import make_env


def evaluate_returns(
    env_id: str,
    agent: Any = None,
    n_episodes: int = 10,
    seed: int = 10_000,
    env_kwargs: dict[str, Any] | None = None,
    deterministic: bool = True,
    video_dir: str | Path | None = None,
    fps: int = 30,
) -> np.ndarray:
    """``[n_episodes]`` true returns of ``agent`` (random actions when ``None``).

    With ``video_dir``, each episode is also written as ``episode_<i>.mp4`` there.
    """
    env = make_env(env_id, env_kwargs, render=video_dir is not None)
    policy = None if agent is None else (lambda o: agent.predict(o, deterministic=deterministic)[0])
    try:
        batch = collect_episodes(
            env, n_episodes=n_episodes, policy=policy, seed=seed, render=video_dir is not None
        )
    finally:
        env.close()
    if video_dir is not None:
        import imageio.v2 as imageio

        out = Path(video_dir)
        out.mkdir(parents=True, exist_ok=True)
        for i, ep in enumerate(batch):
            assert ep.infos is not None
            imageio.mimsave(out / f"episode_{i}.mp4", list(ep.infos["frames"]), fps=fps)
    return batch.episode_returns()
