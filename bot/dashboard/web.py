"""The dashboard's Flask views: ``/`` (the forks), ``/<owner>/<repo>``, and the GitHub login.

Thin over pure parts: the feed store gives plain data, :mod:`bot.dashboard.view` turns it into
the page's model, Jinja lays it out (server-side; the only script is the one that shows times
in the viewer's zone, and the page reads fine without it). Rendered pages are cached per fork
and rebuilt when the feed's version changes (or after ``PAGE_TTL_S``, for the ages shown).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    Flask,
    Response,
    abort,
    current_app,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from markupsafe import Markup

from bot.dashboard import view
from bot.dashboard.access import GitHubOAuth, OAuthError, Viewer, is_public, may_view, viewer_for
from core.config import Settings
from core.dashboard.feed import ForkFeed
from core.dashboard.store import FeedStore

PAGE_TTL_S = 300.0

blueprint = Blueprint("dashboard", __name__, template_folder="templates")


@dataclass
class PageCache:
    """Rendered fork pages keyed by (repo, feed version); stale after ``ttl_s`` for the ages shown."""

    ttl_s: float = PAGE_TTL_S
    # repo -> (version, made at, html, the feed it was made from)
    pages: dict[str, tuple[str, float, str, ForkFeed]] = field(default_factory=dict)
    renders: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def feed(self, repo: str, version: str) -> ForkFeed | None:
        """The feed of the cached page when it is still at ``version``."""
        with self.lock:
            hit = self.pages.get(repo.lower())
        return hit[3] if hit is not None and hit[0] == version else None

    def get(self, repo: str, version: str, now: float, render: Callable[[], str], feed: ForkFeed) -> str:
        key = repo.lower()
        with self.lock:
            hit = self.pages.get(key)
        if hit is not None and hit[0] == version and now - hit[1] < self.ttl_s:
            return hit[2]
        page = render()
        with self.lock:
            self.pages[key] = (version, now, page, feed)
            self.renders += 1
        return page


@dataclass
class DashboardState:
    settings: Settings
    store: FeedStore
    oauth: GitHubOAuth | None
    cache: PageCache = field(default_factory=PageCache)
    clock: Callable[[], float] = time.time


def _state() -> DashboardState:
    dash: DashboardState = current_app.extensions["forksync.dashboard"]
    return dash


def _viewer() -> Viewer:
    return Viewer.from_session(session.get("viewer"))


def iso(t: float | None) -> str:
    if t is None:
        return ""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def time_tag(t: float | None) -> Markup:
    """``<time>`` in UTC (the no-script text); the page's script rewrites it in the viewer's zone."""
    if t is None:
        return Markup("–")
    text = datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return Markup('<time datetime="{}" data-local>{}</time>').format(iso(t), text)


def _visible(dash: DashboardState, viewer: Viewer, now: float) -> list[ForkFeed]:
    feeds = []
    for repo in dash.store.repos():
        feed = dash.store.get(repo)
        if feed is not None and may_view(
            feed, viewer, public_allowed=dash.settings.dashboard_public, now=now
        ):
            feeds.append(feed)
    return feeds


def _not_found() -> Response:
    dash = _state()
    body = render_template(
        "dashboard/notfound.html",
        viewer=_viewer(),
        now=dash.clock(),
        login=dash.oauth is not None,
        next_path=request.path,
    )
    return Response(body, status=404, mimetype="text/html")


@blueprint.get("/")
def index() -> Response:
    dash = _state()
    now = dash.clock()
    viewer = _viewer()
    rows = view.index_rows(_visible(dash, viewer, now))
    body = render_template(
        "dashboard/index.html", rows=rows, viewer=viewer, now=now, login=dash.oauth is not None
    )
    return Response(body, mimetype="text/html")


@blueprint.get("/<owner>/<name>")
def fork(owner: str, name: str) -> Response:
    dash = _state()
    now = dash.clock()
    repo = f"{owner}/{name}"
    viewer = _viewer()
    # The stored version says whether the cached page (and its feed) is current: a hit reads no feed.
    version = dash.store.version(repo)
    feed = dash.cache.feed(repo, version) if version else None
    if feed is None:
        feed = dash.store.get(repo)
    if feed is None or not may_view(feed, viewer, public_allowed=dash.settings.dashboard_public, now=now):
        return _not_found()
    page = dash.cache.get(
        feed.repo,
        version or feed.version(),
        now,
        lambda: render_template("dashboard/fork.html", v=view.fork_view(feed, now), now=now),
        feed,
    )
    who = render_template("dashboard/_who.html", viewer=viewer, now=now, login=dash.oauth is not None)
    response = Response(page.replace("<!--who-->", who, 1), mimetype="text/html")
    # A private fork's page must not sit in shared caches.
    response.headers["Cache-Control"] = (
        "public, max-age=60" if is_public(feed, dash.settings.dashboard_public) else "private, no-store"
    )
    return response


def _safe_next(target: str | None) -> str:
    """Only a local path: never an open redirect to another site."""
    if not target or not target.startswith("/") or target.startswith("//") or urlsplit(target).netloc:
        return "/"
    return target


@blueprint.get("/login")
def login() -> Any:
    dash = _state()
    if dash.oauth is None:
        return Response(
            "not configured: set GITHUB_OAUTH_CLIENT_ID and GITHUB_OAUTH_CLIENT_SECRET (the App's OAuth client)\n",
            status=503,
            mimetype="text/plain",
        )
    state = secrets.token_urlsafe(24)
    session["oauth_state"] = state
    session["oauth_next"] = _safe_next(request.args.get("next"))
    return redirect(dash.oauth.authorize_url(state, url_for("dashboard.callback", _external=True)))


@blueprint.get("/login/callback")
def callback() -> Any:
    dash = _state()
    if dash.oauth is None:
        abort(404)
    expected = session.pop("oauth_state", None)
    if not expected or request.args.get("state") != expected:
        return Response(
            "bad login: the state did not match (an old or forged link); log in again from the dashboard\n",
            status=400,
            mimetype="text/plain",
        )
    code = request.args.get("code")
    if not code:
        return Response(
            f"login refused: {request.args.get('error', 'no code')}; log in again\n",
            status=400,
            mimetype="text/plain",
        )
    try:
        token = dash.oauth.exchange(code, url_for("dashboard.callback", _external=True))
        viewer = viewer_for(dash.oauth, token, dash.store.repos(), dash.clock())
    except OAuthError as exc:
        return Response(exc.one_line() + "\n", status=502, mimetype="text/plain")
    session["viewer"] = viewer.as_session()
    return redirect(_safe_next(session.pop("oauth_next", "/")))


@blueprint.post("/logout")
def logout() -> Any:
    session.pop("viewer", None)
    return redirect("/")


def register(
    app: Flask, settings: Settings, store: FeedStore, *, clock: Callable[[], float] = time.time
) -> DashboardState:
    oauth = None
    if settings.oauth_client_id and settings.oauth_client_secret:
        oauth = GitHubOAuth(
            settings.web_url, settings.api_url, settings.oauth_client_id, settings.oauth_client_secret
        )
    # Without a configured key, sessions last as long as this process (and one gunicorn worker).
    app.secret_key = settings.session_secret or secrets.token_hex(32)
    app.config.update(SESSION_COOKIE_HTTPONLY=True, SESSION_COOKIE_SAMESITE="Lax")
    dash = DashboardState(settings=settings, store=store, oauth=oauth, clock=clock)
    app.extensions["forksync.dashboard"] = dash
    app.jinja_env.filters["iso"] = iso
    app.jinja_env.globals["time_tag"] = time_tag
    app.jinja_env.globals["static_css"] = Markup(
        (Path(__file__).parent / "templates" / "dashboard" / "style.css").read_text()
    )
    app.register_blueprint(blueprint)
    return dash
