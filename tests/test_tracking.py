"""Tracking issues: decisions from plain data, and the full lifecycle through the loopback GitHub."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from core.config import load_repo_config
from core.render import marker
from core.render.tracking import LABEL, parse_facts
from core.store import open_store
from tests.fixtures.trunk import TrunkCommit
from tests.loopback_github import LoopbackGitHub
from workers.engine.git import Repository
from workers.testing.bisect import Suspect
from workers.testing.l2 import run_trunk
from workers.testing.results import ResultStore
from workers.testing.signatures import signature
from workers.testing.tracking import (
    Action,
    CloseIssue,
    EditIssue,
    KnownIssue,
    OpenIssue,
    ReopenIssue,
    Sighting,
    TrunkReport,
    plan,
    report_from_l2,
    track,
)

REPO = "acme/fork"
CRASH = (
    "PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/\nStack dump:\n"
    " #0 0x000055d5c1a2b3c4 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (/b/triton-opt+0x1)\n"
    " #1 0x000055d5c2b3c4d5 mlir::triton::gpu::getOrder(mlir::Attribute) (/b/triton-opt+0x2b3c4d5)\n"
    "Segmentation fault (core dumped)\n"
)
PYFAIL = "E       AssertionError: Tensor-likes are not close!\n\ntest/test_matmul.py:142: AssertionError\n"


def crash_seen(sha: str, at: str, **kw: Any) -> TrunkReport:
    sig = signature(CRASH, "TRITON :: TritonGPU/combine.mlir")
    sighting = Sighting(
        sig, tests=("TRITON :: TritonGPU/combine.mlir",), detail="exit 1", excerpt=CRASH, **kw
    )
    return TrunkReport("lit-nightly", sha, at, (sighting,), owners=("alice", "bob"))


def clean(sha: str, at: str, source: str = "lit-nightly", judged: bool = True) -> TrunkReport:
    return TrunkReport(source, sha, at, (), judged=judged)


class PlainIssues:
    """Applies planned actions to plain issue records, as GitHub would (for the decision tests)."""

    def __init__(self) -> None:
        self.issues: dict[int, KnownIssue] = {}
        self.comments: list[tuple[int, str]] = []

    def run(self, report: TrunkReport, k: int = 3) -> list[Action]:
        actions = plan(list(self.issues.values()), report, k)
        for a in actions:
            if isinstance(a, OpenIssue):
                n = len(self.issues) + 1
                self.issues[n] = KnownIssue(n, "open", a.title, a.body)
            elif isinstance(a, EditIssue):
                self.issues[a.number] = replace(self.issues[a.number], title=a.title, body=a.body)
            elif isinstance(a, CloseIssue):
                self.issues[a.number] = replace(self.issues[a.number], state="closed", body=a.body)
                self.comments.append((a.number, a.comment))
            else:
                self.issues[a.number] = replace(
                    self.issues[a.number], state="open", title=a.title, body=a.body
                )
                self.comments.append((a.number, a.comment))
        return actions


# --------------------------------------------------------------------------- decisions on plain data


def test_new_signature_opens_one_issue_with_culprit_fix_and_owners() -> None:
    """A new signature → one issue: what broke, since when, culprit, revert/eject proposal, owners, labels."""
    [action] = plan(
        [],
        crash_seen(
            "c" * 40,
            "2026-11-28T02:00Z",
            culprit="d" * 40,
            culprit_subject="Rework getOrder",
            first_bad="c" * 40,
        ),
        3,
    )
    assert isinstance(action, OpenIssue)
    assert action.labels == (LABEL, "regression")
    assert action.title == "[trunk] lit-nightly: SIGSEGV in getOrder"
    body = action.body
    assert marker("signature", action.key) in body
    assert "since trunk commit | dddddddddddd" in body  # the culprit is where it started
    assert "git revert dddddddddddd" in body and "eject it into a risky chain" in body
    assert "@alice, @bob" in body and "`TRITON :: TritonGPU/combine.mlir`" in body
    facts = parse_facts(body)
    assert facts is not None and facts.occurrences == 1 and facts.culprit == "d" * 40


def test_same_signature_again_edits_in_place_without_comments() -> None:
    """The same signature next night edits the issue (occurrences, last seen); no new issue, no comment."""
    gh = PlainIssues()
    gh.run(crash_seen("a" * 40, "n1", culprit="d" * 40, culprit_subject="Rework getOrder"))
    actions = gh.run(crash_seen("b" * 40, "n2"))
    assert [type(a) for a in actions] == [EditIssue]
    assert gh.comments == [] and len(gh.issues) == 1
    facts = parse_facts(gh.issues[1].body)
    assert facts is not None
    assert (facts.occurrences, facts.last_seen, facts.last_seen_at) == (2, "b" * 40, "n2")
    assert facts.culprit == "d" * 40  # a culprit found once is kept, not forgotten by later runs
    assert "| occurrences | 2 |" in gh.issues[1].body


def test_recovery_closes_after_k_clean_runs_and_recurrence_reopens() -> None:
    """K consecutive clean runs close it with a comment; seen again, the same issue is reopened."""
    gh = PlainIssues()
    gh.run(crash_seen("a" * 40, "n1"))
    assert [type(a) for a in gh.run(clean("b" * 40, "n2"))] == [EditIssue]
    assert [type(a) for a in gh.run(clean("c" * 40, "n3"))] == [EditIssue]
    assert gh.issues[1].state == "open" and gh.comments == []
    assert "not seen in 2 of 3 runs" in gh.issues[1].body
    assert [type(a) for a in gh.run(clean("d" * 40, "n4"))] == [CloseIssue]
    assert gh.issues[1].state == "closed" and "Recovered" in gh.comments[-1][1]
    assert gh.run(clean("e" * 40, "n5")) == []  # closed issues are not touched by clean runs
    actions = gh.run(crash_seen("f" * 40, "n6"))
    assert [type(a) for a in actions] == [ReopenIssue] and len(gh.issues) == 1
    facts = parse_facts(gh.issues[1].body)
    assert facts is not None and facts.reopened == 1 and facts.first_bad == "f" * 40 and facts.clean_runs == 0
    assert "It is back" in gh.comments[-1][1]


def test_a_flaky_sighting_resets_the_recovery_count() -> None:
    """Clean, clean, seen again, clean: not K consecutive, so the issue stays open."""
    gh = PlainIssues()
    for report in (
        crash_seen("a" * 40, "1"),
        clean("b" * 40, "2"),
        clean("c" * 40, "3"),
        crash_seen("d" * 40, "4"),
        clean("e" * 40, "5"),
    ):
        gh.run(report)
    assert gh.issues[1].state == "open"


def test_skipped_runs_do_not_recover_code_issues_and_infra_gets_its_own_issue() -> None:
    """An infra run files an infra issue (own label, no blame) and leaves the code issue's count alone."""
    gh = PlainIssues()
    gh.run(crash_seen("a" * 40, "1"))
    infra = signature("OSError: [Errno 28] No space left on device", None)
    actions = gh.run(
        TrunkReport(
            "lit-nightly", "b" * 40, "2", (Sighting(infra, detail="infrastructure: disk full"),), judged=False
        )
    )
    assert [type(a) for a in actions] == [OpenIssue]
    opened = actions[0]
    assert isinstance(opened, OpenIssue)
    assert opened.labels == (LABEL, "infrastructure") and opened.title.startswith("[infra]")
    assert "Not a code regression" in opened.body and "git revert" not in opened.body
    code = parse_facts(gh.issues[1].body)
    assert code is not None and code.clean_runs == 0
    # The next normal run counts toward both recoveries.
    gh.run(clean("c" * 40, "3"))
    assert [parse_facts(i.body).clean_runs for i in gh.issues.values()] == [1, 1]  # type: ignore[union-attr]


