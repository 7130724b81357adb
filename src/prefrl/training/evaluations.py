"""Periodic evaluation of the policy on the true reward while it trains (``--eval-interval``).

The papers of the preference-learning field report the mean true return of the last ten
evaluations (10 episodes every 10,000 environment steps), not only the final policy's;
:class:`PeriodicEvaluation` records those evaluations in the loop's state, so they are saved
in every checkpoint and a resumed run neither loses nor repeats one, and writes them to
``RUN/evaluations.csv`` (columns ``step,true_return``) after each iteration.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import numpy as np

from prefrl.agents.protocols import Agent
from prefrl.training.callbacks import LoopCallback

if TYPE_CHECKING:
    from prefrl.training.loop import PreferenceLoop

Evaluate = Callable[[Agent, int], float]
"""``evaluate(agent, seed) -> mean true return`` of the policy over a fixed number of episodes."""


class PeriodicEvaluation(LoopCallback):
    """Evaluate the agent every ``interval`` environment steps (and once at the end).

    Args:
        evaluate: ``evaluate(agent, seed) -> mean true return``.
        interval: environment steps between evaluations (counted from the run's start).
        csv_path: where the evaluations are written after each iteration (``None``: nowhere).
    """

    def __init__(self, evaluate: Evaluate, interval: int, csv_path: str | Path | None = None) -> None:
        if interval < 1:
            raise ValueError(f"eval_interval must be >= 1 environment steps, got {interval}")
        self.evaluate, self.interval = evaluate, interval
        self.csv_path = None if csv_path is None else Path(csv_path)

    def _run(self, loop: PreferenceLoop, env_steps: int) -> None:
        done, agent = loop.progress.evaluations, loop.agent
        assert agent is not None
        done.append((int(env_steps), float(self.evaluate(agent, evaluation_seed(done)))))

    def _due(self, loop: PreferenceLoop, env_steps: int) -> bool:
        return is_due(loop.progress.evaluations, self.interval, env_steps)

    def on_env_steps(self, loop: PreferenceLoop, env_steps: int) -> None:
        if loop.agent is not None and self._due(loop, env_steps):
            self._run(loop, env_steps)

    def on_iteration_end(self, loop: PreferenceLoop, metrics: Mapping[str, float]) -> None:
        self.write(loop)

    def on_end(self, loop: PreferenceLoop) -> None:
        evals = loop.progress.evaluations
        if loop.agent is not None and (not evals or evals[-1][0] < loop.env_steps):
            self._run(loop, loop.env_steps)  # the final policy, at the last step
        self.write(loop)

    def write(self, loop: PreferenceLoop) -> None:
        """``RUN/evaluations.csv`` from the loop's state (rewritten whole: a resume stays exact)."""
        if self.csv_path is not None:
            write_evaluations(self.csv_path, loop.progress.evaluations)


def evaluation_seed(evaluations: list[tuple[int, float]]) -> int:
    """Seed of the next evaluation's episodes: a fixed one per evaluation, apart from training's."""
    return 10_000 + len(evaluations)


def is_due(evaluations: list[tuple[int, float]], interval: int, env_steps: int) -> bool:
    """Whether an evaluation is due at ``env_steps``: the next multiple of ``interval`` after the
    last evaluation's step has been reached (the first at ``interval``)."""
    last = evaluations[-1][0] if evaluations else 0
    return env_steps >= (last // interval + 1) * interval


def write_evaluations(path: Path, evaluations: list[tuple[int, float]]) -> None:
    """``path`` (``evaluations.csv``: ``step,true_return``) rewritten whole, atomically."""
    rows = "".join(f"{t},{r!r}\n" for t, r in evaluations)
    tmp = path.with_suffix(".csv.tmp")
    tmp.write_text("step,true_return\n" + rows)
    tmp.replace(path)


def last_mean(evaluations: list[tuple[int, float]], n: int = 10) -> float | None:
    """Mean true return of the last ``n`` evaluations (the papers' figure); ``None`` if none."""
    if not evaluations:
        return None
    return float(np.mean([r for _, r in evaluations[-n:]]))


class CorrelationWatch(LoopCallback):
    """A warning line when the learned reward's correlation with the true reward on the agent's
    newest steps (``reward/pearson_true``, measured before the reward trains on them) turns
    negative: the agent is optimising the reward where it is wrong, long before the return
    shows it (Tien et al. 2023). Printed once each time it turns negative. Only meaningful
    where the true reward is the teacher's (synthetic teachers)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream
        self.negative = False

    def on_iteration_end(self, loop: PreferenceLoop, metrics: Mapping[str, float]) -> None:
        r = metrics.get("reward/pearson_true")
        if r is None or not np.isfinite(r):
            return
        if r < 0 and not self.negative:
            print(
                f"warning: at step {loop.env_steps} the learned reward correlates {r:+.2f} with the true "
                "reward on the agent's newest steps: the agent is heading where the reward is wrong "
                "(more labels on its recent behaviour help)",
                file=self.stream or sys.stderr,
                flush=True,
            )
        self.negative = r < 0
