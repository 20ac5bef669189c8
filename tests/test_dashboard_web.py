"""The dashboard's Flask views and its login wall, against the loopback GitHub's OAuth flow."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests

from bot import create_app
from core.dashboard.store import SqlFeedStore
from tests.fixtures.dashboard import NOW, recorded_feed
from tests.loopback_github import LoopbackGitHub


def _app(tmp_path: Path, gh: LoopbackGitHub | None = None, **extra: str) -> tuple[Any, SqlFeedStore]:
    store = SqlFeedStore(None, tmp_path)
    store.put(recorded_feed("acme/triton"))
    store.put(recorded_feed("acme/secret", private=True))
    settings = {"FORKSYNC_DATA_DIR": str(tmp_path), "FORKSYNC_SESSION_SECRET": "s" * 32, **extra}
    if gh is not None:
        settings |= {**gh.oauth_client(), "GITHUB_API_URL": gh.api_url}
    app = create_app(settings, feeds=store)
    app.extensions["forksync.dashboard"].clock = lambda: NOW
    return app, store


def _login(client: Any, gh: LoopbackGitHub, next_path: str) -> Any:
    """Follow the OAuth web flow: our /login -> GitHub's authorize -> our callback."""
    to_github = client.get(f"/login?next={next_path}")
    assert to_github.status_code == 302 and to_github.location.startswith(f"{gh.url}/login/oauth/authorize?")
    back = requests.get(to_github.location, allow_redirects=False, timeout=10)
    assert back.status_code == 302
    target = urlsplit(back.headers["Location"])
    return client.get(f"{target.path}?{target.query}")


def test_public_fork_is_shown_to_anyone_with_its_figures(tmp_path: Path) -> None:
    """A public fork's page needs no login and shows the current values and links."""
    app, _ = _app(tmp_path)
    page = app.test_client().get("/acme/triton")
    assert page.status_code == 200
    html = page.text
    last = recorded_feed().series[-1]
    assert f">{last.days_behind:.1f}<" in html and f">{last.backlog}<" in html
    assert 'href="https://github.com/acme/triton/pull/412"' in html
    assert 'href="https://github.com/acme/triton/runs/9001"' in html
    assert "<time datetime=" in html and "UTC</time>" in html
    assert page.headers["Cache-Control"].startswith("public")


def test_index_lists_only_what_the_viewer_may_see(tmp_path: Path) -> None:
    """A stranger's index names the public fork and not the private one."""
    app, _ = _app(tmp_path)
    html = app.test_client().get("/").text
    assert "acme/triton" in html and "acme/secret" not in html


def test_private_and_unknown_forks_answer_the_same_404(
    tmp_path: Path, loopback_github: LoopbackGitHub
) -> None:
    """A stranger cannot tell a private fork from one that does not exist: same status, same page."""
    app, _ = _app(tmp_path, loopback_github)
    client = app.test_client()
    private, unknown = client.get("/acme/secret"), client.get("/acme/nothere")
    assert private.status_code == unknown.status_code == 404
    assert private.text.replace("secret", "X") == unknown.text.replace("nothere", "X")
    assert "acme/secret" not in private.text.replace("next=/acme/secret", "")


def test_public_dashboards_can_be_turned_off(tmp_path: Path) -> None:
    """FORKSYNC_DASHBOARD_PUBLIC=0: even a public fork needs a login."""
    app, _ = _app(tmp_path, FORKSYNC_DASHBOARD_PUBLIC="0")
    assert app.test_client().get("/acme/triton").status_code == 404


def test_a_reader_logs_in_with_github_and_sees_the_private_fork(
    tmp_path: Path, loopback_github: LoopbackGitHub
) -> None:
    """GitHub login (OAuth web flow) by a user who can read the private repo opens its page."""
    gh = loopback_github
    gh.add_repo("acme/secret", private=True)
    gh.add_repo("acme/triton")
    gh.set_permission("acme/secret", "alice", "read")
    gh.sign_in_as("alice")
    app, _ = _app(tmp_path, gh)
    client = app.test_client()
    landed = _login(client, gh, "/acme/secret")
    assert landed.status_code == 302 and landed.location == "/acme/secret"
    page = client.get("/acme/secret")
    assert page.status_code == 200 and "acme/secret" in page.text and "alice" in page.text
    assert page.headers["Cache-Control"] == "private, no-store"
    assert "acme/secret" in client.get("/").text
    assert ("GET", "/user", 200) in gh.requests and ("GET", "/repos/acme/secret", 200) in gh.requests


