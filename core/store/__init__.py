"""The one SQL store the workers share: trunk L1 results, suite baselines, L2 history, metric
series and the L1 checks still in flight (what the staleness watchdog reads).

Where it lives: PostgreSQL when ``FORKSYNC_DATABASE_URL`` is set (distributed workers, one
database for all), else SQLite at ``<FORKSYNC_DATA_DIR>/store.sqlite`` (the embedded default,
one machine). Redis never holds the only copy of anything here.

The API is small on purpose::

    store = open_store(database_url, data_dir)   # engine cached per URL; migrations run once
    with store.session() as db:                  # one transaction: commit on success
        db.add(SomeRow(...))

Tables are the typed models of :mod:`core.store.models`; schema changes are Alembic revisions
under ``core/store/migrations/versions`` (applied at first use in each process, under a lock so
two workers starting together do not race). A feature that needs a table adds a model and a
revision; it never creates tables itself.
"""

from core.store.db import STORE_FILENAME, Store, database_url_for, open_store

__all__ = ["STORE_FILENAME", "Store", "database_url_for", "open_store"]
