"""Backport forms of other projects' release tooling, read from their real messages.

``benchmarks/bench_backport_forms.py`` measures the ledger on release branches of IPython,
scikit-image, NumPy, kops, napari and rdma-core (main as upstream, the release branch as the
fork); one message per form it reads (and a few that only mention a backport) is vendored
verbatim in ``tests/data/backport-forms`` (licences in ``LICENSE``, provenance in
``vendor.py``) with the real upstream commits they name. The expected PR numbers and shas are
written here by hand from reading each message, not derived from the parse.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixtures.ledger import ForkedPair
from workers.engine.decisions import Decisions, Disposition
from workers.engine.history import Commit
from workers.engine.ledger.compute import compute_ledger
from workers.engine.recognise import recognise, recognise_merge
from workers.engine.recognise.index import UpstreamIndex
from workers.engine.recognise.model import CHANGE_ID, PR_FORM, SUBJECT, TRAILER
from workers.engine.recognise.rules import Rules

DATA = Path(__file__).parent / "data" / "backport-forms"
ROWS = [json.loads(line) for line in (DATA / "messages.jsonl").read_text().splitlines()]
UPSTREAM_ROWS = [json.loads(line) for line in (DATA / "upstream.jsonl").read_text().splitlines()]
Forked = Callable[[], ForkedPair]


def upstream_of(project: str) -> list[Commit]:
    rows = [u for u in UPSTREAM_ROWS if u["project"] == project]
    return [
        Commit(u["sha"], ("0" * 40,), "Up", "up@example.com", 1_000 + i, 1_000 + i, u["subject"], ())
        for i, u in enumerate(rows)
    ]


def rules_for(project: str, *, fork: str | None = None) -> Rules:
    """Both sides one repository (a release branch) unless ``fork`` names another one."""
    url = f"https://github.com/{project}"
    return Rules.build(upstream_url=url, fork_url=fork or url)


def fork_commit(row: dict[str, object]) -> Commit:
    message = str(row["message"])
    parents = tuple(f"{i:040x}" for i in range(int(str(row["parents"]))))
    return Commit(
        str(row["sha"]), parents, "Fork", "fork@example.com", 2, 2, message.split("\n", 1)[0], (), message
    )


def read(project: str, short: str, *, fork: str | None = None) -> set[int | str | None]:
    """What the vendored message ``short`` carries: upstream PR numbers (a sha where upstream's
    subject has no number), read as the ledger reads a merge or any other commit."""
    (row,) = [r for r in ROWS if r["project"] == project and str(r["sha"]).startswith(short)]
    upstream = upstream_of(project)
    change_ids = {
        u["change_id"]: u["sha"] for u in UPSTREAM_ROWS if u["project"] == project and "change_id" in u
    }
    index = UpstreamIndex(upstream, change_ids=change_ids)
    commit = fork_commit(row)
    read_by = recognise_merge if commit.is_merge else recognise
    found = read_by(commit, index, rules_for(project, fork=fork))
    number = {c.sha: c.pr_number or c.sha for c in upstream}
    return {number[s] for s in found.upstream}


def test_the_vendored_messages_are_verbatim_real_ones() -> None:
    assert len(ROWS) == 35
    projects = {r["project"] for r in ROWS}
    assert projects == {u["project"] for u in UPSTREAM_ROWS}
    licence = (DATA / "LICENSE").read_text()
    for project in projects:
        assert project in licence  # every project's licence is recorded
    for row in ROWS:
        assert len(str(row["sha"])) == 40 and row["why"]


@pytest.mark.parametrize(
    ("project", "short", "carries"),
    [
        # MeeseeksDev: "Backport PR #14913 on branch 8.x (Update changelog for 8.37) (#14915)"
        ("ipython/ipython", "91ad38145c", {14913}),
        # its body with a link: "Backport PR https://github.com/ipython/ipython/pull/14877 on branch 8.x"
        ("ipython/ipython", "4e9a57805c", {14877}),
        # "Backport PR #12823: Added clear kwarg to display()" (upstream moved the file: no patch-id)
        ("ipython/ipython", "0f52b53723", {12823}),
        # merge of meeseeks' branch auto-backport-of-pr-12823-on-7.x
        ("ipython/ipython", "288ca3349", {12823}),
        # "Manually backport #10818: change if -> elif"
        ("ipython/ipython", "5f1cd280cc", {10818}),
        ("scikit-image/scikit-image", "3f9f861ed", {6413}),
        # "backport gh-6405: In newer PIL, palette may contain <256 entries (#6410)"
        ("scikit-image/scikit-image", "5fa4ed4d7", {6405}),
        # "Backport PR #6335: warp/rotate: fixed a bug with clipping ... (#6411)"
        ("scikit-image/scikit-image", "ce2e60d00", {6335}),
        # merge whose PR title is "Update Li thresholding (Backport of #3402)"
        ("scikit-image/scikit-image", "7277314a6c", {3402}),
        # body "Backport of #27275"
        ("numpy/numpy", "da9f9c3bba", {27275}),
        # body "Backport of #26703, #26706, and #26812."
        ("numpy/numpy", "526a2f45e4", {26703, 26706, 26812}),
        # merge, body "DOC: Backport gh-25971 and  gh-25972"
        ("numpy/numpy", "ca9aa54707", {25971, 25972}),
        # merge "from charris/backport-26025", its body only the PR's subject
        ("numpy/numpy", "567729acc7", {26025}),
        # "BUG: Resize bytes_ columns in genfromtxt (backport of #10401)"
        ("numpy/numpy", "f59a423b34", {10401}),
        # cherry_pick_pull.sh: "Automated cherry pick of #17745: ...\n#17747: ..."
        ("kubernetes/kops", "331f630d32", {17745, 17747}),
        # three picks, the second's subject cut with "…"
        ("kubernetes/kops", "f6c69bbad9", {17867, 17882, 17933}),
        # "Automated cherry pick of #18114: Pin upload-artifacts GHA to commit sha": "Pin" is no pin line
        ("kubernetes/kops", "29de6aeb43", {18114}),
        # "Cherry-pick #17879: bump golang to 1.25.6" on branch release-1.34-cherry-pick-17879
        ("kubernetes/kops", "7b7ffa37f5", {17879}),
        # five picks joined on one line: "#15602: gce: Add support for bastions#15332: gce: ..."
        ("kubernetes/kops", "494a76ca81", {15602, 15332, 15611, 15614, 15607}),
        # "Manual cherry pick of #14551: Update Calico and Canal to latest versions"
        ("kubernetes/kops", "4da3ec985b", {14551}),
        # "[ Upstream commit 1f9f73c28b00... ]": the side commit of upstream's merge
        ("linux-rdma/rdma-core", "950e2da59", {"1f9f73c28b006bcb4b37bfc594f12c173156c385"}),
        ("linux-rdma/rdma-core", "f49c9358f", {"0819419e791dd9cf9e145353fd97a09c43632f9f"}),
        # patchback: "[PR #13275/b2b7b50c backport][3.15] Move flaky perf test to codspeed (#13276)"
        ("aio-libs/aiohttp", "35785a7c1e", {13275}),
        # patchback's title, body "Manual backport of #13176 (squash commit 6fa8f394...)"
        ("aio-libs/aiohttp", "6bb46cf6a1", {13176}),
        # merge of patchback/backports/9.0.x/<sha>/pr-14550, body "[PR #14550/aa01adce backport][9.0.x] ..."
        ("pytest-dev/pytest", "c2af01e560", {14550}),
        # the same merge's copy as one commit: the tag starts its body (held out: read after the run)
        ("pytest-dev/pytest", "2b35bfa112", {13339}),
        # "[Backport 2.19] Onboarding new maven snapshots publishing to s3 (job-scheduler) (#852)":
        # upstream's words, only the fork's own number
        ("opensearch-project/job-scheduler", "43fa5a60b2", {850}),
        ("opensearch-project/job-scheduler", "b8cc244598", {355}),
        # Gerrit: "Change-Id: I54a1c1d2..." alone, upstream's "strongly discourage noload" has it
        ("sqlalchemy/sqlalchemy", "9ae9b434ef", {"1c3efa4bc79f5277231239394d96481f14ff0e58"}),
        # retitled ("restore ValueError ..." for "raise ImportError ..."), cherry picked from a sha
        # main never held (the change was rebased before it merged): its Change-Id names it
        ("sqlalchemy/sqlalchemy", "9528b5977d", {"54a4ac0eb9d79a4af3a3267561f4903314494b0f"}),
    ],
)
def test_a_backport_form_names_what_it_carries(project: str, short: str, carries: set[int | str]) -> None:
    """Each real release-tooling form names the upstream PRs (or commits) it backports."""
    assert read(project, short) == carries


@pytest.mark.parametrize(
    ("project", "short"),
    [
        # "Backport of the 8.x part of https://github.com/ipython/ipython/pull/14892": part of it only
        ("ipython/ipython", "a968bd3c50"),
        # 'Revert "Backport PR #12207 on branch 7.x (...)"': a revert is no pick (reverts.py reads it)
        ("ipython/ipython", "6e65c1af69"),
        # "Partial backport of #25085."
        ("numpy/numpy", "fc324e360f"),
        # merge of branch backport-12564 whose body says "Partial backport of #12564"
        ("kubernetes/kops", "efe96d890b"),
        # "The cherry-pick of #18567 carried master's aws-cloud-controller ...": prose about a pick
        ("kubernetes/kops", "438b972b0c"),
    ],
)
def test_a_message_that_only_mentions_a_backport_carries_nothing(project: str, short: str) -> None:
    """Partial backports, reverts of backports and prose about an earlier pick name no upstream
    commit, although the number they mention is upstream's."""
    assert read(project, short) == set()


