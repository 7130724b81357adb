"""Fixtures: ``backend`` (a SQLite file, and PostgreSQL when configured)."""

from tests.storage.backends import backend

__all__ = ["backend"]
