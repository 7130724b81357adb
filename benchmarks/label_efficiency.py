"""Label efficiency: learned-reward training vs the oracle (true reward), same agent and steps.

    python benchmarks/label_efficiency.py --env Pendulum-v1 --labels 20 --steps 15000 --seeds 3

For each seed it trains with a learned reward (``prefrl train``) and, with the same agent
and number of steps, on the true reward (the oracle), evaluates both on the true reward,
and prints as its last line one JSON object with ``median_normalized_score``, ``scores``
(per seed), ``oracle_return``, ``random_return``, ``learned_return`` and ``wall_s``, where
score = (return - random) / (oracle - random). Every final policy is saved in SB3's own
format inside its run directory.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from prefrl.agents.evaluate import evaluate_returns
from prefrl.agents.sb3 import AgentConfig, check_env_id, make_agent, make_vec_env
from prefrl.cli.train import TrainConfig, train
from prefrl.storage.checkpoint import write_json
from prefrl.teachers import PRESETS


def oracle_run(agent_cfg: AgentConfig, env_id: str, steps: int, seed: int, run_dir: Path, episodes: int,
               learning_starts: int) -> tuple[float, float]:  # fmt: skip
    """Train the same agent on the true reward; returns (mean true return, wall seconds)."""
    t0 = time.perf_counter()
    agent = make_agent(agent_cfg, make_vec_env(env_id, agent_cfg.n_envs, seed=seed), seed=seed,
                       learning_starts=learning_starts)  # fmt: skip
    agent.learn(steps)
    wall = time.perf_counter() - t0
    run_dir.mkdir(parents=True, exist_ok=True)
    agent.save(str(run_dir / "policy.zip"))
    return float(evaluate_returns(env_id, agent, episodes).mean()), wall


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="Pendulum-v1", help="any Gymnasium environment id")
    p.add_argument("--labels", type=int, default=20, help="label budget per run")
    p.add_argument("--steps", type=int, default=15_000, help="environment steps per run")
    p.add_argument("--seeds", type=int, default=3, help="number of seeds (0 .. N-1)")
    p.add_argument("--agent", default="sac", choices=["sac", "td3", "ppo", "a2c"], help="RL agent")
    p.add_argument("--teacher", default="oracle", choices=list(PRESETS), help="simulated teacher preset")
    p.add_argument("--iterations", type=int, default=14, help="reward-update iterations")
    p.add_argument("--eval-episodes", type=int, default=10, help="evaluation episodes per policy")
    p.add_argument("--out", default="runs/label_efficiency", help="directory for the run directories")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    a = p.parse_args(argv)
    check_env_id(a.env)
    torch.set_num_threads(a.threads)
    t_all = time.perf_counter()
    out = Path(a.out) / f"{a.env}-{a.agent}-{a.teacher}-{a.labels}l-{a.steps}s"
    initial = min(1000, a.steps // 10)
    agent_cfg = AgentConfig(algo=a.agent)
    random_ret = float(evaluate_returns(a.env, None, a.eval_episodes).mean())
    learned, oracle, walls_l, walls_o = [], [], [], []
    for seed in range(a.seeds):
        cfg = TrainConfig(seed=seed, teacher=a.teacher, run_dir=str(out / f"learned-seed{seed}"), force=True,
                          progress=False, eval_episodes=a.eval_episodes, agent=agent_cfg, threads=a.threads)  # fmt: skip
        cfg.env.id = a.env
        cfg.loop.total_steps, cfg.loop.total_labels = a.steps, a.labels
        cfg.loop.iterations, cfg.loop.initial_steps = a.iterations, initial
        rep = train(cfg)
        learned.append(rep["true_return"])
        walls_l.append(rep["train_wall_s"])
        ret, wall = oracle_run(agent_cfg, a.env, a.steps, seed, out / f"oracle-seed{seed}", a.eval_episodes, initial)
        oracle.append(ret)
        walls_o.append(wall)
        print(f"seed {seed}: learned {learned[-1]:.1f} ({walls_l[-1]:.0f}s)  oracle {ret:.1f} ({wall:.0f}s)  "
              f"random {random_ret:.1f}", file=sys.stderr, flush=True)  # fmt: skip
    oracle_mean = float(np.mean(oracle))
    denom = oracle_mean - random_ret
    scores = [(r - random_ret) / denom if denom != 0 else float("nan") for r in learned]
    result = {
        "env": a.env, "agent": a.agent, "teacher": a.teacher, "labels": a.labels, "steps": a.steps,
        "seeds": a.seeds, "median_normalized_score": float(np.median(scores)), "scores": scores,
        "learned_returns": learned, "oracle_returns": oracle, "learned_return": float(np.mean(learned)),
        "oracle_return": oracle_mean, "random_return": random_ret,
        "learned_train_wall_s": float(np.mean(walls_l)), "oracle_train_wall_s": float(np.mean(walls_o)),
        "wall_ratio": float(np.mean(walls_l) / np.mean(walls_o)), "wall_s": time.perf_counter() - t_all,
    }  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "result.json", result)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