def test_in_a_separate_fork_a_number_is_upstreams_only_when_its_subject_reads_so() -> None:
    """Where the fork is another repository its ``#N`` may be its own PR: a form is read when the
    subject beside it is upstream's subject of N (squash-merged upstreams), not otherwise (PR
    numbers of an upstream that merges, whose subjects say only "Merge pull request")."""
    other = "https://github.com/example-org/fork"
    assert read("ipython/ipython", "91ad38145c", fork=other) == {14913}
    assert read("numpy/numpy", "da9f9c3bba", fork=other) == {27275}
    assert read("kubernetes/kops", "331f630d32", fork=other) == set()
    assert read("numpy/numpy", "567729acc7", fork=other) == set()  # branch names: one space only
    # what names upstream by sha, words or Change-Id holds in any fork
    assert read("aio-libs/aiohttp", "35785a7c1e", fork=other) == {13275}
    assert read("pytest-dev/pytest", "c2af01e560", fork=other) == {14550}
    assert read("opensearch-project/job-scheduler", "43fa5a60b2", fork=other) == {850}
    assert read("sqlalchemy/sqlalchemy", "9ae9b434ef", fork=other) == {
        "1c3efa4bc79f5277231239394d96481f14ff0e58"
    }


def up(n: int, subject: str) -> Commit:
    sha = hashlib.sha1(f"u{n}".encode()).hexdigest()
    return Commit(sha, ("0" * 40,), "Up", "up@example.com", n, n, subject, ())


