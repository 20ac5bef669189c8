"""The whole-history benchmark's classification, on the vendored real messages (the mirror it
reads in full is not part of the repository)."""

from __future__ import annotations

from benchmarks.bench_fbtriton_history import cues_of, outcome_of
from tests.test_ledger_history_forms import INDEX, MESSAGES, RULES, UPSTREAM, fork_history
from workers.engine import reverts
from workers.engine.recognise import recognise
from workers.engine.recognise.model import NOTHING


def outcome(short: str, *earlier: str) -> str:
    history = fork_history(*earlier, short)
    commit = history[-1]
    undo = reverts.revert_of(commit, reverts.ForkIndex(history), INDEX, RULES)
    found = recognise(commit, INDEX, RULES) if undo is None else NOTHING
    return outcome_of(commit, found.upstream, undo, bool(found.decided))


def test_each_outcome_on_a_real_message() -> None:
    assert outcome("995ec89f9d") == "pick"
    assert outcome("b1ea7ccddf") == "resolved"  # [Cherry-pick][RESOLVED]
    assert outcome("4e02fa892b") == "bundle"
    assert outcome("11ae943bb0", "b1ea7ccddf") == "revert"
    assert outcome("6496304b51") == "fork-only"  # "Issue introduced by <link>"
    assert UPSTREAM  # the index the outcomes were read against


def test_the_cue_screen_flags_what_a_reader_would_check() -> None:
    """Cues are independent of the recognisers: a fork-only message that names an upstream PR
    in prose still has one (that is why it is read by hand), a plain fork commit has none."""
    history = fork_history("6496304b51", "25678e7df8", "da0e296130", "6e1bafc22c")
    assert cues_of(history[0]) == ["upstream pull link"]
    assert cues_of(history[1]) == ["upstream pull link"]  # "PR#913 cherry-picked upstream commit <link>"
    assert cues_of(history[2]) == ["upstream slug ref"]
    assert cues_of(history[3]) == []
    assert set(MESSAGES) >= {"6496304b51", "25678e7df8", "da0e296130", "6e1bafc22c"}
