"""Settings: the per-repository ``.github/forksync.yml`` schema, and the bot's environment.

The schema is declared once, as the frozen dataclasses below: each field is a key, its default
is the key's default, its type says how the key is read, and ``key(...)`` metadata adds what the
type cannot say (a minimum, a check with its message and remedy, a command given as a list).
``load_repo_config(text, source)`` walks those records over the YAML (:func:`_load`), so keys,
defaults and validation cannot drift apart; ``docs/forksync.example.yml`` shows every key
(a test walks the same records). Every error names the file, the line and the key at fault
(``forksync.yml:12: bundle.max_commits: ...``) so that a check run or a reply can quote it;
a key given twice in one mapping is an error on the second one's line. Nothing here reads
settings at import time.
"""

from __future__ import annotations

import dataclasses
import os
import re
import types
import typing
from collections.abc import Callable, Mapping
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
    # Linux stable and the distributions that follow it: "commit <sha> upstream." as the body's
    # first line, or "[ Upstream commit <sha> ]"; the sha must still name an upstream commit.
    r"(?im)^commit (?P<sha>[0-9a-f]{12,40}) upstream\b",
    r"(?im)^\[ ?Upstream commit (?P<sha>[0-9a-f]{12,40}) ?\]",
)
# Decisions a fork records in its own messages (group "sha" is the upstream commit decided on).
DEFAULT_DEFER_PATTERNS: tuple[str, ...] = (
    r"(?im)^Reactor Defer(?:red)? Revision:\s*(?P<sha>[0-9a-f]{7,40})\b",
)
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


# --------------------------------------------------------------------------- the schema

Path_ = tuple[str | int, ...]
# A check of one key's value: raises doc.error(path, problem, remedy) when the value is wrong.
Check = Callable[["_Doc", Path_, Any], None]


def key(
    default: Any = dataclasses.MISSING,
    *,
    minimum: float = 0,
    check: Check | None = None,
    command: bool = False,
    factory: Callable[[], Any] | None = None,
) -> Any:
    """A config key: its default (none: required), the least number it takes, a check of its
    value, and whether a list of strings is a command (argv: a string there is refused)."""
    meta = {"minimum": minimum, "check": check, "command": command}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def _committer(doc: _Doc, path: Path_, value: str) -> None:
    if not _IDENTITY.match(value):
        raise doc.error(
            path,
            f"expected 'Name <email>', got {value!r}",
            'e.g. committer: "forksync <forksync@users.noreply.github.com>"',
        )


def _link(doc: _Doc, path: Path_, value: str) -> None:
    if value not in ("line", "file"):
        raise doc.error(
            path, f"expected line or file, got {value!r}", "use link: line (the default) or link: file"
        )


def _trailer(doc: _Doc, path: Path_, value: str) -> None:
    if "{sha}" not in value:
        raise doc.error(path, "must contain {sha}", 'e.g. "(cherry picked from commit {sha})"')


def _regexes(group: str) -> Check:
    def check(doc: _Doc, path: Path_, value: tuple[str, ...]) -> None:
        _check_regexes(doc, path, value, group)

    return check


def _upstream_url(doc: _Doc, path: Path_, value: str | None) -> None:
    problem = repo_url_problem(value) if value is not None else None
    if problem:
        raise doc.error(
            path,
            problem,
            "name the upstream as https://HOST/OWNER/REPO; mirrors and local paths are the "
            "operator's to map (FORKSYNC_GIT_URL_MAP), never the repository's",
        )


def _branch(doc: _Doc, path: Path_, value: str) -> None:
    if not valid_branch(value):
        raise doc.error(path, f"{value!r} is not a branch name", "e.g. branch: main")


def _fail_on(doc: _Doc, path: Path_, value: tuple[str, ...]) -> None:
    for i, klass in enumerate(value):
        if klass not in ("new", "flaky", "broken_trunk"):
            raise doc.error((*path, i), f"unknown triage class {klass!r}", "use new, flaky or broken_trunk")


def _result_format(doc: _Doc, path: Path_, value: str) -> None:
    if value not in ("junit", "lit"):
        raise doc.error(path, f"unknown result format {value!r}", "use junit or lit")


def _direction(doc: _Doc, path: Path_, value: str) -> None:
    if value not in ("higher", "lower"):
        raise doc.error(path, f"must be higher or lower, got {value!r}")


