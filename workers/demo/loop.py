"""``forksync demo``, second part: the ingestion loop on the sample pair, through the embedded worker.

What is real: git (bare remotes on disk), the engine (ledger, plan, bundle and chain builds, the
conflict-resolution pipeline), the webhook view (``bot.create_app``, signature and dedup), Celery
(the embedded SQLite broker and a real worker, in a thread of this process), the comment command
handler (``/approve``, ``/skip``), the L1 job (the sample fork's CPU suite, ``python3
ci/unit_tests.py``, run in a clean checkout, its JUnit XML read) and the L2 job (the fork's
benchmark on the trunk, recorded and judged). What is simulated: GitHub — a recorder
(``DemoGitHub``) stands in for the API and prints the PRs, issues, check runs and replies forksync
would post; pushes go to a bare copy of the fork on disk. No network, no Redis, no credentials.

The story: ingest (one bundle, three chain PRs, one of them carrying a conflict the pipeline
resolved), L1 on the bundle PR, merge the bundle, the nightly L2 on the new trunk, land the chains
out of order (the resolved one after the maintainer's ``/approve``), then the maintainer decides
the one deferred commit (``/skip``): the backlog ends at 0.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
import uuid
from pathlib import Path
from typing import Any

from core.github.ingest import DryGitHub
from core.github.records import cut
from core.render import commands as render_commands
from core.settings import WorkerSettings
from workers.demo.github import DemoApp, DemoGitHub
from workers.engine.git import Repository, run_git

FORK_REPO = "example-org/triton"
MAINTAINER = (
    "maintainer"  # the demo's maintainer (write access): their comments go through the real command path
)
# The deferred commit's fate: the layouts owner decides the fork does not need it (see _clear_deferred).
DEFERRED_PR = 7005
DEFERRED_VERDICT = "superseded by the fork MMAv3 layout interface, says the layouts owner"
L2_BENCHMARK = "compile-python"  # the sample fork's benchmark (workers/demo/sample.py)
SECRET = "demo-secret"  # the demo's own webhook secret: the deliveries below are signed with it


class _AppSender:
    """The webhook view's task sender, over the demo's Celery app."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def send(self, name: str, kwargs: Any) -> None:
        self.app.send_task(name, kwargs=dict(kwargs))

    def describe(self) -> str:
        return "celery (embedded broker, demo)"


def _post(client: Any, event: str, payload: dict[str, Any]) -> str:
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    answer = client.post(
        "/webhook",
        data=body,
        headers={
            "Content-Type": "application/json",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": signature,
        },
    )
    return f"{answer.status_code} {answer.get_data(as_text=True).strip()}"


def _wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the demo's worker did not finish {what} within {timeout:.0f} s")
        time.sleep(0.05)


def _push_payload(head: str) -> dict[str, Any]:
    repo = {"full_name": FORK_REPO, "name": "triton", "owner": {"login": "example-org"}}
    return {
        "ref": "refs/heads/main",
        "before": head,
        "after": head,
        "created": False,
        "deleted": False,
        "forced": False,
        "repository": repo,
        "installation": {"id": 1},
        "sender": {"login": "maintainer", "type": "User"},
    }


def _merged_payload(number: int, branch: str, head: str, action: str = "closed") -> dict[str, Any]:
    """A pull_request event on the bot's PR #number: merged (``closed``), or ``opened``."""
    repo = {"full_name": FORK_REPO, "name": "triton", "owner": {"login": "example-org"}}
    side = {"ref": branch, "sha": head, "repo": repo, "label": f"example-org:{branch}"}
    pr = {
        "number": number,
        "state": "closed" if action == "closed" else "open",
        "merged": action == "closed",
        "draft": False,
        "head": side,
        "base": {"ref": "main", "sha": head, "repo": repo, "label": "example-org:main"},
        "user": {"login": "forksync[bot]", "type": "Bot"},
        "author_association": "NONE",
        "title": "",
        "body": "",
    }
    return {
        "action": action,
        "number": number,
        "pull_request": pr,
        "repository": repo,
        "installation": {"id": 1},
        "sender": {"login": "maintainer", "type": "User"},
    }


