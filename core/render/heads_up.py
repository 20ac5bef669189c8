"""The heads-up comment on a bundle, urgent or chain PR that is ready to merge and touches owned areas:
what changed upstream in each owner's area, so that they look before it lands (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.render import marker

HEADS_UP = "heads-up"


def heads_up_marker(key: str) -> str:
    return marker(HEADS_UP, key)


def heads_up_body(
    key: str,
    areas: Mapping[str, tuple[tuple[str, ...], Sequence[tuple[str, str, int | None]]]],
    upstream_url: str | None,
    kind: str = "bundle",
) -> str:
    """``areas``: pattern -> (owners, [(sha, subject, pr)]). Owners are mentioned once each.
    ``kind``: bundle | urgent | chain (a chain's conflicts were resolved to get here: said so)."""
    owners = list(dict.fromkeys(o for who, _ in areas.values() for o in who))
    why = (
        "this chain is built to its end (its conflicts resolved), its L1 passed, and it changes areas with owners"
        if kind == "chain"
        else "its L1 passed and it changes areas with owners"
    )
    lines = [
        heads_up_marker(key),
        f"**Heads-up before this lands**: {why}. Review requested from {', '.join('@' + o for o in owners)}.",
        "",
    ]
    for pattern, (who, commits) in sorted(areas.items()):
        lines.append(f"### `{pattern}` ({', '.join(f'`{o}`' for o in who)})")
        for sha, subject, pr in commits:
            link = f"[#{pr}]({upstream_url}/pull/{pr})" if pr and upstream_url else (f"#{pr}" if pr else "")
            ref = f"[`{sha[:10]}`]({upstream_url}/commit/{sha})" if upstream_url else f"`{sha[:10]}`"
            lines.append(f"- {ref} {' '.join(subject.split())} {link}".rstrip())
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
