"""Alembic environment for the store: always run from :meth:`core.store.db.Store.migrate` with a
connection (no ini file, no logging set-up: the worker's own logging stays as it is)."""

from __future__ import annotations

from alembic import context

from core.store.models import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
