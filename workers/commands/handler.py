"""The ``forksync.on_comment`` handler: read the comment fresh, gate it, run each command, answer once.

Flow (every command is answered; never silence, never a stack trace in a comment):

1. re-read the comment through the adapter (webhooks are triggers, not data); ignore our own
   and other bots' comments, comments without commands, and comments already answered (a
   redelivered task finds the comment in the answered index of the store, ``AnswerIndex``,
   without reading the thread, and stops: commands never run twice; without an index, or when
   the index cannot tell, it looks for the marked reply in the thread);
2. react 👀;
3. read ``.github/forksync.yml`` (a bad config answers 😕 quoting the line at fault);
4. per-user rate limit (``commands.rate_limit`` per ``commands.rate_window_s``);
5. per command: parse errors, permission (write/maintain/admin, cached briefly; ``/signoff``
   the workload's owners), then its action (``workers/commands/actions.py``);
6. one reply listing each outcome (edited in place if it exists), and 👍/🚀/😕 reactions.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from core.commands import Command, parse
from core.config import CONFIG_PATH, ConfigError, RepoConfig, load_repo_config
from core.errors import ForksyncError
from core.github.errors import GitHubNotFoundError
from core.github.records import CommentInfo, PullRequestInfo
from core.github.roles import Collaborators, Comments, Contents, PullReader
from core.render import carries_marker
from core.render import commands as render
from workers.commands.gate import Gate, can_write

log = logging.getLogger("forksync.commands")


# --------------------------------------------------------------------------- what the handler reads


class CommandGitHub(Comments, Contents, Collaborators, PullReader, Protocol):
    """The roles of ``core.github.roles`` the comment commands need (``GitHubAdapter`` has them all).

    Actions that can do more when the adapter can (check runs, labels, the PR's text, bundle PRs)
    test for the ``Checks``, ``Issues`` or ``Pulls`` role at run time; a test fake may leave them out.
    """


def read_comment(gh: Comments, repo: str, comment_id: int) -> CommentInfo | None:
    """Comment ``comment_id`` as GitHub holds it now, or None when it was deleted."""
    try:
        return gh.get_comment(repo, comment_id)
    except GitHubNotFoundError:
        return None


def bot_comment(
    gh: Comments, repo: str, issue_number: int, marker: str, own_login: str | None
) -> CommentInfo | None:
    """The newest comment on #issue_number carrying ``marker`` written by a bot: by our own bot only
    when ``own_login`` is known (another App's bot may echo text a user wrote). A marker in a user's
    comment never counts, so nobody can forge "already answered" or "approved"."""
    found = None
    for info in gh.list_comments(repo, issue_number):
        if not carries_marker(info.body, marker):
            continue
        if own_login and info.author.lower() != own_login.lower():
            continue
        if is_bot(info.author, info.author_type, own_login):
            found = info
    return found


def post_comment(
    gh: Comments, repo: str, issue_number: int, body: str, existing: CommentInfo | None = None
) -> CommentInfo:
    """Edit ``existing`` in place, else post a new comment on #issue_number."""
    if existing is not None:
        return gh.edit_comment(repo, existing.id, body)
    return gh.create_comment(repo, issue_number, body)


class AnswerIndex(Protocol):
    """Which comments the bot answered (``workers/adapters/answers.py``, the SQL store): "already
    answered" without paging through the thread."""

    def lookup(self, repo: str, comment_id: int) -> Any:
        """The comment's record (``state``: ``replying``/``answered``, ``body``, ``reactions``), False
        when it has none, None when the index cannot tell."""
        ...

    def replying(
        self, repo: str, comment_id: int, issue_number: int, body: str, reactions: tuple[str, ...]
    ) -> None: ...

    def answered(self, repo: str, comment_id: int, issue_number: int) -> None: ...


@dataclass(frozen=True)
class CommentTask:
    """The task's primitive kwargs (core/tasknames.py, ``ON_COMMENT``)."""

    installation_id: int | None
    repo: str
    issue_number: int
    comment_id: int
    author: str
    author_type: str = "User"
    is_pull_request: bool = False
    delivery: str = ""


@dataclass
class Context:
    """Everything an action needs; ``services`` holds the feature hooks (see actions.py)."""

    task: CommentTask
    author: str
    config: RepoConfig
    gh: CommandGitHub
    services: Any
    now: datetime
    # The App's bot login: only its marked comments count (None: any bot's, see ``bot_comment``).
    own_login: str | None = None
    # Set by actions that need the pull request, read once.
    _pull: PullRequestInfo | None = field(default=None, repr=False)

    @property
    def repo(self) -> str:
        return self.task.repo

    def pull(self) -> PullRequestInfo:
        if self._pull is None:
            self._pull = self.gh.get_pull_request(self.repo, self.task.issue_number)
        return self._pull


Action = Callable[[Context, Command], render.Outcome]


@dataclass(frozen=True)
class Answer:
    """What the handler did: the reply body and the reactions it added (for logs and tests)."""

    body: str
    reactions: tuple[str, ...]
    outcomes: tuple[render.Outcome, ...]


def is_bot(author: str, author_type: str, own_login: str | None = None) -> bool:
    if own_login and author.lower() == own_login.lower():
        return True
    return author_type == "Bot" or author.lower().endswith("[bot]")


# --------------------------------------------------------------------------- the flow


def handle(
    task: CommentTask,
    gh: CommandGitHub,
    gate: Gate,
    actions: dict[str, Action],
    services: Any = None,
    *,
    own_login: str | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    answers: AnswerIndex | None = None,
) -> Answer | None:
    """Answer one comment; None when there was nothing to answer (see the module docstring)."""
    comment = read_comment(gh, task.repo, task.comment_id)
    if comment is None:
        log.info("%s: comment %s is gone; nothing to do", task.repo, task.comment_id)
        return None
    if is_bot(comment.author, comment.author_type, own_login) or is_bot(
        task.author, task.author_type, own_login
    ):
        return None
    commands = parse(comment.body)
    if not commands:
        return None
    pending = _pending(gate, task.repo, comment.id)
    if pending is not None:
        return _post_pending(task, gh, gate, comment.id, *pending, own_login=own_login, answers=answers)
    # The rate limit is taken before anything costs API calls beyond the comment and the config:
    # one outsider's comments cannot page through long threads faster than the limit allows.
    try:
        config, refused = _config_and_rate(task, comment, commands, gh, gate, now())
    except Exception as exc:
        if _transient(exc):
            raise
        error_id = uuid.uuid4().hex[:12]
        log.exception("internal error %s answering comment %s on %s", error_id, comment.id, task.repo)
        config, refused = None, [render.internal_error(_shown(c), error_id) for c in commands]
    if config is not None:
        known = answers.lookup(task.repo, comment.id) if answers is not None else None
        if known is not None and known is not False:
            if known.state == "answered":
                log.info(
                    "%s: comment %s was already answered (answered index); not running it again",
                    task.repo,
                    comment.id,
                )
                return None
            # its commands ran, the reply may not have been posted: post it alone
            return _post_pending(
                task,
                gh,
                gate,
                comment.id,
                known.body,
                tuple(known.reactions),
                own_login=own_login,
                answers=answers,
            )
        if known is None:  # no index, or it cannot tell: the thread says
            marker = render.reply_marker(comment.id)
            if bot_comment(gh, task.repo, task.issue_number, marker, own_login) is not None:
                log.info("%s: comment %s was already answered; not running it again", task.repo, comment.id)
                return None
    gh.add_reaction(task.repo, comment.id, render.SEEN_REACTION)

    if refused is not None:
        outcomes = refused
    else:
        assert config is not None
        try:
            ctx = Context(
                task=task,
                author=comment.author,
                config=config,
                gh=gh,
                services=services,
                now=now(),
                own_login=own_login,
            )
            outcomes = [_run_one(ctx, command, gate, actions) for command in commands]
        except Exception as exc:
            if _transient(exc):
                raise  # GitHub said "later": the task retries (with backoff) and answers then
            error_id = uuid.uuid4().hex[:12]
            log.exception("internal error %s answering comment %s on %s", error_id, comment.id, task.repo)
            outcomes = [render.internal_error(_shown(c), error_id) for c in commands]
    body = render.reply(comment.author, comment.id, outcomes)
    added = tuple(render.reactions(outcomes))
    # The commands ran: if posting fails now (GitHub said "later"), the retried task posts this
    # reply alone and never runs their side effects again.
    remember = getattr(gate, "remember_reply", None)
    if remember is not None:
        remember(task.repo, comment.id, body, added)
    if answers is not None:
        answers.replying(task.repo, comment.id, task.issue_number, body, added)
    post_comment(gh, task.repo, task.issue_number, body)
    for content in added:
        gh.add_reaction(task.repo, comment.id, content)
    if answers is not None:
        answers.answered(task.repo, comment.id, task.issue_number)
    _forget(gate, task.repo, comment.id)
    return Answer(body, added, tuple(outcomes))


def _pending(gate: Gate, repo: str, comment_id: int) -> tuple[str, tuple[str, ...]] | None:
    read = getattr(gate, "pending_reply", None)
    result: tuple[str, tuple[str, ...]] | None = read(repo, comment_id) if read is not None else None
    return result


def _forget(gate: Gate, repo: str, comment_id: int) -> None:
    forget = getattr(gate, "forget_reply", None)
    if forget is not None:
        forget(repo, comment_id)


def _post_pending(
    task: CommentTask,
    gh: CommandGitHub,
    gate: Gate,
    comment_id: int,
    body: str,
    added: tuple[str, ...],
    *,
    own_login: str | None = None,
    answers: AnswerIndex | None = None,
) -> Answer:
    """Post a reply whose commands already ran (unless the earlier try did post it: the one case
    that reads the thread), then react."""
    log.info("%s: posting the kept reply to comment %s (its commands ran already)", task.repo, comment_id)
    if bot_comment(gh, task.repo, task.issue_number, render.reply_marker(comment_id), own_login) is None:
        post_comment(gh, task.repo, task.issue_number, body)
    for content in added:
        gh.add_reaction(task.repo, comment_id, content)
    if answers is not None:
        answers.answered(task.repo, comment_id, task.issue_number)
    _forget(gate, task.repo, comment_id)
    return Answer(body, added, ())


def _config_and_rate(
    task: CommentTask,
    comment: CommentInfo,
    commands: Sequence[Command],
    gh: CommandGitHub,
    gate: Gate,
    now: datetime,
) -> tuple[RepoConfig | None, list[render.Outcome] | None]:
    """(config, None) when the commands may run; (config or None, outcomes) when the answer is a
    refusal already: a bad config, or the author over the rate limit."""
    author = comment.author
    try:
        text = gh.read_file(task.repo, CONFIG_PATH)
        config = load_repo_config(text, CONFIG_PATH) if text is not None else RepoConfig()
    except ConfigError as exc:
        quoted = _quote_line(text, exc.line) if text is not None else None
        return None, [render.bad_config(_shown(c), exc.problem, quoted) for c in commands]

    rate = gate.take(
        task.repo, author, len(commands), config.commands.rate_limit, config.commands.rate_window_s
    )
    if not rate.allowed:
        log.info("%s: %s is rate limited (%d used)", task.repo, author, rate.used)
        return None, [
            render.rate_limited(
                _shown(c),
                author,
                config.commands.rate_limit,
                config.commands.rate_window_s,
                rate.retry_after_s,
                now,
            )
            for c in commands
        ]
    return config, None


def _shown(command: Command) -> Command | str:
    return command if command.ok else command.raw


def _run_one(ctx: Context, command: Command, gate: Gate, actions: dict[str, Action]) -> render.Outcome:
    if not command.ok:
        return render.bad_command(command)
    spec = command.spec
    assert spec is not None  # a valid command is a known one
    try:
        if spec.permission == "write":
            have = gate.permission(
                ctx.repo,
                ctx.author,
                ctx.config.commands.permission_cache_s,
                lambda: ctx.gh.permission(ctx.repo, ctx.author),
            )
            if not can_write(have):
                log.info("%s: denied /%s to %s (%s)", ctx.repo, command.name, ctx.author, have)
                return render.denied(command, ctx.author, ctx.repo, have)
        action = actions.get(command.name)
        if action is None:
            return render.not_available(command, f"the /{command.name} handler")
        return action(ctx, command)
    except ForksyncError as exc:
        return render.error_outcome(command, exc.problem, exc.remedy)
    except Exception as exc:
        if _transient(exc):
            return render.failed(
                command,
                "GitHub answered with a transient error (server error or rate limit)",
                "comment the command again in a minute",
            )
        error_id = uuid.uuid4().hex[:12]
        log.exception(
            "internal error %s in /%s on %s#%s", error_id, command.name, ctx.repo, ctx.task.issue_number
        )
        return render.internal_error(command, error_id)


def _transient(exc: BaseException) -> bool:
    """GitHub's 5xx and rate limits carry ``retry_after_s`` (core.github.errors.RetryableGitHubError)."""
    value = getattr(exc, "retry_after_s", None)
    return isinstance(value, int | float) and not isinstance(value, bool)


def _quote_line(text: str, line: int | None) -> str | None:
    """The config line at fault with its neighbours, numbered, for the reply."""
    if not line:
        return None
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return None
    start = max(1, line - 1)
    end = min(len(lines), line + 1)
    return "\n".join(f"{'>' if n == line else ' '} {n:3} | {lines[n - 1]}" for n in range(start, end + 1))