def _comment_payload(number: int, comment_id: int, body: str, *, on_pull: bool) -> dict[str, Any]:
    repo = {"full_name": FORK_REPO, "name": "triton", "owner": {"login": "example-org"}}
    issue: dict[str, Any] = {
        "number": number,
        "title": "",
        "state": "open",
        "user": {"login": "forksync[bot]", "type": "Bot"},
    }
    if on_pull:
        issue["pull_request"] = {"url": f"dry://{FORK_REPO}/pulls/{number}"}
    user = {"login": MAINTAINER, "type": "User"}
    return {
        "action": "created",
        "issue": issue,
        "repository": repo,
        "installation": {"id": 1},
        "sender": user,
        "comment": {"id": comment_id, "body": body, "user": user, "author_association": "MEMBER"},
    }


def _plain(markdown: str) -> list[str]:
    """A bot comment's lines as a terminal shows them: no hidden markers, no Markdown emphasis or code marks."""
    text = re.sub(r"<!--.*?-->", "", markdown, flags=re.S)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [text](url) -> text
    text = text.replace("**", "").replace("`", "")
    return [line.strip() for line in text.splitlines() if line.strip()]


def _command(gh: DemoGitHub, client: Any, number: int, body: str, *, on_pull: bool) -> list[str]:
    """The maintainer comments ``body`` on #number; the webhook runs it through the command handler
    (``workers.tasks.commands``) in the demo's worker; returns forksync's reply, as plain lines."""
    comment = gh.say(FORK_REPO, number, MAINTAINER, body)
    answer = _post(client, "issue_comment", _comment_payload(number, comment.id, body, on_pull=on_pull))
    print(f"  @{MAINTAINER} comments '{body}' on #{number} -> webhook {answer}")
    marker = render_commands.reply_marker(comment.id)
    _wait(lambda: gh.find_comment(FORK_REPO, number, marker) is not None, 60, f"the reply to '{body}'")
    reply = gh.find_comment(FORK_REPO, number, marker)
    assert reply is not None
    return [line for line in _plain(reply.body) if line != f"@{MAINTAINER}"]


def run_loop_demo(
    root: Path, upstream: Path, fork: Path, upstream_url: str, *, kept: bool = True, serving: bool = False
) -> int:
    """Run the loop once on the sample (and once more after merging the first bundle); print it all."""
    from celery.contrib.testing.worker import start_worker

    from bot import create_app
    from workers.app import handlers, runtime
    from workers.app.celery_app import create_celery

    print("\n== the ingestion loop (embedded default: no Redis, no GitHub, no network) ==")
    print(
        "real: git, the engine, the webhook view, Celery (SQLite broker + a worker thread), the comment commands"
    )
    print("simulated: GitHub (a dry recorder prints what would be posted; pushes go to a bare copy on disk)")
    print(
        "real tests: L1 runs the fork's CPU suite on a PR, L2 its benchmark on the trunk (python3, this machine)"
    )
    print(
        f"the maintainer: @{MAINTAINER}, whose comments go through the real command path (webhook -> worker -> handler)\n"
    )
    remote = root / "github" / f"{FORK_REPO}.git"
    remote.parent.mkdir(parents=True, exist_ok=True)
    run_git(root, ["clone", "--quiet", "--mirror", "--no-local", "--", str(fork), str(remote)])
    data = root / "data"
    settings = WorkerSettings.from_mapping(
        {"FORKSYNC_DATA_DIR": str(data), "FORKSYNC_GIT_URL_MAP": json.dumps({upstream_url: str(upstream)})}
    )
    gh = DemoGitHub(remotes={FORK_REPO: str(remote)}, permissions={MAINTAINER: "maintain"})
    demo_app = DemoApp(gh, str(root / "github") + "/{repo}.git")
    runtime.use(github=lambda _settings, _installation: gh, app=lambda _settings: demo_app)
    app = create_celery(settings)
    web = create_app(
        {"FORKSYNC_WEBHOOK_SECRET": SECRET, "FORKSYNC_DATA_DIR": str(data)}, sender=_AppSender(app)
    )
    client = web.test_client()
    fork_git = Repository(remote)
    try:
        # The ingestion, command and L1 handlers (the others need what the demo leaves out: a
        # resolution agent, L3 workloads).
        with (
            handlers.only_from("workers.tasks.ingest", "workers.tasks.commands", "workers.tasks.l1"),
            start_worker(app, perform_ping_check=False, loglevel="WARNING", shutdown_timeout=30),
        ):
            started = time.monotonic()
            head = fork_git.rev_parse("refs/heads/main") or ""
            print(f"webhook push to {FORK_REPO}:main -> {_post(client, 'push', _push_payload(head))}")
            _wait(lambda: gh.checks, 60, "the first ingestion")
            print(f"ingested in {time.monotonic() - started:.1f} s (webhook -> worker -> engine -> GitHub)\n")
            _print_results(gh)
            first = next(iter(gh.pulls.values()), None)
            if first is not None:
                branch, number = str(first["head"]), int(str(first["number"]))
                bundle_head = fork_git.rev_parse(f"refs/heads/{branch}") or ""
                _l1_on_pull(gh, client, number, branch, bundle_head)
                fork_git.git("update-ref", "refs/heads/main", bundle_head)  # "merge" the first bundle PR
                print(
                    f"\nmerging bundle PR #{number} ({branch}) into main, then webhook pull_request closed+merged -> "
                    f"{_post(client, 'pull_request', _merged_payload(number, branch, bundle_head))}"
                )
                _wait(lambda: len(gh.checks) >= 2, 60, "the ingestion after the merge")
                before, after = gh.checks[0]["title"], gh.checks[-1]["title"]
                print(f"ledger moved: check was '{before}'\n              now       '{after}'")
                _why_backlog(upstream, remote, gh)
                _l2_on_trunk(app, settings, fork_git)
                _land_out_of_order(gh, fork_git, client)
                _clear_deferred(gh, client, upstream, remote)
    finally:
        runtime.use()
    where = (
        f"kept under {root}: the sample pair, the fork's bare copy (github/), worker data (data/: SQLite "
        "broker, git caches) and pair caches (cache/); run again with the same --dir to start over"
        if kept
        else "all in a temp folder, removed now that the demo ends (keep them with --dir DIR)"
    )
    print(f"\nfiles: {where}")
    print(f"\ndashboard of the demo's data: {dashboard_url(DASHBOARD_PORT)}")
    print(
        "  served there now, until Ctrl-C"
        if serving
        else "  (not served by this run: forksync demo --serve serves it there until Ctrl-C)"
    )
    return 0


