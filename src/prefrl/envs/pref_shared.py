"""Shared memory between the environment process and its background workers.

One :class:`SharedBoard` block holds a few counters (``int64`` slots) and the reward
network's ``state_dict`` laid out flat. The trainer publishes weights under a seqlock:
it makes the version odd, writes, then makes it even; a reader copies the weights and
keeps them only if the version was even and unchanged around the copy. Checking for new
weights is one integer read, cheap enough for every environment step.
"""

from __future__ import annotations

from dataclasses import dataclass
from multiprocessing import shared_memory
from typing import Any

import numpy as np
import torch

# int64 slots of the header
VERSION = 0  # seqlock counter of the weights (even: stable)
TRAIN_STEPS = 1  # reward training steps done by the published weights
ERROR = 2  # set to 1 by a worker that failed (traceback on the error queue)
PAIRS = 3  # labelled pairs in the trainer's preference set
SEGMENTS_LABELLED = 4  # segments the labeller has received
PAIRS_LABELLED = 5  # pairs the labeller got answers for (NaN answers included)
PENDING = 6  # queries asked of an asynchronous teacher, not yet answered
CHECKPOINTS = 7  # reward checkpoints written
N_SLOTS = 16
# float64 slots (same block, after the int64 slots)
REW_MEAN = 0
REW_STD = 1
N_FSLOTS = 4
HEADER_BYTES = 8 * (N_SLOTS + N_FSLOTS)


def open_block(name: str) -> shared_memory.SharedMemory:
    """Attach to the shared-memory block ``name`` created by another process."""
    try:  # Python >= 3.13: do not let this process's resource tracker own the block
        return shared_memory.SharedMemory(name=name, track=False)  # type: ignore[call-arg]
    except TypeError:
        return shared_memory.SharedMemory(name=name)


def free_block(shm: shared_memory.SharedMemory, owner: bool) -> None:
    """Detach from ``shm`` (drop every view first); the ``owner`` also frees it."""
    try:
        shm.close()
    except BufferError:  # a view is still alive somewhere; the OS frees it at exit
        pass
    if owner:
        try:
            shm.unlink()
        except FileNotFoundError:
            pass


@dataclass(frozen=True)
class TensorSlot:
    """Where one ``state_dict`` entry lives in the block."""

    key: str
    dtype: str
    shape: tuple[int, ...]
    offset: int
    nbytes: int


def layout_of(state: dict[str, torch.Tensor]) -> list[TensorSlot]:
    """Byte layout of a ``state_dict`` after the header, 8-byte aligned."""
    slots, off = [], HEADER_BYTES
    for k, v in state.items():
        arr = v.detach().cpu().numpy()
        slots.append(TensorSlot(k, arr.dtype.str, tuple(arr.shape), off, arr.nbytes))
        off += (arr.nbytes + 7) // 8 * 8
    return slots


class SharedBoard:
    """Counters and published reward weights in one shared-memory block.

    Create it in the environment process with ``SharedBoard.create(state_dict)`` and
    rebuild it in a worker with ``SharedBoard.attach(name, layout)``.
    """

    def __init__(self, shm: shared_memory.SharedMemory, layout: list[TensorSlot], owner: bool) -> None:
        self.shm, self.layout, self.owner = shm, layout, owner
        self.ints = np.ndarray((N_SLOTS,), dtype=np.int64, buffer=shm.buf)
        self.floats = np.ndarray((N_FSLOTS,), dtype=np.float64, buffer=shm.buf, offset=8 * N_SLOTS)
        self._views = {
            s.key: np.ndarray(s.shape, dtype=np.dtype(s.dtype), buffer=shm.buf, offset=s.offset)
            for s in layout
        }

    @classmethod
    def create(cls, state: dict[str, torch.Tensor] | None) -> SharedBoard:
        layout = layout_of(state) if state else []
        size = max([s.offset + s.nbytes for s in layout], default=HEADER_BYTES)
        shm = shared_memory.SharedMemory(create=True, size=size)
        board = cls(shm, layout, owner=True)
        board.ints[:] = 0
        board.floats[:] = 0.0
        board.floats[REW_STD] = 1.0
        if state:
            board.publish(state, train_steps=0)
        return board

    @classmethod
    def attach(cls, name: str, layout: list[TensorSlot]) -> SharedBoard:
        return cls(open_block(name), layout, owner=False)

    @property
    def name(self) -> str:
        return self.shm.name

    # ------------------------------------------------------------ weights
    def publish(
        self, state: dict[str, torch.Tensor], train_steps: int, mean: float = 0.0, std: float = 1.0
    ) -> int:
        """Write new weights (trainer side); returns the new (even) version."""
        v = int(self.ints[VERSION])
        self.ints[VERSION] = v + 1  # odd: writing
        for s in self.layout:
            self._views[s.key][...] = state[s.key].detach().cpu().numpy()
        self.floats[REW_MEAN], self.floats[REW_STD] = mean, std
        self.ints[TRAIN_STEPS] = train_steps
        self.ints[VERSION] = v + 2
        return v + 2

    def version(self) -> int:
        return int(self.ints[VERSION])

    def read(self) -> tuple[int, dict[str, torch.Tensor], float, float, int] | None:
        """A consistent copy ``(version, state_dict, mean, std, train_steps)``, or ``None`` mid-write."""
        v = int(self.ints[VERSION])
        if v % 2:
            return None
        state = {k: torch.from_numpy(a.copy()) for k, a in self._views.items()}
        mean, std, steps = (
            float(self.floats[REW_MEAN]),
            float(self.floats[REW_STD]),
            int(self.ints[TRAIN_STEPS]),
        )
        if int(self.ints[VERSION]) != v:
            return None
        return v, state, mean, std, steps

    def counters(self) -> dict[str, Any]:
        return {
            "reward_train_steps": int(self.ints[TRAIN_STEPS]),
            "preferences": int(self.ints[PAIRS]),
            "segments_labelled": int(self.ints[SEGMENTS_LABELLED]),
            "pairs_labelled": int(self.ints[PAIRS_LABELLED]),
            "queries_pending": int(self.ints[PENDING]),
            "reward_checkpoints": int(self.ints[CHECKPOINTS]),
            "weights_version": int(self.ints[VERSION]) // 2,
        }

    # ------------------------------------------------------------ cleanup
    def close(self) -> None:
        """Detach; the owner also frees the block."""
        self._views.clear()
        del self.ints, self.floats
        free_block(self.shm, self.owner)
