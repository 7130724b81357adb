"""Simulated teachers that label pairs from true rewards, with B-Pref's irrationalities.

B-Pref (Lee et al., 2021) models a teacher by five knobs, all vectorised here:

- rationality ``beta``: P(first preferred) = σ(β (R0 − R1)); ``inf`` is a perfectly
  rational (deterministic) teacher, smaller values answer more randomly.
- myopia ``gamma``: step ``t`` of ``L`` weighs ``γ^(L−1−t)``, so later steps count more.
- ``mistake``: with this probability the answer is flipped.
- ``skip``: pairs whose better return lies in the lowest ``skip`` share of the return
  range seen so far are not answered (label NaN).
- ``equal``: pairs whose returns differ by less than ``equal`` times that range get 0.5.

Thresholds are relative to the range of fragment returns the teacher has seen
(``R_max − R_min``), which generalises B-Pref's ``ε · L · max r`` to rewards of any sign;
``threshold_mode="absolute"`` reads them as raw return values instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from prefrl.data.fragments import Fragments

PRESETS = ("oracle", "noisy", "mistake", "skip", "myopic", "equal")


@dataclass(frozen=True)
class TeacherConfig:
    """A simulated teacher (see module docstring)."""

    beta: float = math.inf
    """Rationality; ``inf`` = deterministic, always prefers the higher return."""
    gamma: float = 1.0
    """Myopia discount; 1 = every step weighs the same."""
    mistake: float = 0.0
    """Probability of flipping an answer."""
    skip: float = 0.0
    """Skip pairs whose better return is in this lowest share of the return range."""
    equal: float = 0.0
    """Answer 0.5 when returns differ by less than this share of the return range."""
    threshold_mode: Literal["relative", "absolute"] = "relative"
    """How ``skip`` and ``equal`` are read (share of the seen return range, or raw)."""

    def __post_init__(self) -> None:
        if not (self.beta > 0):
            raise ValueError(f"beta must be positive (inf for a rational teacher), got {self.beta}")
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"gamma must lie in (0, 1], got {self.gamma}")
        if not 0.0 <= self.mistake <= 1.0:
            raise ValueError(f"mistake must lie in [0, 1], got {self.mistake}")

    @classmethod
    def preset(cls, name: str) -> TeacherConfig:
        """B-Pref's named teachers: oracle, noisy, mistake, skip, myopic, equal."""
        table = {
            "oracle": cls(),
            "noisy": cls(beta=1.0),
            "mistake": cls(mistake=0.1),
            "skip": cls(skip=0.1),
            "myopic": cls(gamma=0.9),
            "equal": cls(equal=0.1),
        }
        if name not in table:
            raise ValueError(f"unknown teacher preset {name!r}; choose from {list(table)}")
        return table[name]

    def with_(self, **kw: Any) -> TeacherConfig:
        return replace(self, **kw)


class SyntheticTeacher:
    """Labels pairs from the true rewards stored in fragments.

    ``label`` returns ``[B]`` labels: 1 (first preferred), 0, 0.5 (equal) or NaN (skipped).
    """

    def __init__(
        self, config: TeacherConfig | str = "oracle", rng: np.random.Generator | None = None
    ) -> None:
        self.config = TeacherConfig.preset(config) if isinstance(config, str) else config
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.r_min, self.r_max = math.inf, -math.inf

    def returns(self, fragments: Fragments) -> np.ndarray:
        """``[N]`` the teacher's (myopically weighted) return of each fragment."""
        rews = fragments.rews
        if rews is None:
            raise ValueError("a synthetic teacher needs fragments with true rewards")
        L = fragments.length
        w = self.config.gamma ** np.arange(L - 1, -1, -1, dtype=np.float64)
        return rews.astype(np.float64) @ w

    def label(self, fragments: Fragments, pairs: np.ndarray) -> np.ndarray:
        """Answer ``pairs`` ``[B, 2]`` of ``fragments``; returns ``[B]`` float labels."""
        pairs = np.asarray(pairs)
        if pairs.ndim != 2 or pairs.shape[1] != 2:
            raise ValueError(f"pairs must have shape [B, 2], got {pairs.shape}")
        c = self.config
        ret = self.returns(fragments)
        if not np.all(np.isfinite(ret)):
            raise ValueError("fragment rewards contain NaN or inf")
        r0, r1 = ret[pairs[:, 0]], ret[pairs[:, 1]]
        # The return range (relative thresholds) grows with every fragment seen.
        if len(pairs):
            self.r_min = min(self.r_min, float(np.min(ret[pairs])))
            self.r_max = max(self.r_max, float(np.max(ret[pairs])))
        span = max(self.r_max - self.r_min, 1e-12) if c.threshold_mode == "relative" else 1.0
        base = self.r_min if c.threshold_mode == "relative" else 0.0
        diff = r0 - r1
        if math.isinf(c.beta):
            labels = np.where(diff > 0, 1.0, np.where(diff < 0, 0.0, 0.5))
        else:
            p = 1.0 / (1.0 + np.exp(-np.clip(c.beta * diff, -500, 500)))
            labels = (self.rng.random(len(p)) < p).astype(np.float64)
        if c.mistake > 0:
            flip = self.rng.random(len(labels)) < c.mistake
            labels = np.where(flip, 1.0 - labels, labels)
        if c.equal > 0:
            labels = np.where(np.abs(diff) < c.equal * span, 0.5, labels)
        if c.skip > 0:
            labels = np.where(np.maximum(r0, r1) < base + c.skip * span, np.nan, labels)
        return labels.astype(np.float32)
