"""Helpers for observations that are either one array or a dict of arrays.

Dict observation spaces (``gymnasium.spaces.Dict``) are stored as ``dict[str, ndarray]``
with the same leading dimensions in every entry; everything else is a single ndarray.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence, Sized
from typing import Any, TypeAlias, TypeVar

import numpy as np

Obs: TypeAlias = "np.ndarray | dict[str, np.ndarray]"
A = TypeVar("A")
B = TypeVar("B")


def obs_map(fn: Callable[[A], B], obs: A | Mapping[str, A]) -> B | dict[str, B]:
    """Apply ``fn`` to every array of an observation (array or dict of arrays)."""
    if isinstance(obs, Mapping):
        return {k: fn(v) for k, v in obs.items()}
    return fn(obs)


def obs_len(obs: Sized | Mapping[str, Sized]) -> int:
    """Length of the leading dimension, checked equal across dict entries."""
    if isinstance(obs, Mapping):
        lens = {k: len(v) for k, v in obs.items()}
        if not lens:
            raise ValueError("dict observation has no entries")
        if len(set(lens.values())) != 1:
            raise ValueError(f"dict observation entries differ in length: {lens}")
        return next(iter(lens.values()))
    return len(obs)


def obs_concat(parts: Sequence[Obs]) -> Obs:
    """Concatenate observations along the leading dimension."""
    return _obs_join(np.concatenate, parts, "concatenate")


def obs_stack(parts: Sequence[Obs]) -> Obs:
    """Stack observations along a new leading dimension (a batch of single observations)."""
    return _obs_join(np.stack, parts, "stack")


def _obs_join(join: Callable[[list[np.ndarray]], np.ndarray], parts: Sequence[Obs], what: str) -> Obs:
    if not parts:
        raise ValueError(f"nothing to {what}")
    first = parts[0]
    if isinstance(first, Mapping):
        keys = list(first.keys())
        dicts = [p for p in parts if isinstance(p, Mapping) and list(p.keys()) == keys]
        if len(dicts) != len(parts):
            bad = next(p for p in parts if not isinstance(p, Mapping) or list(p.keys()) != keys)
            raise ValueError(f"dict observations with different keys: {keys} vs {bad}")
        return {k: join([p[k] for p in dicts]) for k in keys}
    return join([np.asarray(p) for p in parts])


def obs_to_flat_dict(prefix: str, obs: Obs) -> dict[str, np.ndarray]:
    """Flatten an observation into ``{prefix: arr}`` or ``{prefix/key: arr}`` for ``.npz``."""
    if isinstance(obs, Mapping):
        for k in obs:
            if "/" in k:
                raise ValueError(f"dict observation key {k!r} may not contain '/'")
        return {f"{prefix}/{k}": np.asarray(v) for k, v in obs.items()}
    return {prefix: np.asarray(obs)}


def obs_from_flat_dict(prefix: str, data: Mapping[str, np.ndarray]) -> Obs:
    """Inverse of :func:`obs_to_flat_dict`."""
    if prefix in data:
        return data[prefix]
    sub = {k[len(prefix) + 1 :]: v for k, v in data.items() if k.startswith(prefix + "/")}
    if not sub:
        raise KeyError(prefix)
    return sub


def check_finite(name: str, arr: np.ndarray) -> None:
    """Raise ``ValueError`` naming ``name`` if a float array holds NaN or inf."""
    if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0].tolist()
        raise ValueError(f"{name} contains NaN or inf (first at index {bad})")


def write_npz(path: str | os.PathLike[str], arrays: Mapping[str, np.ndarray]) -> None:
    """``np.savez`` ``arrays`` to ``path``, compressed where one of them holds images (``uint8``,
    3+ dimensions): Atari frame stacks shrink about 200x in a second or two (Pong's 809 labels:
    361 MB -> 1.6 MB), where float vectors would barely shrink and only cost the time."""
    named: dict[str, Any] = dict(arrays)  # numpy's stub types **kwds as allow_pickle's bool
    images = any(a.dtype == np.uint8 and a.ndim >= 3 for a in arrays.values())
    (np.savez_compressed if images else np.savez)(path, **named)
