"""The ledger on fbtriton-shaped histories: GitHub squash-merged fork PRs picking from upstream.

Fork commits here are made as GitHub makes them: author = the fork engineer, committer =
GitHub, author date = merge time (not upstream's), subject = the fork PR title + `` (#M)``,
where M, the fork's own PR number, often equals some upstream PR number.
"""

from __future__ import annotations

from collections.abc import Callable

from tests.fixtures.ledger import ForkedPair
from workers.engine.decisions import Disposition
from workers.engine.ledger.records import Ledger

Forked = Callable[[], ForkedPair]

ENGINEER = "Fork Engineer <engineer@fb.example>"
GITHUB = {"GIT_COMMITTER_NAME": "GitHub", "GIT_COMMITTER_EMAIL": "noreply@github.com"}


def merge_fork_pr(
    p: ForkedPair, title: str, number: int, files: dict[str, str | None], body: str = ""
) -> str:
    """Squash-merge fork PR ``number`` the way GitHub does: ``<title> (#number)``, committed by GitHub."""
    p.fork.write(files)
    env = {**p.fork._dated_env(None, ENGINEER), **GITHUB}
    message = f"{title} (#{number})" + (f"\n\n{body}" if body else "")
    p.fork.git("commit", "-q", "--allow-empty", "-m", message, env=env)
    return p.fork.head()


def carriers(ledger: Ledger, sha: str) -> tuple[str, ...]:
    entry = ledger.entry(sha)
    assert entry is not None
    return entry.carriers


LONG = "[BACKEND] Pipeline the epilogue of persistent matmul kernels when the accumulator spills"


def test_title_cut_by_github_with_a_fork_number_that_is_an_upstream_pr(forked: Forked) -> None:
    """`'<subject cut>… (#M)` (GitHub cut the title, so the quote never closes) picks the upstream
    commit whose subject starts with what is left; M, the fork's PR, is not read as upstream PR M."""
    p = forked()
    amd = p.up(7001, "[AMD] Fix buffer load lowering for i8 pointers")
    long_one = p.up(7104, LONG, {"python/pipeline.py": "epilogue = True\n"})
    cut = f"[Cherry-pick] '{LONG[:60]}…"
    fork_sha = merge_fork_pr(p, cut, 7001, {"python/pipeline.py": "epilogue = True\n"})
    ledger = p.ledger()
    assert carriers(ledger, long_one) == (fork_sha,)
    assert carriers(ledger, amd) == ()
    entry = ledger.entry(amd)
    assert entry is not None and entry.disposition is not Disposition.PICKED
    assert "pr-subject" in (ledger.entry(long_one) or entry).reason


BUNDLE_BODY = """Cherry-pick 3 upstream PRs onto the fork.

Picked (3):
- [AMD] Fix buffer load lowering for i8 pointers (#7001)
- [BACKEND] Hoist loads out of loops (#7002)
- [Docs] Old note (#6000)

Deferred (backlog) (1):
- [FRONTEND] Allow constexpr step in tl.range (#7003)

Won't-port
- [CI] Bump the runner image (#7004)

Pins
- frontier: [NVIDIA] Use TMA stores (#7005)
- contiguous: [AMD] Fix buffer load lowering for i8 pointers (#7001), halts at #7003
"""


def test_bundle_sections_with_counts_or_without_colons_are_not_picks(forked: Forked) -> None:
    """A bundle counts only its Picked list: a "Deferred (backlog) (1):" or bare "Won't-port"
    section and the pin lines name upstream PRs that are not picked; a listed PR older than the
    base (#6000) is ignored, not an error."""
    p = forked()
    a = p.up(7001, "[AMD] Fix buffer load lowering for i8 pointers")
    b = p.up(7002, "[BACKEND] Hoist loads out of loops")
    deferred = p.up(7003, "[FRONTEND] Allow constexpr step in tl.range")
    wont = p.up(7004, "[CI] Bump the runner image")
    pinned = p.up(7005, "[NVIDIA] Use TMA stores")
    bundle = merge_fork_pr(
        p,
        "[Cherry-pick][BUNDLE] Cherry-pick 3 upstream(#7001 #7002 #6000)",
        812,
        {"src/pr7001.py": "# change 7001\n", "src/pr7002.py": "# change 7002\n"},
        BUNDLE_BODY,
    )
    ledger = p.ledger()
    assert carriers(ledger, a) == carriers(ledger, b) == (bundle,)
    for sha in (deferred, wont, pinned):
        assert carriers(ledger, sha) == (), (ledger.entry(sha) or ledger.entries[0]).reason
    assert ledger.metrics.frontier == b
    assert [pk.upstream for pk in ledger.picks] == [(a, b)]


