"""Docs are code: every shell command in README.md and docs/**.md runs here, as a short variant.

How it works:

* The fenced blocks of README.md, docs/*.md and docs/benchmarks/*.md are read at collection
  time, so a new block is picked up without touching this file. Blocks tagged ``bash``, ``sh``, ``shell`` or
  ``console`` (only its ``$ `` lines) are commands, and so is an untagged block whose
  lines all start with a known program (``prefrl``, ``python``, ``bash``, ...).
* A block is split into commands: ``\\`` continuations are joined, ``# comments`` dropped,
  ``&&``, ``||``, ``;`` and ``&`` separate commands (a pipeline stays one command), and
  ``NAME=value`` lines are variable assignments that the commands after them see. Each
  command is one test named by its doc location (``docs/tutorial.md:32``; ``-2`` for the
  second command of a line). A block with shell control flow (``for``, ``if``, ``&``,
  ``wait``) is one test: bash runs the block as a script.
* Everything runs under bash in a sandbox: a temporary folder with links to the
  repository's files (so ``python benchmarks/...`` and ``bash scripts/...`` work as in a
  clone) but its own empty ``runs/``. On ``PATH``, ``prefrl``, ``python``, ``bash`` and ``sh`` are
  shims (this file run as a script) that turn each call into its short variant by the first
  matching rule of ``RULES``, mostly by appending tiny budgets (tyro and argparse keep the
  last value of a repeated option, see ``test_repeated_options_keep_the_last_value``), and
  log its exit status. A test passes when bash and every logged call exit 0 and the
  command's expected outputs (a run's ``report.json``, an ``--out`` file, ...) exist.
* Inputs a command reads but does not make (``runs/grid``, ``t.npz``, ``pendulum.json``,
  ...) come from ``RESOURCES``, built once per session (a tiny ``prefrl train`` for a run
  directory); doc placeholders (``<time>``, ``runs/.../``) are replaced per ``PLACEHOLDERS``
  and a lone ``...`` ("more options") is dropped.
* A command containing a key of ``EXCLUDED`` (installs, a server elsewhere, people
  labelling) is a skipped test that names the reason. A command matching neither a rule
  nor ``EXCLUDED`` FAILS, so new docs cannot escape testing: give it a rule (a short
  variant) or an exclusion with a reason.

Speed: a rule says whether its commands are slow (``@pytest.mark.slow``: agent training,
benchmarks, anything needing a trained run), and a repeat of a command that the default suite
already runs at an earlier doc location is slow too; the rest (about 30 s on a loaded 2-core
machine) runs in the default suite. Every process runs under an address-space limit
(``MEMORY_LIMIT``), so a short variant that runs away fails instead of exhausting the machine.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC_GLOBS = ("README.md", "docs/*.md", "docs/benchmarks/*.md")
SHELL_TAGS = ("bash", "sh", "shell", "console")
# An untagged block is a command block when every command in it starts with one of these.
KNOWN_PROGRAMS = tuple("prefrl python python3 bash sh pip pip3 pytest ruff tensorboard".split())
SHELL_CONTROL = tuple("for while until if case select function done fi esac wait }".split())
CONTROL_PREFIXES = tuple("do then else { !".split())
SHIMMED = ("prefrl", "python", "python3", "bash", "sh")
SANDBOX_SKIP = ("runs", "logs", ".git", ".pytest_cache", ".ruff_cache", "__pycache__")
MEMORY_LIMIT = 8 * 2**30  # address space per process: a runaway short variant fails instead of the machine
FAST_TIMEOUT_S, SLOW_TIMEOUT_S = 180, 570

# --------------------------------------------------------------------------- exclusions
# Substring of a command (after variable expansion) -> why it is not run. Keep reasons specific.
EXCLUDED: dict[str, str] = {
    "pip install": "installs software (into the current or another virtual environment)",
    "python -m venv": "creates a virtual environment (an install step)",
    "scripts/install.sh": "installs prefrl and the PREFRL_EXTRAS it names into .venv "
    "(tests/envs/test_procgen.py runs its Procgen step against a recording venv)",
    "bash .ci/run": "CI from nothing: installs Chromium and the package, lints, then runs the whole suite",
    "scripts/postgres.sh": "starts a PostgreSQL server (installs Debian's package as root); .ci/run runs it",
    "HEAD_IP": "a Ray cluster at a placeholder address (tests/run/test_sweep.py starts a real one)",
    "@db.example/": "a team deployment: a PostgreSQL server at a placeholder host and a shared clip mount",
    "rl_zoo3.train": "RL Zoo with a hyperparameter file naming the reader's run; "
    "tests/agents/test_integrations.py runs it on a tiny budget",
}

# Doc placeholder -> what the sandbox has instead (a RESOURCES entry).
PLACEHOLDERS: dict[str, str] = {
    "<time>": "doc",  # runs/Pendulum-v1-sac-<time>: the tiny Pendulum run of RESOURCES
    "runs/.../": "runs/Pendulum-v1-sac-doc/",
    "checkpoints/iter_000006": "checkpoints/iter_000001",  # a checkpoint the tiny run keeps
}

# ------------------------------------------------------------------------------ rules
TINY_TRAIN = tuple(
    "--loop.total-steps 600 --loop.initial-steps 200 --loop.iterations 2 --loop.total-labels 4 "
    "--eval-episodes 1 --no-progress --agent.n-steps 64 --agent.batch-size 32 "
    "--agent.buffer-size 2000".split()
)
LABEL_EFFICIENCY_SHORT = tuple("--steps 600 --labels 4 --seeds 1 --iterations 2 --eval-episodes 1".split())
ATARI_SHORT = tuple(
    "--steps 1024 --labels 6 --seeds 1 --jobs 2 --eval-interval 1024 --out runs/atari".split()
)
IMAGE_REWARD_SHORT = tuple(
    "--labels 8 --steps 2 --train-steps 200 --test-steps 100 --eval-pairs 10 --draws 1".split()
)
COINRUN_SHORT = tuple(
    "--labels 8 --steps 2 --random-steps 300 --hold-steps 600 --test-clips 50 --saliency-frames 8 "
    "--supervised-epochs 1 --ig-steps 2".split()
)  # enough right+jump steps that some held-out episode takes the coin (coin_endings.npz)
REWARD_LEARNING_SHORT = tuple("--threads 1 --epochs 1 --rounds 1".split())
MOVING_DOT_SHORT = tuple(
    "--total-timesteps 256 --n-steps 64 --eval-episodes 1 --total-labels 20 --learned-after 1".split()
)
CLEANRL_SHORT = tuple("--total-timesteps 256 --num-envs 1 --num-steps 128 --update-epochs 1".split())
TRAIN_CAPS = {"--loop.pretrain-steps": "100", "--final-agent-steps": "200"}  # only where the doc sets them
REPORT_SHORT = ("--episodes", "1", "--clips", "20")
INTERPRET_SHORT = {
    "report": ("--shape-steps", "20"),
    "shape": ("--steps", "20"),
    "synthesize": ("--steps", "10"),
    "supervised": ("--epochs", "2"),
    "epic": ("--samples", "200"),
}
# Subcommands that finish in a few seconds on bare files; the others (or any on a run) are slow.
INTERPRET_FAST = ("curves",)


def results_in_sandbox(argv: Sequence[str]) -> list[str]:
    """``argv`` with an ``--out`` under ``benchmarks/results/`` moved to the sandbox's ``runs/``
    (the sandbox links the repository's folders: the short run's files would land among the
    committed results)."""
    out = list(argv)
    for i, a in enumerate(out[:-1]):
        if a == "--out" and out[i + 1].startswith("benchmarks/results/"):
            out[i + 1] = "runs/" + out[i + 1].removeprefix("benchmarks/results/")
    return out


def opt(argv: Sequence[str], name: str) -> str | None:
    """The last value of ``--name VALUE`` / ``--name=VALUE`` in ``argv``."""
    value = None
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith(name + "="):
            value = a.split("=", 1)[1]
    return value


def has(argv: Sequence[str], name: str) -> bool:
    return any(a == name or a.startswith(name + "=") for a in argv)


def caps(argv: Sequence[str], table: dict[str, str]) -> list[str]:
    return [x for k, v in table.items() if has(argv, k) for x in (k, v)]


def positional(argv: Sequence[str], start: int) -> str | None:
    """The first argument from ``start`` on that is not an option."""
    return next((a for a in argv[start:] if not a.startswith("-")), None)


def script_is(path: str) -> Callable[[list[str]], bool]:
    def match(argv: list[str]) -> bool:
        return (
            len(argv) > 1
            and Path(argv[0]).name in ("python", "python3", "bash", "sh")
            and (Path(argv[1]).as_posix().removeprefix("./") == path)
        )

    return match


def command_is(*prefix: str) -> Callable[[list[str]], bool]:
    def match(argv: list[str]) -> bool:
        return len(argv) >= len(prefix) and [Path(argv[0]).name, *argv[1 : len(prefix)]] == list(prefix)

    return match


train_cmd = command_is("prefrl", "train")


def train_short(argv: list[str]) -> list[str]:
    run_dir = [] if has(argv, "--run-dir") else ["--run-dir", "runs/doc-run"]
    return [*argv, *TINY_TRAIN, *caps(argv, TRAIN_CAPS), *run_dir]


def train_outputs(argv: list[str]) -> list[str]:
    return [f"{opt(argv, '--run-dir')}/report.json"]


SWEEP_SET = tuple(
    "loop.initial_steps=200 loop.iterations=2 loop.fragment_length=20 agent.net_arch=[16,16] "
    "agent.batch_size=32 agent.n_steps=64 reward.hidden=[16,16] trainer.epochs=5".split()
)


def sweep_short(argv: list[str]) -> list[str]:
    """One seed, one small budget, 400 steps, 2 CPUs; the doc's --set options kept, tiny nets added."""
    out: list[str] = []
    skip = False
    multi = {"--labels", "--seeds", "--steps", "--eval-episodes"}
    for a in argv:
        if skip and a.startswith("--"):
            skip = False
        if skip:
            continue
        if a in multi:
            skip = True
            continue
        out.append(a)
        if a == "--set":
            out.extend(SWEEP_SET)
    if "--set" not in argv:
        out.extend(["--set", *SWEEP_SET])
    short = "--labels 3 --seeds 1 --steps 400 --eval-episodes 1 --num-cpus 2 --no-progress"
    return [*out, *short.split()]


