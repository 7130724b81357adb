"""The ``prefrl`` command: a thin dispatcher to one module per subcommand.

Each subcommand lives in ``prefrl.cli.<name>`` and exposes ``main(argv: list[str]) -> int``;
options are typed dataclasses turned into ``--help`` by tyro.
"""

from __future__ import annotations

import importlib
import sys

from prefrl.envs.headless import choose_headless_renderers

COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("prefrl.cli.train", "train an agent and a reward model from preferences"),
    "evaluate": ("prefrl.cli.evaluate", "measure a run's policy on the true reward, record videos"),
    "rollouts": ("prefrl.cli.rollouts", "write trajectories of a policy (or random) to a file"),
    "sweep": ("prefrl.cli.sweep", "run a grid of train runs (envs x budgets x teachers x seeds) on Ray"),
    "label": ("prefrl.cli.label", "serve the labelling web app / manage labellers"),
    "interpret": ("prefrl.cli.interpret", "evaluate and visualise what a learned reward rewards"),
    "report": ("prefrl.cli.report", "one HTML page showing what a run learned (curves, labels, video)"),
}


def usage() -> str:
    width = max(len(c) for c in COMMANDS)
    lines = [f"  {name:<{width}}  {desc}" for name, (_, desc) in COMMANDS.items()]
    return (
        "usage: prefrl COMMAND [OPTIONS]\n\n"
        "Learn reward functions from preference comparisons and train agents on them.\n\n"
        "commands:\n" + "\n".join(lines) + "\n\nRun `prefrl COMMAND --help` for its options, "
        "`prefrl --version` for the version."
    )


def headless_rendering() -> None:
    """Without a display, render environments off-screen: pygame-based ones (Pendulum,
    CartPole…) would otherwise print SDL's "XDG_RUNTIME_DIR is invalid" error when they
    draw frames for clips, and MuJoCo ones (HalfCheetah, DeepMind Control) could not open a
    window: they get EGL or OSMesa (:func:`prefrl.envs.headless.choose_headless_renderers`). An
    explicit ``SDL_VIDEODRIVER`` or ``MUJOCO_GL`` is kept."""
    choose_headless_renderers()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    headless_rendering()
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if argv[0] in ("-V", "--version", "version"):
        from prefrl import __version__

        print(f"prefrl {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"prefrl: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
