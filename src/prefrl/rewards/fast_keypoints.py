"""NumPy image features of a CNN reward network for the lean per-step path
(:mod:`prefrl.rewards.inference`).

Two pieces live here:

- :func:`conv_matrices`: a :class:`~prefrl.rewards.cnn.CNNReward`'s grouped convolutions as
  matrices on channels-last patches (the ``E`` members side by side in the first layer, block
  diagonal after it), shared by the flat and the keypoint paths;
- :class:`KeypointFeatures`: the keypoints of a keypoint CNN (``features="spatial"``) in NumPy:
  the image average-pooled, each input channel and each output map of the convolutions
  standardised over its positions (unbiased standard deviation, ``+ 1e-3``), sharpened by the
  member's learned factor, and turned into the expected ``(x, y)`` of its softmax; with
  ``use_next_obs`` (the "motion" variant) the keypoints of ``s`` and their displacement to
  ``s'`` in cells of the last grid.

The features come out in a layout of their own (all members at once; see
:meth:`KeypointFeatures.head_rows`, which permutes the torch head's first layer to match), and
equal :meth:`CNNReward._keypoints <prefrl.rewards.cnn.CNNReward._keypoints>` to float32 rounding.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from prefrl.rewards.cnn import CNNReward
from prefrl.rewards.layers import coordinate_grid

Array = np.ndarray

STD_EPS = 1e-3
"""Added to each map's standard deviation (as :func:`~prefrl.rewards.layers.standardize_maps`)."""

MAX_BUFFERS = 48
"""Work arrays :class:`KeypointFeatures` keeps (about six per batch size) before it starts afresh."""


def conv_matrices(net: CNNReward, scale: float = 1.0) -> list[tuple[int, int, Array]] | None:
    """``net``'s convolutions as ``(kernel, stride, W [k*k*C_in + 1, E*C_out])`` (float32).

    Each ``W`` multiplies channels-last patch rows ordered ``(ky, kx, channel)`` followed by a
    1 (the bias is the last row). The first layer's members see the same image, so their
    columns sit side by side (``C_in`` = the image's channels, ``scale`` folded in, e.g.
    ``1/255`` for raw pixels); later layers are block diagonal over the members
    (``C_in = E * C``, member-major). Output columns are member-major: ``g * C_out + o``.
    ``None`` for convolutions this form does not cover (padding, dilation, non-square).
    """
    e = net.ensemble_size
    convs = [m for m in net.conv if isinstance(m, torch.nn.Conv2d)]
    layers: list[tuple[int, int, Array]] = []
    for i, conv in enumerate(convs):
        wt = conv.weight.detach().cpu().numpy().astype(np.float32)  # [E*out, in, k, k]
        k, s = int(conv.kernel_size[0]), int(conv.stride[0])
        if conv.kernel_size[0] != conv.kernel_size[1] or conv.stride[0] != conv.stride[1]:
            return None
        if conv.padding != (0, 0) or conv.dilation != (1, 1):
            return None
        out_c, in_c = wt.shape[0] // e, wt.shape[1]
        if i == 0:  # every member sees the same image: members side by side
            dense = wt.reshape(e * out_c, in_c * k * k).T * np.float32(scale)
        else:
            dense = np.zeros((e * in_c * k * k, e * out_c), np.float32)
            for g in range(e):
                blk = wt[g * out_c : (g + 1) * out_c].reshape(out_c, in_c * k * k).T
                dense[g * in_c * k * k : (g + 1) * in_c * k * k, g * out_c : (g + 1) * out_c] = blk
        bias = conv.bias.detach().cpu().numpy().astype(np.float32) if conv.bias is not None else None
        if bias is None:
            bias = np.zeros(e * out_c, np.float32)
        # rows (channel, ky, kx) -> (ky, kx, channel): patches copy runs of k*channels values
        cc = dense.shape[0] // (k * k)
        dense = dense.reshape(cc, k, k, -1).transpose(1, 2, 0, 3).reshape(k * k * cc, -1)
        layers.append((k, s, np.ascontiguousarray(np.vstack([dense, bias[None]]), np.float32)))
    return layers


