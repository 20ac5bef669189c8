"""The ingestion loop for one fork: read fresh state, run the engine, apply the result on GitHub.

``ingest_repository(env, repo)`` is what the ``forksync.ingest`` task runs (and ``forksync
demo`` runs it through the embedded worker). Order of work, each step idempotent so that a
redelivered webhook, an overlapping poll or a rerun after a crash converges on the same state:

1. fetch the fork (trunk, ``forksync/*`` branches, notes) into the worker's bare cache, read
   ``.github/forksync.yml`` from its default branch: a bad file becomes a failing
   ``forksync / ingestion`` check run quoting the line, and the loop stops there;
2. fetch upstream into its cache, run the engine (ledger, plan, bundle and chain builds) on the
   two caches;
3. push the bot-owned refs (``forksync/*`` branches force, decision notes fast-forward only);
4. upsert one PR per urgent commit first (``forksync/urgent/<sha7>`` on the trunk; an issue naming
   the conflicting files when its pick conflicts), one PR per bundle (found by head branch) and
   one tracking issue per chain (found by its hidden marker), then post the check run with the
   figures, and record a metrics point.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.config import CONFIG_PATH, ConfigError, RepoConfig, load_repo_config
from core.errors import ForksyncError
from core.github.records import Posted
from core.github.roles import IngestGitHub
from core.render import marker
from core.render.ingest import (
    CHECK_NAME,
    BundleView,
    ChainView,
    IngestionFigures,
    UrgentView,
    bundle_body,
    bundle_title,
    chain_body,
    chain_pr_body,
    chain_pr_title,
    chain_title,
    config_error_summary,
    ingestion_summary,
    urgent_body,
    urgent_title,
)
from core.settings import WorkerSettings
from workers.adapters.gitcache import GitCache, remote_git
from workers.adapters.state import StateStore
from workers.engine.git import GitError, Repository

log = logging.getLogger(__name__)

BOT_BRANCH_PREFIX = "forksync/"
INGEST_TIME_LIMIT_S = 40 * 60


@dataclass(frozen=True)
class EngineOutput:
    """What the engine hands the executor: texts to post and refs already written to the fork cache."""

    figures: IngestionFigures
    plan_id: str
    bundles: tuple[BundleView, ...]
    chains: tuple[ChainView, ...]
    upstream_web_url: str | None
    urgent: tuple[UrgentView, ...] = ()  # each its own PR on the fork trunk (an issue when it conflicts)
    dashboard: dict[str, Any] = field(default_factory=dict)  # workers/dashboard_feed.engine_facts


# (upstream cache path, fork cache path, upstream branch, fork branch, config) -> EngineOutput.
# The engine writes bundle/chain branches and notes into the fork cache; the executor pushes them.
Engine = Callable[[Repository, Repository, str, str, RepoConfig], EngineOutput]


@dataclass
class IngestEnv:
    """Everything the loop touches outside itself; tests and the demo pass their own."""

    settings: WorkerSettings
    github: IngestGitHub
    caches: GitCache
    state: StateStore
    engine: Engine


@dataclass
class IngestReport:
    """What one run did (also the task's JSON result)."""

    repo: str
    status: str  # "ingested", "config_error", "no_upstream", "error" (reported on a failing check)
    figures: dict[str, Any] = field(default_factory=dict)
    pulls: list[dict[str, Any]] = field(default_factory=list)
    issues: list[dict[str, Any]] = field(default_factory=list)
    check: dict[str, Any] = field(default_factory=dict)
    closed: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "status": self.status,
            "figures": self.figures,
            "pulls": self.pulls,
            "issues": self.issues,
            "check": self.check,
            "closed": self.closed,
            "seconds": round(self.seconds, 3),
        }


def default_branch(cache: Repository, url: str, token: str | None) -> str:
    """The remote's default branch (``HEAD`` symref), or ``main`` when it does not say."""
    out = remote_git(cache, token, "ls-remote", "--symref", "--", url, "HEAD").decode("utf-8", "replace")
    for line in out.splitlines():
        if line.startswith("ref: refs/heads/") and line.endswith("\tHEAD"):
            return line[len("ref: refs/heads/") : -len("\tHEAD")]
    return "main"


def read_config(cache: Repository, branch: str) -> RepoConfig:
    """``.github/forksync.yml`` at the tip of ``branch`` in the cache; defaults when absent."""
    blob = f"refs/heads/{branch}:{CONFIG_PATH}"
    if not cache.ok("cat-file", "-e", blob):
        return RepoConfig()
    return load_repo_config(cache.git("cat-file", "-p", blob).decode("utf-8", "replace"), CONFIG_PATH)


