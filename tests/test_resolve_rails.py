"""The rails' mutation suite: a correct resolution passes; every mutation that breaks a rail is refused.

Each mutation starts from the right resolution of a real-shaped conflict (the fork renamed an
argument, upstream changed the body on the same lines) and breaks one rule. 100% must be refused,
each naming its rail; the unmutated resolution must pass (else the suite could not fail).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from workers.engine.resolve import rails
from workers.engine.resolve.merge3 import git_merge
from workers.engine.resolve.model import HunkResolution, sides_digest
from workers.engine.resolve.pipeline import Conflict, check_candidate, finish

BASE = (
    "import os\n\n\n"
    "def fork_helper():\n    return 1\n\n\n"
    "def greet(name):\n    return 'hi ' + name\n\n\n"
    "def tail():\n    return os.sep\n"
)
OURS = BASE.replace("def greet(name):\n    return 'hi ' + name", "def greet(who):\n    return 'hi ' + who")
THEIRS = BASE.replace("'hi '", "'hello '")
RIGHT = OURS.replace("'hi '", "'hello '")
CONFLICT = Conflict("app.py", BASE, OURS, THEIRS)
ACTION = "Merged the fork's rename with upstream's greeting"


def _merged():  # type: ignore[no-untyped-def]
    merged = git_merge(OURS, BASE, THEIRS)
    assert merged.hunks, "the fixture must conflict"
    return merged


def _rails_of(content: str, action: str = ACTION, checks: tuple[rails.Check, ...] = ()) -> tuple[str, ...]:
    outcome = check_candidate(
        CONFLICT, _merged(), content, strategy="test", action=action, reason="r", checks=checks
    )
    if outcome.resolved:
        return ()
    assert outcome.waiting is not None
    return tuple(f.rail for f in outcome.waiting.rails)


def test_the_right_resolution_passes_every_rail() -> None:
    """Control: without a mutation nothing is refused."""
    assert _rails_of(RIGHT) == ()


FAIL_CHECK = rails.Check(
    ".py", (sys.executable, "-c", "import sys; sys.exit('BROKEN' in open(sys.argv[1]).read())", "{file}")
)

MUTATIONS: list[tuple[str, Callable[[str], str], str]] = [
    (
        "marker left at the hunk",
        lambda s: s.replace("def greet(who):\n", "<<<<<<< ours\ndef greet(who):\n"),
        rails.MARKERS,
    ),
    ("separator left", lambda s: s.replace("def greet(who):\n", "def greet(who):\n=======\n"), rails.MARKERS),
    ("closing marker left at the end", lambda s: s + ">>>>>>> theirs\n", rails.MARKERS),
    ("diff3 base marker left", lambda s: s.replace("def greet", "||||||| base\ndef greet"), rails.MARKERS),
    (
        "edit outside the hunk (import changed)",
        lambda s: s.replace("import os", "import os.path"),
        rails.OUTSIDE_HUNKS,
    ),
    ("edit outside the hunk (line appended)", lambda s: s + "extra = 1\n", rails.OUTSIDE_HUNKS),
    (
        "clean function deleted",
        lambda s: s.replace("def tail():\n    return os.sep\n", ""),
        rails.OUTSIDE_HUNKS,
    ),
    (
        "fuzzy: clean lines re-indented",
        lambda s: s.replace("    return os.sep", "  return os.sep"),
        rails.FUZZY,
    ),
    (
        "fuzzy: trailing spaces on clean lines",
        lambda s: s.replace("import os\n", "import os   \n"),
        rails.FUZZY,
    ),
    (
        "fork symbol dropped in the hunk",
        lambda s: s.replace("def greet(who):\n    return 'hello ' + who", "pass"),
        rails.FORK_SYMBOLS,
    ),
    ("unparsable Python", lambda s: s.replace("def greet(who):", "def greet(who"), rails.PARSE),
    ("configured check fails", lambda s: s.replace("'hello '", "'BROKEN '"), rails.PARSE),
]


@pytest.mark.parametrize(("name", "mutate", "rail"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_mutation_is_refused_by_its_rail(name: str, mutate: Callable[[str], str], rail: str) -> None:
    """Each broken resolution is not proposed, and the rail it broke is named."""
    mutated = mutate(RIGHT)
    assert mutated != RIGHT, "the mutation must change something"
    refused = _rails_of(mutated, checks=(FAIL_CHECK,))
    assert rail in refused


def test_the_whole_mutation_suite_is_refused() -> None:
    """The figure the issue asks for: 100% of the mutation suite refused."""
    refused = sum(bool(_rails_of(m(RIGHT), checks=(FAIL_CHECK,))) for _, m, _ in MUTATIONS)
    assert refused == len(MUTATIONS)


def test_a_dropped_symbol_the_action_explains_passes() -> None:
    """Removing a fork symbol is allowed when the Action says why (names it)."""
    dropped = RIGHT.replace("def greet(who):\n    return 'hello ' + who", "pass")
    assert rails.FORK_SYMBOLS not in _rails_of(dropped, action="Removed greet: upstream replaced it")


def test_a_hunk_resolution_made_for_other_sides_is_fuzzy() -> None:
    """A memory or strategy answer whose digest is another hunk's is refused (no fuzzy hunks)."""
    merged = _merged()
    hunk = merged.hunks[0]
    right = HunkResolution(0, "test", tuple(RIGHT.splitlines(keepends=True)[7:9]), "r", hunk.digest())
    stale = HunkResolution(0, "test", right.lines, "r", sides_digest(hunk.ours, hunk.base, ("other\n",)))
    content = merged.assemble([list(right.lines)])
    assert finish(CONFLICT, merged, content, "t", ACTION, "r", [right], ()).resolved
    out = finish(CONFLICT, merged, content, "t", ACTION, "r", [stale], ())
    assert not out.resolved and out.waiting is not None
    assert [f.rail for f in out.waiting.rails] == [rails.FUZZY]


def test_markers_the_fork_already_had_are_not_flagged() -> None:
    """A file that legitimately contains marker lines (a fixture) does not trip the rail."""
    fixture = "<<<<<<< ours\n=======\n>>>>>>> theirs\n"
    assert rails.check_markers(fixture, fixture, fixture) is None
    assert rails.check_markers(fixture + "<<<<<<< ours\n", fixture, fixture) is not None


def test_a_check_failing_on_the_fork_too_does_not_refuse() -> None:
    """A check command that already fails on the fork's file (missing includes) says nothing about us."""
    always_fails = rails.Check(".py", (sys.executable, "-c", "raise SystemExit(1)", "{file}"))
    assert rails.check_parse("app.py", RIGHT, OURS, (always_fails,)) is None
