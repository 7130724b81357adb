"""A dictionary of an image reward's features: NMF of a convolution's activations over frames.

As the reward-interpretability work on CoinRun did, the non-negative activations
``A [N, C, h, w]`` of one convolution of a :class:`~prefrl.rewards.cnn.CNNReward` (one
ensemble member) over a frame dataset are factorised, every position of every frame a row,
``A[n, :, p] ≈ Σ_k coef[n, k, p] · components[k, :]`` with everything non-negative
(scikit-learn's NMF). Each feature ``k`` (a direction in channel space) is then shown by

- :func:`top_frames`: the frames where it is strongest, and :func:`feature_patches`: the
  receptive-field patch around its strongest position in them;
- :func:`feature_visualisation`: an input optimised to excite it (the reward synthesis of
  :func:`prefrl.interpret.attribution.synthesize`, with its total-variation and L2
  regularisers, maximising the feature's projection instead of the reward);
- :func:`reward_attribution`: how much of each frame's reward it accounts for: integrated
  gradients in activation space along ``α · Â`` (``Â`` the NMF reconstruction), split over the
  features and positions, so that per frame
  ``reward = baseline + Σ_k contribution_k + residual`` (``baseline`` the reward with the
  layer silenced, ``residual = r(A) − r(Â)`` what the reconstruction misses), up to the
  Riemann error of the integral.

Layers are convolutions counted from 0 (``-1``: the last). A layer's output is made
non-negative by subtracting its per-channel minimum over the frames where it can be negative
(no ReLU after it: the last convolution of a keypoint ("spatial") CNN, whose logits feed the
soft-argmax; other activations than ReLU), so every layer of every CNNReward has a dictionary.
A keypoint CNN that reads the next frame runs the same convolutions on ``s`` and ``s'``: its
dictionary is of ``s``'s activations (``s'``'s stay as they are in the attribution).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from tqdm.auto import tqdm

from prefrl.interpret.attribution import ImageInputs, synthesize
from prefrl.rewards.cnn import CNNReward
from prefrl.rewards.nets import RewardNet

CHUNK = 512
"""Frames per forward pass."""


@dataclass(frozen=True)
class FeatureDictionary:
    """NMF of one layer's activations over ``N`` frames (see the module docstring)."""

    components: np.ndarray
    """``[K, C]`` non-negative, each of unit norm: the features as directions in channel space."""
    coefficients: np.ndarray
    """``[N, K, h, w]`` non-negative: how strongly each feature is present at each position."""
    explained_variance: float
    """``1 − ‖A − Â‖² / ‖A − mean(A)‖²`` over all rows (positions of frames)."""
    layer: int
    """The convolution (counted from 0)."""
    member: int
    """The ensemble member whose activations were factorised."""
    floor: np.ndarray
    """``[C]`` what was subtracted from the layer's output to make it non-negative (0 after a ReLU)."""

    @property
    def n_features(self) -> int:
        return len(self.components)

    def strength(self) -> np.ndarray:
        """``[N, K]``: each feature's strongest activation in each frame (max over positions)."""
        return self.coefficients.max((2, 3))


# ---------------------------------------------------------------- the layer
def _conv_net(net: RewardNet) -> CNNReward:
    if not isinstance(net, CNNReward):
        raise ValueError(f"the feature dictionary needs a CNN reward (CNNReward), got {type(net).__name__}")
    return net


def resolve_layer(net: RewardNet, layer: int) -> int:
    """``layer`` as a convolution index in ``[0, n)`` (negative counts from the last)."""
    n = len(_conv_net(net).options.channels)
    if not -n <= layer < n:
        raise ValueError(f"--layer {layer} out of range: the reward CNN has {n} convolution(s) (0..{n - 1})")
    return layer % n


def _layer_module(net: CNNReward, layer: int) -> nn.Module:
    """The module whose output is convolution ``layer``'s activations (its activation, else itself)."""
    mods = list(net.conv)
    i = 2 * layer
    return mods[i + 1] if i + 1 < len(mods) and not isinstance(mods[i + 1], nn.Conv2d) else mods[i]


def _channels(net: CNNReward, layer: int, member: int) -> slice:
    c = net.options.channels[layer]
    return slice(0, c) if net.shared_trunk else slice(member * c, (member + 1) * c)


@contextmanager
def _hooked(net: CNNReward, layer: int, fn: Callable[[torch.Tensor], torch.Tensor | None]) -> Iterator[None]:
    h = _layer_module(net, layer).register_forward_hook(lambda _m, _i, out: fn(out))
    try:
        yield
    finally:
        h.remove()


