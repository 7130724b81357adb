"""A lean inference path for the preference wrapper's per-step reward.

At a few transitions per call, a reward network's cost is almost all per-operation
overhead (PyTorch dispatch, NumPy <-> torch hand-offs, one-hot and layout steps), not
arithmetic. :class:`FastReward` compiles the ensemble-mean reward of an
:class:`~prefrl.rewards.mlp.MLPReward` or :class:`~prefrl.rewards.cnn.CNNReward` into a
few NumPy matrix products on preallocated buffers:

- the ``E`` members become one wide network: first layers side by side, hidden layers
  block-diagonal, the output layer averaged (the ensemble mean is linear in it);
- convolutions are strided patch views times a matrix, on channels-last activations,
  with the ``1/255`` pixel scale folded into the first layer and the head's rows permuted
  to match the channels-last flattening.

The keypoint CNN (``features="spatial"``, with or without ``use_next_obs``) computes its
keypoints with :class:`~prefrl.rewards.fast_keypoints.KeypointFeatures`; with
``action_heads`` (one output per Discrete action) the taken action's output is picked (per
member before a tanh output). It gives the same numbers as
``net.score(net.encode(...)).mean(0)`` (to float32 rounding) and is rebuilt whenever new
weights arrive. Other networks (custom ones, ``ShapedReward``, Dict spaces, the flat CNN
reading stacked frames, other activations) use :class:`TorchReward`: the network itself
under ``torch.inference_mode`` with one intra-op thread.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from threadpoolctl import ThreadpoolController

from prefrl.rewards.cnn import CNNReward
from prefrl.rewards.fast_keypoints import KeypointFeatures, conv_matrices
from prefrl.rewards.layers import EnsembleMLP
from prefrl.rewards.mlp import MLPReward
from prefrl.rewards.nets import RewardNet

Array = np.ndarray
RewardFn = Callable[[Array, Array, Array, Array], Array]
"""``(obs [n, ...], acts [n, ...], next_obs [n, ...], dones [n]) -> ensemble-mean reward [n]`` (float64)."""


BLAS_THREADED_WORK = 65536
"""Matrix products with more multiply-adds may run on several BLAS threads (OpenBLAS's
default threshold is four times this)."""


TORCH_GRAIN = 32768
"""Torch runs an element-wise operation on its thread pool above this many values
(``at::internal::GRAIN_SIZE``)."""


@functools.cache
def _blas_libs() -> list[Any]:
    """threadpoolctl controllers of the BLAS libraries loaded in this process (NumPy's among them)."""
    return list(ThreadpoolController().select(user_api="blas").lib_controllers)


class _OneBlasThread:
    """Run NumPy's matrix products on one BLAS thread inside ``with``, then restore the setting.

    The per-step products are small: a BLAS thread pool costs more in hand-offs (and in
    spinning threads that take CPU from the agent and the background workers) than it saves.
    """

    def __enter__(self) -> None:
        self._prev = []
        for lib in _blas_libs():
            n = lib.get_num_threads()
            if n != 1:
                lib.set_num_threads(1)
                self._prev.append((lib, n))

    def __exit__(self, *exc: object) -> None:
        for lib, n in self._prev:
            lib.set_num_threads(n)


def _relu(h: Array) -> Array:
    return np.maximum(h, 0.0, out=h)


def _tanh(h: Array) -> Array:
    return np.tanh(h, out=h)


def _leaky_relu(h: Array) -> Array:
    return np.maximum(h, 0.01 * h, out=h)


def _elu(h: Array) -> Array:
    neg = h < 0
    h[neg] = np.expm1(h[neg])
    return h


_ACTS: dict[str, Callable[[Array], Array]] = {
    "relu": _relu,
    "tanh": _tanh,
    "leaky_relu": _leaky_relu,
    "elu": _elu,
}


def _activation_name(mlp: EnsembleMLP) -> str | None:
    name = type(mlp.act).__name__.lower()
    return {"relu": "relu", "tanh": "tanh", "leakyrelu": "leaky_relu", "elu": "elu"}.get(name)


def _block_diag(w: Array) -> Array:
    """``[E, in, out]`` member weights -> ``[E*in, E*out]`` block-diagonal matrix."""
    e, d_in, d_out = w.shape
    out = np.zeros((e * d_in, e * d_out), np.float32)
    for g in range(e):
        out[g * d_in : (g + 1) * d_in, g * d_out : (g + 1) * d_out] = w[g]
    return out


def _dense_tail(mlp: EnsembleMLP, squash: bool = False) -> list[tuple[Array, Array]]:
    """The layers after the first of an ensemble MLP as wide dense ``(W, b)``.

    The last layer averages the members (``[E*H, 1]``), or, with ``squash`` (a tanh output,
    applied per member before the mean), keeps them apart (``[E*H, E]``).
    """
    e = mlp.ensemble_size
    out: list[tuple[Array, Array]] = []
    layers = mlp.linears[1:]
    for i, layer in enumerate(layers):
        w = layer.weight.detach().cpu().numpy().astype(np.float32)  # [E, in, out]
        b = layer.bias.detach().cpu().numpy().astype(np.float32)  # [E, out]
        if i == len(layers) - 1 and not squash:  # output layer: mean over members
            out.append(((w / e).reshape(e * w.shape[1], w.shape[2]), b.mean(0)))
        else:
            out.append((_block_diag(w), b.reshape(-1)))
    return out


def _first_layer(mlp: EnsembleMLP) -> tuple[Array, Array]:
    """First layer as ``[in, E*out]`` (members side by side) and bias ``[E*out]``."""
    layer = mlp.linears[0]
    w = layer.weight.detach().cpu().numpy().astype(np.float32)  # [E, in, out]
    b = layer.bias.detach().cpu().numpy().astype(np.float32)
    e, d_in, d_out = w.shape
    return np.ascontiguousarray(w.transpose(1, 0, 2).reshape(d_in, e * d_out)), b.reshape(-1)


def _vec_writer(space: spaces.Space[Any]) -> tuple[int, Callable[[Array, Array], None]] | None:
    """``(width, write(out [n, width], x [n, ...]))`` of a Box or Discrete space's features."""
    if isinstance(space, spaces.Discrete):
        k, start = int(space.n), int(space.start)
        rows = np.eye(k, dtype=np.float32)

        def write_discrete(out: Array, x: Array) -> None:
            idx = x.reshape(len(out))
            out[...] = rows.take(idx - start if start else idx, axis=0, mode="clip")

        return k, write_discrete
    if isinstance(space, spaces.Box):
        d = int(np.prod(space.shape))

        def write_box(out: Array, x: Array) -> None:
            out[...] = x.reshape(len(out), d)

        return d, write_box
    return None


def _run_tail(
    h: Array,
    tail: list[tuple[Array, Array]],
    act: Callable[[Array], Array],
    squash: bool = False,
    pick: tuple[Array, int] | None = None,
) -> Array:
    """The layers after the first on pre-activations ``h [n, H]``; the reward ``[n]`` (float64).

    ``pick``: with action heads, ``(head indices [n], K)``: the output layer gives ``K`` values
    (``E*K`` with ``squash``, member-major) and the reward is the taken action's.
    """
    *hidden, (w_out, b_out) = tail
    for w, b in hidden:
        h = act(h)
        h = h @ w
        h += b
    if pick is not None:
        idx, k = pick
        rows = np.arange(len(h))
        z = act(h) @ w_out
        z += b_out
        if squash:  # [n, E*K] -> each member's taken action [n, E] -> tanh -> mean
            return np.tanh(z.reshape(len(h), -1, k)[rows, :, idx]).mean(1, dtype=np.float64)
        return z[rows, idx].astype(np.float64)
    if squash:  # members' outputs [n, E] -> tanh -> mean
        z = act(h) @ w_out
        z += b_out
        return np.tanh(z, out=z).mean(1, dtype=np.float64)
    r = act(h) @ w_out[:, 0]
    return r.astype(np.float64) + float(b_out[0])


class FastReward:
    """Ensemble-mean reward ``[n]`` of an MLP or CNN reward network, in NumPy (see module doc).

    Build with :meth:`of` (``None`` when the network is not supported); call with NumPy
    arrays ``obs [n, ...]``, ``acts [n, ...]``, ``next_obs [n, ...]``, ``dones [n]``.
    """

    def __init__(self, fn: Callable[[Array, Array, Array, Array], Array], work: Callable[[int], int]) -> None:
        self._fn = fn
        self._work = work  # batch size -> multiply-adds of the largest matrix product
        self._guard: dict[int, bool] = {}

    def __call__(self, obs: Array, acts: Array, next_obs: Array, dones: Array) -> Array:
        n = len(acts)
        guard = self._guard.get(n)
        if guard is None:
            guard = self._guard[n] = self._work(n) > BLAS_THREADED_WORK
        if not guard:  # too small for BLAS to use threads: skip the (costly) thread switch
            return self._fn(obs, acts, next_obs, dones)
        with _OneBlasThread():
            return self._fn(obs, acts, next_obs, dones)

    @classmethod
    def of(cls, net: RewardNet) -> FastReward | None:
        if net.output not in ("linear", "tanh"):
            return None
        if type(net) is MLPReward:
            return _mlp(net)
        if type(net) is CNNReward:
            return _cnn(net)
        return None


def _picker(net: RewardNet) -> Callable[[Array], Array] | None:
    """With ``action_heads``: ``acts [n] -> head indices [n]`` (int64 from 0, clipped, as the
    torch path's ``_action_index``); else ``None``."""
    space = net.action_space
    if not getattr(net, "action_heads", False) or not isinstance(space, spaces.Discrete):
        return None
    k, start = int(space.n), int(space.start)

    def pick(acts: Array) -> Array:
        return np.clip(np.asarray(acts).reshape(-1).astype(np.int64) - start, 0, k - 1)

    return pick


def _mlp(net: MLPReward) -> FastReward | None:
    name = _activation_name(net.mlp)
    if name is None:
        return None
    act = _ACTS[name]
    parts: list[tuple[int, int, Callable[[Array, Array], None]]] = []  # (input index, width, writer)
    use_obs, use_act, use_next, use_done = net.use
    for i, used, space in (
        (0, use_obs, net.observation_space),
        (1, use_act, net.action_space),
        (2, use_next, net.observation_space),
    ):
        if used:
            got = _vec_writer(space)
            if got is None:
                return None
            parts.append((i, *got))
    if use_done:
        parts.append((3, 1, lambda out, d: out.__setitem__(..., d.reshape(len(out), 1))))
    dim = sum(p[1] for p in parts)
    w1, b1 = _first_layer(net.mlp)
    if w1.shape[0] != dim:
        return None
    shift = scale = None
    lo = hi = 0.0
    if net.norm is not None:
        shift = net.norm.mean.detach().cpu().numpy().astype(np.float32)
        scale = (1.0 / np.sqrt(net.norm.var.detach().cpu().numpy() + net.norm.eps)).astype(np.float32)
        lo, hi = -net.norm.clip, net.norm.clip
    squash = net.output == "tanh"
    tail = _dense_tail(net.mlp, squash)
    picker, heads = _picker(net), net.mlp.linears[-1].out_features
    if heads > 1 and picker is None:
        return None
    buf: dict[int, Array] = {}

    def fn(obs: Array, acts: Array, next_obs: Array, dones: Array) -> Array:
        x = _write_features(buf, dim, parts, (obs, acts, next_obs, dones))
        if shift is not None:
            x -= shift
            x *= scale
            np.clip(x, lo, hi, out=x)
        h = x @ w1
        h += b1
        return _run_tail(h, tail, act, squash, None if picker is None else (picker(acts), heads))

    widest = max(w.size for w, _ in [(w1, b1), *tail])
    return FastReward(fn, lambda n: n * widest)


def _write_features(
    buf: dict[int, Array],
    dim: int,
    parts: list[tuple[int, int, Callable[[Array, Array], None]]],
    inputs: tuple[Array, Array, Array, Array],
) -> Array:
    """Fill a reused ``[n, dim]`` buffer with each part's features, side by side."""
    n = len(inputs[1])
    x = buf.get(n)
    if x is None:
        x = buf[n] = np.empty((n, dim), np.float32)
    off = 0
    for i, width, write in parts:
        write(x[:, off : off + width], inputs[i])
        off += width
    return x


class _CnnBuffers:
    """Reused buffers of :func:`_cnn` for one batch size ``n``.

    Per layer: ``inputs`` ``[n*oh*ow, k*k*C + 1]`` float32 patch rows whose last column is
    1 (the bias is the weight matrix's last row), written through ``runs``, the same memory
    seen as ``[n, oh, ow, k]`` runs of ``k*C`` values (the first layer's runs go to a uint8
    buffer, cast after); ``outs`` ``[n*oh*ow, C_out]`` with ``outs_t``, torch views of them
    for the in-place ReLU (NumPy's ``maximum`` is 3x slower: it propagates NaNs), in pieces of
    at most :data:`TORCH_GRAIN` values (a larger one goes to torch's thread pool, which costs
    milliseconds when the cores are busy: 7 ms for one 84x84 layer of two frames).
    """

    def __init__(self, n: int, hwc: tuple[int, int, int], layers: list[tuple[int, int, Array]]) -> None:
        self.inputs: list[Array] = []
        self.runs: list[Array] = []
        self.outs: list[Array] = []
        self.outs_t: list[tuple[torch.Tensor, ...]] = []
        self.shapes: list[tuple[int, int, int, int]] = []
        hh, ww, cc = hwc
        for li, (k, s, dense) in enumerate(layers):
            oh, ow = (hh - k) // s + 1, (ww - k) // s + 1
            m, kk = n * oh * ow, k * k * cc
            inp = np.empty((m, kk + 1), np.float32)
            inp[:, kk] = 1.0
            runs_in = inp
            if li == 0:  # uint8 patches (and the ones column), cast to ``inp`` after
                self.first_u8 = runs_in = np.ones((m, kk + 1), np.uint8)
            item, row = k * cc * runs_in.itemsize, (kk + 1) * runs_in.itemsize
            runs = np.ndarray(
                (n, oh, ow, k), np.dtype((np.void, item)), runs_in, 0, (oh * ow * row, ow * row, row, item)
            )
            out = np.empty((m, dense.shape[1]), np.float32)
            self.inputs.append(inp)
            self.runs.append(runs)
            self.outs.append(out)
            self.outs_t.append(torch.from_numpy(out).view(-1).split(TORCH_GRAIN))
            hh, ww, cc = oh, ow, dense.shape[1]
            self.shapes.append((n, oh, ow, cc))


def _patches(x: Array, k: int, s: int, out: Array) -> None:
    """im2col of a channels-last batch ``x [n, H, W, C]`` into ``out [n, oh, ow, k]``.

    ``out``'s items are runs of ``k*C`` values (a void dtype): the ``k`` kernel rows of each
    output position are each one contiguous run of ``x``, so the copy moves ``n*oh*ow*k``
    blocks instead of ``n*oh*ow*k*k*C`` scalars.
    """
    st = x.strides
    src = np.ndarray(out.shape, out.dtype, x, 0, (st[0], s * st[1], s * st[2], st[1]))
    np.copyto(out, src)


ImageFn = Callable[[Array, Array], Array]
"""``(obs [n, ...], next_obs [n, ...]) -> [n, D]`` float32 image features of a CNN, all members."""


def _flat_image(
    net: CNNReward, w1: Array, act: Callable[[Array], Array], relu: bool
) -> tuple[int, Array, ImageFn, Callable[[int], int]] | None:
    """The flat CNN's image features: ``(F, head rows [D, E*H], image, work)``, ``F`` the
    features per member the torch head reads (``w1 [E, F + vec, H]``), ``D`` those of all
    members in channels-last order, ``work`` the largest product's multiply-adds for ``n``."""
    e = net.ensemble_size
    c, h, w = net.image_shape
    layers = conv_matrices(net, 1.0 / 255.0)  # the 1/255 pixel scale folded into the first layer
    if not layers:
        return None
    oh, ow, oc = h, w, c
    for k, s, dense in layers:
        oh, ow, oc = (oh - k) // s + 1, (ow - k) // s + 1, dense.shape[1] // e
    f = oc * oh * ow
    hid = w1.shape[2]
    # head rows: member g's feature (o, y, x) -> channels-last flat index (y, x, g, o)
    head = np.zeros((oh, ow, e, oc, e * hid), np.float32)
    for g in range(e):
        wg = w1[g, :f].reshape(oc, oh, ow, hid).transpose(1, 2, 0, 3)  # [y, x, o, H]
        head[:, :, g, :, g * hid : (g + 1) * hid] = wg
    head_img = head.reshape(oh * ow * e * oc, e * hid)
    chw = net.chw
    bufs: dict[int, _CnnBuffers] = {}

    def image(obs: Array, next_obs: Array) -> Array:
        n = len(obs)
        b = bufs.get(n)
        if b is None:
            b = bufs[n] = _CnnBuffers(n, (h, w, c), layers)
        x = np.asarray(obs)
        if chw:
            x = x.transpose(0, 2, 3, 1)
        x = np.ascontiguousarray(x)  # [n, H, W, C] uint8
        for li, (k, s, dense) in enumerate(layers):
            _patches(x, k, s, b.runs[li])
            p = b.inputs[li]
            if li == 0:  # uint8 patches -> float32 (the 1/255 is in the weights)
                np.copyto(p, b.first_u8, casting="unsafe")
            y = b.outs[li]
            np.matmul(p, dense, out=y)
            if relu:
                for part in b.outs_t[li]:
                    part.relu_()
            else:
                act(y)
            x = y.reshape(b.shapes[li])
        return x.reshape(n, -1)

    def work(n: int) -> int:
        b = _CnnBuffers(1, (h, w, c), layers)
        return n * max(p.size * d.shape[1] for p, (_, _, d) in zip(b.inputs, layers))

    return f, head_img, image, work


def _cnn(net: CNNReward) -> FastReward | None:
    name = _activation_name(net.head)
    if name is None or (net.use_next_obs and not net.motion) or net.shared_trunk:  # the torch path
        return None
    act = _ACTS[name]
    e = net.ensemble_size
    w1 = net.head.linears[0].weight.detach().cpu().numpy().astype(np.float32)  # [E, F + vec, H]
    b1 = net.head.linears[0].bias.detach().cpu().numpy().astype(np.float32).reshape(-1)
    hid = w1.shape[2]
    image: ImageFn
    image_work: Callable[[int], int]
    if net.spatial:  # keypoints (of s, and their displacement to s' with motion)
        kp = KeypointFeatures.of(net, act)
        if kp is None:
            return None
        f, head_img, image, image_work = kp.features, kp.head_rows(w1[:, : kp.features]), kp, kp.work
    else:
        got = _flat_image(net, w1, act, name == "relu")
        if got is None:
            return None
        f, head_img, image, image_work = got
    head_vec = np.ascontiguousarray(w1[:, f:].transpose(1, 0, 2).reshape(-1, e * hid))
    vec_parts: list[tuple[int, int, Callable[[Array, Array], None]]] = []
    if net.use_act and not net.action_heads:
        got_act = _vec_writer(net.action_space)
        if got_act is None:
            return None
        vec_parts.append((1, *got_act))
    if net.use_done:
        vec_parts.append((3, 1, lambda out, d: out.__setitem__(..., d.reshape(len(out), 1))))
    d_vec = sum(p[1] for p in vec_parts)
    if d_vec != head_vec.shape[0]:
        return None
    squash = net.output == "tanh"
    tail = _dense_tail(net.head, squash)
    picker, heads = _picker(net), net.head.linears[-1].out_features
    if heads > 1 and picker is None:
        return None
    # a Discrete action alone: its one-hot product is a row of head_vec (the bias folded in)
    rows_by_action = None
    if vec_parts and not net.use_done and isinstance(net.action_space, spaces.Discrete):
        rows_by_action = head_vec + b1
        a_start = int(net.action_space.start)
    vbuf: dict[int, Array] = {}

    def fn(obs: Array, acts: Array, next_obs: Array, dones: Array) -> Array:
        n = len(acts)
        z = image(obs, next_obs) @ head_img
        pick = None if picker is None else (picker(acts), heads)
        if rows_by_action is not None:
            a = np.asarray(acts).reshape(n)
            z += rows_by_action.take(a - a_start if a_start else a, axis=0, mode="clip")
            return _run_tail(z, tail, act, squash, pick)
        z += b1
        if vec_parts:
            z += _write_features(vbuf, d_vec, vec_parts, (obs, acts, next_obs, dones)) @ head_vec
        return _run_tail(z, tail, act, squash, pick)

    return FastReward(fn, lambda n: max(image_work(n), n * head_img.size))


class TorchReward:
    """Fallback: the network's own ``score(encode(...))`` mean, in inference mode on one thread."""

    def __init__(self, net: RewardNet) -> None:
        self.net = net

    def __call__(self, obs: Array, acts: Array, next_obs: Array, dones: Array) -> Array:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.inference_mode():
                dev = self.net.device
                t = [torch.from_numpy(np.ascontiguousarray(v)).to(dev) for v in (obs, acts, next_obs, dones)]
                r = self.net.score(self.net.encode(*t)).mean(0)
                return r.cpu().numpy().astype(np.float64).reshape(len(acts))
        finally:
            torch.set_num_threads(threads)


def reward_fn(net: RewardNet, lean: bool = True) -> RewardFn:
    """The fastest exact per-step reward function available for ``net`` (CPU nets only for NumPy)."""
    if lean and net.device.type == "cpu":
        fast = FastReward.of(net)
        if fast is not None:
            return fast
    return TorchReward(net)


__all__ = ["FastReward", "RewardFn", "TorchReward", "reward_fn"]
