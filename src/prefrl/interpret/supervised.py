"""Supervised reward learning from (transition, reward) data, to compare with preferences.

Regresses every ensemble member on the true rewards of a :class:`TrajectoryBatch` with a
mean squared error. The result is an ordinary reward network, so EPIC distance and
correlations compare it with a preference-learned one on equal terms.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from prefrl.data.trajectories import TrajectoryBatch
from prefrl.interpret.evaluation import pearson
from prefrl.interpret.rewardfn import index_obs
from prefrl.rewards.nets import RewardNet, to_tensor


@dataclass(frozen=True)
class SupervisedConfig:
    """How the reward network is regressed on true rewards."""

    lr: float = 3e-3
    """Adam learning rate."""
    epochs: int = 30
    """Passes over the training transitions."""
    batch_size: int = 256
    """Transitions per step."""
    val_fraction: float = 0.1
    """Share of transitions held out for validation metrics."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    seed: int = 0
    """Seed for the split and the batch order."""

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1 or not 0.0 <= self.val_fraction < 1.0:
            raise ValueError("need epochs >= 1, batch_size >= 1 and val_fraction in [0, 1)")


def fit_supervised(
    net: RewardNet, batch: TrajectoryBatch, config: SupervisedConfig | None = None
) -> dict[str, float]:
    """Train ``net`` in place on ``batch``'s (transition, true reward) pairs.

    Returns:
        ``train_mse``, ``val_mse`` and ``val_pearson`` of the ensemble mean (NaN without a
        validation split).
    """
    c = config or SupervisedConfig()
    if batch.rews is None:
        raise ValueError("supervised reward learning needs a trajectory batch with true rewards (rews)")
    rows = batch.step_rows
    if len(rows) < 2:
        raise ValueError(f"need at least 2 transitions, got {len(rows)}")
    dev = net.device
    obs, acts = to_tensor(index_obs(batch.obs, rows), dev), to_tensor(batch.acts[rows], dev)
    next_obs, dones = to_tensor(index_obs(batch.obs, rows + 1), dev), to_tensor(batch.dones[rows], dev)
    y = torch.as_tensor(batch.rews[rows], dtype=torch.float32, device=dev)
    net.update_stats(obs, acts, next_obs, dones)
    feats = net.encode(obs, acts, next_obs, dones)  # [N, ...]
    gen = torch.Generator().manual_seed(c.seed)
    perm = torch.randperm(len(rows), generator=gen).to(dev)
    n_val = round(c.val_fraction * len(rows))
    val, train = perm[:n_val], perm[n_val:]
    opt = torch.optim.AdamW(net.parameters(), lr=c.lr, weight_decay=c.weight_decay)
    net.train()
    total, count = 0.0, 0
    for _ in range(c.epochs):
        order = train[torch.randperm(len(train), generator=gen).to(dev)]
        total, count = 0.0, 0
        for s in range(0, len(order), c.batch_size):
            idx = order[s : s + c.batch_size]
            pred = net.score({k: v[idx] for k, v in feats.items()})  # [E, b]
            loss = (pred - y[idx]).pow(2).mean(-1).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.item() / net.ensemble_size * len(idx)
            count += len(idx)
    net.eval()
    out = {"train_mse": total / max(count, 1), "val_mse": float("nan"), "val_pearson": float("nan")}
    if n_val:
        with torch.no_grad():
            pv = net.score({k: v[val] for k, v in feats.items()}).mean(0)
        out["val_mse"] = (pv - y[val]).pow(2).mean().item()
        out["val_pearson"] = pearson(pv.cpu().numpy(), y[val].cpu().numpy())
    return out
