"""Run-directory checkpoints: everything needed to resume a preference-learning run.

Layout of ``RUN/checkpoints/``::

    LATEST                 name of the newest complete checkpoint directory
    iter_000004/
      state.json           loop position, schedule, normaliser stats, RNG states, config hash
      reward.safetensors   reward model (prefrl.rewards.save_reward_net)
      trainer.safetensors  reward optimiser / L2 / RNG state (tensors; numbers as JSON metadata)
      policy.zip           agent with its optimisers (prefrl.agents.policy_io: safetensors + JSON)
      replay_buffer.npz    off-policy replay buffer arrays (no pickle)
    labels.json            number of queries asked so far (written with RUN/preferences.npz)

A checkpoint directory is written completely before ``LATEST`` points to it, so a crash
while saving leaves the previous checkpoint usable. Labels are saved after every
labelling step, independently of checkpoints, so no label is ever lost.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from prefrl.data.dataset import PreferenceDataset
from prefrl.rewards.io import load_reward_net, save_reward_net
from prefrl.rewards.nets import RewardNet

CKPT_VERSION = 1


def config_hash(config: Mapping[str, object]) -> str:
    """A short stable hash of a JSON-able config."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def strict(obj: object) -> object:
    """``obj`` with every NaN or infinite float (also NumPy scalars) replaced by ``None``.

    Python's ``json`` writes them as bare ``NaN`` / ``Infinity``, which is not JSON: other
    tools (``jq``, browsers, pandas) refuse such files.
    """
    if isinstance(obj, dict):
        return {k: strict(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [strict(v) for v in obj]
    if isinstance(obj, float | np.floating):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer | np.bool_):
        return obj.item()
    return obj


def dumps(obj: object, indent: int | None = None, sort_keys: bool = False) -> str:
    """Strict JSON text of ``obj`` (see :func:`strict`), indented and sorted as :func:`json.dumps` does."""
    return json.dumps(strict(obj), allow_nan=False, indent=indent, sort_keys=sort_keys)


def write_json(path: Path, obj: object) -> None:
    """Atomic, strict JSON write (NaN and infinities become ``null``)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(dumps(obj, indent=2, sort_keys=True))
    tmp.replace(path)


def read_json(path: Path, what: str) -> Any:
    """Read JSON with a clear error naming ``what`` the file should be."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: missing {what}")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: corrupt {what} ({e})") from e


