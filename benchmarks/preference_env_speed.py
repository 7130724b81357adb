"""Steps per second of the moving dot wrapped in PreferenceEnv vs unwrapped.

The wrapped env returns the learned reward from the first step (``learned_after=0``, the
costly case: one reward pass per vector step) while the labeller and trainer
processes work in the background. Random actions, so the figure is the wrapper's own
overhead; an agent's policy would add the same cost to both sides. Optionally runs the
hand-written training loop example and reports the true return the agent reaches.

The two are timed in alternating rounds (a shared machine's speed drifts by 20% within a
minute); while the unwrapped env is timed, the wrapper's background processes are paused
(SIGSTOP), so the unwrapped figure has the machine to itself and the ratio includes what
the background labelling and training cost the environment process.

Prints JSON as its last line.

    python benchmarks/preference_env_speed.py --seconds 10 --learn-steps 100000
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
import tyro

import prefrl.envs.moving_dot  # noqa: F401
from prefrl.preference import RewardTrainerConfig
from prefrl.preference_env import PreferenceVectorEnv

ENV = "prefrl/MovingDot-v0"


@dataclass
class Args:
    seconds: float = 10.0
    """Measurement time per configuration and side (split into ``rounds``)."""
    rounds: int = 20
    """Alternating rounds of unwrapped / wrapped timing; the ratio is their median."""
    warmup_s: float = 15.0
    """Stepping before measuring the wrapped env, so reward training is under way."""
    num_envs: tuple[int, ...] = (1, 8)
    """Vector sizes to measure (sync vector envs)."""
    obs_type: str = "pixels"
    """``pixels`` (CNN reward) or ``state`` (MLP reward)."""
    reward_process: bool | None = None
    """``PreferenceEnvConfig.reward_process`` (``None``: automatic)."""
    niceness: int = 5
    """``PreferenceEnvConfig.niceness`` of the labeller and trainer (20: idle priority)."""
    learn_steps: int = 0
    """Also run examples/moving_dot_custom_loop.py for this many steps (0: skip)."""
    fragment_length: int = 25
    """``PreferenceEnvConfig.fragment_length`` (25: as in the figures of docs/wrapper.md)."""
    reward_epochs: float = 1.0
    """Epochs per reward-training round (1: weights published often, the costly case for the env)."""


def steps_per_s(env: gym.vector.VectorEnv, seconds: float) -> float:
    rng = np.random.default_rng(0)
    acts = rng.integers(0, 5, (1024, env.num_envs))
    env.reset(seed=0)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for a in acts[:64]:
            env.step(a)
        n += 64 * env.num_envs
    return n / (time.perf_counter() - t0)


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        os.kill(pid, sig)


def measure(num_envs: int, args: Args) -> dict[str, float]:
    def make() -> gym.vector.VectorEnv:
        return gym.make_vec(ENV, num_envs=num_envs, vectorization_mode="sync", obs_type=args.obs_type)

    base = make()
    env = PreferenceVectorEnv(
        make(), learned_after=0, fragment_length=args.fragment_length, total_labels=2000,
        trainer=RewardTrainerConfig(epochs=args.reward_epochs),
        reward_process=args.reward_process, niceness=args.niceness,
    )  # fmt: skip
    steps_per_s(env, args.warmup_s)
    procs = env.background_pids()
    workers = list(procs.values())
    steps0 = env.metrics()["reward_train_steps"]
    plain, wrapped = [], []
    for _ in range(args.rounds):
        _signal(workers, signal.SIGSTOP)
        try:
            plain.append(steps_per_s(base, args.seconds / args.rounds))
        finally:
            _signal(workers, signal.SIGCONT)
        wrapped.append(steps_per_s(env, args.seconds / args.rounds))
    m = env.metrics()
    env.close()
    base.close()
    return {
        "num_envs": num_envs,
        "rewarder_process": "rewarder" in procs,
        "unwrapped_steps_per_s": float(np.median(plain)),
        "wrapped_steps_per_s": float(np.median(wrapped)),
        "ratio": float(np.median(np.array(wrapped) / np.array(plain))),
        "ratio_per_round": [round(w / p, 3) for w, p in zip(wrapped, plain)],
        "reward_train_steps_while_timed": m["reward_train_steps"] - steps0,
        "weight_updates": m["weight_updates"],
        "segments_dropped": m["segments_dropped"],
        "preferences": m["preferences"],
    }


def main(args: Args) -> dict:
    torch.set_num_threads(1)
    result: dict = {
        "obs_type": args.obs_type,
        "niceness": args.niceness,
        "reward_process": args.reward_process,
        "cpu_count": os.cpu_count(),
        "load_avg_1min": os.getloadavg()[0],
        "runs": [measure(n, args) for n in args.num_envs],
    }
    print(json.dumps(result), flush=True)  # the speed figure, in case learning is cut short
    if args.learn_steps:
        script = Path(__file__).resolve().parents[1] / "examples" / "moving_dot_custom_loop.py"
        out = subprocess.run(
            [sys.executable, str(script), "--total-timesteps", str(args.learn_steps)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        result["custom_loop"] = json.loads(out.stdout.strip().splitlines()[-1])
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
