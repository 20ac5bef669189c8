"""The embedded SQLite store's durability setting, and the web's delivery log opening it once."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from bot import dispatch
from core.store import db as store_db


def test_sqlite_store_uses_wal_with_synchronous_normal(tmp_path: Path) -> None:
    """WAL + synchronous=NORMAL: commits survive a process crash without an fsync each."""
    store = store_db.open_store(None, tmp_path)
    try:
        with store.engine.connect() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert conn.execute(text("PRAGMA synchronous")).scalar() == 1  # NORMAL
    finally:
        store_db.forget(store.url)


def test_delivery_log_opens_its_store_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    real = store_db.open_store
    monkeypatch.setattr(store_db, "open_store", lambda *a: opened.append("x") or real(*a))
    import core.store

    monkeypatch.setattr(core.store, "open_store", store_db.open_store)
    log = dispatch.StoreDeliveryLog(None, tmp_path)
    try:
        assert log.accept("d-1", "push", "acme/fork", 1) is True
        assert log.accept("d-1", "push", "acme/fork", 1) is False
        assert log.accept("d-2", "push", "acme/fork", 1) is True
        assert opened == ["x"]
    finally:
        store_db.forget(store_db.database_url_for(None, tmp_path))
