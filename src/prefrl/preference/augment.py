"""Image augmentation of the clips a reward model trains on.

:func:`random_shift` is the random-shift augmentation of RAD (Laskin et al., 2020) and DrQ
(Kostrikov et al., 2021): each image is padded by replicating its edge pixels and cropped
back to its size at a random offset, so a reward model cannot key on exact pixel positions
and a few hundred labelled clips act like many more. One offset is drawn per clip, shared by
every frame of it, so the motion within a clip is what it was.
"""

from __future__ import annotations

import math

import torch


def random_shift(
    img: torch.Tensor, pad: int, clip_dims: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Shift every clip of ``img`` by its own random offset in ``[-pad, pad]`` pixels (each axis).

    Args:
        img: images ``[*clips, *frames, C, H, W]`` of any dtype (``uint8`` stays ``uint8``):
            the first ``clip_dims`` dimensions index clips, the rest up to ``C`` frames of a clip.
        pad: largest shift in pixels (0: ``img`` is returned as it is).
        clip_dims: how many leading dimensions index clips (each gets one offset).
        generator: random generator of the offsets (the caller's, for reproducible runs).

    Returns:
        ``img``'s shape and dtype; pixels shifted in from outside repeat the nearest edge pixel.

    Example:
        >>> x = torch.arange(16, dtype=torch.uint8).reshape(1, 1, 1, 4, 4)
        >>> y = random_shift(x, 1, clip_dims=1, generator=torch.Generator().manual_seed(0))
        >>> y.shape, y.dtype
        (torch.Size([1, 1, 1, 4, 4]), torch.uint8)
    """
    if pad < 0:
        raise ValueError(f"the shift must be >= 0 pixels, got {pad}")
    if pad == 0:
        return img
    if img.dim() < clip_dims + 3:
        raise ValueError(
            f"images [*clips, *frames, C, H, W] need {clip_dims + 3} dims or more, got {tuple(img.shape)}"
        )
    h, w = img.shape[-2:]
    if 2 * pad >= min(h, w):
        most = (min(h, w) - 1) // 2
        raise ValueError(f"a shift of {pad} pixels is too large for {h}x{w} images (at most {most})")
    lead = img.shape[:clip_dims]
    k = math.prod(lead)
    dev = img.device
    dy = torch.randint(-pad, pad + 1, (k, 1, 1), generator=generator).to(dev)  # [K, 1, 1]
    dx = torch.randint(-pad, pad + 1, (k, 1, 1), generator=generator).to(dev)
    rows = (torch.arange(h, device=dev).view(1, h, 1) + dy).clamp_(0, h - 1)  # [K, H, 1]
    cols = (torch.arange(w, device=dev).view(1, 1, w) + dx).clamp_(0, w - 1)  # [K, 1, W]
    flat = (rows * w + cols).view(k, 1, h * w)  # [K, 1, H*W] source pixel of every output pixel
    x = img.reshape(k, -1, h * w)  # [K, frames*C, H*W]
    out = x.gather(2, flat.expand(k, x.shape[1], h * w))  # the index is a view: no copy per frame
    return out.reshape(img.shape)
