"""The ingestion loop for one fork: read fresh state, run the engine, apply the result on GitHub.

``ingest_repository(env, repo)`` is what the ``forksync.ingest`` task runs (and ``forksync
demo`` runs it through the embedded worker). Order of work, each step idempotent so that a
redelivered webhook, an overlapping poll or a rerun after a crash converges on the same state:

1. fetch the fork (trunk, ``forksync/*`` branches, notes) into the worker's bare cache, read
   ``.github/forksync.yml`` from its default branch: a bad file becomes a failing
   ``forksync / ingestion`` check run quoting the line, and the loop stops there;
2. fetch upstream into its cache, run the engine (ledger, plan, bundle and chain builds) on the
   two caches;
3. read what GitHub has for the branches it built (the open PR of each head branch, and for
   those whose branch moves, approvals and running L1 checks), and plan from that plain data
   (``workers.jobs.ingest_plan.plan``: typed actions, no I/O);
4. execute the actions in order (:func:`execute`): push the bot-owned refs (``forksync/*``
   branches force, decision notes fast-forward only); one PR per urgent commit first, then one
   per bundle and per chain with built commits, each based on the trunk (a stacked bundle on the
   branch of the bundle it needs), found by head branch (re-targeted when its base changes, saying
   why; a force-push over an approval or a running L1 said on the PR and review re-requested); a
   bundle whose PR was closed unmerged is declined (read before planning: never reopened, its
   branch kept, nothing stacked on it); an issue per conflicting urgent pick and per chain
   that built nothing; stale PRs closed and their branches deleted (a bundle that a re-cut left
   with no successor says which PRs hold its commits now); finished chains' issues closed; then
   the check run with the figures, and a metrics point.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.config import CONFIG_PATH, ConfigError, RepoConfig, load_repo_config
from core.errors import ForksyncError
from core.github.records import Posted, PullRequestInfo
from core.github.roles import IngestGitHub
from core.render.ingest import (
    CHECK_NAME,
    BundleView,
    ChainView,
    IngestionFigures,
    UrgentView,
    bundle_body,
    bundle_title,
    chain_body,
    chain_now_pr_comment,
    chain_pr_body,
    chain_pr_title,
    chain_title,
    config_error_summary,
    fill_pull_marks,
    fill_pull_ref,
    fill_stack_ref,
    ingest_failure_summary,
    ingestion_summary,
    no_upstream_summary,
    urgent_body,
    urgent_title,
)
from core.settings import WorkerSettings
from workers.adapters.gitcache import GitCache, remote_git
from workers.adapters.state import StateStore
from workers.engine.git import GitError, Repository
from workers.jobs.ingest_plan import (
    Action,
    CloseIssue,
    ClosePull,
    Comment,
    DeleteBranches,
    EditPull,
    IngestFacts,
    Moved,
    OpenPull,
    PostCheck,
    PullFacts,
    PushRefs,
    RequestReview,
    UpsertIssue,
    Wanted,
    approvers,
    plan,
    running_l1,
)

log = logging.getLogger(__name__)

BOT_BRANCH_PREFIX = "forksync/"
BUNDLE_PREFIX = "forksync/bundle/"
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
    # Stacked bundles' branches gone because all their commits need a declined bundle: → its branch.
    emptied: tuple[tuple[str, str], ...] = ()
    # Bundle branches a re-cut left with no successor → where their commits are now.
    moved: tuple[tuple[str, Moved], ...] = ()


class Engine(Protocol):
    """(upstream cache, fork cache, upstream branch, fork branch, config) -> EngineOutput; ``declined``:
    ids of the bundles whose PR a maintainer closed unmerged (nothing stays stacked on them). The engine
    writes bundle/chain branches and notes into the fork cache; the executor pushes them."""

    def __call__(
        self,
        upstream: Repository,
        fork: Repository,
        upstream_branch: str,
        fork_branch: str,
        config: RepoConfig,
        *,
        declined: Collection[str] = (),
    ) -> EngineOutput: ...


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


@dataclass(frozen=True)
class Stop:
    """A run that ends before planning, with the check run that says why (bad config, no upstream,
    a failure the maintainer must act on)."""

    status: str  # IngestReport.status
    conclusion: str
    title: str
    summary: str


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
    with (
        env.state.lock(f"ingest:{repo}", ttl_s=settings.lock_ttl_s, wait_s=2.0),
        env.caches.open(f"fork:{repo}") as fork,
    ):
        trunk_head, config = fork_state(env, repo, fork, fork_url, token, max_commits)
        stop = config if isinstance(config, Stop) else None
        if isinstance(config, RepoConfig):
            try:
                report = _plan_and_apply(env, repo, config, fork, fork_url, token, trunk_head)
            except ForksyncError as exc:
                if retry_after_of(exc) is not None:
                    raise  # transient: the task retries from fresh state
                # A failure the maintainer must act on (upstream unreachable, unrelated histories, a
                # trailer the ledger cannot read...): say so on the fork, where they look.
                stop = Stop("error", "failure", *ingest_failure_summary(exc.problem, exc.one_line()))
                log.warning("ingest %s failed: %s", repo, exc.one_line())
        if stop is not None:
            report = IngestReport(repo, stop.status)
            posted = gh.check_run(
                repo,
                name=CHECK_NAME,
                head_sha=trunk_head,
                conclusion=stop.conclusion,
                title=stop.title,
                summary=stop.summary,
            )
            report.check = {"id": posted.number, "conclusion": stop.conclusion, "title": stop.title}
    report.seconds = time.monotonic() - started
    if stop is None or stop.status == "error":
        env.state.append(f"metrics:{repo}", {"t": round(time.time(), 3), **report.figures})
    if report.status == "ingested" and isinstance(config, RepoConfig):
        refresh_dashboard(env, repo, config)
    return report


def fork_state(
    env: IngestEnv, repo: str, fork: Repository, fork_url: str, token: str | None, max_commits: int | None
) -> tuple[str, RepoConfig | Stop]:
    """Step 1 of the loop: fetch the fork, read its config at the trunk; (trunk head, the config
    to plan by, or the :class:`Stop` that ends the run)."""
    trunk_default = default_branch(fork, fork_url, token)
    env.caches.fetch(fork, fork_url, fork_refspecs(trunk_default), token)
    trunk_head = fork.rev_parse(f"refs/heads/{trunk_default}")
    if trunk_head is None:
        raise ForksyncError(f"the fork {repo} has no branch {trunk_default}", "push a trunk branch first")
    try:
        config = read_config(fork, trunk_default)
    except ConfigError as exc:
        title, summary = config_error_summary(
            exc.one_line(), exc.source, exc.line, _config_line(fork, trunk_default, exc.line)
        )
        return trunk_head, Stop("config_error", "failure", title, summary)
    if config.fork.branch != trunk_default:
        env.caches.fetch(fork, fork_url, fork_refspecs(config.fork.branch), token)
        trunk_head = fork.rev_parse(f"refs/heads/{config.fork.branch}")
        if trunk_head is None:
            raise ForksyncError(
                f"the fork {repo} has no branch {config.fork.branch!r} (fork.branch in {CONFIG_PATH})",
                "create it or fix fork.branch",
            )
    if not config.upstream.url:
        return trunk_head, Stop("no_upstream", "action_required", *no_upstream_summary(CONFIG_PATH))
    if max_commits is not None:
        if max_commits < 1:
            raise ForksyncError(
                f"max_commits must be at least 1, not {max_commits}", "pass /bundle max=N with N >= 1"
            )
        config = dataclasses.replace(
            config, bundle=dataclasses.replace(config.bundle, max_commits=max_commits)
        )
    return trunk_head, config


def refresh_dashboard(env: IngestEnv, repo: str, config: RepoConfig) -> None:
    """Rebuild the fork's dashboard feed; a failure here is logged, never fails the ingest."""
    from core.dashboard.store import open_feed_store
    from workers.adapters.notify import notifier_for
    from workers.jobs.dashboard_feed import refresh

    try:
        refresh(
            env.settings,
            env.state,
            open_feed_store(env.settings.bot.database_url, env.settings.data_dir),
            repo,
            config,
            github=env.github,
            notifier=notifier_for(config.digest.notify_url, repo),
        )
    except Exception:
        log.exception("dashboard feed of %s not refreshed", repo)