def fork(subject: str, body: str = "", parents: int = 1) -> Commit:
    message = subject + (f"\n\n{body}" if body else "")
    sha = hashlib.sha1(message.encode()).hexdigest()
    return Commit(sha, tuple(f"{i:040x}" for i in range(parents)), "F", "f@x", 9, 9, subject, (), message)


UP = [
    up(1, "FIX: colorbar extend with log norm (#26123)"),
    up(2, "gh-112345: Fix crash in the tokenizer (#112346)"),
    up(3, "Document the release process (#26130)"),
    up(4, "net: fix a race in tcp_close"),
]
INDEX = UpstreamIndex(UP)
ONE = Rules.build(upstream_url="https://github.com/o/p", fork_url="https://github.com/o/p")
TWO = Rules.build(upstream_url="https://github.com/o/p", fork_url="https://github.com/fork/p")


def test_the_forks_own_pr_number_after_a_meeseeks_title_is_never_upstreams() -> None:
    """``Backport PR #N on branch B (<subject>) (#M)``: M is the backport's own PR, even when
    upstream has a PR M too."""
    title = "Backport PR #26123 on branch v3.7.x (FIX: colorbar extend with log norm) (#26130)"
    for rules in (ONE, TWO):
        assert recognise(fork(title), INDEX, rules).upstream == (UP[0].sha,)


