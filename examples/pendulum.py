"""Pendulum-v1 from Python: SAC learns to swing up from 20 oracle comparisons.

    python examples/pendulum.py                      # the full run (15,000 steps, 20 labels)
    python examples/pendulum.py --steps 800 --labels 4 --run-dir /tmp/pend   # a smoke run

The same run from the command line is simply ``prefrl train`` (its defaults).
"""

from __future__ import annotations

import argparse

from prefrl.run.config import TrainConfig
from prefrl.run.train import format_report, train
from prefrl.training.config import LoopConfig


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=15_000, help="environment steps")
    p.add_argument("--labels", type=int, default=20, help="oracle comparisons")
    p.add_argument("--iterations", type=int, default=14, help="reward updates")
    p.add_argument("--run-dir", default="runs/pendulum-example", help="run directory (overwritten)")
    a = p.parse_args()

    initial_steps = min(1000, a.steps // 4)
    loop = LoopConfig(total_steps=a.steps, total_labels=a.labels, iterations=a.iterations,
                      initial_steps=initial_steps, fragment_length=min(50, initial_steps // 4))  # fmt: skip
    cfg = TrainConfig(run_dir=a.run_dir, force=True, loop=loop)  # Pendulum-v1, SAC, oracle teacher
    report = train(cfg)
    print(format_report(report))


if __name__ == "__main__":
    main()