def _daily_time(doc: _Doc, path: Path_, value: str) -> None:
    hh, _, mm = value.partition(":")
    if not (hh.isdigit() and mm.isdigit() and int(hh) < 24 and int(mm) < 60):
        raise doc.error(path, f"expected a daily time HH:MM (UTC), got {value!r}")


_POOL = re.compile(r"^[a-z0-9][a-z0-9-]{0,30}$")


def _pools(doc: _Doc, path: Path_, value: tuple[str, ...]) -> None:
    for i, pool in enumerate(value):
        if not _POOL.match(pool):
            raise doc.error(
                (*path, i),
                f"{pool!r} is not a pool name",
                "name a runner pool in lowercase letters, digits and dashes, e.g. pools: [cpu, gpu-a]",
            )
        if pool in value[:i]:
            raise doc.error((*path, i), f"pool {pool!r} is listed twice", "list each pool once")
    if len(value) == 1:
        raise doc.error(
            path,
            "one pool compares nothing",
            "list two or more pools, or drop pools: to run the suite on its one queue",
        )


def _owners(doc: _Doc, path: Path_, value: tuple[str, ...]) -> None:
    if not value:
        raise doc.error(path, "an L3 workload needs at least one owner to sign it off")


def _http_url(doc: _Doc, path: Path_, value: str | None) -> None:
    if value is not None and not re.match(r"^https?://", value):
        raise doc.error(
            path, f"expected an http(s) URL, got {value!r}", "e.g. url: https://api.openai.com/v1"
        )


def _env_name(doc: _Doc, path: Path_, value: str | None) -> None:
    if value is not None and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", value):
        raise doc.error(
            path,
            f"expected an environment variable name, got {value!r}",
            "name the variable that holds the key, e.g. key_env: OPENAI_API_KEY (never the key itself)",
        )


def _under_refs(doc: _Doc, path: Path_, value: str) -> None:
    if not str(value).startswith("refs/"):
        raise doc.error(path, f"expected a ref under refs/, got {value!r}", "e.g. refs/forksync/resolutions")


@dataclass(frozen=True)
class UpstreamConfig:
    url: str | None = key(None, check=_upstream_url)
    branch: str = key("main", check=_branch)


@dataclass(frozen=True)
class ForkConfig:
    branch: str = key("main", check=_branch)


@dataclass(frozen=True)
class BundleConfig:
    max_commits: int = key(30, minimum=1)
    max_lines: int = key(5000, minimum=1)
    # Committer of the commits forksync builds ("Name <email>"); the author stays upstream's.
    committer: str = key(DEFAULT_COMMITTER, check=_committer)
    # Whether a chain with built commits is opened as a [Cherry-pick][CHAIN] PR (else a tracking issue).
    chain_prs: bool = True


@dataclass(frozen=True)
class RiskConfig:
    diverged_zones: tuple[str, ...] = ()
    risky_paths: tuple[str, ...] = ()
    max_lines: int = key(2000, minimum=1)
    symbol_stoplist: tuple[str, ...] = ()
    # How a commit is found to depend on an open chain: "line" (overlapping lines, definitions,
    # picks only with it) or "file" (any shared file or symbol: the earlier rule, to compare).
    link: str = key("line", check=_link)
    # Lines beyond each side of a hunk that still count as overlapping (line mode).
    context_lines: int = 1
    # Whether a commit over max_lines seeds a chain by its size alone (otherwise it is bundled).
    size_seeds: bool = False


@dataclass(frozen=True)
class LedgerConfig:
    trailer: str = key(DEFAULT_TRAILER, check=_trailer)
    trailer_patterns: tuple[str, ...] = key(DEFAULT_TRAILER_PATTERNS, check=_regexes("sha"))
    # Extra regexes with a group "pr" naming an upstream PR number in a fork commit message.
    pr_patterns: tuple[str, ...] = key((), check=_regexes("pr"))
    notes_ref: str = "refs/notes/forksync"
    defer_patterns: tuple[str, ...] = key(DEFAULT_DEFER_PATTERNS, check=_regexes("sha"))
    wont_port_patterns: tuple[str, ...] = key(DEFAULT_WONT_PORT_PATTERNS, check=_regexes("sha"))