def label_sub(argv: list[str]) -> str:
    from prefrl.cli.label import SUBCOMMANDS

    return argv[2] if len(argv) > 2 and argv[2] in SUBCOMMANDS else "serve"


def interpret_short(argv: list[str]) -> list[str]:
    return [*argv, "--episodes", "2", *INTERPRET_SHORT.get(argv[2] if len(argv) > 2 else "", ())]


def interpret_outputs(argv: list[str]) -> list[str]:
    out = opt(argv, "--out") or (f"{opt(argv, '--run')}/interpret" if has(argv, "--run") else "interpret")
    return [f"{out}/*"]


def drop_option(argv: list[str], name: str) -> list[str]:
    """``argv`` without ``name VALUE``."""
    if name not in argv:
        return argv
    i = argv.index(name)
    return argv[:i] + argv[i + 2 :]


def frontier_short(_: list[str], argv: list[str]) -> list[str]:
    """The frontier benchmark's runs go to the sandbox's ``runs/frontier``, not beside the checkout."""
    return [*argv, "--out", "runs/frontier"]


def with_values(argv: list[str], values: dict[str, str]) -> list[str]:
    """``argv`` with each option of ``values`` given its value there; a value with ``{name}`` keeps
    the name of a ``NAME=PATH`` argument (``--policy stuck=runs/x`` -> ``stuck=runs/grid/...``)."""
    out, i = [], 0
    while i < len(argv):
        word = argv[i]
        if word in values:
            out += [word, values[word].format(name=argv[i + 1].partition("=")[0])]
            i += 2
        else:
            out.append(word)
            i += 1
    return out


def policy_actions_short(argv: list[str]) -> list[str]:
    """``policy_actions.py`` on the gridworld run's policy and random rollouts, into the sandbox."""
    grid = {"--env.id": "prefrl/GridWorld-v0", "--policy": "{name}=runs/grid/policy.zip"}
    return with_values(argv, {**grid, "--trajectories": "grid.npz", "--out": "actions.json"})


def restart_signals_short(argv: list[str]) -> list[str]:
    """``restart_signals.py`` on the gridworld run (its second iteration, its policy, random
    rollouts), beside the committed cells it names; the result file into the sandbox."""
    grid = {"--env.id": "prefrl/GridWorld-v0", "--policy": "{name}=runs/grid/policy.zip"}
    run = {"--iteration": "1", "--run": "{name}=runs/grid", "--frames": "grid.npz"}
    return with_values(argv, {**grid, **run, "--out": "restart_signals.json"})


