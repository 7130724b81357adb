"""Policy files of prefrl's own: safetensors plus JSON in a ``.zip``, nothing pickled.

stable-baselines3's ``.zip`` stores about a dozen entries (``policy_class``, the spaces, the
schedules; SBX its whole JAX policy) as serialised Python objects, and loading one runs whatever code it
carries. prefrl writes its ``policy.zip`` instead as two entries:

- ``prefrl_policy.json``: format and version, the agent's :class:`~prefrl.agents.sb3.AgentConfig`
  (algorithm resolved), the counters SB3 keeps (``num_timesteps``, ...), every non-tensor leaf
  of the optimiser states, library versions;
- ``params.safetensors``: the tensors: SB3's module and optimiser state dicts and variables
  (``log_ent_coef``), or the leaves of SBX's flax train states.

Loading builds a fresh agent with :func:`~prefrl.agents.sb3.make_agent` from that config on the
caller's environment and puts the tensors in place. A stable-baselines3 ``.zip`` (or anything
else) is refused with one line; no entry of it is ever deserialised. A crafted file gets one line
too, before anything is allocated: its JSON may nest at most :data:`MAX_JSON_DEPTH` deep, its
entries have size caps, and the sizes its agent config asks for are checked against its tensors
(network widths) and this machine's memory (replay and rollout buffers), see
:func:`check_sizes`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from prefrl.agents.policy_sizes import check_sizes
from prefrl.agents.sb3 import AUTO, AgentConfig, make_agent, resolve_algo
from prefrl.data.bounded_json import MAX_JSON_DEPTH, loads_bounded

POLICY_FORMAT = "prefrl.policy"
POLICY_VERSION = 1
META_ENTRY, PARAMS_ENTRY = "prefrl_policy.json", "params.safetensors"
MAX_META_BYTES = 16 << 20
MAX_PARAMS_BYTES = 4 << 30
"""Largest ``params.safetensors`` read (its size in the zip's directory, checked before reading)."""
COUNTERS = {
    "num_timesteps": int,
    "_total_timesteps": int,
    "_num_timesteps_at_start": int,
    "_episode_num": int,
    "_n_updates": int,
    "learning_starts": int,
    "_current_progress_remaining": float,
}
"""The plain attributes of an SB3 agent a loaded policy gets back (what resuming needs)."""
UNSAFE_EXTRA = ("tensorboard_log", "device", "verbose")
"""``extra`` keys a policy file's own config may not set (a file must not choose where to write)."""


# ------------------------------------------------------------------ nested state <-> tensors
def _key(k: object) -> str:
    if isinstance(k, bool) or not isinstance(k, str | int) or "/" in str(k) or str(k).startswith("#"):
        raise ValueError(f"state keys must be strings without '/' or ints, got {k!r}")
    return f"#{k}" if isinstance(k, int) else k


def flatten_state(state: Mapping[str, object]) -> tuple[dict[str, torch.Tensor], dict[str, object]]:
    """A nested dict (int keys allowed, as in optimiser state) as ``/``-joined paths: its tensors
    and, apart, its other (JSON) leaves."""
    tensors: dict[str, torch.Tensor] = {}
    values: dict[str, object] = {}

    def walk(prefix: str, node: object) -> None:
        if isinstance(node, dict):
            if not node:
                values[prefix[:-1]] = {}
            for k, v in node.items():
                walk(f"{prefix}{_key(k)}/", v)
        elif isinstance(node, torch.Tensor):
            tensors[prefix[:-1]] = node.detach().cpu().clone()  # own storage: shared weights too
        else:
            values[prefix[:-1]] = node

    walk("", state)
    return tensors, values


def unflatten_state(tensors: Mapping[str, torch.Tensor], values: Mapping[str, object]) -> dict[str, object]:
    """The inverse of :func:`flatten_state`."""
    out: dict[Any, Any] = {}
    for path, value in [*tensors.items(), *values.items()]:
        if path.count("/") >= MAX_JSON_DEPTH:
            raise ValueError(f"state path {path[:80]!r}... is nested more than {MAX_JSON_DEPTH} deep")
        *parents, leaf = (int(p[1:]) if p.startswith("#") else p for p in path.split("/"))
        node = out
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"state path {path!r} runs through a value")
        node[leaf] = value
    return out


