"""``prefrl rollouts``: write trajectories of a policy (or of random actions) to a file."""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field
from typing import Annotated, Literal

import tyro

from prefrl.agents.policy_io import load_agent
from prefrl.agents.rollout import collect_episodes
from prefrl.agents.sb3 import make_env, make_vec_env
from prefrl.envs.config import EnvConfig
from prefrl.threads import DEFAULT_THREADS, set_threads


@dataclass(frozen=True)
class RolloutsConfig:
    """Collect episodes into a prefrl trajectory file (.npz), e.g. for offline reward learning."""

    out: str
    """Output file (.npz)."""
    env: EnvConfig = field(default_factory=EnvConfig)
    """The environment (the same options as prefrl train --env.*)."""
    policy: Annotated[
        str | None, tyro.conf.arg(metavar="FILE", help_behavior_hint="(default: random actions)")
    ] = None
    """A policy.zip written by prefrl (train or the benchmarks; prefrl's own format)."""
    algo: str = "auto"
    """Algorithm of --policy: sac | td3 | dqn | ppo | a2c; auto: the one the file names."""
    backend: Literal["sb3", "sbx"] = "sb3"
    """Library that wrote --policy: sb3 (stable-baselines3) or sbx (its JAX port)."""
    episodes: Annotated[int | None, tyro.conf.arg(metavar="INT", help_behavior_hint="(default: 10)")] = None
    """Number of episodes (give this or --steps)."""
    steps: Annotated[int | None, tyro.conf.arg(metavar="INT", help_behavior_hint="(optional)")] = None
    """Number of transitions (give this or --episodes)."""
    render: bool = False
    """Also store rendered frames (for human labelling)."""
    deterministic: bool = False
    """Act deterministically."""
    seed: int = 0
    """Seed."""
    threads: int = DEFAULT_THREADS
    """CPU threads for torch and BLAS (1 avoids oversubscription on small shared machines)."""


def main(argv: list[str]) -> int:
    cfg = tyro.cli(RolloutsConfig, args=argv, prog="prefrl rollouts")
    try:
        set_threads(cfg.threads)
        if cfg.episodes is None and cfg.steps is None:
            cfg = dataclasses.replace(cfg, episodes=10)
        env = make_env(cfg.env.id, cfg.env.parsed_kwargs(), render=cfg.render)
        agent = None
        if cfg.policy is not None:
            venv = make_vec_env(cfg.env.id, 1, cfg.env.parsed_kwargs())
            agent = load_agent(cfg.algo, cfg.policy, venv, backend=cfg.backend)
        policy = None if agent is None else (lambda o: agent.predict(o, deterministic=cfg.deterministic)[0])
        batch = collect_episodes(env, cfg.episodes, cfg.steps, policy, cfg.seed, cfg.render)
        path = batch.save(cfg.out)
    except (ValueError, FileNotFoundError, json.JSONDecodeError) as e:
        print(f"prefrl rollouts: error: {e}", file=sys.stderr)
        return 2
    rets = batch.episode_returns() if batch.rews is not None else None
    print(
        json.dumps(
            {
                "path": str(path),
                "episodes": len(batch),
                "steps": batch.num_steps,
                "mean_return": None if rets is None else float(rets.mean()),
            }
        )
    )
    return 0
