"""Bradley–Terry preference model and its loss, as pure functions in logit space.

For a pair of fragments with per-step rewards ``r0, r1`` (``[..., L]``), the logit that
the first is preferred is the difference of their (discounted) returns. With an assumed
teacher error rate ``ε`` (the teacher answers at random with probability ``ε``), the
model probability is ``P = ε/2 + (1 − ε) σ(logit)``; its log is computed stably with
``logaddexp`` so that ``ε`` shapes the gradient instead of being clipped away.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def discount_weights(length: int, discount: float, device: torch.device | None = None) -> torch.Tensor:
    """``[L]`` weights ``discount ** t``."""
    return discount ** torch.arange(length, dtype=torch.float32, device=device)


def fragment_returns(rews: torch.Tensor, discount: float = 1.0) -> torch.Tensor:
    """``[..., L] -> [...]`` (discounted) sum of per-step rewards."""
    if rews.dim() < 1:
        raise ValueError("rews needs a trailing step dimension [..., L]")
    if discount == 1.0:
        return rews.sum(-1)
    return rews @ discount_weights(rews.shape[-1], discount, rews.device)


def preference_logits(rews: torch.Tensor, discount: float = 1.0) -> torch.Tensor:
    """Per-step rewards of pairs ``[..., 2, L]`` -> logit P(first preferred) ``[...]``."""
    if rews.dim() < 2 or rews.shape[-2] != 2:
        raise ValueError(f"rews must have shape [..., 2, L], got {tuple(rews.shape)}")
    w = discount_weights(rews.shape[-1], discount, rews.device).to(rews.dtype)
    # one matrix-vector product [..., 2L] @ [2L] (and one outer product in backward)
    return rews.flatten(-2) @ torch.cat([w, -w])


def log_probs(logits: torch.Tensor, error_rate: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log P, log (1 − P))`` with ``P = ε/2 + (1 − ε) σ(logits)``, elementwise."""
    if not 0.0 <= error_rate < 1.0:
        raise ValueError(f"error_rate must lie in [0, 1), got {error_rate}")
    lp, lq = F.logsigmoid(logits), F.logsigmoid(-logits)
    if error_rate == 0.0:
        return lp, lq
    noise = torch.full_like(logits, math.log(error_rate / 2))
    keep = math.log1p(-error_rate)
    return torch.logaddexp(noise, keep + lp), torch.logaddexp(noise, keep + lq)


def preference_probs(logits: torch.Tensor, error_rate: float = 0.0) -> torch.Tensor:
    """P(first preferred) under the noisy Bradley–Terry model, ``[...]``."""
    return error_rate / 2 + (1 - error_rate) * torch.sigmoid(logits)


def preference_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    error_rate: float = 0.0,
    reduction: str = "mean",
) -> torch.Tensor:
    """Cross-entropy between soft labels (P(first preferred)) and the model.

    Args:
        logits: ``[...]`` Bradley–Terry logits (e.g. ``[E, B]``).
        labels: ``[...]`` broadcastable to ``logits``, values in [0, 1] (0.5 = tie).
        error_rate: assumed probability ``ε`` that the teacher answers at random.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
    """
    if labels.shape != logits.shape:
        try:
            torch.broadcast_shapes(labels.shape, logits.shape)
        except RuntimeError as e:
            raise ValueError(
                f"labels {tuple(labels.shape)} do not broadcast to logits {tuple(logits.shape)}"
            ) from e
    if error_rate == 0.0:
        loss = F.binary_cross_entropy_with_logits(
            logits, labels.expand_as(logits).to(logits.dtype), reduction="none"
        )
    else:
        lp, lq = log_probs(logits, error_rate)
        loss = -(labels * lp + (1 - labels) * lq)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"unknown reduction {reduction!r}")


@torch.no_grad()
def preference_metrics(
    logits: torch.Tensor, labels: torch.Tensor, error_rate: float = 0.0, tie_tol: float = 1e-6
) -> dict[str, float]:
    """Loss and accuracy of ``logits`` ``[B]`` against ``labels`` ``[B]``.

    Returns:
        ``loss``; ``accuracy`` on pairs with a strict preference (label != 0.5), counting
        a prediction right when it sides with the label; ``tie_fraction``; and
        ``tie_abs_error``, the mean ``|P − 0.5|`` on ties (0 is perfect).
    """
    if logits.shape != labels.shape or logits.dim() != 1:
        raise ValueError(f"need logits and labels of equal shape [B], got {logits.shape}, {labels.shape}")
    loss = preference_loss(logits, labels, error_rate).item() if len(labels) else float("nan")
    tie = (labels - 0.5).abs() <= tie_tol
    strict = ~tie
    right = (logits > 0) == (labels > 0.5)
    acc = right[strict].float().mean().item() if strict.any() else float("nan")
    p = preference_probs(logits, error_rate)
    tie_err = (p[tie] - 0.5).abs().mean().item() if tie.any() else float("nan")
    frac = tie.float().mean().item() if len(labels) else float("nan")
    return {"loss": loss, "accuracy": acc, "tie_fraction": frac, "tie_abs_error": tie_err}