# ------------------------------------------------------------------ SBX (JAX) train states
def jax_owners(agent: BaseAlgorithm) -> dict[str, object]:
    """The objects of an SBX agent that hold its train states, by the owner names the states
    are filed under."""
    return {"agent": agent, "policy": agent.policy}


def jax_train_states(agent: BaseAlgorithm) -> dict[str, dict[str, object]]:
    """SBX: the flax train states of the agent and its policy, by owner and attribute name
    (empty for a PyTorch agent). Train states are immutable, so these are copies already."""
    if not type(agent).__module__.startswith("sbx"):
        return {}
    from flax.training.train_state import TrainState

    return {
        owner: {k: v for k, v in sorted(vars(obj).items()) if isinstance(v, TrainState)}
        for owner, obj in jax_owners(agent).items()
    }


def _jax_tensors(agent: BaseAlgorithm) -> dict[str, dict[str, dict[int, torch.Tensor]]]:
    states = jax_train_states(agent)
    if not states:
        return {}  # and leave jax unimported: importing it draws from NumPy's global generator
    return jax_state_tensors(states)


def jax_state_tensors(
    states: Mapping[str, Mapping[str, object]],
) -> dict[str, dict[str, dict[int, torch.Tensor]]]:
    """The leaves of SBX train states (as :func:`jax_train_states` gives them) as tensors, by
    owner, name and leaf index; :func:`set_jax_states` puts them back."""
    import jax

    def leaves(st: object) -> dict[int, torch.Tensor]:
        return {i: torch.from_numpy(np.array(leaf)) for i, leaf in enumerate(jax.tree_util.tree_leaves(st))}

    return {owner: {k: leaves(st) for k, st in of_owner.items()} for owner, of_owner in states.items()}


def set_jax_states(agent: BaseAlgorithm, saved: object) -> None:
    """Put leaves written by :func:`jax_state_tensors` into ``agent``'s train states (their
    structure is the agent's own); a clear error where they do not fit."""
    all_states = jax_train_states(agent)
    if not all_states:
        return
    import jax
    import jax.numpy as jnp

    owners = jax_owners(agent)
    for owner, states in all_states.items():
        for name, fresh in states.items():
            leaves, treedef = jax.tree_util.tree_flatten(fresh)
            of_owner = saved.get(owner) if isinstance(saved, dict) else None
            got = of_owner.get(name) if isinstance(of_owner, dict) else None
            if not isinstance(got, dict) or sorted(got) != list(range(len(leaves))):
                raise ValueError(f"no (or a different) {owner}.{name} train state")
            new = []
            for i, leaf in enumerate(leaves):
                if tuple(got[i].shape) != tuple(np.shape(leaf)):
                    raise ValueError(
                        f"{owner}.{name} leaf {i} has shape {tuple(got[i].shape)}, "
                        f"expected {tuple(np.shape(leaf))}"
                    )
                arr = got[i].numpy()
                is_array = hasattr(leaf, "dtype")  # else a Python number (a fresh state's step)
                new.append(jnp.asarray(arr, dtype=leaf.dtype) if is_array else type(leaf)(arr.item()))
            setattr(owners[owner], name, jax.tree_util.tree_unflatten(treedef, new))


