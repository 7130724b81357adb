"""Exact planning in tabular MDPs: value iteration and optimal action sets."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class TabularEnv(Protocol):
    """An environment with exact tables (the grid world): rewards ``[S, A]`` and transitions ``[S, A, S]``."""

    def reward_table(self) -> np.ndarray: ...

    def transition_table(self) -> np.ndarray: ...


def value_iteration(
    transitions: np.ndarray,
    rewards: np.ndarray,
    gamma: float,
    terminal: np.ndarray | None = None,
    tol: float = 1e-10,
    max_iter: int = 100_000,
) -> tuple[np.ndarray, np.ndarray]:
    """Optimal ``Q [S, A]`` and ``V [S]`` of a tabular MDP.

    ``Q(s, a) = Σ_s' P(s'|s,a) [R(s,a,s') + γ (1 − terminal(s')) V(s')]``.

    Args:
        transitions: ``[S, A, S']`` probabilities.
        rewards: ``[S, A, S']`` rewards.
        gamma: discount in [0, 1) (or 1 when every policy reaches a terminal state).
        terminal: ``[S]`` bool; entering a terminal state ends the episode.
    """
    p, r = np.asarray(transitions, np.float64), np.asarray(rewards, np.float64)
    if p.ndim != 3 or p.shape != r.shape or p.shape[0] != p.shape[2]:
        raise ValueError(f"transitions and rewards must both be [S, A, S], got {p.shape} and {r.shape}")
    if not np.allclose(p.sum(-1), 1.0):
        raise ValueError("transition probabilities must sum to 1 over next states")
    cont = np.ones(p.shape[0]) if terminal is None else 1.0 - np.asarray(terminal, np.float64)
    expected_r = (p * r).sum(-1)  # [S, A]
    v = np.zeros(p.shape[0])
    for _ in range(max_iter):
        q = expected_r + gamma * p @ (cont * v)
        v_new = q.max(1)
        if np.max(np.abs(v_new - v)) < tol:
            return q, v_new
        v = v_new
    raise RuntimeError(f"value iteration did not converge in {max_iter} iterations (gamma={gamma})")


def optimal_actions(q: np.ndarray, tol: float = 1e-6) -> np.ndarray:
    """``[S, A]`` bool: actions within ``tol`` of the best in each state."""
    return q >= q.max(1, keepdims=True) - tol