def test_a_logged_in_user_without_access_still_gets_404(
    tmp_path: Path, loopback_github: LoopbackGitHub
) -> None:
    """Bob logs in but cannot read the private repo: GitHub says 404, so do we."""
    gh = loopback_github
    gh.add_repo("acme/secret", private=True)
    gh.add_repo("acme/triton")
    gh.sign_in_as("bob")
    app, _ = _app(tmp_path, gh)
    client = app.test_client()
    _login(client, gh, "/acme/secret")
    assert client.get("/acme/secret").status_code == 404
    assert ("GET", "/repos/acme/secret", 404) in gh.requests
    assert "acme/secret" not in client.get("/").text


def test_a_forged_callback_is_refused(tmp_path: Path, loopback_github: LoopbackGitHub) -> None:
    """A callback whose state was not issued to this browser logs nobody in."""
    app, _ = _app(tmp_path, loopback_github)
    client = app.test_client()
    answer = client.get("/login/callback?code=abc&state=forged")
    assert answer.status_code == 400 and "state did not match" in answer.text
    assert client.get("/acme/secret").status_code == 404


def test_login_next_never_redirects_off_site(tmp_path: Path, loopback_github: LoopbackGitHub) -> None:
    gh = loopback_github
    gh.sign_in_as("alice")
    app, _ = _app(tmp_path, gh)
    landed = _login(app.test_client(), gh, "//evil.example/x")
    assert landed.location == "/"


def test_bad_client_secret_is_a_one_line_error(tmp_path: Path, loopback_github: LoopbackGitHub) -> None:
    gh = loopback_github
    gh.sign_in_as("alice")
    app, _ = _app(tmp_path, gh)
    gh.oauth_credentials = ("Iv1.loopback", "another-secret")
    answer = _login(app.test_client(), gh, "/")
    assert (
        answer.status_code == 502
        and "GitHub refused the login" in answer.text
        and len(answer.text.splitlines()) == 1
    )


def test_page_is_cached_until_the_feed_changes(tmp_path: Path) -> None:
    """Two views of an unchanged feed render once; a new feed renders again."""
    app, store = _app(tmp_path)
    dash = app.extensions["forksync.dashboard"]
    client = app.test_client()
    client.get("/acme/triton")
    client.get("/acme/triton")
    assert dash.cache.renders == 1
    feed = recorded_feed("acme/triton")
    store.put(feed.__class__(**{**feed.__dict__, "updated_at": feed.updated_at + 60}))
    client.get("/acme/triton")
    assert dash.cache.renders == 2


def test_login_without_oauth_configured_says_what_to_set(tmp_path: Path) -> None:
    app, _ = _app(tmp_path)
    answer = app.test_client().get("/login")
    assert answer.status_code == 503 and "GITHUB_OAUTH_CLIENT_ID" in answer.text


def test_oauth_callback_query_is_what_github_sends(loopback_github: LoopbackGitHub) -> None:
    """The loopback authorize page redirects with code and state, as github.com does."""
    gh = loopback_github
    gh.oauth_client()
    gh.sign_in_as("alice")
    back = requests.get(
        f"{gh.url}/login/oauth/authorize?client_id=Iv1.loopback&redirect_uri=http://x/cb&state=s1",
        allow_redirects=False,
        timeout=10,
    )
    query = parse_qs(urlsplit(back.headers["Location"]).query)
    assert query["state"] == ["s1"] and len(query["code"][0]) == 20


def test_feed_store_keeps_feed_version_and_facts_in_the_shared_store(store_url: str) -> None:
    """The feed store lives in the shared SQL store (SQLite and PostgreSQL): feed, version without
    the feed, facts, the fork's spelling in the index; a second store over the same database (another
    web process, a restarted one) reads what the first wrote, and a newer feed replaces the older."""
    from dataclasses import replace

    from core.dashboard.store import SqlFeedStore
    from core.store import open_store

    repo = "Acme/Store-Fork"
    feed = recorded_feed(repo)
    writer = SqlFeedStore(None, ".", open_store(store_url, "."))
    assert writer.get(repo) is None and writer.version(repo) is None and writer.facts(repo) == {}
    writer.put(feed)
    writer.put_facts(repo, {"landed_at": {"a": 1.0}})
    reader = SqlFeedStore(store_url, ".")
    assert reader.get(repo.lower()) == feed and reader.version(repo) == feed.version()
    assert reader.facts(repo) == {"landed_at": {"a": 1.0}} and reader.repos() == [repo]
    newer = replace(feed, updated_at=feed.updated_at + 60)
    writer.put(newer)
    writer.put_facts(repo, {"private": True})
    assert reader.get(repo) == newer and reader.version(repo) == newer.version() != feed.version()
    assert reader.facts(repo) == {"private": True} and reader.repos() == [repo]
