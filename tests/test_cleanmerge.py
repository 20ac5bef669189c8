"""The clean-merge proof beside git's own merge: every answer it gives is git's, byte for byte.

File-level cases go through ``git merge-tree`` (merge-ort, what ``git cherry-pick`` runs) on
one-file trees; pick-level cases through real ``git cherry-pick`` in a work tree. A case where
the proof answers must be clean in git with the identical bytes (or tree); a case git conflicts
on must get no answer (the pick then asks git, as before).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from tests.gitrepo import GitRepo
from tests.test_pick_git import fork_and_upstream, git_pick
from workers.engine.changes import commit_changes
from workers.engine.cleanmerge import HISTOGRAM_MAX_LINES, _Ancestor, _find_lcs, merge_clean, proof_holds_for
from workers.engine.merges import PROOF_PAYS_BYTES, GitMerger, MergeCache
from workers.engine.pick import PickTarget

NUMBERED = "".join(f"line {i}\n" for i in range(30))


class OneFileGit:
    """git's merge of one file's three versions (``git merge-tree`` on one-file trees)."""

    def __init__(self, folder: Path) -> None:
        pygit2.init_repository(str(folder), bare=True)
        self.repo = pygit2.Repository(str(folder))
        self.merger = GitMerger(self.repo, prove=False)

    def _tree(self, data: bytes) -> pygit2.Oid:
        builder = self.repo.TreeBuilder()
        builder.insert("f.c", self.repo.create_blob(data), pygit2.enums.FileMode.BLOB)
        return builder.write()

    def merge(self, base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
        """git's merged bytes, or None when git reports a conflict."""
        outcome = self.merger.merge(self._tree(base), self._tree(ours), self._tree(theirs))
        if outcome.tree is None:
            return None
        tree = self.repo.get(outcome.tree)
        assert isinstance(tree, pygit2.Tree)
        blob = self.repo.get(tree["f.c"].id)
        assert isinstance(blob, pygit2.Blob)
        return blob.data


@pytest.fixture
def git(tmp_path: Path) -> OneFileGit:
    return OneFileGit(tmp_path / "merges.git")


def answer(git: OneFileGit, base: str | bytes, ours: str | bytes, theirs: str | bytes) -> bytes | None:
    """The proof's answer, checked against git: when it answers, git is clean with those bytes."""
    b, o, t = (x.encode() if isinstance(x, str) else x for x in (base, ours, theirs))
    proved = merge_clean(b, o, t)
    if proved is not None:
        assert git.merge(b, o, t) == proved
    return proved


def test_edits_far_apart_are_proved_as_git_merges_them(git: OneFileGit) -> None:
    """The plain case: one edit near the top on one side, one near the end on the other."""
    ours = NUMBERED.replace("line 2\n", "fork 2\n")
    theirs = NUMBERED.replace("line 25\n", "up 25\n")
    assert (
        answer(git, NUMBERED, ours, theirs)
        == NUMBERED.replace("line 2\n", "fork 2\n").replace("line 25\n", "up 25\n").encode()
    )


def test_edits_one_line_apart_are_clean_adjacent_ones_are_left_to_git(git: OneFileGit) -> None:
    """xdl_do_merge takes a hunk alone only with one unchanged base line before the other's: one
    line apart is clean (and proved); touching hunks conflict in git, and the proof is silent."""
    ours = NUMBERED.replace("line 5\n", "fork 5\n")
    assert answer(git, NUMBERED, ours, NUMBERED.replace("line 7\n", "up 7\n")) is not None
    theirs = NUMBERED.replace("line 6\n", "up 6\n")
    assert git.merge(NUMBERED.encode(), ours.encode(), theirs.encode()) is None
    assert merge_clean(NUMBERED.encode(), ours.encode(), theirs.encode()) is None


def test_insertions_at_the_same_point_are_left_to_git(git: OneFileGit) -> None:
    """Both sides insert different lines after the same line: a conflict in git, no answer here."""
    ours = NUMBERED.replace("line 10\n", "line 10\nfork\n")
    theirs = NUMBERED.replace("line 10\n", "line 10\nup\n")
    assert git.merge(NUMBERED.encode(), ours.encode(), theirs.encode()) is None
    assert merge_clean(NUMBERED.encode(), ours.encode(), theirs.encode()) is None