@dataclass(frozen=True)
class Suite:
    """An L1 suite: a command (list, no shell) whose results are read as JUnit XML."""

    name: str
    run: tuple[str, ...] = key(command=True)
    cwd: str = "."
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: int = key(1800, minimum=1)
    gpu: bool = False
    format: str = key("junit", check=_result_format)
    min_tests: int = 0
    owners: tuple[str, ...] = ()
    # Runner pools that each run the suite as a job of their own (queue ``l1-<pool>``); the
    # ``forksync / L1 pools`` check compares their executed counts and outcomes (docs/l1.md).
    # Empty: the suite runs once, on its one queue (l1-cpu, or l1-gpu with gpu: true).
    pools: tuple[str, ...] = key((), check=_pools)
    # Executed tests one pool may run fewer than another before it counts as an omission.
    pool_tolerance: int = 0


@dataclass(frozen=True)
class L1Config:
    suites: tuple[Suite, ...] = ()
    required_checks: tuple[str, ...] = ()
    baseline_fraction: float = 0.8
    canary: bool = True
    max_infra_retries: int = 2
    # Triage classes that fail the L1 check (new, flaky, broken_trunk); by default only new ones.
    fail_on: tuple[str, ...] = key(("new",), check=_fail_on)
    # Automatic reruns of a suite with failures not explained by trunk (to spot flaky tests).
    flaky_reruns: int = 1
    baseline_window: int = key(5, minimum=1)  # trunk runs whose median test count is a suite's baseline
    # The staleness watchdog concludes an L1 check still queued or in progress this long past its
    # suites' timeouts as timed_out (a dead queue), and files an infrastructure issue for the queue.
    stale_margin_minutes: int = 15


@dataclass(frozen=True)
class Metric:
    name: str
    direction: str = key("higher", check=_direction)  # "higher" or "lower" is better
    threshold: float = 5.0  # regression threshold, percent


@dataclass(frozen=True)
class Benchmark:
    """An L2 trunk test: prints ``{"metrics": {...}}`` as its last stdout line; 125 = untestable."""

    name: str
    run: tuple[str, ...] = key(command=True)
    cwd: str = "."
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: int = key(7200, minimum=1)
    metrics: tuple[Metric, ...] = ()
    owners: tuple[str, ...] = ()


@dataclass(frozen=True)
class L2Config:
    benchmarks: tuple[Benchmark, ...] = ()
    schedule: str = key("02:00", check=_daily_time)  # daily, UTC, HH:MM
    bisect_budget: int = key(12, minimum=1)
    baseline_runs: int = key(7, minimum=1)
    recover_after: int = key(3, minimum=1)


@dataclass(frozen=True)
class Workload:
    """An L3 workload: owners must sign off; an optional command runs on the l2 queue."""

    name: str
    owners: tuple[str, ...] = key((), check=_owners)
    run: tuple[str, ...] = key((), command=True)
    reset_on_push: bool = True


@dataclass(frozen=True)
class L3Config:
    workloads: tuple[Workload, ...] = ()


@dataclass(frozen=True)
class CommandsConfig:
    rate_limit: int = key(10, minimum=1)  # commands per user per window
    rate_window_s: int = key(600, minimum=1)
    permission_cache_s: int = 60


@dataclass(frozen=True)
class ScheduleConfig:
    poll_upstream_minutes: int = key(10, minimum=1)
    snapshot_minutes: int = key(60, minimum=1)
    # Beat's L1 staleness watchdog (checks that never finish, trunk results that stop arriving).
    l1_watchdog_minutes: int = key(5, minimum=1)
    # A trunk push with no trunk L1 result recorded this long after it is reported.
    trunk_silent_minutes: int = key(180, minimum=1)
    # Beat (and every worker start-up): answer comment commands whose delivery was lost.
    recover_commands_minutes: int = key(10, minimum=1)


def _agent(doc: _Doc, path: Path_, agent: AgentConfig) -> None:
    if agent.command and agent.url:
        raise doc.error(
            (*path, "url"), "give either command or url, not both", "keep the one the agent speaks"
        )


