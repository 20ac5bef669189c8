"""The check runs an L1 job writes besides its own runs of the suites: ``forksync / L1`` and the
others upserted in place on a commit (:func:`upsert_check`), and ``forksync / coverage``: the
required checks of the trunk and of the commit's config, cross-checked against the trunk
branch's protection (:func:`coverage_from_github`, :func:`publish_coverage`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from core.config import CONFIG_PATH, RepoConfig, load_repo_config
from core.github.errors import GitHubPermissionError
from core.github.records import Annotation, CheckOutput, CheckRunInfo
from core.github.roles import GitHubPort
from core.render import l1 as render
from workers.testing.watchdog import CheckRunState, RequiredChecks, coverage, cross_check

log = logging.getLogger(__name__)


def upsert_check(
    github: GitHubPort, repo: str, sha: str, out: render.CheckRunOutput, external_id: str | None = None
) -> CheckRunInfo:
    """Update our check run of this name on this commit in place (reruns), or create it."""
    existing = [r for r in github.list_check_runs(repo, sha, name=out.name) if r.head_sha == sha]
    conclusion = out.conclusion if out.status == "completed" else None
    if existing:
        newest = max(existing, key=lambda r: r.id)
        return github.update_check_run(
            repo, newest.id, status=out.status, conclusion=conclusion, output=check_output(out)
        )
    return github.create_check_run(
        repo,
        name=out.name,
        head_sha=sha,
        status=out.status,
        conclusion=conclusion,
        output=check_output(out),
        details_url=out.details_url,
        external_id=external_id,
    )


def check_output(out: render.CheckRunOutput) -> CheckOutput:
    notes = tuple(
        Annotation(a.path, a.start_line, a.end_line, a.annotation_level, a.message, a.title or None)
        for a in out.annotations
    )
    return CheckOutput(out.title, out.summary, out.text or None, notes)


OWN_CHECKS = (render.L1_CHECK, render.COVERAGE_CHECK)


def coverage_from_github(github: GitHubPort, repo: str, sha: str) -> CheckRunInfo | None:
    """``forksync / coverage`` with the required checks of the trunk (the default branch's config)
    and of the config at ``sha`` together, cross-checked against the trunk branch's protection: a
    PR cannot drop a required check by editing its own config (None: none required anywhere)."""
    required: list[str] = []
    branch = "main"
    for ref in (None, sha):
        text = github.read_file(repo, CONFIG_PATH, ref=ref)
        where = f"{CONFIG_PATH} at {(ref or 'the default branch')[:12]}"
        config = load_repo_config(text, where) if text else RepoConfig()
        if ref is None:
            branch = config.fork.branch
        required += [c for c in config.l1.required_checks if c.lower() not in {r.lower() for r in required}]
    checks = required_checks_for(github, repo, branch, required)
    if not checks.checks and not checks.only_in_config:
        return None
    return publish_coverage(github, repo, sha, checks)


def required_checks_for(
    github: GitHubPort, repo: str, branch: str, configured: Sequence[str]
) -> RequiredChecks:
    """``configured`` cross-checked against ``branch``'s protection rules (read from GitHub); when
    GitHub refuses to show them (403: no ``Administration: read``), the configured checks alone,
    with the refusal kept for the check runs to say."""
    try:
        protection = github.required_status_checks(repo, branch)
    except GitHubPermissionError as exc:
        log.warning("%s: cannot read %s's branch protection: %s", repo, branch, exc)
        return replace(
            cross_check(configured, None, branch=branch, own=OWN_CHECKS),
            unreadable=f"GitHub answered {exc.status or 403}: the App lacks Administration: read",
        )
    return cross_check(configured, protection, branch=branch, own=OWN_CHECKS)


def publish_coverage(
    github: GitHubPort, repo: str, sha: str, required: Sequence[str] | RequiredChecks
) -> CheckRunInfo:
    """Compute ``forksync / coverage`` from the check runs on ``sha`` and create or update it;
    with :class:`RequiredChecks`, the summary says where config and branch protection disagree."""
    checks = required if isinstance(required, RequiredChecks) else RequiredChecks(tuple(required))
    runs = [
        CheckRunState(r.name, r.status, r.conclusion)
        for r in github.list_check_runs(repo, sha)
        if r.name not in OWN_CHECKS
    ]
    result = coverage(checks.checks, runs)
    out = render.coverage_check_run(sha, result)
    note = render.protection_note(
        checks.branch, checks.only_in_protection, checks.only_in_config, checks.unreadable
    )
    return upsert_check(github, repo, sha, replace(out, summary=out.summary + note) if note else out)
