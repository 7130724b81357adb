"""The pieces of a run that every kind of run shares: its directory, its devices, the reward
output chosen by probing the environment, the agent's TensorBoard log and the held-out
accuracy of a reward (used by :mod:`prefrl.run.train` and :mod:`prefrl.run.reward_from`)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from prefrl.agents.sb3 import (
    make_env,
)
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.preference.trainer import true_pair_accuracy
from prefrl.rewards.nets import RewardNet
from prefrl.run.config import TrainConfig, config_to_dict
from prefrl.run.identity import claim_identity
from prefrl.run.resume_check import read_run_config
from prefrl.seeding import stream, stream_seed
from prefrl.storage.checkpoint import write_json


def prepare_run_dir(cfg: TrainConfig) -> Path:
    """Create (or, on resume, check) the run directory of a resolved config (its ``run_dir`` and
    ``run_id`` set: :func:`~prefrl.run.resolve.resolve_identity`) and write ``config.json``."""
    if cfg.resume is not None:
        run = Path(cfg.resume)
        read_run_config(run)  # one line for a path that is not a run
        return run
    if cfg.run_dir is None or cfg.run_id is None:
        raise ValueError("prepare_run_dir needs a resolved config (prefrl.run.resolve.resolve)")
    run = Path(cfg.run_dir)
    claim_identity(cfg, run)  # refused if the query store already has its name's queries
    if run.exists() and any(run.iterdir()):
        if not cfg.force:
            raise FileExistsError(
                f"run directory {run} already exists; pass --force to overwrite it "
                f"or --resume {run} to continue"
            )
        shutil.rmtree(run)
    run.mkdir(parents=True, exist_ok=True)
    write_json(run / "config.json", config_to_dict(cfg))
    return run


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``; others checked to exist."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(device)
    except RuntimeError as e:
        raise ValueError(f"--device {device!r}: not a device (auto, cpu, cuda or cuda:N)") from e
    if dev.type == "cuda":
        n = torch.cuda.device_count()
        if n == 0:
            raise ValueError(f"--device {device}: no CUDA device is visible here (use --device cpu or auto)")
        if dev.index is not None and dev.index >= n:
            raise ValueError(f"--device {device}: only {n} CUDA device(s) (cuda:0 .. cuda:{n - 1})")
    elif dev.type != "cpu":
        raise ValueError(f"--device {device!r}: prefrl runs on cpu or cuda")
    return device


def random_actions_terminate(cfg: TrainConfig, env_kwargs: dict[str, Any]) -> bool:
    """Whether random actions reach a termination (a fall, a goal) within
    ``--loop.initial-steps`` steps (at most 2,000), rather than only time limits."""
    from prefrl.agents.rollout import collect_episodes

    env = make_env(cfg.env.id, env_kwargs)
    try:
        steps = max(1, min(cfg.loop.initial_steps, 2000))
        batch = collect_episodes(env, n_steps=steps, seed=stream_seed(cfg.seed, "reward_output"))
    finally:
        env.close()
    return bool(np.any(batch.terminated))


def resolve_reward_output(terminates: bool) -> Literal["linear", "tanh"]:
    """``--reward.output auto``: tanh where random actions reach a termination
    (:func:`random_actions_terminate`), linear where they only meet time limits.

    Measured (docs/benchmarks/label-efficiency.md): the bounded output fixed InvertedPendulum and
    Hopper and left CartPole, Acrobot and the double pendulum at the oracle's level; on
    HalfCheetah, which never terminates, the linear output scored higher.
    """
    return "tanh" if terminates else "linear"


STEPS_PER_LABEL, BROAD_L2 = 100, 0.01
"""A broad first reward (``--loop.initial-steps-per-label`` and ``--trainer.l2-init`` auto, where
random episodes run to their time limit): random steps per label before the first query, and
the L2 coefficient of the reward fit."""


def resolve_steps_per_label(broad: bool) -> int:
    """``--loop.initial-steps-per-label auto``: :data:`STEPS_PER_LABEL` where random actions only
    meet time limits (``broad``: a few long episodes, 1,000 steps are one HalfCheetah episode and
    the initial queries' clips overlap), none where they reach a termination (1,000 steps
    already hold many short episodes).

    Measured with the L2 of :data:`BROAD_L2` (docs/benchmarks/defaults.md):
    HalfCheetah-v5 50 oracle labels 0.71 -> 1.14 (5 seeds), 100 mistake labels 0.64 -> 1.05,
    Swimmer and Reacher up, Pendulum and Acrobot unchanged; on Hopper, whose random actions
    fall, it lost two seeds of three.
    """
    return STEPS_PER_LABEL if broad else 0


def log_agent(agent: Any, run_dir: Path) -> None:
    """Send SB3's own metrics (``rollout/ep_rew_mean``, ``train/actor_loss``, ...) to TensorBoard,
    in ``RUN/tb/agent`` beside prefrl's metrics (``tensorboard --logdir RUN/tb`` shows both)."""
    if agent is None:
        return
    from stable_baselines3.common.logger import configure

    agent.set_logger(configure(str(run_dir / "tb" / "agent"), ["tensorboard"]))


def reward_accuracy(
    cfg: TrainConfig, net: RewardNet, agent: Any, n_pairs: int = 500, fragment_length: int | None = None
) -> float | None:
    """Accuracy of the learned reward on fresh oracle-labelled pairs of policy + random clips
    (``fragment_length`` transitions each: the loop's clips, by default the config's).

    Only pairs with a strict preference count; ``None`` when every pair is a tie (or no
    clip can be drawn).
    """
    env = make_env(cfg.env.id, cfg.env.parsed_kwargs())
    try:
        from prefrl.agents.rollout import collect_episodes

        parts = [collect_episodes(env, n_steps=2000, seed=stream_seed(cfg.seed, "accuracy_random"))]
        if agent is not None:
            parts.append(
                collect_episodes(
                    env,
                    n_steps=2000,
                    seed=stream_seed(cfg.seed, "accuracy_policy"),
                    policy=lambda o: agent.predict(o)[0],
                )
            )
        batch = TrajectoryBatch.concat(parts)
        length = cfg.loop.fragment_length if fragment_length is None else fragment_length
        return true_pair_accuracy(net, batch, n_pairs, length, stream(cfg.seed, "accuracy_pairs"))
    except ValueError:
        return None
    finally:
        env.close()
