"""Recognisers on plain commit records: which upstream commits a fork commit's message carries."""

from __future__ import annotations

import hashlib

import pytest

from workers.engine import reverts
from workers.engine.history import Commit
from workers.engine.recognise import recognise
from workers.engine.recognise.index import UpstreamIndex
from workers.engine.recognise.model import BODY_LINK, BUNDLE, PR_SUBJECT, TRAILER
from workers.engine.recognise.rules import Rules

UPSTREAM_URL = "https://github.com/triton-lang/triton"
FORK_URL = "https://github.com/example-org/triton"


def commit(
    sha: str, subject: str, body: str = "", *, files: tuple[str, ...] = ("a.py",), time: int = 100
) -> Commit:
    message = subject + (f"\n\n{body}" if body else "")
    return Commit(
        sha=sha,
        parents=("0" * 40,),
        author_name="A",
        author_email="a@example.com",
        author_time=time,
        committer_time=time,
        subject=subject,
        files=files,
        message=message,
    )


def sha(n: int) -> str:
    return hashlib.sha1(str(n).encode()).hexdigest()


# Upstream PRs 7, 100, 101, 102, 103; note #7 collides with fork PR numbers used below.
UPSTREAM = [
    commit(sha(0xA1), "[AMD] Fix buffer loads (#7)"),
    commit(sha(0xA2), "[FRONTEND] Allow constexpr step (#100)"),
    commit(sha(0xA3), "[BACKEND] Hoist loads (#101)"),
    commit(sha(0xA4), "[Docs] Clarify dot precision (#102)"),
    commit(sha(0xA5), 'Revert "[BACKEND] Hoist loads (#101)" (#103)'),
]
INDEX = UpstreamIndex(UPSTREAM)
RULES = Rules.build(upstream_url=UPSTREAM_URL, fork_url=FORK_URL)


def carried(subject: str, body: str = "", rules: Rules = RULES) -> tuple[str, ...]:
    return recognise(commit("f" * 40, subject, body), INDEX, rules).upstream


def how(subject: str, body: str = "") -> str | None:
    return recognise(commit("f" * 40, subject, body), INDEX, RULES).recogniser


def test_cherry_pick_x_trailer() -> None:
    """`(cherry picked from commit <sha>)` names the upstream commit, full or abbreviated."""
    assert carried("Fix", f"(cherry picked from commit {sha(0xA2)})") == (sha(0xA2),)
    assert carried("Fix", f"(cherry picked from commit {sha(0xA3)[:12]})") == (sha(0xA3),)
    assert how("Fix", f"(cherry picked from commit {sha(0xA2)})") == TRAILER


def test_reactor_and_upstream_commit_trailers_several_on_one_commit() -> None:
    """One commit may carry several trailers of both kinds; each names one upstream commit."""
    body = f"Reactor Backport Revision: {sha(0xA2)}\nReactor Backport Revision: {sha(0xA4)}\nUpstream-Commit: {sha(0xA1)}"
    assert carried("Port three fixes", body) == (sha(0xA1), sha(0xA2), sha(0xA4))


def test_trailer_to_a_commit_outside_the_range_carries_nothing() -> None:
    """A trailer naming a sha that is not an upstream commit after the base is not a pick."""
    assert carried("Fix", f"(cherry picked from commit {'e' * 40})") == ()


def test_fork_pr_number_is_never_read_as_upstream() -> None:
    """In `[Cherry-pick] '<subject> (#N)' (#M)`, M is the fork's PR even if upstream has a PR M."""
    assert carried("[Cherry-pick] '[FRONTEND] Allow constexpr step (#100)' (#7)") == (sha(0xA2),)
    assert carried('[Cherry-pick][RESOLVED] "[BACKEND] Hoist loads (#101)" (#7)') == (sha(0xA3),)
    assert how("[Cherry-pick] '[FRONTEND] Allow constexpr step (#100)' (#7)") == PR_SUBJECT


