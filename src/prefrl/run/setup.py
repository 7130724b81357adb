"""The pieces of a run that every kind of run builds from its resolved config
(:mod:`prefrl.run.resolve`): its directory, the agent's TensorBoard log and the held-out accuracy
of a reward (used by :mod:`prefrl.run.train` and :mod:`prefrl.run.reward_from`)."""

from __future__ import annotations

import shutil
from pathlib import Path

from prefrl.agents.protocols import Agent
from prefrl.agents.sb3 import make_env
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


def log_agent(agent: Agent | None, run_dir: Path) -> None:
    """Send SB3's own metrics (``rollout/ep_rew_mean``, ``train/actor_loss``, ...) to TensorBoard,
    in ``RUN/tb/agent`` beside prefrl's metrics (``tensorboard --logdir RUN/tb`` shows both)."""
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.logger import configure

    if not isinstance(agent, BaseAlgorithm):  # no agent (offline), or one without SB3's logger
        return

    agent.set_logger(configure(str(run_dir / "tb" / "agent"), ["tensorboard"]))


def reward_accuracy(
    cfg: TrainConfig,
    net: RewardNet,
    agent: Agent | None,
    n_pairs: int = 500,
    fragment_length: int | None = None,
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
