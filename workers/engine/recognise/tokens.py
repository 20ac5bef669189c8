"""The small shapes several recognisers read: a leading ``[tag]``, a trailing ``(#N)``, a sha, a
list item's bullet, a pair of quotes."""

from __future__ import annotations

import re

# Leading "[Tag]" groups of upstream's subject inside a pick title (titles.py takes the title apart).
_LEADING_TAG = re.compile(r"^\s*\[([^\]\n]*)\]\s*")
_LEADING_TAGS = re.compile(r"^(?:\s*\[[^\]\n]*\]\s*)+")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|\|)\s*")
_TRAILING_PR = re.compile(r"\s*\(#(\d+)\)\s*$")

_SHA_TOKEN = re.compile(r"(?<![0-9a-zA-Z])([0-9a-f]{7,40})(?![0-9a-zA-Z])")

_QUOTES = {"'": "'", '"': '"', "“": "”", "‘": "’", "`": "`"}
