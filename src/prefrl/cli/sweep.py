"""``prefrl sweep``: a grid of ``prefrl train`` runs as Ray tasks, on this machine or a cluster.

    prefrl sweep --env Pendulum-v1 HalfCheetah-v5 --labels 10 50 --seeds 3 --out runs/sweep

Each cell (environment x label budget x teacher x seed) is one Ray task calling the same
``train(config)`` as ``prefrl train``; the reference run on the true reward (same agent and
steps) is one task per (environment, agent, steps, seed), shared by every budget and
teacher. Everything lands under ``--out``:

- ``cells/<cell>/``: the cell's run directory (``run/``) and, once finished, ``result.json``
  (or ``error.txt``; the result names the machine it ran on, ``machine``, since runs repeat
  seed for seed only on one machine). A repeated or killed sweep skips finished cells and resumes the
  others from their checkpoints (a reference run starts over: it has none);
- ``results.jsonl``: one line per learned cell (returns, score, wall time);
- ``summary.md``: median score, spread and worst seed per environment, teacher and budget
  (and whether the seeds disagree);
- ``score_vs_labels.png`` (seed range as a band) and ``wall_time.png``.

``ray.init()`` starts a local Ray on all cores (one cell per core) unless ``--address``
names an existing cluster (``ray start --head`` on one machine,
``ray start --address=HEAD:6379`` on the others; see docs/scale.md).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import tyro

from prefrl.run.sweep import SweepConfig, run_sweep
from prefrl.storage.checkpoint import read_json


def parse(argv: list[str]) -> SweepConfig:
    """Command line (over ``--config FILE``) -> :class:`SweepConfig`."""
    default = SweepConfig()
    if "--config" in argv:
        i = argv.index("--config")
        if i + 1 >= len(argv):
            raise ValueError("--config needs a FILE")
        data = read_json(Path(argv[i + 1]), "sweep config file")
        names = {f.name for f in dataclasses.fields(SweepConfig)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"{argv[i + 1]}: unknown sweep options {unknown}; known: {sorted(names)}")
        default = dataclasses.replace(default, **data)
    description = (__doc__ or "").replace("``", "")  # plain text in --help
    return tyro.cli(SweepConfig, default=default, args=argv, prog="prefrl sweep", description=description)


def main(argv: list[str]) -> int:
    try:
        sc = parse(argv)
        res = run_sweep(sc)
    except (ValueError, FileNotFoundError) as e:
        print(f"prefrl sweep: error: {e}", file=sys.stderr)
        return 2
    print(Path(sc.out, "summary.md").read_text())
    print(json.dumps({k: v for k, v in res.items() if k != "table"}))
    return 1 if res["failed"] else 0
