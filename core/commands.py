"""Comment commands (``/skip abc123 "breaks AMD"``): a pure parser that never raises.

``parse(text)`` reads a GitHub comment and returns one :class:`Command` per command line, in
order. Bad input is data, not an exception: an unknown name or a bad argument gives a
``Command`` whose ``error`` says what is wrong and how to write it (with the closest command
name when the name itself is unknown), so that the bot can always answer.

What counts as a command line (Markdown as GitHub renders it):

- a line whose first word, after at most three spaces, is ``/name`` (letters, digits, ``-``,
  ``_``); or ``@forksync name`` / ``@forksync /name`` (the mention, ``@forksync[bot]`` too).
  Names are case-insensitive. ``/tmp/foo`` is a path, not a command.
- NOT a command: lines inside fenced code blocks (```` ``` ```` or ``~~~``, three or more, the
  closing fence of the same character and at least as long; an unclosed fence runs to the end
  of the comment, as in CommonMark); lines indented by four or more columns (a tab counts as
  four) because Markdown shows them as code or as continuation text, never as the start of a
  line; quoted replies (``> …``, at any depth); lines inside HTML comments (``<!-- … -->``,
  which GitHub hides, e.g. in issue templates).

Arguments are split like a shell (``"…"`` and ``'…'`` group words, ``\\"`` and ``\\\\`` escape
inside double quotes, typographic quotes “…” ‘…’ count too) but an unbalanced quote never
fails: it runs to the end of the line. An apostrophe right after a letter or digit is part of
the word (``fork's``, ``don't``), so a free-text reason keeps it. ``key=value`` words are options where the command
knows the key; elsewhere (a free-text reason) they are plain words.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

# --------------------------------------------------------------------------- the command table


@dataclass(frozen=True)
class Spec:
    """One command: its usage line and its one-line summary (for /help and for errors)."""

    name: str
    usage: str
    summary: str
    # "write": needs write/maintain/admin on the repo; "owner": a workload owner (checked later).
    permission: str = "write"


SPECS: tuple[Spec, ...] = (
    Spec(
        "bundle",
        "/bundle [max=N] [dry-run]",
        "plan now and open or update bundle PRs (dry-run: reply with the plan)",
    ),
    Spec(
        "status",
        "/status",
        "reply with days behind, backlog, pending, frontier and pin, open bundles and chains",
        "read",
    ),
    Spec("retest", "/retest [SUITE …]", "rerun L1 on this PR (all suites, or the named ones)"),
    Spec("skip", "/skip REF REASON", "mark an upstream commit wont_port (a reason is required)"),
    Spec(
        "defer",
        "/defer REF [REASON]",
        "mark an upstream commit deferred (kept in the backlog, out of bundles)",
    ),
    Spec("urgent", "/urgent REF", "pick an upstream commit now, out of order, without moving the frontier"),
    Spec(
        "chain", "/chain REF [into ID]", "move an upstream commit into a risky chain (a new one, or chain ID)"
    ),
    Spec("unchain", "/unchain REF", "move an upstream commit out of its risky chain"),
    Spec(
        "bisect",
        "/bisect SUITE-OR-METRIC [good=SHA] [bad=SHA]",
        "bisect a trunk regression of an L2 suite or metric",
    ),
    Spec("l3", "/l3 WORKLOAD", "request an L3 run of a workload on this PR (owners sign it off)"),
    Spec(
        "signoff",
        "/signoff WORKLOAD",
        "sign off an L3 workload on this PR (the workload's owners only)",
        "owner",
    ),
    Spec(
        "resolve",
        "/resolve [agent] | /resolve show FILE",
        "resolve this pick PR's conflicts again (agent: with the configured agent); show FILE: one file's conflict and resolution",
    ),
    Spec(
        "digest",
        "/digest",
        "refresh this period's pin-update digest issue now (what landed, by area, and who should look)",
    ),
    Spec("approve", "/approve", "allow this PR from outside the organisation to run on self-hosted runners"),
    Spec("help", "/help [COMMAND]", "list the commands (or show one)", "read"),
)

SPEC_BY_NAME: Mapping[str, Spec] = {s.name: s for s in SPECS}
NAMES: tuple[str, ...] = tuple(s.name for s in SPECS)

# More than this many commands in one comment is a mistake or abuse; the rest are refused.
MAX_COMMANDS = 20

REF_HELP = "REF is an upstream sha (4 or more hex digits, a unique prefix) or #N (an upstream PR number)"


@dataclass(frozen=True)
class Command:
    """One parsed command line; ``error`` is None when it is well formed.

    ``name`` is the canonical lower-case name for known commands, or the lower-cased word
    the user wrote for unknown ones. ``args`` are the positional arguments after validation
    (e.g. ``("abc1234", "the reason")`` for /skip); ``options`` are ``key=value`` pairs in
    canonical key order (flags such as ``dry-run`` have the value ``"true"``).
    """

    name: str
    args: tuple[str, ...] = ()
    options: tuple[tuple[str, str], ...] = ()
    error: str | None = None
    raw: str = field(default="", compare=False)
    line: int = field(default=0, compare=False)
    suggestion: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def known(self) -> bool:
        return self.name in SPEC_BY_NAME

    @property
    def spec(self) -> Spec | None:
        return SPEC_BY_NAME.get(self.name)

    def option(self, key: str) -> str | None:
        return next((v for k, v in self.options if k == key), None)

    def flag(self, key: str) -> bool:
        return self.option(key) == "true"

    # Typed views of the arguments, for the handler.
    @property
    def ref(self) -> str:
        """The REF of /skip, /defer, /urgent, /chain, /unchain (normalised: lower-case sha or #N)."""
        return self.args[0] if self.args else ""

    @property
    def reason(self) -> str | None:
        return self.args[1] if len(self.args) > 1 else None

    @property
    def target(self) -> str:
        """The suite or metric of /bisect, the workload of /l3 and /signoff, the topic of /help."""
        return self.args[0] if self.args else ""

    @property
    def max_commits(self) -> int | None:
        value = self.option("max")
        return int(value) if value is not None else None

    def text(self) -> str:
        """Canonical text of the command: ``parse(cmd.text()) == [cmd]`` for a valid command."""
        words = [f"/{self.name}"]
        if self.name == "chain" and self.option("into") is not None:
            words += [quote(a) for a in self.args] + ["into", quote(self.option("into") or "")]
            return " ".join(words)
        words += [quote(a) for a in self.args]
        for key, value in self.options:
            words.append(key if value == "true" and key in _FLAGS else f"{key}={quote(value)}")
        return " ".join(words)


# --------------------------------------------------------------------------- tokenizing

_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "”": "”"}
_SAFE_WORD = re.compile(r"[^\s\"'“”‘’\\]+")


