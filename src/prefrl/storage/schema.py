"""The query store's SQL schema (SQLAlchemy Core), versioned.

Tables:

- ``meta``: key/value pairs; ``schema_version`` says which layout the database has.
- ``runs``: one row per training run that asks questions: ``name`` is the run's id (written
  once into its ``config.json``; the folder name for runs made before run ids), ``title``
  the folder name it was started in (shown to people), and a task instruction.
- ``clips``: one rendered fragment: a video file and an ``.npz`` of the arrays the reward
  model reads, both in the clip folder beside the database, named by ``clips.name``.
- ``queries``: a pair of clips to compare, with priority, status, creation and expiry
  times, a short lease (so concurrent labellers are shown different queries) and
  whether the trainer has consumed its answer.
- ``labels``: one answer of one labeller to one query (several labellers per query;
  one label per labeller and query, never overwritten).
- ``users``: labellers, identified by the SHA-256 of their sign-in token.
- ``episodes``: full-episode videos published by the trainer for the side panel.
"""

from __future__ import annotations

import sqlalchemy as sa

SCHEMA_VERSION = 2
"""Bump when the layout changes: an older store is migrated on opening (:func:`migrate`), a
newer one raises a clear error."""

ANSWERS = ("left", "right", "equal", "incomparable", "skip")
"""What a labeller may answer. ``skip`` and ``incomparable`` are recorded but not trained on."""

metadata = sa.MetaData()

meta = sa.Table(
    "meta",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(200), nullable=False, unique=True),  # the run's id
    sa.Column("instruction", sa.Text, nullable=False, default=""),
    sa.Column("created", sa.Float, nullable=False),
    sa.Column("title", sa.String(200), nullable=True),  # version 2: the run folder's name
)

clips = sa.Table(
    "clips",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False, index=True),
    sa.Column("name", sa.String(64), nullable=False, unique=True),
    sa.Column("video", sa.String(80), nullable=True),  # file name, NULL once pruned
    sa.Column("arrays", sa.String(80), nullable=True),  # .npz file name, NULL once pruned
    sa.Column("bytes", sa.BigInteger, nullable=False, default=0),
    sa.Column("episode", sa.BigInteger, nullable=False, default=-1),
    sa.Column("start", sa.BigInteger, nullable=False, default=-1),
    sa.Column("length", sa.Integer, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
)

queries = sa.Table(
    "queries",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
    sa.Column("left_clip", sa.Integer, sa.ForeignKey("clips.id"), nullable=False),
    sa.Column("right_clip", sa.Integer, sa.ForeignKey("clips.id"), nullable=False),
    sa.Column("priority", sa.Float, nullable=False, default=0.0),
    sa.Column("status", sa.String(16), nullable=False, default="open"),  # open | answered | expired
    sa.Column("n_labels", sa.Integer, nullable=False, default=0),
    sa.Column("labels_needed", sa.Integer, nullable=False, default=1),
    sa.Column("created", sa.Float, nullable=False),
    sa.Column("expires", sa.Float, nullable=True),
    sa.Column("answered", sa.Float, nullable=True),
    sa.Column("consumed", sa.Boolean, nullable=False, default=False),
    sa.Column("lease_user", sa.Integer, nullable=True),
    sa.Column("lease_until", sa.Float, nullable=True),
    sa.Index("ix_queries_lease", "lease_user", "status"),
    sa.Index("ix_queries_expiry", "status", "expires"),
    sa.Index("ix_queries_poll", "run_id", "status", "consumed"),
)

labels = sa.Table(
    "labels",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("query_id", sa.Integer, sa.ForeignKey("queries.id"), nullable=False, index=True),
    sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False, index=True),
    sa.Column("answer", sa.String(16), nullable=False),
    sa.Column("response_ms", sa.Integer, nullable=True),
    sa.Column("created", sa.Float, nullable=False),
    sa.UniqueConstraint("query_id", "user_id", name="uq_label_query_user"),
    sa.CheckConstraint(
        "answer IN ('left', 'right', 'equal', 'incomparable', 'skip')", name="ck_label_answer"
    ),
)

users = sa.Table(
    "users",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(100), nullable=False, unique=True),
    sa.Column("token_sha256", sa.String(64), nullable=False, unique=True),
    sa.Column("is_admin", sa.Boolean, nullable=False, default=False),
    sa.Column("created", sa.Float, nullable=False),
    sa.Column("expires", sa.Float, nullable=True),
)

# serving order: status, then highest priority first, then oldest (ORDER BY priority DESC, id)
sa.Index("ix_queries_serve", queries.c.status, queries.c.priority.desc(), queries.c.id)

episodes = sa.Table(
    "episodes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False, index=True),
    sa.Column("video", sa.String(80), nullable=False),
    sa.Column("bytes", sa.BigInteger, nullable=False, default=0),
    sa.Column("created", sa.Float, nullable=False),
)


def migrate(c: sa.Connection, version: int) -> None:
    """Bring a store of an older schema ``version`` up to :data:`SCHEMA_VERSION`, in the
    caller's write transaction. Only columns are added (version 1 had no ``runs.title``;
    its runs' names were their folders' names, which become their titles)."""
    if version < 2:
        c.exec_driver_sql("ALTER TABLE runs ADD COLUMN title VARCHAR(200)")
        c.execute(sa.update(runs).values(title=runs.c.name))
    c.execute(sa.update(meta).where(meta.c.key == "schema_version").values(value=str(SCHEMA_VERSION)))
