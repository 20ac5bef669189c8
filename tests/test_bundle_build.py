"""The in-memory bundle build: trees equal a git cherry-pick loop's; commits equal libgit2's own."""

from __future__ import annotations

from collections.abc import Callable

import pygit2

from core.config import RepoConfig
from tests.gitrepo import GitRepo
from workers.engine.bundle import PickStyle, build, pick_message
from workers.engine.changes import commit_changes
from workers.engine.merges import GitMerger, MergeCache
from workers.engine.partition.records import Bundle, Plan
from workers.engine.pick import PickTarget

AWKWARD = ["src/with space.py", "src/ünïcode.txt", '"quoted".txt', "tab\there.txt"]


def _upstream_and_fork(make_repo: Callable[[str], GitRepo]) -> tuple[GitRepo, str, list[str], str]:
    repo = make_repo("repo")
    base = repo.commit(
        "base",
        {
            "lib/Pass.cpp": "".join(f"int f{k}() {{ return {k}; }}\n" for k in range(30)),
            "run.sh": "echo run\n",
            "old.txt": "old\n",
        },
    )
    shas = [repo.commit("Add awkward paths (#11)", {p: f"{p}\n" for p in AWKWARD})]
    text = "".join(f"int f{k}() {{ return {k}; }}\n" for k in range(30)).replace("return 3;", "return 33;")
    shas.append(repo.commit("Change f3 (#12)", {"lib/Pass.cpp": text}))
    (repo.path / "run.sh").chmod(0o755)
    repo.git("add", "run.sh")
    shas.append(repo.commit("Make run.sh executable (#13)", {"old.txt": None}))
    # An author in a negative, non-whole-hour time zone, and a message without a PR number.
    repo.write({"lib/New.cpp": "int added() { return 1; }\n"})
    repo.git(
        "commit",
        "-q",
        "-m",
        "Add New.cpp\n\nBody line.",
        env={
            "GIT_AUTHOR_DATE": "@1600000000 -0730",
            "GIT_COMMITTER_DATE": "@1600000100 +0530",
            "GIT_AUTHOR_NAME": "Zoë Author",
            "GIT_AUTHOR_EMAIL": "zoe@example.com",
        },
    )
    shas.append(repo.head())
    repo.git("checkout", "-q", "-b", "fork", base)
    fork_text = "".join(f"int f{k}() {{ return {k}; }}\n" for k in range(30)).replace(
        "return 25;", "return -25;"
    )
    fork_tip = repo.commit("fork change far from f3", {"lib/Pass.cpp": fork_text})
    return repo, base, shas, fork_tip


def test_built_commits_match_cherry_pick_trees_and_libgit2_commit_objects(
    make_repo: Callable[[str], GitRepo],
) -> None:
    """Each built commit's tree is what git cherry-pick gives, and its object is what create_commit writes."""
    repo, _, shas, fork_tip = _upstream_and_fork(make_repo)
    pg = pygit2.Repository(str(repo.path))
    changes = {sha: commit_changes(pg, sha) for sha in shas}
    plan = Plan((Bundle(f"bundle-{shas[0][:7]}", tuple(shas)),), ())
    style = PickStyle(upstream_url="https://github.com/triton-lang/triton")
    result = build(pg, plan, fork_tip, "fork", changes, shas, style)
    built = result.bundles[0]
    assert built.commits == tuple(shas) and built.ejected == ()
    assert repo.git("for-each-ref", "refs/forksync/") == ""  # the scratch ref is gone

    repo.git("checkout", "-q", "-b", "loop", fork_tip)
    parent = fork_tip
    for sha, pick in zip(shas, built.picks, strict=True):
        looped = repo.cherry_pick(sha)
        assert repo.git("rev-parse", f"{pick}^{{tree}}") == repo.git("rev-parse", f"{looped}^{{tree}}")
        upstream = pg.get(sha)
        made = pg.get(pick)
        assert isinstance(upstream, pygit2.Commit) and isinstance(made, pygit2.Commit)
        committer = pygit2.Signature(
            "forksync", "forksync@users.noreply.github.com", upstream.commit_time, upstream.commit_time_offset
        )
        reference = pg.create_commit(
            None,
            upstream.author,
            committer,
            pick_message(upstream.message, sha, style),
            made.tree.id,
            [pygit2.Oid(hex=parent)],
        )
        assert str(reference) == pick
        parent = pick
    last = pg.get(built.head)
    assert isinstance(last, pygit2.Commit)
    assert last.author.name == "Zoë Author" and last.author.offset == -450
    assert last.message.endswith(f"Body line.\n\n(cherry picked from commit {shas[-1]})\n")
    first = pg.get(built.picks[1])
    assert isinstance(first, pygit2.Commit)
    assert "https://github.com/triton-lang/triton/pull/12\n" in first.message