class _Grid:
    """A grid of ``h x w`` positions and the coordinates its soft-argmax weighs them by (the
    float32 values of the torch :func:`~prefrl.rewards.layers.coordinate_grid`): ``x1 [w, 2]``
    float32 (each column's x, and 1) and ``ys [h]`` float64 (each row's y)."""

    def __init__(self, h: int, w: int) -> None:
        ys, xs = (v.numpy() for v in coordinate_grid(h, w))
        self.h, self.w, self.size = h, w, h * w
        self.x1 = np.stack([xs, np.ones(w, np.float32)], 1).astype(np.float32)
        self.ys = ys.astype(np.float64)

    def soft_argmax(self, logits: Array) -> Array:
        """Float32 ``logits [m, K, h*w]`` (overwritten) -> ``[m, K, 2]`` float64: the expected
        ``(x, y)`` of each map's softmax over its positions.

        Sums run per row first (``w`` terms, float32), then over the rows in float64, like
        the torch path's marginal sums. One float32 product over all ``h*w`` positions at once
        (whose x and y terms cancel) was off by up to 1e-5 of a keypoint; torch by 5e-7.
        """
        logits -= logits.max(-1, keepdims=True)
        np.exp(logits, out=logits)
        m, k, _ = logits.shape
        rows = (logits.reshape(-1, self.w) @ self.x1).astype(np.float64).reshape(m, k, self.h, 2)
        z = rows[..., 1].sum(-1)  # the softmax's normaliser [m, K]
        xy = np.stack([rows[..., 0].sum(-1), rows[..., 1] @ self.ys], -1)
        xy /= z[..., None]
        return xy


def _im2col(x: Array, k: int, s: int) -> Array:
    """Channels-last ``x [m, H, W, C]`` -> patch rows ``[m*oh*ow, k*k*C]`` ordered ``(ky, kx, c)``."""
    m, hh, ww, c = x.shape
    oh, ow = (hh - k) // s + 1, (ww - k) // s + 1
    st = x.strides
    view = np.lib.stride_tricks.as_strided(
        x, (m, oh, ow, k, k, c), (st[0], s * st[1], s * st[2], st[1], st[2], st[3]), writeable=False
    )
    return np.ascontiguousarray(view).reshape(m * oh * ow, k * k * c)


