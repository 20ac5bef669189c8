"""The ingestion loop's GitHub (:class:`core.github.roles.IngestGitHub`): live over the adapter, or dry.

:class:`LiveGitHub` is the production view for one installation, over the PyGithub adapter
(the App comes from ``workers.app.runtime.app_for``, built once per process; the token is minted
inside the task, never carried through the queue). :class:`DryGitHub` records what would be done, for
``forksync demo`` and executor tests. Keeping the loop's needs this small is what lets both
stand in for GitHub.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.github.records import CheckOutput, CheckRunInfo, Posted, PullRequestInfo, ReviewInfo
from core.github.roles import GitHubPort, InstalledApp


class LiveGitHub:
    """:class:`IngestGitHub` over :class:`GitHubPort` (PyGithub) for one installation."""

    def __init__(self, app: InstalledApp, installation_id: int) -> None:
        self.app = app
        self.installation_id = installation_id
        self.adapter: GitHubPort = app.adapter(installation_id)

    def clone_url(self, repo: str) -> str:
        return self.app.push_url_template.format(repo=repo)

    def git_token(self) -> str | None:
        return self.app.installation_token(self.installation_id)

    def find_pull(self, repo: str, head: str) -> PullRequestInfo | None:
        return self.adapter.find_pull_request(repo, head)

    def closed_unmerged(self, repo: str, head: str) -> int | None:
        pulls = self.adapter.pull_requests_from(repo, head)
        newest = pulls[0] if pulls else None
        if newest is None or newest.state != "closed" or newest.merged:
            return None
        # A listing says "merged" by merged_at only: read the PR itself before calling it declined.
        if self.adapter.get_pull_request(repo, newest.number).merged:
            return None
        return newest.number

    def merged_elsewhere(self, repo: str, head: str, trunk: str) -> tuple[int, str] | None:
        pulls = self.adapter.pull_requests_from(repo, head)
        newest = pulls[0] if pulls else None
        if newest is None or newest.state != "closed" or newest.base_ref == trunk:
            return None
        if not self.adapter.get_pull_request(repo, newest.number).merged:  # a listing may not say
            return None
        return newest.number, newest.base_ref

    def open_pull(self, repo: str, *, head: str, base: str, title: str, body: str) -> Posted:
        info, created = self.adapter.ensure_pull_request(repo, head=head, base=base, title=title, body=body)
        return Posted(info.number, info.html_url, created)

    def edit_pull(
        self,
        repo: str,
        number: int,
        *,
        title: str | None = None,
        body: str | None = None,
        base: str | None = None,
    ) -> Posted:
        info = self.adapter.edit_pull_request(repo, number, title=title, body=body, base=base)
        return Posted(info.number, info.html_url, False)

    def pull_reviews(self, repo: str, number: int) -> Sequence[ReviewInfo]:
        return self.adapter.list_reviews(repo, number)

    def check_runs(self, repo: str, sha: str) -> Sequence[CheckRunInfo]:
        return self.adapter.list_check_runs(repo, sha)

    def comment(self, repo: str, number: int, body: str) -> None:
        self.adapter.create_comment(repo, number, body)

    def request_review(self, repo: str, number: int, users: Sequence[str]) -> None:
        if users:
            self.adapter.request_reviewers(repo, number, users=users)

    def upsert_issue(self, repo: str, *, marker: str, title: str, body: str) -> Posted:
        info, created = self.adapter.ensure_issue(repo, marker=marker, title=title, body=body)
        return Posted(info.number, info.html_url, created)

    def check_run(
        self,
        repo: str,
        *,
        name: str,
        head_sha: str,
        conclusion: str,
        title: str,
        summary: str,
        text: str | None = None,
    ) -> Posted:
        info = self.adapter.create_check_run(
            repo,
            name=name,
            head_sha=head_sha,
            conclusion=conclusion,
            output=CheckOutput(title, summary, text),
        )
        return Posted(info.id, info.html_url, True)

    def close_pull(self, repo: str, *, head: str, comment: str) -> int | None:
        info = self.adapter.find_pull_request(repo, head)
        if info is None:
            return None
        self.adapter.close_pull_request(repo, info.number, comment=comment)
        return info.number

    def close_issue(self, repo: str, *, marker: str, comment: str) -> int | None:
        info = self.adapter.find_issue(repo, marker)
        if info is None or info.state != "open":
            return None
        self.adapter.close_issue(repo, info.number, comment=comment)
        return info.number


@dataclass
class DryGitHub:
    """Records PRs, issues and check runs in memory (upserts by head branch / marker, like GitHub)."""

    remotes: dict[str, str] = field(default_factory=dict)  # repo -> local git URL
    private: set[str] = field(default_factory=set)  # repos to report as private (the dashboard's login wall)
    pulls: dict[tuple[str, str], dict[str, object]] = field(default_factory=dict)
    issues: dict[tuple[str, str], dict[str, object]] = field(default_factory=dict)
    checks: list[dict[str, object]] = field(default_factory=list)
    comments: list[dict[str, object]] = field(default_factory=list)  # {"number", "body"}
    reviews: dict[int, list[ReviewInfo]] = field(default_factory=dict)  # set by tests: reviews per PR
    running: dict[str, list[CheckRunInfo]] = field(default_factory=dict)  # set by tests: check runs per sha
    review_requests: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)
    _numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def clone_url(self, repo: str) -> str:
        return self.remotes[repo]

    def git_token(self) -> str | None:
        return None

    def is_private(self, repo: str) -> bool:
        return repo in self.private

    def _post(
        self, table: dict[tuple[str, str], dict[str, object]], repo: str, key: str, **fields: object
    ) -> Posted:
        existing = table.get((repo, key))
        if existing is not None:
            existing.update(fields, state="open")
            number = int(str(existing["number"]))
            return Posted(number, f"dry://{repo}/{number}", created=False)
        number = next(self._numbers)
        table[(repo, key)] = {"number": number, "state": "open", **fields}
        return Posted(number, f"dry://{repo}/{number}", created=True)

    def find_pull(self, repo: str, head: str) -> PullRequestInfo | None:
        entry = self.pulls.get((repo, head))
        if entry is None or entry.get("state") != "open":
            return None
        number = int(str(entry["number"]))
        return PullRequestInfo(
            number,
            str(entry["title"]),
            str(entry["body"]),
            "open",
            "",
            head,
            repo,
            str(entry["base"]),
            False,
            False,
            "forksync[bot]",
            "NONE",
            f"dry://{repo}/{number}",
        )

    def open_pull(self, repo: str, *, head: str, base: str, title: str, body: str) -> Posted:
        return self._post(self.pulls, repo, head, head=head, base=base, title=title, body=body, draft=False)

    def edit_pull(
        self,
        repo: str,
        number: int,
        *,
        title: str | None = None,
        body: str | None = None,
        base: str | None = None,
    ) -> Posted:
        entry = next(v for (r, _), v in self.pulls.items() if r == repo and v["number"] == number)
        entry.update({k: v for k, v in (("title", title), ("body", body), ("base", base)) if v is not None})
        return Posted(number, f"dry://{repo}/{number}", created=False)

    def pull_reviews(self, repo: str, number: int) -> Sequence[ReviewInfo]:
        return self.reviews.get(number, [])

    def check_runs(self, repo: str, sha: str) -> Sequence[CheckRunInfo]:
        return self.running.get(sha, [])

    def comment(self, repo: str, number: int, body: str) -> None:
        self.comments.append({"number": number, "body": body})

    def request_review(self, repo: str, number: int, users: Sequence[str]) -> None:
        self.review_requests.append((number, tuple(users)))

    def upsert_issue(self, repo: str, *, marker: str, title: str, body: str) -> Posted:
        return self._post(self.issues, repo, marker, title=title, body=body)

    def check_run(
        self,
        repo: str,
        *,
        name: str,
        head_sha: str,
        conclusion: str,
        title: str,
        summary: str,
        text: str | None = None,
    ) -> Posted:
        self.checks.append(
            {
                "repo": repo,
                "name": name,
                "head_sha": head_sha,
                "conclusion": conclusion,
                "title": title,
                "summary": summary,
                "text": text,
            }
        )
        return Posted(len(self.checks), f"dry://{repo}/checks/{len(self.checks)}", created=True)

    def closed_unmerged(self, repo: str, head: str) -> int | None:
        entry = self.pulls.get((repo, head))
        if entry is None or entry.get("state") != "closed" or entry.get("merged"):
            return None
        return int(str(entry["number"]))

    def merged_elsewhere(self, repo: str, head: str, trunk: str) -> tuple[int, str] | None:
        entry = self.pulls.get((repo, head))
        if entry is None or not entry.get("merged") or str(entry.get("base")) == trunk:
            return None
        return int(str(entry["number"])), str(entry.get("base"))

    def close_pull(self, repo: str, *, head: str, comment: str) -> int | None:
        return self._close(self.pulls, repo, head, comment)

    def close_issue(self, repo: str, *, marker: str, comment: str) -> int | None:
        return self._close(self.issues, repo, marker, comment)

    def _close(
        self, table: dict[tuple[str, str], dict[str, object]], repo: str, key: str, comment: str
    ) -> int | None:
        entry = table.get((repo, key))
        if entry is None or entry.get("state") == "closed":
            return None
        entry.update(state="closed", closing_comment=comment)
        return int(str(entry["number"]))

    def titles(self, kind: str = "pulls") -> Sequence[str]:
        table = self.pulls if kind == "pulls" else self.issues
        return [str(v["title"]) for v in table.values()]
