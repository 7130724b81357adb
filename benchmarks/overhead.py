"""Where a default run's time goes, and the learned reward's CPU overhead over the true-reward run.

    python benchmarks/overhead.py --env Pendulum-v1 --steps 15000 --rounds 3

Each round trains, in this process and one after the other, the default ``prefrl train``
run (learned reward, oracle labels) and the same SAC agent on the true reward for the same
steps, and measures each one's CPU time (the true-reward run's evaluation excluded, as the
learned run's). Rounds alternate so that a machine whose speed drifts affects both. The
learned run's time is split into agent updates and environment steps, per-step learned
reward inference, reward training, relabelling the replay buffer, and the rest (queries,
held-out checks, checkpoints). The last line is one JSON object: ``cpu_ratio`` (median over
rounds of learned CPU / true-reward CPU) and the split in seconds and shares.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from prefrl.agents.evaluate import train_on_true_reward
from prefrl.agents.learned_reward import LearnedRewardVecEnv
from prefrl.agents.sb3 import AgentConfig
from prefrl.envs.config import EnvConfig
from prefrl.run.config import TrainConfig
from prefrl.run.train import build_run
from prefrl.training.config import LoopConfig


def _reward_env(agent: Any) -> LearnedRewardVecEnv:
    env = agent.get_env()
    while not isinstance(env, LearnedRewardVecEnv):
        env = env.venv
    return env


def learned_round(env_id: str, steps: int, seed: int, out: Path) -> dict[str, float]:
    cfg = TrainConfig(seed=seed, run_dir=str(out / f"learned-{seed}"), force=True, progress=False,
                      env=EnvConfig(id=env_id), loop=LoopConfig(total_steps=steps))  # fmt: skip
    r = build_run(cfg)
    venv = _reward_env(r.loop.agent)
    c0, t0 = time.process_time(), time.perf_counter()
    r.loop.run()
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    r.logger.close()
    hist = r.loop.state.history
    agent_s = sum(h.get("time/agent_s", 0.0) for h in hist)
    reward_s = sum(h.get("time/reward_s", 0.0) for h in hist)
    training = sum(h.get("reward/wall_s", 0.0) for h in hist)
    return {
        "cpu_s": cpu, "wall_s": wall, "agent_updates_and_env_steps_s": agent_s - venv.reward_s,
        "reward_inference_s": venv.reward_s, "reward_training_s": training, "relabel_s": reward_s - training,
        "other_s": wall - agent_s - reward_s,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="Pendulum-v1", help="Gymnasium id (a continuous-action env: SAC)")
    p.add_argument("--steps", type=int, default=15_000, help="environment steps per run")
    p.add_argument("--rounds", type=int, default=3, help="alternating learned / true-reward rounds")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(a.rounds):
            learned = learned_round(a.env, a.steps, k, Path(tmp))
            starts = min(1000, a.steps // 10)  # as the learned run's random-action start
            sac = AgentConfig(algo="sac")
            _, wall, cpu = train_on_true_reward(sac, a.env, a.steps, k, Path(tmp) / f"t{k}", 1, starts)
            rounds.append({"learned": learned, "true_reward_cpu_s": cpu, "true_reward_wall_s": wall,
                           "cpu_ratio": learned["cpu_s"] / cpu})  # fmt: skip
            print(f"round {k}: learned {learned['cpu_s']:.1f} s CPU, true reward {cpu:.1f} s CPU, "
                  f"ratio {learned['cpu_s'] / cpu:.3f}", file=sys.stderr, flush=True)  # fmt: skip
    split = {key: statistics.median(r["learned"][key] for r in rounds) for key in rounds[0]["learned"]}
    total = split["wall_s"]
    res = {
        "env": a.env, "steps": a.steps, "rounds": a.rounds,
        "cpu_ratio": statistics.median(r["cpu_ratio"] for r in rounds),
        "cpu_ratios": [r["cpu_ratio"] for r in rounds],
        "learned_split_s": split,
        "learned_split_share": {k: v / total for k, v in split.items() if k not in ("cpu_s", "wall_s")},
        "true_reward_cpu_s": statistics.median(r["true_reward_cpu_s"] for r in rounds),
    }  # fmt: skip
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