def drop_missing_imitation(argv: list[str]) -> list[str]:
    """``--imitation-python PATH`` needs a separate venv made by an install step: dropped when absent."""
    py = opt(argv, "--imitation-python")
    if py is None or Path(py).exists():
        return argv
    i = argv.index("--imitation-python")
    return argv[:i] + argv[i + 2 :]


@dataclass(frozen=True)
class Rule:
    """How to run one kind of doc command as a short variant."""

    name: str
    matches: Callable[[list[str]], bool]
    rewrite: Callable[[list[str]], list[str]] = list
    slow: Callable[[list[str]], bool] = lambda argv: False
    outputs: Callable[[list[str]], list[str]] = lambda argv: []  # globs relative to the sandbox
    stdin: str | None = None  # fed to the command (answers of a person at the terminal)
    serve: bool = False  # a server: started, checked to answer HTTP on a free port, stopped
    labelling_bot: bool = False  # a labelling server and a bot answering through it run beside it
    installs_first: bool = False  # a scripts/*.sh that installs on first run (see no_reinstall)


RULES: tuple[Rule, ...] = (
    Rule("prefrl train --print-config", lambda a: train_cmd(a) and has(a, "--print-config")),
    Rule(  # a run resumes with its own (already tiny) config: extra options are refused by design
        "prefrl train --resume",
        lambda a: train_cmd(a) and has(a, "--resume"),
        slow=lambda a: True,
        outputs=lambda a: [f"{opt(a, '--resume')}/report.json"],
    ),
    Rule(
        "prefrl train --teacher web (a bot labels through a prefrl label server started beside it)",
        lambda a: train_cmd(a) and opt(a, "--teacher") == "web",
        train_short,
        slow=lambda a: True,
        outputs=train_outputs,
        labelling_bot=True,
    ),
    Rule(
        "prefrl train --teacher terminal (answers typed on stdin)",
        lambda a: train_cmd(a) and opt(a, "--teacher") == "terminal",
        train_short,
        slow=lambda a: True,
        outputs=train_outputs,
        stdin="L\nR\nE\n\n" * 50,
    ),
    Rule(
        "prefrl train",
        train_cmd,
        train_short,
        slow=lambda a: len(a) > 2,  # the bare command (tutorial's first) is the quick representative
        outputs=train_outputs,
    ),
    Rule(
        "prefrl evaluate",
        command_is("prefrl", "evaluate"),
        lambda a: [*a, "--episodes", "1", *(["--videos", "1"] if has(a, "--videos") else [])],
        slow=lambda a: True,
        outputs=lambda a: [f"{positional(a, 2)}/videos/*.mp4"] if has(a, "--videos") else [],
    ),
    Rule(  # the page of a trained run: fewer fresh clips, one pair
        "prefrl report",
        command_is("prefrl", "report"),
        lambda a: [*a, *REPORT_SHORT, *([] if has(a, "--pairs") else ["--pairs", "1"])],
        slow=lambda a: True,
        outputs=lambda a: [f"{opt(a, '--out') or f'{positional(a, 2)}/report'}/index.html"],
    ),
    Rule(
        "prefrl rollouts",
        command_is("prefrl", "rollouts"),
        lambda a: [*a, *(["--steps", "100"] if has(a, "--steps") else ["--episodes", "1"])],
        slow=lambda a: has(a, "--policy"),  # a policy comes from a trained run
        outputs=lambda a: [str(opt(a, "--out"))],
    ),
    Rule(
        "prefrl label serve (answers HTTP, then stopped)",
        lambda a: command_is("prefrl", "label")(a) and label_sub(a) == "serve",
        serve=True,
    ),
    Rule(
        "prefrl label add-user/users/export/renew/revoke",
        lambda a: command_is("prefrl", "label")(a) and label_sub(a) != "serve",
        outputs=lambda a: [o] if (o := opt(a, "--out")) not in (None, "-") else [],
    ),
    Rule(
        "prefrl interpret",
        command_is("prefrl", "interpret"),
        interpret_short,
        slow=lambda a: len(a) < 3 or a[2] not in INTERPRET_FAST or has(a, "--run"),
        outputs=interpret_outputs,
    ),
    Rule(
        "benchmarks/label_efficiency.py",
        script_is("benchmarks/label_efficiency.py"),
        lambda a: [*results_in_sandbox(a), *LABEL_EFFICIENCY_SHORT],
        slow=lambda a: True,
        # a namespaced id (prefrl/MovingDot-v0) puts its result folder one level deeper
        outputs=lambda a: [
            f"{opt(a, '--out') or 'runs/label_efficiency'}/{'*/' * str(opt(a, '--env') or '').count('/')}"
            "*/result.json"
        ],
    ),
    Rule(  # the Atari table of what finished, in the sandbox (result files copied nowhere)
        "benchmarks/atari.py --table",
        lambda a: script_is("benchmarks/atari.py")(a) and has(a, "--table"),
        lambda a: [
            *[x for i, x in enumerate(a) if "--copy-to" not in a[max(0, i - 1) : i + 1]],
            "--out",
            "runs/atari",
        ],
    ),
    Rule(  # one seed of each side, 1,024 agent steps, 6 labels, evaluated once
        "benchmarks/atari.py",
        script_is("benchmarks/atari.py"),
        lambda a: [*a, *ATARI_SHORT],
        slow=lambda a: True,
        outputs=lambda a: ["runs/atari/*/*-seed*.json"],
    ),
    Rule(  # one draw, a few labels and optimiser steps; the result file into the sandbox, not results/
        "benchmarks/image_reward.py",
        script_is("benchmarks/image_reward.py"),
        lambda a: [*a, *IMAGE_REWARD_SHORT, *(["--out", "image_reward.json"] if has(a, "--out") else [])],
        slow=lambda a: "ALE/" in " ".join(a),
        outputs=lambda a: ["image_reward.json"] if has(a, "--out") else [],
    ),
    Rule(  # a few optimiser steps on the tiny run's final labels; the result file into the sandbox
        "benchmarks/refit_labels.py",
        script_is("benchmarks/refit_labels.py"),
        lambda a: [
            *results_in_sandbox(a),
            "--checkpoint",
            "runs/Pendulum-v1-sac-doc",
            "--steps",
            "4",
            "--every",
            "2",
        ],
        slow=lambda a: True,
        outputs=lambda a: (
            [results_in_sandbox(a)[results_in_sandbox(a).index("--out") + 1]] if has(a, "--out") else []
        ),
    ),
    Rule(  # the gridworld run's PPO policy (the tiny Pendulum run's is SAC) on its random rollouts
        "benchmarks/policy_actions.py",
        script_is("benchmarks/policy_actions.py"),
        policy_actions_short,
        slow=lambda a: True,
        outputs=lambda a: ["actions.json"] if has(a, "--out") else [],
    ),
    Rule(  # the gridworld run's signals at its second iteration, its PPO policy on its random rollouts
        "benchmarks/restart_signals.py",
        script_is("benchmarks/restart_signals.py"),
        restart_signals_short,
        slow=lambda a: True,
        outputs=lambda a: ["restart_signals.json"],
    ),
    Rule(  # a few clips, labels and optimiser steps; the result file into the sandbox, not results/
        "benchmarks/coinrun.py",
        script_is("benchmarks/coinrun.py"),
        lambda a: [*a, *COINRUN_SHORT, *(["--out", "coinrun.json"] if has(a, "--out") else [])],
        slow=lambda a: True,  # needs the Procgen extra
        outputs=lambda a: [
            *(["coinrun.json"] if has(a, "--out") else []),
            *([f"{opt(a, '--save')}/preference.safetensors"] if has(a, "--save") else []),
        ],
    ),
    Rule(  # the table of what finished, in the sandbox (result files copied nowhere)
        "benchmarks/frontier.py --table",
        lambda a: script_is("benchmarks/frontier.py")(a) and has(a, "--table"),
        lambda a: frontier_short(
            a, [x for i, x in enumerate(a) if "--copy-to" not in a[max(0, i - 1) : i + 1]]
        ),
    ),
    Rule(  # a short protocol: one seed, 11,000 steps, 10 labels
        "benchmarks/frontier.py",
        script_is("benchmarks/frontier.py"),
        lambda a: frontier_short(a, [*a, "--steps", "11000", "--labels", "10", "--seeds", "1"]),
        slow=lambda a: True,
        outputs=lambda a: [f"runs/frontier/*/*-seed{opt(a, '--seed') or 0}.json"],  # --side's --seed
    ),
    Rule(  # reads the committed results; the plot goes to the sandbox, not into docs/
        "benchmarks/summarize.py",
        script_is("benchmarks/summarize.py"),
        lambda a: ["summary.png" if x.endswith(".png") else x for x in a],
        outputs=lambda a: ["summary.png"] if has(a, "--plot") else [],
    ),
    Rule(
        "prefrl sweep",
        command_is("prefrl", "sweep"),
        sweep_short,
        slow=lambda a: True,
        outputs=lambda a: [f"{opt(a, '--out')}/summary.md", f"{opt(a, '--out')}/results.jsonl"],
    ),
    Rule(  # the committed results against the docs; --check: the docs are the repository's, not rewritten
        "benchmarks/docs_tables.py",
        script_is("benchmarks/docs_tables.py"),
        lambda a: a if has(a, "--check") or has(a, "--print") else [*a, "--check"],
    ),
    Rule(  # likewise: the committed results, the plot into the sandbox
        "benchmarks/ablation.py",
        script_is("benchmarks/ablation.py"),
        lambda a: ["ablation.png" if x.endswith(".png") else x for x in a],
        outputs=lambda a: ["ablation.png"] if has(a, "--plot") else [],
    ),
    Rule(
        "benchmarks/reward_learning.py",
        script_is("benchmarks/reward_learning.py"),
        lambda a: [*drop_missing_imitation(a), *REWARD_LEARNING_SHORT],
        slow=lambda a: True,
    ),
    Rule(
        "examples/moving_dot_sb3.py",
        script_is("examples/moving_dot_sb3.py"),
        lambda a: [*a, *MOVING_DOT_SHORT],
        slow=lambda a: True,
    ),
    Rule(
        "bash scripts/train.sh",
        script_is("scripts/train.sh"),
        train_short,
        slow=lambda a: True,
        outputs=train_outputs,
        installs_first=True,
    ),
    Rule(
        "examples/cleanrl_learned_reward.py",
        script_is("examples/cleanrl_learned_reward.py"),
        lambda a: [*a, *CLEANRL_SHORT],
        slow=lambda a: True,  # reads a trained run
    ),
    Rule(  # collects (imports) the example tests instead of running the suite: the script's wiring
        "bash scripts/test.sh",
        script_is("scripts/test.sh"),
        lambda a: [*a, "-p", "no:cacheprovider", "--collect-only", "tests/examples"],
        installs_first=True,
    ),
    Rule("ruff", lambda a: Path(a[0]).name == "ruff"),
)


