"""Ensemble layers: ``E`` members as a leading dimension of stacked weights.

Inputs are either *shared* (``[M, D]``, every member sees the same rows) or
*per member* (``[E, M, D]``, e.g. bootstrap resamples). Outputs are ``[E, M, out]``.
One batched matmul serves all members; there is no Python loop over members.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

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
            ensemble_size,
            in_features,
            out_features,
        )
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


def _first_layer(h: torch.Tensor, w: torch.Tensor, b: torch.Tensor, shared: bool) -> torch.Tensor:
    """Affine map of a shared ``[M, in]`` or per-member ``[E, M, in]`` input -> ``[E, M, out]``."""
    e, d_in, d_out = w.shape
    if not shared:
        return torch.baddbmm(b.unsqueeze(1), h, w)
    if e == 1:
        return torch.addmm(b[0], h, w[0]).unsqueeze(0)
    y = torch.addmm(b.reshape(-1), h, w.permute(1, 0, 2).reshape(d_in, e * d_out))  # [M, E*out]
    return y.view(-1, e, d_out).transpose(0, 1)


class _ReluMLPFunction(torch.autograd.Function):
    """Forward and hand-written backward of an ensemble ReLU MLP.

    The same maths as autograd through :class:`EnsembleLinear` layers, with about half
    the kernel launches: activations are rectified in place, the ReLU mask is read from
    the saved outputs, and no transpose/select nodes are recorded. Per step of a small
    reward network this is most of the time, so it matters for comparisons per second.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, shared: bool, *params: torch.Tensor) -> torch.Tensor:
        n = len(params) // 2
        hs = []
        h = x
        for i in range(n):
            w, b = params[2 * i], params[2 * i + 1]
            if i == 0:
                h = _first_layer(h, w, b, shared)
            elif w.shape[2] == 1:  # a scalar head: a row vector times h^T is far faster than h @ w
                h = torch.baddbmm(b.unsqueeze(2), w.transpose(1, 2), h.transpose(1, 2)).transpose(1, 2)
            else:
                h = torch.baddbmm(b.unsqueeze(1), h, w)
            if i < n - 1:
                h = h.relu_()
                hs.append(h)
        ctx.shared = shared
        ctx.save_for_backward(x, *hs, *params)
        return h

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        saved = ctx.saved_tensors
        n = len(saved) // 3  # saved = x, (n - 1) hidden activations, 2n parameters
        x, hs, params = saved[0], saved[1:n], saved[n:]
        grads: list[torch.Tensor | None] = [None] * (2 * n)
        g = g.contiguous()
        gx = None
        for i in range(n - 1, -1, -1):
            w = params[2 * i]
            e, d_in, d_out = w.shape
            grads[2 * i + 1] = g.sum(1)
            if i > 0:
                h_in = hs[i - 1]
                if d_out == 1:  # scalar head: skinny batched matmuls are slow, use broadcasts
                    grads[2 * i] = torch.bmm(g.transpose(1, 2), h_in).transpose(1, 2)
                    gh = g * w.transpose(1, 2)
                else:
                    grads[2 * i] = torch.bmm(h_in.transpose(1, 2), g)
                    gh = torch.bmm(g, w.transpose(1, 2))
                g = torch.ops.aten.threshold_backward(gh, h_in, 0.0)
                continue
            if ctx.shared:  # x [M, in], g [E, M, out]
                g_flat = g.transpose(0, 1).reshape(-1, e * d_out)  # [M, E*out]
                grads[0] = (x.T @ g_flat).view(d_in, e, d_out).permute(1, 0, 2)
                if ctx.needs_input_grad[0]:
                    gx = g_flat @ w.permute(1, 0, 2).reshape(d_in, e * d_out).T
            else:
                grads[0] = torch.bmm(x.transpose(1, 2), g)
                if ctx.needs_input_grad[0]:
                    gx = torch.bmm(g, w.transpose(1, 2))
        return (gx, None, *grads)


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
        self.fast = activation == "relu"  # hand-written backward (see _ReluMLPFunction)

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
        if self.fast:
            params = [p for layer in self.linears for p in (layer.weight, layer.bias)]
            h = _ReluMLPFunction.apply(h, not per_member, *params)  # type: ignore[no-untyped-call]  # torch's Function.apply has no annotations
            return h.reshape(e, *lead, -1)
        shared = not per_member
        for i, layer in enumerate(self.layers):
            h = layer(h, shared=shared)
            shared = False
            if i < len(self.layers) - 1:
                h = self.act(h)
        return h.reshape(e, *lead, -1)

    @property
    def linears(self) -> list[EnsembleLinear]:
        """The layers, typed (``layers`` is an ``nn.ModuleList``)."""
        return [cast(EnsembleLinear, m) for m in self.layers]

    def l2_per_member(self) -> torch.Tensor:
        """``[E]`` sum of squared weights (biases excluded) of each member."""
        terms = [layer.weight.pow(2).sum(dim=(1, 2)) for layer in self.linears]
        return sum(terms[1:], terms[0])


def coordinate_grid(h: int, w: int, device: torch.device | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Pixel-centre coordinates in [-1, 1]: ``ys [h]`` (rows) and ``xs [w]`` (columns)."""
    ys = torch.linspace(-1.0, 1.0, h, device=device) if h > 1 else torch.zeros(1, device=device)
    xs = torch.linspace(-1.0, 1.0, w, device=device) if w > 1 else torch.zeros(1, device=device)
    return ys, xs


def standardize_maps(x: torch.Tensor, eps: float = 1e-3) -> torch.Tensor:
    """Each map of ``x [B, C, H, W]`` shifted and scaled to mean 0 and standard deviation 1 over
    its ``H x W`` positions (a constant map becomes 0); same shape."""
    if x.dim() != 4:
        raise ValueError(f"standardize_maps expects [B, C, H, W], got shape {tuple(x.shape)}")
    std, mean = torch.std_mean(x, (2, 3), keepdim=True)  # one pass for both
    return (x - mean) / (std + eps)


def soft_argmax(x: torch.Tensor) -> torch.Tensor:
    """Expected (x, y) position of each channel's spatial softmax ("keypoints", Levine et al. 2016).

    Args:
        x: ``[B, C, H, W]`` logits (scale them first to set the softmax temperature).

    Returns:
        ``[B, C, 2]``: the softmax-weighted mean column and row coordinate, each in [-1, 1].
    """
    if x.dim() != 4:
        raise ValueError(f"soft_argmax expects [B, C, H, W], got shape {tuple(x.shape)}")
    b, c, h, w = x.shape
    p = torch.softmax(x.reshape(b, c, h * w), -1).reshape(b, c, h, w)
    ys, xs = coordinate_grid(h, w, x.device)
    ex = (p.sum(2) * xs).sum(-1)  # [B, C]
    ey = (p.sum(3) * ys).sum(-1)  # [B, C]
    return torch.stack([ex, ey], -1)
