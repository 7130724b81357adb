"""``prefrl evaluate RUN``: measure a run's policy on the true reward and record videos."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import tyro

from prefrl.agents.evaluate import DETERMINISTIC, SAMPLED, evaluate_returns, evaluation_mode
from prefrl.agents.policy_io import load_agent
from prefrl.agents.sb3 import AUTO, make_env, make_vec_env, resolve_algo
from prefrl.config_types import OptBool
from prefrl.envs.config import EnvConfig
from prefrl.storage.checkpoint import dumps, read_json, write_json
from prefrl.threads import DEFAULT_THREADS, set_threads


@dataclass(frozen=True)
class EvaluateConfig:
    """Evaluate the final policy of a run directory on the environment's true reward."""

    run: tyro.conf.Positional[str]
    """The run directory (written by prefrl train)."""
    episodes: int = 10
    """Number of evaluation episodes."""
    videos: int = 0
    """Record this many of the episodes as MP4 files in RUN/videos/ (0: none)."""
    policy: str = "policy.zip"
    """Policy file inside the run directory."""
    deterministic: OptBool = None
    """Act by the policy's most likely (mean) action (true), or sample actions (false). None
    (auto): sample for discrete actions on image observations (as RL Baselines3 Zoo evaluates
    Atari policies, whose argmax can loop until the time limit), else deterministic."""
    seed: int = 10_000
    """Seed of the evaluation episodes."""
    threads: int = DEFAULT_THREADS
    """CPU threads for torch and BLAS (1 avoids oversubscription on small shared machines)."""


def evaluate_run(cfg: EvaluateConfig) -> dict[str, float]:
    run = Path(cfg.run)
    conf = read_json(run / "config.json", "run config (is this a prefrl run directory?)")
    env_id, algo = conf["env"]["id"], conf["agent"]["algo"]
    env_kwargs = EnvConfig(**conf["env"]).parsed_kwargs()  # with the wrapper options (hide_score, ...)
    if algo == AUTO:  # a hand-written config: the agent prefrl train would have chosen
        probe = make_env(env_id, env_kwargs)
        algo = resolve_algo(algo, probe.action_space)
        probe.close()
    venv = make_vec_env(env_id, 1, env_kwargs, seed=cfg.seed)
    agent = load_agent(algo, run / cfg.policy, venv, backend=conf["agent"].get("backend", "sb3"))
    if cfg.deterministic is None:
        mode = evaluation_mode(env_id, env_kwargs)
    else:
        mode = DETERMINISTIC if cfg.deterministic else SAMPLED
    rets = evaluate_returns(env_id, agent, cfg.episodes, cfg.seed, env_kwargs, mode == DETERMINISTIC)
    rand = evaluate_returns(env_id, None, cfg.episodes, cfg.seed, env_kwargs)
    if cfg.videos > 0:
        evaluate_returns(
            env_id, agent, cfg.videos, cfg.seed, env_kwargs, mode == DETERMINISTIC, video_dir=run / "videos"
        )
    result = {
        "env": env_id,
        "episodes": cfg.episodes,
        "eval": mode,
        "true_return": float(rets.mean()),
        "true_return_std": float(rets.std()),
        "random_return": float(rand.mean()),
    }
    write_json(run / "evaluation.json", result)
    return result


def main(argv: list[str]) -> int:
    cfg = tyro.cli(EvaluateConfig, args=argv, prog="prefrl evaluate")
    try:
        set_threads(cfg.threads)
        result = evaluate_run(cfg)
    except (ValueError, FileNotFoundError, KeyError) as e:
        print(f"prefrl evaluate: error: {e}", file=sys.stderr)
        return 2
    print(dumps(result))
    return 0
