"""Settings: the per-repository ``.github/forksync.yml`` schema, and the bot's environment.

``load_repo_config(text, source)`` validates the YAML into typed, frozen records; every error
names the file, the line and the key at fault (``forksync.yml:12: bundle.max_commits: ...``)
so that a check run or a reply can quote it. Nothing here reads settings at import time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import ForksyncError

if TYPE_CHECKING:
    import yaml

CONFIG_PATH = ".github/forksync.yml"

DEFAULT_TRAILER = "(cherry picked from commit {sha})"
DEFAULT_COMMITTER = "forksync <forksync@users.noreply.github.com>"
_IDENTITY = re.compile(r"^[^<>\n]*[^<>\s][^<>\n]* <[^<>\s]+>$")

# Regexes that find an upstream sha in a fork commit's message; group "sha" is the sha.
DEFAULT_TRAILER_PATTERNS: tuple[str, ...] = (
    r"\(cherry picked from commit (?P<sha>[0-9a-f]{7,40})\)",
    r"(?im)^Reactor (?:Cherry-pick|Backport) Revision:\s*(?P<sha>[0-9a-f]{7,40})\b",
    r"(?im)^Upstream[- ]Commit:\s*(?P<sha>[0-9a-f]{7,40})\b",
    r"(?im)^Original Commit:\s*(?P<sha>[0-9a-f]{7,40})\b",
)
# Decisions a fork records in its own messages (group "sha" is the upstream commit decided on).
DEFAULT_DEFER_PATTERNS: tuple[str, ...] = (r"(?im)^Reactor Defer(?:red)? Revision:\s*(?P<sha>[0-9a-f]{7,40})\b",)
DEFAULT_WONT_PORT_PATTERNS: tuple[str, ...] = (
    r"(?im)^Reactor Won[\x27’]?t-?Port Revision:\s*(?P<sha>[0-9a-f]{7,40})\b",
)


class ConfigError(ForksyncError):
    """The repository config is malformed; the message quotes file, line and key."""

    def __init__(self, source: str, line: int | None, key: str, problem: str, remedy: str = "") -> None:
        self.source = source
        self.line = line
        self.key = key
        where = f"{source}:{line}" if line else source
        super().__init__(
            f"{where}: {key}: {problem}" if key else f"{where}: {problem}",
            remedy or f"fix {source} (see docs/forksync.example.yml for every key)",
        )


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class UpstreamConfig:
    url: str | None = None
    branch: str = "main"


@dataclass(frozen=True)
class ForkConfig:
    branch: str = "main"


@dataclass(frozen=True)
class BundleConfig:
    max_commits: int = 30
    max_lines: int = 5000
    # Committer of the commits forksync builds ("Name <email>"); the author stays upstream's.
    committer: str = DEFAULT_COMMITTER
    # Whether a chain with built commits is opened as a [Cherry-pick][CHAIN] PR (else a tracking issue).
    chain_prs: bool = False


@dataclass(frozen=True)
class RiskConfig:
    diverged_zones: tuple[str, ...] = ()
    risky_paths: tuple[str, ...] = ()
    max_lines: int = 2000
    symbol_stoplist: tuple[str, ...] = ()
    # How a commit is found to depend on an open chain: "line" (overlapping lines, definitions,
    # picks only with it) or "file" (any shared file or symbol: the earlier rule, to compare).
    link: str = "line"
    # Lines beyond each side of a hunk that still count as overlapping (line mode).
    context_lines: int = 1
    # Whether a commit over max_lines seeds a chain by its size alone (otherwise it is bundled).
    size_seeds: bool = False


@dataclass(frozen=True)
class LedgerConfig:
    trailer: str = DEFAULT_TRAILER
    trailer_patterns: tuple[str, ...] = DEFAULT_TRAILER_PATTERNS
    # Extra regexes with a group "pr" naming an upstream PR number in a fork commit message.
    pr_patterns: tuple[str, ...] = ()
    notes_ref: str = "refs/notes/forksync"
    defer_patterns: tuple[str, ...] = DEFAULT_DEFER_PATTERNS
    wont_port_patterns: tuple[str, ...] = DEFAULT_WONT_PORT_PATTERNS


@dataclass(frozen=True)
class Suite:
    """An L1 suite: a command (list, no shell) whose results are read as JUnit XML."""

    name: str
    run: tuple[str, ...]
    cwd: str = "."
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: int = 1800
    gpu: bool = False
    format: str = "junit"
    min_tests: int = 0
    owners: tuple[str, ...] = ()


@dataclass(frozen=True)
class L1Config:
    suites: tuple[Suite, ...] = ()
    required_checks: tuple[str, ...] = ()
    baseline_fraction: float = 0.8
    canary: bool = True
    max_infra_retries: int = 2
    # Triage classes that fail the L1 check (new, flaky, broken_trunk); by default only new ones.
    fail_on: tuple[str, ...] = ("new",)
    # Automatic reruns of a suite with failures not explained by trunk (to spot flaky tests).
    flaky_reruns: int = 1
    baseline_window: int = 5  # trunk runs whose median test count is a suite's baseline
    # The staleness watchdog concludes an L1 check still queued or in progress this long past its
    # suites' timeouts as timed_out (a dead queue), and files an infrastructure issue for the queue.
    stale_margin_minutes: int = 15


@dataclass(frozen=True)
class Metric:
    name: str
    direction: str = "higher"  # "higher" or "lower" is better
    threshold: float = 5.0  # regression threshold, percent


@dataclass(frozen=True)
class Benchmark:
    """An L2 trunk test: prints ``{"metrics": {...}}`` as its last stdout line; 125 = untestable."""

    name: str
    run: tuple[str, ...]
    cwd: str = "."
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: int = 7200
    metrics: tuple[Metric, ...] = ()
    owners: tuple[str, ...] = ()


@dataclass(frozen=True)
class L2Config:
    benchmarks: tuple[Benchmark, ...] = ()
    schedule: str = "02:00"  # daily, UTC, HH:MM
    bisect_budget: int = 12
    baseline_runs: int = 7
    recover_after: int = 3


@dataclass(frozen=True)
class Workload:
    """An L3 workload: owners must sign off; an optional command runs on the l2 queue."""

    name: str
    owners: tuple[str, ...]
    run: tuple[str, ...] = ()
    reset_on_push: bool = True


@dataclass(frozen=True)
class L3Config:
    workloads: tuple[Workload, ...] = ()


@dataclass(frozen=True)
class CommandsConfig:
    rate_limit: int = 10  # commands per user per window
    rate_window_s: int = 600
    permission_cache_s: int = 60


@dataclass(frozen=True)
class ScheduleConfig:
    poll_upstream_minutes: int = 10
    snapshot_minutes: int = 60
    # Beat's L1 staleness watchdog (checks that never finish, trunk results that stop arriving).
    l1_watchdog_minutes: int = 5
    # A trunk push with no trunk L1 result recorded this long after it is reported.
    trunk_silent_minutes: int = 180


@dataclass(frozen=True)
class AgentConfig:
    """The optional conflict agent: a command (JSON in, JSON out) or an OpenAI-compatible endpoint."""

    command: tuple[str, ...] = ()
    url: str | None = None  # base URL of an OpenAI-compatible API (…/v1); POST {url}/chat/completions
    key_env: str | None = None  # name of the environment variable holding the API key
    model: str | None = None
    timeout_s: int = 300
    max_output_kb: int = 2048
    history_commits: int = 5  # the fork's recent commits per conflicted file sent along

    @property
    def configured(self) -> bool:
        return bool(self.command) or self.url is not None


@dataclass(frozen=True)
class ResolveConfig:
    """Conflict resolution: the agent, per-extension syntax checks, and where the memory lives."""

    agent: AgentConfig = AgentConfig()
    checks: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (file suffix, argv with {file})
    memory_ref: str = "refs/forksync/resolutions"
    auto_agent: bool = False  # run the agent without a /resolve agent command


@dataclass(frozen=True)
class RepoConfig:
    """Everything ``.github/forksync.yml`` can say; defaults make an empty file valid."""

    upstream: UpstreamConfig = UpstreamConfig()
    fork: ForkConfig = ForkConfig()
    bundle: BundleConfig = BundleConfig()
    risk: RiskConfig = RiskConfig()
    ledger: LedgerConfig = LedgerConfig()
    l1: L1Config = L1Config()
    l2: L2Config = L2Config()
    l3: L3Config = L3Config()
    commands: CommandsConfig = CommandsConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    resolve: ResolveConfig = ResolveConfig()

    def workload(self, name: str) -> Workload | None:
        return next((w for w in self.l3.workloads if w.name.lower() == name.lower()), None)

    def suite(self, name: str) -> Suite | None:
        return next((s for s in self.l1.suites if s.name == name), None)


# --------------------------------------------------------------------------- parsing


Path_ = tuple[str | int, ...]


class _Doc:
    """Plain data from YAML plus the line of every key, so errors can point at it."""

    def __init__(self, text: str, source: str) -> None:
        # Imported here: commands that run without a config file do not pay for importing PyYAML.
        import yaml

        self.source = source
        self.lines: dict[Path_, int] = {}
        self._loader = yaml.SafeLoader(text)
        try:
            node = self._loader.get_single_node()
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise ConfigError(source, line, "", f"not valid YAML: {problem}") from None
        finally:
            self._loader.dispose()
        self.data: Any = {} if node is None else self._convert(node, ())

    def _convert(self, node: yaml.Node, path: Path_) -> Any:
        import yaml

        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = str(self._scalar(key_node))
                self.lines[(*path, key)] = key_node.start_mark.line + 1
                out[key] = self._convert(value_node, (*path, key))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self._convert(item, (*path, i)) for i, item in enumerate(node.value)]
        return self._scalar(node)

    def _scalar(self, node: yaml.Node) -> Any:
        """The value of a composed node, as ``yaml.safe_load`` would give it (same safe constructors,
        tags resolved at compose time), without serialising and re-parsing each node."""
        return self._loader.construct_object(node, deep=True)

    def error(self, path: Path_, problem: str, remedy: str = "") -> ConfigError:
        probe = path
        while probe and probe not in self.lines:
            probe = probe[:-1]
        key = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in path).replace(".[", "[")
        return ConfigError(self.source, self.lines.get(probe), key, problem, remedy)


class _Section:
    """Typed reads from one mapping in the document, rejecting unknown keys."""

    def __init__(self, doc: _Doc, path: Path_, value: Any, known: tuple[str, ...]) -> None:
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise doc.error(path, f"expected a mapping, got {_kind(value)}")
        for key in value:
            if key not in known:
                raise doc.error((*path, key), "unknown key", f"known keys here: {', '.join(known)}")
        self.doc, self.path, self.value = doc, path, value

    def has(self, key: str) -> bool:
        return key in self.value

    def raw(self, key: str) -> Any:
        return self.value.get(key)

    def text(self, key: str, default: str | None) -> Any:
        value = self.value.get(key, default)
        if value is None and default is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.doc.error((*self.path, key), f"expected a non-empty string, got {_kind(value)}")
        return value

    def integer(self, key: str, default: int, minimum: int = 0) -> int:
        value = self.value.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.doc.error((*self.path, key), f"expected an integer, got {_kind(value)}")
        if value < minimum:
            raise self.doc.error((*self.path, key), f"must be at least {minimum}, got {value}")
        return value

    def number(self, key: str, default: float, minimum: float = 0.0) -> float:
        value = self.value.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.doc.error((*self.path, key), f"expected a number, got {_kind(value)}")
        if value < minimum:
            raise self.doc.error((*self.path, key), f"must be at least {minimum}, got {value}")
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self.value.get(key, default)
        if not isinstance(value, bool):
            raise self.doc.error((*self.path, key), f"expected true or false, got {_kind(value)}")
        return value

    def strings(self, key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        value = self.value.get(key)
        if value is None:
            return default
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise self.doc.error((*self.path, key), f"expected a list of strings, got {_kind(value)}")
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, str | int | float):
                raise self.doc.error((*self.path, key, i), f"expected a string, got {_kind(item)}")
        return tuple(str(item) for item in value)

    def command(self, key: str, required: bool) -> tuple[str, ...]:
        value = self.value.get(key)
        if value is None and not required:
            return ()
        if isinstance(value, str):
            raise self.doc.error(
                (*self.path, key),
                "expected a list of arguments, got a string",
                f'write it as a list, e.g. {key}: [{", ".join(repr(p) for p in value.split()[:3])}]',
            )
        args = self.strings(key)
        if not args:
            raise self.doc.error((*self.path, key), "expected a non-empty list of arguments")
        return args

    def env(self, key: str) -> dict[str, str]:
        value = self.value.get(key) or {}
        if not isinstance(value, dict):
            raise self.doc.error((*self.path, key), f"expected a mapping of names to values, got {_kind(value)}")
        return {str(k): str(v) for k, v in value.items()}

    def items(self, key: str) -> list[tuple[Path_, Any]]:
        value = self.value.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.doc.error((*self.path, key), f"expected a list, got {_kind(value)}")
        return [((*self.path, key, i), item) for i, item in enumerate(value)]


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})" if len(value) < 40 else "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


_TOP = ("upstream", "fork", "bundle", "risk", "ledger", "l1", "l2", "l3", "commands", "schedule", "resolve")


def load_repo_config(text: str, source: str = CONFIG_PATH) -> RepoConfig:
    """Validate ``.github/forksync.yml`` text; raise :class:`ConfigError` quoting the line at fault."""
    doc = _Doc(text, source)
    top = _Section(doc, (), doc.data, _TOP)

    up = _Section(doc, ("upstream",), top.raw("upstream"), ("url", "branch"))
    fork = _Section(doc, ("fork",), top.raw("fork"), ("branch",))
    bundle = _Section(doc, ("bundle",), top.raw("bundle"), ("max_commits", "max_lines", "committer", "chain_prs"))
    committer = bundle.text("committer", DEFAULT_COMMITTER)
    if not _IDENTITY.match(committer):
        raise doc.error(("bundle", "committer"), f"expected 'Name <email>', got {committer!r}",
                        'e.g. committer: "forksync <forksync@users.noreply.github.com>"')
    risk = _Section(
        doc, ("risk",), top.raw("risk"),
        ("diverged_zones", "risky_paths", "max_lines", "symbol_stoplist", "link", "context_lines", "size_seeds"),
    )
    link = risk.text("link", "line")
    if link not in ("line", "file"):
        raise doc.error(("risk", "link"), f"expected line or file, got {link!r}", "use link: line (the default) or link: file")
    ledger = _Section(
        doc,
        ("ledger",),
        top.raw("ledger"),
        ("trailer", "trailer_patterns", "pr_patterns", "notes_ref", "defer_patterns", "wont_port_patterns"),
    )
    trailer = ledger.text("trailer", DEFAULT_TRAILER)
    if "{sha}" not in trailer:
        raise doc.error(("ledger", "trailer"), "must contain {sha}", 'e.g. "(cherry picked from commit {sha})"')
    trailer_patterns = ledger.strings("trailer_patterns", DEFAULT_TRAILER_PATTERNS)
    pr_patterns = ledger.strings("pr_patterns")
    _check_regexes(doc, ("ledger", "trailer_patterns"), trailer_patterns, "sha")
    _check_regexes(doc, ("ledger", "pr_patterns"), pr_patterns, "pr")
    defer_patterns = ledger.strings("defer_patterns", DEFAULT_DEFER_PATTERNS)
    wont_port_patterns = ledger.strings("wont_port_patterns", DEFAULT_WONT_PORT_PATTERNS)
    _check_regexes(doc, ("ledger", "defer_patterns"), defer_patterns, "sha")
    _check_regexes(doc, ("ledger", "wont_port_patterns"), wont_port_patterns, "sha")

    cmds = _Section(doc, ("commands",), top.raw("commands"), ("rate_limit", "rate_window_s", "permission_cache_s"))
    sched = _Section(doc, ("schedule",), top.raw("schedule"),
                     ("poll_upstream_minutes", "snapshot_minutes", "l1_watchdog_minutes", "trunk_silent_minutes"))

    upstream_url = up.text("url", None)
    if upstream_url is not None:
        problem = repo_url_problem(upstream_url)
        if problem:
            raise doc.error(("upstream", "url"), problem,
                            "name the upstream as https://HOST/OWNER/REPO; mirrors and local paths are the "
                            "operator's to map (FORKSYNC_GIT_URL_MAP), never the repository's")
    for path in (("upstream", "branch"), ("fork", "branch")):
        name = (up if path[0] == "upstream" else fork).text("branch", "main")
        if not valid_branch(name):
            raise doc.error(path, f"{name!r} is not a branch name", "e.g. branch: main")

    return RepoConfig(
        upstream=UpstreamConfig(url=upstream_url, branch=up.text("branch", "main")),
        fork=ForkConfig(branch=fork.text("branch", "main")),
        bundle=BundleConfig(
            max_commits=bundle.integer("max_commits", 30, minimum=1),
            max_lines=bundle.integer("max_lines", 5000, minimum=1),
            committer=committer,
            chain_prs=bundle.flag("chain_prs", False),
        ),
        risk=RiskConfig(
            diverged_zones=risk.strings("diverged_zones"),
            risky_paths=risk.strings("risky_paths"),
            max_lines=risk.integer("max_lines", 2000, minimum=1),
            symbol_stoplist=risk.strings("symbol_stoplist"),
            link=link,
            context_lines=risk.integer("context_lines", 1, minimum=0),
            size_seeds=risk.flag("size_seeds", False),
        ),
        ledger=LedgerConfig(
            trailer=trailer,
            trailer_patterns=trailer_patterns,
            pr_patterns=pr_patterns,
            notes_ref=ledger.text("notes_ref", "refs/notes/forksync"),
            defer_patterns=defer_patterns,
            wont_port_patterns=wont_port_patterns,
        ),
        l1=_l1(doc, top.raw("l1")),
        l2=_l2(doc, top.raw("l2")),
        l3=_l3(doc, top.raw("l3")),
        commands=CommandsConfig(
            rate_limit=cmds.integer("rate_limit", 10, minimum=1),
            rate_window_s=cmds.integer("rate_window_s", 600, minimum=1),
            permission_cache_s=cmds.integer("permission_cache_s", 60),
        ),
        schedule=ScheduleConfig(
            poll_upstream_minutes=sched.integer("poll_upstream_minutes", 10, minimum=1),
            snapshot_minutes=sched.integer("snapshot_minutes", 60, minimum=1),
            l1_watchdog_minutes=sched.integer("l1_watchdog_minutes", 5, minimum=1),
            trunk_silent_minutes=sched.integer("trunk_silent_minutes", 180, minimum=1),
        ),
        resolve=_resolve(doc, top.raw("resolve")),
    )


def _resolve(doc: _Doc, raw: Any) -> ResolveConfig:
    sec = _Section(doc, ("resolve",), raw, ("agent", "checks", "memory_ref", "auto_agent"))
    agent = _Section(
        doc, ("resolve", "agent"), sec.raw("agent"),
        ("command", "url", "key_env", "model", "timeout_s", "max_output_kb", "history_commits"),
    )
    command = agent.command("command", required=False)
    url = agent.text("url", None)
    if command and url:
        raise doc.error(("resolve", "agent", "url"), "give either command or url, not both",
                        "keep the one the agent speaks")
    if url is not None and not re.match(r"^https?://", url):
        raise doc.error(("resolve", "agent", "url"), f"expected an http(s) URL, got {url!r}",
                        "e.g. url: https://api.openai.com/v1")
    key_env = agent.text("key_env", None)
    if key_env is not None and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key_env):
        raise doc.error(("resolve", "agent", "key_env"), f"expected an environment variable name, got {key_env!r}",
                        "name the variable that holds the key, e.g. key_env: OPENAI_API_KEY (never the key itself)")
    checks_raw = sec.raw("checks") or {}
    if not isinstance(checks_raw, dict):
        raise doc.error(("resolve", "checks"), f"expected a mapping of file suffixes to commands, got {_kind(checks_raw)}",
                        'e.g. checks: {".c": [cc, -fsyntax-only, "{file}"]}')
    checks_sec = _Section(doc, ("resolve", "checks"), checks_raw, tuple(str(k) for k in checks_raw))
    checks = []
    for suffix in sorted(str(k) for k in checks_raw):
        argv = checks_sec.command(suffix, required=True)
        if not any("{file}" in arg for arg in argv):
            raise doc.error(("resolve", "checks", suffix), "the command must name {file}",
                            'e.g. [cc, -fsyntax-only, "{file}"]')
        checks.append((suffix, argv))
    memory_ref = sec.text("memory_ref", "refs/forksync/resolutions")
    if not str(memory_ref).startswith("refs/"):
        raise doc.error(("resolve", "memory_ref"), f"expected a ref under refs/, got {memory_ref!r}",
                        "e.g. refs/forksync/resolutions")
    return ResolveConfig(
        agent=AgentConfig(
            command=command,
            url=url,
            key_env=key_env,
            model=agent.text("model", None),
            timeout_s=agent.integer("timeout_s", 300, minimum=1),
            max_output_kb=agent.integer("max_output_kb", 2048, minimum=1),
            history_commits=agent.integer("history_commits", 5),
        ),
        checks=tuple(checks),
        memory_ref=memory_ref,
        auto_agent=sec.flag("auto_agent", False),
    )


_HOST_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = re.compile(rf"^{_HOST_LABEL}(?:\.{_HOST_LABEL})*(?::[0-9]{{1,5}})?$")
_PATH_PART = re.compile(r"^[A-Za-z0-9_.-]+$")
_BRANCH = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)(?!.*@\{)[^\x00-\x20\x7f~^:?*\[\\]+(?<![./])(?<!\.lock)$")


def repo_url_problem(url: str) -> str | None:
    """Why ``url`` may not come from a repository's config, or None when it may.

    A repository's config is written by anyone who can push to it, so it may only name a public
    web address: ``https://host/owner/repo``. Local paths, ``file://``, ``ssh``, ``ext::`` and
    credentials in URLs could read the worker's disk, another installation's caches, or run
    commands; those are operator settings.
    """
    from urllib.parse import urlsplit

    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        return "contains whitespace or control characters"
    if not url.startswith("https://"):
        return "only https:// URLs are accepted here (not local paths, file://, ssh or git@host: forms)"
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return f"is not a valid URL ({exc})"
    if "@" in parts.netloc:
        return "must not carry a user name or credentials (the App authenticates by itself)"
    if not _HOST.match(parts.netloc):
        return f"has no valid host name ({parts.netloc!r})"
    if parts.query or parts.fragment:
        return "must not carry a query or fragment"
    segments = [seg for seg in parts.path.split("/") if seg]
    if len(segments) < 2 or any(seg in (".", "..") or not _PATH_PART.match(seg) for seg in segments):
        return "must name a repository as https://HOST/OWNER/REPO"
    return None


def valid_branch(name: str) -> bool:
    """A plain branch name git accepts, never one that reads as an option."""
    return bool(_BRANCH.match(name)) and not name.startswith("refs/")


def _check_regexes(doc: _Doc, path: Path_, patterns: tuple[str, ...], group: str) -> None:
    import re

    for i, pattern in enumerate(patterns):
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise doc.error((*path, i), f"not a valid regular expression: {exc}") from None
        if group not in compiled.groupindex:
            raise doc.error((*path, i), f"needs a named group (?P<{group}>...)")


def _unique(doc: _Doc, path: Path_, names: list[str], what: str) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise doc.error((*path, i, "name"), f"duplicate {what} name {name!r}")
        seen.add(name)


def _l1(doc: _Doc, raw: Any) -> L1Config:
    sec = _Section(
        doc, ("l1",), raw,
        ("suites", "required_checks", "baseline_fraction", "canary", "max_infra_retries", "fail_on",
         "flaky_reruns", "baseline_window", "stale_margin_minutes"),
    )
    fail_on = sec.strings("fail_on", ("new",))
    for i, klass in enumerate(fail_on):
        if klass not in ("new", "flaky", "broken_trunk"):
            raise doc.error(("l1", "fail_on", i), f"unknown triage class {klass!r}", "use new, flaky or broken_trunk")
    suites = []
    for path, item in sec.items("suites"):
        s = _Section(
            doc, path, item, ("name", "run", "cwd", "env", "timeout", "gpu", "format", "min_tests", "owners")
        )
        fmt = s.text("format", "junit")
        if fmt not in ("junit", "lit"):
            raise doc.error((*path, "format"), f"unknown result format {fmt!r}", "use junit or lit")
        suites.append(
            Suite(
                name=s.text("name", None) or _missing(doc, path, "name"),
                run=s.command("run", required=True),
                cwd=s.text("cwd", "."),
                env=s.env("env"),
                timeout=s.integer("timeout", 1800, minimum=1),
                gpu=s.flag("gpu", False),
                format=fmt,
                min_tests=s.integer("min_tests", 0),
                owners=s.strings("owners"),
            )
        )
    _unique(doc, ("l1", "suites"), [s.name for s in suites], "suite")
    return L1Config(
        suites=tuple(suites),
        required_checks=sec.strings("required_checks"),
        baseline_fraction=sec.number("baseline_fraction", 0.8),
        canary=sec.flag("canary", True),
        max_infra_retries=sec.integer("max_infra_retries", 2),
        fail_on=fail_on,
        flaky_reruns=sec.integer("flaky_reruns", 1),
        baseline_window=sec.integer("baseline_window", 5, minimum=1),
        stale_margin_minutes=sec.integer("stale_margin_minutes", 15, minimum=0),
    )


def _l2(doc: _Doc, raw: Any) -> L2Config:
    sec = _Section(doc, ("l2",), raw, ("benchmarks", "schedule", "bisect_budget", "baseline_runs", "recover_after"))
    benches = []
    for path, item in sec.items("benchmarks"):
        b = _Section(doc, path, item, ("name", "run", "cwd", "env", "timeout", "metrics", "owners"))
        metrics = []
        for mpath, mitem in b.items("metrics"):
            m = _Section(doc, mpath, mitem, ("name", "direction", "threshold"))
            direction = m.text("direction", "higher")
            if direction not in ("higher", "lower"):
                raise doc.error((*mpath, "direction"), f"must be higher or lower, got {direction!r}")
            metrics.append(
                Metric(
                    name=m.text("name", None) or _missing(doc, mpath, "name"),
                    direction=direction,
                    threshold=m.number("threshold", 5.0),
                )
            )
        benches.append(
            Benchmark(
                name=b.text("name", None) or _missing(doc, path, "name"),
                run=b.command("run", required=True),
                cwd=b.text("cwd", "."),
                env=b.env("env"),
                timeout=b.integer("timeout", 7200, minimum=1),
                metrics=tuple(metrics),
                owners=b.strings("owners"),
            )
        )
    _unique(doc, ("l2", "benchmarks"), [b.name for b in benches], "benchmark")
    schedule = sec.text("schedule", "02:00")
    hh, _, mm = schedule.partition(":")
    if not (hh.isdigit() and mm.isdigit() and int(hh) < 24 and int(mm) < 60):
        raise doc.error(("l2", "schedule"), f"expected a daily time HH:MM (UTC), got {schedule!r}")
    return L2Config(
        benchmarks=tuple(benches),
        schedule=schedule,
        bisect_budget=sec.integer("bisect_budget", 12, minimum=1),
        baseline_runs=sec.integer("baseline_runs", 7, minimum=1),
        recover_after=sec.integer("recover_after", 3, minimum=1),
    )


def _l3(doc: _Doc, raw: Any) -> L3Config:
    sec = _Section(doc, ("l3",), raw, ("workloads",))
    workloads = []
    for path, item in sec.items("workloads"):
        w = _Section(doc, path, item, ("name", "owners", "run", "reset_on_push"))
        owners = w.strings("owners")
        if not owners:
            raise doc.error((*path, "owners"), "an L3 workload needs at least one owner to sign it off")
        workloads.append(
            Workload(
                name=w.text("name", None) or _missing(doc, path, "name"),
                owners=owners,
                run=w.command("run", required=False),
                reset_on_push=w.flag("reset_on_push", True),
            )
        )
    _unique(doc, ("l3", "workloads"), [w.name for w in workloads], "workload")
    return L3Config(workloads=tuple(workloads))


def _missing(doc: _Doc, path: Path_, key: str) -> str:
    raise doc.error((*path, key), "is required")


def load_repo_config_file(path: str | Path | None) -> RepoConfig:
    """Read and validate a config file; None or an absent default path gives the defaults."""
    if path is None:
        return RepoConfig()
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ForksyncError(f"config file {p} does not exist", "pass an existing file to --config") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ForksyncError(f"cannot read config file {p}: {exc}", "check the path and its encoding") from None
    return load_repo_config(text, str(p))


# --------------------------------------------------------------------------- environment


@dataclass(frozen=True)
class Settings:
    """The bot's process settings, from the environment (or a mapping given to create_app)."""

    webhook_secret: str | None = None
    redis_url: str | None = None
    app_id: str | None = None
    private_key: str | None = field(default=None, repr=False)
    api_url: str = "https://api.github.com"
    data_dir: str = ".forksync"
    max_body_bytes: int = 25 * 1024 * 1024
    delivery_ttl_s: int = 7 * 24 * 3600
    # A webhook body must arrive within this many seconds (behind a buffering front it always does).
    body_read_timeout_s: float = 20.0
    # Bodies read at once per web process; one more waits half a second, then gets 503.
    max_concurrent_reads: int = 4
    # The shared SQL store (core/store): PostgreSQL for distributed workers; None = SQLite in data_dir.
    database_url: str | None = field(default=None, repr=False)

    @classmethod
    def from_mapping(cls, env: Mapping[str, Any] | None = None) -> Settings:
        env = os.environ if env is None else env
        key = env.get("GITHUB_PRIVATE_KEY")
        key_path = env.get("GITHUB_PRIVATE_KEY_PATH")
        if not key and key_path:
            try:
                key = Path(key_path).read_text()
            except OSError:
                # Never echo key material; the path is fine to name.
                raise ForksyncError(
                    f"cannot read GITHUB_PRIVATE_KEY_PATH={key_path}", "point it at the App's .pem file"
                ) from None
        return cls(
            webhook_secret=env.get("FORKSYNC_WEBHOOK_SECRET") or None,
            redis_url=env.get("REDIS_URL") or None,
            app_id=env.get("GITHUB_APP_ID") or None,
            private_key=key or None,
            api_url=(env.get("GITHUB_API_URL") or "https://api.github.com").rstrip("/"),
            data_dir=env.get("FORKSYNC_DATA_DIR") or ".forksync",
            max_body_bytes=int(env.get("FORKSYNC_MAX_BODY_BYTES") or 25 * 1024 * 1024),
            delivery_ttl_s=int(env.get("FORKSYNC_DELIVERY_TTL_S") or 7 * 24 * 3600),
            body_read_timeout_s=float(env.get("FORKSYNC_BODY_READ_TIMEOUT_S") or 20.0),
            max_concurrent_reads=max(1, int(env.get("FORKSYNC_MAX_CONCURRENT_READS") or 4)),
            database_url=env.get("FORKSYNC_DATABASE_URL") or None,
        )
