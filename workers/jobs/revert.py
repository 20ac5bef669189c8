"""The executor of revert proposals (``workers.testing.revert``): build the revert of a trunk
culprit in memory on the trunk tip, push it to ``forksync/revert/<sha>``, open the PR (the
pull_request webhook starts L1 on it), and say so on the tracking issue. Never merges."""

from __future__ import annotations

import logging

from core.github.roles import GitHubPort
from core.render import marker
from workers.engine.git import Repository
from workers.testing.revert import LinkExisting, OpenRevert, plan_revert, revert_branch

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


def propose_revert(github: GitHubPort, cache: Repository, repo: str, *, culprit: str, subject: str,
                   trunk_branch: str, trunk_sha: str, issue: int) -> int | None:
    """Open (or find) the revert PR of ``culprit`` and link it from ``issue``; the PR number, or
    None when the revert does not apply cleanly on trunk (the issue says so)."""
    existing = github.find_pull_request(repo, revert_branch(culprit), base=trunk_branch)
    action = plan_revert(culprit, subject, trunk_branch, issue, existing.number if existing else None)
    note = marker("revert", culprit)
    if isinstance(action, LinkExisting):
        number: int | None = action.pr
    else:
        assert isinstance(action, OpenRevert)
        sha = build_revert(cache, culprit, trunk_sha)
        if sha is None:
            github.upsert_comment(repo, issue, marker=note, body=(
                f"{note}\nThe revert of {culprit[:12]} does not apply cleanly on trunk `{trunk_sha[:12]}`: no revert PR "
                "was opened. Revert it by hand, or eject it into a chain."))
            return None
        github.push_branch(repo, cache, sha, action.branch, force=True)
        pull, _created = github.ensure_pull_request(repo, head=action.branch, base=action.base, title=action.title, body=(
            f"{note}\nReverts {culprit} (found by bisection in #{issue}).\n\n"
            "Proposed by forksync: L1 runs on this PR like on any other, and **it is never merged "
            "without a maintainer**. Merge it to fix trunk, or close it and fix forward."))
        number = pull.number
    github.upsert_comment(repo, issue, marker=note, body=(
        f"{note}\n**Proposed fix:** revert PR #{number} reverts {culprit[:12]} {subject}".rstrip()
        + ". L1 runs on it; a maintainer merges it (forksync never does)."))
    log.info("revert of %s proposed in %s#%s for issue #%d", culprit[:12], repo, number, issue)
    return number