def split_words(line: str) -> list[str]:
    """Split a line into words like a shell, but never raise: an open quote runs to the end."""
    words: list[str] = []
    current: list[str] = []
    in_word = False
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch.isspace():
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
            i += 1
            continue
        in_word = True
        # An apostrophe inside a word is English, not a quote: "the fork's backend", "don't".
        if ch in _QUOTES and not (ch == "'" and current and current[-1].isalnum()):
            close = _QUOTES[ch]
            i += 1
            while i < n and line[i] != close:
                # Escapes only in ASCII double quotes, and only for the two characters that need it.
                if ch == '"' and line[i] == "\\" and i + 1 < n and line[i + 1] in '"\\':
                    i += 1
                current.append(line[i])
                i += 1
            i += 1  # the closing quote (or past the end when unbalanced)
            continue
        current.append(ch)
        i += 1
    if in_word:
        words.append("".join(current))
    return words


def quote(word: str) -> str:
    """Quote a word so that :func:`split_words` gives it back unchanged."""
    if word and _SAFE_WORD.fullmatch(word):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --------------------------------------------------------------------------- finding command lines

_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_QUOTE_LINE = re.compile(r"^ {0,3}>")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_MENTION = re.compile(r"@forksync(?:\[bot\])?(?![A-Za-z0-9_-])[:,]?", re.IGNORECASE)