def layer_output(net: RewardNet, images: torch.Tensor, layer: int, member: int = 0) -> torch.Tensor:
    """Convolution ``layer``'s output ``[M, C, h, w]`` for member ``member`` on float ``images``
    ``[M, C, H, W]`` (0-255, the ``"img"`` feature; of a keypoint CNN reading the next frame too,
    the current frame's part); differentiable."""
    cnn = _conv_net(net)
    layer = resolve_layer(net, layer)
    sl, got = _channels(cnn, layer, member), []
    x = (images[:, : cnn.obs_shape[0]] if cnn.motion else images) / 255.0
    if cnn.spatial and cnn.pool > 1:
        x = F.avg_pool2d(x, cnn.pool)
    if not cnn.shared_trunk and cnn.ensemble_size > 1:
        x = x.repeat(1, cnn.ensemble_size, 1, 1)

    def grab(out: torch.Tensor) -> None:
        got.append(out[:, sl])

    with _hooked(cnn, layer, grab):
        cnn.conv(x)
    return got[0]


def activations(
    net: RewardNet, inputs: ImageInputs, layer: int = -1, member: int = 0, progress: bool = False
) -> torch.Tensor:
    """Raw outputs ``[N, C, h, w]`` of convolution ``layer`` (member ``member``) on all frames."""
    out = []
    with torch.no_grad():
        for s in tqdm(range(0, len(inputs), CHUNK), desc="activations", disable=not progress, leave=False):
            out.append(layer_output(net, inputs.images[s : s + CHUNK].float(), layer, member))
    return torch.cat(out)


# ----------------------------------------------------------- the dictionary
def feature_dictionary(
    net: RewardNet,
    inputs: ImageInputs,
    layer: int = -1,
    n_features: int = 8,
    member: int = 0,
    seed: int = 0,
    max_iter: int = 400,
    progress: bool = False,
) -> FeatureDictionary:
    """NMF of convolution ``layer``'s non-negative activations over the frames of ``inputs``
    (from :func:`~prefrl.interpret.attribution.encode_images`) into ``n_features`` features."""
    from sklearn.decomposition import NMF
    from sklearn.exceptions import ConvergenceWarning

    if not 0 <= member < net.ensemble_size:
        raise ValueError(f"--member {member} out of range: the reward has {net.ensemble_size} member(s)")
    layer = resolve_layer(net, layer)
    raw = activations(net, inputs, layer, member, progress)  # [N, C, h, w]
    n, c, h, w = raw.shape
    if not 1 <= n_features <= c:
        raise ValueError(f"--features {n_features} out of range: layer {layer} has {c} channels (1..{c})")
    floor = raw.amin((0, 2, 3)).clamp_max(0.0)  # [C]: 0 after a ReLU
    x = (raw - floor.view(1, c, 1, 1)).permute(0, 2, 3, 1).reshape(-1, c).double().numpy()  # [N*h*w, C]
    nmf = NMF(n_features, init="nndsvda", max_iter=max_iter, random_state=seed, tol=1e-5)
    with warnings.catch_warnings():  # max_iter reached: the explained variance says how good it is
        warnings.simplefilter("ignore", ConvergenceWarning)
        coef = nmf.fit_transform(x)  # [N*h*w, K]
    comp = nmf.components_  # [K, C]
    norm = np.linalg.norm(comp, axis=1).clip(1e-12)
    comp, coef = comp / norm[:, None], coef * norm[None]
    order = np.argsort(-coef.mean(0), kind="stable")  # the most present feature first
    comp, coef = comp[order], coef[:, order]
    total = float(((x - x.mean(0)) ** 2).sum())
    ev = 1.0 - float(((x - coef @ comp) ** 2).sum()) / max(total, 1e-12)
    return FeatureDictionary(
        components=comp.astype(np.float32),
        coefficients=coef.reshape(n, h, w, -1).transpose(0, 3, 1, 2).astype(np.float32),
        explained_variance=ev,
        layer=layer,
        member=member,
        floor=floor.numpy().astype(np.float32),
    )


def top_frames(result: FeatureDictionary, k: int = 4) -> np.ndarray:
    """``[K, k]`` frame indices, each feature's strongest frames (max over positions) first."""
    s = result.strength()  # [N, K]
    return np.argsort(-s, axis=0, kind="stable")[: min(k, len(s))].T


def receptive_field(net: RewardNet, layer: int) -> tuple[int, int]:
    """(side, stride) in input pixels of one position of convolution ``layer``'s grid."""
    cnn = _conv_net(net)
    layer = resolve_layer(net, layer)
    side = jump = cnn.pool if cnn.spatial else 1
    for k, s in list(zip(cnn.options.kernels, cnn.options.strides))[: layer + 1]:
        side += (k - 1) * jump
        jump *= s
    return side, jump


