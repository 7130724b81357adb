"""Ensemble layers: ``E`` members as a leading dimension of stacked weights.

Inputs are either *shared* (``[M, D]``, every member sees the same rows) or
*per member* (``[E, M, D]``, e.g. bootstrap resamples). Outputs are ``[E, M, out]``.
One batched matmul serves all members; there is no Python loop over members.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

ACTIVATIONS = {"relu": nn.ReLU, "leaky_relu": nn.LeakyReLU, "tanh": nn.Tanh, "elu": nn.ELU}


class EnsembleLinear(nn.Module):
    """``E`` independent linear layers ``in -> out``.

    Attributes:
        weight: ``[E, in, out]``.
        bias: ``[E, out]``.
    """

    def __init__(self, ensemble_size: int, in_features: int, out_features: int) -> None:
        super().__init__()
        self.ensemble_size, self.in_features, self.out_features = (
            ensemble_size, in_features, out_features,
        )  # fmt: skip
        self.weight = nn.Parameter(torch.empty(ensemble_size, in_features, out_features))
        self.bias = nn.Parameter(torch.empty(ensemble_size, out_features))
        bound = 1.0 / math.sqrt(max(in_features, 1))
        # Same scheme as nn.Linear (kaiming-uniform with a=sqrt(5)), independently per member.
        nn.init.uniform_(self.weight, -bound, bound)
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x: torch.Tensor, shared: bool) -> torch.Tensor:
        """``[M, in]`` (shared) or ``[E, M, in]`` (per member) -> ``[E, M, out]``."""
        e = self.ensemble_size
        if shared:
            if e == 1:
                return F.linear(x, self.weight[0].T, self.bias[0]).unsqueeze(0)
            w = self.weight.permute(1, 0, 2).reshape(self.in_features, e * self.out_features)
            y = torch.addmm(self.bias.reshape(-1), x, w)  # [M, E*out]
            return y.view(-1, e, self.out_features).transpose(0, 1)
        if e == 1:
            return F.linear(x[0], self.weight[0].T, self.bias[0]).unsqueeze(0)
        return torch.baddbmm(self.bias.unsqueeze(1), x, self.weight)

    def extra_repr(self) -> str:
        return f"E={self.ensemble_size}, in={self.in_features}, out={self.out_features}"


class EnsembleMLP(nn.Module):
    """An MLP of :class:`EnsembleLinear` layers mapping ``[.., D] -> [E, .., out]``."""

    def __init__(
        self,
        ensemble_size: int,
        in_features: int,
        hidden: Sequence[int],
        out_features: int = 1,
        activation: str = "relu",
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose from {list(ACTIVATIONS)}")
        sizes = [in_features, *hidden, out_features]
        self.layers = nn.ModuleList(
            EnsembleLinear(ensemble_size, a, b) for a, b in zip(sizes[:-1], sizes[1:])
        )
        self.act = ACTIVATIONS[activation]()
        self.ensemble_size = ensemble_size

    def forward(self, x: torch.Tensor, per_member: bool = False) -> torch.Tensor:
        """``[*lead, D]`` (or ``[E, *lead, D]`` when ``per_member``) -> ``[E, *lead, out]``."""
        e = self.ensemble_size
        if per_member:
            if x.shape[0] != e:
                raise ValueError(f"per-member input needs leading dim {e}, got {tuple(x.shape)}")
            lead = x.shape[1:-1]
            h = x.reshape(e, -1, x.shape[-1])
        else:
            lead = x.shape[:-1]
            h = x.reshape(-1, x.shape[-1])
        shared = not per_member
        for i, layer in enumerate(self.layers):
            h = layer(h, shared=shared)
            shared = False
            if i < len(self.layers) - 1:
                h = self.act(h)
        return h.reshape(e, *lead, -1)

    def l2_per_member(self) -> torch.Tensor:
        """``[E]`` sum of squared weights (biases excluded) of each member."""
        return sum(layer.weight.pow(2).sum(dim=(1, 2)) for layer in self.layers)  # type: ignore[return-value]