def test_other_sources_and_foreign_issues_are_left_alone() -> None:
    """A clean run of one benchmark never edits another's issue, nor an issue without forksync's data."""
    gh = PlainIssues()
    gh.run(crash_seen("a" * 40, "1"))
    gh.issues[2] = KnownIssue(2, "open", "someone's note", "mentions forksync but has no marker")
    assert gh.run(clean("b" * 40, "2", source="matmul-sweep")) == []


def test_no_culprit_lists_ranked_suspects_and_says_why() -> None:
    """Without a culprit the body says why (budget) and ranks suspects with their overlapping files."""
    suspects = (
        Suspect("1" * 40, "Touch combine", 107, ("test/TritonGPU/combine.mlir",)),
        Suspect("2" * 40, "Docs", 0, ()),
    )
    [action] = plan(
        [],
        crash_seen(
            "a" * 40, "n1", suspects=suspects, bisect_note="64 commits need 6 runs, more than the budget of 3"
        ),
        3,
    )
    assert isinstance(action, OpenIssue)
    assert "No culprit: 64 commits need 6 runs, more than the budget of 3." in action.body
    assert "| 1 | 111111111111 Touch combine | 107 | `test/TritonGPU/combine.mlir` |" in action.body
    assert "Owners to look: @alice, @bob" in action.body


