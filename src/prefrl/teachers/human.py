"""Human teachers: people labelling through the query store (web app) or at a terminal.

- :class:`StoreTeacher` (an :class:`~prefrl.teachers.AsyncTeacher`): ``submit`` hands the
  fragments to a background thread, which encodes the clips and then enqueues the queries
  in a :class:`~prefrl.storage.store.QueryStore` (so the training loop never waits for
  video encoding); labellers
  answer them in the web app (``prefrl label``), possibly in another process or on another
  machine; ``poll`` returns what was answered since, rebuilt from the store alone, so a
  restarted trainer loses nothing (``poll(all=True)`` returns every answer so far); at
  the end of a run ``close_queries`` closes what is still open, so nobody answers for
  nothing, and ``counts`` says what became of every query.
- :class:`TerminalTeacher` (a sync :class:`~prefrl.teachers.Teacher`): one person at one
  machine watches the pair in a window (or an image sheet) and types L / R / E / Enter.

Answers map to labels (P(left preferred)): left → 1, right → 0, equal → 0.5,
incomparable / skip → NaN (recorded, not trained on).
"""

from __future__ import annotations

import atexit
import queue
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO

import numpy as np

from prefrl.data.fragments import Fragments
from prefrl.storage import episodes
from prefrl.storage.clips import clip_frames
from prefrl.storage.runs import finish_run, run_counts
from prefrl.storage.store import QueryStore
from prefrl.teachers import Answers

ANSWER_VALUE = {"left": 1.0, "right": 0.0, "equal": 0.5, "incomparable": np.nan, "skip": np.nan}
Combine = Literal["majority", "mean"]


def combine_answers(answers: Sequence[Sequence[str]], rule: Combine = "majority") -> np.ndarray:
    """``[B]`` labels from each query's answers (several labellers per query).

    ``"mean"``: the mean of the labellers' values (left 1, right 0, equal 0.5).
    ``"majority"``: the most frequent value; a tie gives the mean of all values.
    Incomparable and skipped answers are ignored; a query with no other answer gets NaN.

    Example:
        >>> combine_answers([["left"], ["left", "right", "left"], ["left", "right"], ["skip"]]).tolist()
        [1.0, 1.0, 0.5, nan]
    """
    if rule not in ("majority", "mean"):
        raise ValueError(f"combine rule must be 'majority' or 'mean', got {rule!r}")
    out = np.full(len(answers), np.nan, dtype=np.float32)
    for i, ans in enumerate(answers):
        vals = np.array([ANSWER_VALUE[a] for a in ans], dtype=np.float64)
        vals = vals[~np.isnan(vals)]
        if len(vals) == 0:
            continue
        if rule == "mean":
            out[i] = vals.mean()
            continue
        uniq, counts = np.unique(vals, return_counts=True)
        top = uniq[counts == counts.max()]
        out[i] = top[0] if len(top) == 1 else vals.mean()
    return out


@dataclass
class _Job:
    """One ``submit``: its own copy of the fragments it needs, ready to encode."""

    fragments: Fragments  # compact: only the fragments of the pairs, rows copied out
    pairs: np.ndarray  # [B, 2] indices into ``fragments``
    priority: list[float] | None
    done: Future[list[int]]


