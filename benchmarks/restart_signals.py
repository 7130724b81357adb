"""What a run showed without the true reward where its agent's restart comes, beside how the same
seed ended with and without the restart: could the restart come only for an agent that is stuck?

    python benchmarks/restart_signals.py --iteration 7 --run seed1=RUNS/learned-seed1 \
        --policy seed1=RUNS/learned-seed1/checkpoints/iter_000006/policy.zip \
        --env.id prefrl/MovingDot-v0 --frames random.npz \
        --without benchmarks/results/SERIES/CELL --with benchmarks/results/SERIES/CELL \
        --out benchmarks/results/restart-signals/NAME.json

Each ``--run`` is a learned run's directory (``learned-seed<k>`` of ``label_efficiency.py``'s
output) that ran at least to ``--iteration``, the restart's (``LoopConfig.reset_iteration``). From
its ``metrics.csv`` the result keeps, at that iteration, the label-free signals the loop logs
before it acts (``watch/climb``, ``watch/learned_gain``, ``watch/standing``, ``watch/agreement``,
``reward/fresh_accuracy``), and, as truths, the true return of the agent's newest episodes and the
reward's held-out accuracy; the policy's entropy is the previous iteration's (the policy the
restart acts on). ``--policy`` adds how much that policy's action depends on the frame over
``--frames`` (``policy_actions.py``: the entropy of its mean action minus its mean entropy).
``--without`` and ``--with`` are ``label_efficiency.py`` cells of finished runs of the same seeds
without and with the restart; each seed's normalised score in both is kept (``run_watch.scores``).
``--gated`` adds a cell of runs with the restart that spares a climbing agent
(``--loop agent_reset_standing=B``): where a seed ran there, its score is kept as measured.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

import policy_actions  # benchmarks/ beside this script (sys.path[0] when run as a script)
import run_watch

SIGNALS: dict[str, str] = {
    "true_return": "rollout/true_return",
    "heldout_accuracy": "reward/heldout_accuracy",
    "climb": "watch/climb",
    "learned_gain": "watch/learned_gain",
    "standing": "watch/standing",
    "agreement": "watch/agreement",
    "fresh_accuracy": "reward/fresh_accuracy",
}
"""Name in the result file -> column of ``metrics.csv`` read at the restart's iteration."""


def _number(text: str | None) -> float | None:
    """A logged value, rounded to 4 decimals (``None`` where not logged, NaN or infinite)."""
    x = run_watch._number(text)
    return None if x is None else round(x, 4)


def at_iteration(run: Path, iteration: int) -> dict[str, float | None]:
    """The :data:`SIGNALS` of ``run``'s ``metrics.csv`` at ``iteration`` and the policy's entropy
    (``agent/entropy``) of the iteration before."""
    path = run / "metrics.csv"
    if not path.is_file():
        raise SystemExit(f"{run}: no metrics.csv (give a learned run's directory)")
    with path.open(newline="") as f:
        rows = {int(float(r["iteration"])): r for r in csv.DictReader(f) if r.get("iteration")}
    if iteration not in rows or iteration - 1 not in rows:
        raise SystemExit(f"{path}: no iteration {iteration} (and {iteration - 1}) logged yet")
    out = {name: _number(rows[iteration].get(col)) for name, col in SIGNALS.items()}
    out["entropy"] = _number(rows[iteration - 1].get("agent/entropy"))
    return out


def _named(specs: list[str], flag: str) -> dict[str, str]:
    out = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name or not value:
            raise SystemExit(f"{flag} takes NAME=PATH, got {spec!r}")
        out[name] = value
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iteration", type=int, required=True, help="the restart's iteration")
    ap.add_argument("--run", action="append", required=True, metavar="NAME=DIR",
                    help="a learned run's directory, named by its seed (seed<k>)")  # fmt: skip
    ap.add_argument("--policy", action="append", default=[], metavar="NAME=FILE",
                    help="the policy the restart acts on (policy.zip of the iteration before)")  # fmt: skip
    ap.add_argument("--env.id", dest="env_id", default=None, help="the policies' environment")
    ap.add_argument("--env.kwargs", dest="env_kwargs", default="{}", help="gym.make keyword arguments (JSON)")
    ap.add_argument("--frames", default=None, help="a trajectory file (.npz) whose frames the policies read")
    ap.add_argument("--without", type=Path, required=True, help="a cell without the restart")
    ap.add_argument("--with", dest="with_", type=Path, required=True, help="the same cell with it")
    ap.add_argument(
        "--gated",
        type=Path,
        default=None,
        help="the same cell with the restart that spares a climbing agent (optional)",
    )
    ap.add_argument("--out", type=Path, required=True, help="the result file (JSON)")
    args = ap.parse_args(argv)
    runs, policies = _named(args.run, "--run"), _named(args.policy, "--policy")
    if policies and (args.env_id is None or args.frames is None):
        raise SystemExit("--policy needs --env.id and --frames")
    cells = {"without": args.without, "with": args.with_}
    if args.gated is not None:
        cells["gated"] = args.gated
    ended = {side: run_watch.scores(cell, [])[0] for side, cell in cells.items()}
    frames = policy_actions.TrajectoryBatch.load(args.frames).obs[:2000] if policies else None
    kwargs = json.loads(args.env_kwargs)
    records = []
    for name, run in runs.items():
        seed = int(name.removeprefix("seed"))
        rec: dict[str, Any] = {"run": name, "seed": seed, **at_iteration(Path(run), args.iteration)}
        if name in policies:
            probs = policy_actions.action_probs(policies[name], args.env_id, frames, kwargs)
            rec["frame_decides"] = policy_actions.summarize(probs)["mutual_information"]
        for side in cells:
            score = ended[side].get(seed)
            rec[f"score_{side}"] = None if score is None else round(score, 4)
        print(json.dumps(rec))
        records.append(rec)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out = {"iteration": args.iteration, **{side: str(cell) for side, cell in cells.items()}}
    out["records"] = records
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
