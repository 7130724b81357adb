"""Agent backends side by side: stable-baselines3 (PyTorch) against SBX (its JAX port).

    python benchmarks/agent_backends.py --env Pendulum-v1 --labels 10 --steps 15000 --seeds 2

For each seed, in this one process and one after the other (so a machine whose speed drifts
affects both), it runs with each backend the default ``prefrl train`` run (learned reward,
simulated labels) and the same agent on the true reward for the same steps, and evaluates
every final policy on the environment's own reward. The last line is one JSON object per
backend (``sb3``, ``sbx``): environment steps per second and CPU seconds of both runs,
returns, and the score ``(learned - random) / (true-reward agent - random)`` against that
backend's own true-reward agent; plus ``speedup`` (SB3 wall time / SBX wall time of the
learned runs) and ``score_change`` (SBX median score - SB3 median score).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from prefrl.agents.evaluate import evaluate_returns, train_on_true_reward
from prefrl.agents.sb3 import AgentConfig, make_env, resolve_algo
from prefrl.envs.config import EnvConfig
from prefrl.run.config import TrainConfig
from prefrl.run.sweep_report import normalized_score
from prefrl.run.train import train
from prefrl.training.config import LoopConfig

BACKENDS = ("sb3", "sbx")


def one_seed(a: argparse.Namespace, backend: str, seed: int, root: Path) -> dict[str, float]:
    """The learned and the true-reward run of ``backend`` for ``seed`` (returns, wall and CPU s)."""
    cfg = TrainConfig(seed=seed, run_dir=str(root / f"{backend}-learned-{seed}"), progress=False,
                      eval_episodes=a.eval_episodes, threads=1, env=EnvConfig(id=a.env),
                      agent=AgentConfig(backend=backend),
                      loop=LoopConfig(total_labels=a.labels, total_steps=a.steps))  # fmt: skip
    rep = train(cfg)
    agent = AgentConfig(algo=resolve_algo("auto", make_env(a.env).action_space), backend=backend)
    initial = min(1000, a.steps // 10)
    ret, wall, cpu = train_on_true_reward(agent, a.env, a.steps, seed, root / f"{backend}-oracle-{seed}",
                                          a.eval_episodes, learning_starts=initial)  # fmt: skip
    return {"learned_return": float(rep["true_return"]), "learned_wall_s": float(rep["train_wall_s"]),
            "learned_cpu_s": float(rep["train_cpu_s"]), "oracle_return": ret, "oracle_wall_s": wall,
            "oracle_cpu_s": cpu}  # fmt: skip


def summarize(runs: list[dict[str, float]], steps: int, random_return: float) -> dict[str, Any]:
    scores = [normalized_score(r["learned_return"], r["oracle_return"], random_return) for r in runs]
    med = statistics.median
    return {
        "scores": scores,
        "median_normalized_score": med(scores),
        "learned_returns": [r["learned_return"] for r in runs],
        "oracle_returns": [r["oracle_return"] for r in runs],
        "learned_steps_per_s": med(steps / r["learned_wall_s"] for r in runs),
        "oracle_steps_per_s": med(steps / r["oracle_wall_s"] for r in runs),
        "learned_cpu_s": med(r["learned_cpu_s"] for r in runs),
        "oracle_cpu_s": med(r["oracle_cpu_s"] for r in runs),
        "learned_wall_s": med(r["learned_wall_s"] for r in runs),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="Pendulum-v1", help="Gymnasium id with continuous actions (SAC)")
    p.add_argument("--labels", type=int, default=10, help="label budget of the learned runs")
    p.add_argument("--steps", type=int, default=15_000, help="environment steps per run")
    p.add_argument("--seeds", type=int, default=2, help="seeds 0 .. N-1")
    p.add_argument("--eval-episodes", type=int, default=10, help="evaluation episodes per policy")
    p.add_argument("--out", default=None, help="directory for the runs (default: a temporary one)")
    a = p.parse_args(argv)
    try:
        import sbx  # noqa: F401
    except ImportError:
        print('agent_backends: needs SBX: pip install "prefrl[sbx]"', file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    root = Path(a.out or tempfile.mkdtemp(prefix="prefrl-backends-"))
    random_return = float(np.mean(evaluate_returns(a.env, None, a.eval_episodes)))
    runs: dict[str, list[dict[str, float]]] = {b: [] for b in BACKENDS}
    for seed in range(a.seeds):
        for backend in BACKENDS:
            runs[backend].append(one_seed(a, backend, seed, root))
            print(f"seed {seed} {backend}: {json.dumps(runs[backend][-1])}", file=sys.stderr, flush=True)
    out: dict[str, Any] = {b: summarize(runs[b], a.steps, random_return) for b in BACKENDS}
    out.update(
        env=a.env,
        labels=a.labels,
        steps=a.steps,
        seeds=list(range(a.seeds)),
        random_return=random_return,
        speedup=out["sb3"]["learned_wall_s"] / out["sbx"]["learned_wall_s"],
        score_change=out["sbx"]["median_normalized_score"] - out["sb3"]["median_normalized_score"],
    )
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
