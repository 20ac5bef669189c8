"""``/approve``: a maintainer's word that a PR from outside may run on self-hosted GPU runners.

Recorded durably as a marked comment written by the bot on the PR (users cannot write as the
bot, so the record cannot be forged; a label could be added by anyone with triage rights), plus
a ``forksync:approved`` label for people to see. The approval names the PR's head sha: a later
push by the contributor needs a new ``/approve`` (the code that was looked at is what runs).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Protocol

from core.github.roles import Comments, PullReader
from core.render import commands as render_commands
from core.render import marker
from workers.commands.handler import bot_comment

log = logging.getLogger("forksync.commands")

APPROVED_LABEL = "forksync:approved"
# Authors GitHub vouches for: their PRs run without /approve even from a fork of their own.
TRUSTED_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})

_SHA_LINE = re.compile(r"^Approved head: `?(?P<sha>[0-9a-f]{40})`?", re.MULTILINE)
_BY_LINE = re.compile(r"^Approved by: @(?P<user>[A-Za-z0-9-]+)", re.MULTILINE)


class ApprovalReader(Comments, PullReader, Protocol):
    """The roles an approval is read with (the L1 runner's ``GitHubPort`` has them)."""


@dataclass(frozen=True)
class Approval:
    head_sha: str
    by: str


def approval_marker(pr: int) -> str:
    return marker("approval", str(pr))


def approval_body(pr: int, head_sha: str, by: str) -> str:
    """The bot's record of an approval (edited in place on a new /approve); its text is
    ``core.render.commands.approval_record``, whose two lines :func:`read_approval` parses."""
    return render_commands.approval_record(approval_marker(pr), head_sha, by)


def read_approval(gh: Comments, repo: str, pr: int, own_login: str | None) -> Approval | None:
    """The recorded approval of ``pr``, or None. Only the bot's own marked comment counts."""
    # Any App's bot may comment on a PR, and some echo text a contributor controls: when our own
    # login is known, only a record written by it counts (``bot_comment``).
    comment = bot_comment(gh, repo, pr, approval_marker(pr), own_login)
    if comment is None or comment.author_type != "Bot":
        return None
    sha = _SHA_LINE.search(comment.body)
    by = _BY_LINE.search(comment.body)
    if not sha or not by:
        return None
    return Approval(sha.group("sha"), by.group("user"))


def needs_approval(repo: str, head_repo: str | None, author_association: str) -> bool:
    """True for a PR from outside: its head lives in another repository (or a deleted one) and
    GitHub does not know its author as an owner, member or collaborator of ``repo``."""
    from_outside = (head_repo or "").lower() != repo.lower()
    return from_outside and author_association.upper() not in TRUSTED_ASSOCIATIONS


def is_approved(
    gh: ApprovalReader, repo: str, pr: int, head_sha: str | None = None, own_login: str | None = None
) -> bool:
    """True when ``pr`` may run on the self-hosted runners at its current head (or at ``head_sha``).

    For the L1 runner and ``/retest``: ``gh`` is the bot's ``GitHubAdapter`` (or a test fake). A PR
    whose branch lives in ``repo`` itself, or whose author is an owner, member or collaborator,
    needs no approval; any other PR from a fork needs a maintainer's ``/approve`` at the very head
    that is about to run. ``own_login``: the App's login (``GitHubApp.bot_login()``); only an
    approval record written by it counts, and without it no record does.
    """
    pull = gh.get_pull_request(repo, pr)
    if not needs_approval(repo, pull.head_repo, pull.author_association):
        return True
    if not own_login:
        # Without our own login any App's bot comment could pass for our record (fail closed).
        log.warning("%s#%s: approval not checked: the App's own login is unknown", repo, pr)
        return False
    approval = read_approval(gh, repo, pr, own_login)
    if approval is None:
        return False
    return approval.head_sha == (head_sha or pull.head_sha)
