"""Which pixels drive an image reward, which transitions it likes most, what it would love to see.

Works on reward networks whose features hold the image under ``"img"`` (``CNNReward``:
``[*lead, C, H, W]`` uint8, scaled to [0, 1] inside ``score``). Attributions are taken
with respect to pixel values on the 0-255 scale and returned as ``[N, C, H, W]``;
:func:`heatmap` reduces them to ``[N, H, W]``.

- :func:`gradient_saliency`: ``∂r/∂x``.
- :func:`integrated_gradients`: ``(x − x₀) · mean_α ∂r/∂x(x₀ + α(x − x₀))``; its sum over
  pixels equals ``r(x) − r(x₀)`` (completeness) up to the Riemann error.
- :func:`occlusion`: the drop in reward when a patch is replaced by a fill value,
  averaged over the patches covering each pixel.
- :func:`extremes`: the dataset transitions with the highest and lowest reward.
- :func:`synthesize`: observations maximising (or minimising) the reward by gradient
  ascent on the input, regularised by total variation and an L2 pull towards grey.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from prefrl.data.trajectories import TrajectoryBatch
from prefrl.interpret.evaluation import predicted_rewards
from prefrl.interpret.plots import new_figure, save_figure
from prefrl.rewards.nets import Features, RewardNet, to_tensor

IMAGE_KEY = "img"


@dataclass(frozen=True)
class ImageInputs:
    """Encoded transitions: ``feats`` (``[N, ...]`` each), images ``feats["img"]`` ``[N, C, H, W]`` uint8."""

    feats: Features

    @property
    def images(self) -> torch.Tensor:
        return self.feats[IMAGE_KEY]

    def __len__(self) -> int:
        return len(self.images)


def encode_images(
    net: RewardNet, obs: Any, acts: Any, next_obs: Any = None, dones: Any = None
) -> ImageInputs:
    """Encode ``N`` transitions (``obs [N, *image]`` uint8) of an image reward network."""
    dev = net.device
    obs = to_tensor(obs, dev)
    acts = to_tensor(acts, dev)
    next_obs = obs if next_obs is None else to_tensor(next_obs, dev)
    dones = torch.zeros(len(acts), device=dev) if dones is None else to_tensor(dones, dev)
    if isinstance(obs, dict) or obs.dim() != 4:
        raise ValueError(
            f"attribution needs a batch of images [N, H, W, C] or [N, C, H, W], "
            f"got {getattr(obs, 'shape', type(obs).__name__)}"
        )
    feats = net.encode(obs, acts, next_obs, dones)
    if IMAGE_KEY not in feats:
        raise ValueError(
            f"{type(net).__name__} has no image input (features {sorted(feats)}); "
            "pixel attribution works on image reward networks such as CNNReward"
        )
    return ImageInputs(feats)


def score_images(
    net: RewardNet, inputs: ImageInputs, images: torch.Tensor, idx: torch.Tensor
) -> torch.Tensor:
    """Ensemble-mean reward ``[M]`` of float ``images [M, C, H, W]`` (0-255) paired with the
    other features of transitions ``idx [M]``; differentiable in ``images``."""
    f = {k: v[idx] for k, v in inputs.feats.items() if k != IMAGE_KEY}
    f[IMAGE_KEY] = images.clone()  # score scales its input in place: hand it a fresh tensor
    return net.score(f).mean(0)


def _grad(
    net: RewardNet, inputs: ImageInputs, images: torch.Tensor, idx: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    x = images.detach().float().requires_grad_(True)
    r = score_images(net, inputs, x, idx)
    (g,) = torch.autograd.grad(r.sum(), x)
    return g, r.detach()


def gradient_saliency(net: RewardNet, inputs: ImageInputs) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradients ``[N, C, H, W]`` of the reward w.r.t. pixels, and rewards ``[N]``."""
    idx = torch.arange(len(inputs), device=net.device)
    return _grad(net, inputs, inputs.images.float(), idx)


def _baseline(inputs: ImageInputs, baseline: str | float) -> torch.Tensor:
    img = inputs.images.float()
    if baseline == "black":
        return torch.zeros_like(img)
    if baseline == "mean":
        return img.mean((0, 2, 3), keepdim=True).expand_as(img)  # per-channel mean over the batch
    if isinstance(baseline, (int, float)):
        return torch.full_like(img, float(baseline))
    raise ValueError(f"baseline must be 'black', 'mean' or a pixel value, got {baseline!r}")