def find_rule(argv: list[str]) -> Rule | None:
    return next((r for r in RULES if argv and r.matches(argv)), None)


# ---------------------------------------------------------------------------- parsing
@dataclass(frozen=True)
class Block:
    file: str
    tag: str
    lines: tuple[tuple[int, str], ...]  # (1-based line number, text)


FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def read_blocks(path: Path) -> tuple[list[Block], list[str]]:
    """The fenced blocks of a Markdown file, and problems with its fences (CommonMark rules)."""
    rel = path.relative_to(REPO).as_posix()
    blocks: list[Block] = []
    problems: list[str] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or (m.group(1)[0] == "`" and "`" in m.group(2)):
            i += 1
            continue
        fence, tag, start = m.group(1), (m.group(2).strip().split() or [""])[0].lower(), i
        body: list[tuple[int, str]] = []
        i += 1
        while i < len(lines):
            c = FENCE.match(lines[i])
            if c and c.group(1)[0] == fence[0] and len(c.group(1)) >= len(fence):
                if c.group(2).strip():
                    problems.append(
                        f"{rel}:{i + 1}: text after a closing fence ({lines[i][:40]!r}...): it does not "
                        "close the block, so the rest of the file renders as code"
                    )
                break
            body.append((i + 1, lines[i]))
            i += 1
        else:
            problems.append(f"{rel}:{start + 1}: code block never closed")
        blocks.append(Block(rel, tag, tuple(body)))
        i += 1
    return blocks, problems


def substitute(text: str) -> str:
    for k, v in PLACEHOLDERS.items():
        text = text.replace(k, v)
    return re.sub(r"(?<![\w/.])\.\.\.(?![\w/.])", "", text)  # a lone `...`: "more options"


