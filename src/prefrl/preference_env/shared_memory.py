"""Shared memory between the environment process and its background workers.

:class:`SharedArrays` is one block of named NumPy arrays (the segment ring, the rewarder's
request block and the board build on it). One :class:`SharedBoard` block holds a few
counters (``int64`` slots) and the reward network's ``state_dict``. The trainer publishes
weights under a seqlock: it makes the version odd, writes, then makes it even; a reader
copies the weights and keeps them only if the version was even and unchanged around the
copy. Checking for new weights is one integer read, cheap enough for every env step.
"""

from __future__ import annotations

from multiprocessing import shared_memory
from typing import TypeVar

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


def open_block(name: str) -> shared_memory.SharedMemory:
    """Attach to the shared-memory block ``name`` created by another process."""
    try:  # Python >= 3.13: do not let this process's resource tracker own the block
        return shared_memory.SharedMemory(name=name, track=False)  # type: ignore[call-arg]  # track is new in Python 3.13
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


Field = tuple[str, tuple[int, ...], str]
"""``(name, shape, dtype string)`` of one array in a shared block."""


A = TypeVar("A", bound="SharedArrays")


class SharedArrays:
    """Named NumPy arrays in one shared-memory block (``arrays[name]`` are views into it).

    Create with ``SharedArrays.create(fields)`` in the environment process and rebuild in a
    worker with ``SharedArrays.attach(name, fields)``.
    """

    def __init__(self, shm: shared_memory.SharedMemory, fields: list[Field], owner: bool) -> None:
        self.shm, self.fields, self.owner = shm, fields, owner
        self.arrays: dict[str, np.ndarray] = {}
        off = 0
        for name, shape, dtype in fields:
            a = np.ndarray(shape, np.dtype(dtype), shm.buf, off)
            self.arrays[name] = a
            off += (a.nbytes + 63) // 64 * 64

    @staticmethod
    def nbytes(fields: list[Field]) -> int:
        total = 0
        for _, shape, dtype in fields:
            total += (int(np.prod(shape)) * np.dtype(dtype).itemsize + 63) // 64 * 64
        return max(total, 64)

    @classmethod
    def create(cls: type[A], fields: list[Field]) -> A:
        return cls(shared_memory.SharedMemory(create=True, size=cls.nbytes(fields)), fields, owner=True)

    @classmethod
    def attach(cls: type[A], name: str, fields: list[Field]) -> A:
        return cls(open_block(name), fields, owner=False)

    @property
    def name(self) -> str:
        return self.shm.name

    def close(self) -> None:
        """Detach; the owner also frees the block."""
        self.arrays.clear()
        free_block(self.shm, self.owner)


def board_fields(state: dict[str, torch.Tensor]) -> list[Field]:
    """The board's arrays: counters, then each ``state_dict`` entry as ``w:<key>``."""
    fields: list[Field] = [("ints", (N_SLOTS,), "<i8"), ("floats", (N_FSLOTS,), "<f8")]
    for k, v in state.items():
        arr = v.detach().cpu().numpy()
        fields.append(("w:" + k, tuple(arr.shape), arr.dtype.str))
    return fields


class SharedBoard(SharedArrays):
    """Counters and published reward weights in one shared-memory block.

    Create it in the environment process with ``SharedBoard.create_board(state_dict)`` and
    rebuild it in a worker with ``SharedBoard.attach(name, fields)``.
    """

    def __init__(self, shm: shared_memory.SharedMemory, fields: list[Field], owner: bool) -> None:
        super().__init__(shm, fields, owner)
        self.ints, self.floats = self.arrays["ints"], self.arrays["floats"]
        self._views = {name[2:]: a for name, a in self.arrays.items() if name.startswith("w:")}

    @classmethod
    def create_board(cls, state: dict[str, torch.Tensor] | None) -> SharedBoard:
        board = cls.create(board_fields(state or {}))
        board.ints[:] = 0
        board.floats[:] = 0.0
        board.floats[REW_STD] = 1.0
        if state:
            board.publish(state, train_steps=0)
        return board

    # ------------------------------------------------------------ weights
    def publish(
        self, state: dict[str, torch.Tensor], train_steps: int, mean: float = 0.0, std: float = 1.0
    ) -> int:
        """Write new weights (trainer side); returns the new (even) version."""
        v = int(self.ints[VERSION])
        self.ints[VERSION] = v + 1  # odd: writing
        for k, view in self._views.items():
            view[...] = state[k].detach().cpu().numpy()
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

    def counters(self) -> dict[str, int]:
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
        super().close()
