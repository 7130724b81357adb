"""What the background processes of the preference wrapper share.

The **labeller** (:mod:`prefrl.preference_env.labeller`) and the **trainer**
(:mod:`prefrl.preference_env.trainer_process`) both run :func:`run_worker`, which exits when
the environment process dies (a pipe whose other end only that process holds reaches
end-of-file), when asked to stop, and reports any exception with its traceback on the
error queue before exiting. Here too: the links they are started with, and how the
labeller's clips travel to the trainer (:func:`segments_to_fragments`,
:func:`fragments_to_message`, :func:`merge_messages`). Only NumPy arrays, ``state_dict``
tensors and plain data cross process boundaries.
"""

from __future__ import annotations

import dataclasses
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar, cast

import numpy as np
import torch

from prefrl.data.fragments import Fragments
from prefrl.preference_env import shared_memory as sh
from prefrl.preference_env.ring import RingSpec, Segment
from prefrl.preference_env.shared_memory import Field, SharedBoard


@dataclass
class RingLink:
    """The labeller's side of the segment ring: block name, shapes and the two slot pipes."""

    name: str
    spec: RingSpec
    ready: Any  # read end: slot numbers of finished segments
    free: Any  # write end: slot numbers copied out, free again


@dataclass
class WorkerLinks:
    """Everything a worker shares with the environment process (all picklable)."""

    board_name: str
    fields: list[Field]
    alive: Any  # read end of a pipe; end-of-file means the environment process died
    stop: Any  # multiprocessing Event
    errors: Any  # multiprocessing Queue of (worker name, formatted traceback)
    niceness: int = 5


class Stop(Exception):
    """Raised inside a worker when it should exit quietly."""


class Guard:
    """Stop checks shared by the workers: :meth:`check` raises :class:`Stop` when asked to stop
    or when the environment process is gone."""

    def __init__(self, links: WorkerLinks) -> None:
        self.links = links

    def check(self) -> None:
        if self.links.stop.is_set():
            raise Stop
        if self.links.alive.poll():  # EOF: the environment process is gone
            raise Stop


def run_worker(name: str, links: WorkerLinks, body: Callable[..., None], *args: object) -> None:
    """Process entry point: run ``body(board, guard, *args)``, report failures, always clean up."""
    board = None
    try:
        if links.niceness >= 20 and hasattr(os, "SCHED_IDLE"):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # runs only on otherwise idle CPUs
        elif links.niceness:
            os.nice(min(links.niceness, 19))
    except OSError:
        pass
    torch.set_num_threads(1)
    try:
        board = SharedBoard.attach(links.board_name, links.fields)
        body(board, Guard(links), *args)
    except Stop:
        pass
    except BaseException:
        try:
            links.errors.put((name, traceback.format_exc()))
            if board is not None:
                board.ints[sh.ERROR] = 1
        except Exception:
            pass
    finally:
        if board is not None:
            board.close()


# --------------------------------------------------------------- fragments
def segments_to_fragments(segs: list[Segment]) -> Fragments:
    """``n`` segments (each ``obs [L+1, ...]``, ``acts [L, ...]``, ``rews [L]``, ``dones [L]``)
    as ``n`` fragments of length ``L`` over one table of ``n * (L + 1)`` rows (the last action,
    reward and done of each fragment's rows are padding)."""
    L = len(segs[0]["acts"])
    acts = np.stack([np.concatenate([s["acts"], np.zeros_like(s["acts"][:1])]) for s in segs])
    rews = np.stack([np.concatenate([s["rews"], np.zeros(1, np.float32)]) for s in segs])
    dones = np.stack([np.concatenate([s["dones"], np.zeros(1, bool)]) for s in segs])
    frames = None
    if all("frames" in s for s in segs):
        frames = np.concatenate([s["frames"] for s in segs])
    return Fragments(
        np.concatenate([s["obs"] for s in segs]),
        acts.reshape(-1, *acts.shape[2:]),
        rews.reshape(-1).astype(np.float32),
        dones.reshape(-1),
        np.arange(len(segs), dtype=np.int64) * (L + 1),
        L,
        np.array([s["episode"] for s in segs], dtype=np.int64),
        np.array([s["start"] for s in segs], dtype=np.int64),
        frames,
    )


class FragmentsMessage(TypedDict):
    """:class:`~prefrl.data.fragments.Fragments` as plain arrays (no rendered frames), for a queue."""

    table_obs: np.ndarray
    table_acts: np.ndarray
    table_rews: np.ndarray | None
    table_dones: np.ndarray
    rows: np.ndarray
    length: int
    episode: np.ndarray
    start: np.ndarray
    real: np.ndarray | None


def fragments_to_message(f: Fragments) -> FragmentsMessage:
    """Plain arrays of ``f`` (without rendered frames) for a queue."""
    return {
        "table_obs": f.table_obs,
        "table_acts": f.table_acts,
        "table_rews": f.table_rews,
        "table_dones": f.table_dones,
        "rows": f.rows,
        "length": f.length,
        "episode": f.episode,
        "start": f.start,
        "real": f.real,
    }


def merge_messages(
    msgs: list[tuple[FragmentsMessage, np.ndarray, np.ndarray]],
) -> tuple[Fragments, np.ndarray, np.ndarray]:
    """``(fragments, pairs [P, 2], labels [P])`` of several labeller messages as one batch.

    Each message is ``(fragments_to_message(f), pairs [p, 2], labels [p])`` with pairs indexing
    its own fragments; the merged pairs index the concatenated fragments.
    """
    frags = [Fragments(**m[0]) for m in msgs]
    offsets = np.cumsum([0] + [len(f) for f in frags[:-1]])
    pairs = np.concatenate([np.asarray(m[1], np.int64).reshape(-1, 2) + o for m, o in zip(msgs, offsets)])
    labels = np.concatenate([np.asarray(m[2], np.float32) for m in msgs])
    return (frags[0] if len(frags) == 1 else Fragments.concat(frags)), pairs, labels


S = TypeVar("S")


def settings_from(cls: type[S], config: object, **given: object) -> S:
    """A worker's settings dataclass ``cls``: ``given`` fields, the rest copied from the same-named
    fields of ``config`` (a :class:`~prefrl.preference_env.config.PreferenceEnvConfig`)."""
    names = {f.name for f in dataclasses.fields(cast(Any, cls))} - set(given)  # S: a dataclass
    return cls(**given, **{n: getattr(config, n) for n in names})  # pickled when the worker starts