def logical_lines(block: Block) -> list[tuple[int, str]]:
    """Commands of a block as (line, text): continuations joined, console output dropped."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for n, raw in block.lines:
        text = raw
        if pending is None:
            if block.tag == "console":
                if not text.lstrip().startswith("$ "):
                    continue
                text = text.lstrip()[2:]
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            pending = (n, "")
        line, acc = pending
        if text.rstrip().endswith("\\") and not text.lstrip().startswith("#"):
            pending = (line, acc + text.rstrip()[:-1] + " ")
            continue
        out.append((line, substitute(acc + text)))
        pending = None
    if pending is not None:
        out.append((pending[0], substitute(pending[1])))
    return out


def split_units(text: str) -> list[tuple[str, str]]:
    """Top-level ``&&`` / ``||`` / ``;`` / ``&`` lists of a line as (command, separator after it)."""
    units: list[tuple[str, str]] = []
    buf: list[str] = []
    quote: str | None = None
    i = 0

    def emit(sep: str) -> None:
        if "".join(buf).strip():
            units.append(("".join(buf).strip(), sep))
        buf.clear()

    while i < len(text):
        c = text[i]
        if quote:
            buf.append(c)
            if c == "\\" and quote == '"' and i + 1 < len(text):
                buf.append(text[i + 1])
                i += 1
            elif c == quote:
                quote = None
        elif c == "\\" and i + 1 < len(text):
            buf += [c, text[i + 1]]
            i += 1
        elif c in "'\"":
            quote = c
            buf.append(c)
        elif c == "#" and (not buf or buf[-1].isspace()):
            break  # a comment
        elif text.startswith(("&&", "||"), i):
            emit(text[i : i + 2])
            i += 1
        elif c == ";":
            emit(";")
        elif c == "&" and not (buf and buf[-1] in "<>") and not text.startswith("&>", i):
            emit("&")
        else:
            buf.append(c)
        i += 1
    emit("")
    return units


def words_of(unit: str) -> list[str]:
    lex = shlex.shlex(unit, posix=True, punctuation_chars=";&|<>()")
    lex.whitespace_split = True
    lex.commenters = ""
    return list(lex)


VAR = re.compile(r"\$(\w+)|\$\{(\w+)\}")


def expand(words: list[str], variables: dict[str, str]) -> list[str]:
    out: list[str] = []
    for w in words:
        m = VAR.fullmatch(w)
        name = m and (m.group(1) or m.group(2))
        if name and name in variables:
            out += shlex.split(variables[name])  # unquoted $VAR: word splitting
        else:
            out.append(VAR.sub(lambda v: variables.get(v.group(1) or v.group(2), v.group(0)), w))
    return out


ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=.*", re.S)


@dataclass
class Command:
    """One doc command (a pipeline), analysed."""

    line: int
    text: str  # as in the doc, placeholders substituted
    words: list[str]  # after variable expansion
    stages: list[list[str]] = field(default_factory=list)  # argv of each pipeline stage
    redirects: list[str] = field(default_factory=list)  # files written by `>` / `>>`
    kind: str = "run"  # run | excluded | unknown | shell | assign
    reason: str = ""
    excluded_by: str = ""  # the EXCLUDED key it matched
    rules: list[Rule] = field(default_factory=list)

    @property
    def slow(self) -> bool:
        return any(r.slow(s) for r, s in zip(self.rules, self.stages))

    def short_stages(self) -> list[list[str]]:
        return [r.rewrite(list(s)) for r, s in zip(self.rules, self.stages)]

    def outputs(self) -> list[str]:
        return [*self.redirects, *(o for r, s in zip(self.rules, self.short_stages()) for o in r.outputs(s))]

    def written(self) -> set[str]:
        """Paths this command makes (so no resource is provided for them)."""
        names = ("--out", "--run-dir", "--save-preferences")
        return {*self.redirects, *(v for s in self.stages for n in names if (v := opt(s, n)))}


def analyse(line: int, text: str, variables: dict[str, str]) -> Command:
    try:
        words = expand(words_of(text), variables)
    except ValueError as e:  # e.g. unbalanced quotes
        return Command(line, text, [], kind="unknown", reason=f"cannot split into words: {e}")
    cmd = Command(line, text, words)
    while words and words[0] in CONTROL_PREFIXES:
        words = words[1:]
    if words and words[0] in SHELL_CONTROL:
        cmd.kind = "shell"
        return cmd
    if words and all(ASSIGNMENT.fullmatch(w) for w in words):
        cmd.kind = "assign"
        for w in words:
            k, v = w.split("=", 1)
            variables[k] = v
        return cmd
    joined = " ".join(cmd.words)
    hit = next((k for k in EXCLUDED if k in joined or k in text), None)
    if hit is not None:
        cmd.kind, cmd.reason, cmd.excluded_by = "excluded", f"{hit!r}: {EXCLUDED[hit]}", hit
        return cmd
    if m := re.search(r"<[A-Za-z][\w-]*>", text):
        cmd.kind, cmd.reason = "unknown", f"placeholder {m.group(0)} has no entry in PLACEHOLDERS"
        return cmd
    stage: list[str] = []
    it = iter(words)
    for w in it:
        if w == "|":
            cmd.stages.append(stage)
            stage = []
        elif w and set(w) <= set("<>&"):  # a redirection: its target is not an argument
            if stage and stage[-1].isdigit():
                stage.pop()
            target = next(it, "")
            if ">" in w and "&" not in w:
                cmd.redirects.append(target)
        elif not stage and ASSIGNMENT.fullmatch(w):
            continue  # NAME=value prefix: the command's environment
        else:
            stage.append(w)
    cmd.stages.append(stage)
    for s in cmd.stages:
        rule = find_rule(s)
        if rule is None:
            cmd.kind = "unknown"
            cmd.reason = (
                f"no short-variant rule for {shlex.join(s)!r} and no EXCLUDED entry: "
                "add a Rule to RULES (how to run it briefly) or an EXCLUDED reason"
            )
            return cmd
        cmd.rules.append(rule)
    return cmd


@dataclass
class Case:
    """One test: a command of a block (with the block's earlier assignments), or a whole script block."""

    file: str
    line: int
    suffix: str
    script: str
    commands: list[Command]
    duplicate_of: str = ""  # the same command at an earlier doc location

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}{self.suffix}"

    @property
    def runnable(self) -> list[Command]:
        return [c for c in self.commands if c.kind == "run"]

    @property
    def kind(self) -> str:
        kinds = {c.kind for c in self.commands}
        return "unknown" if "unknown" in kinds else "excluded" if "excluded" in kinds else "run"

    @property
    def reason(self) -> str:
        return "; ".join(dict.fromkeys(c.reason for c in self.commands if c.kind == self.kind))

    @property
    def slow(self) -> bool:
        """Slow commands, and repeats of a command the default suite already runs elsewhere."""
        return any(c.slow for c in self.runnable) or bool(self.duplicate_of)