def _l1_on_pull(gh: DemoGitHub, client: Any, number: int, branch: str, head: str) -> None:
    """GitHub tells forksync the bundle PR was opened; the L1 handler sends ``forksync.run_l1``,
    and the worker runs the suites the trunk's config names on the PR's head (a real process in a
    clean checkout), then concludes ``forksync / L1``. Prints the check and what it means."""
    from core.render.l1 import L1_CHECK

    print(
        f"\nL1 on bundle PR #{number}: webhook pull_request opened -> "
        f"{_post(client, 'pull_request', _merged_payload(number, branch, head, action='opened'))}"
    )

    def concluded() -> Any:
        return next(
            (
                r
                for r in gh.runs.values()
                if r.name == L1_CHECK and r.head_sha == head and r.status == "completed"
            ),
            None,
        )

    _wait(concluded, 60, f"L1 on PR #{number}")
    check = concluded()
    print(
        f"  the worker ran the suite the trunk's config names (unit: python3 ci/unit_tests.py) on the PR's"
        f" head {head[:10]}, in a clean checkout, and read its JUnit XML"
    )
    print(f"  check run '{check.name}' on {head[:10]}: {check.conclusion}: {_plain(check.title or '')[0]}")
    verdict = {
        "success": "every test passed and none is missing: the bundle may land",
        "failure": "a test failed that passes on the trunk: the bundle would be split (docs/l1.md)",
    }.get(str(check.conclusion), "see the check's summary")
    print(f"  in words: {verdict}")