def seen_images(net: RewardNet, images: torch.Tensor) -> torch.Tensor:
    """The part of ``"img"`` features ``[N, C, H, W]`` the dictionary's convolutions see: all of it,
    or the current frame's channels of a keypoint CNN that reads the next frame."""
    cnn = _conv_net(net)
    return images[:, : cnn.obs_shape[0]] if cnn.motion else images


def feature_patches(
    net: RewardNet, inputs: ImageInputs, result: FeatureDictionary, frames: np.ndarray
) -> np.ndarray:
    """The receptive-field patch around each feature's strongest position in ``frames [K, k]``
    (from :func:`top_frames`): ``[K, k, C, s, s]`` uint8 (:func:`seen_images`' channels; ``s`` the
    field's side, clipped to the image)."""
    side, jump = receptive_field(net, result.layer)
    img = seen_images(net, inputs.images).cpu().numpy()
    _, c, hh, ww = img.shape
    side = min(side, hh, ww)
    out = np.zeros((*frames.shape, c, side, side), np.uint8)
    h, w = result.coefficients.shape[2:]
    for f in range(frames.shape[0]):
        for j, i in enumerate(frames[f]):
            y, x = np.unravel_index(int(np.argmax(result.coefficients[i, f])), (h, w))
            y0, x0 = min(int(y) * jump, hh - side), min(int(x) * jump, ww - side)
            out[f, j] = img[i, :, y0 : y0 + side, x0 : x0 + side]
    return out


