"""Full-episode videos of a run's latest policy, for the labelling page's side panel: the trainer
publishes them (:func:`publish_episode`), the web app shows the newest (:func:`latest_episode`)."""

from __future__ import annotations

import secrets
import time

import numpy as np
import sqlalchemy as sa

from prefrl.storage import schema as S
from prefrl.storage.clips import VIDEO_EXT, encode_video
from prefrl.storage.store import QueryStore, run_prefix


def publish_episode(
    store: QueryStore, run_id: int, frames: np.ndarray, fps: float = 30.0, keep: int = 3
) -> str:
    """Store a full-episode video ``[T, H, W, 3]`` for the side panel; keeps the latest ``keep``."""
    name = run_prefix(run_id) + "ep-" + secrets.token_hex(16) + VIDEO_EXT
    size = encode_video(np.asarray(frames), store.clip_dir / name, fps=fps)
    with store.write() as c:
        c.execute(sa.insert(S.episodes).values(run_id=run_id, video=name, bytes=size, created=time.time()))
        old = c.execute(
            sa.select(S.episodes.c.id, S.episodes.c.video)
            .where(S.episodes.c.run_id == run_id)
            .order_by(S.episodes.c.id.desc())
            .offset(keep)
        ).all()
        if old:
            c.execute(sa.delete(S.episodes).where(S.episodes.c.id.in_([o.id for o in old])))
    for o in old:
        (store.clip_dir / o.video).unlink(missing_ok=True)
    return name


def latest_episode(store: QueryStore, run_id: int | None = None) -> str | None:
    """File name of the newest published episode video (of ``run_id``, or of any run)."""
    stmt = sa.select(S.episodes.c.video).order_by(S.episodes.c.id.desc()).limit(1)
    if run_id is not None:
        stmt = stmt.where(S.episodes.c.run_id == run_id)
    with store.read() as c:
        return c.execute(stmt).scalar()
