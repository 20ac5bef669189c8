"""Resolution memory from merged pick PRs: a merged forksync pick branch teaches the memory.

The handler runs on ``pull_request`` closed+merged for forksync's own branches (``forksync/…``):
the merged result on the trunk answers the conflict its upstream commit had (a maintainer's own
pushed resolution included), and the records are pushed to the fork's memory ref. Quick: one
fetch of the cached pair and a few in-memory merges.
"""

from __future__ import annotations

import logging
from typing import Any

from core import tasknames
from core.config import CONFIG_PATH, RepoConfig, load_repo_config
from core.errors import ForksyncError
from workers.app.handlers import handles

log = logging.getLogger("forksync.resolve")

BRANCH_PREFIX = "forksync/"


def learn_from_merge(
    config: RepoConfig, fork_location: str, upstream_location: str, number: int, token: str | None = None
) -> int:
    """Learn PR #number's resolution from the fork's trunk and push it to the memory ref; how many records."""
    from workers.commands.services import git_auth
    from workers.engine.pair import open_pair
    from workers.engine.resolve.learning import learn_merged, record_in_fork

    with git_auth(token, fork_location):
        pair = open_pair(
            upstream_location,
            fork_location,
            config.upstream.branch,
            config.fork.branch,
            notes_ref=config.ledger.notes_ref,
        )
        records = learn_merged(pair, number, config.ledger.trailer_patterns, f"merged #{number}")
        return record_in_fork(
            pair,
            records,
            f"forksync: learn {len(records)} resolution(s) merged in #{number}",
            config.resolve.memory_ref,
        )


@handles(tasknames.ON_PULL_REQUEST)
def learn_on_merge(
    installation_id: int | None,
    repo: str,
    number: int,
    action: str,
    merged: bool = False,
    head_ref: str = "",
    **_: Any,
) -> None:
    """A merged forksync pick PR: remember how its conflicts were resolved."""
    if action != "closed" or not merged or not head_ref.startswith(BRANCH_PREFIX) or installation_id is None:
        return
    from workers.app import runtime
    from workers.tasks.commands import _settings

    settings = _settings()
    github = runtime.github_for(settings, int(installation_id))
    adapter = getattr(github, "adapter", None)
    if adapter is None:
        return
    text = adapter.read_file(repo, CONFIG_PATH)
    try:
        config = load_repo_config(text, CONFIG_PATH) if text else RepoConfig()
    except ForksyncError as exc:
        log.warning("%s: not learning from #%s: %s", repo, number, exc.one_line())
        return
    if not config.upstream.url:
        return
    learned = learn_from_merge(
        config,
        settings.map_url(github.clone_url(repo)),
        settings.map_url(config.upstream.url),
        number,
        github.git_token(),
    )
    log.info("%s: #%s merged; %d resolution(s) remembered", repo, number, learned)