def test_histogram_does_not_trim_the_common_prefix(git: OneFileGit) -> None:
    """Histogram anchors on rare lines, not on the common prefix and suffix: ours inserts
    ``R`` + blank after ``Q y``, read by git as an insertion next to the last ``Q y R`` that
    theirs edits. Splicing by the trimmed prefix/suffix would call it clean; git conflicts; the
    proof is silent. (Found by a search over small files.)"""
    base, ours, theirs = b"Q\ny\nQ\ny\nR\n", b"Q\ny\nR\n\nQ\ny\nR\n", b"Q\ny\nQ\ny\nE1\n"
    assert git.merge(base, ours, theirs) is None
    assert merge_clean(base, ours, theirs) is None


def test_groups_that_slide_over_braces_and_blank_lines_are_bounded(git: OneFileGit) -> None:
    """An inserted ``}`` + blank block can slide (xdl_change_compact) over equal lines towards the
    other side's edit; every answer given is git's, and the far-away cases are answered."""
    block = "".join(f"void f{i}() {{\n  a();\n}}\n\n" for i in range(12))
    answered = 0
    for at in range(1, 12):
        ours = block.replace(f"void f{at}() {{\n", f"void g() {{\n  b();\n}}\n\nvoid f{at}() {{\n")
        for edit in range(12):
            theirs = block.replace(f"void f{edit}() {{\n  a();\n", f"void f{edit}() {{\n  c();\n")
            answered += answer(git, block, ours, theirs) is not None
    assert answered > 80  # of 121: all but the edits next to the insertion


def test_repeated_lines_everywhere_agree_with_git(git: OneFileGit) -> None:
    """Seeded random edits of files made of a few repeated lines (braces, blanks, a few words),
    and a last line without a newline now and then: every answer is git's, and many are given."""
    rng = random.Random(11)
    words = [b"a\n", b"b\n", b"}\n", b"\n", b"{\n", b"x = 1\n", b"c", b"a\r\n"]

    def mutate(lines: list[bytes]) -> list[bytes]:
        out = list(lines)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(out) + 1)
            op = rng.random()
            if op < 0.35 and out:
                out[min(i, len(out) - 1)] = rng.choice(words) if op < 0.2 else b"new%d\n" % rng.randrange(9)
            elif op < 0.7:
                out[i:i] = [rng.choice(words) for _ in range(rng.randint(1, 3))]
            elif out:
                del out[min(i, len(out) - 1) : min(i, len(out) - 1) + rng.randint(1, 2)]
        return out

    answered = tried = 0
    for _ in range(250):
        pool = words + [b"u%d\n" % i for i in range(rng.randint(0, 30))]
        base = [rng.choice(pool) for _ in range(rng.randint(0, 40))]
        if base and rng.random() < 0.2:
            base[-1] = base[-1].rstrip(b"\n")
        b, o, t = b"".join(base), b"".join(mutate(base)), b"".join(mutate(base))
        if len({b, o, t}) < 3:
            continue
        tried += 1
        answered += answer(git, b, o, t) is not None
    assert answered > tried // 3


def test_a_last_line_without_newline_is_its_own_record(git: OneFileGit) -> None:
    """``end`` and ``end\\n`` are different records: one side drops the final newline, the other
    edits the top; and a side that adds text after an unterminated last line."""
    base = NUMBERED + "end\n"
    assert (
        answer(git, base, NUMBERED + "end", NUMBERED.replace("line 1\n", "up 1\n") + "end\n")
        == (NUMBERED.replace("line 1\n", "up 1\n") + "end").encode()
    )
    unterminated = NUMBERED + "end"
    ours = unterminated.replace("line 3\n", "fork 3\n")
    assert answer(git, unterminated, ours, unterminated + "\nmore\n") is not None