def retry_after_of(exc: BaseException) -> float | None:
    from workers.app.celery_app import retry_after

    return retry_after(exc)


def _plan_and_apply(
    env: IngestEnv,
    repo: str,
    config: RepoConfig,
    fork: Repository,
    fork_url: str,
    token: str | None,
    trunk_head: str,
) -> IngestReport:
    """Steps 2-4 of the loop (module docstring), under the caller's repository lock: run the
    engine, read what GitHub has for the branches it built, plan (``ingest_plan.plan``), execute."""
    assert config.upstream.url is not None
    upstream_url = env.settings.map_url(config.upstream.url)
    heads_before = bot_branches(fork)
    chains_before = recorded_chain_ids(fork)
    found, declined, early = bundle_pulls(env.github, repo, heads_before, config.fork.branch)
    with env.caches.open(f"upstream:{config.upstream.url}") as upstream:
        branch = config.upstream.branch
        env.caches.fetch(upstream, upstream_url, [f"+refs/heads/{branch}:refs/heads/{branch}"])
        output = env.engine(
            upstream,
            fork,
            branch,
            config.fork.branch,
            config,
            declined=sorted("bundle-" + b.removeprefix(BUNDLE_PREFIX) for b in declined),
        )
    facts = gather(
        env.github,
        repo,
        config,
        fork,
        trunk_head,
        output,
        heads_before,
        chains_before - recorded_chain_ids(fork),
        found,
        declined,
        early,
    )
    report = IngestReport(repo, "ingested", figures=run_figures(output))
    execute(env.github, repo, fork, fork_url, token, plan(facts), report)
    from core.dashboard.store import open_feed_store

    feeds = open_feed_store(env.settings.bot.database_url, env.settings.data_dir)
    dash = feed_facts(repo, fork, output, report, env.github)
    feeds.put_facts(repo, landing_times(dash, feeds.facts(repo), time.time()))
    return report


