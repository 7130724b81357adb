"""Loop callbacks: hooks called by :class:`~prefrl.training.loop.PreferenceLoop`.

Subclass :class:`LoopCallback` and override what you need; ``on_iteration_end``
returning ``False`` stops training after that iteration. Each hook gets the loop, typed as
stable-baselines3's callbacks type their algorithm (a name only type checkers import).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from prefrl.training.progress import Bar, progress_bar

if TYPE_CHECKING:
    from prefrl.training.loop import PreferenceLoop


class LoopCallback:
    """Base class: every hook does nothing."""

    def on_start(self, loop: PreferenceLoop) -> None:
        """Called once before the first iteration (also after a resume)."""

    def on_labels(self, loop: PreferenceLoop, n_new: int) -> None:
        """Called after ``n_new`` labels were added to the dataset."""

    def on_iteration_end(self, loop: PreferenceLoop, metrics: Mapping[str, float]) -> bool | None:
        """Called after each iteration with its metrics; return ``False`` to stop."""
        return None

    def on_env_steps(self, loop: PreferenceLoop, env_steps: int) -> None:
        """Called every ~100 environment steps while the agent trains."""

    def on_end(self, loop: PreferenceLoop) -> None:
        """Called once when training ends."""


class ProgressBar(LoopCallback):
    """Progress over environment steps, showing labels and the latest true return.

    On a terminal it is a tqdm bar; written to a file (``nohup``, ``> log 2>&1``, CI) it is a
    plain line per iteration and at most one more a minute in between
    (:class:`~prefrl.training.progress.LineProgress`)."""

    def __init__(self, disable: bool = False) -> None:
        self.disable = disable
        self.bar: Bar | None = None
        self.offline = False

    def on_start(self, loop: PreferenceLoop) -> None:
        # offline (no agent, no environment steps): the bar counts reward-update iterations
        self.offline = loop.agent is None
        total = loop.config.iterations if self.offline else loop.config.total_steps
        unit = "iteration" if self.offline else "step"
        self.bar = progress_bar(total, unit=unit, disable=self.disable)
        self.bar.update(self._done(loop))

    def _done(self, loop: PreferenceLoop) -> int:
        return int(loop.iteration if self.offline else loop.env_steps)

    def on_env_steps(self, loop: PreferenceLoop, env_steps: int) -> None:
        if self.bar is not None and not self.offline and env_steps > self.bar.n:
            self.bar.update(env_steps - self.bar.n)

    def on_iteration_end(self, loop: PreferenceLoop, metrics: Mapping[str, float]) -> None:
        if self.bar is None:
            return
        self.bar.update(self._done(loop) - self.bar.n)
        post: dict[str, float] = {"labels": len(loop.dataset)}
        if "rollout/true_return" in metrics:
            post["true_return"] = round(metrics["rollout/true_return"], 1)
        if "reward/heldout_accuracy" in metrics:  # fresh clips ranked by the true reward
            post["heldout_acc"] = round(metrics["reward/heldout_accuracy"], 2)
        elif "reward/val_accuracy" in metrics:  # no true reward: the labels held out of training
            post["val_acc"] = round(metrics["reward/val_accuracy"], 2)
        self.bar.set_postfix(post)

    def on_end(self, loop: PreferenceLoop) -> None:
        if self.bar is not None:
            self.bar.close()


class StopAfter(LoopCallback):
    """Stops after ``iterations`` iterations (e.g. to simulate an interruption in tests)."""

    def __init__(self, iterations: int) -> None:
        self.iterations = iterations

    def on_iteration_end(self, loop: PreferenceLoop, metrics: Mapping[str, float]) -> bool:
        return loop.iteration < self.iterations