def _l2_on_trunk(app: Any, settings: WorkerSettings, fork_git: Repository) -> None:
    """The nightly L2 (beat sends ``forksync.run_l2``; here the demo sends it after the landing):
    the worker runs the fork's benchmark on the trunk's tip, records it in the store and judges
    it against the earlier runs. Prints the recorded run in words."""
    from core import tasknames
    from workers.testing.results import ResultStore

    tip = fork_git.rev_parse("refs/heads/main") or ""
    results = ResultStore(settings.store())
    print(f"\nL2 on the trunk after the landing ({tip[:10]}): the nightly task, sent as beat sends it")
    app.send_task(tasknames.RUN_L2, kwargs={"installation_id": 1, "repo": FORK_REPO})

    def recorded() -> Any:
        return next((r for r in results.history(FORK_REPO, L2_BENCHMARK) if r.sha == tip), None)

    _wait(recorded, 60, "the L2 run on the trunk")
    run = recorded()
    shown = ", ".join(f"{k}={v:g}" for k, v in sorted(run.metrics.items())) or "no metrics"
    print(f"  benchmark {run.benchmark} (python3 ci/bench_compile.py) on {tip[:10]}: {run.status}, {shown}")
    print(f"  recorded in the store, verdict: {run.verdict or 'none'}")
    print("  in words: the first run starts the trunk's baseline; a later run whose metric falls past its")
    print("  threshold opens a tracking issue and is bisected to its culprit (docs/trunk-tests.md)")


def _land_out_of_order(gh: DemoGitHub, fork_git: Repository, client: Any) -> None:
    """Land the chain PRs newest first (out of upstream order, as each is built on the trunk and
    lands on its own); after each, the next ingest rebuilds the others onto the new trunk in their
    same PRs. A chain carrying a resolved conflict lands only once the maintainer's ``/approve`` is
    recorded at its current head (what an automatic merger consults). Prints what moved."""
    from workers.commands.resolution import resolution_approved

    chains = [
        p
        for p in gh.pulls.values()
        if str(p["head"]).startswith("forksync/chain/") and p.get("state") == "open"
    ]
    if not chains:
        return
    print(
        "\nlanding the chain PRs out of order (newest first): each is built on the trunk and lands on its own"
    )
    for pull in reversed(chains):
        if pull.get("state") != "open":
            continue
        branch, number = str(pull["head"]), int(str(pull["number"]))
        others = {
            str(p["head"]): fork_git.rev_parse(f"refs/heads/{p['head']}")
            for p in chains
            if p is not pull and p.get("state") == "open"
        }
        head = fork_git.rev_parse(f"refs/heads/{branch}") or ""
        if _resolutions(str(pull["body"])):
            print(
                f"  chain PR #{number} carries a resolved conflict: approved at its head {head[:10]}? "
                f"{'yes' if resolution_approved(gh, FORK_REPO, number, head) else 'no, so it waits for a maintainer'}"
            )
            for line in _command(gh, client, number, "/approve", on_pull=True):
                print(f"    forksync: {cut(line, 150)}")
            if not resolution_approved(gh, FORK_REPO, number, head):
                print(f"    no approval recorded at {head[:10]}: chain PR #{number} stays open")
                continue
            print(
                f"    approval recorded at head {head[:10]} (a later push would need a new /approve): merging"
            )
        fork_git.git("update-ref", "refs/heads/main", head)
        seen = len(gh.checks)
        answer = _post(client, "pull_request", _merged_payload(number, branch, head))
        pull.update(state="closed", merged=True)  # what GitHub shows once merged (the recorder keeps the PR)
        _wait(lambda seen=seen: len(gh.checks) > seen, 60, "the ingestion after the chain merge")
        print(f"  merged chain PR #{number} ({cut(str(pull['title']), 70)}) -> {answer}")
        for other, old in others.items():
            new = fork_git.rev_parse(f"refs/heads/{other}")
            same = next((p for p in chains if str(p["head"]) == other), {})
            if new and new != old:
                print(
                    f"    #{same.get('number')} {other} rebuilt onto the new trunk in the same PR "
                    f"({str(old)[:10]} -> {new[:10]}, base {same.get('base')})"
                )
        print(f"    check: {gh.checks[-1]['title']}")


DASHBOARD_PORT = 8000


def dashboard_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/{FORK_REPO}"