def _config_line(cache: Repository, branch: str, line: int | None) -> str | None:
    if not line:
        return None
    text = cache.git("cat-file", "-p", f"refs/heads/{branch}:{CONFIG_PATH}").decode("utf-8", "replace")
    lines = text.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else None


def fork_refspecs(branch: str) -> list[str]:
    return [
        f"+refs/heads/{branch}:refs/heads/{branch}",
        f"+refs/heads/{BOT_BRANCH_PREFIX}*:refs/heads/{BOT_BRANCH_PREFIX}*",
        "+refs/notes/*:refs/notes/*",
        # the durable chain record (workers/engine/chains.py) and other bot-owned refs
        "+refs/forksync/*:refs/forksync/*",
    ]


def ingest_repository(env: IngestEnv, repo: str, *, max_commits: int | None = None) -> IngestReport:
    """Run the loop once for the fork ``repo`` (``owner/name``); see the module docstring.

    ``max_commits`` (``/bundle max=N``) replaces ``bundle.max_commits`` of the fork's config for
    this run only; the config file is not changed, so the next run plans by the file again.
    """
    started = time.monotonic()
    gh, settings = env.github, env.settings
    token = gh.git_token()
    fork_url = settings.map_url(gh.clone_url(repo))
    # The lock covers everything up to the last GitHub write: two ingests of one fork never race
    # (a second waits, then finds the PRs and issues the first made).
    with env.state.lock(f"ingest:{repo}", ttl_s=settings.lock_ttl_s, wait_s=2.0), env.caches.open(f"fork:{repo}") as fork:
        trunk_default = default_branch(fork, fork_url, token)
        env.caches.fetch(fork, fork_url, fork_refspecs(trunk_default), token)
        trunk_head = fork.rev_parse(f"refs/heads/{trunk_default}")
        if trunk_head is None:
            raise ForksyncError(f"the fork {repo} has no branch {trunk_default}", "push a trunk branch first")
        try:
            config = read_config(fork, trunk_default)
        except ConfigError as exc:
            report = IngestReport(repo, "config_error")
            title, summary = config_error_summary(exc.one_line(), exc.source, exc.line, _config_line(fork, trunk_default, exc.line))
            posted = gh.check_run(repo, name=CHECK_NAME, head_sha=trunk_head, conclusion="failure", title=title, summary=summary)
            report.check = {"id": posted.number, "conclusion": "failure", "title": title}
            report.seconds = time.monotonic() - started
            return report
        if config.fork.branch != trunk_default:
            env.caches.fetch(fork, fork_url, fork_refspecs(config.fork.branch), token)
            trunk_head = fork.rev_parse(f"refs/heads/{config.fork.branch}")
            if trunk_head is None:
                raise ForksyncError(
                    f"the fork {repo} has no branch {config.fork.branch!r} (fork.branch in {CONFIG_PATH})",
                    "create it or fix fork.branch",
                )
        if not config.upstream.url:
            report = IngestReport(repo, "no_upstream")
            title = f"{CONFIG_PATH}: upstream.url is not set; nothing to ingest"
            summary = f"Add `upstream: {{url: https://github.com/OWNER/REPO, branch: main}}` to `{CONFIG_PATH}`.\n"
            posted = gh.check_run(repo, name=CHECK_NAME, head_sha=trunk_head, conclusion="action_required", title=title, summary=summary)
            report.check = {"id": posted.number, "conclusion": "action_required", "title": title}
            return report
        if max_commits is not None:
            if max_commits < 1:
                raise ForksyncError(f"max_commits must be at least 1, not {max_commits}", "pass /bundle max=N with N >= 1")
            config = dataclasses.replace(config, bundle=dataclasses.replace(config.bundle, max_commits=max_commits))
        try:
            report = _plan_and_apply(env, repo, config, fork, fork_url, token, trunk_head)
        except ForksyncError as exc:
            if retry_after_of(exc) is not None:
                raise  # transient: the task retries from fresh state
            # A failure the maintainer must act on (upstream unreachable, unrelated histories, a
            # trailer the ledger cannot read...): say so on the fork, where they look.
            report = IngestReport(repo, "error")
            title = f"ingestion failed: {exc.problem}"[:240]
            summary = f"**{exc.one_line()}**\n\nNothing was pushed or opened by this run. Fix the cause and push: the next push or poll retries.\n"
            posted = gh.check_run(repo, name=CHECK_NAME, head_sha=trunk_head, conclusion="failure", title=title, summary=summary)
            report.check = {"id": posted.number, "conclusion": "failure", "title": title}
            log.warning("ingest %s failed: %s", repo, exc.one_line())
    report.seconds = time.monotonic() - started
    env.state.append(f"metrics:{repo}", {"t": round(time.time(), 3), **report.figures})
    if report.status == "ingested":
        refresh_dashboard(env, repo, config)
    return report


