"""The labels stage of :class:`~prefrl.training.loop.PreferenceLoop`: asking, collecting, the budget.

:class:`Labels` asks the teacher the pairs the clips stage picked (a sync teacher answers at
once, an async one is polled), keeps the answers in the preference dataset, counts the
queries against the :class:`~prefrl.training.budget.LabelBudget`, and saves the labels after
every labelling step (``RUN/preferences.npz`` and ``checkpoints/labels.json``), so that they
are newer than any checkpoint: no label is lost and none is asked again.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypedDict, cast

import numpy as np

from prefrl.data.dataset import PreferenceDataset
from prefrl.data.fragments import Fragments
from prefrl.storage.checkpoint import CheckpointDir
from prefrl.teachers import Answers, AsyncTeacher, SyntheticTeacher, Teacher
from prefrl.teachers.spec import is_async
from prefrl.training.budget import LabelBudget
from prefrl.training.config import LoopConfig
from prefrl.training.progress import StatusLine
from prefrl.training.ties import TIE_HINT, TIE_WARN, decided_labels, tie_fraction


class LabelsState(TypedDict):
    """The labels stage's part of a checkpoint (``state.json``)."""

    queries_asked: int
    labels_since_train: int  # (read with a default: older checkpoints lack it)


class Labels:
    """Asks the teacher, collects its answers, keeps the budget (see the module docstring).

    Args:
        config: the loop's schedule (budget, labels kept).
        teacher: a sync :class:`~prefrl.teachers.Teacher` or an :class:`~prefrl.teachers.AsyncTeacher`.
        dataset: labels to start from (``None``: an empty dataset).
        run_dir: where the labels are saved (``None``: nowhere).
        on_new: called with the number of labels each time answers were added.

    State (:meth:`state_dict`): the queries asked and the labels the reward has not trained on.
    """

    def __init__(
        self,
        config: LoopConfig,
        teacher: Teacher | AsyncTeacher,
        dataset: PreferenceDataset | None = None,
        run_dir: Path | None = None,
        on_new: Callable[[int], None] | None = None,
    ) -> None:
        later = is_async(teacher)  # TypeError for anything else
        self.sync_teacher: Teacher | None = None if later else cast(Teacher, teacher)
        self.async_teacher: AsyncTeacher | None = cast(AsyncTeacher, teacher) if later else None
        self.max_kept = config.max_labels_kept
        self.tie_probe = config.tie_probe
        self.dataset = dataset if dataset is not None else PreferenceDataset(self.max_kept)
        self.budget = LabelBudget(config)
        self.fresh = 0
        """Labels added since the reward last trained."""
        self.iteration_labels: dict[str, float] = {}
        """The current iteration's label counts, saved with the labels (not the checkpoint), so
        that an iteration re-run after a crash still reports the queries it had asked."""
        self.run_dir = run_dir
        self.on_new = on_new
        self._tie_warned = False

    # ------------------------------------------------------------------ views
    @property
    def asked(self) -> int:
        """Queries asked so far."""
        return self.budget.asked

    @property
    def decided(self) -> int:
        """Labels that prefer one clip (neither a tie nor unanswered)."""
        return decided_labels(self.dataset.labels)

    def ties(self) -> float | None:
        """The share of answered labels that are ties (``None``: none answered)."""
        return tie_fraction(self.dataset.labels)

    def selection_ready(self, after: int) -> bool:
        """Whether active selection may start: the reward has labels, ``after`` of them decided."""
        return len(self.dataset) > 0 and self.decided >= after

    def metrics(self) -> dict[str, float]:
        """``labels/total``, ``labels/tie_fraction`` (once one is answered), ``labels/queries_asked``."""
        m = {"labels/total": float(len(self.dataset))}
        ties = self.ties()
        if ties is not None:
            m["labels/tie_fraction"] = ties
        m["labels/queries_asked"] = float(self.asked)
        return m

    def fitted(self) -> None:
        """The reward has trained on every label so far."""
        self.fresh = 0

    def asked_before(self, iteration: int) -> dict[str, float]:
        """The label metrics of ``iteration`` when its queries were asked before a crash, else none."""
        if self.iteration_labels.get("iteration") != iteration:
            return {}
        return {k: v for k, v in self.iteration_labels.items() if k.startswith("labels/")}

    # ------------------------------------------------------------------ asking and collecting
    def ask(
        self,
        fragments: Fragments,
        pairs: np.ndarray,
        k: int,
        iteration: int,
        picked: Mapping[str, float],
        newer_older: int = 0,
    ) -> dict[str, float]:
        """Ask the teacher ``k`` queries, the pairs ``[k, 2]`` of ``fragments``; returns the
        iteration's label metrics (``picked``: the selection's), saved with the labels so that a
        run killed right after still writes them in this iteration's row when it resumes. The
        last ``newer_older`` pairs put a newer clip first: a teacher that answers at once adds
        ``watch/teacher_newer``, the share of them where it preferred the newer clip.

        With ``tie_probe`` > 0, a teacher that answers at once, and every label so far a tie (or
        none yet): the first ``tie_probe`` pairs are asked, and the rest only where one of their
        answers prefers a clip; otherwise the rest are not asked (``labels/deferred``: later
        iterations ask them, :func:`~prefrl.training.budget.queries_due`)."""
        if self.async_teacher is not None:
            self.budget.asked += k
            self.async_teacher.submit(fragments, pairs)
            asked = {"labels/asked": float(k), **picked}
            self.iteration_labels = {"iteration": float(iteration), **asked}
            self.save()
            return asked
        assert self.sync_teacher is not None
        if 0 < self.tie_probe < k and self.decided == 0:
            answers, kept = self._probe(fragments, pairs, self.tie_probe)
        else:
            answers, kept = np.asarray(self.sync_teacher.label(fragments, pairs)), k
        if kept < k:
            newer_older = max(0, newer_older - (k - kept))
            picked = {**picked, "labels/deferred": float(k - kept)}
        return self._answered(fragments, pairs[:kept], answers[:kept], iteration, picked, newer_older)

    def probed(self, due: int) -> int:
        """The queries an iteration asks of ``due``: at most ``tie_probe`` (> 0) for a teacher
        that answers later while every answer it gave is a tie (a sync teacher is probed in
        :meth:`ask`, where its answers are known at once); the rest stay in the budget."""
        if self.async_teacher is None or not self.tie_probe or not len(self.dataset) or self.decided:
            return due
        return min(due, self.tie_probe)

    def _probe(self, fragments: Fragments, pairs: np.ndarray, probe: int) -> tuple[np.ndarray, int]:
        """A sync teacher's answers to ``pairs`` and how many of them count: all, or the first
        ``probe`` where those are all ties. A simulated teacher answers every pair in one call
        (its answers cost nothing, and its random draws stay those of a run without the probe);
        anyone else is asked the first ``probe`` pairs, then the rest only if one was decided."""
        assert self.sync_teacher is not None
        if isinstance(self.sync_teacher, SyntheticTeacher):
            answers = np.asarray(self.sync_teacher.label(fragments, pairs))
            return answers, len(pairs) if decided_labels(answers[:probe]) else probe
        first = np.asarray(self.sync_teacher.label(fragments, pairs[:probe]))
        if not decided_labels(first):
            return first, probe
        rest = np.asarray(self.sync_teacher.label(fragments, pairs[probe:]))
        return np.concatenate([first, rest]), len(pairs)

    def _answered(
        self,
        fragments: Fragments,
        pairs: np.ndarray,
        answers: np.ndarray,
        iteration: int,
        picked: Mapping[str, float],
        newer_older: int,
    ) -> dict[str, float]:
        """Keep a sync teacher's ``answers`` to ``pairs`` ``[k, 2]`` (``k`` queries asked, counted
        against the budget); the iteration's label metrics."""
        self.budget.asked += len(pairs)
        rep = self.dataset.add(fragments, pairs, answers)
        asked = {"labels/asked": float(len(pairs)), "labels/answered": float(rep.added),
                 "labels/skipped": float(rep.skipped), **picked}  # fmt: skip
        verdicts = np.asarray(answers, dtype=np.float64)[len(pairs) - newer_older :]
        if newer_older and np.isfinite(verdicts).any():  # 1: newer preferred, 0.5: equal
            asked["watch/teacher_newer"] = float(np.nanmean(verdicts))
        self.iteration_labels = {"iteration": float(iteration), **asked}
        self._added(rep.added)
        return asked

    def poll(self, all: bool = False) -> int:
        """Add the answers an async teacher has ready (every answer so far with ``all``, those
        already in the dataset skipped by their keys); returns how many were added."""
        added = 0
        assert self.async_teacher is not None
        for batch in self.async_teacher.poll(all=all):
            ans = Answers(*batch)
            added += self.dataset.add(ans.fragments, ans.pairs, ans.labels, ans.keys).added
        if added:
            self._added(added)
        return added

    def wait_for_first(self, status: StatusLine) -> None:
        """Block, showing ``status``, until an async teacher gives the first answer."""
        t0 = time.perf_counter()
        while len(self.dataset) == 0:
            if self.poll():
                break
            pending = self.async_teacher.pending() if self.async_teacher is not None else 0
            status.show(f"waiting for labels: {pending} queries pending, {time.perf_counter() - t0:.0f}s")
            time.sleep(1.0)
        status.close()

    def _added(self, n_new: int) -> None:
        self.fresh += n_new
        ties = self.ties()
        if ties is not None and ties >= TIE_WARN and len(self.dataset) >= 10 and not self._tie_warned:
            self._tie_warned = True
            print(
                f"\nprefrl: warning: {ties:.0%} of the {len(self.dataset)} labels so far are ties. "
                + TIE_HINT,
                file=sys.stderr,
            )
        self.save()
        if self.on_new is not None:
            self.on_new(n_new)

    # ------------------------------------------------------------------ saving and resuming
    def save(self) -> None:
        """Write every label (``RUN/preferences.npz``) and the labels state (``labels.json``)."""
        if self.run_dir is None:
            return
        self.dataset.save(self.run_dir / "preferences.npz")
        CheckpointDir(self.run_dir).write_labels_state(
            {
                "queries_asked": self.asked,
                "labels": len(self.dataset),
                "iteration_labels": self.iteration_labels,
            }
        )

    def state_dict(self) -> LabelsState:
        """The checkpointed state: queries asked, labels the reward has not trained on."""
        return {"queries_asked": self.asked, "labels_since_train": self.fresh}

    def load_state_dict(self, state: LabelsState) -> None:
        self.budget.asked = int(state["queries_asked"])
        self.fresh = int(state.get("labels_since_train", 0))

    def resume(self, state: LabelsState | None, checkpoint: Path | None) -> int | None:
        """Put the stage back after a crash: the ``state`` of the ``checkpoint`` (both ``None``:
        killed before the first one), then every label given since (``RUN/preferences.npz``,
        else the checkpoint's), the labels state and an async teacher's answers not yet kept.
        Returns the clip length of the labels loaded (``None``: none loaded)."""
        assert self.run_dir is not None
        if state is not None:
            self.load_state_dict(state)
        kept = None if checkpoint is None else checkpoint / "preferences.npz"
        prefs = self.run_dir / "preferences.npz"
        source = prefs if prefs.exists() else kept
        length = None
        if source is not None:
            self.dataset = PreferenceDataset.load(source)
            self.dataset.max_size = self.max_kept
            if self.dataset.fragments is not None:  # clips may have been shortened to fit the episodes
                length = self.dataset.fragments.length
        labels_state = CheckpointDir(self.run_dir).read_labels_state()
        if labels_state is not None:
            self.budget.asked = max(self.asked, int(labels_state["queries_asked"]))
            self.iteration_labels = {k: float(v) for k, v in labels_state.get("iteration_labels", {}).items()}
        if self.async_teacher is not None:  # it holds what was asked; take back answers not yet kept
            self.budget.asked = int(self.async_teacher.resume())
            self.poll(all=True)
        self.budget.asked = max(self.asked, len(self.dataset))
        if state is None or kept is None:  # none trained on yet
            self.fresh = len(self.dataset)
        else:  # those of the checkpoint's not trained on, and every label given after it
            since = int(state.get("labels_since_train", 0))
            self.fresh = since + max(0, len(self.dataset) - len(PreferenceDataset.load(kept)))
        return length