def test_duplicate_open_issues_are_folded_into_the_oldest() -> None:
    """Two open issues with one signature: the newer is closed as a duplicate, the older updated."""
    [first] = plan([], crash_seen("a" * 40, "1"), 3)
    assert isinstance(first, OpenIssue)
    known = [KnownIssue(5, "open", first.title, first.body), KnownIssue(9, "open", first.title, first.body)]
    actions = plan(known, crash_seen("b" * 40, "2"), 3)
    assert [(type(a), a.number) for a in actions if not isinstance(a, OpenIssue)] == [
        (CloseIssue, 9),
        (EditIssue, 5),
    ]
    assert plan(known, crash_seen("b" * 40, "2"), 3) == actions  # deterministic


# --------------------------------------------------------------------------- through the loopback GitHub


def test_lifecycle_through_loopback_github(loopback_github: LoopbackGitHub) -> None:
    """Filed, updated in place, closed after K clean runs, reopened on recurrence: real HTTP, PyGithub."""
    gh = loopback_github
    port = gh.adapter(gh.installation)
    comments = gh.state.comments[REPO]

    track(port, REPO, crash_seen("a" * 40, "n1", culprit="d" * 40, culprit_subject="Rework getOrder"), 2)
    [issue] = gh.state.issues[REPO].values()
    assert issue["state"] == "open" and sorted(issue["labels"]) == [LABEL, "regression"]
    number = issue["number"]

    track(port, REPO, crash_seen("b" * 40, "n2"), 2)
    assert len(gh.state.issues[REPO]) == 1 and len(comments) == 0
    assert "| occurrences | 2 |" in gh.state.issues[REPO][number]["body"]

    track(port, REPO, clean("c" * 40, "n3"), 2)
    track(port, REPO, clean("d" * 40, "n4"), 2)
    assert gh.state.issues[REPO][number]["state"] == "closed"
    assert [c["body"][:10] for c in comments.values()] == ["Recovered:"]

    track(port, REPO, crash_seen("e" * 40, "n5"), 2)
    assert gh.state.issues[REPO][number]["state"] == "open" and len(gh.state.issues[REPO]) == 1
    assert [c["body"][:10] for c in comments.values()] == ["Recovered:", "It is back"]

    infra = signature("curl: (6) Could not resolve host: github.com", None)
    track(port, REPO, TrunkReport("lit-nightly", "f" * 40, "n6", (Sighting(infra),), judged=False), 2)
    labels = sorted(tuple(i["labels"]) for i in gh.state.issues[REPO].values())
    assert labels == [(LABEL, "infrastructure"), (LABEL, "regression")]


MakeTrunk = Callable[[str, Sequence[TrunkCommit]], tuple[Path, list[str]]]

BENCH = """\
import json, pathlib
root = pathlib.Path(__file__).parent
print(json.dumps({"metrics": {"tflops": float((root / "speed").read_text())}}))
"""


def test_l2_regression_files_an_issue_naming_the_bisected_culprit(
    make_trunk: MakeTrunk, tmp_path: Path, loopback_github: LoopbackGitHub
) -> None:
    """End to end: nightly L2 runs, a planted drop, bisection, and the tracking issue on GitHub."""
    commits = [TrunkCommit("base", {"bench.py": BENCH, "speed": "100\n"})]
    for i in range(1, 25):
        commits.append(
            TrunkCommit(
                f"change {i}" if i != 17 else "Slow down the matmul epilogue",
                {"speed": "70\n" if i >= 17 else f"{100 + i % 2}\n", f"lib/m{i}.py": "x\n"},
            )
        )
    path, shas = make_trunk("fork", commits)
    config = load_repo_config(
        f"l2:\n  benchmarks:\n    - name: matmul-sweep\n      run: [{sys.executable}, bench.py]\n"
        "      owners: [carol]\n      metrics: [{name: tflops, direction: higher, threshold: 5}]\n"
    )
    store = ResultStore(open_store(None, tmp_path / "l2"))
    port = loopback_github.adapter(loopback_github.installation)
    bench = config.l2.benchmarks[0]
    for i in (0, 8, 16, 24):
        [outcome] = run_trunk(Repository(path), REPO, shas[i], config, store, recorded_at=f"night {i}")
        track(port, REPO, report_from_l2(outcome, bench, f"night {i}"), config.l2.recover_after)
    [issue] = loopback_github.state.issues[REPO].values()
    assert issue["title"] == "[trunk] matmul-sweep: tflops regressed"
    assert f"git revert {shas[17][:12]}" in issue["body"]
    assert "Slow down the matmul epilogue" in issue["body"] and "@carol" in issue["body"]
    assert "tflops=70 vs median" in issue["body"]


