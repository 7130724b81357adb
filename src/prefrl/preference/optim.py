"""AdamW over one flat parameter buffer: a handful of tensor ops per step.

Small reward networks spend more time in the generic optimiser's Python bookkeeping than in
arithmetic (here ~0.4 ms per ``torch.optim.AdamW(fused=True).step()`` for six tiny tensors,
against ~0.03 ms for the eight in-place ops below). :class:`FlatParameters` makes every
parameter a view into one buffer, so the whole update is a few in-place ops on that buffer.
The update is AdamW exactly (Loshchilov & Hutter): decoupled weight decay, bias-corrected
first and second moments.
"""

from __future__ import annotations

import math
from typing import Any

import torch


class FlatParameters:
    """All trainable parameters of a module as views into one flat buffer (and one flat grad).

    The module's parameters stay ordinary leaf parameters whose storage aliases the buffer;
    loading a ``state_dict`` (``copy_``) keeps the aliasing, moving the module to another
    device or dtype breaks it (detected by :meth:`intact`).
    """

    def __init__(self, module: torch.nn.Module) -> None:
        self.params = [p for p in module.parameters() if p.requires_grad]
        if not self.params:
            raise ValueError("the network has no trainable parameters")
        p0 = self.params[0]
        total = sum(p.numel() for p in self.params)
        self.data = torch.empty(total, dtype=p0.dtype, device=p0.device)
        self.grad = torch.zeros_like(self.data)
        off = 0
        with torch.no_grad():
            for p in self.params:
                n = p.numel()
                self.data[off : off + n].copy_(p.reshape(-1))
                p.data = self.data[off : off + n].view_as(p)
                p.grad = self.grad[off : off + n].view_as(p)
                off += n

    def intact(self) -> bool:
        """Whether every parameter (and its gradient) still lives in the flat buffers."""
        base, gbase = self.data.data_ptr(), self.grad.data_ptr()
        end = base + self.data.numel() * self.data.element_size()
        return all(
            base <= p.data_ptr() < end
            and p.grad is not None
            and p.grad.data_ptr() - gbase == p.data_ptr() - base
            for p in self.params
        )

    def zero_grad(self) -> None:
        self.grad.zero_()


class FlatAdamW:
    """AdamW on a :class:`FlatParameters` buffer (``lr``, ``betas``, ``eps``, ``weight_decay``)."""

    def __init__(
        self,
        flat: FlatParameters,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        if lr <= 0 or eps <= 0 or weight_decay < 0 or not all(0 <= b < 1 for b in betas):
            raise ValueError(f"invalid AdamW settings lr={lr}, betas={betas}, eps={eps}, wd={weight_decay}")
        self.flat, self.lr, self.betas, self.eps, self.weight_decay = flat, lr, betas, eps, weight_decay
        self.exp_avg = torch.zeros_like(flat.data)
        self.exp_avg_sq = torch.zeros_like(flat.data)
        self.steps = 0

    @torch.no_grad()
    def step(self) -> None:
        """One AdamW update from the gradient currently in ``flat.grad``."""
        b1, b2 = self.betas
        p, g = self.flat.data, self.flat.grad
        self.steps += 1
        self.exp_avg.lerp_(g, 1 - b1)
        self.exp_avg_sq.mul_(b2).addcmul_(g, g, value=1 - b2)
        if self.weight_decay:
            p.mul_(1 - self.lr * self.weight_decay)
        bc1, bc2 = 1 - b1**self.steps, 1 - b2**self.steps
        denom = self.exp_avg_sq.sqrt().div_(math.sqrt(bc2)).add_(self.eps)
        p.addcdiv_(self.exp_avg, denom, value=-self.lr / bc1)

    def state_dict(self) -> dict[str, Any]:
        return {
            "exp_avg": self.exp_avg.clone(),
            "exp_avg_sq": self.exp_avg_sq.clone(),
            "steps": self.steps,
            "lr": self.lr,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state["exp_avg"].shape != self.exp_avg.shape:
            raise ValueError(
                f"optimiser state for {state['exp_avg'].numel()} parameters does not fit a network "
                f"with {self.exp_avg.numel()}"
            )
        self.exp_avg.copy_(state["exp_avg"])
        self.exp_avg_sq.copy_(state["exp_avg_sq"])
        self.steps, self.lr = int(state["steps"]), float(state["lr"])
