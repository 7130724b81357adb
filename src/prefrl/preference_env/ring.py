"""Recorded segments in shared memory, handed to the labeller by slot number.

The environment process records every step straight into a slot of a
:class:`SegmentRing` (one block of ``S`` segment slots); a finished segment is handed over
by sending its slot number (eight bytes) through a pipe, and the labeller copies it out
and sends the number back through a second pipe. Nothing is pickled and no feeder thread
competes with the environment for the GIL: shipping a segment costs the environment
process one small ``send_bytes``, whatever the size of the observations.

``S = queue_size + num_envs``: each environment always owns the slot it is filling, and at
most ``queue_size`` finished segments wait for the labeller. When none is free, the
finished segment is dropped (counted) and its slot is filled again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from prefrl.preference_env.shared_memory import Field, SharedArrays

Segment = dict[str, Any]
"""``obs [L+1, ...]``, ``acts [L, ...]``, ``rews [L]``, ``dones [L]``, optional ``frames
[L+1, H, W, 3]``, and provenance ``episode``, ``start`` (ints)."""


@dataclass(frozen=True)
class RingSpec:
    """Shapes of a :class:`SegmentRing` (plain data, sent to the labeller process)."""

    slots: int
    length: int
    obs_shape: tuple[int, ...]
    obs_dtype: str
    act_shape: tuple[int, ...]
    act_dtype: str
    frame_shape: tuple[int, ...] | None = None

    def fields(self) -> list[Field]:
        """``(name, shape, dtype)`` of each array in the block, in order."""
        s, L = self.slots, self.length
        out = [
            ("obs", (s, L + 1, *self.obs_shape), self.obs_dtype),
            ("acts", (s, L, *self.act_shape), self.act_dtype),
            ("rews", (s, L), "<f4"),
            ("dones", (s, L), "|b1"),
            ("meta", (s, 2), "<i8"),  # episode, start step
        ]
        if self.frame_shape is not None:
            out.append(("frames", (s, L + 1, *self.frame_shape), "|u1"))
        return out


class SegmentRing(SharedArrays):
    """``S`` segment slots in one shared-memory block; see the module doc.

    Arrays (views into the block): ``obs [S, L+1, ...]``, ``acts [S, L, ...]``,
    ``rews [S, L]``, ``dones [S, L]``, ``meta [S, 2]`` (episode, start step) and, when
    rendered frames are kept, ``frames [S, L+1, H, W, 3]``.
    """

    @classmethod
    def create_ring(cls, spec: RingSpec) -> SegmentRing:
        return cls.create(spec.fields())

    @classmethod
    def attach_ring(cls, name: str, spec: RingSpec) -> SegmentRing:
        return cls.attach(name, spec.fields())

    def read(self, slot: int) -> Segment:
        """A private copy of the segment in ``slot``."""
        a = self.arrays
        seg: Segment = {
            "obs": a["obs"][slot].copy(),
            "acts": a["acts"][slot].copy(),
            "rews": a["rews"][slot].copy(),
            "dones": a["dones"][slot].copy(),
            "episode": int(a["meta"][slot, 0]),
            "start": int(a["meta"][slot, 1]),
        }
        if "frames" in a:
            seg["frames"] = a["frames"][slot].copy()
        return seg


def send_slots(conn: Any, slots: np.ndarray | list[int]) -> None:
    """Send slot numbers (``int64``) through a ``multiprocessing`` connection, unpickled."""
    conn.send_bytes(np.asarray(slots, np.int64).tobytes())


def recv_slots(conn: Any, timeout: float = 0.0) -> list[int]:
    """All slot numbers waiting on ``conn`` (waiting up to ``timeout`` s for the first)."""
    out: list[int] = []
    wait = timeout
    while conn.poll(wait):
        out.extend(np.frombuffer(conn.recv_bytes(), np.int64).tolist())
        wait = 0.0
    return out


__all__ = ["RingSpec", "Segment", "SegmentRing", "recv_slots", "send_slots"]