def test_unquoted_pick_subject_with_two_numbers_takes_the_upstream_one() -> None:
    """`[Cherry-pick] <subject> (#N) (#M)`: the number before the fork's own is upstream's, when
    the text reads as upstream's subject of N (lightly retitled, or cut)."""
    assert carried("[Cherry-pick] [Docs] Clarify the dot precision (#102) (#7)") == (sha(0xA4),)
    assert carried("[Cherry-pick] [Docs] Clarify dot prec… (#102) (#7)") == (sha(0xA4),)


def test_a_fork_pick_of_the_forks_own_pr_takes_no_upstream_number() -> None:
    """`[Backport][TLX][AMD] Add kernels (#102) (#7)`: #102 is the fork's own PR picked from
    another branch (its text is not upstream #102's subject), so nothing upstream is carried."""
    assert carried("[Backport][TLX][AMD] Add simple and prefetch async FA kernels (#102) (#7)") == ()
    assert carried("Pick #102 [TLX] Fix tmem local_load return type (#7)") == ()


def test_single_trailing_number_on_a_retitled_subject_is_ambiguous_and_ignored() -> None:
    """A fork-only squash `Add TLX helper (#7)` must not mark upstream PR #7 as picked."""
    assert carried("Add TLX helper (#7)") == ()
    assert carried("[Cherry-pick] Retitled by the fork (#7)") == ()


def test_fork_subject_equal_to_upstream_subject_is_a_pick() -> None:
    """A plain `git cherry-pick` keeps upstream's subject; with or without the fork's `(#M)`."""
    assert carried("[AMD] Fix buffer loads (#7)") == (sha(0xA1),)
    assert carried("[Docs] Clarify dot precision (#102) (#55)") == (sha(0xA4),)


def test_bundle_subject_lists_every_upstream_pr() -> None:
    """`[Cherry-pick][BUNDLE] Cherry-pick K upstream(#a #b ...)` carries each listed PR, not the fork's."""
    got = carried("[Cherry-pick][BUNDLE] Cherry-pick 3 upstream(#100 #101 #102) (#7)")
    assert got == (sha(0xA2), sha(0xA3), sha(0xA4))
    assert how("[Cherry-pick][BUNDLE] Cherry-pick 2 upstream(#100, #102) (#9)") == BUNDLE


def test_bundle_body_deferred_and_wont_port_sections_are_not_picks() -> None:
    """PRs listed under Deferred (backlog) or Won't port in a bundle body are holes, not picks."""
    body = (
        "Picked:\n- #100 Allow constexpr step\n- #102 Clarify dot precision\n\n"
        "Deferred (backlog):\n- #101 Hoist loads: conflicts\n\n"
        "**Won't port**\n- #7 AMD only\n"
    )
    got = carried("[Cherry-pick][BUNDLE] Cherry-pick 2 upstream PRs", body)
    assert got == (sha(0xA2), sha(0xA4))


def test_truncated_bundle_subject_is_completed_from_the_body() -> None:
    """A long bundle title cut short still carries every PR its Picked list names (by PR or sha)."""
    body = f"## Picked\n- {sha(0xA3)[:10]} [BACKEND] Hoist loads (#101)\n- #102\n\n## Deferred\n- #7\n"
    got = carried("[Cherry-pick][BUNDLE] Cherry-pick 3 upstream(#100 #10…", body)
    assert got == (sha(0xA2), sha(0xA3), sha(0xA4))


def test_body_link_to_upstream_pull() -> None:
    """A body link `<upstream url>/pull/N` is a pick of N when nothing stronger is present."""
    assert carried("Port the kernel cache (#9)", f"Upstream: {UPSTREAM_URL}/pull/101") == (sha(0xA3),)
    assert how("Port the kernel cache (#9)", f"Upstream: {UPSTREAM_URL}/pull/101") == BODY_LINK


def test_links_to_the_fork_or_other_repositories_are_not_picks() -> None:
    """The fork's own PR link (ghstack's `Pull Request resolved:`) and other repos never count."""
    assert carried("Fork work (#9)", f"Pull Request resolved: {FORK_URL}/pull/100") == ()
    assert carried("Fork work (#9)", "See https://github.com/pytorch/pytorch/pull/101") == ()


