"""Long runs as child processes, a few at a time, each with its own log (the benchmark drivers).

``benchmarks/frontier.py`` and ``benchmarks/atari.py`` train one process per (side, seed), each
with one thread, ``parallel`` at a time, so that a killed driver loses nothing a checkpoint
holds: the children resume when the same command runs again.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

POLL_S = 5.0
"""Seconds between looks at the running children."""


def unfinished(root: Path, sides: Sequence[str], seeds: range) -> list[tuple[str, int]]:
    """``(side, seed)`` of the runs under ``root`` without a result file ``<side>-seed<k>.json``
    yet, seed by seed (a driver's runs still to train or resume)."""
    runs = [(side, seed) for seed in seeds for side in sides]
    return [(side, seed) for side, seed in runs if not (root / f"{side}-seed{seed}.json").exists()]


def run_jobs(
    jobs: Sequence[tuple[str, list[str]]],
    logs: Path,
    parallel: int,
    env: Mapping[str, str],
    label: str = "",
    poll_s: float = POLL_S,
) -> list[str]:
    """Run each ``(name, argv)`` of ``jobs``, at most ``parallel`` at once, in order; a child's
    output is appended to ``logs / f"{name}.log"``. Each start and end is one line on stderr
    (``label`` first). Returns the names of the jobs that exited non-zero (``[]``: all done)."""
    if parallel < 1:
        raise ValueError(f"parallel must be >= 1, got {parallel}")
    logs.mkdir(parents=True, exist_ok=True)
    todo = list(jobs)
    running: list[tuple[subprocess.Popen[bytes], str]] = []
    failed: list[str] = []
    head = f"{label} " if label else ""
    while todo or running:
        while todo and len(running) < parallel:
            name, argv = todo.pop(0)
            log_path = logs / f"{name}.log"
            with open(log_path, "ab") as log:  # the child keeps its own descriptor
                running.append((subprocess.Popen(argv, stdout=log, stderr=log, env=dict(env)), name))
            print(f"{head}{name}: started (log {log_path})", file=sys.stderr, flush=True)
        time.sleep(poll_s)
        for proc, name in list(running):
            if proc.poll() is not None:
                running.remove((proc, name))
                end = "done" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})"
                print(f"{head}{name}: {end}", file=sys.stderr, flush=True)
                if proc.returncode:
                    failed.append(name)
    return failed
