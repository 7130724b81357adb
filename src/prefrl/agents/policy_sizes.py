"""What a policy file's agent config would allocate, checked before the agent is built.

:func:`~prefrl.agents.policy_io.load_agent` builds a fresh agent from the config stored in the file,
then puts the file's tensors in place. A crafted config can ask for a hidden layer of 10**12 units
or a replay buffer of 10**12 transitions, terabytes allocated (or a machine swapped to a halt)
before any tensor is compared. :func:`check_sizes` refuses that first, with one line:

- every width of the networks (``net_arch``, and any integer in ``extra``'s ``policy_kwargs``)
  must be a dimension of a tensor the file holds, and each network at most as large as all of
  them together;
- each array of the replay buffer (off-policy) or rollout buffer (on-policy) must fit this
  machine's memory (RAM and swap: what the kernel would grant one allocation).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TypeGuard

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv

from prefrl.agents.sb3 import AgentConfig

FALLBACK_MEMORY = 1 << 40
"""The memory assumed where the system does not say (1 TiB)."""


def tensor_shapes(state: object) -> list[tuple[int, ...]]:
    """The shapes of every tensor in a nested state dict."""
    if isinstance(state, dict):
        return [s for v in state.values() for s in tensor_shapes(v)]
    return [tuple(state.shape)] if isinstance(state, torch.Tensor) else []


def _int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _layouts(node: object, where: str) -> tuple[list[tuple[str, list[int]]], list[tuple[str, int]]]:
    """Lists of integers (layer widths) and single integers found in ``node``, with where they are."""
    if isinstance(node, list) and node and all(map(_int, node)):
        return [(where, node)], []
    if _int(node):
        return [], [(where, node)]
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    lists: list[tuple[str, list[int]]] = []
    ints: list[tuple[str, int]] = []
    for k, v in items:
        more_lists, more_ints = _layouts(v, f"{where}.{k}")
        lists += more_lists
        ints += more_ints
    return lists, ints


def check_networks(cfg: AgentConfig, shapes: list[tuple[int, ...]]) -> None:
    """Refuse network sizes that no tensor of the file has (see the module docstring)."""
    dims = {d for s in shapes for d in s}
    largest, numel = max(dims, default=0), sum(math.prod(s) for s in shapes)
    extra = json.loads(cfg.extra)
    kwargs = extra.get("policy_kwargs", {}) if isinstance(extra, dict) else {}
    lists, ints = _layouts(kwargs, "extra.policy_kwargs")
    for where, arch in [("net_arch", list(cfg.net_arch)), *lists]:
        for width in arch:
            if width not in dims:
                raise ValueError(
                    f"{where} asks for a layer of {width} units: no tensor of the file has that size"
                )
        if sum(a * b for a, b in zip(arch, arch[1:], strict=False)) > numel:
            raise ValueError(
                f"{where} {arch} is larger than all tensors of the file together ({numel} numbers)"
            )
    for where, value in ints:
        if value > largest:
            raise ValueError(f"{where} is {value}, more than any tensor dimension of the file ({largest})")


def space_bytes(space: spaces.Space[object]) -> int:
    """Bytes of one sample of ``space``."""
    if isinstance(space, spaces.Dict):
        return sum(space_bytes(s) for s in space.spaces.values())
    itemsize = np.dtype(space.dtype).itemsize if space.dtype is not None else 8
    return math.prod(space.shape or ()) * itemsize


def machine_memory() -> int:
    """RAM plus swap in bytes: the most one allocation can get (:data:`FALLBACK_MEMORY` if unknown)."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return FALLBACK_MEMORY
    swap = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("SwapTotal:"):
                swap = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return int(ram) + swap


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n < 2**40 else f"{n / 2**40:.1f} TiB"


def check_buffers(cfg: AgentConfig, venv: VecEnv) -> None:
    """Refuse a replay or rollout buffer whose observation array alone is larger than this machine's
    memory: what NumPy's allocation would fail with, said before anything is allocated. (Smaller
    buffers are left alone: their zeros cost nothing until written, so evaluating a policy whose
    buffer outgrows the machine works as it did.)"""
    extra = json.loads(cfg.extra)
    extra = extra if isinstance(extra, dict) else {}
    sample = max(space_bytes(venv.observation_space), space_bytes(venv.action_space))
    if cfg.off_policy:  # buffer_size transitions in all (buffer_size // n_envs rows of n_envs)
        field, rows, what = "buffer_size", extra.get("buffer_size", cfg.buffer_size), "replay buffer"
        per_row = sample
    else:  # n_steps rows of n_envs
        field, rows, what = "n_steps", extra.get("n_steps", cfg.n_steps), "rollout buffer"
        per_row = sample * venv.num_envs
    if not _int(rows) or rows <= 0:
        return  # the agent's own constructor says what is wrong
    need, have = rows * per_row, machine_memory()
    if need > have:
        raise ValueError(
            f"{field} {rows} asks for a {what} of {_gib(need)} per array, more than this machine has "
            f"({_gib(have)} of RAM and swap)"
        )


def check_sizes(cfg: AgentConfig, state: Mapping[str, object], venv: VecEnv) -> None:
    """Refuse, with one line, an agent config that would allocate more than its file's tensors
    account for or than this machine has (see the module docstring)."""
    check_networks(cfg, tensor_shapes(state))
    check_buffers(cfg, venv)
