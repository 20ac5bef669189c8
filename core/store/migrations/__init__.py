"""Alembic migrations of the store (run by core.store.db.Store.migrate)."""