def bundle_pulls(
    gh: IngestGitHub, repo: str, heads_before: dict[str, str], trunk: str
) -> tuple[dict[str, PullRequestInfo | None], dict[str, int], dict[str, tuple[int, str]]]:
    """Before planning: each bundle branch's open PR (kept for :func:`gather`), the bundle branches
    whose newest PR a maintainer closed unmerged (branch → that PR's number), and those whose newest
    PR was merged into another branch than the trunk: a stacked bundle merged before its base, into
    the base's branch (branch → (that PR's number, the branch it went into))."""
    found: dict[str, PullRequestInfo | None] = {}
    declined: dict[str, int] = {}
    early: dict[str, tuple[int, str]] = {}
    for branch in sorted(heads_before):
        if not branch.startswith(BUNDLE_PREFIX):
            continue
        found[branch] = gh.find_pull(repo, branch)
        if found[branch] is None:
            number = gh.closed_unmerged(repo, branch)
            if number is not None:
                declined[branch] = number
                continue
            merged = gh.merged_elsewhere(repo, branch, trunk)
            if merged is not None:
                early[branch] = merged
    return found, declined, early


def wanted_of(config: RepoConfig, fork: Repository, output: EngineOutput) -> tuple[Wanted, ...]:
    """What GitHub should show for the engine's output: a PR per urgent pick, bundle and chain
    with built commits (each on the trunk); an issue per conflicting urgent pick and per chain
    that built nothing (or every chain, with ``bundle.chain_prs: false``)."""
    web = output.upstream_web_url
    out: list[Wanted] = []

    def head_of(branch: str) -> str | None:
        return fork.rev_parse(f"refs/heads/{branch}")

    for u in output.urgent:
        if u.branch is not None:
            out.append(
                Wanted(
                    "urgent",
                    u.key,
                    urgent_title(u),
                    urgent_body(u, web),
                    1,
                    u.branch,
                    u.base_branch,
                    head_of(u.branch),
                )
            )
        else:
            out.append(Wanted("urgent", u.key, urgent_title(u), urgent_body(u, web), 1))
    for b in output.bundles:
        out.append(
            Wanted(
                "bundle",
                b.key,
                bundle_title(b),
                bundle_body(b, web),
                len(b.commits),
                b.branch,
                b.base_branch,
                head_of(b.branch),
                stacked_on=b.base_branch if b.stacked_on is not None else None,
                unstacked_from=b.unstacked_from,
                left_behind=len(b.left_behind),
            )
        )
    for c in output.chains:
        if config.bundle.chain_prs and c.branch is not None and c.carried:
            out.append(
                Wanted(
                    "chain",
                    c.key,
                    chain_pr_title(c),
                    chain_pr_body(c, web),
                    len(c.commits),
                    c.branch,
                    c.base_branch,
                    head_of(c.branch),
                    c.stopped_at,
                )
            )
        else:
            out.append(
                Wanted(
                    "chain",
                    c.key,
                    chain_title(c),
                    chain_body(c, web),
                    len(c.commits),
                    stopped_at=c.stopped_at,
                )
            )
    return tuple(out)