def test_github_revert_button_on_a_pick_pr_undoes_the_pick(forked: Forked) -> None:
    """GitHub's Revert button squash-merged: 'Revert "<fork PR title>" (#R)' with body "Reverts
    <fork>#M" and no "This reverts commit" line still undoes the pick of fork PR M; a pick whose
    title merely resembles it stays carried."""
    p = forked()
    a = p.up(7001, "[AMD] Fix buffer load lowering for i8 pointers")
    b = p.up(7002, "[BACKEND] Hoist loads out of loops")
    c = p.up(7003, "[FRONTEND] Allow constexpr step")
    pick_a = merge_fork_pr(
        p,
        "[Cherry-pick] '[AMD] Fix buffer load lowering for i8 pointers (#7001)'",
        7008,
        {"src/pr7001.py": "# change 7001\n"},
    )
    pick_b = merge_fork_pr(
        p, "[BACKEND] Hoist loads out of loops (#7002)", 7010, {"src/pr7002.py": "# change 7002\n"}
    )
    pick_c = merge_fork_pr(
        p,
        "[Cherry-pick] '[FRONTEND] Allow constexpr step (#7003)'",
        7012,
        {"src/pr7003.py": "# change 7003\n"},
    )
    revert_a = merge_fork_pr(
        p,
        "Revert \"[Cherry-pick] '[AMD] Fix buffer load lowering for i8 pointers (#7001)'\"",
        7009,
        {"src/pr7001.py": None},
        "Reverts facebookexperimental/triton#7008",
    )
    revert_b = merge_fork_pr(
        p, 'Revert "Hoist loads"', 7011, {"src/pr7002.py": None}, "Reverts facebookexperimental/triton#7010"
    )
    ledger = p.ledger("upstream:\n  url: https://github.com/triton-lang/triton\n")
    for upstream_sha, pick, revert in ((a, pick_a, revert_a), (b, pick_b, revert_b)):
        entry = ledger.entry(upstream_sha)
        assert entry is not None and entry.carriers == () and entry.disposition is Disposition.PENDING
        assert f"pick {pick[:12]}" in entry.reason and f"reverted by {revert[:12]}" in entry.reason
    assert carriers(ledger, c) == (pick_c,)


def test_fork_only_work_naming_upstream_prs_in_prose_is_not_a_pick(forked: Forked) -> None:
    """Fork-only `[TLX]` / `[autoWS]` commits whose own (#M) is an upstream PR number and whose
    body says an upstream PR caused or relates to the change carry nothing; a body that links the
    PR as what it ports ("Port of <link>") is still a pick."""
    p = forked()
    a = p.up(7001, "[AMD] Fix buffer load lowering for i8 pointers")
    b = p.up(7002, "[BACKEND] Hoist loads out of loops")
    c = p.up(7003, "[FRONTEND] Allow constexpr step")
    merge_fork_pr(
        p,
        "[TLX] Fix warp specialization after upstream hoisting",
        7001,
        {"tlx/ws.py": "ws = 2\n"},
        "The TLX pipeliner broke because of https://github.com/triton-lang/triton/pull/7002;\n"
        "work around it until upstream settles.",
    )
    merge_fork_pr(
        p,
        "[autoWS] Barrier placement",
        7003,
        {"aws/b.py": "b\n"},
        "Similar to https://github.com/triton-lang/triton/pull/7003 but for autoWS partitions.",
    )
    port = merge_fork_pr(
        p,
        "Port the buffer load fix",
        7050,
        {"src/pr7001.py": "# change 7001, ported\n"},
        "Port of https://github.com/triton-lang/triton/pull/7001",
    )
    ledger = p.ledger("upstream:\n  url: https://github.com/triton-lang/triton\n")
    assert carriers(ledger, a) == (port,)
    assert carriers(ledger, b) == () and carriers(ledger, c) == ()
    assert ledger.metrics.frontier == a and ledger.metrics.picked == 1


