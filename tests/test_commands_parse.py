"""The comment-command parser: what is a command line, argument rules, and never raising."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.commands import MAX_COMMANDS, NAMES, Command, closest, parse, parse_ref, quote, split_words


def one(text: str) -> Command:
    commands = parse(text)
    assert len(commands) == 1, commands
    return commands[0]


# --------------------------------------------------------------------------- command lines


def test_several_commands_per_comment_in_order_with_line_numbers() -> None:
    """Each command line becomes one Command, in comment order, with its 1-based line."""
    text = "Thanks!\n/skip abcd1234 not for us\n\n  /urgent #42\nplain prose /status here\n"
    commands = parse(text)
    assert [(c.name, c.args, c.line) for c in commands] == [
        ("skip", ("abcd1234", "not for us"), 2),
        ("urgent", ("#42",), 4),
    ]
    assert all(c.ok for c in commands)


def test_names_are_case_insensitive_and_mentions_are_accepted() -> None:
    """/SKIP, @forksync skip, @forksync /skip and @ForkSync[bot]: all the same command."""
    variants = [
        "/SKIP abcd reason",
        "@forksync skip abcd reason",
        "@forksync /skip abcd reason",
        "@ForkSync[bot]: Skip abcd reason",
    ]
    assert {one(v) for v in variants} == {Command("skip", ("abcd", "reason"))}


def test_other_mentions_and_paths_are_not_commands() -> None:
    """@forksyncer, /tmp/foo, /etc. and a slash mid-line are prose: no command, no error."""
    assert parse("@forksyncer skip abcd x\n/tmp/foo is full\n/etc. and so on\nsee /skip abcd x") == []


def test_fenced_code_blocks_are_not_commands() -> None:
    """Lines inside ``` and ~~~ fences (longer fences too) are ignored; after the fence, commands count."""
    text = (
        "```\n/skip abcd nope\n```\n"
        "~~~~ text\n/urgent #1\n~~~\n/defer #2\n~~~~\n"
        "````\n```\n/bundle\n````\n"
        "/status\n"
    )
    assert [c.name for c in parse(text)] == ["status"]


def test_unclosed_fence_runs_to_the_end() -> None:
    """An unclosed fence hides every later line (CommonMark)."""
    assert parse("/help\n```python\n/skip abcd x\n/status") == [Command("help")]


def test_inline_backticks_are_not_a_fence() -> None:
    """``` ``` `x` ``` ``` on one line is inline code: the next line is still a command."""
    assert parse("``` a ` b ```\n/status") == [Command("status")]


def test_indented_lines_are_not_commands() -> None:
    """Four spaces or a tab of indent is code or continuation text; up to three spaces is fine."""
    assert parse("    /skip abcd x\n\t/urgent #3\n   /status") == [Command("status")]


def test_quoted_replies_are_not_commands() -> None:
    """> /skip … (a quote of someone else's command, at any depth) does not run it again."""
    assert parse("> /skip abcd x\n>> /bundle\n > /status\nok") == []


def test_html_comments_are_not_commands() -> None:
    """Commands inside <!-- --> (hidden by GitHub, e.g. templates) do not run."""
    text = "<!--\n/skip abcd x\n-->\n<!-- /bundle -->\n/help"
    assert parse(text) == [Command("help")]


def test_too_many_commands_are_refused_not_run() -> None:
    """Past MAX_COMMANDS, one error says the rest were not run."""
    commands = parse("\n".join(["/status"] * (MAX_COMMANDS + 5)))
    assert len(commands) == MAX_COMMANDS + 1
    assert all(c.ok for c in commands[:MAX_COMMANDS])
    assert commands[-1].error and "too many" in commands[-1].error


# --------------------------------------------------------------------------- arguments


def test_quoted_arguments_group_words_and_escape() -> None:
    """Double, single and typographic quotes group; \\" escapes inside double quotes."""
    assert split_words('a "b c" \'d e\' “f g” "h \\"i\\"" j"k l"') == [
        "a",
        "b c",
        "d e",
        "f g",
        'h "i"',
        "jk l",
    ]


def test_unbalanced_quote_runs_to_end_of_line() -> None:
    """An unclosed quote is not an error: it takes the rest of the line."""
    assert split_words('x "y z') == ["x", "y z"]
    assert one('/skip abcd "breaks the build').reason == "breaks the build"


def test_apostrophes_inside_words_are_kept() -> None:
    """A contraction or possessive in a free-text reason is not a quote: nothing of it is lost."""
    assert one("/skip #7005 the fork's own backend, don't port").args == (
        "#7005",
        "the fork's own backend, don't port",
    )
    assert split_words("it's 'quoted words' users'") == ["it's", "quoted words", "users'"]
    assert split_words("fork’s") == ["fork’s"]