def gather(
    gh: IngestGitHub,
    repo: str,
    config: RepoConfig,
    fork: Repository,
    trunk_head: str,
    output: EngineOutput,
    heads_before: dict[str, str],
    chains_closed: set[str],
    found: dict[str, PullRequestInfo | None] | None = None,
    declined: dict[str, int] | None = None,
    merged_early: dict[str, tuple[int, str]] | None = None,
) -> IngestFacts:
    """The planner's facts: what to show, and the open PR of each branch (found by head, whatever
    its base; ``found``: those already read this run). Reviews and checks are read only for PRs
    whose branch this run moves."""
    wanted = wanted_of(config, fork, output)
    found = found or {}
    pulls: dict[str, PullFacts] = {}
    for w in wanted:
        if w.head is None:
            continue
        info = found[w.head] if w.head in found else gh.find_pull(repo, w.head)
        if info is None:
            continue
        before = heads_before.get(w.head)
        moved = before is not None and before != w.head_sha
        approved: tuple[str, ...] = ()
        running: tuple[str, ...] = ()
        if moved:
            approved = approvers(
                [(r.user, r.state, r.commit_id) for r in gh.pull_reviews(repo, info.number)], before
            )
            running = running_l1(
                [(c.name, c.status, c.head_sha) for c in gh.check_runs(repo, before or "")], before
            )
        pulls[w.head] = PullFacts(
            info.number, w.head, info.base_ref, info.html_url, info.title, info.body, approved, running
        )
    pushed = tuple(w.head for w in wanted if w.head)
    pushed += tuple(c.branch for c in output.chains if c.branch and c.branch not in pushed)
    title, summary = ingestion_summary(output.figures)
    return IngestFacts(
        repo,
        config.fork.branch,
        trunk_head,
        output.plan_id,
        wanted,
        pulls,
        {b: sha for b, sha in heads_before.items()},
        pushed,
        title,
        summary,
        tuple(sorted(chains_closed)),
        dict(declined or {}),
        dict(output.emptied),
        dict(merged_early or {}),
        dict(output.moved),
    )


