"""What a recognition says: the recognisers' names and the record of what one fork commit carries."""

from __future__ import annotations

from dataclasses import dataclass

TRAILER = "trailer"
CHANGE_ID = "change-id"  # Gerrit's Change-Id trailer, kept by a cherry-pick: the same change
BUNDLE = "bundle"
PR_SUBJECT = "pr-subject"
PR_FORM = "pr-form"
SUBJECT = "subject"
PR_PATTERN = "pr-pattern"
BODY_LINK = "body-link"
SAME_CHANGE = "same-change"  # same author, author date and subject
PATCH_ID = "patch-id"
MERGE = "merge"


@dataclass(frozen=True)
class Recognition:
    """What one fork commit carries: upstream shas (upstream order) and the recogniser used.

    ``found_by`` names, per upstream sha, the recogniser that found it (a bundle's title, its
    trailers and its lists each add to the union); ``recogniser`` is the strongest of them.
    ``decided`` holds the decisions the message records: (upstream sha, "deferred" or
    "wont_port", where: "trailer" or "section").
    """

    upstream: tuple[str, ...]
    recogniser: str | None
    urgent: bool = False
    found_by: tuple[str, ...] = ()
    decided: tuple[tuple[str, str, str], ...] = ()


NOTHING = Recognition((), None)