def is_command_block(block: Block) -> bool:
    if block.tag in SHELL_TAGS:
        return True
    if block.tag:
        return False
    firsts = [(t.split() or [""])[0] for _, t in logical_lines(block)]
    return bool(firsts) and all(Path(w).name in KNOWN_PROGRAMS for w in firsts)


def doc_files() -> list[Path]:
    return sorted({p for g in DOC_GLOBS for p in REPO.glob(g)})


def cases_of_block(block: Block) -> list[Case]:
    variables: dict[str, str] = {}
    analysed = [
        (line, unit, sep, analyse(line, unit, variables))
        for line, text in logical_lines(block)
        for unit, sep in split_units(text)
    ]
    if not analysed:
        return []
    first = analysed[0][0]
    if any(c.kind == "shell" or sep == "&" for _, _, sep, c in analysed):  # a script: run as a whole
        script = substitute("\n".join(t for _, t in block.lines))
        return [Case(block.file, first, "", script, [c for *_, c in analysed])]
    cases: list[Case] = []
    prelude: list[str] = []
    per_line: dict[int, int] = {}
    for line, unit, _, cmd in analysed:
        if cmd.kind == "assign":
            prelude.append(unit)
            continue
        per_line[line] = per_line.get(line, 0) + 1
        suffix = "" if per_line[line] == 1 else f"-{per_line[line]}"
        cases.append(Case(block.file, line, suffix, "\n".join([*prelude, unit]), [cmd]))
    return cases


def collect() -> tuple[list[Case], list[str]]:
    cases: list[Case] = []
    problems: list[str] = []
    for path in doc_files():
        blocks, bad = read_blocks(path)
        problems += bad
        for block in blocks:
            if is_command_block(block):
                cases += cases_of_block(block)
    first: dict[str, str] = {}
    for case in cases:
        case.duplicate_of = first.setdefault(case.script, case.id) if case.kind == "run" else ""
        if case.duplicate_of == case.id:
            case.duplicate_of = ""
    return cases, problems


CASES, FENCE_PROBLEMS = collect()


# -------------------------------------------------------------------------- resources
def _mlp_reward(path: Path, seed: int) -> None:
    import torch

    from prefrl.agents.sb3 import make_env
    from prefrl.rewards import save_reward_net
    from prefrl.run.config import TrainConfig

    env = make_env("Pendulum-v1")
    torch.manual_seed(seed)
    save_reward_net(TrainConfig().reward.build(env.observation_space, env.action_space), path)


def _cnn_reward(path: Path) -> None:
    import torch

    from prefrl.agents.sb3 import make_env
    from prefrl.rewards import save_reward_net
    from prefrl.run.config import TrainConfig

    env = make_env("prefrl/MovingDot-v0")
    torch.manual_seed(0)
    save_reward_net(TrainConfig().reward.build(env.observation_space, env.action_space), path)


def _trajectories(path: Path, env_id: str, **kw: Any) -> None:
    from prefrl.agents.rollout import collect_episodes
    from prefrl.agents.sb3 import make_env

    collect_episodes(make_env(env_id), seed=0, **kw).save(path)


class World:
    """Inputs the docs assume (a trained run, models, trajectories), each made once, on demand."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root, self.env = root, env
        self.made: dict[str, Path] = {}

    def cli(self, name: str, *args: str, stdout: str | None = None) -> Path:
        d = self.root / name
        d.mkdir(parents=True)
        p = subprocess.run(
            [real_programs()["prefrl"], *args], cwd=d, env=self.env, capture_output=True,
            text=True, timeout=SLOW_TIMEOUT_S, preexec_fn=_limit_memory,
        )  # fmt: skip
        assert p.returncode == 0, f"building a resource: prefrl {shlex.join(args)}\n{p.stderr[-3000:]}"
        if stdout is not None:
            (d / stdout).write_text(p.stdout)
        return d

    def build(self, variant: str) -> Path:
        d = self.root / "files"
        d.mkdir(exist_ok=True)
        if variant in ("runs/Pendulum-v1-sac-doc", "runs/grid"):  # run dirs, made at this relative path
            env_id = ["--env.id", "prefrl/GridWorld-v0"] if variant == "runs/grid" else []
            made = self.cli(variant.replace("/", "_"), "train", *env_id, *TINY_TRAIN, "--run-dir", variant)
            return made / variant
        if variant == "pendulum.json":
            return self.cli("config", "train", "--print-config", stdout=variant) / variant
        if variant == "pend.npz":
            return self.cli("pend", "rollouts", "--out", variant, "--episodes", "2") / variant
        if variant in POLICY_FILES:  # a policy's rollouts: the tiny run's, or random actions
            policy = []
            if variant != "random.npz":
                run = "runs/Pendulum-v1-sac-doc"
                self.made[run] = self.made.get(run) or self.build(run)
                policy = ["--policy", str(self.made[run] / "policy.zip")]
            return (
                self.cli(variant.replace(".", "_"), "rollouts", "--out", variant, "--steps", "200", *policy)
                / variant
            )
        if variant == "grid.npz":  # random rollouts of the gridworld, whose rewards are sparse
            args = ("rollouts", "--env.id", "prefrl/GridWorld-v0", "--out", variant, "--steps", "2000")
            return self.cli("grid_npz", *args) / variant
        if variant == "runs/labels.db":
            made = self.cli("labels", "label", "add-user", "--store", variant, "doc-labeller", "--admin")
            return made / variant
        if variant in ("a.safetensors", "b.safetensors", "r.safetensors"):
            _mlp_reward(d / variant, "abr".index(variant[0]))
        elif variant == "cnn.safetensors":
            _cnn_reward(d / variant)
        elif variant == "t-state.npz":
            _trajectories(d / variant, "Pendulum-v1", n_episodes=2)
        elif variant == "t-image.npz":
            _trajectories(d / variant, "prefrl/MovingDot-v0", n_steps=64)
        elif variant == "runs/coinrun":  # benchmarks/coinrun.py's rewards and episodes, a tiny budget
            script = str(REPO / "benchmarks" / "coinrun.py")
            argv = [sys.executable, script, *COINRUN_SHORT, "--save", str(d / variant)]
            p = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=SLOW_TIMEOUT_S)
            assert p.returncode == 0, f"building a resource: {shlex.join(argv)}\n{p.stderr[-3000:]}"
        return d / variant

    def provide(self, key: str, words: Sequence[str], box: Path) -> None:
        """Copy resource ``key`` (and files named after it: a SQLite journal, a clip folder) into ``box``."""
        variant = key
        if key == "t.npz":  # trajectories to go with the model named beside them
            variant = "t-image.npz" if "cnn.safetensors" in words else "t-state.npz"
        if variant not in self.made:
            self.made[variant] = self.build(variant)
        src = self.made[variant]
        dest = box / key
        dest.parent.mkdir(parents=True, exist_ok=True)
        for p in src.parent.glob(src.name + "*"):
            target = dest.with_name(dest.name + p.name[len(src.name) :])
            if p.is_dir():
                shutil.copytree(p, target, symlinks=True)
            else:
                shutil.copy2(p, target)


POLICY_FILES = ("learned.npz", "random.npz", "mine.npz", "true.npz", "skilled.npz")
"""Rollouts of policies that docs compare (``prefrl interpret policies``, ``refit_labels.py
--compare``): the tiny Pendulum run's policy, or random actions for ``random.npz``."""