def run_figures(output: EngineOutput) -> dict[str, Any]:
    """The run's figures (the task's JSON result and the metrics point)."""
    f = output.figures
    return {
        **output.dashboard.get("point", {}),
        "days_behind": f.days_behind,
        "backlog": f.backlog,
        "pending": f.pending,
        "picked": f.picked,
        "bundles": f.bundles,
        "chains": f.chains,
        "urgent": f.urgent,
        "plan_id": output.plan_id,
    }


def execute(
    gh: IngestGitHub,
    repo: str,
    fork: Repository,
    fork_url: str,
    token: str | None,
    actions: list[Action],
    report: IngestReport,
) -> None:
    """Apply the planner's actions in order, recording in ``report`` what was posted and closed."""
    opened: dict[str, str] = {}  # head → URL of the PR opened this run
    numbers: dict[str, int] = {}  # head → number of the PR opened this run (a stacked body names it)
    for action in actions:
        if isinstance(action, PushRefs):
            push_bot_refs(fork, fork_url, token, action.branches)
        elif isinstance(action, OpenPull):
            body = fill_stack_ref(action.body, numbers.get(action.stacked_on or ""))
            posted = gh.open_pull(repo, head=action.head, base=action.base, title=action.title, body=body)
            opened[action.head] = posted.url
            numbers[action.head] = posted.number
            report.pulls.append(_posted(posted, action.key, action.title, action.commits))
            log.info(
                "%s PR #%d opened: %d commits (%s)", action.kind, posted.number, action.commits, action.head
            )
        elif isinstance(action, EditPull):
            posted = Posted(action.number, action.url, False)
            new_body = action.new_body
            if new_body is not None:
                new_body = fill_stack_ref(new_body, numbers.get(action.stacked_on or ""))
            if action.new_title is not None or new_body is not None or action.base is not None:
                posted = gh.edit_pull(
                    repo, action.number, title=action.new_title, body=new_body, base=action.base
                )
            report.pulls.append(_posted(posted, action.key, action.title, action.commits))
            log.info(
                "%s PR #%d updated%s",
                action.kind,
                action.number,
                f", re-targeted to {action.base}" if action.base else "",
            )
        elif isinstance(action, Comment):
            gh.comment(repo, action.number, fill_pull_ref(action.body, numbers.get(action.pull_of or "")))
        elif isinstance(action, RequestReview):
            gh.request_review(repo, action.number, action.users)
        elif isinstance(action, UpsertIssue):
            posted = gh.upsert_issue(repo, marker=action.marker, title=action.title, body=action.body)
            report.issues.append(_posted(posted, action.key, action.title, action.commits))
        elif isinstance(action, ClosePull):
            comment = fill_pull_marks(
                action.comment, numbers
            )  # a superseded bundle names PRs opened this run
            number = gh.close_pull(repo, head=action.head, comment=comment)
            if number is not None:
                report.closed.append({"kind": "pull", "number": number, "branch": action.head})
        elif isinstance(action, DeleteBranches):
            remote_git(
                fork, token, "push", "--quiet", "--no-verify", "--delete", "--", fork_url, *action.branches
            )
        elif isinstance(action, CloseIssue):
            comment = action.comment
            if action.pull_of is not None:
                comment = chain_now_pr_comment(opened.get(action.pull_of, f"branch `{action.pull_of}`"))
            number = gh.close_issue(repo, marker=action.marker, comment=comment)
            if number is not None:
                report.closed.append({"kind": "issue", "number": number, "chain": action.chain})
        elif isinstance(action, PostCheck):
            posted = gh.check_run(
                repo,
                name=CHECK_NAME,
                head_sha=action.head_sha,
                conclusion="success",
                title=action.title,
                summary=action.summary,
            )
            report.check = {
                "id": posted.number,
                "conclusion": "success",
                "title": action.title,
                "head_sha": action.head_sha,
            }


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


