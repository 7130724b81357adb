"""What a run reports: the fields of ``RUN/report.json``, which :func:`prefrl.run.train.train` (and
``prefrl train --reward-from``) return and :func:`prefrl.run.train.format_report` prints."""

from __future__ import annotations

from typing import TypedDict

from prefrl.training.watch import WatchSummary


class RunReport(TypedDict, total=False):
    """What a run reports (``RUN/report.json``, and what :func:`train` returns)."""

    run_dir: str
    env: str
    teacher: str
    reward_from: str
    """``--reward-from``: the run or file whose reward the agent trained on."""
    labels_used: int
    queries_asked: int
    queries_not_asked: int
    """Queries of the budget never asked because every answer so far was a tie when they were
    due (``--loop.tie-probe``); absent when the whole budget was asked."""
    queries: dict[str, int]
    """With people answering: queries asked, answered, used, expired, open, answers and answers used."""
    agent: str
    env_steps: int
    eval: str
    """How the policy was evaluated: ``sampled`` or ``deterministic`` actions."""
    true_return: float
    true_return_std: float
    random_return: float
    evaluations: list[list[float]]
    """``[env_steps, mean true return]`` of each periodic evaluation (``--eval-interval``)."""
    eval_last10_mean: float | None
    reward_accuracy: float | None
    label_tie_fraction: float | None
    watch: WatchSummary
    """Where the run watch fired (the reward ensemble split on the agent's steps; no true reward used)."""
    fresh_agent_true_return: float
    train_wall_s: float
    train_cpu_s: float
    wall_s: float
    resumed: bool
    files: dict[str, str]