@dataclass(frozen=True)
class AgentConfig:
    """The optional conflict agent: a command (JSON in, JSON out) or an OpenAI-compatible endpoint."""

    command: tuple[str, ...] = key((), command=True)
    # base URL of an OpenAI-compatible API (…/v1); POST {url}/chat/completions
    url: str | None = key(None, check=_http_url)
    key_env: str | None = key(None, check=_env_name)  # name of the environment variable holding the API key
    model: str | None = None
    timeout_s: int = key(300, minimum=1)
    max_output_kb: int = key(2048, minimum=1)
    history_commits: int = 5  # the fork's recent commits per conflicted file sent along

    @property
    def configured(self) -> bool:
        return bool(self.command) or self.url is not None


def _syntax_checks(doc: _Doc, path: Path_, raw: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``resolve.checks``: a mapping of file suffix to a command naming ``{file}``, sorted by suffix."""
    raw = raw or {}
    if not isinstance(raw, dict):
        raise doc.error(
            path,
            f"expected a mapping of file suffixes to commands, got {_kind(raw)}",
            'e.g. checks: {".c": [cc, -fsyntax-only, "{file}"]}',
        )
    section = _Section(doc, path, raw, tuple(str(k) for k in raw))
    checks = []
    for suffix in sorted(str(k) for k in raw):
        argv = section.command(suffix, required=True)
        if not any("{file}" in arg for arg in argv):
            raise doc.error(
                (*path, suffix), "the command must name {file}", 'e.g. [cc, -fsyntax-only, "{file}"]'
            )
        checks.append((suffix, argv))
    return tuple(checks)


# The deterministic rules of the resolution pipeline, by name (workers.engine.resolve.strategies.NAMED;
# a test keeps the two lists equal).
RESOLVE_RULES = (
    "identical-sides",
    "whitespace-only",
    "already-applied",
    "fork-unchanged",
    "dependency-pins",
    "list-union",
    "import-merge",
    "fork-lacks-region",
    "upstream-inserts",
    "token-merge",
)


def _rule_names(doc: _Doc, path: Path_, value: tuple[str, ...]) -> None:
    for name in value:
        if name not in RESOLVE_RULES:
            raise doc.error(path, f"unknown resolution rule {name!r}", "one of " + ", ".join(RESOLVE_RULES))


# Rules off unless a fork switches them back on (``rules_off: []``): on other projects' real backport
# conflicts they were wrong too often (benchmarks/README.md, issue 13; docs/conflicts.md "Choosing the rules").
DEFAULT_RULES_OFF = ("upstream-inserts",)


@dataclass(frozen=True)
class ResolveConfig:
    """Conflict resolution: the agent, per-extension syntax checks, and where the memory lives."""

    agent: AgentConfig = AgentConfig()
    checks: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (file suffix, argv with {file})
    memory_ref: str = key("refs/forksync/resolutions", check=_under_refs)
    auto_agent: bool = False  # run the agent without a /resolve agent command
    rules_off: tuple[str, ...] = key(
        DEFAULT_RULES_OFF, check=_rule_names
    )  # deterministic rules this fork does not want


WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _weekday(doc: _Doc, path: Path_, value: str) -> None:
    if value not in WEEKDAYS:
        raise doc.error(path, f"unknown day {value!r}", "use monday ... sunday (lower case)")


def _notify_url(doc: _Doc, path: Path_, value: str | None) -> None:
    problem = notify_url_problem(value) if value is not None else None
    if problem:
        raise doc.error(path, problem, "e.g. https://hooks.slack.com/services/...")


@dataclass(frozen=True)
class DashboardConfig:
    """The fork's dashboard page: may it be public (when the fork is), and the bad values."""

    public: bool = True
    days_behind_bad: float = 7.0
    backlog_bad: int = 50


@dataclass(frozen=True)
class DigestConfig:
    """The pin-update digest issue, and the optional outgoing webhook (Slack-compatible JSON)."""

    every_days: int = key(7, minimum=1)  # a new digest period every N days (edited in place meanwhile)
    weekday: str = key("monday", check=_weekday)  # the day a weekly period starts (UTC)
    notify_url: str | None = key(None, check=_notify_url)  # signed with FORKSYNC_NOTIFY_SECRET


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
    dashboard: DashboardConfig = DashboardConfig()
    digest: DigestConfig = DigestConfig()
    # Area owners: path glob -> logins or org/team slugs, @-mentioned in digests and asked to
    # review PRs touching their area (CODEOWNERS of the fork is read when this is empty).
    owners: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def workload(self, name: str) -> Workload | None:
        return next((w for w in self.l3.workloads if w.name.lower() == name.lower()), None)

    def suite(self, name: str) -> Suite | None:
        return next((s for s in self.l1.suites if s.name == name), None)


# Checks of a whole record (several keys together), and keys with a reader of their own.
_RECORD_CHECKS: dict[type, Check] = {AgentConfig: _agent}


def _area_owners(doc: _Doc, path: Path_, raw: Any) -> dict[str, tuple[str, ...]]:
    """``owners: {path glob: [login or org/team, ...]}``; a bare string is one owner."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise doc.error(
            path,
            f"expected a mapping of path globs to owners, got {_kind(raw)}",
            'e.g. owners: {"cmake/llvm-hash.txt": [llvm-team]}',
        )
    out: dict[str, tuple[str, ...]] = {}
    for pattern, who in raw.items():
        names = [who] if isinstance(who, str) else who
        if (
            not isinstance(names, list)
            or not names
            or not all(isinstance(n, str) and n.strip("@ ") for n in names)
        ):
            raise doc.error((*path, pattern), f"expected a login or a list of logins/teams, got {_kind(who)}")
        out[str(pattern)] = tuple(n.strip().lstrip("@") for n in names)
    return out


_READERS: dict[tuple[type, str], Callable[[_Doc, Path_, Any], Any]] = {
    (ResolveConfig, "checks"): _syntax_checks,
    (RepoConfig, "owners"): _area_owners,
}
# Lists of records whose names must be unique, and what to call them in the error.
_NAMED = {Suite: "suite", Benchmark: "benchmark", Workload: "workload"}


# --------------------------------------------------------------------------- parsing


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
                if key in out:
                    raise ConfigError(
                        self.source,
                        key_node.start_mark.line + 1,
                        _dotted((*path, key)),
                        f"duplicate key (first given on line {self.lines[(*path, key)]})",
                        "keep one of them: YAML would silently use the last",
                    )
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
        return ConfigError(self.source, self.lines.get(probe), _dotted(path), problem, remedy)


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
                f"write it as a list, e.g. {key}: [{', '.join(repr(p) for p in value.split()[:3])}]",
            )
        args = self.strings(key)
        if not args:
            raise self.doc.error((*self.path, key), "expected a non-empty list of arguments")
        return args

    def env(self, key: str) -> dict[str, str]:
        value = self.value.get(key) or {}
        if not isinstance(value, dict):
            raise self.doc.error(
                (*self.path, key), f"expected a mapping of names to values, got {_kind(value)}"
            )
        return {str(k): str(v) for k, v in value.items()}

    def items(self, key: str) -> list[tuple[Path_, Any]]:
        value = self.value.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.doc.error((*self.path, key), f"expected a list, got {_kind(value)}")
        return [((*self.path, key, i), item) for i, item in enumerate(value)]


def _dotted(path: Path_) -> str:
    """``l1.suites[0].name``: a key path as the errors write it."""
    return ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in path).replace(".[", "[")


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


def load_repo_config(text: str, source: str = CONFIG_PATH) -> RepoConfig:
    """Validate ``.github/forksync.yml`` text; raise :class:`ConfigError` quoting the line at fault."""
    doc = _Doc(text, source)
    config: RepoConfig = _load(RepoConfig, doc, (), doc.data)
    return config


def _load(cls: type, doc: _Doc, path: Path_, raw: Any) -> Any:
    """One record of the schema from the mapping ``raw`` at ``path``: every key read by its field's
    type and metadata, unknown keys refused (naming the known ones), defaults from the fields."""
    fields = dataclasses.fields(cls)
    section = _Section(doc, path, raw, tuple(f.name for f in fields))
    hints = typing.get_type_hints(cls)
    values = {f.name: _read(doc, section, f, hints[f.name], cls) for f in fields}
    record = cls(**values)
    record_check = _RECORD_CHECKS.get(cls)
    if record_check is not None:
        record_check(doc, path, record)
    return record


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _read(doc: _Doc, section: _Section, f: dataclasses.Field[Any], hint: Any, owner: type) -> Any:
    name, path = f.name, (*section.path, f.name)
    default = _default(f)
    required = default is dataclasses.MISSING
    reader = _READERS.get((owner, name))
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if reader is not None:
        value = reader(doc, path, section.raw(name))
    elif dataclasses.is_dataclass(hint):
        value = _load(typing.cast(type, hint), doc, path, section.raw(name))
    elif origin is tuple and args[-1] is Ellipsis and dataclasses.is_dataclass(args[0]):
        item_cls = typing.cast(type, args[0])
        value = tuple(_load(item_cls, doc, item_path, item) for item_path, item in section.items(name))
        if item_cls in _NAMED:
            _unique(doc, path, [item.name for item in value], _NAMED[item_cls])
    elif origin is tuple:
        value = (
            section.command(name, required=required)
            if f.metadata.get("command")
            else section.strings(name, default)
        )
    elif hint is str:
        value = (
            (section.text(name, None) or _missing(doc, section.path, name))
            if required
            else section.text(name, default)
        )
    elif origin in (typing.Union, types.UnionType) and set(args) == {str, type(None)}:
        value = section.text(name, None)
    elif hint is bool:
        value = section.flag(name, default)
    elif hint is int:
        value = section.integer(name, default, minimum=int(f.metadata.get("minimum", 0)))
    elif hint is float:
        value = section.number(name, default, minimum=float(f.metadata.get("minimum", 0)))
    elif origin is Mapping:
        value = section.env(name)
    else:  # pragma: no cover - a schema field of a type this reader does not know is a bug here
        raise TypeError(f"config key {'.'.join(map(str, path))}: no reader for {hint!r}")
    check = f.metadata.get("check")
    if check is not None:
        check(doc, path, value)
    return value


_HOST_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = re.compile(rf"^{_HOST_LABEL}(?:\.{_HOST_LABEL})*(?::[0-9]{{1,5}})?$")
_PATH_PART = re.compile(r"^[A-Za-z0-9_.-]+$")
_BRANCH = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)(?!.*@\{)[^\x00-\x20\x7f~^:?*\[\\]+(?<![./])(?<!\.lock)$")


def notify_url_problem(url: str) -> str | None:
    """Why ``url`` may not be a fork's outgoing webhook (anyone who can push writes the config,
    and the workers POST to it): https only, a host name, no credentials, not this machine."""
    from urllib.parse import urlsplit

    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url) or not url.startswith("https://"):
        return "expected an https:// URL without spaces"
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return f"is not a valid URL ({exc})"
    host = (parts.hostname or "").lower()
    if "@" in parts.netloc or not _HOST.match(parts.netloc):
        return "must name a host, without a user name or credentials"
    if host == "localhost" or host.endswith(".localhost") or re.fullmatch(r"[0-9.]+", host):
        return "must name a public host by its DNS name, not localhost or an IP address"
    return None


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
        raise ForksyncError(
            f"cannot read config file {p}: {exc}", "check the path and its encoding"
        ) from None
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
    # The dashboard (docs/dashboard.md): GitHub's web origin (OAuth pages, links), the App's
    # OAuth client, the cookie-signing key, whether public forks' pages need no login, and the
    # bearer token /metrics asks for (None: open).
    web_url: str = "https://github.com"
    oauth_client_id: str | None = None
    oauth_client_secret: str | None = field(default=None, repr=False)
    session_secret: str | None = field(default=None, repr=False)
    dashboard_public: bool = True
    metrics_token: str | None = field(default=None, repr=False)

    @property
    def numeric_app_id(self) -> int | None:
        """GITHUB_APP_ID as an integer (to tell forksync's check runs and suites from other Apps'),
        None when unset or not a number."""
        try:
            return int(self.app_id) if self.app_id else None
        except ValueError:
            return None

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
            web_url=(env.get("GITHUB_WEB_URL") or "https://github.com").rstrip("/"),
            oauth_client_id=env.get("GITHUB_OAUTH_CLIENT_ID") or None,
            oauth_client_secret=env.get("GITHUB_OAUTH_CLIENT_SECRET") or None,
            session_secret=env.get("FORKSYNC_SESSION_SECRET") or None,
            dashboard_public=str(env.get("FORKSYNC_DASHBOARD_PUBLIC") or "1").lower()
            not in ("0", "false", "no", "off"),
            metrics_token=env.get("FORKSYNC_METRICS_TOKEN") or None,
        )