def test_crlf_lines_are_merged_byte_for_byte(git: OneFileGit) -> None:
    """CRLF files (no eol conversion without renormalize): the carriage returns are kept as
    they are, and a line one side turns to LF is a change like any other."""
    base = NUMBERED.replace("\n", "\r\n")
    ours = base.replace("line 4\r\n", "line 4\n")
    theirs = base.replace("line 20\r\n", "up 20\r\n")
    assert (
        answer(git, base, ours, theirs)
        == base.replace("line 4\r\n", "line 4\n").replace("line 20\r\n", "up 20\r\n").encode()
    )


def test_binary_files_are_left_to_git(git: OneFileGit) -> None:
    """A NUL in the first 8,000 bytes makes git merge the file as binary (a conflict)."""
    base = b"\0" + NUMBERED.encode()
    ours, theirs = base.replace(b"line 2\n", b"fork\n"), base.replace(b"line 25\n", b"up\n")
    assert git.merge(base, ours, theirs) is None
    assert merge_clean(base, ours, theirs) is None


def test_a_hash_chain_histogram_would_overflow_gives_no_answer() -> None:
    """scanA fails (and git's merge with it) when 65 distinct lines of a region share a hash
    bucket; the replayed find_lcs says so instead of guessing. A region of 100 lines holds 65
    lines whose class indexes all hash to bucket 0 of 128 (git's XDL_HASHLONG)."""
    colliding = [v for v in range(20_000) if (v + (v >> 7)) & 127 == 0][:65]
    assert len(colliding) == 65 and max(colliding) < 8_320
    records = [b"L%d\n" % v for v in range(max(colliding) + 1)]
    region = [records[v] for v in colliding] + [b"filler\n"] * 35
    ancestor = _Ancestor(records + region)
    side = [ancestor.ids[line] for line in region]
    start = len(records) + 1
    assert _find_lcs(ancestor, side, start, 100, 1, 100) is None
    assert _find_lcs(ancestor, side[:50], start + 50, 50, 1, 50) is not None  # 50 lines: 6 bits, fine


def test_versions_outside_the_read_range_are_refused() -> None:
    """The proof is git's merge as read in its source, from 2.38 up to 2.55 (master when read)."""
    assert proof_holds_for("git version 2.39.5")
    assert proof_holds_for("git version 2.55.0")
    assert not proof_holds_for("git version 2.37.1")
    assert not proof_holds_for("git version 3.0.0")
    assert not proof_holds_for("something else")


def _pick(repo: GitRepo, tip: str, up: str, *, prove: bool) -> tuple[str | None, GitMerger]:
    pg = pygit2.Repository(str(repo.path))
    commit = pg.get(tip)
    assert isinstance(commit, pygit2.Commit)
    merger = GitMerger(pg, prove=prove)
    target = PickTarget(pg, commit.tree.id, merger)
    result = target.pick(commit_changes(pg, up))
    return (str(target.tree()) if result.clean else None), merger


def test_a_pick_changing_a_file_both_sides_changed_needs_no_git(make_repo: Callable[[str], GitRepo]) -> None:
    """The fork edits a file and makes it executable; upstream edits it far away, renames
    another file, deletes one and adds one: the pick settles without git, with cherry-pick's tree."""
    text = "".join(f"int f{i}() {{ return {i}; }}\n" for i in range(40))
    other = "".join(f"other {i}\n" for i in range(40))
    repo, tip, up = fork_and_upstream(
        make_repo,
        {"lib/a.c": text, "lib/old.c": other, "lib/gone.c": "gone\n"},
        {"lib/a.c": text.replace("return 3;", "return 33;")},
        {
            "lib/a.c": text.replace("return 30;", "return 300;"),
            "lib/old.c": None,
            "lib/new.c": other,
            "lib/gone.c": None,
            "lib/added.c": "added\n",
        },
    )
    (repo.path / "lib" / "a.c").chmod(0o755)
    repo.git("add", "lib/a.c")
    tip = repo.commit("fork: executable")
    expected = git_pick(repo, tip, up)
    assert expected is not None
    tree, merger = _pick(repo, tip, up, prove=True)
    assert tree == expected and merger.calls == 0 and merger.proofs is not None and merger.proofs.proved == 1
    assert _pick(repo, tip, up, prove=False)[0] == expected  # what git's merge itself gives


