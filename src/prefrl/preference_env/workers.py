"""Background processes of :class:`~prefrl.preference_env.wrappers.PreferenceEnv`.

- The **labeller** copies finished segments out of the shared segment ring
  (:mod:`prefrl.preference_env.ring`), pairs each new segment with a recent one, asks the
  teacher and forwards every answer to the trainer.
- The **trainer** keeps the growing :class:`~prefrl.data.PreferenceDataset`, fits the
  reward network on it and publishes new weights on the shared board.

Both run :func:`run_worker`, which exits when the environment process dies (a pipe whose
other end only that process holds reaches end-of-file), when asked to stop, and reports
any exception with its traceback on the error queue before exiting. Only NumPy arrays,
``state_dict`` tensors and plain data cross process boundaries.
"""

from __future__ import annotations

import os
import queue
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from prefrl.data.dataset import PreferenceDataset
from prefrl.data.fragments import Fragments
from prefrl.preference_env import shared_memory as sh
from prefrl.preference_env.ring import RingSpec, Segment, SegmentRing, recv_slots, send_slots
from prefrl.preference_env.shared_memory import Field, SharedBoard
from prefrl.rewards.encode import fragment_rewards
from prefrl.rewards.io import build_reward_net, save_reward_net
from prefrl.teachers import Answers
from prefrl.training.trainer import RewardTrainer, RewardTrainerConfig


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


@dataclass
class LabellerSettings:
    teacher: Any  # a spec string, a Teacher or an AsyncTeacher (must pickle)
    run: str = "preference-env"
    seed: int = 0
    pool_size: int = 64
    pairs_per_segment: float = 1.0
    max_preferences: int | None = None


@dataclass
class TrainerSettings:
    net_config: dict[str, Any]
    train: bool = True
    trainer_config: RewardTrainerConfig = field(default_factory=RewardTrainerConfig)
    preferences_path: str | None = None
    max_preferences_kept: int | None = 3000
    min_preferences: int = 10
    checkpoint_dir: str | None = None
    checkpoint_every: int = 0
    train_pause_s: float = 0.05
    max_train_steps: int | None = None


class Stop(Exception):
    """Raised inside a worker when it should exit quietly."""


class Guard:
    """Stop checks shared by both workers."""

    def __init__(self, links: WorkerLinks) -> None:
        self.links = links

    def check(self) -> None:
        if self.links.stop.is_set():
            raise Stop
        if self.links.alive.poll():  # EOF: the environment process is gone
            raise Stop


def run_worker(name: str, links: WorkerLinks, body: Callable[..., None], *args: Any) -> None:
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


# --------------------------------------------------------------- teachers
def make_teacher(spec: Any, run: str, seed: int) -> Any:
    """A teacher from a spec string (``"oracle"``, ``"noisy"``, ..., ``"store:PATH_OR_URL"``) or object."""
    if not isinstance(spec, str):
        return spec
    if spec.startswith("store:"):
        try:
            from prefrl.teachers.human import StoreTeacher  # type: ignore[import-not-found]
        except ImportError as e:
            raise ImportError(
                f"teacher {spec!r} needs prefrl.teachers.human.StoreTeacher, which is not available ({e})"
            ) from e
        return StoreTeacher(store=spec[len("store:") :], run=run)
    from prefrl.teachers.synthetic import SyntheticTeacher

    return SyntheticTeacher(spec, rng=np.random.default_rng(seed))


def is_async(teacher: Any) -> bool:
    return all(callable(getattr(teacher, m, None)) for m in ("submit", "poll", "pending"))


# --------------------------------------------------------------- fragments
def segments_to_fragments(segs: list[Segment]) -> Fragments:
    """One fragment per segment, over a table of ``n * (L + 1)`` rows."""
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


def fragments_to_message(f: Fragments) -> dict[str, Any]:
    """Plain arrays of ``f`` (without rendered frames) for a queue."""
    return {
        "table_obs": f.table_obs, "table_acts": f.table_acts, "table_rews": f.table_rews,
        "table_dones": f.table_dones, "rows": f.rows, "length": f.length,
        "episode": f.episode, "start": f.start, "real": f.real,
    }  # fmt: skip


