"""Which names a tree's source files already have: the identifiers of the fork's C/C++, Python
and TableGen files, read by one ``git grep`` that runs while the plan does other work.

A name a chain member "introduces" that the fork already has (another ``builder``, ``target``,
``add``) is no new dependency for whoever uses it: only uses of names the fork lacks link
(:func:`workers.engine.planning.as_change`). The set depends on the fork tip alone, so
:class:`TreeNames` starts git before the ledger is read and the commits analysed, and
:meth:`TreeNames.having` collects it when the plan needs it.

What counts: every match of ``[A-Za-z_][A-Za-z0-9_]*`` (ASCII, as ``re.findall`` on the bytes
finds them: ``123abc`` holds ``abc``) in the files whose extension
:data:`~workers.engine.symbols.SOURCE_EXTENSIONS` names, at any depth, extension case ignored;
files git calls binary (a NUL in the first 8,000 bytes) are skipped, as git's diffs skip them.
(``git grep -w -F`` with the wanted names as patterns was pathologically slow on a real tree, and
reading the blobs through libgit2 holds the interpreter for ~0.25 s on Triton's tree.)
"""

from __future__ import annotations

from collections.abc import Iterable

from workers.engine.git import GitError, Repository, RunningGit, start_git
from workers.engine.symbols import SOURCE_EXTENSIONS

_IDENTIFIER = "[A-Za-z_][A-Za-z0-9_]*"
# The user's grep settings must not change what git prints (line numbers, columns, file names, colour).
_GREP_SETTINGS = (
    "-c", "grep.lineNumber=false",
    "-c", "grep.column=false",
    "-c", "grep.fullName=false",
    "-c", "grep.fallbackToNoIndex=false",
    "-c", "color.grep=never",
)  # fmt: skip


class TreeNames:
    """The identifiers of ``tree``'s source files, being listed by ``git grep`` (started at once)."""

    def __init__(self, repo: Repository, tree: str) -> None:
        self.tree = tree
        pathspecs = sorted(f":(icase)*{ext}" for ext in SOURCE_EXTENSIONS)
        args = [*_GREP_SETTINGS, "grep", "--only-matching", "-h", "-I", "-E", "-e", _IDENTIFIER]
        self._git: RunningGit | None = start_git(
            repo.path,
            [*args, tree, "--", *pathspecs],
            check=False,  # git runs under LC_ALL=C (the funnel's): a non-ASCII byte is no letter
            read_ahead=True,
        )
        self._names: frozenset[bytes] | None = None

    def names(self) -> frozenset[bytes]:
        """Every identifier of the tree's source files (waits for git the first time)."""
        if self._names is None:
            git, self._git = self._git, None
            assert git is not None
            out = git.wait()
            if git.returncode not in (0, 1):  # 1: nothing matched
                raise GitError(
                    ["grep", self.tree], git.returncode or -1, git.stderr.decode("utf-8", "replace")
                )
            self._names = frozenset(out.split())
        return self._names

    def having(self, names: Iterable[str]) -> frozenset[str]:
        """Which of ``names`` occur in the tree as whole identifiers."""
        wanted = {n for n in names if n.isidentifier() and n.isascii()}
        if not wanted:
            return frozenset()
        found = self.names()
        return frozenset(n for n in wanted if n.encode() in found)

    def close(self) -> None:
        """Stop git if its answer was never collected."""
        if self._git is not None:
            self._git.abandon()
            self._git = None


def names_in_tree(repo: Repository, tree: str, names: Iterable[str]) -> frozenset[str]:
    """Which of ``names`` already occur, as whole words, in the source files of ``tree``."""
    return TreeNames(repo, tree).having(names)
