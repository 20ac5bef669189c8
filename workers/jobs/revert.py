"""The executor of revert proposals (``workers.testing.revert``): build the revert of a trunk
culprit in memory on the trunk tip, push it to ``forksync/revert/<sha>``, open the PR (the
pull_request webhook starts L1 on it), and say so on the tracking issue. Never merges."""

from __future__ import annotations

import logging

from core.github.roles import GitHubPort
from core.render import marker
from core.render import revert as render
from workers.engine.git import Repository
from workers.testing.revert import (
    AlreadyReverted,
    Declined,
    LinkExisting,
    OpenRevert,
    RevertPull,
    plan_revert,
    revert_branch,
)

log = logging.getLogger(__name__)


def build_revert(cache: Repository, culprit: str, onto: str) -> str | None:
    """The commit reverting ``culprit`` on top of ``onto``, made in memory; None on a conflict."""
    import pygit2

    repo = pygit2.Repository(str(cache.path))
    bad = repo[culprit].peel(pygit2.Commit)
    tip = repo[onto].peel(pygit2.Commit)
    if not bad.parents:
        return None
    index = repo.merge_trees(bad.tree, tip.tree, bad.parents[0].tree)
    if index.conflicts is not None:
        return None
    tree = index.write_tree(repo)
    subject = bad.message.splitlines()[0] if bad.message else culprit[:12]
    message = f'Revert "{subject}"\n\nThis reverts commit {culprit}.\n'
    committer = pygit2.Signature("forksync", "forksync@users.noreply.github.com")
    return str(repo.create_commit(None, committer, committer, message, tree, [tip.id]))


def propose_revert(
    github: GitHubPort,
    cache: Repository,
    repo: str,
    *,
    culprit: str,
    subject: str,
    trunk_branch: str,
    trunk_sha: str,
    issue: int,
) -> int | None:
    """Open (or find) the revert PR of ``culprit`` and link it from ``issue``; the PR number, or
    None when the revert does not apply cleanly on trunk, or a maintainer declined (closed) or
    merged its revert PR already (the issue says which)."""
    pulls = [
        RevertPull(p.number, p.state, p.merged)
        for p in github.pull_requests_from(repo, revert_branch(culprit))
        if p.base_ref == trunk_branch
    ]
    action = plan_revert(culprit, subject, trunk_branch, issue, None, pulls)
    note = marker("revert", culprit)
    if isinstance(action, Declined | AlreadyReverted):
        github.upsert_comment(
            repo,
            issue,
            marker=note,
            body=f"{note}\n"
            + (
                render.revert_declined(culprit, subject, action.pr)
                if isinstance(action, Declined)
                else render.revert_merged(culprit, subject, action.pr)
            ),
        )
        log.info(
            "revert of %s in %s: PR #%d %s; not proposed again",
            culprit[:12],
            repo,
            action.pr,
            "declined" if isinstance(action, Declined) else "merged",
        )
        return None
    if isinstance(action, LinkExisting):
        number = action.pr
    else:
        assert isinstance(action, OpenRevert)
        sha = build_revert(cache, culprit, trunk_sha)
        if sha is None:
            github.upsert_comment(
                repo, issue, marker=note, body=f"{note}\n{render.revert_does_not_apply(culprit, trunk_sha)}"
            )
            return None
        github.push_branch(repo, cache, sha, action.branch, force=True)
        pull, _created = github.ensure_pull_request(
            repo,
            head=action.branch,
            base=action.base,
            title=action.title,
            body=(f"{note}\n{render.revert_pr_body(culprit, issue)}"),
        )
        number = pull.number
    github.upsert_comment(
        repo, issue, marker=note, body=f"{note}\n{render.revert_proposed(culprit, subject, number)}"
    )
    log.info("revert of %s proposed in %s#%s for issue #%d", culprit[:12], repo, number, issue)
    return number