# Paths as written in the docs; World.build makes each.
RESOURCES = (
    "runs/Pendulum-v1-sac-doc", "runs/grid", "pendulum.json", "pend.npz", "runs/labels.db",
    "a.safetensors", "b.safetensors", "r.safetensors", "cnn.safetensors", "t.npz", "runs/coinrun",
    "grid.npz", *POLICY_FILES,
)  # fmt: skip


def resources_of(case: Case) -> list[tuple[str, list[str]]]:
    """(resource, words of the command that reads it) for every resource a case reads."""
    out: dict[str, list[str]] = {}
    for c in case.runnable:
        made = c.written()
        words = [*c.words, *(x for stage in c.short_stages() for x in stage)]  # a rule's own inputs too
        for w in [*words, *(v for w in words if (v := w.partition("=")[2]))]:  # NAME=path words too
            for key in RESOURCES:
                if (w == key or w.startswith(key + "/")) and w not in made and key not in made:
                    out.setdefault(key, c.words)
    return list(out.items())


# ----------------------------------------------------------------------------- running
def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def real_programs() -> dict[str, str]:
    prefrl = str(Path(sys.executable).parent / "prefrl")
    bash, sh = shutil.which("bash") or "/bin/bash", shutil.which("sh") or "/bin/sh"
    return {"prefrl": prefrl, "python": sys.executable, "python3": sys.executable, "bash": bash, "sh": sh}


def base_env(tmp: Path) -> dict[str, str]:
    drop = ("DISPLAY", "WAYLAND_DISPLAY", "PYTEST_CURRENT_TEST")  # no windows; a clean inner pytest
    env = {k: v for k, v in os.environ.items() if k not in drop}
    (tmp / "tmp").mkdir(parents=True, exist_ok=True)
    venv_bin = str(Path(sys.executable).parent)
    env.update(
        PATH=f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}", TMPDIR=str(tmp / "tmp"), MPLBACKEND="Agg",
        PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1", DOCTEST_REAL=json.dumps(real_programs()),
    )  # fmt: skip
    return env


def make_sandbox(box: Path) -> None:
    """Links to the repository's files, and a fresh ``runs/``: relative doc paths work, outputs stay here."""
    box.mkdir(parents=True)
    for entry in REPO.iterdir():
        if entry.name not in SANDBOX_SKIP:
            (box / entry.name).symlink_to(entry)
    (box / "runs").mkdir()


def no_reinstall(box: Path) -> None:
    """scripts/*.sh install when pyproject.toml is newer than the venv's stamp: that step is not run here.

    The install itself is out of scope (EXCLUDED); the sandbox's pyproject.toml is dated at the
    stamp so the script goes straight to its command. Without a stamp the venv was not made by
    scripts/install.sh and the script would build one: skipped.
    """
    stamp = REPO / ".venv" / ".prefrl-installed"
    if not stamp.exists() or not os.access(REPO / ".venv" / "bin" / "python", os.X_OK):
        pytest.skip("no .venv made by scripts/install.sh: the script would install first")
    (box / "pyproject.toml").unlink()
    shutil.copy2(REPO / "pyproject.toml", box / "pyproject.toml")
    t = stamp.stat().st_mtime - 1
    os.utime(box / "pyproject.toml", (t, t))


def write_shims(d: Path) -> None:
    d.mkdir()
    for name in SHIMMED:
        p = d / name
        me = f"{shlex.quote(sys.executable)} {shlex.quote(__file__)}"
        p.write_text(f'#!/bin/sh\nexec {me} --doc-shim {name} "$@"\n')
        p.chmod(0o755)