def test_skip_requires_a_reason() -> None:
    """/skip without a reason is refused with the usage; with one, the reason is kept whole."""
    bad = one("/skip abcd")
    assert bad.error and "reason is required" in bad.error and "/skip REF REASON" in bad.error
    assert one("/skip #12 'flaky on AMD' and x=1").args == ("#12", "flaky on AMD and x=1")


def test_defer_reason_is_optional() -> None:
    """/defer REF and /defer REF REASON are both valid."""
    assert one("/defer ABCDEF").args == ("abcdef",)
    assert one("/defer abcdef later please").reason == "later please"


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("abcd", "abcd"),
        ("ABCDEF012345", "abcdef012345"),
        ("#7", "#7"),
        ("#007", "#7"),
        ("https://github.com/triton-lang/triton/pull/5123", "#5123"),
        ("https://github.com/triton-lang/triton/commit/DEADBEEF", "deadbeef"),
    ],
)
def test_refs_are_normalised(ref: str, expected: str) -> None:
    """A REF is a sha prefix (lower-cased), #N, or an upstream commit/pull URL."""
    assert parse_ref(ref) == expected
    assert one(f"/urgent {ref}").ref == expected


@pytest.mark.parametrize(
    ("ref", "why"),
    [
        ("abc", "too short"),
        ("xyz1", "not a REF"),
        ("#0", "not a PR number"),
        ("a" * 41, "longer than a sha"),
        ("#", "not a REF"),
    ],
)
def test_bad_refs_say_why(ref: str, why: str) -> None:
    """A bad REF becomes an error naming the problem, never an exception."""
    command = one(f"/urgent {ref}")
    assert command.error and why in command.error
    assert command.args == ()


def test_bundle_options() -> None:
    """/bundle takes max=N and dry-run (any common spelling), and nothing else."""
    assert one("/bundle").options == ()
    command = one("/bundle max=05 --dry-run")
    assert command.max_commits == 5 and command.flag("dry-run")
    assert one("/bundle dry_run").flag("dry-run")
    assert not one("/bundle dry-run=false").flag("dry-run")
    for bad, why in [
        ("max=0", "1 or more"),
        ("max=x", "whole number"),
        ("maxx=3", "unknown option"),
        ("now", "unexpected"),
        ("max=1 max=2", "twice"),
        ("max=", "needs a value"),
    ]:
        error = one(f"/bundle {bad}").error
        assert error and why in error, (bad, error)


def test_retest_suites_are_deduplicated_in_order() -> None:
    """/retest with no suite means all; named suites keep their order, once each."""
    assert one("/retest").args == ()
    assert one("/retest lit unit lit").args == ("lit", "unit")
    error = one("/retest 'two words'").error
    assert error and "not a valid suite name" in error


def test_chain_into() -> None:
    """/chain REF, /chain REF into ID and /chain REF into=ID; a dangling `into` is an error."""
    assert one("/chain abcd").options == ()
    assert one("/chain abcd into chain-3").option("into") == "chain-3"
    assert one("/chain abcd into=chain-3") == one("/chain abcd INTO chain-3")
    error = one("/chain abcd into").error
    assert error and "needs a chain ID" in error
    assert one("/unchain #3").ref == "#3"
    unchain_error = one("/unchain #3 #4").error
    assert unchain_error and "unexpected" in unchain_error


def test_bisect_arguments() -> None:
    """/bisect needs a suite or metric; good= and bad= must be hex shas."""
    command = one("/bisect matmul-tflops good=abcd123 bad=BEEF")
    assert command.target == "matmul-tflops"
    assert command.option("good") == "abcd123" and command.option("bad") == "beef"
    missing = one("/bisect good=abcd").error
    assert missing and "name the L2 suite or metric" in missing
    bad_sha = one("/bisect x good=main").error
    assert bad_sha and "not a commit" in bad_sha


def test_workload_commands_take_one_name() -> None:
    """/l3 and /signoff take exactly one workload."""
    assert one("/l3 llama-70b").target == "llama-70b"
    assert one("/signoff llama-70b").target == "llama-70b"
    for text in ("/l3", "/signoff a b"):
        assert one(text).error


def test_argumentless_commands_refuse_extra_words() -> None:
    """/status and /approve take nothing; extras are an error with the usage, not ignored."""
    assert one("/status").ok and one("/approve").ok
    error = one("/approve please").error
    assert error and "usage: `/approve`" in error


def test_help_topic() -> None:
    """/help COMMAND names a command (with or without slash); an unknown topic suggests one."""
    assert one("/help /Skip").args == ("skip",)
    error = one("/help bundel").error
    assert error and "/bundle" in error


def test_unknown_command_suggests_closest() -> None:
    """An unknown name is a result with the closest command and a pointer to /help."""
    command = one("/retset unit")
    assert not command.known and command.suggestion == "retest"
    assert command.error and "did you mean `/retest`" in command.error and "/help" in command.error
    assert one("/frobnicate").suggestion is None