class StoreTeacher:
    """Asks people through a query store; answers arrive asynchronously.

    ``submit`` returns at once: a worker thread encodes the clips (about 0.1 s each) and
    then enqueues the queries, which labellers see once their clips are written. At most
    ``max_queued`` submits wait for the worker; a further ``submit`` blocks until one is
    done. An error in the worker is raised by the next ``submit``, ``poll``, ``flush`` or
    ``close``. ``flush()`` waits until everything submitted is in the store; ``close()``
    flushes and stops the worker (also run at interpreter exit).

    Args:
        store: SQLite file path or SQLAlchemy URL of the query store (created if new).
        run: the run's id in the store; a restarted trainer with the same store and run
            resumes its queries. ``prefrl train`` passes the id written into ``config.json``.
        title: the name people see and may serve the run by (default: ``run``), e.g. its folder.
        clip_dir: clip folder (default beside a SQLite file; required for other URLs).
        instruction: the task instruction shown to labellers.
        labels_per_query: a query counts as answered once this many labellers answered it.
        combine: how several answers become one label: ``"majority"`` or ``"mean"``.
        ttl_s: queries expire (are no longer shown) after this many seconds; ``None``: never.
        max_clip_bytes: prune old unlabelled clips beyond this total size; ``None``: no cap.
        fps: clip frame rate.
        max_queued: submits that may wait for the encoding thread before ``submit`` blocks.
    """

    def __init__(
        self,
        store: str | Path | QueryStore,
        run: str = "default",
        *,
        title: str | None = None,
        clip_dir: str | Path | None = None,
        instruction: str | None = None,
        labels_per_query: int = 1,
        combine: Combine = "majority",
        ttl_s: float | None = None,
        max_clip_bytes: int | None = None,
        fps: float = 15.0,
        max_queued: int = 8,
    ) -> None:
        if labels_per_query < 1:
            raise ValueError(f"labels_per_query must be >= 1, got {labels_per_query}")
        combine_answers([], combine)  # validates the rule
        self.store = store if isinstance(store, QueryStore) else QueryStore(store, clip_dir)
        self.run = run
        self.run_id = self.store.ensure_run(run, instruction, title=title)
        self.labels_per_query = labels_per_query
        self.combine = combine
        self.ttl_s = ttl_s
        self.max_clip_bytes = max_clip_bytes
        self.fps = fps
        if max_queued < 1:
            raise ValueError(f"max_queued must be >= 1, got {max_queued}")
        self._jobs: queue.Queue[_Job | None] = queue.Queue(maxsize=max_queued)
        self._lock = threading.Lock()
        self._in_flight = 0  # pairs submitted but not yet in the store
        self._errors: list[BaseException] = []
        self._worker: threading.Thread | None = None
        self._closed = False

    def submit(
        self, fragments: Fragments, pairs: np.ndarray, priority: np.ndarray | None = None
    ) -> Future[list[int]]:
        """Enqueue pairs ``[B, 2]`` of ``fragments``; their clips are encoded in the background.

        Returns a future of the query ids (resolved once the queries are in the store).
        Raises the error of an earlier submit that failed in the background, if any.
        """
        self._raise_error()
        if self._closed:
            raise RuntimeError("this StoreTeacher is closed")
        pairs = np.asarray(pairs, dtype=np.int64)
        if pairs.ndim != 2 or pairs.shape[1] != 2:
            raise ValueError(f"pairs must have shape [B, 2], got {pairs.shape}")
        if len(pairs) and (pairs.min() < 0 or pairs.max() >= len(fragments)):
            raise IndexError(
                f"pairs index fragments 0..{len(fragments) - 1}, got {pairs.min()}..{pairs.max()}"
            )
        done: Future[list[int]] = Future()
        if len(pairs) == 0:
            done.set_result([])
            return done
        if priority is not None and len(priority) != len(pairs):
            raise ValueError(f"priority has {len(priority)} entries for {len(pairs)} pairs")
        used, inverse = np.unique(pairs, return_inverse=True)
        sub = fragments.select(used)
        clip_frames(sub, np.arange(1))  # fail here, not in the worker, if the clips cannot be shown
        # copy what the worker reads, so the caller may reuse its buffers at once
        job = _Job(
            sub.compact(),
            inverse.reshape(-1, 2).astype(np.int64),
            None if priority is None else [float(p) for p in priority],
            done,
        )
        self._start_worker()
        with self._lock:
            self._in_flight += len(pairs)
        self._jobs.put(job)  # blocks while max_queued jobs wait
        return done

    def _start_worker(self) -> None:
        if self._worker is not None:
            return
        self._worker = threading.Thread(target=self._work, name="prefrl-clip-encoder", daemon=True)
        self._worker.start()
        ref = weakref.ref(self)

        def stop() -> None:
            t = ref()
            if t is not None:
                t._stop(raise_errors=False)

        atexit.register(stop)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                if job is None:
                    return
                try:
                    job.done.set_result(self._write(job))
                except BaseException as e:
                    with self._lock:
                        self._errors.append(e)
                    job.done.set_exception(e)
                finally:
                    with self._lock:
                        self._in_flight -= len(job.pairs)
            finally:
                self._jobs.task_done()

    def _write(self, job: _Job) -> list[int]:
        """Encode a job's clips, then enqueue its queries (visible to labellers from then on)."""
        n = len(job.fragments)
        clip_ids = np.asarray(self.store.add_clips(self.run_id, job.fragments, range(n), fps=self.fps))
        cp = clip_ids[job.pairs]  # [B, 2]
        ids = self.store.add_queries(
            self.run_id,
            cp[:, 0].tolist(),
            cp[:, 1].tolist(),
            job.priority,
            ttl_s=self.ttl_s,
            labels_needed=self.labels_per_query,
        )
        if self.max_clip_bytes is not None:
            self.store.prune(self.max_clip_bytes)
        return ids

    def _raise_error(self) -> None:
        with self._lock:
            errors, self._errors = self._errors, []
        if errors:
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            raise RuntimeError(f"writing submitted queries to {self.store.where} failed{more}") from errors[0]

    def flush(self) -> None:
        """Wait until every submitted query is in the store; raises a background error, if any."""
        if self._worker is not None:
            self._jobs.join()
        self._raise_error()

    def _stop(self, raise_errors: bool = True) -> None:
        if self._worker is not None and self._worker.is_alive():
            self._jobs.put(None)
            self._worker.join()
        self._closed = True
        if raise_errors:
            self._raise_error()

    def close(self) -> None:
        """Flush, stop the encoding thread and raise a background error, if any."""
        self._stop()

    def __enter__(self) -> StoreTeacher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def poll(self, all: bool = False) -> list[Answers]:
        """Answers since the last poll (by any StoreTeacher of this run), or every answer with ``all``.

        Returns ``[]`` or one :class:`~prefrl.teachers.Answers` batch (fragments, pairs
        ``[B, 2]``, labels ``[B]``, keys ``[B]`` = the store's query ids); labels are NaN
        where every answer was incomparable or skipped. Raises the error of a submit that
        failed in the background, if any.
        """
        self._raise_error()
        answered = self.store.take_answered(self.run_id, include_consumed=all)
        if not answered:
            return []
        clips = np.array([[a.left_clip, a.right_clip] for a in answered], dtype=np.int64)  # [B, 2]
        used, inverse = np.unique(clips, return_inverse=True)
        fragments = self.store.load_clip_fragments(used.tolist())
        labels = combine_answers([a.answers for a in answered], self.combine)
        keys = np.array([a.query_id for a in answered], dtype=np.int64)
        return [Answers(fragments, inverse.reshape(-1, 2).astype(np.int64), labels, keys)]

    def resume(self) -> int:
        """After a crash: delete the clips a killed trainer of this run left without a query
        (half-encoded files included); returns the number of queries this run has in the store.

        Call it before this teacher's first ``submit``, with no other trainer on this run.
        """
        self.store.sweep_run(self.run_id)
        return self.store.query_count(self.run_id)

    def pending(self) -> int:
        """Queries of this run still waiting for answers (including those still being encoded)."""
        with self._lock:
            in_flight = self._in_flight
        return self.store.pending(self.run_id) + in_flight

    def close_queries(self) -> dict[str, int]:
        """End of the run: flush, then close its open queries (see
        :func:`~prefrl.storage.runs.finish_run`: partly answered ones count as answered, the
        others expire and are no longer served). ``poll`` afterwards takes the last answers."""
        self.flush()
        return finish_run(self.store, self.run_id)

    def counts(self) -> dict[str, int]:
        """What this run asked and what became of it (:func:`~prefrl.storage.runs.run_counts`)."""
        return run_counts(self.store, self.run_id)

    @property
    def answer_hint(self) -> str:
        """Where people answer this run's queries."""
        return f"prefrl label serve --store {self.store.where} --run {self.run}"

    def publish_episode(self, frames: np.ndarray) -> None:
        """Show a full episode ``[T, H, W, 3]`` uint8 in the labelling page's side panel."""
        episodes.publish_episode(self.store, self.run_id, frames)


