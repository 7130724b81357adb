"""Running mean / variance normalisation: one update rule, two front ends.

- :func:`merge_moments` is the one implementation of the parallel (Chan et al.) update of
  a running mean and variance with a new batch.
- :class:`RunningNorm` (a ``torch`` module, statistics in its ``state_dict``) normalises
  ``[..., D]`` network inputs.
- :class:`RewardNormalizer` (plain floats, JSON-serialisable) normalises scalar rewards:
  the reward the agent sees in the loop and in the preference wrapper.
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
import torch
from torch import nn

T = TypeVar("T", float, torch.Tensor)

SHIFTS = ("mean", "median")
"""What :class:`RewardNormalizer` takes off a centred reward."""


def merge_moments(mean: T, var: T, count: T, b_mean: T, b_var: T, n: float) -> tuple[T, T, T]:
    """``(mean, var, count)`` after folding in a batch of ``n`` values with moments ``b_mean, b_var``.

    Works elementwise on floats or tensors of one shape (``var`` is the population variance).
    """
    tot = count + n
    delta = b_mean - mean
    new_mean = mean + delta * (n / tot)
    m2 = var * count + b_var * n + delta * delta * (count * n / tot)
    return new_mean, m2 / tot, tot


class RunningNorm(nn.Module):
    """Normalise ``[..., D]`` features by running statistics.

    Statistics change only through :meth:`update`, never in ``forward``, so a forward
    pass is a pure function of its input and the saved state.
    """

    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor

    def __init__(self, dim: int, eps: float = 1e-8, clip: float = 10.0) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.eps, self.clip = eps, clip

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Fold the rows of ``x`` (``[..., D]``) into the statistics."""
        x = x.reshape(-1, x.shape[-1]).to(self.mean.dtype)
        if x.shape[0] == 0:
            return
        if not torch.isfinite(x).all():
            raise ValueError("cannot update normalisation statistics with NaN or inf inputs")
        mean, var, count = merge_moments(
            self.mean.double(),
            self.var.double(),
            self.count,
            x.double().mean(0),
            x.double().var(0, unbiased=False),
            float(x.shape[0]),
        )
        self.mean.copy_(mean)
        self.var.copy_(var)
        self.count.copy_(count)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``[..., D] -> [..., D]`` normalised and clipped to ``±clip``."""
        y = (x - self.mean) * torch.rsqrt(self.var + self.eps)
        return y.clamp(-self.clip, self.clip)


class RewardNormalizer:
    """Running mean / std of scalar rewards, JSON-serialisable.

    With ``center`` (the default) rewards are shifted to zero mean and scaled to unit std.
    Without it they are only scaled, by their root mean square ``sqrt(var + mean²)``: zero
    stays zero. Environments that can terminate need that, because there the reward's
    level relative to the absorbing state (anchored at 0) decides whether the agent wants
    episodes to go on or to end; a shift would change that decision.

    With ``shift="median"`` a centred reward is shifted by the median of the values it was
    last reset to (:meth:`reset_to`; before that, of the first batch folded in) instead of
    the running mean, still scaled by the running std: the typical value becomes 0 however
    skewed the rest is (the loop's ``end_value="median"``).
    """

    def __init__(
        self, eps: float = 1e-8, clip: float = 10.0, center: bool = True, shift: str = "mean"
    ) -> None:
        if shift not in SHIFTS:
            raise ValueError(f"unknown reward shift {shift!r}; choose from {list(SHIFTS)}")
        self.mean, self.var, self.count = 0.0, 1.0, 0.0
        self.median = 0.0
        self.eps, self.clip, self.center, self.shift = eps, clip, center, shift

    def update(self, x: np.ndarray) -> None:
        """Fold rewards ``x`` (any shape) into the statistics."""
        x = np.asarray(x, dtype=np.float64).ravel()
        if len(x) == 0:
            return
        if self.count == 0 and self.shift == "median":  # the mean shift never reads it
            self.median = float(np.median(x))
        self.mean, self.var, self.count = merge_moments(
            self.mean, self.var, self.count, float(x.mean()), float(x.var()), float(len(x))
        )

    def reset_to(self, x: np.ndarray) -> None:
        """Forget the past and take the statistics of ``x`` (after the reward changed)."""
        self.mean, self.var, self.count, self.median = 0.0, 1.0, 0.0, 0.0
        self.update(x)

    @property
    def std(self) -> float:
        """The divisor: ``sqrt(var)`` when centring, ``sqrt(var + mean²)`` when only scaling."""
        return float(np.sqrt(self.var + (0.0 if self.center else self.mean**2) + self.eps))

    @property
    def offset(self) -> float:
        """What a centred reward is shifted by: the running mean, or the median (``shift``)."""
        return self.median if self.shift == "median" else self.mean

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Normalised rewards, same shape as ``x``, clipped to ``±clip``."""
        x = np.asarray(x, dtype=np.float64)
        y = ((x - self.offset) if self.center else x) / self.std
        return np.clip(y, -self.clip, self.clip).astype(np.float32)

    def state_dict(self) -> dict[str, float | bool | str]:
        return {"mean": self.mean, "var": self.var, "count": self.count, "center": self.center,
                "shift": self.shift, "median": self.median}  # fmt: skip

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.mean, self.var, self.count = float(state["mean"]), float(state["var"]), float(state["count"])
        self.center = bool(state.get("center", True))
        shift = str(state.get("shift", "mean"))  # files from before the median shift: the mean
        if shift not in SHIFTS:
            raise ValueError(
                f"unknown reward shift {shift!r} in a saved normaliser; choose from {list(SHIFTS)}"
            )
        self.shift, self.median = shift, float(state.get("median", 0.0))