def refresh_dashboard(env: IngestEnv, repo: str, config: RepoConfig) -> None:
    """Rebuild the fork's dashboard feed; a failure here is logged, never fails the ingest."""
    from core.dashboard.store import open_feed_store
    from workers.adapters.notify import notifier_for
    from workers.jobs.dashboard_feed import refresh

    try:
        refresh(env.settings, env.state, open_feed_store(env.settings.bot.database_url, env.settings.data_dir),
                repo, config, github=env.github, notifier=notifier_for(config.digest.notify_url, repo))
    except Exception:
        log.exception("dashboard feed of %s not refreshed", repo)


def retry_after_of(exc: BaseException) -> float | None:
    from workers.app.celery_app import retry_after

    return retry_after(exc)


def _plan_and_apply(
    env: IngestEnv, repo: str, config: RepoConfig, fork: Repository, fork_url: str, token: str | None, trunk_head: str
) -> IngestReport:
    """Steps 2-4 of the loop (module docstring), under the caller's repository lock."""
    assert config.upstream.url is not None
    upstream_url = env.settings.map_url(config.upstream.url)
    branches_before = bot_branches(fork)
    chains_before = recorded_chain_ids(fork)
    with env.caches.open(f"upstream:{config.upstream.url}") as upstream:
        branch = config.upstream.branch
        env.caches.fetch(upstream, upstream_url, [f"+refs/heads/{branch}:refs/heads/{branch}"])
        output = env.engine(upstream, fork, branch, config.fork.branch, config)
    push_bot_refs(fork, fork_url, token, output)
    report = apply_output(env, repo, config, trunk_head, output)
    report.closed = close_stale(env, repo, fork, fork_url, token, output, branches_before,
                                chains_before - recorded_chain_ids(fork))
    post_check(env, repo, trunk_head, output, report)  # last: it reports a finished run
    from core.dashboard.store import open_feed_store

    feeds = open_feed_store(env.settings.bot.database_url, env.settings.data_dir)
    facts = feed_facts(repo, fork, output, report, env.github)
    feeds.put_facts(repo, landing_times(facts, feeds.facts(repo), time.time()))
    return report


def landing_times(facts: dict[str, Any], previous: dict[str, Any], now: float) -> dict[str, Any]:
    """Date each pick by when this fork's trunk first had it (built commits carry upstream's
    committer time, so their own dates say nothing about landing). The first ingest of a fork
    dates what is already there by its commit time: history, not news."""
    seen: dict[str, float] = dict(previous.get("landed_at", {}))
    first = not previous
    picks = facts.get("picks", [])
    for pick in picks:
        seen.setdefault(pick["sha"], pick["t"] if first else now)
    current = {p["sha"] for p in picks}
    seen = {sha: t for sha, t in seen.items() if sha in current}  # reverted or rewritten: forgotten
    for pick in picks:
        pick["t"] = seen[pick["sha"]]
    from workers.jobs.dashboard_feed import LANDED_WINDOW_S

    landed = []
    for item in facts.get("landed", []):
        item["t"] = seen.get(item["fork_sha"], item["t"])
        if item["t"] >= now - LANDED_WINDOW_S:  # what digests can still report; older is history
            landed.append(item)
    return {**facts, "landed": landed, "landed_at": seen}