def _indent(line: str) -> int:
    cols = 0
    for ch in line:
        if ch == " ":
            cols += 1
        elif ch == "\t":
            cols += 4 - cols % 4
        else:
            break
    return cols


def command_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) for each line that Markdown shows as plain text at line start."""
    fence: str | None = None
    in_html_comment = False
    for number, line in enumerate(text.splitlines(), start=1):
        if fence is not None:
            stripped = line.strip()
            if _indent(line) < 4 and stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
            continue
        if in_html_comment:
            if "-->" in line:
                in_html_comment = False
            continue
        m = _FENCE.match(line)
        # A backtick fence's info string may not contain backticks (CommonMark); then it is inline code.
        if m and not (m.group("fence")[0] == "`" and "`" in m.group("info")):
            fence = m.group("fence")
            continue
        if _indent(line) >= 4 or _QUOTE_LINE.match(line):
            continue
        stripped = line.strip()
        if stripped.startswith("<!--"):
            if "-->" not in stripped[4:]:
                in_html_comment = True
            continue
        yield number, stripped


def _split_head(line: str) -> tuple[str, str] | None:
    """(command word, rest of line) when the line is a command line, else None."""
    rest = line
    mention = _MENTION.match(rest)
    if mention:
        rest = rest[mention.end() :].lstrip()
        if rest.startswith("/"):
            rest = rest[1:]
    elif rest.startswith("/"):
        rest = rest[1:]
    else:
        return None
    m = _NAME.match(rest)
    if not m:
        return None
    after = rest[m.end() :]
    # "/tmp/foo", "/etc." or "/foo(bar)" are prose, not commands: the name must end at a space.
    if after and not after[0].isspace():
        return None
    return m.group(0), after.strip()


# --------------------------------------------------------------------------- validation

_HEX = re.compile(r"[0-9a-fA-F]+")
_PR = re.compile(r"#(?P<n>[0-9]+)")
_COMMIT_URL = re.compile(r"https?://[^/\s]+/[^/\s]+/[^/\s]+/commit/(?P<sha>[0-9a-fA-F]{4,40})/?")
_PULL_URL = re.compile(r"https?://[^/\s]+/[^/\s]+/[^/\s]+/pull/(?P<n>[0-9]+)/?")
_WORD = re.compile(r"[A-Za-z0-9_.:/+@-]+")
_FLAGS = {"dry-run"}
_FLAG_SPELLINGS = {"dry-run": "dry-run", "dry_run": "dry-run", "dryrun": "dry-run", "--dry-run": "dry-run"}


class _Bad(Exception):
    """Internal: a validation failure, turned into ``Command.error`` by :func:`parse`."""


def parse_ref(word: str) -> str:
    """Normalise a REF (sha prefix, #N, or a commit/pull URL); raise _Bad with the reason."""
    if m := _COMMIT_URL.fullmatch(word):
        return m.group("sha").lower()
    if m := _PULL_URL.fullmatch(word):
        return f"#{int(m.group('n'))}"
    if m := _PR.fullmatch(word):
        number = int(m.group("n"))
        if number < 1:
            raise _Bad(f"`{word}` is not a PR number; {REF_HELP}")
        return f"#{number}"
    if _HEX.fullmatch(word):
        if len(word) < 4:
            raise _Bad(f"`{word}` is too short to name a commit: give at least 4 hex digits")
        if len(word) > 40:
            raise _Bad(f"`{word[:48]}` is longer than a sha (40 hex digits)")
        return word.lower()
    raise _Bad(f"`{word[:48]}` is not a REF; {REF_HELP}")


def _sha(key: str, value: str) -> str:
    if not _HEX.fullmatch(value) or not 4 <= len(value) <= 40:
        raise _Bad(f"`{key}={value[:48]}` is not a commit: give 4 to 40 hex digits")
    return value.lower()


def _name_word(what: str, word: str) -> str:
    if not _WORD.fullmatch(word) or len(word) > 100:
        raise _Bad(f"`{word[:48]}` is not a valid {what} name (letters, digits and . _ - : / + @)")
    return word


def _take_options(words: list[str], known: set[str], usage: str) -> tuple[list[str], dict[str, str]]:
    """Split words into positional words and known options; unknown ``key=`` words are errors."""
    positional: list[str] = []
    options: dict[str, str] = {}
    for word in words:
        flag = _FLAG_SPELLINGS.get(word.lower())
        if flag and flag in known:
            options[flag] = "true"
            continue
        key, eq, value = word.partition("=")
        if eq and _NAME.fullmatch(key):
            k = key.lower().replace("_", "-")
            if k not in known:
                raise _Bad(f"unknown option `{key}=`; usage: `{usage}`")
            if k in options:
                raise _Bad(f"option `{k}=` given twice; usage: `{usage}`")
            if k in _FLAGS:
                if value.lower() not in ("true", "false", "yes", "no", "1", "0"):
                    raise _Bad(f"`{word}`: say `{k}` or `{k}=false`")
                if value.lower() in ("true", "yes", "1"):
                    options[k] = "true"
                continue
            if not value:
                raise _Bad(f"option `{k}=` needs a value; usage: `{usage}`")
            options[k] = value
            continue
        positional.append(word)
    return positional, options


def _no_more(spec: Spec, extra: list[str]) -> None:
    if extra:
        raise _Bad(f"unexpected `{' '.join(extra)[:60]}`; usage: `{spec.usage}`")


def _validate(spec: Spec, words: list[str]) -> tuple[tuple[str, ...], dict[str, str]]:
    """Check a known command's words; return (args, options) or raise _Bad."""
    name = spec.name
    if name in ("skip", "defer"):
        # A free-text reason: key=value words are part of it, not options.
        if not words:
            raise _Bad(f"missing REF; usage: `{spec.usage}`")
        ref = parse_ref(words[0])
        reason = " ".join(words[1:]).strip()
        if name == "skip" and not reason:
            raise _Bad(f"a reason is required, so that others know why; usage: `{spec.usage}`")
        return ((ref, reason) if reason else (ref,)), {}
    if name in ("urgent", "unchain"):
        if not words:
            raise _Bad(f"missing REF; usage: `{spec.usage}`")
        _no_more(spec, words[1:])
        return (parse_ref(words[0]),), {}
    if name == "chain":
        positional, options = _take_options(words, {"into"}, spec.usage)
        if not positional:
            raise _Bad(f"missing REF; usage: `{spec.usage}`")
        ref = parse_ref(positional[0])
        rest = positional[1:]
        if rest and rest[0].lower() == "into":
            if len(rest) < 2:
                raise _Bad(f"`into` needs a chain ID; usage: `{spec.usage}`")
            if "into" in options:
                raise _Bad(f"the chain is given twice; usage: `{spec.usage}`")
            options["into"] = rest[1]
            rest = rest[2:]
        _no_more(spec, rest)
        if "into" in options:
            options["into"] = _name_word("chain", options["into"])
        return (ref,), options
    if name == "bundle":
        positional, options = _take_options(words, {"max", "dry-run"}, spec.usage)
        _no_more(spec, positional)
        if "max" in options:
            value = options["max"]
            if not value.isdigit() or int(value) < 1 or len(value) > 6:
                raise _Bad(f"`max={value[:20]}` must be a whole number of commits, 1 or more")
            options["max"] = str(int(value))
        return (), options
    if name == "retest":
        positional, options = _take_options(words, set(), spec.usage)
        seen: list[str] = []
        for word in positional:
            suite = _name_word("suite", word)
            if suite not in seen:
                seen.append(suite)
        return tuple(seen), options
    if name == "bisect":
        positional, options = _take_options(words, {"good", "bad"}, spec.usage)
        if not positional:
            raise _Bad(f"name the L2 suite or metric to bisect; usage: `{spec.usage}`")
        _no_more(spec, positional[1:])
        for key in ("good", "bad"):
            if key in options:
                options[key] = _sha(key, options[key])
        return (_name_word("suite or metric", positional[0]),), options
    if name in ("l3", "signoff"):
        if not words:
            raise _Bad(f"name the workload; usage: `{spec.usage}`")
        _no_more(spec, words[1:])
        return (_name_word("workload", words[0]),), {}
    if name == "resolve":
        if not words:
            return (), {}
        first = words[0].lower()
        if first == "agent":
            _no_more(spec, words[1:])
            return ("agent",), {}
        if first == "show":
            if len(words) < 2:
                raise _Bad(f"name the file to show; usage: `{spec.usage}`")
            _no_more(spec, words[2:])
            path = words[1].strip().lstrip("/")
            if not path or len(path) > 500 or any(ch in path for ch in "\x00\n") or ".." in path.split("/"):
                raise _Bad(f"`{words[1][:60]}` is not a file path of the repository")
            return ("show", path), {}
        raise _Bad(f"unexpected `{words[0][:40]}`; usage: `{spec.usage}`")
    if name == "help":
        _no_more(spec, words[1:])
        if words:
            topic = words[0].lstrip("/").lower()
            if topic not in SPEC_BY_NAME:
                close = closest(topic)
                hint = f" Did you mean `/{close}`?" if close else ""
                raise _Bad(f"there is no command `/{topic[:40]}`.{hint} Try `/help`")
            return (topic,), {}
        return (), {}
    # status, approve, digest: no arguments.
    _no_more(spec, words)
    return (), {}


def closest(word: str) -> str | None:
    """The command name closest to ``word`` (a prefix, or a near spelling), or None."""
    word = word.lower()
    prefixed = [n for n in NAMES if n.startswith(word) or word.startswith(n)] if len(word) >= 2 else []
    if len(prefixed) == 1:
        return prefixed[0]
    matches = difflib.get_close_matches(word, NAMES, n=1, cutoff=0.6)
    return matches[0] if matches else None


# NUL and other C0/C1 controls (tab aside) can reach no git message, argv or log line.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def parse(text: str) -> list[Command]:
    """Every command in a comment, in order; never raises (bad input becomes ``error``)."""
    commands: list[Command] = []
    for number, line in command_lines(text if isinstance(text, str) else ""):
        head = _split_head(line)
        if head is None:
            continue
        word, rest = head
        name = word.lower()
        if len(commands) == MAX_COMMANDS:
            commands.append(
                Command(
                    name=name,
                    error=f"too many commands in one comment (at most {MAX_COMMANDS}); the rest were not run",
                    raw=line,
                    line=number,
                )
            )
            break
        spec = SPEC_BY_NAME.get(name)
        if spec is None:
            suggestion = closest(name)
            hint = f"did you mean `/{suggestion}`? " if suggestion else ""
            commands.append(
                Command(
                    name=name[:40],
                    error=f"unknown command `/{name[:40]}`; {hint}`/help` lists the commands",
                    raw=line,
                    line=number,
                    suggestion=suggestion,
                )
            )
            continue
        control = _CONTROL.search(rest)
        if control:
            commands.append(
                Command(
                    name=name,
                    raw=_CONTROL.sub(" ", line),
                    line=number,
                    error=f"the arguments hold a control character (U+{ord(control.group()):04X}); "
                    "write the command again without it",
                )
            )
            continue
        try:
            args, options = _validate(spec, split_words(rest))
        except _Bad as bad:
            commands.append(Command(name=name, error=str(bad), raw=line, line=number))
            continue
        commands.append(
            Command(name=name, args=args, options=tuple(sorted(options.items())), raw=line, line=number)
        )
    return commands