def feed_facts(
    repo: str, fork: Repository, output: EngineOutput, report: IngestReport, gh: IngestGitHub
) -> dict[str, Any]:
    """What this run knows for the dashboard: the engine's ledger facts and what is in flight."""
    posted = {item["key"]: item for item in [*report.pulls, *report.issues]}
    as_pull = {item["key"] for item in report.pulls}  # a built chain is a PR too (bundle.chain_prs)
    items: list[dict[str, Any]] = []

    def add(kind: str, key: str, size: int, branch: str | None, conflicts: tuple[str, ...]) -> None:
        item = posted.get(key, {})
        items.append(
            {
                "kind": kind,
                "key": key,
                "title": item.get("title", key),
                "number": item.get("number"),
                "url": item.get("url"),
                "size": size,
                "conflicts": list(conflicts),
                "commits": output.dashboard.get("commits", {}).get(key, []),
                "pull": branch is not None and (kind != "chain" or key in as_pull),
                "head_sha": fork.rev_parse(f"refs/heads/{branch}") if branch else None,
            }
        )

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


def bot_branches(fork: Repository) -> dict[str, str]:
    """The bundle, chain and urgent branches the fork has now (names without ``refs/heads/``) → heads."""
    out = fork.text(
        "for-each-ref",
        "--format=%(refname:lstrip=2) %(objectname)",
        "refs/heads/forksync/bundle/",
        "refs/heads/forksync/chain/",
        "refs/heads/forksync/urgent/",
    )
    return dict(line.split(" ", 1) for line in out.splitlines() if line)


def recorded_chain_ids(fork: Repository) -> set[str]:
    """Ids of the open chains recorded in the fork (``refs/forksync/chains``)."""
    from workers.engine.chains import CHAINS_FILE, CHAINS_REF, decode

    blob = f"{CHAINS_REF}:{CHAINS_FILE}"
    if not fork.ok("cat-file", "-e", blob):
        return set()
    return {record.id for record in decode(fork.git("cat-file", "-p", blob), f"{CHAINS_REF} in the fork")}


def push_bot_refs(fork: Repository, fork_url: str, token: str | None, branches: Sequence[str]) -> None:
    """Push the bundle and chain branches (force: they are rebuilt), then the decision notes and
    the chain record (fast-forward only: a concurrent writer makes us retry, never lose work)."""
    specs = []
    for branch in branches:
        if not branch.startswith(BOT_BRANCH_PREFIX):
            raise ForksyncError(
                f"refusing to push {branch}: not a forksync/ branch", "this is a bug; report it"
            )
        if fork.rev_parse(f"refs/heads/{branch}") is None:
            raise ForksyncError(
                f"the engine did not write {branch} into the fork cache", "this is a bug; report it"
            )
        specs.append(f"+refs/heads/{branch}:refs/heads/{branch}")
    if specs:
        remote_git(fork, token, "push", "--quiet", "--no-verify", "--", fork_url, *specs)
    notes = fork.text("for-each-ref", "--format=%(refname)", "refs/notes/", "refs/forksync/")
    if notes:
        try:
            remote_git(
                fork,
                token,
                "push",
                "--quiet",
                "--no-verify",
                "--",
                fork_url,
                *[f"{ref}:{ref}" for ref in notes.splitlines()],
            )
        except GitError as exc:
            # Someone recorded a decision meanwhile: our notes are stale. Rerun from fresh state
            # (retryable: the task runs again after a short backoff and re-reads everything).
            from core.github.errors import RetryableGitHubError

            raise RetryableGitHubError(
                f"the fork's decision notes or chain record moved during ingestion ({exc.problem})", 0.0
            ) from None


def _posted(posted: Posted, key: str, title: str, commits: int) -> dict[str, Any]:
    return {
        "number": posted.number,
        "url": posted.url,
        "created": posted.created,
        "key": key,
        "title": title,
        "commits": commits,
    }