class KeypointFeatures:
    """The keypoint features of a keypoint :class:`CNNReward` (``features="spatial"``), for all
    ``E`` members at once, from uint8 images.

    Call with ``obs [n, H, W, C]`` (or ``[n, C, H, W]``) and ``next_obs`` (read with
    ``use_next_obs`` only) to get ``[n, width]`` float32 features; :meth:`head_rows` maps the
    torch head's first-layer rows to that layout. Maps are channels-first (``[m, K, positions]``)
    so that every reduction runs over contiguous memory. Weights (convolutions, sharpness) are
    copied when built: rebuild after the network changes.
    """

    def __init__(self, net: CNNReward, convs: list[tuple[int, int, Array]], act: Callable[[Array], Array]):
        """``convs``: :func:`conv_matrices` of ``net`` (scale 1: the convolutions read pooled
        pixels in [0, 1]); ``act``: the in-place activation between convolutions."""
        e = net.ensemble_size
        c, h, w = net.obs_shape
        self.e, self.c, self.chw, self.pool, self.motion = e, c, net.chw, int(net.pool), bool(net.motion)
        self.act = act
        hp, wp = h // self.pool, w // self.pool
        # per layer: kernel, stride, W [k*k*in, out] (channels-last patches), W^T, bias [out]
        self.convs = [
            (k, s, d[:-1].copy(), np.ascontiguousarray(d[:-1].T), d[-1].copy()) for k, s, d in convs
        ]
        gh, gw = hp, wp
        for k, s, _ in convs:
            gh, gw = (gh - k) // s + 1, (gw - k) // s + 1
        self.grid_in, self.grid_out = _Grid(hp, wp), _Grid(gh, gw)
        self.c_out = convs[-1][2].shape[1] // e
        sharp = net.sharpness.detach().cpu().numpy().astype(np.float32).reshape(e, -1)
        self.sharp_in = sharp[:, :c].copy()  # [E, C]
        self.sharp_out = sharp[:, c:].reshape(-1).copy()  # [E*C'], member-major
        self.k_in, self.k_out = e * c, e * self.c_out
        self.parts = 1 + int(self.motion)  # kp(s), and kp(s') - kp(s) with motion
        self.features = 2 * (c + self.c_out) * self.parts  # per member, as the torch head reads them
        self.width = self.parts * 2 * (self.k_in + self.k_out)  # all members, this module's layout
        self.cells = float(net.cells)
        self._bufs: dict[tuple[str, tuple[int, ...]], Array] = {}

    @classmethod
    def of(cls, net: CNNReward, act: Callable[[Array], Array]) -> KeypointFeatures | None:
        """The features of a keypoint CNN, or ``None`` where its layers are not covered."""
        if not net.spatial:
            return None
        convs = conv_matrices(net)
        if not convs:
            return None
        e = net.ensemble_size
        if net.maps != net.obs_shape[0] + convs[-1][2].shape[1] // e:
            return None
        return cls(net, convs, act)

    def head_rows(self, w: Array) -> Array:
        """The head's first-layer rows for the image features, ``w [E, features, H]`` (member
        ``g``'s row ``q*2*maps + 2*map + j``: part ``q`` (0: kp(s), 1: displacement), map
        (input channels first), ``j`` 0 for x, 1 for y) -> ``[width, E*H]`` in this module's
        layout (``q``, member-major map, ``j``), zero across members; the displacement's rows
        carry the ``cells`` scale."""
        e, _, hid = w.shape
        c, co, k_in = self.c, self.c_out, self.k_in
        out = np.zeros((self.parts, self.k_in + self.k_out, 2, e * hid), np.float32)
        for g in range(e):
            wg = w[g].reshape(self.parts, c + co, 2, hid)  # [q, map, j, H]
            cols = slice(g * hid, (g + 1) * hid)
            out[:, g * c : (g + 1) * c, :, cols] = wg[:, :c]
            out[:, k_in + g * co : k_in + (g + 1) * co, :, cols] = wg[:, c:]
        if self.motion:
            out[1] *= np.float32(self.cells)
        return out.reshape(self.width, e * hid)

    def work(self, n: int) -> int:
        """Multiply-adds of the largest matrix product for ``n`` transitions."""
        m = n * self.parts
        sizes = [m * self.grid_in.size * 2 * self.k_in, m * self.grid_out.size * 2 * self.k_out]
        hh, ww = self.grid_in.h, self.grid_in.w
        for k, s, wmat, _, _ in self.convs:
            hh, ww = (hh - k) // s + 1, (ww - k) // s + 1
            sizes.append(m * hh * ww * wmat.size)
        return max(sizes)

    def _buf(self, name: str, shape: tuple[int, ...]) -> Array:
        """A float32 work array kept for the next call of the same batch size (fresh arrays of a
        few MB cost page faults on every call); those of many batch sizes are dropped."""
        key = (name, shape)
        b = self._bufs.get(key)
        if b is None:
            if len(self._bufs) >= MAX_BUFFERS:
                self._bufs.clear()
            b = self._bufs[key] = np.empty(shape, np.float32)
        return b

    def _pooled(self, x: Array) -> Array:
        """uint8 ``[m, C, H, W]`` (any strides) -> float32 ``[m, C, H/p, W/p]`` in [0, 1],
        average-pooled ``p x p`` (sums of whole pixel values, then one scale)."""
        p, (m, c) = self.pool, x.shape[:2]
        hp, wp = self.grid_in.h, self.grid_in.w
        out = self._buf("pooled", (m, c, hp, wp))
        if p == 1:
            np.multiply(x, np.float32(1.0 / 255.0), out=out, dtype=np.float32)
            return out
        x = x[:, :, : hp * p, : wp * p]
        rows = self._buf("rows", (m, c, hp, wp * p))
        np.copyto(rows, x[:, :, 0::p])
        for i in range(1, p):
            rows += x[:, :, i::p]
        np.copyto(out, rows[..., 0::p])
        for j in range(1, p):
            out += rows[..., j::p]
        out *= np.float32(1.0 / (255.0 * p * p))
        return out

    def _standardize(self, v: Array) -> Array:
        """Maps ``v [m, K, P]``, centred in place; returns their unbiased standard deviation
        ``[m, K]`` (NumPy's pairwise sums over the contiguous positions)."""
        v -= v.mean(-1, keepdims=True)
        sq = self._buf("squares", v.shape)
        np.square(v, out=sq)
        return np.sqrt(sq.sum(-1) / np.float32(v.shape[-1] - 1))

    def _input_logits(self, x: Array, out: Array) -> None:
        """Pooled images ``[m, C, h, w]`` (overwritten) -> ``out [m, E*C, h*w]``: each channel
        standardised once, then sharpened by each member's factor (member-major)."""
        m, c = len(x), self.c
        cen = x.reshape(m, c, -1)
        std = self._standardize(cen)  # [m, C]
        a = self.sharp_in[None] / (std[:, None, :] + np.float32(STD_EPS))  # [m, E, C]
        for g in range(self.e):
            np.multiply(cen, a[:, g, :, None], out=out[:, g * c : (g + 1) * c])

    def _conv_logits(self, x: Array, out: Array) -> None:
        """Pooled images ``[m, C, h, w]`` -> ``out [m, E*C', positions]``: the convolutions'
        standardised, sharpened maps. The last convolution's bias is left out: it moves each
        map by a constant, which the standardisation takes away."""
        m = len(x)
        y = x
        last = len(self.convs) - 1
        for li, (k, s, wmat, wt, b) in enumerate(self.convs):
            hh, ww = y.shape[2], y.shape[3]
            oh, ow = (hh - k) // s + 1, (ww - k) // s + 1
            z = out if li == last else self._buf(f"conv {li}", (m, wt.shape[0], oh * ow))
            if k == 1 and s == 1:  # channels-first: W^T [out, in] @ [m, in, positions]
                np.matmul(wt, y.reshape(m, y.shape[1], hh * ww), out=z)
            else:  # channels-last patches
                cl = _im2col(np.ascontiguousarray(y.transpose(0, 2, 3, 1)), k, s) @ wmat
                np.copyto(z, cl.reshape(m, oh * ow, -1).transpose(0, 2, 1))
            if li < last:  # the soft-argmax reads the last convolution's logits
                z += b[:, None]
                self.act(z)
                y = z.reshape(m, -1, oh, ow)
        std = self._standardize(out)
        out *= (self.sharp_out / (std + np.float32(STD_EPS)))[..., None]

    def __call__(self, obs: Array, next_obs: Array) -> Array:
        """uint8 images ``obs``, ``next_obs`` ``[n, H, W, C]`` (or CHW) -> ``[n, width]`` float32:
        per part (kp(s); with motion then kp(s') - kp(s)), the input channels' maps
        (member-major) then the convolutions' maps (member-major), each as (x, y)."""
        n = len(obs)
        x = np.concatenate([np.asarray(obs), np.asarray(next_obs)]) if self.motion else np.asarray(obs)
        x = self._pooled(x if self.chw else x.transpose(0, 3, 1, 2))
        m, gi, go = len(x), self.grid_in, self.grid_out
        if (gi.h, gi.w) == (go.h, go.w):  # one grid (1x1 convolutions): one softmax pass for all maps
            logits = self._buf("logits", (m, self.k_in + self.k_out, gi.size))
            self._conv_logits(x, logits[:, self.k_in :])  # first: the input maps overwrite x
            self._input_logits(x, logits[:, : self.k_in])
            kp = gi.soft_argmax(logits)
        else:
            conv = self._buf("conv logits", (m, self.k_out, go.size))
            self._conv_logits(x, conv)
            inp = self._buf("input logits", (m, self.k_in, gi.size))
            self._input_logits(x, inp)
            kp = np.concatenate([gi.soft_argmax(inp), go.soft_argmax(conv)], 1)  # [m, K_in + K_out, 2]
        feats = np.empty((n, self.parts, self.k_in + self.k_out, 2), np.float32)
        feats[:, 0] = kp[:n]
        if self.motion:
            np.subtract(kp[n:], kp[:n], out=feats[:, 1], casting="same_kind")
        return feats.reshape(n, self.width)


__all__ = ["KeypointFeatures", "conv_matrices"]
