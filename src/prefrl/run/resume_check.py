"""Check every file ``prefrl train --resume RUN`` reads, before anything is written.

A resume reads ``labels.json``, ``preferences.npz``, ``metrics.csv`` and the latest checkpoint
(``state.json``, the reward, the trainer state, the policy, its replay buffer, its labels).
:func:`check_resume` reads them all first and raises one ``ValueError`` naming the file and the
field, so a bad file stops the resume with one line, no file changed and no TensorBoard file
added. What only the built agent can check (a policy or buffer of another environment) fails
while the checkpoint loads, which is also before anything is written (:func:`~prefrl.run.train.train`).
A path that is not a run at all (nothing there, a file, a folder without ``config.json``) gets
its own line from :func:`read_run_config`.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from prefrl.agents.policy_io import read_policy
from prefrl.agents.sb3 import BUFFER_FORMAT, OFF_POLICY
from prefrl.data.dataset import PreferenceDataset
from prefrl.data.json_types import JSONValue
from prefrl.data.trajectories import load_npz_checked
from prefrl.rewards.io import load_reward_net
from prefrl.storage.checkpoint import CheckpointDir, load_tensor_state, read_json

MAX_COUNT = 2**53
"""Above this no counter is plausible (and JSON's numbers stop being exact)."""
QUERY_SLACK = 10
"""``queries_asked`` may exceed the labels a run asks for (lost submits are asked again), but
not by more than this factor."""


def read_run_config(run: Path) -> JSONValue:
    """The ``config.json`` of the run ``--resume run`` names, or one line saying what ``run`` is
    instead: nothing, a file, or a folder that is not a run.

    Raises:
        FileNotFoundError: nothing at ``run``, or a folder without ``config.json``.
        ValueError: ``run`` is a file, or its ``config.json`` is not readable JSON.
    """
    path = run / "config.json"
    if not run.exists():
        raise FileNotFoundError(f"--resume {run}: no such directory (pass the folder a run was started in)")
    if not run.is_dir():
        inside = run.parent if (run.parent / "config.json").is_file() else None
        hint = f"; did you mean --resume {inside}" if inside is not None else ""
        raise ValueError(f"--resume {run}: a file, not a run directory{hint}")
    if not path.is_file():
        runs = sorted(str(p.parent) for p in run.glob("*/config.json"))[:3]
        hint = f"; runs in it: {', '.join(runs)}" if runs else " (a run writes it when it starts)"
        raise FileNotFoundError(f"--resume {run}: not a run directory, it has no config.json{hint}")
    return read_json(path, "run config")


def _count(
    path: Path, state: Mapping[str, object], field: str, limit: int = MAX_COUNT, optional: bool = False
) -> None:
    if field not in state and optional:
        return
    value = state.get(field)
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        raise ValueError(f"{path}: field {field!r} must be an integer in [0, {limit}], got {value!r}")


def check_state(path: Path, state: Mapping[str, object], max_queries: int = MAX_COUNT) -> None:
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
        rng_state: Any = state.get("rng")  # checked by the generator itself
        np.random.default_rng().bit_generator.state = rng_state
    except (TypeError, ValueError, KeyError, OverflowError) as e:
        raise ValueError(
            f"{path}: field 'rng' is not a NumPy generator state ({type(e).__name__}: {e})"
        ) from None


BUFFER_FIELDS = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts")
"""The arrays of a replay buffer file (:func:`~prefrl.agents.sb3.save_replay_buffer`)."""


def check_replay_buffer(path: Path) -> None:
    """A checkpoint's ``replay_buffer.npz``: its counters, and arrays of one length ``[rows,
    n_envs, ...]`` that fit them. Whether it fits the agent is checked when it is loaded."""
    try:
        data = load_npz_checked(path, BUFFER_FORMAT, 1)
        meta = json.loads(str(data["__meta__"]))
    except FileNotFoundError:
        raise ValueError(f"{path}: missing (the checkpoint's policy is off-policy)") from None
    except ValueError as e:
        raise ValueError(str(e).replace("\n", " ") if str(path) in str(e) else f"{path}: {e}") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: field '__meta__' is not a JSON object")
    for field in ("buffer_size", "n_envs"):
        _count(path, meta, field)
    _count(path, meta, "pos", meta["buffer_size"])
    if not isinstance(meta.get("full"), bool):
        raise ValueError(f"{path}: field 'full' must be true or false, got {meta.get('full')!r}")
    rows = meta["buffer_size"] if meta["full"] else meta["pos"]
    for field in BUFFER_FIELDS:
        if field not in data:
            raise ValueError(f"{path}: no field {field!r}")
        shape = data[field].shape
        if len(shape) < 2 or shape[:2] != (rows, meta["n_envs"]):
            raise ValueError(
                f"{path}: field {field!r} has shape {shape}, expected ({rows}, {meta['n_envs']}, ...)"
            )


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
    conf = read_run_config(run)
    loop = conf.get("loop") if isinstance(conf, dict) else None
    total = loop.get("total_labels") if isinstance(loop, dict) else None
    ckpt = CheckpointDir(run)
    prefs = run / "preferences.npz"
    n_labels = len(PreferenceDataset.load(prefs)) if prefs.exists() else 0
    max_queries = MAX_COUNT
    if isinstance(total, int) and not isinstance(total, bool):
        max_queries = QUERY_SLACK * max(total, 1) + n_labels
    labels = ckpt.read_labels_state()
    if labels is not None:
        labels_path = ckpt.root / "labels.json"
        if not isinstance(labels, dict):
            raise ValueError(f"{labels_path}: not a JSON object")
        _count(labels_path, labels, "queries_asked", max_queries)
        kept = labels.get("iteration_labels", {})
        if not isinstance(kept, dict) or not all(isinstance(v, int | float) for v in kept.values()):
            raise ValueError(f"{labels_path}: field 'iteration_labels' must map names to numbers")
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
        meta, _ = read_policy(path / "policy.zip")
        if meta.get("algo") in OFF_POLICY or (path / "replay_buffer.npz").exists():
            check_replay_buffer(path / "replay_buffer.npz")
