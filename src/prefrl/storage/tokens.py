"""A labeller's sign-in token after it is issued: revoke it, replace it, list who holds one.

Only a token's SHA-256 is stored. A token stops working when it expires or is revoked
(revoking sets its expiry to now); a server that checked it in the last
:attr:`~prefrl.storage.store.QueryStore.TOKEN_TTL_S` seconds may accept it that much longer.

Example:
    >>> import tempfile, os
    >>> from prefrl.storage.store import QueryStore
    >>> store = QueryStore(os.path.join(tempfile.mkdtemp(), "labels.db"))
    >>> token = store.add_user("ann")
    >>> revoke(store, "ann")
    True
    >>> store.user_for_token(token) is None
    True
"""

from __future__ import annotations

import math
import secrets
import time
from typing import Any

import sqlalchemy as sa

from prefrl.storage import schema as S
from prefrl.storage.records import StoreError, hash_token
from prefrl.storage.store import QueryStore


def _forget_cached(store: QueryStore) -> None:
    with store._cache_lock:
        store._tokens.clear()


def revoke(store: QueryStore, name: str) -> bool:
    """Make labeller ``name``'s token invalid now; ``False`` if there is no such labeller.
    Its labels stay."""
    with store.write() as c:
        n = c.execute(sa.update(S.users).where(S.users.c.name == name).values(expires=time.time())).rowcount
    _forget_cached(store)
    return bool(n)


def renew(store: QueryStore, name: str, expires_in_s: float | None = None) -> str:
    """Give labeller ``name`` a new token (the old one stops working), valid ``expires_in_s``
    seconds (``None``: until revoked); returns it. Raises ``StoreError`` for an unknown name."""
    if expires_in_s is not None and not 0 < expires_in_s < math.inf:
        raise ValueError(f"a token must be valid for a positive, finite time, got {expires_in_s} s")
    token = secrets.token_urlsafe(24)
    now = time.time()
    with store.write() as c:
        n = c.execute(
            sa.update(S.users)
            .where(S.users.c.name == name)
            .values(
                token_sha256=hash_token(token), expires=None if expires_in_s is None else now + expires_in_s
            )
        ).rowcount
    _forget_cached(store)
    if not n:
        raise StoreError(f"no labeller named {name!r} in {store.where}")
    return token


def user_rows(store: QueryStore) -> list[dict[str, Any]]:
    """Every labeller: name, admin, token expiry (epoch seconds or ``None``), whether the token
    still works, labels given."""
    u, lab = S.users.c, S.labels.c
    n = sa.select(sa.func.count()).where(lab.user_id == u.id).scalar_subquery()
    now = time.time()
    with store.read() as c:
        rows = c.execute(sa.select(u.name, u.is_admin, u.expires, n.label("labels")).order_by(u.id)).all()
    return [
        {
            "name": r.name,
            "is_admin": bool(r.is_admin),
            "expires": r.expires,
            "active": r.expires is None or r.expires > now,
            "labels": int(r.labels),
        }
        for r in rows
    ]