def test_a_backport_line_in_prose_or_saying_it_is_partial_is_not_read() -> None:
    """Only a line that starts with the form counts, and not one that says right after the
    numbers that the PR is only partly carried or related."""
    for body in (
        "This is similar to the backport of #26123 we did last year.",
        "Backport of #26123 partially: only the test.",
        "Partial backport of #26123.",
    ):
        assert recognise(fork("Fix the colorbar", body), INDEX, ONE).upstream == ()
    assert recognise(fork("Fix the colorbar", "Backport of #26123."), INDEX, ONE).upstream == (UP[0].sha,)


def test_a_cpython_backport_title_reads_gh_n_as_upstreams_number() -> None:
    """miss-islington's ``[3.12] <upstream subject with (GH-N)> (#M)`` without its trailer is
    upstream's subject: ``(GH-N)`` reads as ``(#N)`` where upstream's subject carries ``(#N)``."""
    title = "[3.12] gh-112345: Fix crash in the tokenizer (GH-112346) (#112400)"
    found = recognise(fork(title), INDEX, TWO)
    assert (found.upstream, found.recogniser) == ((UP[1].sha,), SUBJECT)
    # another number, or another subject, is no match
    assert (
        recognise(fork("[3.12] gh-112345: Fix crash in the tokenizer (GH-112999)"), INDEX, TWO).upstream == ()
    )
    assert recognise(fork("[3.12] gh-112345: Fix a crash (GH-112346)"), INDEX, TWO).upstream == ()


def test_linux_stable_trailers_name_an_upstream_commit_only_when_it_is_one() -> None:
    """``commit <sha> upstream.`` (the stable rules' form) and ``[ Upstream commit <sha> ]`` are
    default trailers; a sha upstream does not have names nothing."""
    sha = UP[3].sha
    for body in (f"commit {sha} upstream.\n\nA race ...", f"[ Upstream commit {sha} ]\n\nA race ..."):
        found = recognise(fork("net: fix a race in tcp_close", body), INDEX, TWO)
        assert (found.upstream, found.recogniser) == ((sha,), TRAILER)
    stranger = "f" * 40
    assert recognise(fork("net: x", f"commit {stranger} upstream."), INDEX, TWO).upstream == ()
    # mentioned in prose, not as the line's start: "the fix in commit <sha> upstream" is no trailer
    assert recognise(fork("net: x", f"Unlike the fix in commit {sha} upstream."), INDEX, TWO).upstream == ()


def test_a_merge_is_read_for_its_pr_forms_only() -> None:
    """The ledger reads a fork merge for the forms release tooling writes there (Kubernetes'
    ``Automated cherry pick of #N``), and nothing else of it: ``Merge branch 'main'`` with an
    upstream subject in its conflict list carries nothing."""
    picked = fork(
        "Merge pull request #26140 from bot/automated-cherry-pick-of-#26123-upstream-release-3.7",
        "Automated cherry pick of #26123: FIX: colorbar extend with log norm",
        parents=2,
    )
    other = fork(
        "Merge branch 'main' into v3.7.x",
        "# Conflicts:\n#\tFIX: colorbar extend with log norm (#26123)",
        parents=2,
    )
    ledger = compute_ledger(
        UP,
        [other, picked],
        Decisions({}),
        ONE,
        base="0" * 40,
        base_time=0,
        upstream_tip=UP[-1].sha,
        fork_tip=picked.sha,
        patch_id=lambda shas: {},
    )
    assert [(p.sha, p.upstream, p.recogniser) for p in ledger.picks] == [(picked.sha, (UP[0].sha,), PR_FORM)]


def test_a_form_is_read_after_text_whose_lower_case_is_longer() -> None:
    """The body is scanned lower-cased for the verb; where lower-casing changes its length
    ("İ" becomes two characters) the lines are still found in the body itself."""
    body = "İstanbul users saw the colorbar drop its extension.\n\nBackport of #26123."
    assert recognise(fork("Fix the colorbar", body), INDEX, ONE).upstream == (UP[0].sha,)


