"""Typed narrowing for tests: each helper asserts what a test relies on and returns the narrowed value,
so that mypy checks what follows (instead of an ignore comment) and a wrong assumption fails the test
with a line saying which."""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

T = TypeVar("T")


def present(value: T | None, what: str = "value") -> T:
    """``value``, asserted not to be ``None``."""
    assert value is not None, f"{what} is None"
    return value


def off_policy(agent: BaseAlgorithm) -> OffPolicyAlgorithm:
    """``agent`` as the off-policy algorithm (SAC, TD3, DQN) a replay-buffer test needs."""
    assert isinstance(agent, OffPolicyAlgorithm), f"{type(agent).__name__} has no replay buffer"
    return agent


def replay_buffer(agent: BaseAlgorithm) -> ReplayBuffer:
    """The replay buffer of an off-policy ``agent``."""
    return present(off_policy(agent).replay_buffer, "the agent's replay buffer")


def array(value: object) -> np.ndarray:
    """``value`` (an observation batch, a rendered frame), asserted to be one array, not a dict or tuple."""
    assert isinstance(value, np.ndarray), f"expected an array, got {type(value).__name__}"
    return value


def section(state: object, *keys: str) -> dict[str, Any]:
    """The dict at ``keys`` inside a loaded nested state (``load_tensor_state``, a JSON file), asserted to
    be a dict at every level: its values are what the file held, checked by the test that reads them."""
    for key in keys:
        assert isinstance(state, dict), f"expected a dict above {key!r}, got {type(state).__name__}"
        state = state[key]
    assert isinstance(state, dict), f"expected a dict at {'/'.join(keys)}, got {type(state).__name__}"
    return state


def number(value: object) -> float:
    """``value`` (a reward in an ``info`` dict), asserted to be one real number."""
    assert isinstance(value, int | float | np.integer | np.floating), f"expected a number, got {value!r}"
    return float(value)
