"""REED's reward network (Metcalf et al. 2024): a dynamics-aware state encoder under the reward.

Each ensemble member has a state encoder ``phi: obs -> z`` (``z`` of ``latent_dim``) and a
reward head over ``[phi(s), a, phi(s'), done]`` (the inputs the ``use_*`` flags choose). Next
to them sits a self-predictive objective that needs no labels: a dynamics predictor
``g([phi(s), a]) -> z_hat`` guesses the next latent, and a projection / prediction pair in
SimSiam's style (Chen & He 2021) compares it with the encoding of the real next state, held
fixed (stop-gradient):

    loss = -cos(pred(proj(g([phi(s), a]))), sg(proj(phi(s'))))

Trained on every transition the agent has seen (:class:`~prefrl.preference.self_predictive.
SelfPredictiveTrainer`), the encoder learns what the environment's dynamics make of a state,
so states no label covers are still represented; the preference fit then trains encoder and
head together (the encoder is not frozen).

The reward never reads ``s'`` raw: it reads ``phi(s')``, so the next-latent objective has no
input that already holds its target (the default MLP reward concatenates ``(s, a, s')`` in
its first layer, where such an objective would leak).

Observations must be vectors (Box, Discrete, MultiDiscrete, MultiBinary, or a Dict of them):
images have the CNN reward. Observation features are normalised by running statistics
(:meth:`ReedReward.update_stats`); action features enter as :func:`encode_space` makes them
(one-hot for discrete actions, raw floats for Box).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
import torch.nn.functional as F
from gymnasium import spaces
from torch import nn

from prefrl.rewards.layers import EnsembleMLP
from prefrl.rewards.nets import Batch, Features, RewardNet
from prefrl.rewards.normalization import RunningNorm
from prefrl.rewards.spaces import encode_space, flat_dim, is_image_space, space_to_json


def _has_images(space: spaces.Space[object]) -> bool:
    if isinstance(space, spaces.Dict):
        return any(_has_images(s) for s in space.spaces.values())
    return is_image_space(space)


class ReedReward(RewardNet):
    """An ensemble reward over a learned state encoding, with REED's self-predictive objective.

    Args:
        observation_space: vector observations (no images).
        action_space: any space :func:`encode_space` supports.
        hidden: hidden layer sizes of the reward head.
        ensemble_size: members ``E``; each has its own encoder, head and predictor.
        use_obs, use_act, use_next_obs, use_done: the head reads ``phi(s)``, the action,
            ``phi(s')`` and the terminal flag; ``phi(s)`` or ``phi(s')`` must be among them.
        activation: of every hidden layer.
        normalize_input: normalise observation features by running statistics.
        output: ``linear`` or ``tanh`` (see :mod:`prefrl.rewards.nets`).
        action_heads: Discrete actions: one head output per action, the taken one's is the reward.
        latent_dim: size ``d`` of the encoding ``z``; the encoder, the dynamics predictor and the
            projection and prediction MLPs each have one hidden layer of this size.
    """

    def __init__(
        self,
        observation_space: spaces.Space[object],
        action_space: spaces.Space[object],
        hidden: Sequence[int] = (64, 64),
        ensemble_size: int = 1,
        use_obs: bool = True,
        use_act: bool = True,
        use_next_obs: bool = True,
        use_done: bool = False,
        activation: str = "relu",
        normalize_input: bool = True,
        output: str = "linear",
        action_heads: bool = False,
        latent_dim: int = 64,
    ) -> None:
        super().__init__()
        if _has_images(observation_space):
            raise ValueError(
                "the REED reward (--reward.kind reed) reads vector observations, got images "
                f"({observation_space}); use --reward.kind cnn (or auto) for image observations"
            )
        if not (use_obs or use_next_obs):
            raise ValueError("the REED reward reads the encoded state: set use_obs or use_next_obs")
        if ensemble_size < 1 or latent_dim < 1:
            raise ValueError(
                f"need ensemble_size >= 1 and latent_dim >= 1, got {ensemble_size}, {latent_dim}"
            )
        self.observation_space, self.action_space = observation_space, action_space
        self.ensemble_size = ensemble_size
        n_out = self._head_outputs(action_heads, use_act)
        self.use = (use_obs, use_act and not action_heads, use_next_obs, use_done)
        d_obs, d_act, d = flat_dim(observation_space), flat_dim(action_space), latent_dim
        self.latent_dim = d
        self.norm = RunningNorm(d_obs) if normalize_input else None
        e, h = ensemble_size, [d]
        self.encoder = EnsembleMLP(e, d_obs, h, d, activation)
        head_in = d * (use_obs + use_next_obs) + d_act * self.use[1] + int(use_done)
        self.head = EnsembleMLP(e, head_in, hidden, n_out, activation)
        self.dynamics = EnsembleMLP(e, d + d_act, h, d, activation)
        self.projection = EnsembleMLP(e, d, h, d, activation)
        self.prediction = EnsembleMLP(e, d, h, d, activation)
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
            "latent_dim": latent_dim,
        }

    # ------------------------------------------------------------ features
    def _obs_features(self, obs: Batch) -> torch.Tensor:
        """Raw observations ``[*lead, *obs_shape]`` -> normalised features ``[*lead, D_obs]``."""
        x = encode_space(self.observation_space, obs)
        return self.norm(x) if self.norm is not None else x

    @torch.no_grad()
    def encode(self, obs: Batch, acts: torch.Tensor, next_obs: Batch, dones: torch.Tensor) -> Features:
        """Raw transitions ``[*lead, ...]`` -> features: ``obs`` and ``next_obs`` ``[*lead, D_obs]``
        (normalised), ``a`` ``[*lead, D_act]``, ``done`` ``[*lead]`` (those the head reads) and, with
        action heads, the action index ``act`` ``[*lead]``."""
        feats: Features = {}
        if self.use[0]:
            feats["obs"] = self._obs_features(obs)
        if self.use[1]:
            feats["a"] = encode_space(self.action_space, acts)
        if self.use[2]:
            feats["next_obs"] = self._obs_features(next_obs)
        if self.use[3]:
            feats["done"] = dones.float()
        if self.action_heads:
            feats["act"] = self._action_index(acts)
        lead = {tuple(v.shape[: v.dim() - (k not in ("done", "act"))]) for k, v in feats.items()}
        if len(lead) != 1:
            raise ValueError(f"obs/acts/next_obs/dones have different leading shapes: {lead}")
        return feats

    @torch.no_grad()
    def update_stats(
        self, obs: Batch, acts: torch.Tensor | None, next_obs: Batch | None, dones: torch.Tensor | None
    ) -> None:
        """Fold the observations ``[*lead, *obs_shape]`` into the input statistics (``next_obs``
        is the same stream of states one step on, so it is not counted twice)."""
        if self.norm is not None:
            self.norm.update(encode_space(self.observation_space, obs))

    # ------------------------------------------------------------ reward
    def _score(self, feats: Features, per_member: bool = False) -> torch.Tensor:
        """Features ``[*lead, ...]`` (``[E, *lead, ...]`` per member) -> head outputs ``[E, *lead]``."""
        e = self.ensemble_size
        states = [feats[k] for k, on in (("obs", self.use[0]), ("next_obs", self.use[2])) if on]
        if len(states) == 2:  # one encoder pass for s and s': [.., 2, D_obs]
            z2 = self.encoder(torch.stack(states, -2), per_member=per_member)  # [E, *lead, 2, d]
            parts = [z2[..., 0, :], z2[..., 1, :]]
        else:
            parts = [self.encoder(states[0], per_member=per_member)]  # [E, *lead, d]
        lead = parts[0].shape[1:-1]
        if self.use[1]:
            a = feats["a"]
            parts.insert(1, a if per_member else a.unsqueeze(0).expand(e, *a.shape))
        if self.use[3]:
            done = feats["done"].unsqueeze(-1)
            parts.append(done if per_member else done.unsqueeze(0).expand(e, *done.shape))
        out = self.head(torch.cat(parts, -1), per_member=True)  # [E, *lead, K]
        if not self.action_heads:
            return out.squeeze(-1)
        flat = out.reshape(e, -1, out.shape[-1])  # [E, M, K]
        return self._pick(flat, feats, per_member).view(e, *lead)

    def l2_per_member(self) -> torch.Tensor:
        """``[E]`` squared weight norm of the reward path (encoder and head) of each member; the
        self-predictive modules are not part of the reward."""
        return self.encoder.l2_per_member() + self.head.l2_per_member()

    # ------------------------------------------------------------ self-prediction
    def self_predictive_parameters(self) -> Iterator[nn.Parameter]:
        """The parameters the self-predictive objective trains: encoder, dynamics, projection, prediction."""
        for m in (self.encoder, self.dynamics, self.projection, self.prediction):
            yield from m.parameters()

    def latent(self, obs: Batch, per_member: bool = False) -> torch.Tensor:
        """Encodings ``z`` ``[E, *lead, d]`` of raw observations ``[*lead, *obs_shape]``
        (``[E, *lead, *obs_shape]`` per member)."""
        return self.encoder(self._obs_features(obs), per_member=per_member)

    def self_predictive_loss(
        self, obs: Batch, acts: torch.Tensor, next_obs: Batch, per_member: bool = False
    ) -> torch.Tensor:
        """REED's next-latent loss of each member ``[E]``: the negative cosine similarity between
        the predicted next latent and the (stop-gradient) encoding of ``s'``, averaged over the
        transitions; from -1 (perfect) to 1.

        Args:
            obs: raw observations ``[B, *obs_shape]``, or ``[E, B, *obs_shape]`` with
                ``per_member`` (each member its own rows); a dict of such for Dict spaces.
            acts: actions ``[B, *act_shape]`` (``[E, B, *act_shape]``).
            next_obs: next observations, shaped as ``obs``.
            per_member: inputs carry a leading ``E`` dimension.
        """
        e = self.ensemble_size
        z = self.latent(obs, per_member)  # [E, B, d]
        a = encode_space(self.action_space, acts)  # [E?, B, D_act]
        a = a if per_member else a.unsqueeze(0).expand(e, *a.shape)
        z_hat = self.dynamics(torch.cat([z, a], -1), per_member=True)  # [E, B, d]
        p = self.prediction(self.projection(z_hat, per_member=True), per_member=True)  # [E, B, d]
        with torch.no_grad():
            target = self.projection(self.latent(next_obs, per_member), per_member=True)  # [E, B, d]
        return -F.cosine_similarity(p, target, dim=-1).reshape(e, -1).mean(-1)