def test_without_a_known_upstream_url_fork_links_are_still_excluded() -> None:
    """When upstream's URL is unknown, links count unless they point at the fork itself."""
    rules = Rules.build(fork_url=FORK_URL)
    assert carried("Port (#9)", f"{UPSTREAM_URL}/pull/100", rules) == (sha(0xA2),)
    assert carried("Port (#9)", f"{FORK_URL}/pull/100", rules) == ()


def test_a_stronger_recogniser_wins_over_links_in_a_copied_upstream_body() -> None:
    """A -x pick whose copied body links other upstream PRs carries only the trailer's commit."""
    body = f"Follow-up to {UPSTREAM_URL}/pull/100\n\n(cherry picked from commit {sha(0xA3)})"
    assert carried("[BACKEND] Hoist loads (#101)", body) == (sha(0xA3),)


def test_configured_pr_pattern() -> None:
    """`ledger.pr_patterns` regexes with a group `pr` name upstream PRs."""
    rules = Rules.build(pr_patterns=[r"(?m)^Upstream-PR: #(?P<pr>\d+)$"], upstream_url=UPSTREAM_URL)
    assert carried("Port it (#9)", "Upstream-PR: #102", rules) == (sha(0xA4),)


def test_urgent_tag_is_read_from_the_pick_subject() -> None:
    """`[Cherry-pick][URGENT] ...` marks the pick urgent (it must not move the frontier)."""
    found = recognise(
        commit("f" * 40, "[Cherry-pick][URGENT] '[AMD] Fix buffer loads (#7)' (#8)"), INDEX, RULES
    )
    assert found.upstream == (sha(0xA1),) and found.urgent
    plain = recognise(commit("f" * 40, "[Cherry-pick] '[AMD] Fix buffer loads (#7)' (#8)"), INDEX, RULES)
    assert not plain.urgent


@pytest.mark.parametrize(
    ("subject", "body", "expected"),
    [
        # git revert of a fork pick: names the fork commit.
        ("Revert \"[Cherry-pick] 'x (#100)' (#7)\"", "This reverts commit {pick}.", "pick"),
        # GitHub's revert button: no sha, subject quotes the fork commit's subject (+ new fork PR).
        ("Revert \"[Cherry-pick] 'x (#100)' (#7)\" (#12)", "Reverts example-org/triton#7", "pick"),
        # A pick of upstream's own revert is not a fork revert.
        ('Revert "[BACKEND] Hoist loads (#101)" (#103)', f"This reverts commit {sha(0xA3)}.", None),
    ],
)
def test_revert_targets(subject: str, body: str, expected: str | None) -> None:
    """A fork revert names the fork commit it undoes; reverting upstream's commit is not one."""
    pick = commit("b" * 40, "[Cherry-pick] 'x (#100)' (#7)")
    revert = commit("c" * 40, subject, body.format(pick=pick.sha))
    fork = reverts.ForkIndex([pick, revert])
    undo = reverts.revert_of(revert, fork, INDEX, RULES)
    assert (undo.fork if undo is not None else None) == (pick.sha if expected == "pick" else None)


def test_pick_of_upstream_revert_is_recognised_as_a_pick() -> None:
    """Upstream's `Revert "..." (#103)` picked as is carries upstream #103, not #101."""
    assert carried('Revert "[BACKEND] Hoist loads (#101)" (#103)', f"This reverts commit {sha(0xA3)}.") == (
        sha(0xA5),
    )


def test_pick_subject_keeps_upstream_tags_after_the_pick_tag() -> None:
    """`[Cherry-pick] [AMD] Fix buffer loads (#7)` is upstream's subject after the pick tag."""
    assert carried("[Cherry-pick] [AMD] Fix buffer loads (#7)") == (sha(0xA1),)
    assert carried("[Cherry-pick][RESOLVED] [AMD] Fix buffer loads (#7) (#55)") == (sha(0xA1),)