def feed_facts(repo: str, fork: Repository, output: EngineOutput, report: IngestReport, gh: IngestGitHub) -> dict[str, Any]:
    """What this run knows for the dashboard: the engine's ledger facts and what is in flight."""
    posted = {item["key"]: item for item in [*report.pulls, *report.issues]}
    as_pull = {item["key"] for item in report.pulls}  # a built chain is a PR too (bundle.chain_prs)
    items: list[dict[str, Any]] = []

    def add(kind: str, key: str, size: int, branch: str | None, conflicts: tuple[str, ...]) -> None:
        item = posted.get(key, {})
        items.append({"kind": kind, "key": key, "title": item.get("title", key), "number": item.get("number"),
                      "url": item.get("url"), "size": size, "conflicts": list(conflicts),
                      "commits": output.dashboard.get("commits", {}).get(key, []),
                      "pull": branch is not None and (kind != "chain" or key in as_pull),
                      "head_sha": fork.rev_parse(f"refs/heads/{branch}") if branch else None})

    for u in output.urgent:
        add("urgent", u.key, 1, u.branch, u.conflicts)
    for b in output.bundles:
        add("bundle", b.key, len(b.commits), b.branch, ())
    for c in output.chains:
        add("chain", c.key, len(c.commits), c.branch, c.conflicts)
    private = None
    is_private = getattr(gh, "is_private", None) or getattr(getattr(gh, "adapter", None), "is_private", None)
    if is_private is not None:
        try:
            private = bool(is_private(repo))
        except Exception as exc:  # visibility unknown: the dashboard keeps treating it as private
            log.warning("visibility of %s unknown: %s", repo, exc)
    return {**output.dashboard, "in_flight": items, **({"private": private} if private is not None else {})}


def bot_branches(fork: Repository) -> set[str]:
    """The bundle, chain and urgent branches the fork has now (names without ``refs/heads/``)."""
    out = fork.text(
        "for-each-ref", "--format=%(refname:lstrip=2)",
        "refs/heads/forksync/bundle/", "refs/heads/forksync/chain/", "refs/heads/forksync/urgent/",
    )
    return set(out.split())


def recorded_chain_ids(fork: Repository) -> set[str]:
    """Ids of the open chains recorded in the fork (``refs/forksync/chains``)."""
    from workers.engine.chains import CHAINS_FILE, CHAINS_REF, decode

    blob = f"{CHAINS_REF}:{CHAINS_FILE}"
    if not fork.ok("cat-file", "-e", blob):
        return set()
    return {record.id for record in decode(fork.git("cat-file", "-p", blob), f"{CHAINS_REF} in the fork")}


def close_stale(
    env: IngestEnv,
    repo: str,
    fork: Repository,
    fork_url: str,
    token: str | None,
    output: EngineOutput,
    branches_before: set[str],
    closed_chains: set[str],
) -> list[dict[str, Any]]:
    """Close what the new plan no longer has: bundle PRs (and their branches) and finished chains.

    A bundle branch is stale when its commits were merged or re-planned into another bundle; a
    chain is finished when the engine dropped it from the record (every commit picked or won't
    port). Nothing is closed silently: each gets a comment saying why.
    """
    gh = env.github
    current = {b.branch for b in output.bundles} | {c.branch for c in output.chains if c.branch}
    current |= {u.branch for u in output.urgent if u.branch}
    stale = sorted(branches_before - current)
    closed: list[dict[str, Any]] = []
    for branch in stale:
        if branch.startswith(("forksync/bundle/", "forksync/chain/")):
            number = gh.close_pull(
                repo,
                head=branch,
                comment=f"Superseded: ingestion plan `{output.plan_id}` no longer has this bundle (its commits were "
                f"merged, or re-planned into another bundle). forksync closed it and deleted `{branch}`.",
            )
            if number is not None:
                closed.append({"kind": "pull", "number": number, "branch": branch})
        elif branch.startswith("forksync/urgent/"):
            number = gh.close_pull(
                repo,
                head=branch,
                comment=f"No longer needed: ingestion plan `{output.plan_id}` has no urgent pick for this commit "
                f"(it is picked, or its urgent mark was changed). forksync closed it and deleted `{branch}`.",
            )
            if number is not None:
                closed.append({"kind": "pull", "number": number, "branch": branch})
    if stale:
        remote_git(fork, token, "push", "--quiet", "--no-verify", "--delete", "--", fork_url, *stale)
    for chain_id in sorted(closed_chains):
        number = gh.close_issue(
            repo,
            marker=marker("chain", chain_id),
            comment=f"Done: every commit of this risky chain is now picked or marked won't-port (plan `{output.plan_id}`).",
        )
        if number is not None:
            closed.append({"kind": "issue", "number": number, "chain": chain_id})
    return closed


