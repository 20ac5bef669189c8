"""Alembic revisions of the store, oldest first."""
