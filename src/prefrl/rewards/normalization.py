"""Running mean / variance normalisation of features, saved in the ``state_dict``."""

from __future__ import annotations

import torch
from torch import nn


class RunningNorm(nn.Module):
    """Normalise ``[..., D]`` features by running statistics (Chan et al. parallel update).

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
        n = x.shape[0]
        b_mean, b_var = x.mean(0), x.var(0, unbiased=False)
        tot = self.count + n
        delta = b_mean - self.mean
        new_mean = self.mean + delta * (n / tot).float()
        m2 = self.var * self.count.float() + b_var * n + delta.pow(2) * (self.count * n / tot).float()
        self.mean.copy_(new_mean)
        self.var.copy_(m2 / tot.float())
        self.count.copy_(tot)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``[..., D] -> [..., D]`` normalised and clipped to ``±clip``."""
        y = (x - self.mean) * torch.rsqrt(self.var + self.eps)
        return y.clamp(-self.clip, self.clip)