def test_bundle_title_cut_by_github_does_not_read_the_fork_number_as_listed(forked: Forked) -> None:
    """`Cherry-pick 12 upstream(#a #b #c… (#M)`: GitHub cut the list, so the last (cut) number and
    the fork's own (#M) that follows are not picks, even when M is an upstream PR number."""
    p = forked()
    a = p.up(7001, "[AMD] Fix buffer load lowering for i8 pointers")
    b = p.up(7002, "[BACKEND] Hoist loads out of loops")
    c = p.up(7003, "[FRONTEND] Allow constexpr step")
    own_number = p.up(7104, "[AMD] Tune waves per eu")
    bundle = merge_fork_pr(
        p,
        "[Cherry-pick][BUNDLE] Cherry-pick 12 upstream(#7001 #7002 #70…",
        7104,
        {"src/pr7001.py": "# change 7001\n", "src/pr7002.py": "# change 7002, bundled\n"},
    )
    ledger = p.ledger()
    assert carriers(ledger, a) == carriers(ledger, b) == (bundle,)
    assert carriers(ledger, c) == () and carriers(ledger, own_number) == ()
    assert ledger.metrics.frontier == b


def test_bundle_listing_an_upstream_revert_does_not_pick_what_it_reverts(forked: Forked) -> None:
    """A bundle's Picked list names each upstream subject with its (#N): the numbers inside it
    ('Revert "[FRONTEND] X (#7003)" (#7100)', 'Fix regression from #7002') are not picks."""
    p = forked()
    a = p.up(7001, "[AMD] Fix buffer load lowering for i8 pointers")
    b = p.up(7002, "[BACKEND] Hoist loads out of loops")
    c = p.up(7003, "[FRONTEND] Allow constexpr step", {"python/range.py": "step = 1\n"})
    revert = p.up(7100, 'Revert "[FRONTEND] Allow constexpr step (#7003)"', {"python/range.py": None})
    fix = p.up(7101, "[AMD] Fix regression from #7002")
    body = (
        "## Picked\n"
        "- [AMD] Fix buffer load lowering for i8 pointers (#7001)\n"
        '- Revert "[FRONTEND] Allow constexpr step (#7003)" (#7100)\n'
        "| #7101 | [AMD] Fix regression from #7002 |\n"
    )
    bundle = merge_fork_pr(
        p,
        "[Cherry-pick][BUNDLE] Cherry-pick 3 upstream PRs",
        7002,
        {"src/pr7001.py": "# change 7001\n", "src/pr7101.py": "# change 7101\n"},
        body,
    )
    ledger = p.ledger()
    assert carriers(ledger, a) == carriers(ledger, revert) == carriers(ledger, fix) == (bundle,)
    assert carriers(ledger, b) == () and carriers(ledger, c) == ()


def test_bundle_title_without_a_list_does_not_read_the_merge_suffix_as_one(forked: Forked) -> None:
    """`[Cherry-pick][BUNDLE] Cherry-pick 2 upstream PRs (#M)`: the (#M) GitHub appended is the
    fork's own PR, not a one-item list of upstream PRs; the body's Picked list says what is carried."""
    p = forked()
    a = p.up(7001, "[AMD] Fix buffer load lowering for i8 pointers")
    b = p.up(7002, "[BACKEND] Hoist loads out of loops")
    bundle = merge_fork_pr(
        p,
        "[Cherry-pick][BUNDLE] Cherry-pick 1 upstream PR",
        7002,
        {"src/pr7001.py": "# change 7001\n"},
        "## Picked\n- #7001\n",
    )
    ledger = p.ledger()
    assert carriers(ledger, a) == (bundle,)
    assert carriers(ledger, b) == ()


