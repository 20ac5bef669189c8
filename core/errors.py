"""The one error type a user can act on: a problem and its remedy, printed on one line."""

from __future__ import annotations


class ForksyncError(Exception):
    """A failure the user can fix. ``str()`` is one line: what is wrong, then what to do.

    The CLI prints it to stderr and exits 2; the bot turns it into a check run or a reply.
    Never put secrets (tokens, private keys) in the message.
    """

    def __init__(self, problem: str, remedy: str = "") -> None:
        self.problem = problem.strip()
        self.remedy = remedy.strip()
        super().__init__(self.one_line())

    def one_line(self) -> str:
        text = self.problem if not self.remedy else f"{self.problem}; {self.remedy}"
        return " ".join(text.split())
