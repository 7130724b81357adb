"""``prefrl train``: learn a reward from preferences and train an agent on it.

A JSON config file plus command-line overrides (``--config FILE``), ``--print-config``, a
run directory with checkpoints and ``--resume RUN``. The run itself is
:func:`prefrl.run.train.train`, also callable from Python::

    from prefrl.run.train import TrainConfig, train
    report = train(TrainConfig(run_dir="runs/pendulum"))
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from prefrl.cli.help_order import print_help, wants_help
from prefrl.envs.config import EnvConfig
from prefrl.rewards.config import RewardNetConfig
from prefrl.run.config import TrainConfig, config_to_dict, parse_args
from prefrl.run.report import RunReport
from prefrl.run.train import build_run, format_report, train
from prefrl.threads import set_threads

__all__ = [
    "EnvConfig",
    "RewardNetConfig",
    "TrainConfig",
    "build_run",
    "format_report",
    "main",
    "parse_args",
    "train",
]


def interrupted_message(cfg: TrainConfig) -> str:
    """What Ctrl-C left behind and the command that continues the run."""
    run = cfg.resume or cfg.run_dir
    if run is None or not (Path(run) / "config.json").exists():
        return "\nprefrl train: interrupted before the run directory was made; nothing to resume"
    latest = Path(run) / "checkpoints" / "LATEST"
    where = "from the beginning"
    if latest.exists():
        where = f"from its last checkpoint ({latest.read_text().strip()})"
    return (
        f"\nprefrl train: interrupted. Every label so far is saved in {run}/preferences.npz; the run "
        f"continues {where}, keeping those labels, with:\n  prefrl train --resume {run}"
    )


def add_page(rep: RunReport) -> None:
    """Write the run's HTML page (as ``prefrl report RUN`` does) and name it in ``rep`` and
    ``report.json``. The run is done by then: a page that cannot be made only warns."""
    from prefrl.interpret.run_page import PageConfig, write_run_page  # matplotlib: only once trained
    from prefrl.storage.checkpoint import write_json

    run = Path(rep["run_dir"])
    try:
        page = write_run_page(PageConfig(run))
    except Exception as e:  # e.g. an environment that cannot render frames
        hint = f"`prefrl report {run} --pairs 0 --no-video` makes one without frames"
        print(f"prefrl train: warning: no HTML page ({type(e).__name__}: {e}); {hint}", file=sys.stderr)
        return
    rep["files"]["page"] = str(page)
    write_json(run / "report.json", rep)


def main(argv: list[str]) -> int:
    try:
        try:
            if wants_help(argv):  # the common options first, the rest grouped by section
                print_help(lambda: parse_args(argv))
            cfg = parse_args(argv)
        except SystemExit as e:  # tyro: --help, or an option it rejected (message already printed)
            if e.code not in (0, None):
                return int(e.code) if isinstance(e.code, int) else 2
            raise
        if cfg.print_config:  # printed as a config to train with (--config FILE): not to print again
            print(json.dumps(config_to_dict(dataclasses.replace(cfg, print_config=False)), indent=2))
            return 0
        set_threads(cfg.threads)  # the whole process (--reward-from, the page): torch, BLAS, OpenMP
        try:
            rep = train(cfg)
        except KeyboardInterrupt as e:  # a RunInterrupted names the run's folder (also one named for it)
            where = getattr(e, "run_dir", None)
            here = cfg if where is None else dataclasses.replace(cfg, run_dir=str(where))
            print(interrupted_message(here), file=sys.stderr)
            return 130
    except (ValueError, FileNotFoundError, FileExistsError) as e:
        print(f"prefrl train: error: {e}", file=sys.stderr)
        return 2
    if cfg.page:
        add_page(rep)
    print(format_report(rep))
    return 0
