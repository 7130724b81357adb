"""Plot a run's learning curve from ``RUN/metrics.csv``: true return and reward correlation.

python examples/pendulum_plot.py runs/pendulum-example docs/figures/pendulum_curve.png
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def plot(run: Path, out: Path) -> Path:
    with (run / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))

    def col(name: str) -> tuple[list[float], list[float]]:
        pts = [(float(r["step"]), float(r[name])) for r in rows if r.get(name) not in (None, "", "nan")]
        return [p[0] for p in pts], [p[1] for p in pts]

    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
    a.plot(*col("rollout/true_return"), marker="o")
    a.set(xlabel="environment steps", ylabel="true episode return", title="behaviour of the agent")
    b.plot(*col("reward/pearson_true"), marker="o", color="C1")
    b.set(xlabel="environment steps", ylabel="Pearson r", title="learned vs true reward", ylim=(-1, 1))
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    return out


if __name__ == "__main__":
    print(plot(Path(sys.argv[1]), Path(sys.argv[2])))