def merge_messages(
    msgs: list[tuple[dict[str, Any], np.ndarray, np.ndarray]],
) -> tuple[Fragments, np.ndarray, np.ndarray]:
    """``(fragments, pairs, labels)`` of several labeller messages as one batch."""
    frags = [Fragments(**m[0]) for m in msgs]
    offsets = np.cumsum([0] + [len(f) for f in frags[:-1]])
    pairs = np.concatenate([np.asarray(m[1], np.int64).reshape(-1, 2) + o for m, o in zip(msgs, offsets)])
    labels = np.concatenate([np.asarray(m[2], np.float32) for m in msgs])
    return (frags[0] if len(frags) == 1 else Fragments.concat(frags)), pairs, labels


# --------------------------------------------------------------- labeller
def labeller(
    board: SharedBoard, guard: Guard, settings: LabellerSettings, link: RingLink, prefs: Any
) -> None:
    """Pair incoming segments and label them; forward ``(fragments, pairs, labels)`` to the trainer."""
    prefs.cancel_join_thread()  # never block exit on a trainer that stopped reading
    ring = SegmentRing.attach_ring(link.name, link.spec)
    try:
        _label(board, guard, settings, ring, link, prefs)
    finally:
        ring.close()


def _take_segments(ring: SegmentRing, link: RingLink) -> list[Segment]:
    """Copy out the segments handed over since the last call (waiting up to 0.1 s) and free their slots."""
    try:
        slots = recv_slots(link.ready, timeout=0.1)
    except (EOFError, OSError):  # the environment process closed its end or died
        raise Stop from None
    new = [ring.read(s) for s in slots]
    if slots:
        send_slots(link.free, slots)
    return new


def _ref(seg: Segment, chosen: list[Segment], where: dict[int, int]) -> int:
    """Index of ``seg`` in ``chosen``, appending it the first time."""
    if id(seg) not in where:
        where[id(seg)] = len(chosen)
        chosen.append(seg)
    return where[id(seg)]


def _label(
    board: SharedBoard,
    guard: Guard,
    settings: LabellerSettings,
    ring: SegmentRing,
    link: RingLink,
    prefs: Any,
) -> None:
    teacher = make_teacher(settings.teacher, settings.run, settings.seed)
    asynchronous = is_async(teacher)
    rng = np.random.default_rng(settings.seed)
    pool: deque[Segment] = deque(maxlen=settings.pool_size)
    asked = 0
    credit = 0.0
    while True:
        guard.check()
        new = _take_segments(ring, link)
        board.ints[sh.SEGMENTS_LABELLED] += len(new)
        chosen: list[Segment] = []  # each segment once per batch, however many pairs use it
        where: dict[int, int] = {}
        idx: list[tuple[int, int]] = []

        for seg in new:
            credit += settings.pairs_per_segment
            while pool and credit >= 1.0:
                if settings.max_preferences is not None and asked >= settings.max_preferences:
                    break
                other = pool[int(rng.integers(len(pool)))]
                first, second = (seg, other) if rng.random() < 0.5 else (other, seg)
                idx.append((_ref(first, chosen, where), _ref(second, chosen, where)))
                credit -= 1.0
                asked += 1
            credit = min(credit, 1.0)
            pool.append(seg)
        if chosen:
            frags = segments_to_fragments(chosen)
            pairs = np.asarray(idx, dtype=np.int64).reshape(-1, 2)
            if asynchronous:
                teacher.submit(frags, pairs)
            else:
                labels = np.asarray(teacher.label(frags, pairs), dtype=np.float32)
                prefs.put((fragments_to_message(frags), pairs, labels))
                board.ints[sh.PAIRS_LABELLED] += len(pairs)
        if asynchronous:
            for batch in teacher.poll():
                ans = Answers(*batch)
                labels = np.asarray(ans.labels, dtype=np.float32)
                prefs.put((fragments_to_message(ans.fragments), np.asarray(ans.pairs), labels))
                board.ints[sh.PAIRS_LABELLED] += len(ans.pairs)
            board.ints[sh.PENDING] = int(teacher.pending())