KEYS = {"l": "left", "r": "right", "e": "equal", "": "incomparable"}


class TerminalTeacher:
    """One person labels at the terminal, pair by pair (blocking).

    Each pair is shown in a window (matplotlib, played once; ``p`` replays) or, without a
    display, written as an image sheet (a PNG: left clip on top, right below) whose path
    is printed. Answers: ``L`` left, ``R`` right, ``E`` equal, Enter can't tell (NaN).

    Args:
        display: ``"window"``, ``"sheet"`` or ``"auto"`` (a window when a display is available).
        sheet_frames: frames per clip on an image sheet.
        sheet_dir: where sheets are written (a temporary folder by default).
        input_fn, out: how to read answers and print prompts (the terminal by default).
    """

    def __init__(
        self,
        display: Literal["auto", "window", "sheet"] = "auto",
        sheet_frames: int = 6,
        sheet_dir: str | Path | None = None,
        input_fn: Callable[[str], str] = input,
        out: TextIO | None = None,
    ) -> None:
        self.display = display
        self.sheet_frames = sheet_frames
        self.sheet_dir = Path(sheet_dir) if sheet_dir else Path(tempfile.mkdtemp(prefix="prefrl-sheets-"))
        self.input_fn = input_fn
        self.out = out or sys.stdout

    def label(self, fragments: Fragments, pairs: np.ndarray) -> np.ndarray:
        """Ask about each pair ``[B, 2]``; returns ``[B]`` labels (NaN for can't tell)."""
        pairs = np.asarray(pairs, dtype=np.int64)
        labels = np.full(len(pairs), np.nan, dtype=np.float32)
        for b, (i, j) in enumerate(pairs):
            frames = clip_frames(fragments, np.array([i, j]))  # [2, L, H, W, 3]
            self._show(frames, b, len(pairs))
            while True:
                raw = self.input_fn("Which is better? [L]eft / [R]ight / [E]qual / Enter = can't tell > ")
                key = raw.strip().lower()[:1]
                if key == "p":
                    self._show(frames, b, len(pairs))
                    continue
                if key in KEYS:
                    labels[b] = ANSWER_VALUE[KEYS[key]]
                    break
                print(
                    f"  {raw.strip()!r} is not an answer: type L, R, E, P (replay) or press Enter",
                    file=self.out,
                )
        return labels

    def _show(self, frames: np.ndarray, b: int, n: int) -> None:
        if self.display != "sheet" and _has_display():
            try:
                _play_window(frames, f"pair {b + 1} of {n}")
                return
            except Exception as e:  # no usable GUI backend: fall back to a sheet
                if self.display == "window":
                    raise RuntimeError(
                        f"cannot open a window to play the clips ({e}); use display='sheet'"
                    ) from e
        path = self.sheet_dir / f"pair_{b:04d}.png"
        write_sheet(frames, path, self.sheet_frames)
        print(f"pair {b + 1} of {n}: {path}  (top: LEFT, bottom: RIGHT)", file=self.out)


