"""What comment commands reach beyond GitHub comments: the fork's git location and token, and the
task queue (:class:`Services`); the git credentials scoped to one task (:func:`git_auth`); sending
a task for the command's repository (:func:`send_task`). Shared by the readers
(``workers/commands/actions.py``) and the executor (``workers/commands/execute.py``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.errors import ForksyncError

if TYPE_CHECKING:
    from workers.commands.handler import Context
    from workers.engine.pair import Pair

SendTask = Callable[[str, dict[str, Any]], None]


@dataclass
class Services:
    """What actions reach outside GitHub comments; None means "not deployed here"."""

    fork_location: Callable[[str], str]  # "owner/repo" -> git URL or local path
    upstream_location: Callable[[str], str] = field(default=lambda url: url)  # config url -> git location
    git_token: Callable[[], str | None] = field(default=lambda: None)
    send_task: SendTask | None = None


@contextlib.contextmanager
def git_auth(token: str | None, url: str) -> Iterator[None]:
    """Let this task's git processes send ``token`` to ``url`` only (environment only; restored after).

    The header is scoped with ``http.<url>.extraHeader`` so that fetching upstream (another host,
    perhaps) never carries the fork's installation token. Workers run tasks in processes (Celery's
    prefork pool), so the environment is this task's alone while it runs.
    """
    if not token or not url.startswith(("http://", "https://")):
        yield
        return
    import base64

    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    extra = {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"http.{url}.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
    }
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def fork_auth(ctx: Context) -> contextlib.AbstractContextManager[None]:
    services = services_of(ctx)
    return git_auth(services.git_token(), services.fork_location(ctx.repo))


def services_of(ctx: Context) -> Services:
    services = ctx.services
    if not isinstance(services, Services):
        raise ForksyncError(
            "this deployment has no git access for commands", "configure the workers (FORKSYNC_GIT_URL_MAP)"
        )
    return services


def send_task(ctx: Context, name: str, extra: dict[str, Any]) -> bool:
    """Send task ``name`` for this repository (with the installation and the delivery); False when
    this deployment has no queue for commands."""
    services = ctx.services
    if not isinstance(services, Services) or services.send_task is None:
        return False
    kwargs: dict[str, Any] = {"installation_id": ctx.task.installation_id, "repo": ctx.repo, **extra}
    if ctx.task.delivery:
        kwargs.setdefault("delivery", ctx.task.delivery)
    services.send_task(name, kwargs)
    return True


PR_HEAD_REF = "refs/forksync/pr-head/"


def fetch_pull_branch(ctx: Context, pair: Pair, number: int, branch: str) -> str:
    """Fetch the fork's ``branch`` (PR #number's head) into the pair's repository; the local ref."""
    local = f"{PR_HEAD_REF}{number}"
    with fork_auth(ctx):
        pair.repo.git(
            "fetch", "--quiet", "--no-tags", "--", pair.fork.remote, f"+refs/heads/{branch}:{local}"
        )
    return local