def test_closest_prefers_unique_prefix() -> None:
    """A unique prefix (/sign, /unch) completes to the command; an ambiguous one falls back to spelling."""
    assert closest("sign") == "signoff"
    assert closest("unch") == "unchain"
    assert closest("zzzzzz") is None


# --------------------------------------------------------------------------- properties

_line_free_text = st.text(
    # No control characters: a command holding one (NUL...) is refused with a reply (issue 14).
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\u2028\u2029"),
    max_size=40,
)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text_never_raises(text: str) -> None:
    """Whatever the comment, parse returns Commands, each valid or carrying an error string."""
    commands = parse(text)
    assert len(commands) <= MAX_COMMANDS + 1
    for command in commands:
        assert command.ok or isinstance(command.error, str)
        if command.ok:
            assert command.known


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "/",
                "@forksync ",
                " ",
                "\t",
                "```",
                "~~~",
                ">",
                "<!--",
                "-->",
                "\n",
                '"',
                "'",
                "#",
                "=",
                "abcd",
                "12",
                "skip",
                "bundle",
                "chain",
                "into",
                "max",
                "dry-run",
                "good",
                "x y",
                "\\",
                "“",
                "/help",
            ]
        ),
        max_size=60,
    ).map("".join)
)
def test_command_like_noise_never_raises(text: str) -> None:
    """Text built from the grammar's own pieces (the hard cases) still never raises."""
    for command in parse(text):
        assert command.ok or command.error


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_canonical_text_round_trips(text: str) -> None:
    """For every valid command parsed from any text, parse(command.text()) gives it back."""
    for command in parse(text):
        if command.ok:
            assert parse(command.text()) == [command]


@settings(max_examples=300, deadline=None)
@given(_line_free_text)
def test_quote_round_trips(word: str) -> None:
    """split_words(quote(w)) == [w] for any single-line word, spaces and quotes included."""
    assert split_words(quote(word)) == [word]


_hex = st.text(alphabet="0123456789abcdef", min_size=4, max_size=40)
_ref = st.one_of(_hex, st.integers(1, 10**6).map(lambda n: f"#{n}"))
_name = st.from_regex(r"[a-z][a-z0-9_.-]{0,20}", fullmatch=True)
_reason = _line_free_text.map(lambda s: " ".join(s.split())).filter(bool)


@st.composite
def valid_commands(draw: st.DrawFn) -> Command:
    name = draw(st.sampled_from(NAMES))
    if name == "skip":
        return Command(name, (draw(_ref), draw(_reason)))
    if name == "defer":
        reason = draw(st.one_of(st.none(), _reason))
        return Command(name, (draw(_ref),) if reason is None else (draw(_ref), reason))
    if name in ("urgent", "unchain"):
        return Command(name, (draw(_ref),))
    if name == "chain":
        into = draw(st.one_of(st.none(), _name))
        return Command(name, (draw(_ref),), () if into is None else (("into", into),))
    if name == "bundle":
        options: list[tuple[str, str]] = []
        if draw(st.booleans()):
            options.append(("dry-run", "true"))
        if draw(st.booleans()):
            options.append(("max", str(draw(st.integers(1, 999)))))
        return Command(name, (), tuple(options))
    if name == "retest":
        return Command(name, tuple(draw(st.lists(_name, unique=True, max_size=4))))
    if name == "bisect":
        opts = [(k, draw(_hex)) for k in ("bad", "good") if draw(st.booleans())]
        return Command(name, (draw(_name),), tuple(opts))
    if name in ("l3", "signoff"):
        return Command(name, (draw(_name),))
    if name == "help":
        return Command(name, draw(st.sampled_from([(), *[(n,) for n in NAMES]])))
    return Command(name)


@settings(max_examples=400, deadline=None)
@given(valid_commands(), st.sampled_from(["", "  ", "@forksync ", "@forksync /"]), st.booleans())
def test_every_valid_command_parses_back(command: Command, prefix: str, upper: bool) -> None:
    """A generated valid command, written canonically (any prefix, any case of the name), parses to itself."""
    text = command.text()
    if upper:
        text = "/" + command.name.upper() + text[len(command.name) + 1 :]
    if prefix.startswith("@"):
        text = prefix + text[1:]
    else:
        text = prefix + text
    assert parse(f"Some prose first.\n{text}\n> /skip abcd quoted") == [command]


@settings(max_examples=200, deadline=None)
@given(st.lists(valid_commands(), min_size=1, max_size=5))
def test_commands_in_a_fence_or_quote_never_run(commands: list[Command]) -> None:
    """The same commands, fenced or quoted, give no command at all."""
    body = "\n".join(c.text() for c in commands)
    assert len(parse(body)) == len(commands)
    assert parse(f"```\n{body}\n```") == []
    assert parse("\n".join("> " + line for line in body.splitlines())) == []
    assert parse("\n".join("    " + line for line in body.splitlines())) == []
