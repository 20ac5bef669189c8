"""The executor of command recovery (at worker start-up and by beat, ``forksync.recover_commands``):
read which repositories sent deliveries lately (the accepted-delivery log in the store), list each
one's recent comments once, let ``workers.commands.recovery.plan`` decide, and enqueue the
``forksync.on_comment`` task by name for each comment whose delivery was lost.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from core import tasknames
from core.errors import ForksyncError
from core.store import Store, answers, deliveries
from workers.commands.recovery import Recover, plan

log = logging.getLogger(__name__)

# Repositories that sent a delivery within this long are scanned; older log rows are pruned
# (GitHub redelivers for three days at most, so a week keeps every redelivery a duplicate).
KEEP_S = 7 * 24 * 3600
# Answered-comment records are kept this long (far past GitHub's 3 days of redelivery and the
# 24 h recovery scan, the only ways a comment is delivered again).
ANSWERS_KEEP_S = 30 * 24 * 3600
# Comments this recent are scanned (a command left unanswered longer is not run any more).
LOOKBACK_S = 24 * 3600
# Comments younger than this are left to their own delivery (queued webhook tasks run within it).
GRACE_S = 5 * 60


def recover_commands(
    store: Store,
    github_for: Callable[[int], Any],
    send_task: Callable[[str, dict[str, Any]], None],
    *,
    own_login: str | None,
    now: float | None = None,
    lookback_s: float = LOOKBACK_S,
    grace_s: float = GRACE_S,
) -> list[Recover]:
    """One recovery pass; returns the comments it enqueued. A repository GitHub refuses to list
    (uninstalled, rate limited) is logged and skipped; the next pass tries again."""
    now = time.time() if now is None else now
    pruned = deliveries.prune(store, now - KEEP_S)
    if pruned:
        log.info("delivery log: pruned %d deliveries older than %d days", pruned, KEEP_S // 86400)
    answers.prune(store, now - ANSWERS_KEEP_S)
    since = datetime.fromtimestamp(now - lookback_s, UTC).replace(microsecond=0)
    done: list[Recover] = []
    for repo, installation_id in deliveries.recent_repositories(store, now - KEEP_S):
        try:
            comments = github_for(installation_id).recent_comments(repo, since)
        except ForksyncError as exc:
            log.warning("%s: cannot list recent comments to recover commands: %s", repo, exc)
            continue
        for action in plan(repo, installation_id, comments, own_login=own_login, now=now, grace_s=grace_s):
            log.info(
                "%s: comment %s on #%s has commands and no reply; answering it now",
                repo,
                action.comment_id,
                action.issue_number,
            )
            send_task(tasknames.ON_COMMENT, action.task_kwargs())
            done.append(action)
    return done