def test_a_branch_tagged_title_reads_upstreams_words_never_the_forks_number() -> None:
    """``[stable-2.16] <upstream subject> (#M)`` (ansible), ``[Backport 2.x] ...`` (OpenSearch),
    ``[2.19] ...``, ``[bp-2.16] ...``: the title after a tag naming the branch or saying backport,
    without the fork's (#M), is one upstream subject without its (#N). The fork's M is never read,
    even where upstream has a PR M; words two upstream commits share, or a component tag, name
    nothing."""
    index = UpstreamIndex(
        [
            up(82360, "assemble: fixed missing parameter error (#82360)"),
            up(83124, "Document the release process (#83124)"),
            up(81843, "Bump sanity test requirements (#81843)"),
            up(81846, "Bump sanity test requirements (#81846)"),
        ]
    )
    fixed = index.pr(82360)
    for tag in (
        "[stable-2.16]",
        "[2.16]",
        "[bp-2.16]",
        "[Backport 2.x]",
        "[backport/2.16]",
        "[release-2.16][ci]",
    ):
        for rules in (ONE, TWO):
            found = recognise(fork(f"{tag} assemble: fixed missing parameter error (#83124)"), index, rules)
            assert (found.upstream, found.recogniser) == ((fixed,), SUBJECT), tag
    for title in (
        "[stable-2.16] Bump sanity test requirements (#81848)",  # two upstream commits say so
        "[AMD] assemble: fixed missing parameter error (#83124)",  # a component, not a branch
        "assemble: fixed missing parameter error (#83124)",  # no tag: the same words may be new work
        "[stable-2.16] assemble: fixed a missing parameter error (#83124)",  # other words
    ):
        assert recognise(fork(title), index, ONE).upstream == (), title


def test_a_patchback_tag_names_upstream_by_its_sha() -> None:
    """``[PR #N/<short sha> backport][B] <subject> (#M)``: the sha is upstream's merged commit
    (read in any fork); a sha upstream lacks falls back to N only as another form's number does
    (one repository, or the subject reads as upstream's)."""
    found = recognise(fork(f"[PR #26123/{UP[0].sha[:8]} backport][3.7] Other words (#26140)"), INDEX, TWO)
    assert (found.upstream, found.recogniser) == ((UP[0].sha,), PR_FORM)
    stranger = "[PR #26123/deadbeef backport][3.7] Other words (#26140)"
    assert recognise(fork(stranger), INDEX, ONE).upstream == (UP[0].sha,)
    assert recognise(fork(stranger), INDEX, TWO).upstream == ()
    kept = "[PR #26123/deadbeef backport][3.7] FIX: colorbar extend with log norm (#26140)"
    assert recognise(fork(kept), INDEX, TWO).upstream == (UP[0].sha,)


def test_a_change_id_names_the_upstream_commit_that_has_it() -> None:
    """Gerrit keeps a change's ``Change-Id`` through a cherry-pick: the fork commit with
    upstream's id carries that commit, retitled or not; an id upstream lacks, or one quoted from
    another message, names nothing."""
    cid = "I" + "5" * 40
    index = UpstreamIndex(UP, change_ids={cid: UP[3].sha, "I" + "6" * 40: "f" * 40})
    found = recognise(fork("net: close the race", f"Adapted for 2.0.\n\nChange-Id: {cid}"), index, TWO)
    assert (found.upstream, found.recogniser) == ((UP[3].sha,), CHANGE_ID)
    for body in (f"Change-Id: I{'7' * 40}", f"Change-Id: I{'6' * 40}", f"> Change-Id: {cid}"):
        assert recognise(fork("net: close the race", body), index, TWO).upstream == (), body


def test_build_ledger_reads_upstreams_change_ids_for_a_gerrit_pick(forked: Forked) -> None:
    """End to end on real repositories: a Gerrit cherry-pick whose patch differs from upstream's
    (adapted for the branch) and whose ``cherry picked from`` sha upstream never held is a pick
    by its Change-Id, which build_ledger reads from upstream's messages."""
    p = forked()
    cid = "I" + "0123456789" * 4
    upstream_sha = p.upstream.commit(
        f"raise ImportError when greenlet not installed\n\nChange-Id: {cid}",
        {"src/a.py": "raise ImportError\n"},
    )
    p.up(12)
    p.fork.fetch(p.upstream, into="refs/remotes/upstream/main")
    p.fork.commit(
        f"restore ValueError when greenlet not installed\n\nChange-Id: {cid}\n(cherry picked from commit {'ab' * 20})",
        {"src/a.py": "raise ValueError\n"},
    )
    entry = p.ledger().entry(upstream_sha)
    assert entry is not None and entry.disposition is Disposition.PICKED
