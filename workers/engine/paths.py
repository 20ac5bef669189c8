"""Config path globs (``risk.diverged_zones``, ``risk.risky_paths``): ``**`` spans directories."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache


@lru_cache(maxsize=1024)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """``**`` spans directories, ``*``/``?``/``[...]`` stay inside one path component."""
    out = []
    i = 0
    pat = pattern.strip().lstrip("/")
    if pat.endswith("/"):
        pat += "**"
    while i < len(pat):
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif pat[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pat[i] == "?":
            out.append("[^/]")
            i += 1
        elif pat[i] == "[":
            end = pat.find("]", i + 1)
            if end < 0:
                out.append(re.escape(pat[i]))
                i += 1
            else:
                out.append(fnmatch.translate(pat[i : end + 1]).removeprefix("(?s:").removesuffix(")\\Z"))
                i = end + 1
        else:
            out.append(re.escape(pat[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def path_matches(path: str, pattern: str) -> bool:
    """Whether ``path`` matches a config glob (``lib/Foo/**``, ``**/*.td``, ``cmake/llvm-hash.txt``)."""
    return _glob_regex(pattern).match(path) is not None


def first_match(paths: Iterable[str], patterns: Sequence[str]) -> tuple[str, str] | None:
    for path in paths:
        for pattern in patterns:
            if path_matches(path, pattern):
                return path, pattern
    return None