def test_a_file_over_the_proof_size_goes_to_git_with_the_same_tree(
    make_repo: Callable[[str], GitRepo],
) -> None:
    """The same far-apart edits on both sides of a file over PROOF_PAYS_BYTES: the pick goes to
    git (a proof of a large file costs the plan's thread more than git's merge on another core),
    and the tree is cherry-pick's; the small file next to it is still proved when it alone is merged."""
    big = "".join(f"int function_number_{i}() {{ return {i}; }}\n" for i in range(200))
    small = "".join(f"int f{i}() {{ return {i}; }}\n" for i in range(40))
    assert len(big) > PROOF_PAYS_BYTES >= len(small) + 40
    repo, tip, up = fork_and_upstream(
        make_repo,
        {"lib/big.c": big, "lib/small.c": small},
        {
            "lib/big.c": big.replace("return 3;", "return 33;"),
            "lib/small.c": small.replace("return 3;", "return 33;"),
        },
        {"lib/big.c": big.replace("return 190;", "return 1900;")},
    )
    expected = git_pick(repo, tip, up)
    assert expected is not None
    tree, merger = _pick(repo, tip, up, prove=True)
    assert tree == expected and merger.calls == 1 and merger.proofs is not None and merger.proofs.proved == 0
    assert not merger.proving_pays(len(big)) and merger.proving_pays(len(small))
    # Upstream's next commit changes the small file alone: proved, no git.
    repo.git("checkout", "-q", "--detach", up)
    small_up = repo.commit(
        "upstream: small only", {"lib/small.c": small.replace("return 30;", "return 300;")}
    )
    repo.git("checkout", "-q", "fork")
    small_tip = repo.commit(
        "fork: the big file as upstream has it",
        {"lib/big.c": big.replace("return 190;", "return 1900;").replace("return 3;", "return 33;")},
    )
    expected = git_pick(repo, small_tip, small_up)
    tree, merger = _pick(repo, small_tip, small_up, prove=True)
    assert expected is not None and tree == expected
    assert merger.calls == 0 and merger.proofs is not None and merger.proofs.proved == 1


def test_gitattributes_on_the_path_send_the_pick_to_git(make_repo: Callable[[str], GitRepo]) -> None:
    """``-merge`` (the binary driver) makes git conflict on any both-sides change: with a
    ``.gitattributes`` in the file's directory the proof steps aside and git decides. The merger
    hands git the target's ``.gitattributes`` (workers/engine/attributes.py), so its verdict is
    cherry-pick's, a conflict (``git merge-tree`` run from the git directory used to read none of
    them and merged the far-apart edits cleanly)."""
    ours = NUMBERED.replace("line 2\n", "fork 2\n")
    theirs = NUMBERED.replace("line 25\n", "up 25\n")
    repo, tip, up = fork_and_upstream(
        make_repo,
        {"lib/f.c": NUMBERED, "lib/.gitattributes": "*.c -merge\n"},
        {"lib/f.c": ours},
        {"lib/f.c": theirs},
    )
    assert git_pick(repo, tip, up) is None  # cherry-pick reads the work tree's attributes
    tree, merger = _pick(repo, tip, up, prove=True)
    assert tree is None and merger.calls == 1 and merger.proofs is not None and merger.proofs.proved == 0
    assert _pick(repo, tip, up, prove=False)[0] is None  # git's merge itself, given the attributes


def test_attributes_outside_the_trees_turn_the_proof_off(make_repo: Callable[[str], GitRepo]) -> None:
    """``$GIT_DIR/info/attributes`` applies to every merge: the proof is not used at all."""
    ours = NUMBERED.replace("line 2\n", "fork 2\n")
    theirs = NUMBERED.replace("line 25\n", "up 25\n")
    repo, tip, up = fork_and_upstream(make_repo, {"f.c": NUMBERED}, {"f.c": ours}, {"f.c": theirs})
    info = Path(repo.git("rev-parse", "--absolute-git-dir")) / "info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("*.c merge=binary\n")
    assert git_pick(repo, tip, up) is None
    tree, merger = _pick(repo, tip, up, prove=True)
    assert tree is None and merger.calls == 1 and merger.proofs is not None and not merger.proofs.usable


