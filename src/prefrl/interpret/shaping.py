"""Reward shaping for readability: learn a potential that makes a reward sparse or smooth.

Given a reward ``r`` and transitions, fit ``Φ`` so that the shaped reward
``r'(s, a, s') = r(s, a, s') + γ (1 − done) Φ(s') − Φ(s)`` -- which has the same optimal
policies (Ng et al., 1999) -- is as *sparse* (small mean ``|r'|``) or as *smooth* (small
change of ``r'`` from one step to the next along episodes) as possible. The result is a
:class:`~prefrl.rewards.ShapedReward` around a frozen copy of the reward network, so it
can be saved, plotted and compared like any reward network.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from prefrl.data.trajectories import TrajectoryBatch
from prefrl.interpret.evaluation import predicted_rewards
from prefrl.interpret.plots import new_figure, save_figure
from prefrl.interpret.rewardfn import index_obs
from prefrl.rewards.io import build_reward_net
from prefrl.rewards.nets import RewardNet, to_tensor
from prefrl.rewards.shaped import ShapedReward
from prefrl.rewards.spaces import encode_space


@dataclass(frozen=True)
class ShapingConfig:
    """How the potential is fitted."""

    objective: Literal["sparse", "smooth"] = "sparse"
    """``sparse``: minimise mean |r'|; ``smooth``: minimise mean (r'_{t+1} − r'_t)² along episodes."""
    gamma: float = 0.99
    """Discount of the shaping term (use the agent's discount)."""
    hidden: tuple[int, ...] = ()
    """Hidden layers of the potential; ``()`` is linear (a table for Discrete observations)."""
    steps: int = 500
    """Full-batch Adam steps."""
    lr: float = 0.05
    """Adam learning rate."""
    l2: float = 1e-4
    """Penalty on mean Φ(s)² (keeps the potential small where the objective is flat)."""
    seed: int = 0
    """Seed of the potential's initialisation."""

    def __post_init__(self) -> None:
        if self.objective not in ("sparse", "smooth"):
            raise ValueError(f"objective must be 'sparse' or 'smooth', got {self.objective!r}")
        if self.steps < 1 or self.lr <= 0:
            raise ValueError(f"need steps >= 1 and lr > 0, got {self.steps}, {self.lr}")


def frozen_copy(net: RewardNet) -> RewardNet:
    """A copy of ``net`` (rebuilt from its config, weights copied) with gradients off."""
    copy = build_reward_net(net.config).to(net.device)
    copy.load_state_dict(net.state_dict())
    copy.requires_grad_(False)
    return copy.eval()


def _objective(r: torch.Tensor, same_episode: torch.Tensor, kind: str) -> torch.Tensor:
    """Per-member objective ``[E]`` of shaped rewards ``r [E, N]`` (rows in episode order)."""
    if kind == "sparse":
        return r.abs().mean(-1)
    d = (r[:, 1:] - r[:, :-1])[:, same_episode]
    return d.pow(2).mean(-1) if d.shape[-1] else r.pow(2).mean(-1)


def readability(r: np.ndarray, batch: TrajectoryBatch) -> dict[str, float]:
    """``l1`` (mean |r|) and ``tv`` (mean |r_{t+1} − r_t| within episodes) of per-row rewards ``[S]``."""
    rows = batch.step_rows
    same = np.diff(rows) == 1
    x = r[rows]
    return {
        "l1": float(np.abs(x).mean()),
        "tv": float(np.abs(np.diff(x))[same].mean()) if same.any() else 0.0,
    }


def learn_shaping(
    net: RewardNet, batch: TrajectoryBatch, config: ShapingConfig | None = None
) -> tuple[ShapedReward, dict[str, float]]:
    """Fit a potential for ``net`` on ``batch``'s transitions.

    Returns:
        The shaped reward (a :class:`ShapedReward` around a frozen copy of ``net``) and
        metrics ``l1_before/after`` and ``tv_before/after`` of the ensemble-mean reward.
    """
    c = config or ShapingConfig()
    rows = batch.step_rows
    if len(rows) < 2:
        raise ValueError(f"shaping needs at least 2 transitions, got {len(rows)}")
    torch.manual_seed(c.seed)
    shaped = ShapedReward(frozen_copy(net), gamma=c.gamma, hidden=c.hidden).to(net.device)
    dev = net.device
    obs, acts = to_tensor(index_obs(batch.obs, rows), dev), to_tensor(batch.acts[rows], dev)
    next_obs, dones = to_tensor(index_obs(batch.obs, rows + 1), dev), to_tensor(batch.dones[rows], dev)
    shaped.phi_norm.update(encode_space(net.observation_space, obs))
    feats = shaped.encode(obs, acts, next_obs, dones)
    same = torch.as_tensor(np.diff(rows) == 1, device=dev)
    params = list(shaped.potential.parameters())
    with torch.no_grad():  # zero the last layer: start from Φ = 0, i.e. the original reward
        params[-2].zero_()
        params[-1].zero_()
    opt = torch.optim.Adam(params, lr=c.lr)
    for _ in range(c.steps):
        opt.zero_grad(set_to_none=True)
        r = shaped.score(feats)  # [E, N]
        loss = (
            _objective(r, same, c.objective).sum()
            + c.l2 * shaped.potential_value(feats["phi_s"]).pow(2).mean()
        )
        loss.backward()
        opt.step()
    shaped.eval().requires_grad_(False)
    before, after = np.zeros(len(batch.acts)), np.zeros(len(batch.acts))
    with torch.no_grad():
        before[rows] = (
            shaped.base.score({k[5:]: v for k, v in feats.items() if k.startswith("base.")})
            .mean(0)
            .cpu()
            .numpy()
        )
        after[rows] = shaped.score(feats).mean(0).cpu().numpy()
    m0, m1 = readability(before, batch), readability(after, batch)
    return shaped, {"l1_before": m0["l1"], "l1_after": m1["l1"], "tv_before": m0["tv"], "tv_after": m1["tv"]}


def plot_shaping(
    original: RewardNet,
    shaped: RewardNet,
    batch: TrajectoryBatch,
    path: str | Path,
    episodes: list[int] | None = None,
) -> Path:
    """Original and shaped reward side by side along some episodes (one row each)."""
    eps = list(range(min(3, len(batch)))) if episodes is None else episodes
    r0, r1 = predicted_rewards(original, batch), predicted_rewards(shaped, batch)
    fig = new_figure(10, 2.2 * len(eps))
    for i, e in enumerate(eps):
        s, t = int(batch.starts[e]), int(batch.lengths[e])
        for j, (name, r) in enumerate((("original", r0), ("shaped", r1))):
            ax = fig.add_subplot(len(eps), 2, 2 * i + j + 1)
            ax.bar(np.arange(t), r[s : s + t], color="tab:blue" if j == 0 else "tab:green", width=1.0)
            ax.axhline(0, color="black", lw=0.5)
            ax.set_title(f"{name}, episode {e}", fontsize=9)
    return save_figure(fig, path)
