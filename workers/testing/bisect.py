"""Automatic bisection of a trunk range: find the first bad commit in about log2(N) runs.

The range is the first-parent history ``good..bad`` (the trunk as it landed). Each probe runs a
command in a clean worktree at a midpoint and classifies it the way ``git bisect run`` does
(0 good, 125 skip, 1-127 bad, anything else aborts), or, with a metric rule, compares the
metric on the last stdout line with a reference value. Infrastructure failures and commits that
cannot be tested are skipped and a neighbour is tried instead (like ``git bisect skip``).
When bisection cannot finish (budget too small, no good run, only skipped commits left) the
report says why and ranks suspects by how much each commit's files overlap the failing test.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from core.errors import ForksyncError
from workers.engine.git import Repository
from workers.testing.checkout import CleanCheckout, CommandResult, run_command
from workers.testing.signatures import infra_reason

GOOD, BAD, SKIP = "good", "bad", "skip"

# Exit status of a command that says "this commit cannot be tested" (git bisect run's rule).
EXIT_SKIP = 125


class BisectAborted(ForksyncError):
    """The command said to stop (exit status >= 128 or a signal, as ``git bisect run`` aborts)."""


# --------------------------------------------------------------------------- judging one run


@dataclass(frozen=True)
class MetricRule:
    """Bad when ``name`` is worse than the reference by more than ``threshold`` percent."""

    name: str
    threshold: float
    direction: str = "higher"  # which way is better

    def __post_init__(self) -> None:
        if self.direction not in ("higher", "lower"):
            raise ForksyncError(f"metric direction must be higher or lower, not {self.direction!r}")
        if self.threshold < 0:
            raise ForksyncError(f"metric threshold must be a positive percentage, not {self.threshold}")


@dataclass(frozen=True)
class Reference:
    """The good value of the metric; ``band`` is the noise half-width a change must also exceed."""

    value: float
    band: float = 0.0
    source: str = ""


def worse_percent(value: float, reference: float, direction: str) -> float:
    """How much worse ``value`` is than ``reference``, in percent (negative: better)."""
    delta = (reference - value) if direction == "higher" else (value - reference)
    if reference == 0:
        # No scale to compare with: any change is infinitely large, in its own direction.
        return 0.0 if delta == 0 else math.copysign(math.inf, delta)
    return 100.0 * delta / abs(reference)


def parse_metrics(stdout: str) -> dict[str, float] | None:
    """The ``{"metrics": {...}}`` object on the last non-empty stdout line, or None without one."""
    for line in reversed(stdout.splitlines()):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            return None
        metrics = data.get("metrics") if isinstance(data, dict) else None
        if not isinstance(metrics, dict):
            return None
        out: dict[str, float] = {}
        for name, value in metrics.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                continue  # a non-number is not a measurement; the rule will report it missing
            out[str(name)] = float(value)
        return out
    return None


@dataclass(frozen=True)
class Probe:
    """One run at one commit and what it said."""

    sha: str
    outcome: str  # good | bad | skip
    reason: str
    exit_code: int | None
    duration_s: float
    metrics: Mapping[str, float] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "sha": self.sha,
            "outcome": self.outcome,
            "reason": self.reason,
            "exit_code": self.exit_code,
            "metrics": dict(self.metrics),
            "duration_s": round(self.duration_s, 3),
        }


def classify(
    sha: str,
    result: CommandResult,
    rule: MetricRule | None = None,
    reference: Reference | None = None,
    *,
    abort_on_signal: bool = True,
) -> Probe:
    """Good, bad or skip for one run, mirroring ``git bisect run`` for the exit status.

    With ``abort_on_signal`` (the CLI) a status >= 128 or a death by signal aborts, as in git;
    trunk bisection passes False so a crashing commit counts as bad. Infrastructure failures
    (disk full, network, busy GPU) and timeouts are skipped: they say nothing about the commit.
    """
    metrics = parse_metrics(result.stdout) or {}

    def probe(outcome: str, reason: str) -> Probe:
        return Probe(sha, outcome, reason, result.exit_code, result.duration_s, metrics)

    code = result.exit_code
    if result.timed_out or code is None:
        return probe(SKIP, f"timed out after {result.duration_s:.0f}s")
    if code < 0 or code >= 128:
        if abort_on_signal:
            raise BisectAborted(
                f"the command {'was killed by signal ' + str(-code) if code < 0 else 'exited ' + str(code)} "
                f"at {sha[:12]}, which aborts bisection (as in git bisect run)",
                "exit 0 for good, 1-127 (except 125) for bad, 125 to skip a commit that cannot be tested",
            )
        return probe(BAD, f"crashed (exit {code})")
    if code != 0:
        cause = infra_reason(result.output)
        if cause:
            return probe(SKIP, f"infrastructure: {cause}")
    if code == EXIT_SKIP:
        return probe(SKIP, "exit 125: cannot be tested")
    if code != 0:
        return probe(BAD, f"exit {code}")
    if rule is None:
        return probe(GOOD, "exit 0")
    if rule.name not in metrics:
        return probe(SKIP, f'no metric "{rule.name}" on the last stdout line')
    if reference is None:
        return probe(GOOD, f"{rule.name}={metrics[rule.name]:g} (reference)")
    value = metrics[rule.name]
    worse = worse_percent(value, reference.value, rule.direction)
    text = f"{rule.name}={value:g} vs {reference.value:g} ({_signed(-worse)}%)"
    if worse > rule.threshold and abs(value - reference.value) > reference.band:
        return probe(BAD, f"{text}: worse than the {rule.threshold:g}% threshold")
    return probe(GOOD, text)


def _signed(x: float) -> str:
    return f"{x:+.1f}" if math.isfinite(x) else ("+inf" if x > 0 else "-inf")


# --------------------------------------------------------------------------- the search


@dataclass(frozen=True)
class Search:
    """Where a search over ``candidates`` stopped; the culprit is ``candidates[hi]`` when found."""

    lo: int  # index of the newest commit known good (-1: the given good commit)
    hi: int  # index of the oldest commit known bad
    probes: tuple[Probe, ...]
    skipped: frozenset[int]
    stopped: str  # "" when narrowed to one commit, else "budget" or "skipped"


def search(candidates: Sequence[str], test: Callable[[str], Probe], budget: int | None = None) -> Search:
    """Binary search for the first bad commit; ``candidates[-1]`` is known bad, its parent range good.

    ``test`` runs one commit. Skipped commits are avoided by trying the nearest untested
    neighbour of the midpoint, alternating after and before (deterministic, like git's skip).
    """
    lo, hi = -1, len(candidates) - 1
    skipped: set[int] = set()
    probes: list[Probe] = []
    while hi - lo > 1:
        if budget is not None and len(probes) >= budget:
            return Search(lo, hi, tuple(probes), frozenset(skipped), "budget")
        pick = _pick(lo, hi, skipped)
        if pick is None:
            return Search(lo, hi, tuple(probes), frozenset(skipped), "skipped")
        probe = test(candidates[pick])
        probes.append(probe)
        if probe.outcome == GOOD:
            lo = pick
        elif probe.outcome == BAD:
            hi = pick
        else:
            skipped.add(pick)
    return Search(lo, hi, tuple(probes), frozenset(skipped), "")


def _pick(lo: int, hi: int, skipped: set[int]) -> int | None:
    mid = (lo + hi) // 2
    for offset in range(hi - lo):
        for pick in (mid + offset, mid - offset) if offset else (mid,):
            if lo < pick < hi and pick not in skipped:
                return pick
    return None


def runs_needed(n_candidates: int) -> int:
    """Runs a clean bisection of ``n`` candidates (the last known bad) needs: ceil(log2 n)."""
    return math.ceil(math.log2(n_candidates)) if n_candidates > 1 else 0


# --------------------------------------------------------------------------- suspects


@dataclass(frozen=True)
class Suspect:
    """A commit ranked by how much its files overlap the failing tests."""

    sha: str
    subject: str
    score: int
    files: tuple[str, ...]  # the files that overlapped, best first

    def as_json(self) -> dict[str, Any]:
        return {"sha": self.sha, "subject": self.subject, "score": self.score, "files": list(self.files)}


@dataclass(frozen=True)
class CommitFiles:
    sha: str
    subject: str
    files: tuple[str, ...]


_NOISE_TOKENS = frozenset(
    {
        "test",
        "tests",
        "py",
        "mlir",
        "cpp",
        "cc",
        "h",
        "hpp",
        "td",
        "ll",
        "lit",
        "unit",
        "src",
        "lib",
        "include",
        "python",
        "the",
        "and",
        "of",
    }
)


def test_path_of(test_id: str) -> str:
    """The path part of a test id: ``a/test_x.py::T::test_y`` → ``a/test_x.py``; ``S :: a/b.mlir`` → ``a/b.mlir``."""
    if " :: " in test_id:  # lit: "SUITE :: relative/path"
        return test_id.split(" :: ", 1)[1].strip()
    return test_id.split("::", 1)[0].strip()


def _tokens(text: str) -> set[str]:
    return {t for t in re.split(r"[^a-z0-9]+", text.lower()) if len(t) > 1 and t not in _NOISE_TOKENS}


def overlap(test_id: str, path: str) -> int:
    """How strongly a changed file relates to a test: the test itself, its directory, shared words."""
    test_path = PurePosixPath(test_path_of(test_id))
    file_path = PurePosixPath(path)
    score = 0
    if path == str(test_path) or path.endswith("/" + str(test_path)):
        score += 100
    common = 0
    for a, b in zip(test_path.parent.parts, file_path.parent.parts, strict=False):
        if a != b:
            break
        common += 1
    score += 2 * common
    names = _tokens(test_path.stem) | _tokens(
        test_id.split("::", 1)[1] if "::" in test_id and " :: " not in test_id else ""
    )
    score += 5 * len(names & _tokens(file_path.stem))
    return score


def rank_suspects(commits: Sequence[CommitFiles], test_ids: Sequence[str], limit: int = 10) -> list[Suspect]:
    """Commits (given oldest first) ordered by path overlap with the failing tests; ties newest first."""
    ranked = []
    for position, commit in enumerate(commits):
        per_file = sorted(
            ((max((overlap(t, f) for t in test_ids), default=0), f) for f in commit.files),
            key=lambda x: (-x[0], x[1]),
        )
        score = sum(s for s, _ in per_file[:3])
        ranked.append(
            (
                score,
                position,
                Suspect(commit.sha, commit.subject, score, tuple(f for s, f in per_file if s > 0)[:5]),
            )
        )
    ranked.sort(key=lambda r: (-r[0], -r[1]))
    return [s for _, _, s in ranked[:limit]]


def commit_files(repo: Repository, shas: Sequence[str]) -> list[CommitFiles]:
    """Subject and touched files of each commit (against its first parent), in the order given."""
    if not shas:
        return []
    raw = repo.text(
        "show", "--no-renames", "--first-parent", "-m", "--name-only", "--format=%x00%H%x09%s", *shas
    )
    found: dict[str, CommitFiles] = {}
    for block in raw.split("\x00")[1:]:
        head, _, rest = block.partition("\n")
        sha, _, subject = head.partition("\t")
        files = tuple(line for line in rest.splitlines() if line.strip())
        if sha not in found:
            found[sha] = CommitFiles(sha, subject, files)
    return [found[s] for s in shas if s in found]


# --------------------------------------------------------------------------- the whole run


@dataclass(frozen=True)
class BisectReport:
    """What a bisection found, or why it could not, and what to look at instead."""

    status: str  # found | ambiguous | over-budget | no-good
    good: str
    bad: str
    culprit: str | None
    runs: int
    skipped: tuple[str, ...]
    probes: tuple[Probe, ...]
    candidates: int
    remaining: tuple[str, ...]  # commits that may still be the culprit (oldest first)
    reason: str
    suspects: tuple[Suspect, ...] = ()
    reference: Reference | None = None
    elapsed_s: float = 0.0
    culprit_subject: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "culprit": self.culprit,
            "culprit_subject": self.culprit_subject,
            "runs": self.runs,
            "skipped": list(self.skipped),
            "status": self.status,
            "reason": self.reason,
            "good": self.good,
            "bad": self.bad,
            "candidates": self.candidates,
            "remaining": list(self.remaining),
            "reference": None if self.reference is None else self.reference.value,
            "suspects": [s.as_json() for s in self.suspects],
            "probes": [p.as_json() for p in self.probes],
        }


def first_parent_range(repo: Repository, good: str, bad: str) -> tuple[str, str, list[str]]:
    """Resolve ``good`` and ``bad`` and list ``good..bad`` along first parents, oldest first."""
    good_sha, bad_sha = repo.rev_parse(good), repo.rev_parse(bad)
    for name, sha in (("good", good_sha), ("bad", bad_sha)):
        if sha is None:
            raise ForksyncError(
                f"--{name} {good if name == 'good' else bad} is not a commit in {repo.path}",
                "pass a sha or ref that exists in the repository",
            )
    assert good_sha is not None and bad_sha is not None
    if good_sha == bad_sha:
        raise ForksyncError("good and bad are the same commit", "pass a good commit older than the bad one")
    if not repo.ok("merge-base", "--is-ancestor", good_sha, bad_sha):
        raise ForksyncError(
            f"good {good_sha[:12]} is not an ancestor of bad {bad_sha[:12]}",
            "pass an older good commit from the bad commit's history",
        )
    shas = repo.text("rev-list", "--first-parent", "--reverse", f"{good_sha}..{bad_sha}").split()
    return good_sha, bad_sha, shas


def bisect(
    repo: Repository,
    good: str,
    bad: str,
    command: Sequence[str],
    *,
    rule: MetricRule | None = None,
    reference: Reference | None = None,
    budget: int | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    cwd: str = ".",
    test_ids: Sequence[str] = (),
    abort_on_signal: bool = True,
    worktree_parent: Path | None = None,
) -> BisectReport:
    """Find the first bad commit of ``good..bad`` (first parents), running ``command`` at midpoints.

    With a metric ``rule`` and no ``reference``, the command first runs at ``good`` to measure
    one (that run counts). ``budget`` caps the runs; when ``ceil(log2 N)`` runs cannot fit, no
    run is made and the report ranks suspects by path overlap with ``test_ids`` instead.
    """
    started = time.monotonic()
    if not command:
        raise ForksyncError("no command to run", "give the command after --, e.g. -- python bench.py")
    good_sha, bad_sha, candidates = first_parent_range(repo, good, bad)
    needs_reference = rule is not None and reference is None
    needed = runs_needed(len(candidates)) + (1 if needs_reference else 0)

    def report(
        status: str,
        reason: str,
        lo: int = -1,
        hi: int | None = None,
        probes: Sequence[Probe] = (),
        skipped: Sequence[str] = (),
        ref: Reference | None = reference,
    ) -> BisectReport:
        top = len(candidates) - 1 if hi is None else hi
        remaining = tuple(candidates[lo + 1 : top + 1])
        culprit = remaining[0] if status == "found" else None
        suspects: tuple[Suspect, ...] = ()
        if status != "found":
            suspects = tuple(rank_suspects(commit_files(repo, remaining), test_ids))
        subject = repo.text("log", "-1", "--format=%s", culprit) if culprit else ""
        return BisectReport(
            status,
            good_sha,
            bad_sha,
            culprit,
            len(probes),
            tuple(skipped),
            tuple(probes),
            len(candidates),
            remaining,
            reason,
            suspects,
            ref,
            time.monotonic() - started,
            subject,
        )

    if budget is not None and needed > budget:
        return report(
            "over-budget",
            f"{len(candidates)} commits need {needed} runs to bisect, more than the budget of {budget}; "
            "suspects are ranked by path overlap with the failing test instead",
        )

    with CleanCheckout(repo, worktree_parent) as checkout:

        def run_at(sha: str) -> CommandResult:
            tree = checkout.at(sha)
            return run_command(command, tree / cwd, env=env, timeout=timeout)

        probes: list[Probe] = []
        ref = reference
        if rule is not None and ref is None:
            first = classify(good_sha, run_at(good_sha), rule, None, abort_on_signal=abort_on_signal)
            probes.append(first)
            if first.outcome != GOOD or rule.name not in first.metrics:
                return report(
                    "no-good",
                    f"the good commit {good_sha[:12]} gave no usable {rule.name}: {first.reason}",
                    probes=probes,
                    ref=None,
                )
            ref = Reference(first.metrics[rule.name], source=f"measured at {good_sha[:12]}")

        def test(sha: str) -> Probe:
            return classify(sha, run_at(sha), rule, ref, abort_on_signal=abort_on_signal)

        left = None if budget is None else budget - len(probes)
        found = search(candidates, test, left)
    probes.extend(found.probes)
    skipped = [candidates[i] for i in sorted(found.skipped)]
    if found.stopped == "":
        culprit = candidates[found.hi]
        why = next((p.reason for p in probes if p.sha == culprit), "the bad commit given")
        return report("found", f"first bad commit: {why}", found.lo, found.hi, probes, skipped, ref)
    if found.stopped == "budget":
        reason = f"the budget of {budget} runs ran out with {found.hi - found.lo} commits left"
        return report("over-budget", reason, found.lo, found.hi, probes, skipped, ref)
    reason = (
        f"only skipped commits are left between the last good and the first bad: the culprit is one of "
        f"{found.hi - found.lo}"
    )
    return report("ambiguous", reason, found.lo, found.hi, probes, skipped, ref)