def test_a_long_file_with_interleaved_edits_is_left_to_git(git: OneFileGit) -> None:
    """Above HISTOGRAM_MAX_LINES the histogram replay costs more than git's merge: edits that
    interleave (one window a side cannot separate them) are left to git, which merges them."""
    base = "".join(f"line {i}\n" for i in range(HISTOGRAM_MAX_LINES + 1))
    ours = base.replace("line 10\n", "fork 10\n").replace("line 1500\n", "fork 1500\n")
    theirs = base.replace("line 800\n", "up 800\n")
    assert git.merge(base.encode(), ours.encode(), theirs.encode()) is not None
    assert merge_clean(base.encode(), ours.encode(), theirs.encode()) is None
    short = "".join(f"line {i}\n" for i in range(1600))  # the same edits in a shorter file: proved
    assert answer(
        git,
        short,
        short.replace("line 10\n", "f\n").replace("line 1500\n", "g\n"),
        short.replace("line 800\n", "u\n"),
    )


def test_a_proved_file_merge_is_read_back_by_the_next_run(
    make_repo: Callable[[str], GitRepo], tmp_path: Path
) -> None:
    """A warm plan meets the same file merges: the merge cache keeps what the proof decided, so
    the next run reads the merged blob back instead of proving it again (same tree, no git), and an
    unproved merge is remembered as unproved (git asked, not the proof)."""
    text = "".join(f"int f{i}() {{ return {i}; }}\n" for i in range(40))
    repo, tip, up = fork_and_upstream(
        make_repo,
        {"lib/a.c": text},
        {"lib/a.c": text.replace("return 3;", "return 33;")},
        {"lib/a.c": text.replace("return 30;", "return 300;")},
    )
    pg = pygit2.Repository(str(repo.path))
    commit = pg.get(tip)
    assert isinstance(commit, pygit2.Commit)
    change = commit_changes(pg, up)

    def run() -> tuple[str, GitMerger]:
        merger = GitMerger(pg, MergeCache.open(tmp_path, pg))
        target = PickTarget(pg, commit.tree.id, merger)
        assert target.pick(change).clean
        assert merger.cache is not None
        merger.cache.save()
        return str(target.tree()), merger

    first, one = run()
    second, two = run()
    assert first == second == git_pick(repo, tip, up)
    assert one.proofs is not None and (one.proofs.proved, one.proofs.recalled) == (1, 0)
    assert two.proofs is not None and (two.proofs.proved, two.proofs.recalled) == (0, 1)
    assert one.calls == two.calls == 0


def test_an_unproved_file_merge_is_remembered_as_unproved(
    make_repo: Callable[[str], GitRepo], tmp_path: Path
) -> None:
    """Edits on neighbouring lines (adjacent hunks: git's conflict) are not proved; the next run
    reads back that the proof could not decide, and git's outcome comes from the merge cache."""
    text = "".join(f"int f{i}() {{ return {i}; }}\n" for i in range(40))
    repo2, tip2, up2 = fork_and_upstream(
        make_repo,
        {"lib/a.c": text},
        {"lib/a.c": text.replace("return 3;", "return 33;")},
        {"lib/a.c": text.replace("return 4;", "return 44;")},
    )
    pg2 = pygit2.Repository(str(repo2.path))
    tip_commit = pg2.get(tip2)
    assert isinstance(tip_commit, pygit2.Commit)
    adjacent = commit_changes(pg2, up2)
    outcomes = []
    for _ in range(2):
        merger = GitMerger(pg2, MergeCache.open(tmp_path / "two", pg2))
        result = PickTarget(pg2, tip_commit.tree.id, merger).pick(adjacent)
        assert merger.cache is not None and merger.proofs is not None
        merger.cache.save()
        outcomes.append((result.clean, merger.proofs.proved, merger.proofs.left, merger.proofs.recalled))
    assert git_pick(repo2, tip2, up2) is None
    assert outcomes == [(False, 0, 1, 0), (False, 0, 0, 1)]