def integrated_gradients(
    net: RewardNet, inputs: ImageInputs, baseline: str | float = "black", steps: int = 32, chunk: int = 1024
) -> tuple[torch.Tensor, torch.Tensor]:
    """Integrated gradients ``[N, C, H, W]`` (midpoint rule, ``steps`` points) and rewards ``[N]``."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    x = inputs.images.float()
    x0 = _baseline(inputs, baseline)
    n = len(x)
    alphas = (torch.arange(steps, device=x.device, dtype=torch.float32) + 0.5) / steps
    path = (x0[None] + alphas[:, None, None, None, None] * (x - x0)[None]).reshape(steps * n, *x.shape[1:])
    idx = torch.arange(n, device=x.device).repeat(steps)
    grads = torch.cat(
        [_grad(net, inputs, path[s : s + chunk], idx[s : s + chunk])[0] for s in range(0, len(path), chunk)]
    )
    avg = grads.view(steps, n, *x.shape[1:]).mean(0)
    with torch.no_grad():
        r = score_images(net, inputs, x, torch.arange(n, device=x.device))
    return (x - x0) * avg, r


@torch.no_grad()
def occlusion(
    net: RewardNet,
    inputs: ImageInputs,
    patch: int = 8,
    stride: int = 4,
    fill: str | float = "mean",
    chunk: int = 1024,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Occlusion maps ``[N, H, W]`` (mean reward drop of the patches covering each pixel), rewards ``[N]``."""
    x = inputs.images.float()
    n, c, h, w = x.shape
    if patch < 1 or stride < 1:
        raise ValueError(f"patch and stride must be >= 1, got {patch}, {stride}")
    ys = list(range(0, max(h - patch, 0) + 1, stride))
    xs = list(range(0, max(w - patch, 0) + 1, stride))
    if ys[-1] + patch < h:
        ys.append(h - patch)
    if xs[-1] + patch < w:
        xs.append(w - patch)
    masks = torch.zeros(len(ys) * len(xs), 1, h, w, device=x.device)  # [P, 1, H, W]
    for i, (y0, x0) in enumerate((a, b) for a in ys for b in xs):
        masks[i, :, y0 : y0 + patch, x0 : x0 + patch] = 1.0
    f = _baseline(inputs, fill)
    idx_all = torch.arange(n, device=x.device)
    r = score_images(net, inputs, x, idx_all)
    p = len(masks)
    drops = torch.empty(p, n, device=x.device)
    per = max(1, chunk // n)
    for s in range(0, p, per):
        m = masks[s : s + per, None]  # [p, 1, 1, H, W]
        imgs = (x[None] * (1 - m) + f[None] * m).reshape(-1, c, h, w)
        drops[s : s + per] = r[None] - score_images(net, inputs, imgs, idx_all.repeat(len(m))).view(len(m), n)
    cover = masks[:, 0].sum(0).clamp_min(1.0)  # [H, W]
    return torch.einsum("pn,phw->nhw", drops, masks[:, 0]) / cover, r


def heatmap(attr: torch.Tensor) -> np.ndarray:
    """``[N, C, H, W]`` attributions -> ``[N, H, W]`` magnitudes (sum of |·| over channels).

    ``[N, H, W]`` maps (occlusion) pass through as magnitudes."""
    a = attr.detach().cpu()
    return (a.abs().sum(1) if a.dim() == 4 else a.abs()).numpy()


def display_frames(images: torch.Tensor | np.ndarray) -> np.ndarray:
    """``[N, C, H, W]`` uint8 features -> ``[N, H, W, 3]`` uint8 for display (last 3 channels,
    or the last channel as grey for stacks that are not RGB)."""
    img = torch.as_tensor(images).detach().cpu()
    c = img.shape[1]
    sel = img[:, -3:] if c >= 3 and c % 3 == 0 else img[:, -1:].expand(-1, 3, -1, -1)
    return sel.permute(0, 2, 3, 1).clamp(0, 255).to(torch.uint8).numpy()


# ------------------------------------------------------------- extremes
def extremes(net: RewardNet, batch: TrajectoryBatch, k: int = 8) -> dict[str, np.ndarray]:
    """The ``k`` highest- and lowest-reward transitions of ``batch``.

    Returns:
        ``top_rows``/``bottom_rows`` (table rows, best/worst first) and ``top_rewards``/
        ``bottom_rewards``.
    """
    rows = batch.step_rows
    if len(rows) == 0:
        raise ValueError("the trajectory batch has no transitions")
    r = predicted_rewards(net, batch)[rows]
    order = np.argsort(r, kind="stable")
    k = min(k, len(rows))
    top, bottom = order[::-1][:k], order[:k]
    return {
        "top_rows": rows[top],
        "top_rewards": r[top],
        "bottom_rows": rows[bottom],
        "bottom_rewards": r[bottom],
    }


# ------------------------------------------------------------ synthesis
def total_variation(x: torch.Tensor) -> torch.Tensor:
    """Mean absolute difference of neighbouring pixels of ``[M, C, H, W]`` -> ``[M]``."""
    dy = (x[..., 1:, :] - x[..., :-1, :]).abs().mean((1, 2, 3))
    dx = (x[..., :, 1:] - x[..., :, :-1]).abs().mean((1, 2, 3))
    return dx + dy


def synthesize(
    net: RewardNet,
    action: Any,
    maximize: bool = True,
    n: int = 4,
    steps: int = 200,
    lr: float = 0.1,
    tv: float = 0.3,
    l2: float = 0.1,
    jitter: int = 1,
    seed: int = 0,
    objective: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Observations that maximise (or minimise) the reward for ``action`` (or ``objective``:
    float images ``[n, C, H, W]`` (0-255) -> ``[n]``, e.g. a feature's activation).

    Adam on logits ``z`` of images ``x = 255·σ(z)`` (``n`` random starts in one batch),
    minimising ``∓r(x) + tv·TV(x/255) + l2·mean((x/255 − ½)²)`` with random shifts of up
    to ``jitter`` pixels each step.

    Returns:
        Images ``[n, *observation_space.shape]`` uint8 (the network's own layout) and
        their rewards ``[n]``.
    """
    space = net.observation_space
    dev = net.device
    gen = torch.Generator().manual_seed(seed)
    dummy = torch.zeros((n, *(space.shape or ())), dtype=torch.uint8, device=dev)
    act = to_tensor(np.asarray(action), dev)
    acts = act.expand(n, *act.shape).clone()
    inputs = encode_images(net, dummy, acts)
    idx = torch.arange(n, device=dev)
    score = objective or (lambda x: score_images(net, inputs, x, idx))
    z = (0.5 * torch.randn(inputs.images.shape, generator=gen)).to(dev).requires_grad_(True)
    opt = torch.optim.Adam([z], lr=lr)
    sign = -1.0 if maximize else 1.0
    net.requires_grad_(False)
    try:
        for _ in range(steps):
            x = torch.sigmoid(z)
            if jitter:
                dy, dx = (int(v) for v in torch.randint(-jitter, jitter + 1, (2,), generator=gen))
                x = torch.roll(x, (dy, dx), (2, 3))
            r = score(255.0 * x)
            loss = sign * r + tv * total_variation(x) + l2 * (x - 0.5).pow(2).mean((1, 2, 3))
            opt.zero_grad(set_to_none=True)
            loss.sum().backward()
            opt.step()
    finally:
        net.requires_grad_(True)
    with torch.no_grad():
        img = (255.0 * torch.sigmoid(z)).round().to(torch.uint8)  # [n, C, H, W]
        r = score(img.float())
    chw = getattr(net, "chw", True)
    out = img if chw else img.permute(0, 2, 3, 1)
    return out.cpu().numpy(), r.cpu().numpy()


# ---------------------------------------------------------------- plots
def overlay(frame: np.ndarray, heat: np.ndarray, alpha: float = 0.55) -> np.ndarray:
    """Blend a ``[H, W]`` heatmap (scaled by its 99th percentile) onto a ``[H, W, 3]`` uint8 frame."""
    from matplotlib import colormaps

    top = float(np.percentile(heat, 99)) or float(heat.max()) or 1.0
    colored = colormaps["inferno"](np.clip(heat / top, 0, 1))[..., :3]
    return (1 - alpha) * frame.astype(np.float64) / 255.0 + alpha * colored


def plot_saliency(
    images: torch.Tensor,
    maps: dict[str, np.ndarray],
    rewards: np.ndarray,
    path: str | Path,
    max_rows: int = 8,
) -> Path:
    """One row per frame: the frame, then each method's heatmap overlaid on it."""
    frames = display_frames(images)
    rows = min(len(frames), max_rows)
    cols = 1 + len(maps)
    fig = new_figure(2.2 * cols, 2.3 * rows)
    for i in range(rows):
        ax = fig.add_subplot(rows, cols, i * cols + 1)
        ax.imshow(frames[i], interpolation="nearest")
        ax.set_title(f"r̂ = {rewards[i]:.3g}", fontsize=8)
        ax.axis("off")
        for j, (name, m) in enumerate(maps.items()):
            ax = fig.add_subplot(rows, cols, i * cols + j + 2)
            ax.imshow(overlay(frames[i], m[i]), interpolation="nearest")
            ax.set_title(name, fontsize=8)
            ax.axis("off")
    return save_figure(fig, path)


def plot_image_grid(images: np.ndarray, titles: list[str], path: str | Path, ncol: int = 4) -> Path:
    """Frames ``[N, H, W, 3]`` uint8 in a grid with titles (extremes, synthesised observations)."""
    n = len(images)
    if n == 0:
        raise ValueError("no images to draw")
    ncol = min(ncol, n)
    nrow = -(-n // ncol)
    fig = new_figure(2.3 * ncol, 2.4 * nrow)
    for i in range(n):
        ax = fig.add_subplot(nrow, ncol, i + 1)
        ax.imshow(images[i], interpolation="nearest")
        ax.set_title(titles[i], fontsize=8)
        ax.axis("off")
    return save_figure(fig, path)


def to_display(net: RewardNet, obs: np.ndarray) -> np.ndarray:
    """Observations ``[N, *image]`` in the network's layout -> ``[N, H, W, 3]`` uint8 for display."""
    x = torch.as_tensor(np.asarray(obs))
    return display_frames(x if getattr(net, "chw", True) else x.permute(0, 3, 1, 2))
