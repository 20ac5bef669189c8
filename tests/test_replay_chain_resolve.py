"""The chain replay's builder: conflicting chain members go through the real resolver; what it cannot do waits."""

from __future__ import annotations

from collections.abc import Callable

import pygit2

from benchmarks.replay_chain_resolve import build_chains
from tests.gitrepo import GitRepo
from workers.engine.changes import commit_changes_many
from workers.engine.git import Repository
from workers.engine.partition.records import Chain, Plan, Reason
from workers.engine.resolve.memory import MemoryIndex


def test_chain_members_are_resolved_or_counted_waiting(make_repo: Callable[[str], GitRepo]) -> None:
    """Upstream adds an import the fork's tip also added differently (a list union), then rewrites a line the
    fork rewrote (no rule): one resolved, one waits, and the chain's first wait is its second member."""
    repo = make_repo("up")
    start = repo.commit("start", {"m.py": "import a\n\nX = 1\n"})
    up1 = repo.commit("upstream adds import c", {"m.py": "import a\nimport c\n\nX = 1\n"})
    up2 = repo.commit("upstream sets X", {"m.py": "import a\nimport c\n\nX = 2\n"})
    repo.git("checkout", "-q", "-b", "fork", start)
    repo.commit("fork adds import b and sets X", {"m.py": "import a\nimport b\n\nX = 3\n"})
    pg = pygit2.Repository(str(repo.path / ".git"))
    changes = commit_changes_many(pg, Repository(repo.path), [up1, up2])
    tip = pg.revparse_single("fork").peel(pygit2.Commit)
    chain = Chain("chain-x", (up1, up2), tuple(Reason(s, "manual", "test") for s in (up1, up2)))
    out = build_chains(pg, tip.tree.id, Plan((), (chain,)), changes, MemoryIndex())
    assert out["chains"] == [{"members": 2, "conflicts": 2, "resolved": 1, "waiting": 1, "first_wait": 1}]
    assert out["strategies"] == {"list-union": 1}
    assert out["waiting_reasons"] == {"hunks no rule is safe on": 1}
