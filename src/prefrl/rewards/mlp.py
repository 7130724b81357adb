"""The MLP reward network: an ensemble of MLPs on vector (or one-hot) inputs."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from gymnasium import spaces

from prefrl.rewards.layers import EnsembleMLP
from prefrl.rewards.nets import Batch, Features, RewardNet
from prefrl.rewards.normalization import RunningNorm
from prefrl.rewards.spaces import encode_space, flat_dim, space_to_json


class MLPReward(RewardNet):
    """An ensemble of MLPs on the chosen inputs among ``(obs, act, next_obs, done)``.

    Works with Box, Discrete, MultiDiscrete, MultiBinary and Dict observation and
    action spaces (one-hot for the discrete ones). Inputs are normalised by running
    statistics when ``normalize_input`` is set. With ``action_heads`` (Discrete actions)
    the action is not an input: the network has one output per action and the reward is
    the taken action's, ``r(s, a) = f(s)[a]`` (as a DQN's Q-values), so the action can
    change the reward multiplicatively, not only through what a one-hot input adds.
    """

    def __init__(
        self,
        observation_space: spaces.Space[object],
        action_space: spaces.Space[object],
        hidden: Sequence[int] = (32, 32),
        ensemble_size: int = 1,
        use_obs: bool = True,
        use_act: bool = True,
        use_next_obs: bool = False,
        use_done: bool = False,
        activation: str = "relu",
        normalize_input: bool = True,
        output: str = "linear",
        action_heads: bool = False,
    ) -> None:
        super().__init__()
        if not (use_obs or use_act or use_next_obs or use_done):
            raise ValueError("a reward net needs at least one input among obs/act/next_obs/done")
        if ensemble_size < 1:
            raise ValueError(f"ensemble_size must be >= 1, got {ensemble_size}")
        self.observation_space, self.action_space = observation_space, action_space
        self.ensemble_size = ensemble_size
        n_out = self._head_outputs(action_heads, use_act)
        self.use = (use_obs, use_act and not action_heads, use_next_obs, use_done)
        d_obs, d_act = flat_dim(observation_space), flat_dim(action_space)
        dim = d_obs * (use_obs + use_next_obs) + d_act * self.use[1] + int(use_done)
        if dim == 0:
            raise ValueError("with action_heads the reward needs another input (obs, next_obs or done)")
        self.norm = RunningNorm(dim) if normalize_input else None
        self.mlp = EnsembleMLP(ensemble_size, dim, hidden, n_out, activation)
        self._init_reward_head(ensemble_size, output)
        self._config = {
            "observation_space": space_to_json(observation_space),
            "action_space": space_to_json(action_space),
            "hidden": list(hidden),
            "ensemble_size": ensemble_size,
            "use_obs": use_obs,
            "use_act": use_act,
            "use_next_obs": use_next_obs,
            "use_done": use_done,
            "activation": activation,
            "normalize_input": normalize_input,
            "output": output,
            "action_heads": action_heads,
        }

    def _raw(
        self, obs: Batch, acts: torch.Tensor | None, next_obs: Batch | None, dones: torch.Tensor | None
    ) -> torch.Tensor:
        missing = [
            k
            for k, x, on in zip(("acts", "next_obs", "dones"), (acts, next_obs, dones), self.use[1:])
            if on and x is None
        ]
        if missing:
            raise ValueError(f"this reward network reads {', '.join(missing)}, got None")
        parts = []
        if self.use[0]:
            parts.append(encode_space(self.observation_space, obs))
        if self.use[1] and acts is not None:
            parts.append(encode_space(self.action_space, acts))
        if self.use[2] and next_obs is not None:
            parts.append(encode_space(self.observation_space, next_obs))
        if self.use[3] and dones is not None:
            parts.append(dones.float().unsqueeze(-1))
        lead = {tuple(p.shape[:-1]) for p in parts}
        if len(lead) != 1:
            raise ValueError(f"obs/acts/next_obs/dones have different leading shapes: {lead}")
        return torch.cat(parts, -1) if len(parts) > 1 else parts[0]

    @torch.no_grad()
    def encode(self, obs: Batch, acts: torch.Tensor, next_obs: Batch, dones: torch.Tensor) -> Features:
        x = self._raw(obs, acts, next_obs, dones)
        feats = {"x": self.norm(x) if self.norm is not None else x}
        if self.action_heads:
            feats["act"] = self._action_index(acts)
        return feats

    @torch.no_grad()
    def update_stats(
        self, obs: Batch, acts: torch.Tensor | None, next_obs: Batch | None, dones: torch.Tensor | None
    ) -> None:
        if self.norm is not None:
            self.norm.update(self._raw(obs, acts, next_obs, dones))

    def _score(self, feats: Features, per_member: bool = False) -> torch.Tensor:
        out = self.mlp(feats["x"], per_member=per_member)  # [E, *lead, K]
        if not self.action_heads:
            return out.squeeze(-1)
        flat = out.reshape(out.shape[0], -1, out.shape[-1])  # [E, M, K]
        return self._pick(flat, feats, per_member).view(out.shape[:-1])
