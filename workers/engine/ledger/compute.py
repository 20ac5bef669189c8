"""The ledger's pure core: the upstream and fork ranges (oldest first) → ``Ledger``.

``compute_ledger`` recognises what each fork commit carries (the message recognisers, reverts
and reapplies, then ``patch-id`` for the rest), settles each upstream commit's disposition (the
recorded decisions, the fork's message decisions) and computes the metrics. It reads no git: the
caller hands it history and the patch-id and file-listing callbacks
(:mod:`workers.engine.ledger.build` does, from git).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workers.engine import dispositions, forkpins, patchmatch, reverts
from workers.engine.decisions import Decisions, Disposition
from workers.engine.history import Commit
from workers.engine.ledger.records import Ledger, LedgerEntry, Pick
from workers.engine.metrics import Fact, compute_metrics
from workers.engine.recognise import recognise, recognise_merge
from workers.engine.recognise.index import UpstreamIndex
from workers.engine.recognise.model import MERGE, Recognition
from workers.engine.recognise.rules import Rules


def compute_ledger(
    upstream: Sequence[Commit],
    fork: Sequence[Commit],
    decisions: Decisions,
    rules: Rules,
    *,
    base: str,
    base_time: int,
    upstream_tip: str,
    fork_tip: str,
    patch_id: patchmatch.PatchIds,
    files_touching: patchmatch.FilesTouching | None = None,
    side: dict[str, str] | None = None,
    changes_of: patchmatch.ChangesOf | None = None,
    change_ids: Mapping[str, str] | None = None,
) -> Ledger:
    """The pure core: upstream range and fork range (oldest first) → ledger.

    ``side`` maps upstream commits merged in off the first-parent line to their merge;
    ``change_ids`` maps Gerrit Change-Ids to the upstream commits that have them.
    """
    index = UpstreamIndex(upstream, side, change_ids)
    fork_index = reverts.ForkIndex(fork)
    picks: dict[str, Recognition] = {}  # fork sha → what it carries
    active: dict[str, bool] = {}  # fork pick (or un-pick) → not reverted
    reverted_by: dict[str, str] = {}
    reverted: dict[str, str] = {}  # revert commit → fork commit it reverts
    unpicks: dict[str, tuple[str, ...]] = {}  # fork revert → upstream commits it un-picks
    merged: dict[str, str] = {}  # upstream sha reachable from the fork → itself
    said: dict[str, dispositions.MessageDecision] = {}  # decisions the fork's messages record
    unmatched: list[Commit] = []
    warnings: list[str] = list(decisions.problems)

    for commit in fork:
        if commit.sha in index.position:
            merged[commit.sha] = commit.sha
            continue
        if commit.sha in index.side:
            continue  # an upstream side commit the fork merged with its merge: carried below
        if commit.is_merge:
            # Only the PR forms of release tooling that speaks in its merges (recognise_merge).
            found = recognise_merge(commit, index, rules)
            if found.upstream:
                picks[commit.sha] = found
                active[commit.sha] = True
            continue
        undo = reverts.revert_of(commit, fork_index, index, rules)
        if undo is not None:
            if undo.fork is not None:
                reverted[commit.sha] = undo.fork
                _apply_revert(commit.sha, undo.fork, active, reverted, reverted_by)
                if undo.fork in picks and undo.fork in reverted:
                    active[undo.fork] = False  # a revert of a reapply (below) undoes it again
                orphans = [
                    u for u in unpicks.get(undo.fork, ()) if not any(u in f.upstream for f in picks.values())
                ]
                if orphans and not active.get(undo.fork):
                    # A revert of a revert whose pick nobody can name: it carries that pick again.
                    picks[commit.sha] = Recognition(
                        tuple(orphans), reverts.REAPPLY, found_by=(reverts.REAPPLY,) * len(orphans)
                    )
                    active[commit.sha] = True
            elif undo.upstream:
                unpicks[commit.sha] = undo.upstream
                active[commit.sha] = True
            elif undo.reapplies:
                picks[commit.sha] = Recognition(
                    undo.reapplies, reverts.REAPPLY, found_by=(reverts.REAPPLY,) * len(undo.reapplies)
                )
                active[commit.sha] = True
            continue  # a revert is never a pick (one of something we cannot name undoes nothing)
        found = recognise(commit, index, rules)
        for sha, disposition, where in found.decided:
            said[sha] = dispositions.MessageDecision(sha, Disposition(disposition), commit.sha, where)
        if found.upstream:
            picks[commit.sha] = found
            active[commit.sha] = True
        else:
            unmatched.append(commit)
            if found.urgent:
                picks[commit.sha] = found  # keeps the [URGENT] tag for a patch-id match below

    carried, undone = _carried(picks, active, unpicks, fork_index.position)
    for up in merged:
        carried.setdefault(up, []).append(up)

    # Where each fork commit sat in upstream order: just past the newest commit picked before it.
    expected: dict[str, int] = {}
    running = -1
    for commit in fork:
        known = picks.get(commit.sha)
        if known is not None and known.upstream:
            running = max(running, *(index.position.get(u, -1) for u in known.upstream))
        expected[commit.sha] = running + 1
    same = patchmatch.same_change(
        unmatched, upstream, carried, patch_id, files_touching, expected, changes_of
    )
    for fork_sha, up_sha, how in same:
        urgent = picks[fork_sha].urgent if fork_sha in picks else False
        picks[fork_sha] = Recognition((up_sha,), how, urgent, (how,))
        active[fork_sha] = fork_sha not in reverted_by
        if active[fork_sha]:
            carried.setdefault(up_sha, []).append(fork_sha)

    stands = dispositions.standing(decisions, said)
    urgent_by_tag = {up for sha, f in picks.items() if f.urgent and active.get(sha) for up in f.upstream}
    facts: list[Fact] = []
    for c in upstream:
        decision = stands[c.sha].decision if c.sha in stands else None
        facts.append(
            Fact(
                sha=c.sha,
                committer_time=c.committer_time,
                carried=c.sha in carried,
                urgent=c.sha in urgent_by_tag
                or (decision is not None and decision.disposition is Disposition.URGENT),
                decision=decision.disposition if decision else None,
            )
        )
    tip_time = upstream[-1].committer_time if upstream else base_time
    metrics, final = compute_metrics(
        facts,
        base=base,
        base_time=base_time,
        upstream_tip=upstream_tip,
        upstream_tip_time=tip_time,
        fork_tip=fork_tip,
    )
    frontier_pos = index.position.get(metrics.frontier, -1)
    how_found = {
        (sha, up): how for sha, f in picks.items() for up, how in zip(f.upstream, _found_by(f), strict=True)
    }
    all_carriers = _all_carriers(picks, fork_index.position)
    entries = []
    for i, (c, d) in enumerate(zip(upstream, final, strict=True)):
        sha = c.sha
        now = _in_fork_order(carried[sha], fork_index.position) if sha in carried else ()
        stand = stands.get(sha)
        if not now and stand is None and sha not in all_carriers and sha not in merged:
            why = (
                "hole behind the frontier (backlog, not marked)"
                if i < frontier_pos and d is Disposition.PENDING
                else ""
            )
            entries.append(
                LedgerEntry(
                    sha, c.subject, c.author, c.author_time, c.committer_time, c.pr_number, d, (), why
                )
            )
            continue  # most of a long upstream range: nothing carries it and nobody decided
        history = [
            (f, how_found[(f, sha)], reverted_by.get(f) or undone.get((f, sha)))
            for f in all_carriers.get(sha, ())
        ]
        entries.append(
            LedgerEntry(
                sha=sha,
                subject=c.subject,
                author=c.author,
                author_time=c.author_time,
                committer_time=c.committer_time,
                pr_number=c.pr_number,
                disposition=d,
                carriers=now,
                reason=dispositions.reason(
                    sha,
                    d,
                    carriers=history,
                    merged=sha in merged,
                    decision=stand,
                    carried=sha in carried,
                    behind_frontier=i < frontier_pos,
                ),
                recognisers=tuple(how_found.get((f, sha), MERGE) for f in now),
                decided_by=stand.source if stand is not None else None,
            )
        )
    subjects = {c.sha: c.subject for c in fork}
    pick_records = tuple(
        Pick(sha, subjects[sha], f.upstream, f.recogniser or "", reverted_by.get(sha), _found_by(f))
        for sha, f in sorted(picks.items(), key=lambda kv: fork_index.position[kv[0]])
        if f.upstream
    )
    return Ledger(
        base=base,
        upstream_tip=upstream_tip,
        fork_tip=fork_tip,
        entries=tuple(entries),
        metrics=metrics,
        picks=pick_records,
        warnings=tuple(warnings),
        fork_pins=forkpins.read_pins(fork, index),
    )


def _found_by(found: Recognition) -> tuple[str, ...]:
    return (
        found.found_by
        if len(found.found_by) == len(found.upstream)
        else (found.recogniser or "",) * len(found.upstream)
    )


def _carried(
    picks: dict[str, Recognition],
    active: dict[str, bool],
    unpicks: dict[str, tuple[str, ...]],
    position: dict[str, int],
) -> tuple[dict[str, list[str]], dict[tuple[str, str], str]]:
    """Upstream commit → active fork commits carrying it, and (pick, upstream) → the revert
    that un-picked that one commit from that pick (a revert inside a bundle)."""
    undoing: dict[str, list[str]] = {}
    for revert, ups in unpicks.items():
        if active.get(revert):
            for up in ups:
                undoing.setdefault(up, []).append(revert)
    carried: dict[str, list[str]] = {}
    undone: dict[tuple[str, str], str] = {}
    for sha, found in picks.items():
        if not active.get(sha):
            continue
        for up in found.upstream:
            later = [r for r in undoing.get(up, ()) if position[r] > position[sha]]
            if later:
                undone[(sha, up)] = later[0]
            else:
                carried.setdefault(up, []).append(sha)
    return carried, undone


def _in_fork_order(shas: Sequence[str], position: dict[str, int]) -> tuple[str, ...]:
    return tuple(shas) if len(shas) < 2 else tuple(sorted(shas, key=position.__getitem__))


def _apply_revert(
    revert: str,
    target: str,
    active: dict[str, bool],
    reverts: dict[str, str],
    reverted_by: dict[str, str],
) -> None:
    """A revert undoes a pick; a revert of that revert (a reapply) restores it."""
    depth = 0
    original = target
    while original in reverts:
        original = reverts[original]
        depth += 1
    # Even depth: the original change is undone; odd: a revert was reverted (a reapply).
    if depth % 2 == 0:
        reverted_by[original] = revert
    else:
        reverted_by.pop(original, None)
    if original in active:
        active[original] = depth % 2 == 1


def _all_carriers(picks: dict[str, Recognition], position: dict[str, int]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for sha in sorted(picks, key=position.__getitem__):
        for up in picks[sha].upstream:
            out.setdefault(up, []).append(sha)
    return out
