"""Progress output in a log file: a few plain lines, not thousands of carriage-return updates."""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest

from prefrl.training import progress
from prefrl.training.callbacks import ProgressBar
from prefrl.training.progress import StatusLine

if TYPE_CHECKING:
    from prefrl.training.loop import PreferenceLoop


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    c = FakeClock()
    monkeypatch.setattr(time, "monotonic", c)  # the clock progress reads
    return c


def drive(
    bar: ProgressBar, clock: FakeClock, steps: int = 15_000, iterations: int = 14, s_per_100: float = 1.5
) -> None:
    """What the loop does in a ``prefrl train --loop.total-steps 15000`` run: env steps every
    100 steps, an iteration end every ``steps / iterations`` steps (about 3.75 minutes here)."""
    loop = SimpleNamespace(agent=object(), config=SimpleNamespace(total_steps=steps, iterations=iterations),
                           env_steps=0, iteration=0, dataset=[])  # fmt: skip
    seen = cast("PreferenceLoop", loop)  # a stand-in with only what the bar reads
    bar.on_start(seen)
    per_iteration = steps // iterations
    for s in range(100, steps + 1, 100):
        clock.t += s_per_100
        loop.env_steps = s
        bar.on_env_steps(seen, s)
        if s % per_iteration < 100 or s == steps:
            loop.iteration += 1
            loop.dataset = [0] * (2 * loop.iteration)
            bar.on_iteration_end(seen, {"rollout/true_return": -150.0, "reward/val_accuracy": 0.9})
    bar.on_end(seen)


@pytest.mark.parametrize("s_per_100", [1.5, 6.0])  # a 4-minute run, and a 15-minute one on a busy machine
def test_a_15000_step_run_writes_a_few_plain_lines_to_a_file(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, s_per_100: float
) -> None:
    log = tmp_path / "log"
    with log.open("w") as f:
        monkeypatch.setattr(sys, "stderr", f)  # `prefrl train > log 2>&1`
        drive(ProgressBar(), clock, s_per_100=s_per_100)
    text = log.read_text()
    lines = text.splitlines()
    assert "\r" not in text
    assert 10 <= len(lines) <= 30, lines  # one per iteration, and one a minute within a long one
    assert lines[-1].startswith("prefrl: 15000/15000 steps (100%)")
    assert "labels=28" in lines[-1] and "true_return=-150.0" in lines[-1] and "val_acc=0.9" in lines[-1]


def test_a_long_iteration_still_writes_a_line_a_minute(tmp_path: Path, clock: FakeClock) -> None:
    out = io.StringIO()
    bar = progress.LineProgress(10_000, unit="step", file=out)
    for _ in range(100):  # 100 updates, 6 s apart: 10 minutes without an iteration ending
        clock.t += 6.0
        bar.update(100)
    bar.close()
    lines = out.getvalue().splitlines()
    assert 10 <= len(lines) <= 12 and lines[-1].startswith("prefrl: 10000/10000 steps")


def test_a_terminal_keeps_the_live_bar(clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    bar = ProgressBar()
    drive(bar, clock, steps=1_000, iterations=2)
    assert not isinstance(bar.bar, progress.LineProgress)
    assert "\r" in term.getvalue() and "1000/1000" in term.getvalue()


def test_disabled_progress_writes_nothing(clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    drive(ProgressBar(disable=True), clock, steps=1_000, iterations=2)
    assert out.getvalue() == ""


def test_status_line_in_a_file_is_throttled_and_ends_with_the_latest(clock: FakeClock) -> None:
    out = io.StringIO()
    status = StatusLine(out, interval=30.0)
    for i in range(120):  # once a second for two minutes
        status.show(f"waiting: {i}s")
        clock.t += 1.0
    status.close()
    assert out.getvalue().splitlines() == ["waiting: 0s", "waiting: 30s", "waiting: 60s", "waiting: 90s",
                                           "waiting: 119s"]  # fmt: skip


def test_status_line_on_a_terminal_rewrites_in_place(clock: FakeClock) -> None:
    term = Terminal()
    status = StatusLine(term)
    status.show("a")
    status.show("b")
    status.close()
    assert term.getvalue() == "\ra\rb\n"
