"""What every reward network is: :class:`RewardNet`, the base of the MLP
(:mod:`prefrl.rewards.mlp`), CNN (:mod:`prefrl.rewards.cnn`) and shaped
(:mod:`prefrl.rewards.shaped`) networks. Every network is an ensemble (``E >= 1`` members,
stacked weights).

A network maps transitions with any leading dimensions ``*lead`` (e.g. ``[B, 2, L]``)
to rewards ``[E, *lead]`` in two steps:

- :meth:`RewardNet.encode`: a fixed, gradient-free transform of raw inputs into
  features (one-hot encoding, normalisation, image layout) -- a dict of tensors with
  leading dims ``*lead``. Trainers compute it once per fragment and index into it.
- :meth:`RewardNet.score`: the trainable part, ``features -> [E, *lead]``. With
  ``per_member=True`` the features carry a leading ``E`` dimension so that each member
  sees its own rows (bootstrap resampling) in the same single batched pass.

Every network also learns one scalar per member, :attr:`RewardNet.absorbing_reward`: the
reward of the absorbing state that follows a terminated episode (``[E]``). Where the
features carry an ``"absorbing"`` mask (fragments that run past an episode's end, see
:mod:`prefrl.data.fragments`), :meth:`RewardNet.score` returns that value at those steps.
Only differences between rewards matter to preferences between clips of one length, so
this value is the anchor the agent's reward is measured from (``reward - absorbing``,
worth 0 once an episode has ended, as in Gymnasium).

``output="tanh"`` bounds every per-step reward, the absorbing one included, to ``(-1, 1)``
(as in B-Pref's reward model): a state never seen in a labelled clip cannot be paid more
than the best state that was, and when clips are ranked by how long something lasts the
rewards of the states it lasts in saturate at one level instead of varying at random.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias, cast, overload

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from prefrl.rewards.layers import EnsembleMLP
from prefrl.rewards.spaces import event_ndim

Features = dict[str, torch.Tensor]
Batch: TypeAlias = "torch.Tensor | dict[str, torch.Tensor]"
"""A batch of observations as a network reads them: a tensor, or a dict of tensors (Dict spaces)."""
Array: TypeAlias = "np.ndarray | torch.Tensor"
"""One array of inputs, NumPy or torch."""
RawBatch: TypeAlias = "Array | Mapping[str, Array]"
"""A batch of observations as callers hold them: NumPy or torch, an array or a dict of arrays."""
OUTPUTS = ("linear", "tanh")
"""Output of a reward network: unbounded, or squashed into (-1, 1)."""
ABSORBING = ("learned", "median")
"""What the absorbing state is worth in training: a learned scalar per member, or the median of
the batch's real steps (see :attr:`RewardNet.absorbing`)."""


@overload
def to_tensor(x: Array, device: torch.device | str | None = None) -> torch.Tensor: ...
@overload
def to_tensor(
    x: Mapping[str, Array], device: torch.device | str | None = None
) -> dict[str, torch.Tensor]: ...
@overload
def to_tensor(x: RawBatch, device: torch.device | str | None = None) -> Batch: ...
def to_tensor(x: RawBatch, device: torch.device | str | None = None) -> Batch:
    """NumPy array (or dict of them) -> tensor(s) on ``device``; tensors pass through."""
    if isinstance(x, Mapping):
        return {k: to_tensor(v, device) for k, v in x.items()}
    if isinstance(x, torch.Tensor):
        return x.to(device) if device is not None else x
    return torch.as_tensor(np.asarray(x), device=device)