def feature_maps(result: FeatureDictionary, frames: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Coefficient maps of feature ``f`` on ``frames [K, k]``, upsampled to ``size``: ``[K, k, H, W]``."""
    k = np.arange(frames.shape[0])[:, None]
    maps = torch.as_tensor(result.coefficients[frames, k])  # [K, k, h, w]
    up = F.interpolate(maps.flatten(0, 1)[:, None], size=size, mode="bilinear", align_corners=False)
    return up[:, 0].reshape(*frames.shape, *size).numpy()


# ------------------------------------------------------------ visualisation
def feature_objective(
    net: RewardNet, result: FeatureDictionary, feature: int, n: int
) -> Callable[[torch.Tensor], torch.Tensor]:
    """Float images ``[n, C, H, W]`` (0-255) -> ``[n]``: feature ``feature``'s projection
    ``(A − floor) · component``, averaged over positions, in units of its largest coefficient
    over the dataset frames (so 1 is as strong as the dataset gets, on average over the grid)."""
    dev = net.device
    comp = torch.as_tensor(result.components[feature], device=dev).view(1, -1, 1, 1)
    floor = torch.as_tensor(result.floor, device=dev).view(1, -1, 1, 1)
    scale = max(float(result.coefficients[:, feature].max()), 1e-6)

    def objective(images: torch.Tensor) -> torch.Tensor:
        a = layer_output(net, images, result.layer, result.member) - floor
        return (a * comp).sum(1).mean((1, 2)) / scale

    return objective


def feature_visualisation(
    net: RewardNet,
    result: FeatureDictionary,
    feature: int,
    n: int = 1,
    steps: int = 200,
    tv: float = 0.3,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs ``[n, *observation_space.shape]`` uint8 that maximise feature ``feature`` (gradient
    ascent with :func:`~prefrl.interpret.attribution.synthesize`'s regularisers), and their
    objective values ``[n]`` (:func:`feature_objective`)."""
    if not 0 <= feature < result.n_features:
        raise ValueError(f"feature {feature} out of range: the dictionary has {result.n_features}")
    obj = feature_objective(net, result, feature, n)
    act = np.zeros(net.action_space.shape or (), net.action_space.dtype or np.int64)
    return synthesize(net, act, True, n, steps, tv=tv, seed=seed, objective=obj)


# --------------------------------------------------------------- attribution
@dataclass(frozen=True)
class RewardAttribution:
    """Each frame's reward split over the features (see the module docstring)."""

    reward: np.ndarray
    """``[N]`` the member's reward of each frame."""
    baseline: np.ndarray
    """``[N]`` the reward with the layer's (non-negative) activations at 0."""
    contributions: np.ndarray
    """``[N, K]`` each feature's part of ``r(Â) − baseline``."""
    spatial: np.ndarray
    """``[N, K, h, w]`` the same per position (sums to ``contributions``)."""
    residual: np.ndarray
    """``[N]`` ``r(A) − r(Â)``: what the reconstruction misses."""

    def shares(self) -> np.ndarray:
        """``[K]`` each feature's share of the total absolute contribution over all frames."""
        a = np.abs(self.contributions).sum(0)
        return a / max(float(a.sum()), 1e-12)


def _substituted_reward(
    net: CNNReward, inputs: ImageInputs, idx: torch.Tensor, acts: torch.Tensor, result: FeatureDictionary
) -> torch.Tensor:
    """Member reward ``[M]`` of transitions ``idx`` with the layer's output replaced by ``acts + floor``
    (a keypoint CNN reading the next frame runs its convolutions on ``s`` (the first ``M`` rows)
    and ``s'`` in one batch: only ``s``'s are replaced)."""
    sl = _channels(net, result.layer, result.member)
    floor = torch.as_tensor(result.floor, device=acts.device).view(1, -1, 1, 1)

    def put(out: torch.Tensor) -> torch.Tensor:
        new = out.clone()
        new[: len(acts), sl] = acts + floor
        return new

    # lead [M, 1]: clips of one step, so a keypoint CNN reading s' never takes s' from the next row
    f = {k: v[idx].unsqueeze(1) for k, v in inputs.feats.items()}
    f["img"] = f["img"].float()
    with _hooked(net, result.layer, put):
        return net.score(f)[result.member, :, 0]


def reward_attribution(
    net: RewardNet, inputs: ImageInputs, result: FeatureDictionary, steps: int = 16, progress: bool = False
) -> RewardAttribution:
    """Split each frame's reward (member ``result.member``) over the features."""
    cnn = _conv_net(net)
    dev = net.device
    comp = torch.as_tensor(result.components, device=dev)  # [K, C]
    coef = torch.as_tensor(result.coefficients, device=dev)  # [N, K, h, w]
    n = len(coef)
    if n != len(inputs):
        raise ValueError(f"the dictionary has {n} frames, the inputs {len(inputs)}")
    alphas = (torch.arange(steps, device=dev, dtype=torch.float32) + 0.5) / steps
    per = max(1, CHUNK // steps)
    spatial, r_full, r_zero, r_rec = [], [], [], []
    net.requires_grad_(False)
    try:
        for s in tqdm(range(0, n, per), desc="attribution", disable=not progress, leave=False):
            idx = torch.arange(s, min(n, s + per), device=dev)
            m = len(idx)
            rec = torch.einsum("nkhw,kc->nchw", coef[idx], comp)  # Â
            path = (alphas.view(-1, 1, 1, 1, 1) * rec[None]).flatten(0, 1).requires_grad_(True)
            r = _substituted_reward(cnn, inputs, idx.repeat(steps), path, result)
            (g,) = torch.autograd.grad(r.sum(), path)
            g = g.view(steps, m, *rec.shape[1:]).mean(0)  # [m, C, h, w]
            spatial.append(torch.einsum("nchw,kc,nkhw->nkhw", g, comp, coef[idx]))
            with torch.no_grad():
                r_rec.append(_substituted_reward(cnn, inputs, idx, rec, result))
                r_zero.append(_substituted_reward(cnn, inputs, idx, torch.zeros_like(rec), result))
                r_full.append(net.score({k: v[idx] for k, v in inputs.feats.items()})[result.member])
    finally:
        net.requires_grad_(True)
    sp = torch.cat(spatial).detach().cpu().numpy()
    full, rec_r = torch.cat(r_full).cpu().numpy(), torch.cat(r_rec).cpu().numpy()
    return RewardAttribution(
        reward=full,
        baseline=torch.cat(r_zero).cpu().numpy(),
        contributions=sp.sum((2, 3)),
        spatial=sp,
        residual=full - rec_r,
    )


def summary(
    result: FeatureDictionary,
    attribution: RewardAttribution,
    frames: np.ndarray,
    rows: np.ndarray | None = None,
) -> dict[str, Any]:
    """JSON-able facts of a dictionary: components, explained variance, each feature's top frames
    ``frames [K, k]`` (written as ``rows[frames]``: e.g. rows of a trajectory batch) and share of
    the reward."""
    s = result.strength()
    ids = frames if rows is None else rows[frames]
    shares = attribution.shares()
    return {
        "layer": result.layer,
        "member": result.member,
        "frames": len(result.coefficients),
        "explained_variance": result.explained_variance,
        "mean_reward": float(attribution.reward.mean()),
        "mean_baseline": float(attribution.baseline.mean()),
        "mean_residual": float(attribution.residual.mean()),
        "features": [
            {
                "component": result.components[k].tolist(),
                "top_frames": ids[k].tolist(),
                "top_strength": s[frames[k], k].tolist(),
                "mean_contribution": float(attribution.contributions[:, k].mean()),
                "share": float(shares[k]),
            }
            for k in range(result.n_features)
        ],
    }
