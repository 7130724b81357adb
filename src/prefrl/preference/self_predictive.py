"""Train a reward's encoder on REED's self-predictive objective: a :class:`~prefrl.rewards.reed.
ReedReward`'s, or the image features of a :class:`~prefrl.rewards.cnn.CNNReward` built with
``self_predictive`` (REED on images).

No labels are involved: the trainer draws random transitions ``(s, a, s')`` from the ones it is
given (in ``prefrl train``, the iteration's episodes and a sample of the replay buffer) and
minimises :meth:`~prefrl.rewards.reed.ReedReward.self_predictive_loss` with its own Adam over the
encoder, dynamics predictor, projection and prediction parameters. The preference trainer then
fits encoder and reward head to the labels (the encoder is not frozen).

Each ensemble member draws its own random transitions for every step (``[E, B]`` indices, with
replacement), as the preference trainer gives each member its own bootstrap resample: the
members' encoders see different data, which keeps the ensemble diverse; the cost is that of one
shared batch (one batched pass over ``[E, B, ...]``).

The parameters may belong to a network whose :class:`~prefrl.preference.optim.FlatParameters`
(the preference trainer's) alias them into one buffer: gradients are zeroed in place, never
set to ``None``, and Adam updates the parameters in place, so that aliasing survives.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, TypeGuard

import torch

from prefrl.data.arrays import obs_map
from prefrl.rewards.cnn import CNNReward
from prefrl.rewards.nets import to_tensor
from prefrl.rewards.reed import ReedReward

SelfPredictiveNet = ReedReward | CNNReward
"""The networks with a self-predictive objective (a CNNReward only when built with it)."""


def has_self_predictive(net: object) -> TypeGuard[SelfPredictiveNet]:
    """Whether ``net`` has the self-predictive objective: every :class:`ReedReward`, and a
    :class:`CNNReward` built with ``self_predictive``."""
    return isinstance(net, ReedReward) or (isinstance(net, CNNReward) and net.has_self_predictive)


EVAL_TRANSITIONS = 1024
"""Random transitions (the same before and after a call's updates) that measure ``spr_loss_before``
and ``spr_loss``."""


@dataclass(frozen=True)
class SelfPredictiveConfig:
    """How the self-predictive objective trains a REED encoder (``prefrl train`` builds it from
    :meth:`~prefrl.preference.trainer.RewardTrainerConfig.self_predictive`)."""

    enabled: bool = True
    """Train on the objective at all (off: the REED network learns from preferences alone)."""
    steps: int = 200
    """Adam updates per call to train() (times the call's multiplier)."""
    batch_size: int = 256
    """Transitions per update, per ensemble member (each member draws its own)."""
    lr: float = 1e-3
    """Adam learning rate."""
    seed: int = 0
    """Seed of the trainer's own random generator (which transitions each update draws)."""

    def __post_init__(self) -> None:
        if self.steps < 0 or self.batch_size < 1 or not self.lr > 0:
            raise ValueError(
                f"need steps >= 0, batch_size >= 1 and lr > 0, got {self.steps}, {self.batch_size}, {self.lr}"
            )


def _rows(x: Any, idx: torch.Tensor) -> Any:
    """Rows ``idx`` (any shape ``I``) of ``[N, ...]`` tensors (or a dict of them) -> ``[*I, ...]``."""
    return obs_map(lambda a: a[idx], x)


class SelfPredictiveTrainer:
    """Fits a network's encoder and next-latent predictor to transitions (a :class:`ReedReward`, or
    a :class:`CNNReward` built with ``self_predictive``)."""

    def __init__(self, net: SelfPredictiveNet, config: SelfPredictiveConfig | None = None) -> None:
        if not has_self_predictive(net):
            raise TypeError(
                "the self-predictive objective needs a ReedReward or a CNNReward built with "
                f"self_predictive, got {type(net).__name__}"
            )
        self.net = net
        self.config = config or SelfPredictiveConfig()
        self.params = list(net.self_predictive_parameters())
        self.optimizer = torch.optim.Adam(self.params, lr=self.config.lr)
        self.generator = torch.Generator(device="cpu").manual_seed(self.config.seed)
        self.calls = 0
        self.global_step = 0

    # ------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Optimiser moments, RNG and counters: tensors and JSON values, nothing to pickle
        (string keys without dots, as :func:`~prefrl.storage.checkpoint.save_tensor_state` takes)."""
        moments = {str(i): dict(s) for i, s in self.optimizer.state_dict()["state"].items()}
        return {
            "moments": moments,
            "generator": self.generator.get_state(),
            "calls": self.calls,
            "global_step": self.global_step,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        full = self.optimizer.state_dict()
        moments = state.get("moments", {})
        if any(not 0 <= int(k) < len(self.params) for k in moments):
            raise ValueError(
                f"self-predictive optimiser state for parameters {sorted(moments)} does not fit a network "
                f"with {len(self.params)} of them"
            )
        full["state"] = {int(k): dict(v) for k, v in moments.items()}
        self.optimizer.load_state_dict(full)
        self.generator.set_state(state["generator"])
        self.calls, self.global_step = int(state["calls"]), int(state["global_step"])

    # ------------------------------------------------------------ train
    def _zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=False)  # in place: the flat gradient buffer stays aliased

    @torch.no_grad()
    def _eval_loss(self, obs: Any, acts: torch.Tensor, next_obs: Any, idx: torch.Tensor) -> float:
        """Ensemble-mean loss on the rows ``idx`` ``[n]`` (shared by every member)."""
        return float(self.net.self_predictive_loss(_rows(obs, idx), acts[idx], _rows(next_obs, idx)).mean())

    def train(self, obs: Any, acts: Any, next_obs: Any, step_multiplier: float = 1.0) -> dict[str, float]:
        """``round(steps * step_multiplier)`` updates on random draws of the transitions; metrics.

        Args:
            obs: observations ``[N, *obs_shape]`` (NumPy or tensors; a dict of such for Dict spaces).
            acts: actions ``[N, *act_shape]``.
            next_obs: the observations that followed, ``[N, *obs_shape]``.
            step_multiplier: scales ``config.steps`` (e.g. the loop's longer first reward update).

        Returns:
            ``spr_loss_before`` and ``spr_loss`` (the ensemble-mean loss on the same
            :data:`EVAL_TRANSITIONS` random transitions before and after the updates), ``spr_latent_std``
            (the encodings' standard deviation across those states, averaged over the latent's
            dimensions: near 0 would mean a collapsed encoder), ``spr_steps``, ``spr_transitions``
            and ``spr_s`` (seconds); empty when disabled or given no transition.
        """
        c, net = self.config, self.net
        dev = net.device
        acts_t = to_tensor(acts, dev)
        n = int(acts_t.shape[0])
        if not c.enabled or n == 0:
            return {}
        t0 = time.perf_counter()
        obs_t, next_t = to_tensor(obs, dev), to_tensor(next_obs, dev)
        steps = max(1, round(c.steps * step_multiplier)) if c.steps > 0 else 0
        e = net.ensemble_size
        eval_idx = torch.randperm(n, generator=self.generator)[:EVAL_TRANSITIONS].to(dev)
        before = self._eval_loss(obs_t, acts_t, next_t, eval_idx)
        net.train()
        for _ in range(steps):
            idx = torch.randint(0, n, (e, c.batch_size), generator=self.generator).to(dev)  # [E, B]
            self._zero_grad()
            loss = net.self_predictive_loss(
                _rows(obs_t, idx), acts_t[idx], _rows(next_t, idx), per_member=True
            )
            loss.sum().backward()
            self.optimizer.step()
        self._zero_grad()
        net.eval()
        after = self._eval_loss(obs_t, acts_t, next_t, eval_idx)
        with torch.no_grad():
            z = net.latent(_rows(obs_t, eval_idx))  # [E, n, d]
            spread = float(z.std(1).mean()) if z.shape[1] > 1 else 0.0
        self.calls += 1
        self.global_step += steps
        return {
            "spr_loss_before": before,
            "spr_loss": after,
            "spr_latent_std": spread,
            "spr_steps": float(steps),
            "spr_transitions": float(n),
            "spr_s": time.perf_counter() - t0,
        }