def run_case(case: Case, world: World, tmp: Path) -> None:
    box = tmp / "repo"
    make_sandbox(box)
    if any(r.installs_first for c in case.runnable for r in c.rules):
        no_reinstall(box)
    for key, words in resources_of(case):
        world.provide(key, words, box)
    write_shims(tmp / "shims")
    log = tmp / "calls.jsonl"
    env = base_env(tmp)
    env.update(PATH=f"{tmp / 'shims'}{os.pathsep}{env['PATH']}", DOCTEST_LOG=str(log))
    timeout = SLOW_TIMEOUT_S if case.slow else FAST_TIMEOUT_S
    proc = subprocess.Popen(
        [real_programs()["bash"], "-c", "set -eo pipefail\n" + case.script], cwd=box, env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True, preexec_fn=_limit_memory,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{case.id}: still running after {timeout} s\n{out[-4000:]}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever the doc left in the background
        except ProcessLookupError:
            pass
    where = f"{case.id} ({case.script!r} in {box})"
    assert proc.returncode == 0, f"{where}: exit status {proc.returncode}\n{out[-4000:]}"
    calls = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    failed = [c for c in calls if c["rc"] != 0]
    assert not failed, f"{where}: calls that failed: {failed}\n{out[-4000:]}"
    shimmed = [s for c in case.runnable for s in c.stages if Path(s[0]).name in SHIMMED]
    assert calls or not shimmed, f"{where}: the shims saw no call of {shimmed}\n{out[-4000:]}"
    for c in case.runnable:
        for pattern in c.outputs():
            found = list(box.glob(pattern)) if not Path(pattern).is_absolute() else [Path(pattern)]
            found = [p for p in found if p.exists() and (p.is_dir() or p.stat().st_size > 0)]
            assert found, f"{where}: expected output {pattern} is missing or empty\n{out[-4000:]}"


# ------------------------------------------------------------------------------ shim
def serve_check(cmd: list[str]) -> int:
    """Start a server on a free local port, wait until it answers ``GET /``, stop it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([*cmd, "--host", "127.0.0.1", "--port", str(port)])
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                print(f"doc shim: the server exited ({proc.returncode}) before answering", file=sys.stderr)
                return proc.returncode or 1
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
                    status = r.status
            except urllib.error.HTTPError as e:
                status = e.code
            except OSError:
                time.sleep(0.3)
                continue
            print(f"doc shim: the server answered GET / with HTTP {status}", file=sys.stderr)
            return 0 if status < 400 else 1
        print("doc shim: the server did not answer within 120 s", file=sys.stderr)
        return 1
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def with_labelling_bot(cmd: list[str], store: str) -> int:
    """Run ``cmd`` (a web-teacher run) while ``prefrl label`` serves ``store`` on a free port
    and a bot signed in there answers every query it is shown ("left")."""
    import threading

    from prefrl.storage.store import QueryStore

    qs = QueryStore(store)
    token = qs.add_user(f"doc-bot-{os.getpid()}")
    qs.close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    real = json.loads(os.environ["DOCTEST_REAL"])["prefrl"]
    server = subprocess.Popen([real, "label", "--store", store, "--host", "127.0.0.1", "--port", str(port)])
    stop = threading.Event()

    def call(path: str, body: dict | None = None) -> dict:
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            data=None if body is None else json.dumps(body).encode())  # fmt: skip
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"{}")

    def bot() -> None:
        while not stop.is_set():
            try:
                q = call("/api/queries/next")
                if q.get("query_id") is None:
                    time.sleep(0.3)
                    continue
                call("/api/labels", {"query_id": q["query_id"], "answer": "left"})
            except (OSError, ValueError):  # the server is starting, or a query just closed
                time.sleep(0.3)

    thread = threading.Thread(target=bot, daemon=True)
    thread.start()
    try:
        return subprocess.run(cmd).returncode
    finally:
        stop.set()
        thread.join(15)
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def shim(argv: list[str]) -> int:
    """``prefrl``/``python``/``bash`` as the docs call them: the short variant, logged."""
    real = json.loads(os.environ["DOCTEST_REAL"])[argv[0]]
    if any("ray/_private/" in a for a in argv):  # Ray starting its own workers: not a doc command
        os.execv(real, [real, *argv[1:]])
    rule = find_rule(argv)
    short = rule.rewrite(list(argv)) if rule else list(argv)
    cmd = [real, *short[1:]]
    t0 = time.monotonic()
    if rule is not None and rule.serve:
        rc = serve_check(cmd)
    elif rule is not None and rule.labelling_bot:
        rc = with_labelling_bot(cmd, str(opt(short, "--store")))
    else:
        rc = subprocess.run(cmd, input=rule.stdin if rule else None, text=True).returncode
    with open(os.environ["DOCTEST_LOG"], "a") as f:
        f.write(json.dumps({"rule": rule and rule.name, "argv": short, "rc": rc,
                            "wall_s": round(time.monotonic() - t0, 1)}) + "\n")  # fmt: skip
    return rc


# ------------------------------------------------------------------------------ tests
@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("doc-world")
    return World(root, base_env(root))


def _param(case: Case) -> object:
    marks = [pytest.mark.slow] if case.kind == "run" and case.slow else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_doc_command(case: Case, world: World, tmp_path: Path) -> None:
    if case.kind == "unknown":
        pytest.fail(f"{case.id}: {case.script!r}: {case.reason}")
    if case.kind == "excluded":
        pytest.skip(f"{case.id}: EXCLUDED {case.reason}")
    run_case(case, world, tmp_path)


def test_fences_are_well_formed() -> None:
    """A fence that does not close (CommonMark) turns the rest of a doc into one code block."""
    assert not FENCE_PROBLEMS, "\n".join(FENCE_PROBLEMS)


def test_every_exclusion_is_used() -> None:
    used = {cmd.excluded_by for c in CASES for cmd in c.commands}
    assert set(EXCLUDED) <= used, f"EXCLUDED entries no doc command matches any more: {set(EXCLUDED) - used}"


def test_the_parser_finds_the_docs_commands() -> None:
    files = {c.file for c in CASES}
    assert {"README.md", "docs/tutorial.md"} <= files and len(CASES) >= 20, sorted(files)
    assert any(c.runnable and c.runnable[0].stages[0][:2] == ["prefrl", "train"] for c in CASES)


def test_the_parser_on_a_sample_block() -> None:
    block = Block(
        "x.md",
        "bash",
        tuple(
            enumerate(
                [
                    "# a comment line",
                    "prefrl train --seed 1 \\",
                    "  --teacher noisy   # trailing comment",
                    'X="python benchmarks/label_efficiency.py --out runs/b" && echo "a && b # c"',
                    "prefrl train --print-config > p.json",
                    "prefrl evaluate runs/Pendulum-v1-sac-<time> --videos 2 ...",
                ],
                start=10,
            )
        ),
    )
    cases = cases_of_block(block)
    assert [c.id for c in cases] == ["x.md:11", "x.md:13", "x.md:14", "x.md:15"]
    train, echo, config, evaluate = (c.commands[0] for c in cases)
    assert train.stages == [["prefrl", "train", "--seed", "1", "--teacher", "noisy"]]
    assert echo.stages == [["echo", "a && b # c"]] and echo.kind == "unknown"
    assert cases[1].script.startswith('X="python benchmarks/label_efficiency.py --out runs/b"\n')
    assert config.redirects == ["p.json"] and config.rules[0].name == "prefrl train --print-config"
    assert evaluate.stages == [["prefrl", "evaluate", "runs/Pendulum-v1-sac-doc", "--videos", "2"]]
    assert evaluate.outputs() == ["runs/Pendulum-v1-sac-doc/videos/*.mp4"]
    script = Block("y.md", "sh", ((1, 'B="python benchmarks/label_efficiency.py --seeds 1"'),
                                  (2, "for s in 0 1; do $B --first-seed $s & done; wait")))  # fmt: skip
    (case,) = cases_of_block(script)
    assert case.id == "y.md:1" and case.kind == "run" and case.slow
    assert case.runnable[0].stages[0][:2] == ["python", "benchmarks/label_efficiency.py"]


def test_repeated_options_keep_the_last_value() -> None:
    """The short variants append options: the CLIs must take the last of a repeated option."""
    p = subprocess.run(
        [real_programs()["prefrl"], "train", "--loop.total-labels", "40", "--print-config",
         "--loop.total-labels", "4", "--threads", "2", "--threads", "1"],
        capture_output=True, text=True, timeout=FAST_TIMEOUT_S,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    cfg = json.loads(p.stdout)
    assert cfg["loop"]["total_labels"] == 4 and cfg["threads"] == 1


if __name__ == "__main__" and sys.argv[1:2] == ["--doc-shim"]:
    sys.exit(shim(sys.argv[2:]))