# --------------------------------------------------------------- trainer
def split_dataset(ds: PreferenceDataset, fraction: float) -> tuple[PreferenceDataset, PreferenceDataset]:
    """(train, validation) copies by the dataset's stable validation split."""
    mask = ds.validation_mask(fraction)
    parts = []
    for keep in (~mask, mask):
        part = PreferenceDataset()
        if ds.fragments is not None and keep.any():
            part.add(ds.fragments, ds.pairs[keep], ds.labels[keep])
        parts.append(part)
    return parts[0], parts[1]


def save_preferences(ds: PreferenceDataset, path: str, val_fraction: float | None) -> list[str]:
    """Write ``path`` and, with ``val_fraction``, ``<stem>.train.npz`` / ``<stem>.val.npz``."""
    p = Path(path)
    written = [str(ds.save(p))]
    if val_fraction is not None:
        train, val = split_dataset(ds, val_fraction)
        stem = p.name[: -len(".npz")] if p.name.endswith(".npz") else p.name
        written.append(str(train.save(p.with_name(stem + ".train.npz"))))
        written.append(str(val.save(p.with_name(stem + ".val.npz"))))
    return written


@torch.no_grad()
def reward_stats(
    net: Any, ds: PreferenceDataset, rng: np.random.Generator, n: int = 256
) -> tuple[float, float]:
    """Mean and std of the ensemble-mean reward over (a sample of) the dataset's fragments."""
    assert ds.fragments is not None
    f = ds.fragments
    if len(f) > n:
        f = f.select(rng.choice(len(f), n, replace=False))
    r = fragment_rewards(net, f).mean(0)  # [N, L]
    return float(r.mean()), float(max(r.std().item(), 1e-6))


def trainer(
    board: SharedBoard, guard: Guard, s: TrainerSettings, prefs: Any, commands: Any, replies: Any
) -> None:
    """Grow the preference set, train on it, publish weights, write checkpoints, answer commands."""
    replies.cancel_join_thread()
    net = build_reward_net(s.net_config)
    got = board.read()
    while got is None:
        time.sleep(0.001)
        got = board.read()
    net.load_state_dict(got[1])
    ds = PreferenceDataset(max_size=s.max_preferences_kept)
    if s.preferences_path is not None:
        loaded = PreferenceDataset.load(s.preferences_path)
        if loaded.fragments is not None:
            ds.add(loaded.fragments, loaded.pairs, loaded.labels)
    board.ints[sh.PAIRS] = len(ds)
    fit = RewardTrainer(net, s.trainer_config)
    rng = np.random.default_rng(s.trainer_config.seed)
    last_ckpt = 0
    while True:
        guard.check()
        waiting = not s.train or len(ds) < s.min_preferences
        msgs = []
        try:
            msgs.append(prefs.get(timeout=0.1) if waiting else prefs.get_nowait())
            while len(msgs) < 4096:
                msgs.append(prefs.get_nowait())
        except queue.Empty:
            pass
        if msgs:  # one add per pass: each add copies the dataset's whole table once
            ds.add(*merge_messages(msgs))
        board.ints[sh.PAIRS] = len(ds)
        while True:
            try:
                cmd = commands.get_nowait()
            except queue.Empty:
                break
            if cmd[0] == "save":
                try:
                    replies.put(("ok", save_preferences(ds, cmd[1], cmd[2])))
                except Exception as e:
                    replies.put(("error", f"{type(e).__name__}: {e}"))
        done = s.max_train_steps is not None and fit.global_step >= s.max_train_steps
        if not s.train or len(ds) < s.min_preferences or done:
            continue
        fit.train(ds)
        mean, std = reward_stats(net, ds, rng)
        board.publish(net.state_dict(), fit.global_step, mean, std)
        if s.checkpoint_dir is not None and s.checkpoint_every > 0:
            if fit.global_step // s.checkpoint_every > last_ckpt:
                last_ckpt = fit.global_step // s.checkpoint_every
                d = Path(s.checkpoint_dir)
                save_reward_net(net, d / f"reward_{fit.global_step:08d}.safetensors")
                save_reward_net(net, d / "reward_latest.safetensors")
                board.ints[sh.CHECKPOINTS] += 1
        time.sleep(s.train_pause_s)
