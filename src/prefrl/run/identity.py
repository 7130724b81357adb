"""A run's identity: an id of its own, written once into its ``config.json`` and the query
store, so that a run is never mistaken for another that happened to live in a folder of the
same name (or in the same folder, before ``--force``).

- A fresh run gets a new id (or keeps one given with ``--run-id`` / a ``--config`` file);
  ``--force`` always starts a new one. A resumed run keeps the id in its ``config.json``
  (a run made before run ids is known to the store by its folder's name).
- With people labelling (``--teacher web``), a fresh run whose folder name or id already
  has queries in the store is refused, naming that run's id and the way on that fits
  (:func:`taken_message`): ``--resume`` where the folder holds that run, another name or id
  where it does not, ``--force`` for a new run either way; ``--force`` on a run folder closes
  the queries its previous run left open, so nobody answers them for nothing.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from prefrl.run.config import TrainConfig


def new_run_id() -> str:
    """A fresh run id: 16 random hex digits."""
    return secrets.token_hex(8)


def store_key(cfg: TrainConfig, run_dir: Path) -> str:
    """What the query store knows the run as: its id (its folder's name for a run made
    before run ids)."""
    return cfg.run_id or run_dir.name


def previous_key(run_dir: Path) -> str | None:
    """The store key of the run whose ``config.json`` is in ``run_dir`` (about to be replaced
    by ``--force``), or ``None``."""
    try:
        old = json.loads((run_dir / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return str(old.get("run_id") or run_dir.name) if isinstance(old, dict) else None


def taken_message(where: str, run_dir: Path, cfg: TrainConfig, taken: list[tuple[str, str, int]]) -> str:
    """Why a fresh run may not take a name or id the store knows (``taken``: ``(id, title,
    queries)`` of those runs, newest first): the existing run's id, and the command that fits:
    ``--resume`` where ``run_dir`` holds that run, another name or id otherwise."""
    here = previous_key(run_dir)
    by_id = next((t for t in taken if t[0] == cfg.run_id), taken[0])
    rid, title, n = next((t for t in taken if t[0] == here), by_id)
    more = f" (and {len(taken) - 1} more run(s) of that name)" if len(taken) > 1 else ""
    head = f"the query store {where} already has {n} queries of run {rid} (folder {title!r}){more}"
    new = "a new id; the old run's answers stay its own"
    if rid == here:
        how = f"{run_dir} holds that run: continue it with --resume {run_dir}"
        return f"{head}; {how}, or pass --force to replace it ({new})"
    that = f"continue that run with --resume on its folder ({title!r})"
    if rid == cfg.run_id:
        return f"{head}, the id given to this run; {that}, or pass another --run-id (or --force: {new})"
    return (
        f"{head}; a new run named {run_dir.name!r} would take its answers: {that}, "
        f"or choose another --run-dir name, or pass --force ({new})"
    )


def claim_identity(cfg: TrainConfig, run_dir: Path) -> None:
    """Before a fresh run writes anything, with a query store: check that the store has no
    queries under its folder's name or id (``cfg.run_id``, given by
    :func:`~prefrl.run.resolve.resolve_identity`; with ``--force`` a new one, and the open
    queries of the run it replaces in ``run_dir`` are closed).

    Raises:
        FileExistsError: the store already has queries of a run of that name or id; the
            message names that run and how to go on (:func:`taken_message`).
    """
    old = previous_key(run_dir) if cfg.force else None
    if cfg.teacher != "web" or cfg.store is None:
        return
    from prefrl.storage.runs import find_run, finish_run, runs_under
    from prefrl.storage.store import QueryStore

    store = QueryStore(cfg.store)
    try:
        if old is not None and (rid := find_run(store, old)) is not None:
            finish_run(store, rid, keep_partial=False)  # its run is gone: nobody would use the answers
        taken = runs_under(store, [cfg.run_id] if cfg.force else [run_dir.name, cfg.run_id])
        if taken:
            raise FileExistsError(taken_message(store.where, run_dir, cfg, taken))
    finally:
        store.close()
