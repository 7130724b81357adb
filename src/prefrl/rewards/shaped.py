"""Potential-based shaping of any reward network: ``r + γ (1 - done) Φ(s') − Φ(s)``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from prefrl.rewards.layers import EnsembleMLP
from prefrl.rewards.nets import Features, RewardNet
from prefrl.rewards.normalization import RunningNorm
from prefrl.rewards.spaces import encode_space, flat_dim


class ShapedReward(RewardNet):
    """``r(s, a, s') + γ (1 - done) Φ(s') − Φ(s)``: a base reward plus a learned potential.

    The potential ``Φ`` is an ensemble MLP on (normalised) observation features with the
    same number of members as the base network. Shaping of this form leaves optimal
    policies unchanged (Ng et al., 1999).
    """

    def __init__(
        self,
        base: RewardNet,
        gamma: float = 0.99,
        hidden: Sequence[int] = (32, 32),
        activation: str = "relu",
    ) -> None:
        super().__init__()
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must lie in [0, 1], got {gamma}")
        self.base, self.gamma = base, gamma
        self.observation_space, self.action_space = base.observation_space, base.action_space
        self.ensemble_size = base.ensemble_size
        d = flat_dim(self.observation_space)
        self.phi_norm = RunningNorm(d)
        self.potential = EnsembleMLP(self.ensemble_size, d, hidden, 1, activation)
        self._init_reward_head(self.ensemble_size)
        self._config = {
            "base": base.config,
            "gamma": gamma,
            "hidden": list(hidden),
            "activation": activation,
        }

    @torch.no_grad()
    def encode(self, obs: Any, acts: Any, next_obs: Any, dones: Any) -> Features:
        feats = {f"base.{k}": v for k, v in self.base.encode(obs, acts, next_obs, dones).items()}
        feats["phi_s"] = self.phi_norm(encode_space(self.observation_space, obs))
        feats["phi_next"] = self.phi_norm(encode_space(self.observation_space, next_obs))
        feats["done"] = dones.float()
        return feats

    @torch.no_grad()
    def update_stats(self, obs: Any, acts: Any, next_obs: Any, dones: Any) -> None:
        self.base.update_stats(obs, acts, next_obs, dones)
        self.phi_norm.update(encode_space(self.observation_space, obs))

    def potential_value(self, feats: torch.Tensor, per_member: bool = False) -> torch.Tensor:
        """``Φ`` for normalised observation features -> ``[E, *lead]``."""
        return self.potential(feats, per_member=per_member).squeeze(-1)

    def _score(self, feats: Features, per_member: bool = False) -> torch.Tensor:
        base = {k[5:]: v for k, v in feats.items() if k.startswith("base.")}
        r = self.base._squash(self.base._score(base, per_member=per_member))
        phi_s = self.potential_value(feats["phi_s"], per_member)
        phi_next = self.potential_value(feats["phi_next"], per_member)
        return r + self.gamma * (1.0 - feats["done"]) * phi_next - phi_s
