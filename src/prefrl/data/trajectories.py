"""Episodes stored as arrays, and batches of them stored as one step table.

A :class:`TrajectoryBatch` concatenates ``n`` episodes into one table of
``S = sum(T_i + 1)`` rows: row ``starts[i] + t`` holds observation ``t`` of episode ``i``
and, for ``t < T_i``, the action taken there, its reward and whether it ended the episode.
The final row of each episode holds the last observation and padding (zeros) elsewhere.
This layout lets a fragment of length ``L`` starting at row ``r`` read observations from
rows ``r .. r+L`` and actions from rows ``r .. r+L-1`` with one fancy index, and stores
every frame exactly once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from prefrl.data.arrays import (
    Obs,
    check_finite,
    obs_concat,
    obs_from_flat_dict,
    obs_len,
    obs_map,
    obs_to_flat_dict,
)

TRAJ_FORMAT = "prefrl.trajectories"
TRAJ_VERSION = 1


@dataclass(frozen=True)
class Trajectory:
    """One episode.

    Attributes:
        obs: observations ``[T+1, ...]`` (or a dict of such arrays), including the final one.
        acts: actions ``[T, ...]``.
        rews: true rewards ``[T]`` when known, else ``None``.
        terminated: whether the episode ended in a terminal state (not a time limit).
        truncated: whether it was cut off (time limit or collection stopped).
        infos: optional per-step arrays ``[T, ...]`` keyed by name.
    """

    obs: Any
    acts: np.ndarray
    rews: np.ndarray | None = None
    terminated: bool = False
    truncated: bool = False
    infos: dict[str, np.ndarray] | None = None

    def __post_init__(self) -> None:
        t = len(self.acts)
        n_obs = obs_len(self.obs)
        if n_obs != t + 1:
            raise ValueError(f"an episode with {t} actions needs {t + 1} observations, got {n_obs}")
        if self.rews is not None:
            if np.shape(self.rews) != (t,):
                raise ValueError(f"rews must have shape ({t},), got {np.shape(self.rews)}")
            check_finite("rews", np.asarray(self.rews))
        for k, v in (self.infos or {}).items():
            if len(v) != t:
                raise ValueError(f"infos[{k!r}] has length {len(v)}, expected {t}")

    def __len__(self) -> int:
        return len(self.acts)


def _pad_one(arr: np.ndarray) -> np.ndarray:
    """Append one zero row: ``[T, ...] -> [T+1, ...]``."""
    return np.concatenate([arr, np.zeros((1, *arr.shape[1:]), dtype=arr.dtype)])


@dataclass(frozen=True)
class TrajectoryBatch:
    """Several episodes as one step table (see module docstring).

    Attributes:
        obs: ``[S, ...]`` observations (or dict of such arrays).
        acts: ``[S, ...]`` actions; zero in each episode's final row.
        rews: ``[S]`` float32 rewards (zero in final rows) or ``None`` when unknown.
        lengths: ``[n]`` number of transitions ``T_i`` of each episode.
        terminated: ``[n]`` bool.
        truncated: ``[n]`` bool.
        infos: per-row arrays ``[S, ...]`` keyed by name.
    """

    obs: Any
    acts: np.ndarray
    rews: np.ndarray | None
    lengths: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    infos: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        lengths = np.asarray(self.lengths, dtype=np.int64)
        object.__setattr__(self, "lengths", lengths)
        if lengths.ndim != 1 or np.any(lengths < 0):
            raise ValueError(f"lengths must be a 1-D array of non-negative ints, got {lengths}")
        rows = int(np.sum(lengths + 1))
        for name, n in [("obs", obs_len(self.obs)), ("acts", len(self.acts))]:
            if n != rows:
                raise ValueError(f"{name} has {n} rows, expected sum(lengths + 1) = {rows}")
        if self.rews is not None:
            if np.shape(self.rews) != (rows,):
                raise ValueError(f"rews must have shape ({rows},), got {np.shape(self.rews)}")
            check_finite("rews", self.rews)
        for name in ("terminated", "truncated"):
            arr = np.asarray(getattr(self, name), dtype=bool)
            object.__setattr__(self, name, arr)
            if arr.shape != lengths.shape:
                raise ValueError(f"{name} has shape {arr.shape}, expected {lengths.shape}")
        for k, v in self.infos.items():
            if len(v) != rows:
                raise ValueError(f"infos[{k!r}] has {len(v)} rows, expected {rows}")

    # ----------------------------------------------------------------- build
    @classmethod
    def from_trajectories(cls, trajs: Sequence[Trajectory]) -> TrajectoryBatch:
        """Concatenate episodes into one table."""
        if len(trajs) == 0:
            raise ValueError("cannot build a TrajectoryBatch from zero episodes")
        has_rews = all(t.rews is not None for t in trajs)
        info_keys = set.intersection(*(set((t.infos or {}).keys()) for t in trajs))
        return cls(
            obs=obs_concat([t.obs for t in trajs]),
            acts=np.concatenate([_pad_one(np.asarray(t.acts)) for t in trajs]),
            rews=(
                np.concatenate([_pad_one(np.asarray(t.rews, dtype=np.float32)) for t in trajs])
                if has_rews
                else None
            ),
            lengths=np.array([len(t) for t in trajs], dtype=np.int64),
            terminated=np.array([t.terminated for t in trajs], dtype=bool),
            truncated=np.array([t.truncated for t in trajs], dtype=bool),
            infos={
                k: np.concatenate([_pad_one(np.asarray((t.infos or {})[k])) for t in trajs])
                for k in sorted(info_keys)
            },
        )

    @classmethod
    def concat(cls, batches: Sequence[TrajectoryBatch]) -> TrajectoryBatch:
        """Concatenate several batches (episodes keep their order)."""
        if not batches:
            raise ValueError("nothing to concatenate")
        has_rews = all(b.rews is not None for b in batches)
        keys = set.intersection(*(set(b.infos) for b in batches))
        return cls(
            obs=obs_concat([b.obs for b in batches]),
            acts=np.concatenate([b.acts for b in batches]),
            rews=np.concatenate([b.rews for b in batches]) if has_rews else None,
            lengths=np.concatenate([b.lengths for b in batches]),
            terminated=np.concatenate([b.terminated for b in batches]),
            truncated=np.concatenate([b.truncated for b in batches]),
            infos={k: np.concatenate([b.infos[k] for b in batches]) for k in sorted(keys)},
        )

    # ----------------------------------------------------------------- views
    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def num_steps(self) -> int:
        """Total number of transitions."""
        return int(self.lengths.sum())

    @property
    def starts(self) -> np.ndarray:
        """``[n]`` row of each episode's first observation."""
        return np.cumsum(self.lengths + 1) - (self.lengths + 1)

    @property
    def dones(self) -> np.ndarray:
        """``[S]`` bool: the transition leaving this row ended the episode in a terminal state."""
        d = np.zeros(len(self.acts), dtype=bool)
        last = self.starts + self.lengths - 1
        ok = (self.lengths > 0) & self.terminated
        d[last[ok]] = True
        return d

    @property
    def step_rows(self) -> np.ndarray:
        """``[num_steps]`` rows that hold a real transition (not an episode's final row)."""
        valid = np.ones(len(self.acts), dtype=bool)
        valid[self.starts + self.lengths] = False
        return np.flatnonzero(valid)

    def transitions(self, rows: np.ndarray | None = None) -> tuple[Obs, np.ndarray, Obs, np.ndarray]:
        """``(obs, acts, next_obs, dones)``, each ``[n, ...]``, of the transitions leaving
        ``rows`` (default: every one, :attr:`step_rows`): the inputs of a reward network."""
        rows = self.step_rows if rows is None else rows
        dones = self.dones[rows]
        return (
            obs_map(lambda a: a[rows], self.obs),
            self.acts[rows],
            obs_map(lambda a: a[rows + 1], self.obs),
            dones,
        )

    def episode(self, i: int) -> Trajectory:
        """Episode ``i`` as a :class:`Trajectory` (views, no copy)."""
        s, t = int(self.starts[i]), int(self.lengths[i])
        return Trajectory(
            obs=obs_map(lambda a: a[s : s + t + 1], self.obs),
            acts=self.acts[s : s + t],
            rews=None if self.rews is None else self.rews[s : s + t],
            terminated=bool(self.terminated[i]),
            truncated=bool(self.truncated[i]),
            infos={k: v[s : s + t] for k, v in self.infos.items()} or None,
        )

    def __iter__(self) -> Iterator[Trajectory]:
        return (self.episode(i) for i in range(len(self)))

    def episode_returns(self) -> np.ndarray:
        """``[n]`` undiscounted true return of each episode."""
        if self.rews is None:
            raise ValueError("this batch has no true rewards")
        ep = np.repeat(np.arange(len(self)), self.lengths + 1)
        return np.bincount(ep, weights=self.rews, minlength=len(self)).astype(np.float64)

    # ----------------------------------------------------------------- files
    def save(self, path: str | Path) -> Path:
        """Write to an ``.npz`` file (no pickle). Returns the path written."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = {"format": TRAJ_FORMAT, "version": TRAJ_VERSION}
        arrays: dict[str, Any] = {
            "__meta__": np.array(json.dumps(meta)),
            **obs_to_flat_dict("obs", self.obs),
            "acts": self.acts,
            "lengths": self.lengths,
            "terminated": self.terminated,
            "truncated": self.truncated,
        }
        if self.rews is not None:
            arrays["rews"] = self.rews
        for k, v in self.infos.items():
            arrays[f"infos/{k}"] = np.asarray(v)
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez_compressed(tmp, **arrays)
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> TrajectoryBatch:
        """Read a file written by :meth:`save`, with a clear error for anything else."""
        data = load_npz_checked(path, TRAJ_FORMAT, TRAJ_VERSION)
        try:
            return cls(
                obs=obs_from_flat_dict("obs", data),
                acts=data["acts"],
                rews=data.get("rews"),
                lengths=data["lengths"],
                terminated=data["terminated"],
                truncated=data["truncated"],
                infos={k[6:]: v for k, v in data.items() if k.startswith("infos/")},
            )
        except (KeyError, ValueError) as e:
            raise ValueError(f"{path}: not a valid prefrl trajectory file ({e})") from e


def load_npz_checked(path: str | Path, fmt: str, version: int) -> dict[str, np.ndarray]:
    """Load every array of a prefrl ``.npz`` file, checking its format marker.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: the file is corrupt, pickled, foreign, or of a newer version.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        with np.load(path, allow_pickle=False) as npz:
            data = {k: npz[k] for k in npz.files}
    except Exception as e:  # zipfile.BadZipFile, OSError, ValueError (pickled arrays) ...
        raise ValueError(f"{path}: cannot read as a prefrl .npz file ({type(e).__name__}: {e})") from e
    try:
        meta: Mapping[str, Any] = json.loads(str(data.pop("__meta__")))
    except Exception as e:
        raise ValueError(f"{path}: not a prefrl file (no readable '__meta__' entry)") from e
    if meta.get("format") != fmt:
        raise ValueError(f"{path}: expected a {fmt!r} file, found {meta.get('format')!r}")
    if int(meta.get("version", -1)) > version:
        raise ValueError(
            f"{path}: written by a newer prefrl (format version {meta.get('version')}, "
            f"this one reads up to {version}); upgrade prefrl"
        )
    data["__meta__"] = np.array(json.dumps(dict(meta)))
    return data
