"""A plan's analyses and line dependencies made as they are read, or while git merges: the same
analyses, the same dependencies and the same plan as with everything made first."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from benchmarks.gen_bundling import make_bundling_pair
from tests.gitrepo import GitRepo
from workers.engine import planning
from workers.engine.analyses import Dependencies, PlanAnalyses
from workers.engine.changes import CHANGES_CACHE_FILE, AnalysisCache, commit_changes_many
from workers.engine.git import Repository
from workers.engine.lines import line_dependencies
from workers.engine.merges import MERGE_CACHE_FILE, GitMerger, MergeOutcome
from workers.engine.pair import open_configured
from workers.engine.symbols import BUILTIN_STOPLIST


def _history(make_repo: Callable[[str], GitRepo]) -> tuple[GitRepo, list[str]]:
    """A short history with a merge commit in it (libgit2 diffs those, in their turn)."""
    repo = make_repo("up")
    base = repo.commit("base", {"lib/A.cpp": "int a() { return 1; }\n", "python/m.py": "x = 1\n"})
    shas = [base]
    shas.append(
        repo.commit("c1", {"lib/A.cpp": "int a() { return 2; }\nint helperWidth(int x) {\n  return x;\n}\n"})
    )
    repo.git("checkout", "-q", "-b", "side", base)
    repo.commit("side", {"python/side.py": "def is_hopper():\n    return True\n"})
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    shas.append(repo.head())
    shas.append(repo.commit("c3", {"python/m.py": "x = 2\ny = 3\n", "lib/A.cpp": "int a() { return 3; }\n"}))
    return repo, shas


def test_analyses_read_in_any_order_are_those_made_first(
    make_repo: Callable[[str], GitRepo], tmp_path: Path
) -> None:
    repo, shas = _history(make_repo)
    pg, git = pygit2.Repository(str(repo.path)), Repository(repo.path)
    first = commit_changes_many(pg, git, shas, analyse=shas[1:])
    cache = AnalysisCache(tmp_path, BUILTIN_STOPLIST)
    analyses = PlanAnalyses(pg, git, cache, shas, BUILTIN_STOPLIST, shas[1:])
    assert len(analyses) == len(shas) and shas[-1] in analyses
    for sha in reversed(shas):  # the last first: the ones before it are made on the way
        assert analyses[sha] == first[sha]
    assert not analyses.read_ahead()  # nothing left to make
    analyses.save()
    assert (tmp_path / CHANGES_CACHE_FILE).exists()
    again = PlanAnalyses(pg, git, AnalysisCache(tmp_path, BUILTIN_STOPLIST), shas, BUILTIN_STOPLIST, shas[1:])
    assert not again.read_ahead()  # all read back from the cache: no git
    assert again.complete() == first


def test_reading_ahead_makes_them_in_order_and_a_closed_one_stops(
    make_repo: Callable[[str], GitRepo], tmp_path: Path
) -> None:
    repo, shas = _history(make_repo)
    pg, git = pygit2.Repository(str(repo.path)), Repository(repo.path)
    analyses = PlanAnalyses(pg, git, None, shas, BUILTIN_STOPLIST, shas)
    made = 1  # the first is made at once (git starts diffing)
    while analyses.read_ahead():
        made += 1
    assert made == len(shas)
    closed = PlanAnalyses(pg, git, None, shas, BUILTIN_STOPLIST, shas)
    closed.close()
    assert not closed.read_ahead()


def test_dependencies_read_in_any_order_are_the_history_s(make_repo: Callable[[str], GitRepo]) -> None:
    repo, shas = _history(make_repo)
    pg, git = pygit2.Repository(str(repo.path)), Repository(repo.path)
    analyses = PlanAnalyses(pg, git, None, shas, BUILTIN_STOPLIST, ())
    first = line_dependencies([(s, analyses[s].ranges) for s in shas], 3)
    assert any(first.values())  # c3 depends on c1's lines: the test has something to compare
    fresh = PlanAnalyses(pg, git, None, shas, BUILTIN_STOPLIST, ())
    deps = Dependencies(shas, fresh, 3)
    assert [deps[s] for s in reversed(shas)] == [first[s] for s in reversed(shas)]
    assert not deps.read_ahead()
    with pytest.raises(KeyError):
        deps["0" * 40]


class _Running:
    """A merge under way whose answer is there after ``late`` checks."""

    def __init__(self, late: int) -> None:
        self.late = late
        self.answered = False

    def ready(self) -> bool:
        self.late -= 1
        return self.late < 0

    def wait(self) -> list[str]:
        return ["4b825dc642cb6eb9a060e54bf8d69288fbee4904"]


def test_the_merger_works_while_git_merges_until_there_is_no_work(make_repo: Callable[[str], GitRepo]) -> None:
    """While a merge's answer has not come, the merger does one step of the caller's work per
    check; a step that says "none now" ends that wait's work, not the next wait's."""
    repo = make_repo("r")
    repo.commit("base", {"a.txt": "a\n"})
    merger = GitMerger(pygit2.Repository(str(repo.path)))
    steps: list[int] = []
    merger.idle = lambda: steps.append(1) is None and len(steps) < 2  # two steps of work, then none
    oid = pygit2.Oid(hex="4b825dc642cb6eb9a060e54bf8d69288fbee4904")
    outcome = merger._collect(oid, oid, oid, _Running(late=5))  # type: ignore[arg-type]
    assert outcome == MergeOutcome(oid)
    assert len(steps) == 2  # the second said "none now": the merger waited for git
    merger._collect(oid, oid, oid, _Running(late=5))  # type: ignore[arg-type]
    assert len(steps) == 3  # asked again at the next wait (and told "none now" again)
    merger.idle = lambda: steps.append(1) is None
    merger._collect(oid, oid, oid, _Running(late=3))  # type: ignore[arg-type]
    assert len(steps) == 6  # one step per check until the answer is there
    merger.close()


def test_a_plan_that_reads_ahead_while_git_merges_is_the_same_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a generated Triton-like pair with conflicts (trial merges by git), the plan made with
    the merger's idle hook and lazily made analyses equals the one made with the hook off and
    every analysis made before the partition starts."""
    made = make_bundling_pair(tmp_path / "pair", pending=90, files=240)
    pristine = tmp_path / "pristine"
    shutil.copytree(made.fork, pristine, symlinks=True)

    def plan() -> str:
        shutil.rmtree(made.fork)
        shutil.copytree(pristine, made.fork, symlinks=True)
        pair, config = open_configured(str(made.upstream), str(made.fork))
        for name in (MERGE_CACHE_FILE, CHANGES_CACHE_FILE):
            (pair.cache_dir / name).unlink(missing_ok=True)
        shutil.rmtree(pair.cache_dir / "ledger", ignore_errors=True)
        return planning.make_plan(pair, config).plan.to_json()

    calls: list[int] = []

    class Counting(GitMerger):
        """The merger as planned, counting the steps of work done while git merges."""

        @property  # type: ignore[override]
        def idle(self) -> Callable[[], bool] | None:
            return self._counted

        @idle.setter
        def idle(self, work: Callable[[], bool] | None) -> None:
            self._counted = None if work is None else (lambda: calls.append(1) is None and work())

    class NoIdle(GitMerger):
        """The merger with its idle hook off: nothing is read ahead while git merges."""

        @property  # type: ignore[override]
        def idle(self) -> Callable[[], bool] | None:
            return None

        @idle.setter
        def idle(self, work: Callable[[], bool] | None) -> None:
            pass

    class Everything(PlanAnalyses):
        """Every analysis made before the partition starts."""

        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            self.complete()

    monkeypatch.setattr(planning, "GitMerger", Counting)
    read_ahead = plan()
    assert calls  # work was done while git merged
    monkeypatch.setattr(planning, "GitMerger", NoIdle)
    monkeypatch.setattr(planning, "PlanAnalyses", Everything)
    first = plan()
    assert read_ahead == first
    assert json.loads(first)["chains"] and made.conflicts_planted > 0  # conflicts: git merged


def test_a_plan_pauses_cycle_collection_and_resumes_it_even_when_it_fails(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The collector is off while the plan is made (its passes over the analyses free nothing)
    and on again after, whether the plan returns or raises; a caller that had it off keeps it off."""
    import gc

    seen: list[bool] = []

    def failing(*args: object) -> None:
        seen.append(gc.isenabled())
        raise RuntimeError("boom")

    monkeypatch.setattr(planning, "_plan", failing)
    made = make_bundling_pair(tmp_path / "pair", pending=5, files=120)
    pair, config = open_configured(str(made.upstream), str(made.fork))
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        planning.make_plan(pair, config)
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        with pytest.raises(RuntimeError):
            planning.make_plan(pair, config)
        assert not gc.isenabled()
    finally:
        gc.enable()