def test_pin_lines_in_prose_or_tables_are_not_picks(forked: Forked) -> None:
    """Shas and PRs on frontier / contiguous-pin lines written as prose or table rows (no
    "Label:" form) or an "Upstream range: a..b" line are positions, not picks; a listed upstream
    subject that uses the word ("[BUILD] Pin LLVM (#N)") is still picked."""
    p = forked()
    a = p.up(7001, "[AMD] Fix buffer load lowering for i8 pointers")
    hole = p.up(7002, "[BACKEND] Hoist loads out of loops")
    pin_llvm = p.up(7003, "[BUILD] Pin LLVM")
    tip = p.up(7004, "[NVIDIA] Use TMA stores")
    body = (
        "## Picked\n"
        f"- {a[:10]} [AMD] Fix buffer load lowering for i8 pointers (#7001)\n"
        f"- {pin_llvm[:10]} [BUILD] Pin LLVM (#7003)\n\n"
        f"Upstream range: {p.base[:10]}..{tip[:10]}\n"
        f"The frontier moves to {pin_llvm[:10]}; the contiguous pin halts at {hole[:10]} (#7002), the earliest hole.\n\n"
        "| pin | commit |\n|---|---|\n"
        f"| frontier | {tip[:10]} |\n| contiguous pin | {hole[:10]} |\n"
    )
    bundle = merge_fork_pr(
        p,
        "[Cherry-pick][BUNDLE] Cherry-pick 2 upstream(#7001 #7003)",
        7004,
        {"src/pr7001.py": "# change 7001\n", "src/pr7003.py": "# change 7003\n"},
        body,
    )
    ledger = p.ledger()
    assert carriers(ledger, a) == carriers(ledger, pin_llvm) == (bundle,)
    assert carriers(ledger, hole) == () and carriers(ledger, tip) == ()
    assert ledger.metrics.backlog_commits == (hole,)


def test_wont_port_heading_with_a_typographic_apostrophe_excludes_its_list(forked: Forked) -> None:
    """A body written in an editor that types "Won’t port" (U+2019) opens the same Won't-port
    section as "Won't port": the PRs listed under it are not picks."""
    p = forked()
    a = p.up(7001, "[AMD] Fix buffer load lowering for i8 pointers")
    wont = p.up(7002, "[CI] Bump the runner image")
    body = "## Picked\n- #7001\n\n## Won’t port\n- #7002 (CI only)\n"
    bundle = merge_fork_pr(
        p,
        "[Cherry-pick][BUNDLE] Cherry-pick 1 upstream(#7001)",
        900,
        {"src/pr7001.py": "# change 7001\n"},
        body,
    )
    ledger = p.ledger()
    assert carriers(ledger, a) == (bundle,)
    assert carriers(ledger, wont) == ()


def test_upstream_hotfix_tag_is_part_of_the_subject_not_an_urgent_mark(forked: Forked) -> None:
    """An upstream subject that starts with ``[Hotfix]``, picked unquoted, is an ordinary pick: the
    tag belongs to upstream's subject; only ``[URGENT]`` or a decision marks a pick urgent."""
    p = forked()
    fix = p.up(
        7050, "[Hotfix] Fix crash in the autotuner on empty configs", {"python/autotune.py": "ok = 1\n"}
    )
    fork_sha = merge_fork_pr(
        p,
        "[Cherry-pick] [Hotfix] Fix crash in the autotuner on empty configs (#7050)",
        412,
        {"python/autotune.py": "ok = 1\n"},
    )
    ledger = p.ledger()
    entry = ledger.entry(fix)
    assert entry is not None and entry.disposition is Disposition.PICKED
    assert carriers(ledger, fix) == (fork_sha,)
    assert ledger.metrics.urgent == ()