def write_sheet(frames: np.ndarray, path: Path, n_frames: int = 6) -> Path:
    """A PNG with ``n_frames`` evenly spaced frames of each clip: left clip on top, right below."""
    import imageio.v3 as iio

    two, length = frames.shape[:2]
    pick = np.linspace(0, length - 1, min(n_frames, length)).round().astype(int)
    sel = frames[:, pick]  # [2, k, H, W, 3]
    h, w = sel.shape[2:4]
    gap = 4
    sheet = np.full((two * h + gap, len(pick) * (w + gap) - gap, 3), 255, dtype=np.uint8)
    for r in range(two):
        for k in range(len(pick)):
            sheet[r * (h + gap) : r * (h + gap) + h, k * (w + gap) : k * (w + gap) + w] = sel[r, k]
    path.parent.mkdir(parents=True, exist_ok=True)
    iio.imwrite(path, sheet)
    return path


def _has_display() -> bool:
    import os

    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) or sys.platform == "darwin"


def _play_window(frames: np.ndarray, title: str, fps: float = 15.0) -> None:
    """Play both clips side by side once in a matplotlib window (non-blocking afterwards)."""
    import matplotlib.pyplot as plt

    fig = plt.figure("prefrl: which is better?")
    fig.clf()
    axes = fig.subplots(1, 2)
    ims = []
    for ax, clip, name in zip(axes, frames, ("LEFT (L)", "RIGHT (R)")):
        ax.set_title(name)
        ax.axis("off")
        ims.append(ax.imshow(clip[0]))
    fig.suptitle(title)
    plt.show(block=False)
    for t in range(frames.shape[1]):
        for im, clip in zip(ims, frames):
            im.set_data(clip[t])
        plt.pause(1.0 / fps)
