"""Measure policies on the true reward (and optionally record videos)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from prefrl.agents.rollout import collect_episodes
from prefrl.agents.sb3 import discrete_on_images, make_env
from prefrl.data.trajectories import TrajectoryBatch

SAMPLED, DETERMINISTIC = "sampled", "deterministic"
"""The two ways a policy is evaluated (see :func:`samples_actions`)."""


def samples_actions(env: gym.Env) -> bool:
    """Whether a policy is evaluated by sampling its actions (``True``) rather than by its most
    likely / mean action: for ``Discrete`` actions on image observations (a ``uint8`` image,
    or a Dict holding one), as RL Baselines3 Zoo evaluates Atari and MiniGrid policies.

    There, the argmax of a policy that still hesitates between two moves can repeat one
    state-action loop until the time limit (a dot stepping back and forth beside its target),
    whereas the policy that was trained, the sampling one, leaves it. Continuous actions (the
    mean action) and vector observations keep deterministic evaluation. Learned and
    true-reward agents of a benchmark are evaluated the same way.
    """
    return discrete_on_images(env.observation_space, env.action_space)


def evaluation_mode(env_id: str, env_kwargs: dict[str, Any] | None = None) -> str:
    """``"sampled"`` or ``"deterministic"``: how :func:`evaluate_returns` evaluates a policy on
    this environment by default (:func:`samples_actions`)."""
    env = make_env(env_id, env_kwargs)
    try:
        return SAMPLED if samples_actions(env) else DETERMINISTIC
    finally:
        env.close()


def evaluate_returns(
    env_id: str,
    agent: Any = None,
    n_episodes: int = 10,
    seed: int = 10_000,
    env_kwargs: dict[str, Any] | None = None,
    deterministic: bool | None = None,
    video_dir: str | Path | None = None,
    fps: int = 30,
) -> np.ndarray:
    """``[n_episodes]`` true returns of ``agent`` (random actions when ``None``).

    ``deterministic``: act by the policy's most likely (mean) action, or sample; ``None``
    (default): as :func:`samples_actions` says for this environment; sampled actions are drawn
    from a torch generator seeded with ``seed`` (the same returns on every call), leaving the
    global one as it was. With ``video_dir``, each episode is also written as ``episode_<i>.mp4``
    there.
    """
    batch = evaluate_episodes(env_id, agent, n_episodes, seed, env_kwargs, deterministic, video_dir, fps)
    return batch.episode_returns()


def evaluate_episodes(
    env_id: str,
    agent: Any = None,
    n_episodes: int = 10,
    seed: int = 10_000,
    env_kwargs: dict[str, Any] | None = None,
    deterministic: bool | None = None,
    video_dir: str | Path | None = None,
    fps: int = 30,
) -> TrajectoryBatch:
    """The episodes of :func:`evaluate_returns` (same arguments, same episodes): returns, and how
    each ended (``terminated``, ``truncated``, ``lengths``, each ``[n_episodes]``)."""
    import torch

    env = make_env(env_id, env_kwargs, render=video_dir is not None)
    if deterministic is None:
        deterministic = not samples_actions(env)
    policy = None if agent is None else (lambda o: agent.predict(o, deterministic=deterministic)[0])
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            batch = collect_episodes(
                env, n_episodes=n_episodes, policy=policy, seed=seed, render=video_dir is not None
            )
    finally:
        env.close()
    if video_dir is not None:
        import imageio.v2 as imageio

        from prefrl.storage.ffmpeg import die_with_parent_encoders

        die_with_parent_encoders()  # a killed process leaves no ffmpeg behind
        out = Path(video_dir)
        out.mkdir(parents=True, exist_ok=True)
        for i, ep in enumerate(batch):
            assert ep.infos is not None
            imageio.mimsave(out / f"episode_{i}.mp4", list(ep.infos["frames"]), fps=fps)
    return batch


def train_on_true_reward(
    agent_cfg: Any,
    env_id: str,
    steps: int,
    seed: int,
    run_dir: str | Path,
    episodes: int = 10,
    learning_starts: int = 0,
    env_kwargs: dict[str, Any] | None = None,
) -> tuple[float, float, float]:
    """The reference run: the same agent trained on the environment's own reward.

    ``env_kwargs``: gym.make's keyword arguments and make_env's wrapper options, as the learned
    run's (the reference must train and be evaluated on the same environment).
    Saves ``run_dir/policy.zip``; returns (mean true return over ``episodes``, wall s, CPU s).
    """
    import time

    from prefrl.agents.policy_io import save_agent
    from prefrl.agents.sb3 import make_agent, make_vec_env

    t0, c0 = time.perf_counter(), time.process_time()
    venv = make_vec_env(env_id, agent_cfg.n_envs, env_kwargs, seed=seed)
    agent = make_agent(agent_cfg, venv, seed=seed, learning_starts=learning_starts)
    agent.learn(steps)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    save_agent(agent, Path(run_dir) / "policy.zip")
    return float(evaluate_returns(env_id, agent, episodes, env_kwargs=env_kwargs).mean()), wall, cpu
