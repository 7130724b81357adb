"""Save and load reward networks: weights in safetensors, constructor config as JSON.

One ``.safetensors`` file holds the ``state_dict`` and, in its metadata, the JSON
config needed to rebuild the network and, where a run wrote it, how the agent's reward was
normalised (:func:`read_reward_normalizer`). Nothing is pickled.

A crafted file gets one line naming it, not a traceback or a huge allocation: its JSON may nest
at most :data:`~prefrl.data.bounded_json.MAX_JSON_DEPTH` deep, and the network its config
describes is first built without storage (torch's ``meta`` device) and must have exactly the
tensors the file holds before it is built for real.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

import prefrl
from prefrl.data.bounded_json import loads_bounded
from prefrl.rewards.cnn import CNNReward
from prefrl.rewards.mlp import MLPReward
from prefrl.rewards.nets import RewardNet
from prefrl.rewards.reed import ReedReward
from prefrl.rewards.shaped import ShapedReward
from prefrl.rewards.spaces import space_from_json

FORMAT = "prefrl.reward_net"


def build_reward_net(config: dict[str, Any]) -> RewardNet:
    """Rebuild an (untrained) network from :attr:`RewardNet.config`."""
    cfg = dict(config)
    cls = cfg.pop("class", None)
    absorbing = str(cfg.pop("absorbing", "learned"))  # absent in files before the option
    net = _build(cls, cfg)
    net.set_absorbing(absorbing)
    return net


def _build(cls: object, cfg: dict[str, Any]) -> RewardNet:
    if cls == "ShapedReward":
        base = build_reward_net(cfg.pop("base"))
        return ShapedReward(base, **cfg)
    classes: dict[str, type[MLPReward] | type[CNNReward] | type[ReedReward]] = {
        "MLPReward": MLPReward,
        "CNNReward": CNNReward,
        "ReedReward": ReedReward,
    }
    if cls in classes:
        obs_space = space_from_json(cfg.pop("observation_space"))
        act_space = space_from_json(cfg.pop("action_space"))
        return classes[cls](obs_space, act_space, **cfg)
    raise ValueError(f"unknown reward network class {cls!r}")


def save_reward_net(net: RewardNet, path: str | Path, normalizer: dict[str, Any] | None = None) -> Path:
    """Write ``net`` to ``path`` (``.safetensors``); atomic.

    ``normalizer``: how the agent saw the reward, kept in the metadata for
    :func:`read_reward_normalizer`: ``{"normalize": bool}`` plus, when it is on, the
    :meth:`~prefrl.rewards.normalization.RewardNormalizer.state_dict` of the statistics.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "format": FORMAT,
        "config": json.dumps(net.config),
        "prefrl_version": prefrl.__version__,
        "torch_version": torch.__version__,
    }
    if normalizer is not None:
        meta["normalizer"] = json.dumps(normalizer)
    state = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    tmp = path.with_name(path.name + ".tmp")
    save_file(state, str(tmp), metadata=meta)
    tmp.replace(path)
    return path


def _metadata(path: Path) -> dict[str, str]:
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such reward model file")
    try:
        with safe_open(str(path), framework="pt") as f:
            return f.metadata() or {}
    except (SafetensorError, OSError, ValueError) as e:
        raise ValueError(f"{path}: not a readable reward model ({e})") from e


def read_reward_normalizer(path: str | Path) -> dict[str, Any] | None:
    """The normalisation saved with a reward file by :func:`save_reward_net` (``None``: not saved,
    as in files written before it was, or by a run without an agent)."""
    path = Path(path)
    text = _metadata(path).get("normalizer")
    if text is None:
        return None
    try:
        value = loads_bounded(text)
    except ValueError as e:
        raise ValueError(f"{path}: metadata 'normalizer': {e}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: metadata 'normalizer' must be a JSON object")
    return value


def load_reward_net(path: str | Path, device: torch.device | str = "cpu") -> RewardNet:
    """Load a network written by :func:`save_reward_net`, with clear errors for bad files."""
    path = Path(path)
    meta = _metadata(path)
    try:
        state = load_file(str(path), device="cpu")
    except (SafetensorError, OSError, ValueError) as e:
        raise ValueError(f"{path}: not a readable reward model ({e})") from e
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path}: not a prefrl reward model (format {meta.get('format')!r})")
    try:
        config = loads_bounded(meta.get("config", "null"))
        if not isinstance(config, dict):
            raise ValueError("metadata 'config' must be a JSON object")
        with torch.device("meta"):  # shapes only, nothing allocated
            probe = build_reward_net(config)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, RuntimeError) as e:
        msg = str(e).replace("\n", " ")[:300]
        raise ValueError(f"{path}: not a readable reward model ({type(e).__name__}: {msg})") from None
    mismatch = shape_mismatch(probe, state)
    if mismatch:  # before the network is built with storage: a crafted config could ask for terabytes
        raise ValueError(f"{path}: weights do not match the stored config ({mismatch})")
    net = build_reward_net(config)
    for key, value in net.state_dict().items():  # files from before absorbing states: reward 0
        if key.endswith("absorbing_reward") and key not in state:
            state[key] = torch.zeros_like(value)
    try:
        net.load_state_dict(state)
    except RuntimeError as e:
        raise ValueError(f"{path}: weights do not match the stored config ({e})") from e
    return net.to(device)


def shape_mismatch(net: RewardNet, state: dict[str, torch.Tensor]) -> str | None:
    """How ``net``'s tensors differ from ``state``'s (one the file lacks, or another shape), or None."""
    for key, value in net.state_dict().items():
        if key not in state:
            if key.endswith("absorbing_reward"):  # files from before absorbing states
                continue
            return f"the config has a tensor {key!r} the file lacks"
        if tuple(state[key].shape) != tuple(value.shape):
            theirs, ours = tuple(state[key].shape), tuple(value.shape)
            return f"the config makes {key!r} of shape {ours}, the file's is {theirs}"
    return None