# ------------------------------------------------------------------ save
def save_agent(agent: BaseAlgorithm, path: str | Path, config: AgentConfig | None = None) -> Path:
    """Write ``agent`` to ``path`` in prefrl's policy format (atomically).

    ``config``: the :class:`AgentConfig` that built it; by default the one
    :func:`~prefrl.agents.sb3.make_agent` attached to the agent.
    """
    path = Path(path)
    config = config or getattr(agent, "prefrl_config", None)
    if config is None:
        raise ValueError("save_agent needs the AgentConfig of an agent not built by make_agent")
    config = dataclasses.replace(config, algo=resolve_algo(config.algo, agent.action_space))
    state_dicts, variables = agent._get_torch_save_params()
    state: dict[str, object] = {
        "torch": {name: _module_state(agent, name) for name in state_dicts},
        "variables": {name: _attr(agent, name) for name in variables},
        "jax": _jax_tensors(agent),
    }
    tensors, values = flatten_state(state)
    import stable_baselines3

    from prefrl import __version__

    meta = {
        "format": POLICY_FORMAT,
        "version": POLICY_VERSION,
        "algo": config.algo,
        "backend": config.backend,
        "agent": dataclasses.asdict(config),
        "seed": agent.seed,
        "counters": {k: getattr(agent, k) for k in COUNTERS if hasattr(agent, k)},
        "values": values,
        "observation_space": str(agent.observation_space),
        "action_space": str(agent.action_space),
        "versions": {"prefrl": __version__, "stable_baselines3": stable_baselines3.__version__},
    }
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(META_ENTRY, json.dumps(meta, indent=1, sort_keys=True, allow_nan=False))
        z.writestr(PARAMS_ENTRY, save_tensors(tensors))
    tmp.replace(path)
    return path


def _attr(obj: object, dotted: str) -> object:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _module_state(agent: BaseAlgorithm, name: str) -> Mapping[str, object]:
    module = _attr(agent, name)
    if not isinstance(module, torch.nn.Module | torch.optim.Optimizer):
        raise TypeError(f"{name} is a {type(module).__name__}, not a module or an optimiser")
    return module.state_dict()