class CheckpointDir:
    """Writes and finds checkpoints under ``run_dir / "checkpoints"``."""

    def __init__(self, run_dir: str | Path, keep: int = 2) -> None:
        self.root = Path(run_dir) / "checkpoints"
        self.keep = keep

    def begin(self, iteration: int) -> Path:
        """A fresh directory for the checkpoint of ``iteration``."""
        path = self.root / f"iter_{iteration:06d}"
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path

    def commit(self, path: Path, state: Mapping[str, object]) -> None:
        """Write ``state.json`` last, point ``LATEST`` at ``path``, drop old checkpoints."""
        write_json(path / "state.json", {"version": CKPT_VERSION, **state})
        tmp = self.root / "LATEST.tmp"
        tmp.write_text(path.name)
        tmp.replace(self.root / "LATEST")
        old = sorted(p for p in self.root.glob("iter_*") if p.is_dir() and p != path)
        for p in old[: max(0, len(old) - (self.keep - 1))]:
            shutil.rmtree(p, ignore_errors=True)

    def latest(self) -> Path | None:
        """The newest committed checkpoint, or ``None`` if there is none."""
        marker = self.root / "LATEST"
        if not marker.exists():
            return None
        path = self.root / marker.read_text().strip()
        if not (path / "state.json").exists():
            raise ValueError(f"{marker} points to {path}, which is not a complete checkpoint")
        return path

    def read_state(self, path: Path) -> dict[str, object]:
        state = read_json(path / "state.json", "checkpoint state")
        if not isinstance(state, dict) or int(state.get("version", -1)) > CKPT_VERSION:
            raise ValueError(f"{path / 'state.json'}: not a prefrl checkpoint this version can read")
        return state

    # ------------------------------------------------------------- labels
    def write_labels_state(self, state: Mapping[str, object]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        write_json(self.root / "labels.json", state)

    def read_labels_state(self) -> dict[str, Any] | None:
        path = self.root / "labels.json"
        return read_json(path, "label counter") if path.exists() else None


TENSOR_STATE = "prefrl.tensor_state"


def save_tensor_state(state: Mapping[str, object], path: Path) -> None:
    """Save a nested dict of tensors and JSON values: tensors to safetensors, the rest as JSON.

    Tensors are stored under their dotted key path (``"trainer.optimizer.exp_avg"``); every
    other leaf goes, under the same path, into the file's JSON metadata. Nothing is pickled.
    """
    tensors: dict[str, torch.Tensor] = {}
    values: dict[str, object] = {}

    def walk(prefix: str, node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if not isinstance(k, str) or "." in k:
                    raise ValueError(f"state keys must be strings without dots, got {k!r}")
                walk(f"{prefix}{k}.", v)
        elif isinstance(node, torch.Tensor):
            tensors[prefix[:-1]] = node.detach().cpu().contiguous()
        else:
            values[prefix[:-1]] = node

    walk("", state)
    meta = {"format": TENSOR_STATE, "values": dumps(values)}
    tmp = path.with_name(path.name + ".tmp")
    save_file(tensors, str(tmp), metadata=meta)
    tmp.replace(path)


def load_tensor_state(path: Path) -> dict[str, object]:
    """Load a file written by :func:`save_tensor_state` back into its nested dict; clear errors."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: missing checkpoint file")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
        tensors = load_file(str(path), device="cpu")
        if meta.get("format") != TENSOR_STATE:
            raise ValueError(f"format {meta.get('format')!r}")
        values = json.loads(meta["values"])
    except (SafetensorError, OSError, ValueError, KeyError) as e:
        raise ValueError(f"{path}: corrupt checkpoint file ({type(e).__name__}: {e})") from e
    out: dict[str, Any] = {}
    for key, value in [*tensors.items(), *values.items()]:
        *parents, leaf = key.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


# ------------------------------------------------------------- the reward learner's part
def save_learner(
    path: Path, net: RewardNet, trainer_state: Mapping[str, object], dataset: PreferenceDataset
) -> None:
    """Write the reward side of a checkpoint into ``path``: ``reward.safetensors``,
    ``trainer.safetensors`` (trainer state and torch's RNG) and ``preferences.npz``."""
    save_reward_net(net, path / "reward.safetensors")
    save_tensor_state(
        {"trainer": trainer_state, "torch_rng": torch.get_rng_state()}, path / "trainer.safetensors"
    )
    dataset.save(path / "preferences.npz")


def load_learner(path: Path, net: RewardNet) -> dict[str, object]:
    """Load :func:`save_learner`'s files: the weights into ``net``, torch's RNG state restored;
    returns the trainer state. Raises ``ValueError`` naming a corrupt or foreign checkpoint."""
    try:
        saved = load_reward_net(path / "reward.safetensors")
    except (FileNotFoundError, ValueError) as e:
        raise ValueError(f"corrupt checkpoint {path}: {e}") from e
    net.load_state_dict(saved.state_dict())
    if (path / "trainer.pt").exists() and not (path / "trainer.safetensors").exists():
        raise ValueError(
            f"{path}: written by an older prefrl (trainer.pt, a pickle-based file this "
            "version does not load); start a new run directory"
        )
    blob = load_tensor_state(path / "trainer.safetensors")
    rng, trainer = blob.get("torch_rng"), blob.get("trainer")
    if not isinstance(rng, torch.Tensor) or not isinstance(trainer, dict):
        raise ValueError(f"{path / 'trainer.safetensors'}: no reward learner state (torch_rng, trainer)")
    torch.set_rng_state(rng)
    return trainer
