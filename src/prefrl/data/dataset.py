"""A growable, optionally bounded (FIFO) set of labelled fragment pairs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from prefrl.data.arrays import check_finite, obs_from_flat_dict, obs_to_flat_dict, write_npz
from prefrl.data.fragments import Fragments
from prefrl.data.trajectories import load_npz_checked

PREF_FORMAT = "prefrl.preferences"
PREF_VERSION = 1


@dataclass(frozen=True)
class AddReport:
    """What :meth:`PreferenceDataset.add` stored."""

    added: int
    skipped: int
    """Pairs whose label was NaN (skipped or incomparable): not stored."""
    evicted: int
    """Oldest pairs dropped to respect ``max_size``."""


def validate_labels(labels: np.ndarray, n_pairs: int) -> np.ndarray:
    """Check ``labels`` is ``[n_pairs]`` of values in [0, 1] or NaN; returns float32."""
    labels = np.asarray(labels, dtype=np.float32)
    if labels.shape != (n_pairs,):
        raise ValueError(f"labels must have shape ({n_pairs},), got {labels.shape}")
    if np.any(np.isinf(labels)):
        raise ValueError("labels contain inf; a label is P(first preferred) in [0, 1]")
    known = labels[~np.isnan(labels)]
    if np.any((known < 0) | (known > 1)):
        bad = known[(known < 0) | (known > 1)][:5]
        raise ValueError(f"labels must lie in [0, 1] (P(first preferred)); got {bad.tolist()}")
    return labels


class PreferenceDataset:
    """Labelled pairs of fragments; each frame stored once.

    Attributes:
        fragments: the fragments referenced by pairs (``None`` while empty).
        pairs: ``[B, 2]`` indices into ``fragments``.
        labels: ``[B]`` float32, P(first preferred) in [0, 1].
        pair_ids: ``[B]`` int64, a unique, increasing id per pair ever added.
        answer_keys: int64, sorted: the external ids (e.g. query-store query ids) of every
            answer ever passed to :meth:`add` with ``keys``, skipped and evicted ones included,
            so that a restarted trainer can tell which answers it already has.
        max_size: at most this many pairs are kept (oldest evicted first); ``None``: unbounded.
    """

    def __init__(self, max_size: int | None = None) -> None:
        if max_size is not None and max_size < 1:
            raise ValueError(f"max_size must be positive or None, got {max_size}")
        self.max_size = max_size
        self.fragments: Fragments | None = None
        self.pairs = np.zeros((0, 2), dtype=np.int64)
        self.labels = np.zeros(0, dtype=np.float32)
        self.pair_ids = np.zeros(0, dtype=np.int64)
        self.answer_keys = np.zeros(0, dtype=np.int64)
        self.next_id = 0

    def __len__(self) -> int:
        return len(self.labels)

    def add(
        self, fragments: Fragments, pairs: np.ndarray, labels: np.ndarray, keys: np.ndarray | None = None
    ) -> AddReport:
        """Add labelled pairs of ``fragments``; NaN labels (no answer) are skipped.

        Args:
            fragments: ``N`` fragments; only those that labelled pairs use are copied
                (without rendered frames: the dataset keeps what the reward model reads).
            pairs: ``[B, 2]`` indices into ``fragments``.
            labels: ``[B]`` P(first preferred) in [0, 1], or NaN for no answer.
            keys: ``[B]`` int64 external ids of the answers (e.g. query-store ids); answers
                whose key was added before are ignored (see :meth:`has_keys`).
        """
        pairs = np.asarray(pairs, dtype=np.int64)
        if pairs.ndim != 2 or pairs.shape[1] != 2:
            raise ValueError(f"pairs must have shape [B, 2], got {pairs.shape}")
        labels = validate_labels(labels, len(pairs))
        if keys is not None:
            keys = np.asarray(keys, dtype=np.int64)
            if keys.shape != (len(pairs),):
                raise ValueError(f"keys must have shape ({len(pairs)},), got {keys.shape}")
            fresh = ~self.has_keys(keys)
            _, first = np.unique(keys, return_index=True)
            fresh &= np.isin(np.arange(len(keys)), first)  # a key twice in one call: its first answer
            pairs, labels, keys = pairs[fresh], labels[fresh], keys[fresh]
            self.answer_keys = np.union1d(self.answer_keys, keys)
        if len(pairs) and (pairs.min() < 0 or pairs.max() >= len(fragments)):
            raise ValueError(f"pair indices must lie in [0, {len(fragments)}), got max {pairs.max()}")
        if self.fragments is not None and self.fragments.length != fragments.length:
            raise ValueError(
                f"fragment length {fragments.length} differs from the dataset's {self.fragments.length}"
            )
        if fragments.table_rews is not None:
            check_finite("fragment rewards", fragments.table_rews)
        keep = ~np.isnan(labels)
        pairs, labels = pairs[keep], labels[keep]
        if len(pairs) == 0:
            return AddReport(0, int((~keep).sum()), 0)
        used, inverse = np.unique(pairs, return_inverse=True)
        new = fragments.select(used).without_frames().compact()
        offset = 0 if self.fragments is None else len(self.fragments)
        self.fragments = new if self.fragments is None else Fragments.concat([self.fragments, new])
        self.pairs = np.concatenate([self.pairs, inverse.reshape(-1, 2) + offset])
        self.labels = np.concatenate([self.labels, labels])
        ids = np.arange(self.next_id, self.next_id + len(labels), dtype=np.int64)
        self.pair_ids = np.concatenate([self.pair_ids, ids])
        self.next_id += len(labels)
        evicted = 0
        if self.max_size is not None and len(self) > self.max_size:
            evicted = len(self) - self.max_size
            self._keep(np.arange(evicted, len(self)))
        return AddReport(len(labels), int((~keep).sum()), evicted)

    def has_keys(self, keys: np.ndarray) -> np.ndarray:
        """``[K]`` bool: which external answer ids were added before (see ``add(keys=...)``)."""
        return np.isin(np.asarray(keys, dtype=np.int64), self.answer_keys)

    def _keep(self, idx: np.ndarray) -> None:
        """Keep pairs ``idx`` and drop fragments no pair references any more."""
        assert self.fragments is not None
        pairs = self.pairs[idx]
        used, inverse = np.unique(pairs, return_inverse=True)
        self.fragments = self.fragments.select(used).compact()
        self.pairs = inverse.reshape(-1, 2).astype(np.int64)
        self.labels = self.labels[idx]
        self.pair_ids = self.pair_ids[idx]

    def validation_mask(self, fraction: float) -> np.ndarray:
        """``[B]`` bool: a stable validation split (a pair never changes side as data grows)."""
        if not 0.0 <= fraction < 1.0:
            raise ValueError(f"validation fraction must lie in [0, 1), got {fraction}")
        h = (self.pair_ids * 2654435761 + 12345) % 4294967296  # Knuth multiplicative hash
        return h < fraction * 4294967296

    def split(self, fraction: float) -> tuple[PreferenceDataset, PreferenceDataset]:
        """``(train, validation)`` copies by :meth:`validation_mask` (the split training uses)."""
        mask = self.validation_mask(fraction)
        parts = []
        for keep in (~mask, mask):
            part = PreferenceDataset()
            if self.fragments is not None and keep.any():
                part.add(self.fragments, self.pairs[keep], self.labels[keep])
            parts.append(part)
        return parts[0], parts[1]

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path) -> Path:
        """Write to ``.npz`` (no pickle); the write is atomic."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = {
            "format": PREF_FORMAT,
            "version": PREF_VERSION,
            "max_size": self.max_size,
            "next_id": self.next_id,
            "length": None if self.fragments is None else self.fragments.length,
        }
        arrays: dict[str, Any] = {
            "__meta__": np.array(json.dumps(meta)),
            "pairs": self.pairs,
            "labels": self.labels,
            "pair_ids": self.pair_ids,
            "answer_keys": self.answer_keys,
        }
        f = self.fragments
        if f is not None:
            arrays.update(obs_to_flat_dict("obs", f.table_obs))
            arrays.update(acts=f.table_acts, dones=f.table_dones, rows=f.rows)
            arrays.update(episode=f.episode, start=f.start)
            if f.real is not None:
                arrays["real"] = f.real
            if f.table_rews is not None:
                arrays["rews"] = f.table_rews
        tmp = path.with_name(path.name + ".tmp.npz")
        write_npz(tmp, arrays)  # compressed where the clips are images
        tmp.replace(path)
        return path

    def save_split(self, path: str | Path, val_fraction: float | None) -> list[Path]:
        """Write ``path`` and, with ``val_fraction``, ``<stem>.train.npz`` and ``<stem>.val.npz``
        (the two sides of :meth:`split`); returns the paths written."""
        path = Path(path)
        written = [self.save(path)]
        if val_fraction is not None:
            stem = path.name[: -len(".npz")] if path.name.endswith(".npz") else path.name
            for part, suffix in zip(self.split(val_fraction), (".train.npz", ".val.npz")):
                written.append(part.save(path.with_name(stem + suffix)))
        return written

    @classmethod
    def load(cls, path: str | Path) -> PreferenceDataset:
        """Read a file written by :meth:`save`; a clear ``ValueError`` for anything else."""
        data = load_npz_checked(path, PREF_FORMAT, PREF_VERSION)
        meta = json.loads(str(data["__meta__"]))
        ds = cls(max_size=meta.get("max_size"))
        try:
            ds.pairs = data["pairs"].astype(np.int64).reshape(-1, 2)
            ds.labels = validate_labels(data["labels"], len(ds.pairs))
            if np.isnan(ds.labels).any():  # add() keeps no NaN label: a file with one was altered
                raise ValueError("field 'labels' holds NaN")
            ds.pair_ids = data["pair_ids"].astype(np.int64)
            if "answer_keys" in data:
                ds.answer_keys = np.unique(data["answer_keys"].astype(np.int64))
            ds.next_id = int(meta["next_id"])
            if meta.get("length") is not None:
                ds.fragments = Fragments(
                    obs_from_flat_dict("obs", data),
                    data["acts"],
                    data.get("rews"),
                    data["dones"].astype(bool),
                    data["rows"].astype(np.int64),
                    int(meta["length"]),
                    data["episode"].astype(np.int64),
                    data["start"].astype(np.int64),
                    None,
                    data["real"].astype(np.int64) if "real" in data else None,
                )
                if len(ds.pairs) and ds.pairs.max() >= len(ds.fragments):
                    raise ValueError("pair indices point past the stored fragments")
            elif len(ds.pairs):
                raise ValueError("pairs stored without fragments")
        except (KeyError, ValueError) as e:
            raise ValueError(f"{path}: corrupt prefrl preference file ({e})") from e
        return ds
