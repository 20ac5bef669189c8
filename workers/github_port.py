"""What the ingestion loop needs from GitHub, as a narrow Protocol, and a dry recorder of it.

The production implementation wraps the bot's adapter (``bot/github.py``) for one installation;
``DryGitHub`` records what would be done, for ``forksync demo`` and executor tests. Keeping the
loop's needs this small is what lets both stand in for GitHub.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class Posted:
    """A PR, issue or check run as GitHub answered: its number (or id), URL, and whether new."""

    number: int
    url: str
    created: bool


class IngestGitHub(Protocol):
    """One installation's view of GitHub, as the ingestion loop uses it."""

    def clone_url(self, repo: str) -> str:
        """The git URL of ``repo`` (https), without credentials."""
        ...

    def git_token(self) -> str | None:
        """An installation token for git over https (minted now, never stored)."""
        ...

    def upsert_pull(self, repo: str, *, head: str, base: str, title: str, body: str, draft: bool = False) -> Posted:
        """Update the open PR whose head is ``head``, or open one: never a second."""
        ...

    def upsert_issue(self, repo: str, *, marker: str, title: str, body: str) -> Posted:
        """Update the open issue whose body carries ``marker``, or open one: never a second."""
        ...

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
        """Create a completed check run on ``head_sha``."""
        ...

    def close_pull(self, repo: str, *, head: str, comment: str) -> int | None:
        """Close the open PR whose head is ``head`` with ``comment``; its number, or None if none is open."""
        ...

    def close_issue(self, repo: str, *, marker: str, comment: str) -> int | None:
        """Close the open issue carrying ``marker`` with ``comment``; its number, or None if none is open."""
        ...


@dataclass
class DryGitHub:
    """Records PRs, issues and check runs in memory (upserts by head branch / marker, like GitHub)."""

    remotes: dict[str, str] = field(default_factory=dict)  # repo -> local git URL
    private: set[str] = field(default_factory=set)  # repos to report as private (the dashboard's login wall)
    pulls: dict[tuple[str, str], dict[str, object]] = field(default_factory=dict)
    issues: dict[tuple[str, str], dict[str, object]] = field(default_factory=dict)
    checks: list[dict[str, object]] = field(default_factory=list)
    _numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def clone_url(self, repo: str) -> str:
        return self.remotes[repo]

    def git_token(self) -> str | None:
        return None

    def is_private(self, repo: str) -> bool:
        return repo in self.private

    def _post(self, table: dict[tuple[str, str], dict[str, object]], repo: str, key: str, **fields: object) -> Posted:
        existing = table.get((repo, key))
        if existing is not None:
            existing.update(fields, state="open")
            number = int(str(existing["number"]))
            return Posted(number, f"dry://{repo}/{number}", created=False)
        number = next(self._numbers)
        table[(repo, key)] = {"number": number, "state": "open", **fields}
        return Posted(number, f"dry://{repo}/{number}", created=True)

    def upsert_pull(self, repo: str, *, head: str, base: str, title: str, body: str, draft: bool = False) -> Posted:
        return self._post(self.pulls, repo, head, head=head, base=base, title=title, body=body, draft=draft)

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
            {"repo": repo, "name": name, "head_sha": head_sha, "conclusion": conclusion, "title": title, "summary": summary, "text": text}
        )
        return Posted(len(self.checks), f"dry://{repo}/checks/{len(self.checks)}", created=True)

    def close_pull(self, repo: str, *, head: str, comment: str) -> int | None:
        return self._close(self.pulls, repo, head, comment)

    def close_issue(self, repo: str, *, marker: str, comment: str) -> int | None:
        return self._close(self.issues, repo, marker, comment)

    def _close(self, table: dict[tuple[str, str], dict[str, object]], repo: str, key: str, comment: str) -> int | None:
        entry = table.get((repo, key))
        if entry is None or entry.get("state") == "closed":
            return None
        entry.update(state="closed", closing_comment=comment)
        return int(str(entry["number"]))

    def titles(self, kind: str = "pulls") -> Sequence[str]:
        table = self.pulls if kind == "pulls" else self.issues
        return [str(v["title"]) for v in table.values()]