def test_closed_by_a_maintainer_stays_closed_until_it_recovers_and_comes_back() -> None:
    """A hand-closed issue is updated quietly while the failure goes on; after K clean runs a recurrence reopens it."""
    gh = PlainIssues()
    gh.run(crash_seen("a" * 40, "1"))
    gh.issues[1] = replace(gh.issues[1], state="closed")  # a maintainer: "known, leave it"
    assert [type(a) for a in gh.run(crash_seen("b" * 40, "2"))] == [EditIssue]
    assert gh.issues[1].state == "closed" and gh.comments == []
    facts = parse_facts(gh.issues[1].body)
    assert facts is not None and facts.occurrences == 2
    for i in range(3):
        gh.run(clean(str(i) * 40, f"c{i}"))
    assert gh.issues[1].state == "closed" and gh.run(clean("9" * 40, "c9")) == []  # recovered: counting stops
    assert [type(a) for a in gh.run(crash_seen("e" * 40, "5"))] == [ReopenIssue]


def test_huge_failures_keep_the_issue_body_under_githubs_limit() -> None:
    """A megabyte of output and a thousand failing tests still make a body under 65,536 characters."""
    sig = signature(PYFAIL, "t::x")
    tests = tuple(f"test/test_{i}.py::test_case_{i}" for i in range(1000))
    report = TrunkReport(
        "unit", "a" * 40, "n1", (Sighting(sig, tests=tests, excerpt="x" * 1_000_000 + "\n" + PYFAIL),)
    )
    [action] = plan([], report, 3)
    assert isinstance(action, OpenIssue)
    assert len(action.body) < 65_536
    assert "AssertionError: Tensor-likes are not close!" in action.body  # the tail is what is kept
    assert "… and 980 more" in action.body


PARAM_FAILS = """\
import pytest

@pytest.mark.parametrize("n", [16, 32, 64])
def test_block(n):
    assert n % 48 == 0, f"block {n} not a multiple of 48"

def test_other():
    raise ValueError("bad layout")
"""


def test_real_l1_trunk_suite_files_one_issue_per_signature(
    make_repo: Callable[[str], Any], tmp_path: Path, loopback_github: LoopbackGitHub
) -> None:
    """A real pytest suite on a trunk commit: parametrised variants share an issue, the other failure gets its own."""
    from tests.fixtures.l1 import pytest_suite
    from workers.testing.suites import run_suite
    from workers.testing.tracking import report_from_suite

    repo = make_repo("fork")
    sha = repo.commit("tests", {"tests/test_k.py": PARAM_FAILS})
    suite = pytest_suite("unit", "tests", owners=("erin",))
    outcome = run_suite(suite, Path(repo.path), tmp_path / "logs")
    assert outcome.status == "failed" and outcome.failed == 4
    report = report_from_suite(outcome, sha, "night 1")
    port = loopback_github.adapter(loopback_github.installation)
    track(port, REPO, report, 3)
    issues = sorted(loopback_github.state.issues[REPO].values(), key=lambda i: i["number"])
    assert len(issues) == 2
    assert "test_block" in issues[0]["title"] and "**Tests** (3):" in issues[0]["body"]
    assert "ValueError: bad layout" in issues[1]["title"] and "@erin" in issues[1]["body"]
    track(port, REPO, report_from_suite(outcome, sha, "night 2"), 3)
    assert len(loopback_github.state.issues[REPO]) == 2 and loopback_github.state.comments[REPO] == {}
