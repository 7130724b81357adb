"""The reward model's section of a run's config (``--reward.*``): one :class:`RewardNetConfig`
builds every default network, for ``prefrl train``, the preference wrapper and the sweeps."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from gymnasium import spaces

from prefrl.config_types import OptBool, OptInts
from prefrl.rewards.cnn import CNNOptions, CNNReward, cnn_architecture, is_small_image
from prefrl.rewards.mlp import MLPReward
from prefrl.rewards.nets import RewardNet
from prefrl.rewards.reed import ReedReward
from prefrl.rewards.spaces import is_image_space


@dataclass(frozen=True)
class RewardNetConfig:
    """The reward model (an ensemble of MLPs, or of CNNs for image observations)."""

    kind: Literal["auto", "mlp", "cnn", "reed"] = "auto"
    """Network: auto (cnn for uint8 image observations [H, W, C] or [C, H, W], frame stacks included;
    mlp otherwise, Dict observations included), mlp, cnn, or reed (REED, Metcalf et al. 2024: on vectors
    each member encodes states into a latent z, its reward MLP reads z(s), the action and z(s'); on
    images it is the CNN reward whose image features are that latent; prefrl train's loop trains the
    encoder before every reward update to predict the next latent from z(s) and the action on the
    transitions the agent has seen, see --trainer.self-predictive; see docs/techniques.md)."""
    hidden: list[int] = field(default_factory=lambda: [64, 64])
    """Hidden layer sizes of the MLP (REED: of the reward head over the encoded states)."""
    reed_latent_dim: int = 64
    """REED (--reward.kind reed): size of the latent state encoding z (and of the one hidden layer of
    the state encoder and of the next-latent predictor)."""
    cnn_channels: OptInts = None
    """CNN: output channels of each convolution (None: by image size, see --reward.cnn-hidden)."""
    cnn_kernels: OptInts = None
    """CNN: kernel size of each convolution (None: by image size; reduced where images are too small)."""
    cnn_strides: OptInts = None
    """CNN: stride of each convolution (None: by image size; reduced where images are too small)."""
    cnn_hidden: OptInts = None
    """CNN: hidden layer sizes after the convolutions. None picks the CNN by image size: sides up to 64
    px (e.g. the 40x40 moving dot) get channels 16 16, kernels 3 3, strides 2 1, hidden 64 with spatial
    features (channels 8 16, kernels 4 3, strides 4 2, hidden 32 with flat ones); larger images (Atari's
    84x84) channels 16 32 32, kernels 8 4 3, strides 4 2 1, hidden 64."""
    cnn_features: Literal["auto", "flat", "spatial"] = "auto"
    """CNN: what the convolutions hand to the head: flat (every position's activations) or spatial
    (each channel's soft-argmax: where things are, see docs/core.md). auto: spatial for images up to
    64 px a side, flat above; written to config.json as the one chosen."""
    cnn_shared_trunk: bool = False
    """CNN with flat features: the members share one set of convolutions and differ in their heads
    (and, in training, in per-member bootstrap weights on one shared batch), so the ensemble costs
    one convolution pass instead of one per member; off: each member has its own convolutions."""
    ensemble_size: int = 3
    """Ensemble members (>= 2 for disagreement-based active selection)."""
    use_obs: bool = True
    """Reward reads the observation."""
    use_act: bool = True
    """Reward reads the action."""
    use_next_obs: OptBool = None
    """Reward reads the next observation s' (flat CNN: stacked onto the current image along channels;
    keypoint CNN: the keypoints of s and their displacement to s'; REED: the encoding of s'). None
    (auto): on for the MLP, REED and the keypoint CNN, off for the flat CNN, written to config.json as
    the one chosen (why: docs/benchmarks/reward-inputs.md)."""
    use_done: bool = False
    """Reward reads the terminal flag."""
    action_heads: OptBool = None
    """Discrete actions: one reward output per action, the taken action's is the reward (r(s, a) = f(s)[a],
    as a DQN's Q-values) instead of a one-hot action input. None (auto): on for a CNN reward with a
    Discrete action that does not read the keypoints' displacement, off where it does (the
    displacement says what the action did) and for the MLP; written to config.json as the one
    chosen. See docs/core.md; why: docs/benchmarks/defaults.md."""
    absorbing: Literal["learned", "median"] = "learned"
    """What the absorbing state after an episode's end is worth in training. learned: one scalar per
    member fitted to the labels like any weight (where clips that end win, the win can be credited
    to the end instead of the steps before it). median: a typical step, the median of the real
    steps' rewards in each batch, so every win and loss is credited to the steps themselves (pairs
    with --loop.end-value median, which tells the agent an end is worth its typical step; see
    docs/benchmarks/pixels.md, "An end worth a typical step, in training too")."""
    output: Literal["auto", "linear", "tanh"] = "auto"
    """Per-step reward output: tanh (bounded to (-1, 1), as in B-Pref: a state no label covers cannot
    pay more than the states the labels favour), linear (unbounded), or auto: tanh when random actions
    end an episode by termination within the first --loop.initial-steps steps, else linear, and
    linear for a CNN over flat image features (whose tanh saturated for good on Pong) (written
    to config.json as the one chosen). See docs/core.md."""

    def _output(self) -> str:
        return "linear" if self.output == "auto" else self.output

    def resolved_kind(self, obs_space: spaces.Space[object]) -> Literal["mlp", "cnn", "reed"]:
        """``kind`` with ``auto`` decided by the observation space."""
        if self.kind == "auto":
            return "cnn" if is_image_space(obs_space) else "mlp"
        return self.kind

    def is_cnn(self, obs_space: spaces.Space[object]) -> bool:
        """The network is a CNN: ``kind`` cnn (or auto on images), or REED on images (the CNN
        with its self-predictive heads)."""
        kind = self.resolved_kind(obs_space)
        return kind == "cnn" or (kind == "reed" and is_image_space(obs_space))

    def resolve_cnn_features(self, obs_space: spaces.Space[object]) -> Literal["flat", "spatial"]:
        """``cnn_features="auto"``: keypoints (spatial) for small images, where a reward is about
        where objects are (the moving dot: held-out accuracy 0.53 -> 0.68 offline), flat above."""
        if self.cnn_features != "auto":
            return self.cnn_features
        return "spatial" if is_image_space(obs_space) and is_small_image(obs_space) else "flat"

    def resolve_next_obs(self, obs_space: spaces.Space[object]) -> bool:
        """``use_next_obs=None`` (auto): the MLP and the keypoint CNN read s', the flat CNN does not
        (not measured there, and a stacked frame would take it off the NumPy per-step path). The
        keypoint CNN then reads where things moved: a step that moves nothing (standing still,
        pushing into a wall) looks the same whatever the action, which is what a reward for
        progress needs."""
        if not self.is_cnn(obs_space):  # the MLP; REED on vectors reads z(s'), the encoded s'
            return True
        return self.resolve_cnn_features(obs_space) == "spatial"

    def resolve_action_heads(self, obs_space: spaces.Space[object], act_space: spaces.Space[object]) -> bool:
        """``action_heads=None`` (auto): on where a CNN reward reads a Discrete action and not the
        keypoints' displacement. Its head is one hidden layer over image features, where a one-hot
        action input can only shift the hidden units; the displacement already says what the
        action did (measured: heads then score the best action less often); the MLP's two hidden
        layers mix the action in (measured: no gain there)."""
        if self.action_heads is not None:
            return self.action_heads
        discrete = isinstance(act_space, spaces.Discrete)
        if not self.is_cnn(obs_space) or not self.use_act or not discrete:
            return False
        motion = self.resolve_cnn_features(obs_space) == "spatial" and (
            self.resolve_next_obs(obs_space) if self.use_next_obs is None else self.use_next_obs
        )
        return not motion

    def resolved(self, obs_space: spaces.Space[object], act_space: spaces.Space[object]) -> RewardNetConfig:
        """A copy with the choices the spaces decide made (``use_next_obs``, ``cnn_features``,
        ``action_heads``); ``output="auto"`` needs an environment to probe and stays (``prefrl
        train`` resolves it, :func:`~prefrl.run.resolve.resolve_reward_output`; :meth:`build`
        reads it as linear). ``prefrl train`` and the preference wrapper build their default
        networks through this one method."""
        next_obs = self.resolve_next_obs(obs_space) if self.use_next_obs is None else self.use_next_obs
        return dataclasses.replace(
            self,
            use_next_obs=next_obs,
            cnn_features=self.resolve_cnn_features(obs_space),
            action_heads=self.resolve_action_heads(obs_space, act_space),
        )

    def build(self, obs_space: spaces.Space[object], act_space: spaces.Space[object]) -> RewardNet:
        """The network; an unresolved ``output="auto"`` (no environment was probed, see
        :func:`resolve_reward_output`) builds the linear output."""
        net = self._network(obs_space, act_space)
        net.set_absorbing(self.absorbing)
        return net

    def _network(self, obs_space: spaces.Space[object], act_space: spaces.Space[object]) -> RewardNet:
        """The network of ``kind`` with its options (the absorbing mode is set by :meth:`build`)."""
        kind = self.resolved_kind(obs_space)
        use_next_obs = bool(self.use_next_obs)  # unresolved auto (runs that predate it): off
        heads = bool(self.action_heads)  # unresolved auto (runs that predate it): off
        if self.is_cnn(obs_space):
            if not is_image_space(obs_space):
                raise ValueError(
                    "--reward.kind cnn needs uint8 image observations [H, W, C] or [C, H, W], "
                    f"got {obs_space}"
                )
            if not self.use_obs:
                raise ValueError(
                    "the CNN reward always reads the observation; drop --reward.no-use-obs or use "
                    "--reward.kind mlp"
                )
            features = "flat" if self.cnn_features == "auto" else self.cnn_features  # unresolved: as before
            arch = cnn_architecture(
                obs_space,
                self.cnn_channels,
                self.cnn_kernels,
                self.cnn_strides,
                self.cnn_hidden,
                features=features,
            )
            options = CNNOptions(
                channels=arch["channels"],
                kernels=arch["kernels"],
                strides=arch["strides"],
                hidden=arch["hidden"],
                use_act=self.use_act,
                use_done=self.use_done,
                use_next_obs=use_next_obs,
                output=self._output(),
                features=features,
                action_heads=heads,
                shared_trunk=self.cnn_shared_trunk,
                self_predictive=kind == "reed",
                self_predictive_dim=self.reed_latent_dim,
            )
            return CNNReward(obs_space, act_space, ensemble_size=self.ensemble_size, options=options)
        vector: dict[str, Any] = {  # the MLP's and REED's options
            "hidden": tuple(self.hidden),
            "ensemble_size": self.ensemble_size,
            "use_obs": self.use_obs,
            "use_act": self.use_act,
            "use_next_obs": use_next_obs,
            "use_done": self.use_done,
            "output": self._output(),
            "action_heads": heads,
        }
        if kind == "reed":
            return ReedReward(obs_space, act_space, latent_dim=self.reed_latent_dim, **vector)
        return MLPReward(obs_space, act_space, **vector)