def test_same_plan_builds_same_shas(make_repo: Callable[[str], GitRepo]) -> None:
    """Building the same plan twice gives the same commits (a rerun updates nothing)."""
    repo, _, shas, fork_tip = _upstream_and_fork(make_repo)
    pg = pygit2.Repository(str(repo.path))
    changes = {sha: commit_changes(pg, sha) for sha in shas}
    plan = Plan((Bundle("b", tuple(shas[:2])), Bundle("c", tuple(shas[2:]))), ())
    one = build(pg, plan, fork_tip, "fork", changes, shas)
    two = build(pg, plan, fork_tip, "fork", changes, shas)
    assert one == two
    # Independent: each bundle is built on the fork tip alone and targets the fork branch.
    assert [b.base for b in one.bundles] == [fork_tip, fork_tip]
    assert [b.base_branch for b in one.bundles] == ["fork", "fork"]
    assert RepoConfig().ledger.trailer == PickStyle().trailer


def test_commit_needing_an_earlier_bundle_is_ejected_to_a_chain_that_follows_it(
    make_repo: Callable[[str], GitRepo],
) -> None:
    """Bundles are built on the trunk alone: a commit planned into bundle 2 that only applies on top
    of bundle 1 (the trial's running target had it) is ejected to a chain naming bundle 1."""
    repo = make_repo("repo")
    base = repo.commit("base", {"a.txt": "one\n", "b.txt": "b\n"})
    first = repo.commit("Change a (#1)", {"a.txt": "two\n"})
    other = repo.commit("Change b (#2)", {"b.txt": "bb\n"})
    needs = repo.commit("Change a again (#3)", {"a.txt": "three\n"})
    repo.git("checkout", "-q", "-b", "fork", base)
    fork_tip = repo.commit("fork change", {"c.txt": "c\n"})
    pg = pygit2.Repository(str(repo.path))
    shas = [first, other, needs]
    changes = {sha: commit_changes(pg, sha) for sha in shas}
    plan = Plan((Bundle(f"bundle-{first[:7]}", (first,)), Bundle(f"bundle-{other[:7]}", (other, needs))), ())
    result = build(pg, plan, fork_tip, "fork", changes, shas)
    one, two = result.bundles
    assert one.commits == (first,) and two.commits == (other,) and two.ejected == (needs,)
    (chain,) = result.chains
    assert chain.base == fork_tip and chain.base_branch == "fork"
    assert chain.stopped_at == needs and chain.conflicts == ("a.txt",) and chain.commits == ()
    (reason,) = result.open_chains[0].reasons
    assert reason.kind == "conflict"
    assert f"bundle-{first[:7]} changes them: it follows, once they land" in reason.detail


def test_the_build_reads_back_the_plan_s_merges(make_repo: Callable[[str], GitRepo]) -> None:
    """Given the merge outcomes of the plan's trial picks (the same picks onto the fork tip), the
    build runs no git merge again and builds exactly what it builds without them."""
    repo, _, shas, fork_tip = _upstream_and_fork(make_repo)
    pg = pygit2.Repository(str(repo.path))
    changes = {sha: commit_changes(pg, sha) for sha in shas}
    plan = Plan((Bundle(f"bundle-{shas[0][:7]}", tuple(shas)),), ())
    tip = pg.get(fork_tip)
    assert isinstance(tip, pygit2.Commit)
    merges = MergeCache(None, "test")
    trial = GitMerger(pg, merges, prove=False)  # the plan's merges as git made them
    target = PickTarget(pg, tip.tree.id, trial)
    assert all(target.pick(changes[sha]).clean for sha in shas)
    assert trial.calls == 1  # "Change f3" meets the fork's change of the same file: git merges it
    known = len(merges._known)
    with_merges = build(pg, plan, fork_tip, "fork", changes, shas, merges=merges)
    assert len(merges._known) == known and merges._fresh == 1  # nothing merged anew
    assert with_merges == build(pg, plan, fork_tip, "fork", changes, shas)
