"""The per-step learned reward, computed in a process of its own while the env steps.

A reward model that reads only ``(obs, act)`` (the defaults: ``MLPReward`` without
``use_next_obs`` / ``use_done``, ``CNNReward`` without them) can score step ``t``
before the wrapped environment has made it. The wrapper hands ``obs_t`` and ``a_t`` to the
*rewarder* process when ``step()`` starts, steps the environment meanwhile, and collects
the rewards when the environment returns: on a machine with a core to spare the reward
costs the environment process a semaphore release and a one-byte pipe message instead of the
network's forward pass.

The rewarder runs at normal priority (unlike the labeller and trainer), keeps its own copy
of the reward network and follows the weights the trainer publishes on the shared board;
with the rewards it returns the normalisation statistics of the weights it used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from prefrl.preference_env.shared_memory import Field, SharedArrays, SharedBoard
from prefrl.rewards.cnn import CNNReward
from prefrl.rewards.inference import reward_fn
from prefrl.rewards.io import build_reward_net
from prefrl.rewards.mlp import MLPReward
from prefrl.rewards.nets import RewardNet


def overlappable(net: RewardNet) -> bool:
    """Whether ``net`` reads only ``(obs, act)``, so step ``t``'s reward can be computed early."""
    if type(net) is MLPReward:
        return not (net.use[2] or net.use[3])
    if type(net) is CNNReward:
        return not (net.use_next_obs or net.use_done)
    return False


def request_fields(n: int, obs: np.ndarray, act: np.ndarray) -> list[Field]:
    """The request/reply block for ``n`` envs: ``obs [n, ...]``, ``acts [n, ...]``, ``out [n]``
    (raw ensemble-mean rewards) and ``meta [3]`` (mean, std, training steps of the weights).
    With ``from_ring`` set, the observations are rows ``rows [n]`` of the segment ring instead
    (the environment process then copies nothing)."""
    return [
        ("obs", (n, *obs.shape[1:]), obs.dtype.str),
        ("acts", (n, *act.shape[1:]), act.dtype.str),
        ("rows", (n,), "<i8"),  # or: rows of the segment ring that hold the observations
        ("from_ring", (1,), "<i8"),
        ("out", (n,), "<f8"),
        ("meta", (3,), "<f8"),
    ]


@dataclass
class RewarderLink:
    """The rewarder's side: network config, request block and the two doorbell pipes."""

    net_config: dict[str, Any]
    block: str
    fields: list[Field]
    go: Any  # semaphore: released once per request in the block
    done: Any  # write end: the reply is in the block
    ring: str | None = None  # the segment ring's block and fields, when the mode records
    ring_fields: list[Field] | None = None


def rewarder(board: SharedBoard, guard: Any, link: RewarderLink) -> None:
    """Answer reward requests until stopped (run by ``workers.run_worker``)."""
    net = build_reward_net(link.net_config).eval()
    block = SharedArrays.attach(link.block, link.fields)
    a = block.arrays
    ring = SharedArrays.attach(link.ring, link.ring_fields) if link.ring and link.ring_fields else None
    ring_obs = None if ring is None else ring.arrays["obs"].reshape(-1, *a["obs"].shape[1:])
    dones = np.zeros(len(a["out"]), bool)
    version, fn, stats = -1, None, (0.0, 1.0, 0.0)
    try:
        while True:
            guard.check()
            if not link.go.acquire(timeout=0.1):
                continue
            v = board.version()
            if (v != version and v % 2 == 0) or fn is None:
                got = board.read()
                if got is not None:
                    version, state, mean, std, steps = got
                    net.load_state_dict(state)
                    fn, stats = reward_fn(net), (mean, std, float(steps))
            if fn is None:
                raise RuntimeError("no consistent reward weights on the shared board")
            if a["from_ring"][0]:
                np.take(ring_obs, a["rows"], axis=0, out=a["obs"])  # type: ignore[arg-type]  # NumPy's stubs: out of any dtype
            a["out"][:] = fn(a["obs"], a["acts"], a["obs"], dones)
            a["meta"][:] = stats
            link.done.send_bytes(b"1")
    finally:
        del a, ring_obs
        block.close()
        if ring is not None:
            ring.close()


__all__ = ["RewarderLink", "overlappable", "request_fields", "rewarder"]