def test_bundle_prose_numbers_are_not_picks_but_inline_picked_lists_are() -> None:
    """In a bundle body, `follows #100` in prose is not a pick; `Picked: #101 #102` is."""
    body = "This bundle follows #100 and fixes #7.\n\nPicked: #101 #102\n"
    assert carried("[Cherry-pick][BUNDLE] Cherry-pick 2 upstream commits", body) == (sha(0xA3), sha(0xA4))


def test_bundle_subject_variants() -> None:
    """`upstream commits (#a, #b)` and `upstream PRs (#a #b)` list the same way."""
    assert carried("[Cherry-pick][BUNDLE] Cherry-pick 2 upstream commits (#100, #102) (#9)") == (
        sha(0xA2),
        sha(0xA4),
    )
    assert carried("[Cherry-pick] [BUNDLE] Cherry-pick 2 upstream PRs (#101 #102)") == (sha(0xA3), sha(0xA4))


def test_commit_links_and_owner_repo_references() -> None:
    """`<upstream url>/commit/<sha>` and `triton-lang/triton#N` in a body name upstream commits."""
    assert carried("Port (#9)", f"From {UPSTREAM_URL}/commit/{sha(0xA4)}") == (sha(0xA4),)
    assert carried("Port (#9)", "Cherry-picked from triton-lang/triton#101") == (sha(0xA3),)
    assert carried("Port (#9)", "Fork follow-up to example-org/triton#101") == ()


def test_extra_tags_before_the_quoted_subject() -> None:
    """`[Cherry-pick][PARTIAL] '<subject> (#N)' (#M)` still reads N from inside the quotes."""
    assert carried("[Cherry-pick][PARTIAL] '[Docs] Clarify dot precision (#102)' (#7)") == (sha(0xA4),)


def test_quoted_subject_cut_short_matches_a_unique_upstream_prefix() -> None:
    """A pick title cut with an ellipsis matches the one upstream subject starting with it."""
    assert carried("[Cherry-pick] '[FRONTEND] Allow constexpr s…' (#7)") == (sha(0xA2),)
    assert carried("[Cherry-pick] '[AMD] Fix…' (#7)") == ()  # too short to be sure


def test_bundle_status_lines_are_not_picks() -> None:
    """`Upstream tip: <sha>` or `Next: #N` in a bundle body names commits it does not carry."""
    body = f"Picked:\n- #100\nUpstream tip: {sha(0xA4)} (#102)\nNext: #101\nFrontier: {sha(0xA2)}\n"
    assert carried("[Cherry-pick][BUNDLE] Cherry-pick 1 upstream(#100)", body) == (sha(0xA2),)


def test_patch_id_rounds_find_a_far_match_and_ask_few_ids() -> None:
    """A marker-less pick of a commit far from the frontier is still found; ids are asked in <= 3 batches."""
    from workers.engine.decisions import Decisions
    from workers.engine.ledger.compute import compute_ledger

    ups = [
        commit(sha(1000 + i), f"Change {i} (#{500 + i})", files=("lib/x.cpp",), time=1000 + i)
        for i in range(15)
    ]
    fork = [commit(sha(2000), "Fork adoption of an old fix", files=("lib/x.cpp",), time=5000)]
    calls: list[set[str]] = []

    def patch_id(shas: object) -> dict[str, str]:
        asked = set(shas)  # type: ignore[call-overload]
        calls.append(asked)
        same = {sha(2000), sha(1014)}  # the fork commit carries the newest upstream commit
        return {s: ("same" if s in same else s) for s in asked}

    ledger = compute_ledger(
        ups,
        fork,
        Decisions({}),
        RULES,
        base="0" * 40,
        base_time=900,
        upstream_tip=ups[-1].sha,
        fork_tip=fork[0].sha,
        patch_id=patch_id,
        files_touching=lambda paths: {u.sha: frozenset(u.files) for u in ups},
    )
    assert ledger.entry(sha(1014)).carriers == (sha(2000),)  # type: ignore[union-attr]
    assert ledger.metrics.picked == 1
    assert len(calls) <= 3 and sha(1014) in set().union(*calls)
    assert len(calls[0]) == 3  # the fork commit and the two nearest upstream candidates first
