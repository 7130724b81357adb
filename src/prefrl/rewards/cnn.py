"""The CNN reward network for image observations, and the layer sizes it gets by image size."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from gymnasium import spaces
from torch import nn
from torch.nn import functional as F

from prefrl.data.json_types import JSONObject
from prefrl.rewards.layers import ACTIVATIONS, EnsembleMLP, soft_argmax, standardize_maps
from prefrl.rewards.nets import Array, Batch, Features, RewardNet, to_tensor
from prefrl.rewards.spaces import channels_first, encode_space, flat_dim, is_image_space, space_to_json

SMALL_IMAGE = 64
"""Images with both sides at most this many pixels get the small reward CNN."""


def is_small_image(obs_space: spaces.Space[object]) -> bool:
    """Both image sides at most :data:`SMALL_IMAGE` pixels (HWC or CHW)."""
    shape = tuple(obs_space.shape or ())  # an image space: never None
    hw = shape[1:] if channels_first(shape) else shape[:2]
    return max(hw) <= SMALL_IMAGE


def cnn_architecture(
    obs_space: spaces.Space[object],
    channels: Sequence[int] | None = None,
    kernels: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
    hidden: Sequence[int] | None = None,
    features: str = "flat",
) -> dict[str, tuple[int, ...]]:
    """:class:`CNNReward` layer sizes for ``obs_space``'s images (``None``: chosen by image size).

    Sides up to :data:`SMALL_IMAGE` pixels (e.g. the 40x40 moving dot) get two strided
    convolutions with 8 and 16 channels (kernels 4, 3; strides 4, 2) and one hidden layer of
    32, cheap enough for a per-step reward on 2 cores; with ``features="spatial"`` (any size)
    one 1x1 convolution of 8 channels (learned per-pixel mixtures of the colours) and 64
    hidden units. Larger images (Atari's 84x84) get
    channels 16 32 32, kernels 8 4 3, strides 4 2 1 and 64 hidden units. While the last
    convolution would get an empty input, the largest stride (then kernel) is reduced by one.

    Returns:
        keyword arguments ``channels``, ``kernels``, ``strides``, ``hidden`` of CNNReward.
    """
    if not is_image_space(obs_space):
        raise ValueError(
            f"a CNN reward needs uint8 image observations [H, W, C] or [C, H, W], got {obs_space}"
        )
    shape = tuple(obs_space.shape or ())  # an image space: never None
    hw = shape[1:] if channels_first(shape) else shape[:2]
    arch: dict[str, tuple[int, ...]]
    if features == "spatial":
        arch = {"channels": (8,), "kernels": (1,), "strides": (1,), "hidden": (64,)}
    elif max(hw) <= SMALL_IMAGE:
        arch = {"channels": (8, 16), "kernels": (4, 3), "strides": (4, 2), "hidden": (32,)}
    else:
        arch = {"channels": (16, 32, 32), "kernels": (8, 4, 3), "strides": (4, 2, 1), "hidden": (64,)}
    given = {"channels": channels, "kernels": kernels, "strides": strides, "hidden": hidden}
    arch.update({k: tuple(v) for k, v in given.items() if v is not None})
    k, s = list(arch["kernels"]), list(arch["strides"])
    if len(k) != len(s):
        raise ValueError(f"CNN kernels {k} and strides {s} differ in length")

    def out(n: int) -> int:
        for ki, si in zip(k, s):
            n = (n - ki) // si + 1
        return n

    while out(min(hw)) < 1:
        i = max(range(len(s)), key=lambda j: (s[j], k[j]))
        if s[i] > 1:
            s[i] -= 1
        elif max(k) > 1:
            k[k.index(max(k))] -= 1
        else:
            break
    arch["kernels"], arch["strides"] = tuple(k), tuple(s)
    return arch


@dataclass(frozen=True)
class CNNOptions:
    """Everything that shapes a :class:`CNNReward` besides its spaces and ensemble size (the
    one place these options are listed: the network, its saved config and
    :meth:`~prefrl.rewards.config.RewardNetConfig.build` all go through it)."""

    channels: tuple[int, ...] = (16, 32, 32)
    """Output channels of each convolution (one per layer)."""
    kernels: tuple[int, ...] = (8, 4, 3)
    """Kernel size of each convolution."""
    strides: tuple[int, ...] = (4, 2, 1)
    """Stride of each convolution."""
    hidden: tuple[int, ...] = (64,)
    """Hidden layer sizes of the head after the convolutions."""
    use_act: bool = True
    """The reward reads the action."""
    use_done: bool = False
    """The reward reads the terminal flag."""
    activation: str = "relu"
    """Activation after each layer (a key of :data:`~prefrl.rewards.layers.ACTIVATIONS`)."""
    chw: bool | None = None
    """Images are channels-first; None: decided by the observation space's shape."""
    use_next_obs: bool = False
    """The reward reads the next image too (see :class:`CNNReward`)."""
    output: str = "linear"
    """Per-step output: linear or tanh."""
    features: str = "flat"
    """What the head reads: flat (every position's activations) or spatial (keypoints)."""
    action_heads: bool = False
    """Discrete actions: one output per action instead of a one-hot action input."""
    shared_trunk: bool = False
    """The members share one set of convolutions (flat features only) and differ in their heads:
    a batch of images costs one convolution pass instead of one per member."""
    self_predictive: bool = False
    """REED on images: next to the reward, a dynamics predictor, a projection and a prediction
    MLP over the features of one image, which the loop trains on unlabelled transitions to
    predict the next image's features from this one's and the action (see :class:`CNNReward`).
    Needs a network that reads one image at a time: keypoints, or flat features without
    ``use_next_obs``."""
    self_predictive_dim: int = 64
    """Width of the self-predictive MLPs' hidden layer and of the projected space."""

    def __post_init__(self) -> None:
        for name in ("channels", "kernels", "strides", "hidden"):
            object.__setattr__(self, name, tuple(int(v) for v in getattr(self, name)))
        if self.features not in ("flat", "spatial"):
            raise ValueError(f"CNNReward features must be 'flat' or 'spatial', got {self.features!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"CNNReward activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}"
            )
        if not len(self.channels) == len(self.kernels) == len(self.strides):
            raise ValueError("channels, kernels and strides must have the same length")
        if self.shared_trunk and self.features != "flat":
            raise ValueError("a shared trunk goes with flat features; keypoints are per member")
        if self.self_predictive and self.use_next_obs and self.features == "flat":
            raise ValueError(
                "the self-predictive objective needs a CNN that reads one image at a time: keypoint "
                "features (--reward.cnn-features spatial), or flat features without --reward.use-next-obs"
            )
        if self.self_predictive_dim < 1:
            raise ValueError(f"self_predictive_dim must be >= 1, got {self.self_predictive_dim}")

    def to_json(self) -> JSONObject:
        """The options as JSON values (tuples as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


class CNNReward(RewardNet):
    """An ensemble of small CNNs for ``uint8`` image observations (HWC or CHW).

    Pixels are scaled to [0, 1] inside the network. All members run as one grouped
    convolution (``groups=E``), so the ensemble costs one pass. Actions (and done flags)
    join after the convolutions when used. With ``use_next_obs`` the next image is stacked
    onto the current one along channels (``[2C, H, W]``), so the first convolution sees what
    the step changed (a reward for progress, say, rather than for a place).

    ``features="spatial"`` reads keypoints instead of a flattened grid (as the agent's
    :class:`prefrl.agents.policies.SpatialSoftmaxCNN`): the image is average-pooled 2x2 (images
    of 16 pixels or more), and each of its channels and of the convolutions' output channels
    (no activation after the last) is standardised over its positions and becomes the expected
    (x, y) of its softmax, sharpened by a learned per-map factor; the head reads
    ``2 * (C + channels[-1])`` coordinates: where things are, which is what rewards on small
    images of objects (a dot and its target) depend on. Standardising makes a small object
    stand out from the first update (a 3x3 dot sits ~10 standard deviations above a 20x20 map).

    With ``features="spatial"`` and ``use_next_obs`` the two images are not stacked: the same
    convolutions find the keypoints of ``s`` and of ``s'``, and the head reads ``kp(s)`` and the
    displacement ``kp(s') - kp(s)`` (in cells of the last convolution's grid), i.e. where
    things are and how the step moved them. A step that moves nothing (standing still, or
    pushing into a wall) then has displacement 0 whatever the action was, so the reward can
    tell a move from a push without ever seeing that push in a labelled clip.

    ``action_heads`` (Discrete actions): one output per action instead of a one-hot action
    input, as in :class:`MLPReward`.
    """

    def __init__(
        self,
        observation_space: spaces.Space[object],
        action_space: spaces.Space[object],
        ensemble_size: int = 1,
        options: CNNOptions | None = None,
        **overrides: Any,
    ) -> None:
        """``options``: the network's :class:`CNNOptions` (default: its defaults); keyword
        ``overrides`` replace single fields of it (``CNNReward(obs, act, features="spatial")``)."""
        super().__init__()
        o = options or CNNOptions()
        if overrides:
            unknown = sorted(set(overrides) - {f.name for f in dataclasses.fields(CNNOptions)})
            if unknown:
                raise TypeError(f"CNNReward has no option(s) {', '.join(unknown)}")
            o = dataclasses.replace(o, **overrides)
        if not is_image_space(observation_space):
            raise ValueError(
                f"CNNReward needs a uint8 image Box observation space (HWC or CHW), "
                f"got {observation_space}; use MLPReward for vector observations"
            )
        self.observation_space, self.action_space = observation_space, action_space
        n_out = self._head_outputs(o.action_heads, o.use_act)
        self.ensemble_size, self.use_act, self.use_done = ensemble_size, o.use_act, o.use_done
        self.use_next_obs = o.use_next_obs
        shape = tuple(observation_space.shape or ())  # an image space: never None
        self.chw = channels_first(shape) if o.chw is None else o.chw
        self.options = dataclasses.replace(o, chw=self.chw)
        c, h, w = shape if self.chw else (shape[2], shape[0], shape[1])
        self.obs_shape = (c, h, w)
        self.spatial = o.features == "spatial"
        self.motion = self.spatial and o.use_next_obs  # keypoints of s and s', not stacked images
        c *= 1 + int(o.use_next_obs and not self.motion)
        e = ensemble_size
        self.shared_trunk = o.shared_trunk
        g = 1 if o.shared_trunk else e  # convolution groups: one per member, or one for all
        layers: list[nn.Module] = []
        in_c = c
        for out_c, k, s in zip(o.channels, o.kernels, o.strides):
            layers += [nn.Conv2d(in_c * g, out_c * g, k, s, groups=g), ACTIVATIONS[o.activation]()]
            in_c = out_c
        self.pool = 2 if self.spatial and min(h, w) >= 16 else 1
        if self.spatial:
            layers.pop()  # the soft-argmax reads the last convolution's logits
            self.maps = c + in_c  # keypoints of the (pooled) input channels and of the conv outputs
            self.sharpness = nn.Parameter(torch.ones(e * self.maps))
        self.conv = nn.Sequential(*layers)
        with torch.no_grad():
            grid = self.conv(torch.zeros(1, c * g, h // self.pool, w // self.pool))
        n_flat = grid.flatten(1).shape[1] // g
        self.cells = 0.5 * (max(grid.shape[-2:]) - 1)  # keypoint units in [-1, 1] -> grid cells
        n_image = n_flat  # features of one image (flat features read one unless use_next_obs)
        if self.spatial:
            n_image = 2 * self.maps
            n_flat = n_image * (1 + int(self.motion))
        d_vec = flat_dim(action_space) * (o.use_act and not o.action_heads) + int(o.use_done)
        self.head = EnsembleMLP(e, n_flat + d_vec, o.hidden, n_out, o.activation)
        self._init_reward_head(e, o.output)
        self.has_self_predictive = o.self_predictive
        if o.self_predictive:
            d, width = o.self_predictive_dim, [o.self_predictive_dim]
            self.dynamics = EnsembleMLP(e, n_image + flat_dim(action_space), width, n_image, o.activation)
            self.projection = EnsembleMLP(e, n_image, width, d, o.activation)
            self.prediction = EnsembleMLP(e, d, width, d, o.activation)
        self.image_shape = (c, h, w)
        self._config = {
            "observation_space": space_to_json(observation_space),
            "action_space": space_to_json(action_space),
            "ensemble_size": ensemble_size,
            **self.options.to_json(),
        }

    @torch.no_grad()
    def encode(self, obs: Batch, acts: torch.Tensor, next_obs: Batch, dones: torch.Tensor) -> Features:
        if not isinstance(obs, torch.Tensor) or not isinstance(next_obs, torch.Tensor):
            raise TypeError("CNNReward reads image tensors, got a dict of observations")
        if obs.dtype != torch.uint8:
            raise ValueError(f"CNNReward expects uint8 images, got {obs.dtype}")
        img = obs if self.chw else obs.movedim(-1, -3)  # [*lead, C, H, W]
        if tuple(img.shape[-3:]) != self.obs_shape:
            raise ValueError(f"images of shape {tuple(obs.shape)} do not match {self.obs_shape}")
        if self.use_next_obs:
            nxt = next_obs if self.chw else next_obs.movedim(-1, -3)
            img = torch.cat([img, nxt], -3)  # [*lead, 2C, H, W]
        feats: Features = {"img": img}
        parts = []
        if self.action_heads:
            feats["act"] = self._action_index(acts)
        elif self.use_act:
            parts.append(encode_space(self.action_space, acts))
        if self.use_done:
            parts.append(dones.float().unsqueeze(-1))
        if parts:
            feats["vec"] = torch.cat(parts, -1)
        return feats

    def _score(self, feats: Features, per_member: bool = False) -> torch.Tensor:
        img, e = feats["img"], self.ensemble_size
        z, lead = self._motion(img, per_member) if self.motion else self._image_features(img, per_member)
        z = z.reshape(e, -1, z.shape[-1])  # [E, M, F]
        if "vec" in feats:
            v = feats["vec"]
            v = v.reshape(e, -1, v.shape[-1]) if per_member else v.reshape(1, -1, v.shape[-1])
            z = torch.cat([z, v.expand(e, -1, -1)], -1)
        return self._pick(self.head(z, per_member=True), feats, per_member).reshape(e, *lead)

    def _image_features(self, img: torch.Tensor, per_member: bool) -> tuple[torch.Tensor, tuple[int, ...]]:
        """uint8 images ``[(E,) *lead, C, H, W]`` (``E``: one per member with ``per_member``) ->
        (``[E, *lead, F]`` features, ``lead``): keypoints, or the flattened last grid."""
        e, (c, h, w) = self.ensemble_size, img.shape[-3:]
        if self.shared_trunk:  # one pass for all members (each member's own images with per_member)
            lead = tuple(img.shape[int(per_member) : -3])
            z = self.conv(img.reshape(-1, c, h, w).float().mul_(1.0 / 255.0)).flatten(1)  # [(E*)M, F]
            z = z.view(e, -1, z.shape[-1]) if per_member else z.unsqueeze(0).expand(e, -1, -1)
            return z.reshape(e, *lead, -1), lead
        if per_member:
            lead = tuple(img.shape[1:-3])
            x = img.reshape(e, -1, c, h, w).transpose(0, 1).reshape(-1, e * c, h, w)
        else:
            lead = tuple(img.shape[:-3])
            x = img.reshape(-1, c, h, w)
            x = x.repeat(1, e, 1, 1) if e > 1 else x
        x = x.float().mul_(1.0 / 255.0)
        z = (
            self._keypoints(x) if self.spatial else self.conv(x).flatten(1).view(x.shape[0], e, -1)
        )  # [M, E, F]
        return z.transpose(0, 1).reshape(e, *lead, -1), lead

    def _motion(self, img: torch.Tensor, per_member: bool) -> tuple[torch.Tensor, tuple[int, ...]]:
        """Stacked ``[(E,) *lead, 2C, H, W]`` (s, s') -> (``[E, *lead, 2F]``: kp(s) and
        (kp(s') - kp(s)) in grid cells, ``lead``).

        Where the last lead dimension is a clip's steps and each ``s'`` is the next step's
        ``s`` (always so within a clip, until an episode's end), each frame is located once:
        ``L + 1`` frames per clip instead of ``2L`` (checked on the data, so exact in any case).
        """
        c = self.obs_shape[0]
        now, nxt = img[..., :c, :, :], img[..., c:, :, :]
        lead = tuple(img.shape[int(per_member) : -3])
        if len(lead) and lead[-1] >= 2 and torch.equal(now[..., 1:, :, :, :], nxt[..., :-1, :, :, :]):
            z, _ = self._image_features(torch.cat([now, nxt[..., -1:, :, :, :]], -4), per_member)
            z_now, z_next = z[..., :-1, :], z[..., 1:, :]  # [E, *lead, F] each
        else:
            z, _ = self._image_features(torch.stack([now, nxt], int(per_member)), per_member)
            z_now, z_next = z[:, 0], z[:, 1]
        return torch.cat([z_now, (z_next - z_now) * self.cells], -1), lead

    @torch.no_grad()
    def keypoints(self, obs: Array) -> torch.Tensor:
        """Keypoint features (``features="spatial"``) of raw images ``[*lead, H, W, C]`` (or CHW):
        ``[E, *lead, maps, 2]`` (x, y) in [-1, 1], the input channels' first, then the convolutions'."""
        if not self.spatial:
            raise ValueError("keypoints need a keypoint CNN (features='spatial')")
        img = to_tensor(obs, self.device)
        img = img if self.chw else img.movedim(-1, -3)
        lead, (c, h, w), e = img.shape[:-3], self.obs_shape, self.ensemble_size
        x = img.reshape(-1, c, h, w).float().mul_(1.0 / 255.0).repeat(1, e, 1, 1)
        kp = self._keypoints(x)  # [M, E, maps*2]
        return kp.view(-1, e, self.maps, 2).transpose(0, 1).reshape(e, *lead, self.maps, 2)

    def displacement(self, obs: Array, next_obs: Array) -> torch.Tensor:
        """``[E, *lead, maps, 2]``: how far each keypoint moved from ``obs`` to ``next_obs``, in cells
        of the keypoint grid (what the head reads with ``use_next_obs``)."""
        return (self.keypoints(next_obs) - self.keypoints(obs)) * self.cells

    def _keypoints(self, x: torch.Tensor) -> torch.Tensor:
        """Images ``[M, E*C, H, W]`` in [0, 1] (each member's copy) -> ``[M, E, 2 * (C + C')]``: the
        pooled, standardised input channels' and conv outputs' soft-argmax (x, y), member by member."""
        x = F.avg_pool2d(x, self.pool) if self.pool > 1 else x
        m, e = x.shape[0], self.ensemble_size
        sharp = self.sharpness.view(e, self.maps)
        c = x.shape[1] // e
        kps = []
        for maps, s in ((x, sharp[:, :c]), (self.conv(x), sharp[:, c:])):  # grids may differ in size
            kp = soft_argmax(standardize_maps(maps) * s.reshape(1, -1, 1, 1))  # [M, E*n, 2]
            kps.append(kp.view(m, e, -1, 2))
        return torch.cat(kps, 2).view(m, e, -1)

    # ------------------------------------------------------------ self-prediction (REED on images)
    def l2_per_member(self) -> torch.Tensor:
        """``[E]`` squared weight norm of each member's reward head (the self-predictive MLPs are
        not part of the reward)."""
        return self.head.l2_per_member()

    def self_predictive_parameters(self) -> Iterator[nn.Parameter]:
        """What the self-predictive objective trains: the convolutions (and keypoint sharpness),
        the dynamics predictor, the projection and the prediction MLPs."""
        if not self.has_self_predictive:
            raise ValueError("this CNN reward was built without self_predictive")
        yield from self.conv.parameters()
        if self.spatial:
            yield self.sharpness
        for m in (self.dynamics, self.projection, self.prediction):
            yield from m.parameters()

    def latent(self, obs: Array, per_member: bool = False) -> torch.Tensor:
        """Features ``[E, *lead, F]`` of one image each: raw uint8 images ``[*lead, H, W, C]`` (or
        CHW; ``[E, *lead, ...]`` per member): keypoints, or the flattened last grid."""
        img = to_tensor(obs, self.device)
        if img.dtype != torch.uint8:
            raise ValueError(f"CNNReward expects uint8 images, got {img.dtype}")
        img = img if self.chw else img.movedim(-1, -3)
        return self._image_features(img, per_member)[0]

    def self_predictive_loss(
        self, obs: Array, acts: Array, next_obs: Array, per_member: bool = False
    ) -> torch.Tensor:
        """REED's next-latent loss of each member ``[E]``, on images: the negative cosine
        similarity between the projected prediction of the next image's features (from this
        image's features and the action) and the projected features of the real next image
        (stop-gradient), averaged over the transitions; from -1 (perfect) to 1.

        Args:
            obs, next_obs: uint8 images ``[B, H, W, C]`` (or CHW), ``[E, B, ...]`` with ``per_member``.
            acts: actions ``[B, *act_shape]`` (``[E, B, ...]``).
            per_member: inputs carry a leading ``E`` dimension (each member its own rows).
        """
        e = self.ensemble_size
        z = self.latent(obs, per_member)  # [E, B, F]
        a = encode_space(self.action_space, to_tensor(acts, self.device))  # [E?, B, D_act]
        a = a if per_member else a.unsqueeze(0).expand(e, *a.shape)
        z_hat = self.dynamics(torch.cat([z, a.to(z.dtype)], -1), per_member=True)  # [E, B, F]
        p = self.prediction(self.projection(z_hat, per_member=True), per_member=True)  # [E, B, d]
        with torch.no_grad():
            target = self.projection(self.latent(next_obs, per_member), per_member=True)  # [E, B, d]
        return -F.cosine_similarity(p, target, dim=-1).reshape(e, -1).mean(-1)