# ------------------------------------------------------------------ load
def read_policy(path: str | Path) -> tuple[dict[str, object], dict[str, object]]:
    """``(meta, state)`` of a policy file, checked; one-line ``ValueError`` naming the file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such policy file")
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            if META_ENTRY not in names:
                if "data" in names:
                    raise ValueError(
                        "a stable-baselines3 .zip: its entries are pickled and can run code when "
                        "loaded, so prefrl does not read them; save the agent with "
                        "prefrl.agents.save_agent (prefrl's own format)"
                    )
                raise ValueError(f"not a prefrl policy (no {META_ENTRY})")
            for entry, cap in ((META_ENTRY, MAX_META_BYTES), (PARAMS_ENTRY, MAX_PARAMS_BYTES)):
                if entry in names and z.getinfo(entry).file_size > cap:
                    raise ValueError(f"{entry} is larger than {cap} bytes")
            meta = loads_bounded(z.read(META_ENTRY))
            if not isinstance(meta, dict) or meta.get("format") != POLICY_FORMAT:
                raise ValueError(f"{META_ENTRY}: format is not {POLICY_FORMAT!r}")
            if meta.get("version") != POLICY_VERSION:
                version = meta.get("version")
                raise ValueError(f"{META_ENTRY}: version {version!r}, this prefrl reads {POLICY_VERSION}")
            tensors = load_tensors(z.read(PARAMS_ENTRY))
        state = unflatten_state(tensors, _dict(meta, "values"))
    except (zipfile.BadZipFile, KeyError, OSError, UnicodeDecodeError, SafetensorError) as e:
        raise ValueError(f"{path}: not a readable policy file ({type(e).__name__}: {e})") from None
    except ValueError as e:  # json.JSONDecodeError included
        raise ValueError(f"{path}: {e}") from None
    except MemoryError:
        raise ValueError(
            f"{path}: not a readable policy file (too large for this machine's memory)"
        ) from None
    return meta, state


def _dict(meta: Mapping[str, object], key: str) -> dict[str, object]:
    value = meta.get(key)
    if not isinstance(value, dict):
        raise ValueError(f"{META_ENTRY}: field {key!r} must be an object")
    return value


def file_config(meta: Mapping[str, object]) -> AgentConfig:
    """The :class:`AgentConfig` stored in a policy file, without ``extra`` keys that choose
    files or devices (:data:`UNSAFE_EXTRA`)."""
    fields: dict[str, Any] = dict(_dict(meta, "agent"))  # JSON: AgentConfig checks the values
    try:
        extra = loads_bounded(fields.get("extra", "{}"))
        if isinstance(extra, dict):
            fields["extra"] = json.dumps({k: v for k, v in extra.items() if k not in UNSAFE_EXTRA})
        fields["net_arch"] = list(fields.get("net_arch", [64, 64]))
        return AgentConfig(**fields)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{META_ENTRY}: field 'agent': {e}") from None


def load_agent(
    algo: str,
    path: str | Path,
    venv: VecEnv,
    device: str = "cpu",
    backend: str = "sb3",
    config: AgentConfig | None = None,
) -> BaseAlgorithm:
    """Load a policy written by :func:`save_agent` onto ``venv`` (warm start, resume, evaluation).

    The agent is built afresh from ``config`` (a run's own, when resuming) or the file's stored
    config, then given the file's tensors and counters. ``algo`` (or ``auto``) and ``backend``
    must match the file's. Raises ``ValueError`` (one line, naming the file) for anything else,
    a stable-baselines3 ``.zip`` included: nothing in the file is unpickled.
    """
    path = Path(path)
    meta, state = read_policy(path)
    try:
        stored = file_config(meta)
        want = resolve_algo(algo, venv.action_space) if algo != AUTO else stored.algo
        if (stored.algo, stored.backend) != (want, backend):
            raise ValueError(f"a {stored.backend} {stored.algo} policy, not {backend} {want}")
        cfg = dataclasses.replace(config or stored, algo=stored.algo, device=device)
        counters = _dict(meta, "counters")
        seed = meta.get("seed")
        check_sizes(cfg, state, venv)  # before anything is allocated
        agent = make_agent(
            cfg,
            venv,
            seed=seed if isinstance(seed, int) else 0,
            learning_starts=int(_counter(counters, "learning_starts", 0)),
        )
        modules, variables = state.get("torch"), state.get("variables", {})
        if not isinstance(modules, dict | None) or not isinstance(variables, dict):
            raise ValueError("fields 'torch' and 'variables' of the state must be objects")
        if modules:
            agent.set_parameters(modules, exact_match=True, device=agent.device)
        with torch.no_grad():
            for name, value in variables.items():
                target = _attr(agent, name)
                if not isinstance(target, torch.Tensor):
                    raise ValueError(f"variable {name!r} is not a tensor of this agent")
                target.copy_(value)
        set_jax_states(agent, state.get("jax", {}))
        for k in COUNTERS:
            if k in counters:
                setattr(agent, k, _counter(counters, k, 0))
    except (ValueError, TypeError, RuntimeError, KeyError, AttributeError, MemoryError) as e:
        msg = str(e).replace("\n", " ")
        for space in ("observation_space", "action_space"):  # the likely cause first: another environment
            theirs, ours = meta.get(space), str(getattr(venv, space))
            if isinstance(theirs, str) and theirs != ours:
                msg = f"field {space!r} is {theirs}, the environment's is {ours} ({msg[:200]})"
                break
        raise ValueError(f"{path}: cannot load as a {backend} {algo} policy here: {msg}") from None
    return agent


def _counter(counters: Mapping[str, object], name: str, default: float) -> float:
    if name not in counters:
        return default
    value, kind = counters[name], COUNTERS[name]
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or (kind is int and (value != int(value) or value < 0))
    ):
        what = "a non-negative int" if kind is int else "a finite number"
        raise ValueError(f"counter {name!r} must be {what}, got {value!r}")
    return kind(value)
