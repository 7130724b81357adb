"""Reward functions as plain callables, so learned and true rewards compare alike.

A :data:`RewardFn` maps tensors ``obs [*lead, ...]``, ``acts [*lead, ...]``,
``next_obs [*lead, ...]`` and ``dones [*lead]`` to rewards ``[*lead]`` (float64).
Reward networks (ensemble mean), reward tables ``[S, A, S']`` and any such callable
are turned into one by :func:`as_reward_fn`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from prefrl.data.arrays import obs_map
from prefrl.rewards.nets import RewardNet, to_tensor

RewardFn = Callable[[Any, Any, Any, torch.Tensor], torch.Tensor]


def net_reward_fn(net: RewardNet) -> RewardFn:
    """The ensemble-mean reward of ``net`` as a :data:`RewardFn` (no gradients)."""

    @torch.no_grad()
    def fn(obs: Any, acts: Any, next_obs: Any, dones: torch.Tensor) -> torch.Tensor:
        dev = net.device
        r = net(to_tensor(obs, dev), to_tensor(acts, dev), to_tensor(next_obs, dev), to_tensor(dones, dev))
        return r.mean(0).double().cpu()

    return fn


def table_reward_fn(table: np.ndarray) -> RewardFn:
    """A tabular reward ``table[s, a, s']`` (``[S, A, S']``) for integer states and actions."""
    t = torch.as_tensor(np.asarray(table, dtype=np.float64))
    if t.dim() != 3 or t.shape[0] != t.shape[2]:
        raise ValueError(f"a reward table must have shape [S, A, S], got {tuple(t.shape)}")

    def fn(obs: Any, acts: Any, next_obs: Any, dones: torch.Tensor) -> torch.Tensor:
        s, a, s2 = (to_tensor(x, "cpu").long() for x in (obs, acts, next_obs))
        for name, x, n in (("obs", s, t.shape[0]), ("acts", a, t.shape[1]), ("next_obs", s2, t.shape[0])):
            if x.numel() and (x.min() < 0 or x.max() >= n):
                raise ValueError(f"{name} index out of range for a reward table of shape {tuple(t.shape)}")
        return t[s, a, s2]

    return fn


def as_reward_fn(reward: RewardNet | np.ndarray | RewardFn) -> RewardFn:
    """Accept a reward network, a reward table ``[S, A, S']`` or a :data:`RewardFn`."""
    if isinstance(reward, RewardNet):
        return net_reward_fn(reward)
    if isinstance(reward, (np.ndarray, torch.Tensor)):
        return table_reward_fn(np.asarray(reward))
    if callable(reward):
        return reward
    raise TypeError(f"cannot use {type(reward).__name__} as a reward function")


def reward_table(
    reward: RewardNet | RewardFn, n_states: int, n_actions: int, dones: np.ndarray | None = None
) -> np.ndarray:
    """Tabulate a reward on integer states/actions: ``[S, A, S']`` float64.

    Args:
        dones: optional ``[S']`` bool, the terminal flag passed for each next state.
    """
    fn = as_reward_fn(reward)
    s, a, s2 = torch.meshgrid(
        torch.arange(n_states), torch.arange(n_actions), torch.arange(n_states), indexing="ij"
    )
    d = torch.zeros(s.shape) if dones is None else torch.as_tensor(np.asarray(dones, bool))[s2].float()
    return fn(s, a, s2, d).double().cpu().numpy()


def index_obs(obs: Any, idx: Any) -> Any:
    """Index the leading dimension of an observation (array or dict of arrays)."""
    return obs_map(lambda x: x[idx], obs)
