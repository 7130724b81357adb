"""Check every file ``prefrl train --resume RUN`` reads, before anything is written.

A resume reads ``labels.json``, ``preferences.npz``, ``metrics.csv`` and the latest checkpoint
(``state.json``, the reward, the trainer state, the policy, its labels). :func:`check_resume`
reads them all first and raises one ``ValueError`` naming the file and the field, so a bad file
stops the resume with one line, no file changed and no TensorBoard file added.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np

from prefrl.agents.policy_io import read_policy
from prefrl.data.dataset import PreferenceDataset
from prefrl.rewards.io import load_reward_net
from prefrl.storage.checkpoint import CheckpointDir, load_tensor_state, read_json

MAX_COUNT = 2**53
"""Above this no counter is plausible (and JSON's numbers stop being exact)."""
QUERY_SLACK = 10
"""``queries_asked`` may exceed the labels a run asks for (lost submits are asked again), but
not by more than this factor."""


def _count(
    path: Path, state: dict[str, Any], field: str, limit: int = MAX_COUNT, optional: bool = False
) -> None:
    if field not in state and optional:
        return
    value = state.get(field)
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        raise ValueError(f"{path}: field {field!r} must be an integer in [0, {limit}], got {value!r}")


def check_state(path: Path, state: dict[str, Any], max_queries: int = MAX_COUNT) -> None:
    """The fields of a checkpoint's ``state.json`` that a resume uses."""
    for field in ("iteration", "env_steps"):
        _count(path, state, field)
    _count(path, state, "queries_asked", max_queries)
    for field in ("labels_since_train", "agent_num_timesteps"):
        _count(path, state, field, optional=True)
    if not isinstance(state.get("started"), bool):
        raise ValueError(f"{path}: field 'started' must be true or false, got {state.get('started')!r}")
    wall = state.get("wall_s")
    if isinstance(wall, bool) or not isinstance(wall, int | float) or not math.isfinite(wall) or wall < 0:
        raise ValueError(f"{path}: field 'wall_s' must be a non-negative number, got {wall!r}")
    if not isinstance(state.get("history"), list):
        raise ValueError(f"{path}: field 'history' must be a list")
    evals = state.get("evaluations", [])
    if not isinstance(evals, list) or not all(
        isinstance(e, list) and len(e) == 2 and all(isinstance(x, int | float) for x in e) for e in evals
    ):
        raise ValueError(f"{path}: field 'evaluations' must be a list of [step, return] pairs")
    if state.get("normalizer") is not None and not isinstance(state["normalizer"], dict):
        raise ValueError(f"{path}: field 'normalizer' must be an object or null")
    try:
        np.random.default_rng().bit_generator.state = state.get("rng")
    except (TypeError, ValueError, KeyError, OverflowError) as e:
        raise ValueError(
            f"{path}: field 'rng' is not a NumPy generator state ({type(e).__name__}: {e})"
        ) from None


def check_metrics(path: Path) -> None:
    """``metrics.csv``: text with a ``step`` column of numbers."""
    if not path.exists():
        return
    try:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames is None:
                return
            if "step" not in reader.fieldnames:
                raise ValueError(f"{path}: no 'step' column")
            for i, row in enumerate(reader, start=2):
                step = row.get("step")
                if step is None or not math.isfinite(float(step)):
                    raise ValueError(f"{path}: line {i}: field 'step' is {step!r}")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a text CSV file") from None
    except (csv.Error, TypeError) as e:
        raise ValueError(f"{path}: not a readable CSV file ({e})") from None
    except ValueError as e:
        raise ValueError(str(e) if str(path) in str(e) else f"{path}: field 'step': {e}") from None


def check_resume(run: Path) -> None:
    """Read every file a resume of ``run`` reads; one ``ValueError`` naming the file and field."""
    conf = read_json(run / "config.json", "run config")
    total = conf.get("loop", {}).get("total_labels") if isinstance(conf, dict) else None
    ckpt = CheckpointDir(run)
    prefs = run / "preferences.npz"
    n_labels = len(PreferenceDataset.load(prefs)) if prefs.exists() else 0
    max_queries = MAX_COUNT
    if isinstance(total, int) and not isinstance(total, bool):
        max_queries = QUERY_SLACK * max(total, 1) + n_labels
    labels = ckpt.read_labels_state()
    if labels is not None:
        path = ckpt.root / "labels.json"
        if not isinstance(labels, dict):
            raise ValueError(f"{path}: not a JSON object")
        _count(path, labels, "queries_asked", max_queries)
        kept = labels.get("iteration_labels", {})
        if not isinstance(kept, dict) or not all(isinstance(v, int | float) for v in kept.values()):
            raise ValueError(f"{path}: field 'iteration_labels' must map names to numbers")
    check_metrics(run / "metrics.csv")
    path = ckpt.latest()
    if path is None:
        return
    check_state(path / "state.json", ckpt.read_state(path), max_queries)
    load_tensor_state(path / "trainer.safetensors")
    try:
        load_reward_net(path / "reward.safetensors")
    except (FileNotFoundError, ValueError) as e:
        raise ValueError(f"corrupt checkpoint {path}: {e}") from None
    PreferenceDataset.load(path / "preferences.npz")
    if (path / "policy.zip").exists():
        read_policy(path / "policy.zip")
