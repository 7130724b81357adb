"""Helpers for observations that are either one array or a dict of arrays.

Dict observation spaces (``gymnasium.spaces.Dict``) are stored as ``dict[str, ndarray]``
with the same leading dimensions in every entry; everything else is a single ndarray.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

import numpy as np

Obs: TypeAlias = "np.ndarray | dict[str, np.ndarray]"


def obs_map(fn: Callable[[Any], Any], obs: Any) -> Any:
    """Apply ``fn`` to every array of an observation (array or dict of arrays)."""
    if isinstance(obs, Mapping):
        return {k: fn(v) for k, v in obs.items()}
    return fn(obs)


def obs_len(obs: Any) -> int:
    """Length of the leading dimension, checked equal across dict entries."""
    if isinstance(obs, Mapping):
        lens = {k: len(v) for k, v in obs.items()}
        if not lens:
            raise ValueError("dict observation has no entries")
        if len(set(lens.values())) != 1:
            raise ValueError(f"dict observation entries differ in length: {lens}")
        return next(iter(lens.values()))
    return len(obs)


def obs_concat(parts: list[Any]) -> Any:
    """Concatenate observations along the leading dimension."""
    if not parts:
        raise ValueError("nothing to concatenate")
    if isinstance(parts[0], Mapping):
        keys = list(parts[0].keys())
        for p in parts:
            if not isinstance(p, Mapping) or list(p.keys()) != keys:
                raise ValueError(f"dict observations with different keys: {keys} vs {p}")
        return {k: np.concatenate([p[k] for p in parts]) for k in keys}
    return np.concatenate(parts)


def obs_to_flat_dict(prefix: str, obs: Any) -> dict[str, np.ndarray]:
    """Flatten an observation into ``{prefix: arr}`` or ``{prefix/key: arr}`` for ``.npz``."""
    if isinstance(obs, Mapping):
        for k in obs:
            if "/" in k:
                raise ValueError(f"dict observation key {k!r} may not contain '/'")
        return {f"{prefix}/{k}": np.asarray(v) for k, v in obs.items()}
    return {prefix: np.asarray(obs)}


def obs_from_flat_dict(prefix: str, data: Mapping[str, np.ndarray]) -> Any:
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