def push_bot_refs(fork: Repository, fork_url: str, token: str | None, output: EngineOutput) -> None:
    """Push the bundle and chain branches (force: they are rebuilt), then the decision notes and
    the chain record (fast-forward only: a concurrent writer makes us retry, never lose work)."""
    branches = [b.branch for b in output.bundles] + [c.branch for c in output.chains if c.branch]
    branches += [u.branch for u in output.urgent if u.branch]
    specs = []
    for branch in branches:
        if not branch.startswith(BOT_BRANCH_PREFIX):
            raise ForksyncError(f"refusing to push {branch}: not a forksync/ branch", "this is a bug; report it")
        if fork.rev_parse(f"refs/heads/{branch}") is None:
            raise ForksyncError(f"the engine did not write {branch} into the fork cache", "this is a bug; report it")
        specs.append(f"+refs/heads/{branch}:refs/heads/{branch}")
    if specs:
        remote_git(fork, token, "push", "--quiet", "--no-verify", "--", fork_url, *specs)
    notes = fork.text("for-each-ref", "--format=%(refname)", "refs/notes/", "refs/forksync/")
    if notes:
        try:
            remote_git(fork, token, "push", "--quiet", "--no-verify", "--", fork_url, *[f"{ref}:{ref}" for ref in notes.splitlines()])
        except GitError as exc:
            # Someone recorded a decision meanwhile: our notes are stale. Rerun from fresh state
            # (retryable: the task runs again after a short backoff and re-reads everything).
            from core.github.errors import RetryableGitHubError

            raise RetryableGitHubError(f"the fork's decision notes or chain record moved during ingestion ({exc.problem})", 0.0) from None


def apply_output(env: IngestEnv, repo: str, config: RepoConfig, trunk_head: str, output: EngineOutput) -> IngestReport:
    """Upsert one PR per bundle and one issue per chain. Safe to repeat: upserts find before creating."""
    gh = env.github
    report = IngestReport(repo, "ingested")
    # Urgent picks first: they are out of order on purpose and should not wait behind the bundles.
    for urgent in output.urgent:
        title, body = urgent_title(urgent), urgent_body(urgent, output.upstream_web_url)
        if urgent.branch is not None:
            posted = gh.upsert_pull(repo, head=urgent.branch, base=urgent.base_branch, title=title, body=body)
            report.pulls.append(_posted(posted, urgent.key, title, 1))
        else:
            # Its pick conflicts: no branch to open a PR on. An issue names the files and the way by hand.
            posted = gh.upsert_issue(repo, marker=marker("urgent", urgent.key), title=title, body=body)
            report.issues.append(_posted(posted, urgent.key, title, 1))
    for bundle in output.bundles:
        posted = gh.upsert_pull(
            repo,
            head=bundle.branch,
            base=bundle.base_branch,
            title=bundle_title(bundle),
            body=bundle_body(bundle, output.upstream_web_url),
        )
        report.pulls.append(_posted(posted, bundle.key, bundle_title(bundle), len(bundle.commits)))
        log.info("bundle PR #%d %s: %d commits (%s)", posted.number, "opened" if posted.created else "updated",
                 len(bundle.commits), bundle.branch)
    for chain in output.chains:
        if config.bundle.chain_prs and chain.branch is not None and chain.carried:
            # Something is built: the chain is a PR (found by its head branch, never a second one),
            # based on what it is built on; L1 runs on it like on any PR.
            title = chain_pr_title(chain)
            posted = gh.upsert_pull(repo, head=chain.branch, base=chain.base_branch, title=title,
                                    body=chain_pr_body(chain, output.upstream_web_url))
            report.pulls.append(_posted(posted, chain.key, title, len(chain.commits)))
            continue
        posted = gh.upsert_issue(
            repo, marker=marker("chain", chain.key), title=chain_title(chain), body=chain_body(chain, output.upstream_web_url)
        )
        report.issues.append(_posted(posted, chain.key, chain_title(chain), len(chain.commits)))
        log.info("chain issue #%d %s: %d commits", posted.number, "opened" if posted.created else "updated", len(chain.commits))
    f = output.figures
    point = output.dashboard.get("point", {})
    report.figures = {
        **point,
        "days_behind": f.days_behind,
        "backlog": f.backlog,
        "pending": f.pending,
        "picked": f.picked,
        "bundles": f.bundles,
        "chains": f.chains,
        "urgent": f.urgent,
        "plan_id": output.plan_id,
    }
    return report


def post_check(env: IngestEnv, repo: str, trunk_head: str, output: EngineOutput, report: IngestReport) -> None:
    """The ``forksync / ingestion`` check run on the fork trunk head, with the figures."""
    title, summary = ingestion_summary(output.figures)
    posted = env.github.check_run(repo, name=CHECK_NAME, head_sha=trunk_head, conclusion="success", title=title, summary=summary)
    report.check = {"id": posted.number, "conclusion": "success", "title": title, "head_sha": trunk_head}


def _posted(posted: Posted, key: str, title: str, commits: int) -> dict[str, Any]:
    return {"number": posted.number, "url": posted.url, "created": posted.created, "key": key, "title": title, "commits": commits}