class RewardNet(nn.Module):
    """Base class: an ensemble reward ``r(obs, act, next_obs, done) -> [E, *lead]``."""

    ensemble_size: int
    observation_space: spaces.Space[Any]
    action_space: spaces.Space[Any]
    shared_trunk: bool = False
    """The members share their feature extractor and differ in their heads only: a batch costs one
    pass of the extractor, so trainers give every member the same batch (bootstrapping by
    per-member weights instead of per-member batches)."""

    def __init__(self) -> None:
        super().__init__()
        self._config: dict[str, Any] = {}

    def _init_reward_head(self, ensemble_size: int, output: str = "linear") -> None:
        """The output squashing (``output``) and the absorbing-state reward ``[E]``, shared by every net."""
        if output not in OUTPUTS:
            raise ValueError(f"unknown reward output {output!r}; choose from {list(OUTPUTS)}")
        self.output = output
        self.absorbing_reward = nn.Parameter(torch.zeros(ensemble_size))
        self.absorbing = "learned"

    def set_absorbing(self, mode: str) -> None:
        """How the absorbing state is scored (``learned`` or ``median``, :data:`ABSORBING`).

        ``learned``: :attr:`absorbing_reward`, fitted to the labels like any weight. ``median``:
        the absorbing state is worth a typical step, the per-member median of the real (not
        absorbing) steps' rewards in the batch being scored, and the labels' wins are credited to
        the steps themselves, never to the end. Gradients flow through the median's step. Each
        training batch's median is kept in :attr:`absorbing_reward` (no gradient), so
        :meth:`absorbing_value` reports the anchor the network was trained with."""
        if mode not in ABSORBING:
            raise ValueError(f"unknown absorbing-state mode {mode!r}; choose from {list(ABSORBING)}")
        self.absorbing = mode

    def _head_outputs(self, action_heads: bool, use_act: bool) -> int:
        """Outputs of the last layer: one per action with ``action_heads``, else 1."""
        self.action_heads = action_heads
        if not action_heads:
            return 1
        if not use_act or not isinstance(self.action_space, spaces.Discrete):
            raise ValueError(
                "action_heads (one reward output per action) needs a Discrete action space that the "
                f"reward reads (use_act), got {self.action_space} with use_act={use_act}"
            )
        return int(self.action_space.n)

    def _action_index(self, acts: torch.Tensor) -> torch.Tensor:
        """Discrete actions ``[*lead]`` -> head indices ``[*lead]`` (int64, from 0)."""
        space = cast(spaces.Discrete, self.action_space)  # action heads: Discrete actions only
        n = int(space.n)
        return (acts.long() - int(space.start)).clamp_(0, n - 1)

    @staticmethod
    def _pick(out: torch.Tensor, feats: Features, per_member: bool) -> torch.Tensor:
        """Head outputs ``[E, M, K]`` -> ``[E, M]``: the taken action's column (``K = 1``: the only one)."""
        if "act" not in feats:
            return out.squeeze(-1)
        a = feats["act"].reshape(out.shape[0] if per_member else 1, -1).expand(out.shape[0], -1)
        return out.gather(-1, a.unsqueeze(-1)).squeeze(-1)

    def _squash(self, r: torch.Tensor) -> torch.Tensor:
        return torch.tanh(r) if self.output == "tanh" else r

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    # ----------------------------------------------------------- interface
    def encode(self, obs: Batch, acts: torch.Tensor, next_obs: Batch, dones: torch.Tensor) -> Features:
        """Raw tensors ``[*lead, ...]`` -> feature tensors ``[*lead, ...]`` (no gradients)."""
        raise NotImplementedError

    def _score(self, feats: Features, per_member: bool = False) -> torch.Tensor:
        """The network's own rewards ``[E, *lead]`` (subclasses implement this)."""
        raise NotImplementedError

    def score(self, feats: Features, per_member: bool = False) -> torch.Tensor:
        """Features ``[*lead, ...]`` (``[E, *lead, ...]`` if per member) -> ``[E, *lead]``.

        Steps flagged in ``feats["absorbing"]`` (bool ``[*lead]`` or ``[E, *lead]``) get
        :attr:`absorbing_reward` instead of the network's output.
        """
        r = self._squash(self._score(feats, per_member))
        mask = feats.get("absorbing")
        if mask is None:
            return r
        value = self._squash(self.absorbing_reward)  # [E]
        if self.absorbing == "median":
            value = self._real_median(r, mask, value)
        value = value.view(-1, *([1] * (r.dim() - 1)))
        return torch.where(mask, value.to(r.dtype), r)

    def _real_median(self, r: torch.Tensor, mask: torch.Tensor, fallback: torch.Tensor) -> torch.Tensor:
        """Per-member median ``[E]`` of the rewards ``r`` ``[E, *lead]`` at the steps ``mask``
        (``[*lead]`` or ``[E, *lead]``) leaves real; ``fallback`` ``[E]`` where a member has none.
        In training (gradients on) the median is also written into :attr:`absorbing_reward`."""
        m = mask if mask.dim() == r.dim() else mask.unsqueeze(0).expand_as(r)
        flat = torch.where(m, torch.full_like(r, float("nan")), r).reshape(r.shape[0], -1)
        med = torch.nanmedian(flat, dim=1).values  # [E]; NaN where every step is absorbing
        med = torch.where(torch.isnan(med), fallback.to(med.dtype), med)
        if torch.is_grad_enabled() and self.training:
            with torch.no_grad():
                raw = med.detach().clamp(-0.999999, 0.999999).atanh() if self.output == "tanh" else med
                self.absorbing_reward.copy_(raw.to(self.absorbing_reward.dtype))
        return med

    @torch.no_grad()
    def absorbing_value(self) -> float:
        """Ensemble-mean reward of the absorbing state (the agent's anchor)."""
        return float(self._squash(self.absorbing_reward).mean())

    def update_stats(
        self, obs: Batch, acts: torch.Tensor | None, next_obs: Batch | None, dones: torch.Tensor | None
    ) -> None:
        """Update input normalisation from a batch of raw transitions (default: none); inputs the
        network does not read may be ``None``."""

    def l2_per_member(self) -> torch.Tensor:
        """``[E]`` squared weight norm of each member (for adaptive L2)."""
        total = torch.zeros(self.ensemble_size, device=self.device)
        for m in self.modules():
            if isinstance(m, EnsembleMLP):
                total = total + m.l2_per_member()
        return total

    @property
    def config(self) -> dict[str, object]:
        """JSON-able constructor arguments (see :func:`prefrl.rewards.io.build_reward_net`)."""
        extra = {"absorbing": self.absorbing} if self.absorbing != "learned" else {}
        return {"class": type(self).__name__, **self._config, **extra}

    # --------------------------------------------------------- conveniences
    def forward(self, obs: Batch, acts: torch.Tensor, next_obs: Batch, dones: torch.Tensor) -> torch.Tensor:
        """Rewards ``[E, *lead]`` for transitions with leading dims ``*lead``."""
        return self.score(self.encode(obs, acts, next_obs, dones))

    def _inputs(
        self, obs: RawBatch, acts: Array, next_obs: RawBatch, dones: Array | None
    ) -> tuple[Batch, torch.Tensor, Batch, torch.Tensor]:
        dev = self.device
        acts_t = to_tensor(acts, dev)
        if dones is None:  # no terminal flags given: none of the transitions is terminal
            lead = acts_t.shape[: acts_t.dim() - event_ndim(self.action_space)]
            return to_tensor(obs, dev), acts_t, to_tensor(next_obs, dev), torch.zeros(lead, device=dev)
        return to_tensor(obs, dev), acts_t, to_tensor(next_obs, dev), to_tensor(dones, dev)

    @torch.no_grad()
    def predict_members(
        self, obs: RawBatch, acts: Array, next_obs: RawBatch, dones: Array | None = None
    ) -> np.ndarray:
        """Each member's reward ``[E, *lead]`` as NumPy, from NumPy or tensor inputs."""
        return self(*self._inputs(obs, acts, next_obs, dones)).cpu().numpy()

    @torch.no_grad()
    def predict(
        self, obs: RawBatch, acts: Array, next_obs: RawBatch, dones: Array | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Ensemble mean and std ``[*lead]`` as NumPy, from NumPy or tensor inputs."""
        r = self(*self._inputs(obs, acts, next_obs, dones))
        std = r.std(0, unbiased=False) if r.shape[0] > 1 else torch.zeros_like(r[0])
        return r.mean(0).cpu().numpy(), std.cpu().numpy()