def serve_dashboard(data: Path, port: int = DASHBOARD_PORT) -> None:
    """Serve the dashboard (the embedded default's web app) over the demo's data until Ctrl-C."""
    from werkzeug.serving import make_server

    from bot import create_app

    server = make_server(
        "127.0.0.1",
        port,
        create_app({"FORKSYNC_WEBHOOK_SECRET": SECRET, "FORKSYNC_DATA_DIR": str(data)}),
        threaded=True,
    )
    print(f"serving the dashboard on {dashboard_url(server.server_port)} (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


_SHA_CELL = re.compile(r"\[`(?P<sha>[0-9a-f]{7,40})`\]")


def _commit_rows(body: str) -> list[tuple[str, str]]:
    """(sha, subject) of each commit row of a bundle PR's or chain issue's Markdown table
    (columns: #, commit, upstream PR, author, subject, ...; see core/render/ingest.py)."""
    rows = []
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        found = _SHA_CELL.search(line)
        if line.startswith("| ") and found and len(cells) >= 3:
            sha_at = next(i for i, c in enumerate(cells) if _SHA_CELL.search(c))
            rows.append(
                (found["sha"], cells[sha_at + 3].replace("\\|", "|") if sha_at + 3 < len(cells) else "")
            )
    return rows


def _print_results(gh: DryGitHub) -> None:
    for kind, prefix in (
        ("bundle", "forksync/bundle/"),
        ("urgent", "forksync/urgent/"),
        ("chain", "forksync/chain/"),
    ):
        pulls = [
            p for p in gh.pulls.values() if str(p["head"]).startswith(prefix) and p.get("state") == "open"
        ]
        if kind == "urgent" and not pulls:
            continue
        print(f"{kind} PRs ({len(pulls)}), each on the trunk, landable on its own:")
        for pull in pulls:
            _print_pull(pull)
    _print_issues(gh)


def _print_pull(pull: dict[str, object]) -> None:
    rows = _commit_rows(str(pull["body"]))
    first = f"{rows[0][0][:10]} {cut(rows[0][1], 80)}" if rows else "-"
    print(f"  #{pull['number']} {cut(str(pull['title']), 100)}")
    print(f"      {pull['head']} -> {pull['base']}, {len(rows)} commits; first: {first}")
    for entry in _resolutions(str(pull["body"])):
        print("      a conflict, resolved behind the rails (its PR's Conflict Resolution entry):")
        for key, value in entry:
            print(f"        {key + ':':<12} {cut(value, 96)}")


_ENTRY_LINE = re.compile(r"^\s*(?:- )?(?P<key>File|Action|Reason|Resolved by):\s*(?P<value>.*)$")


def _resolutions(body: str) -> list[list[tuple[str, str]]]:
    """The File / Action / Reason / Resolved by entries of a PR's ``Conflict Resolution:`` sections
    (core/render/resolution.py), as plain text (no code marks)."""
    entries: list[list[tuple[str, str]]] = []
    inside = False
    for line in body.splitlines():
        if line.strip().rstrip(":") == "Conflict Resolution":
            inside = True
            continue
        found = _ENTRY_LINE.match(line) if inside else None
        if found is None:
            inside = inside and (not line.strip() or line.startswith((" ", "-")))
            continue
        if found["key"] == "File":
            entries.append([])
        if entries:
            entries[-1].append((found["key"], found["value"].replace("`", "").replace("\u200b", "")))
    return entries


def _print_issues(gh: DryGitHub) -> None:
    issues = [i for i in gh.issues.values() if i.get("state") == "open"]
    print(f"risky-chain tracking issues ({len(issues)}): chains that built no commit yet")
    for issue in issues:
        body = str(issue["body"])
        reasons = [
            line.rsplit("|", 2)[-2].strip()
            for line in body.splitlines()
            if line.startswith("| ") and not line.startswith("| #")
        ]
        print(f"  #{issue['number']} {cut(str(issue['title']), 100)}")
        print(f"      why: {cut('; '.join(reasons), 140)}")


def _backlog(upstream: Path, remote: Path) -> list[Any]:
    """The ledger's backlog entries (holes behind the frontier), read from the fork's bare copy."""
    from workers.engine.ledger.cache import load_ledger
    from workers.engine.pair import open_configured

    pair, config = open_configured(str(upstream), str(remote))
    return list(load_ledger(pair, config.ledger, upstream_url=config.upstream.url).backlog_commits)


def _clear_deferred(gh: DemoGitHub, client: Any, upstream: Path, remote: Path) -> None:
    """What is left in the backlog once every PR landed is the commit a maintainer deferred (#7005,
    "needs the layouts owner"): forksync keeps a deferred commit out of every bundle and chain
    until a maintainer decides. Here the layouts owner decides it is not needed (``/skip``, through
    the real command path); the next ingestion's check shows the backlog at 0."""
    left = _backlog(upstream, remote)
    if not left:
        return
    print(f"\nwhat is left: {len(left)} commit(s) in the backlog, held back on purpose:")
    for entry in left:
        print(
            f"    {entry.sha[:10]}  {cut(entry.subject, 56):<56}  {entry.disposition.value}: {cut(entry.reason, 60)}"
        )
    deferred = [e for e in left if e.disposition.value == "deferred"]
    if len(deferred) != len(left):
        print("  (not only deferred commits: the demo leaves them; forksync status says why each waits)")
        return
    print("  forksync never bundles a deferred commit; a maintainer decides. The layouts owner does:")
    target = next((p for p in gh.pulls.values() if str(p["head"]).startswith("forksync/bundle/")), None)
    number = int(str(target["number"])) if target else 1
    for sha in (e.sha for e in deferred):
        ref = (
            f"#{DEFERRED_PR}"
            if any(e.sha == sha and e.subject.endswith(f"(#{DEFERRED_PR})") for e in deferred)
            else sha[:12]
        )
        for line in _command(gh, client, number, f"/skip {ref} {DEFERRED_VERDICT}", on_pull=True):
            print(f"    forksync: {cut(line, 150)}")
    seen = len(gh.checks)
    head = Repository(remote).rev_parse("refs/heads/main") or ""
    print(
        f"  the next ingestion (a push, or the beat's poll; here a push webhook) -> "
        f"{_post(client, 'push', _push_payload(head))}"
    )
    _wait(lambda: len(gh.checks) > seen, 60, "the ingestion after the decision")
    print(f"    check: {gh.checks[-1]['title']}")
    if not _backlog(upstream, remote):
        print(
            "  backlog 0: every upstream commit is picked, or decided (won't port, with the reason in the notes)"
        )


def _why_backlog(upstream: Path, remote: Path, gh: DryGitHub) -> None:
    """Say why the backlog can grow when a bundle lands: the frontier jumped over the commits that
    wait in risky chains, and the ledger counts those holes until their own PRs land."""
    from workers.engine.ledger.cache import load_ledger
    from workers.engine.pair import open_configured

    pair, config = open_configured(str(upstream), str(remote))
    ledger = load_ledger(pair, config.ledger, upstream_url=config.upstream.url)
    backlog = ledger.metrics.backlog_commits
    if not backlog:
        return
    entries = {e.sha: e for e in ledger.entries}
    where = {
        sha: f"chain issue #{issue['number']}"
        for issue in gh.issues.values()
        if issue.get("state") == "open"
        for sha, _ in _commit_rows(str(issue["body"]))
    }
    where.update(
        {
            sha: f"chain PR #{pull['number']}"
            for pull in gh.pulls.values()
            if str(pull["head"]).startswith("forksync/chain/") and pull.get("state") == "open"
            for sha, _ in _commit_rows(str(pull["body"]))
        }
    )
    print(
        f"why the backlog is {len(backlog)}: the bundle moved the frontier past commits it left for risky chains;"
    )
    print(
        "  they are holes behind the frontier (backlog) until their chain PRs land; a deferred one waits for a"
    )
    print("  maintainer's decision (the end of the demo):")
    for sha in backlog:
        entry = entries.get(sha)
        chain = next((name for prefix, name in where.items() if sha.startswith(prefix)), None)
        why = chain or (f"{entry.disposition.value}: {cut(entry.reason, 60)}" if entry else "not placed yet")
        print(f"    {sha[:10]}  {cut(entry.subject if entry else '', 56):<56}  {why}")
    check = gh.checks[-1]
    print(
        f"check run '{check['name']}' on {str(check['head_sha'])[:10]}: {check['conclusion']}: {check['title']}"
    )
    for key, value in _table(str(check["summary"])):
        print(f"      {key + ':':<24} {value}")


def _table(markdown: str) -> list[tuple[str, str]]:
    """The (name, value) rows of a two-column Markdown table (the check run's figures), as plain text."""
    rows = []
    for line in markdown.splitlines():
        cells = [c.strip().replace("`", "") for c in line.strip().strip("|").split("|")]
        if line.lstrip().startswith("|") and len(cells) == 2 and not set(cells[1]) <= {"-", ":", " "}:
            rows.append((cells[0], cells[1]))
    return rows[1:] if rows and rows[0][1].lower() in ("value", "") else rows
