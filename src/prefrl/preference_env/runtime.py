"""The background processes of a preference wrapper: start, watch, talk to, stop.

:class:`Runtime` holds no reference to the wrapper, so ``weakref.finalize`` can stop the
processes when the wrapper is garbage collected. Workers also exit by themselves when
the environment process dies (see :mod:`prefrl.preference_env.workers`). The processes
themselves: :mod:`~prefrl.preference_env.labeller`, :mod:`~prefrl.preference_env.trainer_process`
and :mod:`~prefrl.preference_env.rewarder`.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import queue
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from prefrl.preference_env import rewarder as ps
from prefrl.preference_env import shared_memory as sh
from prefrl.preference_env import workers as pw
from prefrl.preference_env.config import PreferenceEnvConfig
from prefrl.preference_env.labeller import LabellerSettings, labeller
from prefrl.preference_env.ring import RingSpec, SegmentRing, recv_slots, send_slots
from prefrl.preference_env.shared_memory import Field, SharedArrays, SharedBoard
from prefrl.preference_env.trainer_process import TrainerSettings, trainer

WORKER_MODULES = [
    "prefrl.preference_env.labeller",
    "prefrl.preference_env.trainer_process",
    "prefrl.preference_env.rewarder",
]
"""What the background processes import: the forkserver preloads them once for all workers."""


class BackgroundProcessError(RuntimeError):
    """A background process of the preference wrapper failed; the message has its traceback."""


class Runtime:
    """Shared board, segment ring, queues and the labeller / trainer processes (as the mode needs).

    ``ring`` (a :class:`~prefrl.preference_env.ring.RingSpec`) is needed when the mode labels;
    ``rewarder`` (request fields, see :mod:`prefrl.preference_env.rewarder`) starts the rewarder.
    """

    def __init__(
        self,
        config: PreferenceEnvConfig,
        state: dict[str, torch.Tensor],
        net_config: dict[str, object],
        ring: RingSpec | None = None,
        rewarder: list[Field] | None = None,
    ) -> None:
        self.config = config
        self.board = SharedBoard.create_board(state)
        self.procs: dict[str, Any] = {}
        self.closed = False
        self.failure: str | None = None
        self.ring: SegmentRing | None = None
        self.requests: SharedArrays | None = None
        self._pipes: list[Any] = []
        self._asked = 0  # the number of the last command sent to the trainer
        if not (config.labels or config.trains):
            return
        ctx = mp.get_context(config.context_method())
        if config.context_method() == "forkserver":
            # preload what the workers import (torch._dynamo: the optimisers import it)
            ctx.set_forkserver_preload([*WORKER_MODULES, "torch._dynamo"])
        alive_r, self._alive_w = ctx.Pipe(duplex=False)
        self._stop = ctx.Event()
        self.errors = ctx.Queue()
        links = pw.WorkerLinks(
            self.board.name, self.board.fields, alive_r, self._stop, self.errors, config.niceness
        )
        prefs = ctx.Queue()  # unbounded: preferences are never dropped
        self.commands, self.replies = ctx.Queue(), ctx.Queue()
        self._queues = [self.errors, prefs, self.commands, self.replies]
        settings = pw.settings_from(TrainerSettings, config, net_config=net_config, train=config.trains)
        self._add(ctx, "trainer", links, trainer, settings, prefs, self.commands, self.replies)
        child_ends = [alive_r]
        if config.labels:
            if ring is None:
                raise ValueError("a labelling mode needs the segment ring's shapes")
            self.ring = SegmentRing.create_ring(ring)
            ready_r, self._ready_w = ctx.Pipe(duplex=False)  # finished slots: environment -> labeller
            self._free_r, free_w = ctx.Pipe(duplex=False)  # copied-out slots: labeller -> environment
            self._pipes = [self._ready_w, self._free_r]
            child_ends += [ready_r, free_w]
            lab = pw.settings_from(LabellerSettings, config)
            ring_link = pw.RingLink(self.ring.name, ring, ready_r, free_w)
            self._add(ctx, "labeller", links, labeller, lab, ring_link, prefs)
        if rewarder is not None:
            self.requests = SharedArrays.create(rewarder)
            # requests ring a semaphore: a pipe write is a "synchronous" wake-up, which the
            # scheduler answers by running the rewarder on the env process's own CPU
            self._go = ctx.Semaphore(0)
            self._done_r, done_w = ctx.Pipe(duplex=False)
            self._pipes += [self._done_r]
            child_ends += [done_w]
            rl = ps.RewarderLink(net_config, self.requests.name, rewarder, self._go, done_w)
            if self.ring is not None:
                rl.ring, rl.ring_fields = self.ring.name, self.ring.fields
            self._add(ctx, "rewarder", replace(links, niceness=0), ps.rewarder, rl)
        for p in self.procs.values():
            p.start()
        for end in child_ends:
            end.close()

    def _add(
        self, ctx: Any, name: str, links: pw.WorkerLinks, body: Callable[..., None], *args: object
    ) -> None:
        """A daemon worker process ``prefrl-<name>`` running ``body`` (started later)."""
        self.procs[name] = ctx.Process(
            target=pw.run_worker, args=(name, links, body, *args), daemon=True, name=f"prefrl-{name}"
        )

    def pids(self) -> dict[str, int]:
        """``{role: pid}`` of the background processes that are running (none once shut down)."""
        if self.closed:
            return {}
        return {name: p.pid for name, p in self.procs.items() if p.pid is not None and p.is_alive()}

    # ------------------------------------------------------------ health
    def check(self) -> None:
        """Raise :class:`BackgroundProcessError` if a worker reported an error or died."""
        if self.failure is not None:
            raise BackgroundProcessError(self.failure)
        if self.closed or not self.procs:
            return
        if self.board.ints[sh.ERROR]:
            try:
                name, tb = self.errors.get(timeout=10.0)
                self.failure = f"the preference wrapper's {name} process failed:\n{tb}"
            except queue.Empty:
                self.failure = "a background process of the preference wrapper failed (no traceback arrived)"
        else:
            for name, p in self.procs.items():
                if not p.is_alive():
                    self.failure = f"the preference wrapper's {name} process died (exit code {p.exitcode})"
                    break
        if self.failure is not None:
            self.shutdown()
            raise BackgroundProcessError(self.failure)

    def send_ready(self, slots: list[int]) -> None:
        """Hand finished segments (ring slot numbers) to the labeller."""
        try:
            send_slots(self._ready_w, slots)
        except OSError:  # BrokenPipeError: the labeller is gone; say why, not where
            self.check()
            raise BackgroundProcessError("the preference wrapper's labeller process is gone") from None

    def take_free(self) -> list[int]:
        """Slots the labeller has copied out since the last call (never blocks)."""
        try:
            return recv_slots(self._free_r)
        except (EOFError, OSError):  # the labeller is gone; check() reports why
            return []

    def submit_reward(self, obs: np.ndarray, acts: np.ndarray, ring_rows: np.ndarray | None = None) -> None:
        """Ask the rewarder for the rewards of ``obs [n, ...]``, ``acts [n, ...]`` (returns at once).

        With ``ring_rows [n]`` (rows of the segment ring that hold ``obs``), ``obs`` is not copied.
        """
        assert self.requests is not None  # a rewarder process was started
        a = self.requests.arrays
        if ring_rows is not None and self.ring is not None:
            a["rows"][:] = ring_rows
            a["from_ring"][0] = 1
        else:
            np.copyto(a["obs"], obs, casting="same_kind")
            a["from_ring"][0] = 0
        a["acts"][...] = acts
        self._go.release()

    def collect_reward(self) -> tuple[np.ndarray, float, float, int]:
        """``(raw rewards [n], mean, std, training steps)`` of the last request (waits for it)."""
        while not self._done_r.poll(1.0):
            self.check()
        self._done_r.recv_bytes()
        assert self.requests is not None  # a rewarder process was started
        a = self.requests.arrays
        mean, std, steps = a["meta"].tolist()
        return a["out"].copy(), mean, std, int(steps)

    def request(self, cmd: tuple[object, ...], timeout: float | None = None) -> object:
        """Send a command to the trainer and wait for its reply (raising worker errors).

        The trainer answers between two rounds of its fit, so a reply can take as long as a
        round. ``timeout`` (seconds) bounds the wait; ``None`` (the default) waits as long as the
        trainer process lives: :meth:`check` raises as soon as it dies. Commands are numbered, so
        the late answer to a request that timed out is dropped, never read as a later one's."""
        if "trainer" not in self.procs:
            raise RuntimeError(f"mode {self.config.mode!r} runs no trainer process to ask")
        self.check()
        self._asked += 1
        self.commands.put((self._asked, *cmd))
        end = math.inf if timeout is None else time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                number, status, value = self.replies.get(timeout=0.2)
            except queue.Empty:
                self.check()
                continue
            if number != self._asked:  # the late answer to a request that timed out
                continue
            if status != "ok":
                raise RuntimeError(f"the trainer process could not do {cmd[0]!r}: {value}")
            return value
        raise TimeoutError(f"the trainer process did not answer {cmd[0]!r} within {timeout} s")

    # ------------------------------------------------------------ stop
    def shutdown(self) -> None:
        """Stop the workers (politely, then by force) and free shared memory. Idempotent."""
        if self.closed:
            return
        self.closed = True
        if self.procs:
            self._stop.set()
            self._alive_w.close()
            end = time.monotonic() + 5.0
            for p in self.procs.values():
                p.join(timeout=max(0.0, end - time.monotonic()))
            for p in self.procs.values():
                if p.is_alive():
                    p.terminate()
                    p.join(timeout=2.0)
                if p.is_alive():
                    p.kill()
                    p.join(timeout=2.0)
            for q in self._queues:
                q.cancel_join_thread()
                q.close()
        for c in self._pipes:
            c.close()
        for block in (self.ring, self.requests):
            if block is not None:
                block.close()
        self.board.close()
