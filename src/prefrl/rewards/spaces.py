"""Turn observations and actions of any Gymnasium space into float feature vectors.

Box: flattened floats; Discrete: one-hot; MultiDiscrete: concatenated one-hots;
MultiBinary: floats; Dict: the features of each entry (sorted by key), concatenated.
Also (de)serialises spaces to JSON so a saved reward model can be rebuilt without pickle.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces

from prefrl.data.json_types import JSONObject


def flat_dim(space: spaces.Space[object]) -> int:
    """Length of the feature vector :func:`encode_space` produces for ``space``."""
    if isinstance(space, spaces.Box):
        return int(np.prod(space.shape))
    if isinstance(space, spaces.Discrete):
        return int(space.n)
    if isinstance(space, spaces.MultiDiscrete):
        return int(np.sum(space.nvec))
    if isinstance(space, spaces.MultiBinary):
        return int(np.prod(space.shape))
    if isinstance(space, spaces.Dict):
        return sum(flat_dim(s) for s in space.spaces.values())
    raise TypeError(f"unsupported space {space!r}: use Box, Discrete, MultiDiscrete, MultiBinary or Dict")


def event_ndim(space: spaces.Space[object]) -> int:
    """Number of trailing dimensions one sample of ``space`` has (0 for Discrete)."""
    if isinstance(space, spaces.Discrete):
        return 0
    if isinstance(space, (spaces.Box, spaces.MultiDiscrete, spaces.MultiBinary)):
        return len(space.shape)
    raise TypeError(f"no single event shape for {space!r}")


def encode_space(space: spaces.Space[object], x: torch.Tensor | dict[str, torch.Tensor]) -> torch.Tensor:
    """Features ``[*lead, flat_dim(space)]`` (float32) from a batch ``x`` of ``space`` samples.

    Args:
        space: the space the samples belong to.
        x: tensor ``[*lead, *space.shape]`` (dict of tensors for Dict spaces).
    """
    if isinstance(space, spaces.Dict):
        if not isinstance(x, dict):
            raise TypeError(f"a Dict space needs a dict of tensors, got {type(x).__name__}")
        missing = set(space.spaces) - set(x)
        if missing:
            raise ValueError(f"dict observation lacks keys {sorted(missing)}")
        return torch.cat([encode_space(s, x[k]) for k, s in sorted(space.spaces.items())], -1)
    if isinstance(x, dict):
        raise TypeError(f"got a dict of tensors for non-Dict space {space!r}")
    nd = event_ndim(space)
    shape = tuple(space.shape) if space.shape is not None else ()
    if tuple(x.shape[x.dim() - nd :]) != shape or x.dim() < nd:
        raise ValueError(
            f"data of shape {tuple(x.shape)} does not end in the space's shape {shape} ({space})"
        )
    lead = x.shape[: x.dim() - nd]
    if isinstance(space, spaces.Discrete):
        return F.one_hot((x.long() - int(space.start)).clamp_(0, int(space.n) - 1), int(space.n)).float()
    if isinstance(space, spaces.MultiDiscrete):
        nvec = torch.as_tensor(space.nvec.reshape(-1), device=x.device)
        flat = x.reshape(*lead, -1).long() - torch.as_tensor(space.start.reshape(-1), device=x.device)
        parts = [F.one_hot(flat[..., i].clamp(0, int(n) - 1), int(n)) for i, n in enumerate(nvec)]
        return torch.cat(parts, -1).float()
    return x.reshape(*lead, -1).float()


def is_image_space(space: spaces.Space[object]) -> bool:
    """A uint8 Box of rank 3 (HWC or CHW)."""
    return isinstance(space, spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3


def channels_first(shape: tuple[int, ...]) -> bool:
    """Guess whether an image shape is CHW (else HWC): the smaller end holds the channels."""
    return shape[0] < shape[-1]


# ------------------------------------------------------------------ JSON
def space_to_json(space: spaces.Space[object]) -> JSONObject:
    """A JSON-able description of ``space`` (inverse: :func:`space_from_json`)."""
    if isinstance(space, spaces.Box):
        return {
            "type": "Box",
            "low": space.low.tolist(),
            "high": space.high.tolist(),
            "shape": list(space.shape),
            "dtype": str(space.dtype),
        }
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, spaces.MultiDiscrete):
        return {"type": "MultiDiscrete", "nvec": space.nvec.tolist(), "start": space.start.tolist()}
    if isinstance(space, spaces.MultiBinary):
        return {"type": "MultiBinary", "n": list(np.atleast_1d(space.n).tolist())}
    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": {k: space_to_json(s) for k, s in space.spaces.items()}}
    raise TypeError(f"cannot serialise space {space!r}")


def space_from_json(d: dict[str, Any]) -> spaces.Space[object]:
    """Rebuild a space written by :func:`space_to_json`."""
    t = d.get("type")
    if t == "Box":
        dtype = np.dtype(d["dtype"])
        low = np.array(d["low"], dtype=dtype).reshape(d["shape"])
        high = np.array(d["high"], dtype=dtype).reshape(d["shape"])
        return spaces.Box(low=low, high=high, dtype=dtype)
    if t == "Discrete":
        return spaces.Discrete(d["n"], start=d.get("start", 0))
    if t == "MultiDiscrete":
        return spaces.MultiDiscrete(np.array(d["nvec"]), start=np.array(d["start"]))
    if t == "MultiBinary":
        n = d["n"]
        return spaces.MultiBinary(n[0] if len(n) == 1 else n)
    if t == "Dict":
        return spaces.Dict({k: space_from_json(v) for k, v in d["spaces"].items()})
    raise ValueError(f"unknown space description {d!r}")
