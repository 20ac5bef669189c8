"""Deterministic strategies, one rule per test: what each resolves, and what it must decline."""

from __future__ import annotations

import pytest

from workers.engine.resolve import model
from workers.engine.resolve.merge3 import diff3, git_merge, merged_of, parse_conflicts, tokens
from workers.engine.resolve.model import Hunk
from workers.engine.resolve.pipeline import Conflict, resolve_text
from workers.engine.resolve.strategies import (
    HunkContext,
    already_applied,
    fork_unchanged,
    list_union,
    token_merge,
    upstream_inserts_around_fork_edit,
    whitespace_only,
)

CTX = HunkContext("x.py")


def _hunk(ours: str, base: str, theirs: str) -> Hunk:
    split = lambda s: tuple(s.splitlines(keepends=True))  # noqa: E731
    return Hunk(0, split(ours), split(base), split(theirs), 1)


def test_tokens_are_lossless() -> None:
    """Joining the tokens gives the text back, odd whitespace included."""
    text = "a  =\tb(\r\n  c)\x0c\n"
    assert "".join(tokens(text)) == text


def test_diff3_merges_separate_changes_and_flags_overlaps() -> None:
    """The sequence diff3: disjoint edits merge, an edit of the same element by both conflicts."""
    assert merged_of(diff3(list("abc"), list("Abc"), list("abC"))) == list("AbC")
    assert merged_of(diff3(list("abc"), list("aXc"), list("aYc"))) is None


def test_zdiff3_output_is_parsed_into_text_and_hunks() -> None:
    """git's zdiff3 merge parses into clean parts and hunks with their three sides."""
    merged = git_merge("a\nB\nc\n", "a\nb\nc\n", "a\nC\nc\n")
    assert len(merged.hunks) == 1
    h = merged.hunks[0]
    assert (h.ours, h.base, h.theirs) == (("B\n",), ("b\n",), ("C\n",))
    assert merged.texts == (("a\n",), ("c\n",))
    assert parse_conflicts(merged.raw) == merged


def test_token_merge_combines_edits_on_one_line() -> None:
    """Fork renames a receiver, upstream adds an argument on the same line: both applied."""
    h = _hunk(
        "    r = testdir.run('-v')\n", "    r = pytester.run('-v')\n", "    r = pytester.run('-v', '-W')\n"
    )
    res = token_merge(h, CTX)
    assert res is not None and res.lines == ("    r = testdir.run('-v', '-W')\n",)


def test_token_merge_declines_when_a_side_inserts_lines_around_the_other_edit() -> None:
    """Upstream adds a function before a signature the fork changed: ambiguous, declined."""
    h = _hunk("def f(a):\n", "def f(a: int):\n", "def g():\n    pass\n\n\ndef f(a: int):\n")
    assert token_merge(h, CTX) is None


def test_token_merge_declines_when_a_side_deletes_whole_lines() -> None:
    """Upstream deletes a decorator line next to the fork's edit: ambiguous, declined."""
    h = _hunk("@a\n@b\ndef f(x):\n", "@a\n@b\ndef f(y):\n", "@b2\ndef f(y):\n")
    assert token_merge(h, CTX) is None


def test_token_merge_declines_overlapping_words() -> None:
    """Both sides rewrite the same word: a real conflict."""
    assert token_merge(_hunk("x = 1\n", "x = 0\n", "x = 2\n"), CTX) is None


def test_whitespace_only_keeps_the_fork_formatting() -> None:
    """Sides equal but for indentation and blank lines: the fork's text is kept."""
    res = whitespace_only(_hunk("  a(1);\n\n", "a(0);\n", "a(1);\n"), HunkContext("x.c"))
    assert res is not None and res.lines == ("  a(1);\n", "\n")
    # Blank lines and trailing spaces only: also in Python.
    res = whitespace_only(_hunk("a(1)  \n\n", "a(0)\n", "a(1)\n"), CTX)
    assert res is not None and res.lines == ("a(1)  \n", "\n")


def test_whitespace_only_respects_indentation_where_it_is_meaning() -> None:
    """In Python or YAML a re-indented line is another statement or key: not a whitespace-only difference."""
    assert whitespace_only(_hunk("    a(1)\n", "a(0)\n", "a(1)\n"), CTX) is None
    assert whitespace_only(_hunk("  key: 1\n", "key: 0\n", "key: 1\n"), HunkContext("x.yml")) is None


def test_already_applied_keeps_the_fork_side() -> None:
    """Upstream's added line is already in the fork (an earlier pick): keep the fork's side."""
    res = already_applied(_hunk("x = 1\nfix()\ny = 2\n", "x = 1\n", "x = 1\nfix()\n"), CTX)
    assert res is not None and res.strategy == model.ALREADY_APPLIED


def test_already_applied_declines_when_upstream_removes_what_the_fork_keeps() -> None:
    """The fork still has a line upstream removes: not already applied."""
    assert already_applied(_hunk("old()\nfix()\n", "old()\n", "fix()\n"), CTX) is None


def test_list_union_keeps_both_sides_imports_sorted() -> None:
    """Both add imports at the same place: union, in sorted order when each side was sorted."""
    res = list_union(_hunk("import b\nimport d\n", "", "import a\nimport c\n"), CTX)
    assert res is not None and res.lines == ("import a\n", "import b\n", "import c\n", "import d\n")


def test_list_union_declines_code_that_is_not_a_list() -> None:
    """Both add statements at the same place: not list entries, declined."""
    assert list_union(_hunk("x = f()\n", "", "y = g()\n"), CTX) is None


def test_list_union_declines_mixed_kinds() -> None:
    """An include on one side and a bullet on the other are not one list."""
    assert list_union(_hunk("#include <a.h>\n", "", "- item\n"), CTX) is None


def test_pipeline_names_each_hunk_and_builds_the_entry() -> None:
    """A whole file through the pipeline: File/Action/Reason, zdiff3 conflict and resolution diff kept."""
    base = "import os\n\n\ndef f(name):\n    return 'hi ' + name\n"
    ours = base.replace("name", "who")
    theirs = base.replace("'hi '", "'hello '")
    outcome, _merged = resolve_text(Conflict("m.py", base, ours, theirs))
    assert outcome.entry is not None, outcome.waiting
    e = outcome.entry
    assert e.strategy == model.TOKEN_MERGE and "hunk 1" in e.action and e.reason
    assert "<<<<<<< ours" in e.diff3 and "+    return 'hello ' + who" in e.resolution_diff
    assert e.content == ours.replace("'hi '", "'hello '").encode()


def test_pipeline_waits_with_the_lines_it_could_not_resolve() -> None:
    """A real conflict is declined with where it is; no content is proposed."""
    outcome, _ = resolve_text(Conflict("m.txt", "a\nx\nb\n", "a\ny\nb\n", "a\nz\nb\n"))
    assert outcome.entry is None and outcome.waiting is not None
    assert outcome.waiting.hunks_left == 1 and "merge lines 2" in outcome.waiting.reason


def test_dependency_pins_keep_the_newer_version_per_line() -> None:
    """Both sides bump pins: each line keeps the newer version, whichever side has it."""
    from workers.engine.resolve.strategies import dependency_pins

    h = _hunk(
        "pytest==4.0.2\nuses: actions/checkout@v4.2.0\n",
        "pytest==4.5.0\nuses: actions/checkout@v3.1.0\n",
        "pytest==4.5.1\nuses: actions/checkout@v4.1.0\n",
    )
    res = dependency_pins(h, CTX)
    assert res is not None and res.lines == ("pytest==4.5.1\n", "uses: actions/checkout@v4.2.0\n")


def test_dependency_pins_decline_product_versions_and_other_edits() -> None:
    """A #define'd product version is the branch's own; a renamed package is not a bump."""
    from workers.engine.resolve.strategies import dependency_pins

    assert (
        dependency_pins(_hunk('#define V "6.0.8"\n', '#define V "999.0"\n', '#define V "255.0"\n'), CTX)
        is None
    )
    assert dependency_pins(_hunk("pytest==4.0\n", "pytest==4.5\n", "pytest-cov==4.6\n"), CTX) is None
    assert dependency_pins(_hunk("a==1\n", "a==2\nb==1\n", "a==3\n"), CTX) is None


# Real blocks: containerd/containerd (Apache-2.0), backport 9e72e91e63 of db31fbc5a1 onto release/2.0
# ("ci: bump Go 1.24.6"), .devcontainer/devcontainer.json; the maintainer bumped the branch's own Go line
# to "1.23.12". And openstack/glance (Apache-2.0), backport 9b52a89765 of 8160ae2933 onto havana,
# requirements.txt; the maintainer kept the branch's lower floors.
_DEVCONTAINER_GO = (
    '\t\t\t"version": "1.23.11"\n',
    '\t\t\t"version": "1.24.5"\n',
    '\t\t\t"version": "1.24.6"\n',
)
_GLANCE_FLOORS = (
    "python-cinderclient>=1.0.4\npython-keystoneclient>=0.3.0\n",
    "python-cinderclient>=1.0.5\npython-keystoneclient>=0.3.2\n",
    "python-cinderclient>=1.0.6\npython-keystoneclient>=0.4.1\n",
)


def test_dependency_pins_decline_the_branchs_own_version_and_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSON ``"version"`` (the branch's release line) and a ``>=`` floor are the branch's own: declined.

    Without the narrowing the rule took upstream's newer version: Go 1.24.6 onto a branch that
    tracks Go 1.23, and upstream's raised floors onto a stable branch; both maintainers did otherwise.
    Exact pins, the rule's right answers on the developers' set, still resolve.
    """
    from workers.engine.resolve import strategies
    from workers.engine.resolve.strategies import dependency_pins

    ctx = HunkContext(".devcontainer/devcontainer.json")
    assert dependency_pins(_hunk(*_DEVCONTAINER_GO), ctx) is None
    assert dependency_pins(_hunk(*_GLANCE_FLOORS), HunkContext("requirements.txt")) is None
    assert dependency_pins(_hunk("pkg~=1.0\n", "pkg~=1.1\n", "pkg~=1.2\n"), CTX) is None
    # Real block: aio-libs/aiohttp (Apache-2.0), conflict-bench case-037, requirements/test.txt: kept.
    res = dependency_pins(_hunk("coverage==7.10.7\n", "coverage==7.11.0\n", "coverage==7.13.0\n"), CTX)
    assert res is not None and res.lines == ("coverage==7.13.0\n",)
    res = dependency_pins(
        _hunk('"left-pad": "^1.2.0",\n', '"left-pad": "^1.1.0",\n', '"left-pad": "^1.3.0",\n'), ctx
    )
    assert res is not None and res.lines == ('"left-pad": "^1.3.0",\n',)
    monkeypatch.setattr(strategies, "_OWN_VERSION_GUARD", False)
    res = dependency_pins(_hunk(*_DEVCONTAINER_GO), ctx)
    assert res is not None and res.lines == ('\t\t\t"version": "1.24.6"\n',)
    monkeypatch.setattr(strategies, "_BOUNDS_GUARD", False)
    res = dependency_pins(_hunk(*_GLANCE_FLOORS), HunkContext("requirements.txt"))
    assert res is not None and res.lines == _hunk(*_GLANCE_FLOORS).theirs


# Real extract: pytest-dev/pytest (MIT), conflict-bench case-008, src/_pytest/config/__init__.py, backport
# to 7.0.x: the branch had dropped a blank line where upstream added a cached _get_directory.
_CASE_008_THEIRS = (
    "\n"
    "        # _getconftestmodules()'s call to _get_directory() causes a stat\n"
    "        # storm when it's called potentially thousands of times in a test\n"
    "        # session (#9478), often with the same path, so cache it.\n"
    "        self._get_directory = lru_cache(256)(_get_directory)\n"
    "\n"
)


def test_fork_unchanged_takes_upstream_where_the_fork_only_reformatted() -> None:
    """The fork's side is its parent with other spacing inside the lines: upstream's side is taken."""
    res = fork_unchanged(_hunk("x  =  1\n", "x = 1\n", "x = 2\n"), HunkContext("a.c"))
    assert res is not None and res.strategy == model.FORK_UNCHANGED and res.lines == ("x = 2\n",)


# Real blocks: openstack/cinder (Apache-2.0), backport bd707cbdd6 of 67cb1bde74 (.zuul.yaml, pike) and
# backport cfa3056020 of 0bd4a6c286 (cinder/tests/unit/api/contrib/test_quotas.py, mitaka): the branch
# had dropped the blank line after the block upstream deletes; the maintainer left it out.
_ZUUL = (
    "    post:\n      jobs:\n        - publish-loci-cinder\n",
    "    post:\n      jobs:\n        - publish-loci-cinder\n\n",
    "\n",
)
_QUOTAS = (
    "from keystonemiddleware import auth_token\n",
    "\nfrom keystonemiddleware import auth_token\n",
    "\n",
)


def test_fork_unchanged_declines_where_upstream_keeps_a_blank_line_the_fork_deleted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fork deleted a blank line upstream's side keeps: the fork did change the block, declined.

    Maintainers go both ways here (cinder left the blank line out; pytest, conflict-bench case-008,
    took upstream's side with it), so no side is safe. Without the guard the rule took upstream's.
    """
    from workers.engine.resolve import strategies

    for (ours, base, theirs), path in ((_ZUUL, ".zuul.yaml"), (_QUOTAS, "test_quotas.py")):
        assert fork_unchanged(_hunk(ours, base, theirs), HunkContext(path)) is None
    assert (
        fork_unchanged(_hunk("", "\n", _CASE_008_THEIRS), HunkContext("src/_pytest/config/__init__.py"))
        is None
    )
    # A blank line the fork deleted that upstream deletes too: nothing of the fork's is undone.
    res = fork_unchanged(_hunk("x = 1\n", "\nx = 1\n", "x = 2\n"), HunkContext("a.py"))
    assert res is not None and res.lines == ("x = 2\n",)
    monkeypatch.setattr(strategies, "_BLANK_LINE_GUARD", False)
    res = fork_unchanged(_hunk(*_ZUUL), HunkContext(".zuul.yaml"))
    assert res is not None and res.lines == ("\n",)


def test_fork_unchanged_declines_a_real_fork_change_or_a_python_reindent() -> None:
    """A fork edit of substance, or a re-indent where indentation is meaning, is not 'unchanged'."""
    assert fork_unchanged(_hunk("x = 2\n", "x = 1\n", "x = 3\n"), CTX) is None
    assert fork_unchanged(_hunk("    run()\n", "run()\n", "run(1)\n"), HunkContext("a.py")) is None
    assert fork_unchanged(_hunk("", "", "new()\n"), CTX) is None
    # Where indentation carries no meaning (C), a re-indented fork side counts as unchanged.
    assert fork_unchanged(_hunk("    run();\n", "run();\n", "run(1);\n"), HunkContext("a.c")) is not None


# Real extract: pytest-dev/pytest (MIT), conflict-bench case-025, src/_pytest/capture.py, backport to 6.0.x.
_CASE_025 = (
    "    def readouterr(self) -> CaptureResult:\n",
    "    def readouterr(self) -> CaptureResult[AnyStr]:\n",
    "    def is_started(self) -> bool:\n"
    '        """Whether actively capturing -- not suspended or stopped."""\n'
    '        return self._state == "started"\n'
    "\n"
    "    def readouterr(self) -> CaptureResult[AnyStr]:\n",
)

# Real extract: aio-libs/aiohttp (Apache-2.0), conflict-bench case-047, tests/test_web_response.py, backport to 3.11.
_CASE_047 = (
    "async def test_send_set_cookie_header(buf, writer) -> None:\n",
    "async def test_send_set_cookie_header(buf: Any, writer: Any) -> None:\n",
    "async def test_multiline_reason(buf: Any, writer: Any) -> None:\n"
    '    with pytest.raises(ValueError, match=r"Reason cannot contain \\\\n"):\n'
    '        Response(reason="Bad\\r\\nInjected-header: foo")\n'
    "\n"
    "\n"
    "async def test_send_set_cookie_header(buf: Any, writer: Any) -> None:\n",
)


def test_upstream_inserts_keeps_new_lines_around_the_fork_version() -> None:
    """case-025: upstream adds a method above a signature the branch spells differently; the maintainer kept both."""
    res = upstream_inserts_around_fork_edit(_hunk(*_CASE_025), HunkContext("src/_pytest/capture.py"))
    assert res is not None and res.strategy == model.UPSTREAM_INSERTS
    assert res.lines[-1] == "    def readouterr(self) -> CaptureResult:\n"
    assert res.lines[0] == "    def is_started(self) -> bool:\n" and len(res.lines) == 5


def test_upstream_inserts_declines_when_new_code_uses_what_the_fork_edited_away() -> None:
    """case-047: the new test is annotated the way the branch removed (buf: Any); the maintainer adapted it."""
    assert (
        upstream_inserts_around_fork_edit(_hunk(*_CASE_047), HunkContext("tests/test_web_response.py"))
        is None
    )


def test_upstream_inserts_declines_a_rewritten_or_deleted_fork_region() -> None:
    """The fork reflowed the region (fewer lines) or deleted it: which side the new lines go with is unclear."""
    theirs = "def new():\n    pass\n\ndef f(\n    a: int,\n) -> None:\n"
    assert (
        upstream_inserts_around_fork_edit(
            _hunk("def f(a) -> None:\n", "def f(\n    a: int,\n) -> None:\n", theirs), CTX
        )
        is None
    )
    assert upstream_inserts_around_fork_edit(_hunk("", "x = 1\n", "y = 0\nx = 1\n"), CTX) is None
    # Upstream's side must keep its parent intact: an edit inside it is not a pure insertion.
    assert upstream_inserts_around_fork_edit(_hunk("x = 2\n", "x = 1\n", "y = 0\nx = 3\n"), CTX) is None


def test_token_merge_declines_lines_inserted_inside_the_other_sides_rewrite() -> None:
    """The fork adds parameters between lines upstream annotates one by one: the new ones would stay bare.

    Real block (sqlalchemy/sqlalchemy, MIT: backport 43c5473 of e833474, a typing commit onto a branch with two more
    parameters; the maintainer annotated the fork's new lines too, which no token merge supplies).
    """
    h = _hunk(
        "        native_datetime=False,\n        json_serializer=None,\n        json_deserializer=None,\n"
        "        _json_serializer=None,\n        _json_deserializer=None,\n        **kwargs,\n    ):\n",
        "        native_datetime=False,\n        json_serializer=None,\n        json_deserializer=None,\n"
        "        **kwargs,\n    ):\n",
        "        native_datetime: bool = False,\n        json_serializer: Optional[Callable[..., Any]] = None,\n"
        "        json_deserializer: Optional[Callable[..., Any]] = None,\n        **kwargs: Any,\n    ) -> None:\n",
    )
    assert token_merge(h, CTX) is None
    # Lines inserted next to an unedited line still merge: only an insertion inside the other's edit declines.
    h = _hunk("a = f(1)\nb = 2\nextra = 0\nc = 3\n", "a = f(0)\nb = 2\nc = 3\n", "a = f(0)\nb = 20\nc = 3\n")
    res = token_merge(h, CTX)
    assert res is not None and res.lines == ("a = f(1)\n", "b = 20\n", "extra = 0\n", "c = 3\n")


def test_token_merge_declines_when_a_side_only_changes_layout() -> None:
    """Upstream re-indents a doc example the branch edited: where the branch's edit lands is a guess.

    Real block (sqlalchemy/sqlalchemy, MIT: backport 147b116 of f4aa9de, doc/build/core/pooling.rst;
    the maintainer took upstream's re-indented text, not a merge of the two).
    """
    h = _hunk(
        '      with engine.connect() as conn:\n          conn.execute("...")\n',
        '      with engine.connect() as conn:\n          conn.execute(text("..."))\n',
        '        with engine.connect() as conn:\n            conn.execute(text("..."))\n',
    )
    assert token_merge(h, CTX) is None
    # A re-wrap that also changes words is not layout only: it merges where the other side edits another line.
    h = _hunk(
        "r = pytester.run('-v')\nx = 1\n",
        "r = pytester.run('-v')\nx = 0\n",
        "r = pytester.run(\n    '-v', '-W'\n)\nx = 0\n",
    )
    res = token_merge(h, CTX)
    assert res is not None and "".join(res.lines) == "r = pytester.run(\n    '-v', '-W'\n)\nx = 1\n"


def test_token_merge_declines_edits_that_clash_on_one_line() -> None:
    """Both sides edit one line and their edits touch, or one re-wraps it: the merged line is a guess.

    Real blocks (sqlalchemy/sqlalchemy, MIT). Backport 5660063 of 543acbd,
    test/typing/plain_files/sql/functions.py: the branch nests ``Tuple[...]`` and upstream nests
    ``Sequence[...]`` in the same expected type; the token merge gave an unbalanced pattern, the
    maintainer wrote another line. Backport acf6cec of aeb7830, test/orm/declarative/test_dc_transforms.py:
    the two edits are words apart on the line and the maintainer committed exactly their merge.
    """
    h = _hunk(
        "# EXPECTED_RE_TYPE: .*Select\\[Tuple\\[.*int\\]\\]\n",
        "# EXPECTED_RE_TYPE: .*Select\\[.*int\\]\n",
        "# EXPECTED_RE_TYPE: .*Select\\[.*Sequence\\[.*int\\]\\]\n",
    )
    assert token_merge(h, CTX) is None
    h = _hunk(
        "                False, False, False, list, True, False, False\n",
        "                False, False, None, list, True, False, False\n",
        "                False, False, None, list, True, False, False, None\n",
    )
    res = token_merge(h, CTX)
    assert res is not None and res.lines == (
        "                False, False, False, list, True, False, False, None\n",
    )
    # The fork renames a receiver on the line upstream re-wraps: where the rename lands is layout, declined.
    h = _hunk("r = testdir.run('-v')\n", "r = pytester.run('-v')\n", "r = pytester.run(\n    '-v', '-W'\n)\n")
    assert token_merge(h, CTX) is None
    # One word apart on a line ("f(a, b)": the fork renames a, upstream renames b) is too close: declined.
    assert token_merge(_hunk("f(x, b)\n", "f(a, b)\n", "f(a, y)\n"), CTX) is None


def test_list_union_orders_python_imports_as_isort_does() -> None:
    """``import x`` lines come before ``from x import y`` lines when both sides add one of each.

    Real block (sqlalchemy/sqlalchemy, MIT: backport a0e7cab4d1 of f0537442eb onto rel_2_0,
    test/sql/test_resultset.py): the maintainer wrote ``import collections`` above
    ``from collections import defaultdict``; a plain text sort put the ``from`` line first.
    """
    h = _hunk("import collections\n", "", "from collections import defaultdict\n")
    res = list_union(h, CTX)
    assert res is not None and res.lines == ("import collections\n", "from collections import defaultdict\n")


def test_token_merge_declines_a_side_that_only_rewraps_with_a_backslash() -> None:
    """The fork breaks a long line with a backslash continuation, upstream edits the next line: layout only, declined.

    Real block (sqlalchemy/sqlalchemy, MIT: backport 15b5e9330b of 1ec2f7cfd6 onto rel_1_1,
    lib/sqlalchemy/dialects/oracle/cx_oracle.py): the maintainer took upstream's block, not the fork's re-wrap
    with upstream's new URL; the token merge kept the re-wrap.
    """
    h = _hunk(
        "    :connectstring: oracle+cx_oracle://user:pass@host:port/dbname\\\n[?key=value&key=value...]\n"
        "    :url: http://cx-oracle.sourceforge.net/\n",
        "    :connectstring: oracle+cx_oracle://user:pass@host:port/dbname[?key=value&key=value...]\n"
        "    :url: http://cx-oracle.sourceforge.net/\n",
        "    :connectstring: oracle+cx_oracle://user:pass@host:port/dbname[?key=value&key=value...]\n"
        "    :url: https://oracle.github.io/python-cx_Oracle/\n",
    )
    assert token_merge(h, CTX) is None
    # A backslash that is part of the words (an escape, not a line end) is not layout: the merge still happens.
    res = token_merge(_hunk('s = "a\\\\tb"\nx = 0\n', 's = "a b"\nx = 0\n', 's = "a b"\nx = 1\n'), CTX)
    assert res is not None and res.lines == ('s = "a\\\\tb"\n', "x = 1\n")


# Real block (sqlalchemy/sqlalchemy, MIT): backport fb213ed536 of 4009b58467 onto rel_2_0,
# lib/sqlalchemy/orm/session.py. The branch's Session.get has no populate_existing handling; upstream
# only drops a "type: ignore" comment inside it. The maintainer kept the branch's code as it was.
_SESSION_GET_BASE = (
    "        # set populate_existing value; direct parameter\n"
    "        # takes precedence over execution_options\n"
    "        if populate_existing is not None:\n"
    "            execution_options = {\n"
    "                **execution_options,  # type: ignore[typeddict-item]\n"
    '                "populate_existing": populate_existing,\n'
    "            }\n"
    "        else:\n"
    "            populate_existing = execution_options.get(\n"
    '                "populate_existing", False\n'
    "            )\n"
    "\n"
)
_SESSION_GET_THEIRS = _SESSION_GET_BASE.replace("  # type: ignore[typeddict-item]", "")


def test_fork_lacks_region_keeps_the_fork_where_upstream_edits_code_it_does_not_have() -> None:
    """The fork has no such region and upstream only edits a line of it: the fork's side (nothing) is kept."""
    from workers.engine.resolve.strategies import fork_lacks_region

    h = _hunk("", _SESSION_GET_BASE, _SESSION_GET_THEIRS)
    res = fork_lacks_region(h, HunkContext("lib/sqlalchemy/orm/session.py", "def get(self):\n    pass\n"))
    assert res is not None and res.lines == () and res.strategy == model.FORK_LACKS_REGION
    assert "does not have this region" in res.reason


def test_fork_lacks_region_declines_new_lines_small_regions_and_moved_code() -> None:
    """Upstream adding lines (an import the pick needs), a short region, or code the fork has elsewhere: declined."""
    from workers.engine.resolve.strategies import fork_lacks_region

    ctx = HunkContext("lib/sqlalchemy/orm/session.py", "def get(self):\n    pass\n")
    # Upstream inserts a line inside the region: the new line may be needed by the rest of the pick.
    grown = _SESSION_GET_THEIRS.replace("        else:\n", "        else:\n            warn()\n")
    assert fork_lacks_region(_hunk("", _SESSION_GET_BASE, grown), ctx) is None
    # Upstream's replacement brings an import with it.
    imported = _SESSION_GET_BASE.replace("        # takes precedence", "        import asyncio  # precedence")
    assert fork_lacks_region(_hunk("", _SESSION_GET_BASE, imported), ctx) is None
    # Fewer than 10 non-blank lines: a few lines absent from the fork are often lines it rewrote.
    short = "".join(_SESSION_GET_BASE.splitlines(keepends=True)[:7])
    assert (
        fork_lacks_region(_hunk("", short, short.replace("  # type: ignore[typeddict-item]", "")), ctx)
        is None
    )
    # The fork has the region elsewhere (moved): upstream's edit should follow it there.
    moved = HunkContext("lib/sqlalchemy/orm/session.py", "class S:\n    def get(self):\n" + _SESSION_GET_BASE)
    assert fork_lacks_region(_hunk("", _SESSION_GET_BASE, _SESSION_GET_THEIRS), moved) is None
    # The fork has a version of the region: not this rule's case.
    assert fork_lacks_region(_hunk("x = 1\n", _SESSION_GET_BASE, _SESSION_GET_THEIRS), ctx) is None


# Real block, abridged: openstack/cinder (Apache-2.0), backport 4d795e5a32 of 8230238365 onto pike,
# cinder/tests/unit/volume/drivers/test_remotefs.py. The branch lacks the test upstream rewrites for the
# fix being picked ("Avoid using 'truncate' on Windows"); the maintainer brought the rewritten test along.
_WRITE_INFO_BASE = (
    "    @ddt.data(False, True)\n"
    "    @mock.patch('json.dump')\n"
    "    @mock.patch('cinder.volume.drivers.remotefs.open')\n"
    "    @mock.patch('os.path.exists')\n"
    "    def test_write_info_file(self,\n"
    "                             info_file_exists,\n"
    "                             mock_os_path_exists,\n"
    "                             mock_open,\n"
    "                             mock_json_dump):\n"
    "\n"
    "        mock_os_path_exists.return_value = info_file_exists\n"
    "        fake_info_path = '/path/to/info'\n"
)
_WRITE_INFO_THEIRS = (
    "    @ddt.data({},\n"
    "              {'info_file_exists': True},\n"
    "              {'os_name': 'nt'})\n"
    "    @ddt.unpack\n"
    "    @mock.patch('json.dump')\n"
    "    @mock.patch('cinder.volume.drivers.remotefs.open')\n"
    "    @mock.patch('os.path.exists')\n"
    "    def test_write_info_file(self,\n"
    "                             mock_os_path_exists,\n"
    "                             mock_open,\n"
    "                             mock_json_dump,\n"
    "                             info_file_exists=False,\n"
    "                             os_name='posix'):\n"
    "\n"
    "        mock_os_path_exists.return_value = info_file_exists\n"
    "        fake_info_path = '/path/to/info'\n"
)


def test_fork_lacks_region_declines_a_region_upstream_grows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Upstream's replacements in the region the fork lacks bring more lines than they take: declined.

    A grown region is new code (here the test of the fix being picked), which the backport may
    need even though the fork lacks the old version; without the guard the rule dropped it.
    """
    from workers.engine.resolve import strategies
    from workers.engine.resolve.strategies import fork_lacks_region

    ctx = HunkContext("cinder/tests/unit/volume/drivers/test_remotefs.py", "class T:\n    pass\n")
    h = _hunk("", _WRITE_INFO_BASE, _WRITE_INFO_THEIRS)
    assert fork_lacks_region(h, ctx) is None
    monkeypatch.setattr(strategies, "_GROWTH_GUARD", False)
    res = fork_lacks_region(h, ctx)
    assert res is not None and res.lines == ()


def test_import_merge_declines_where_the_fork_imports_a_name_from_another_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The branch spells a module differently (``oslo.config`` for ``oslo_config``): upstream's new imports may too.

    Real block, abridged: openstack/cinder (Apache-2.0), backport 8940579083 of d96c40c0ab onto juno,
    cinder/tests/test_volume.py. Upstream adds ``from oslo_concurrency import processutils``; the
    maintainer imported it from ``cinder.openstack.common`` as the branch does. A merge by name took
    upstream's spelling.
    """
    from workers.engine.resolve import strategies
    from workers.engine.resolve.strategies import import_merge

    h = _hunk(
        "from oslo.config import cfg\n",
        "from oslo_config import cfg\nfrom oslo_utils import units\n",
        "from oslo_concurrency import processutils\nfrom oslo_config import cfg\nfrom oslo_utils import units\n",
    )
    ctx = _import_ctx("cinder/tests/test_volume.py", "from oslo.config import cfg\n\ncfg.CONF\n", "", "")
    assert import_merge(h, ctx) is None
    monkeypatch.setattr(strategies, "_IMPORT_MODULE_GUARD", False)
    res = import_merge(h, ctx)
    assert res is not None and "from oslo_concurrency import processutils\n" in res.lines


def _import_ctx(path: str, fork: str, upstream: str, base: str) -> HunkContext:
    return HunkContext(path, fork_text=fork, upstream_text=upstream, base_text=base)


def test_import_merge_merges_both_sides_imports_by_name() -> None:
    """The fork and upstream each edit one import line: the result imports every name either added.

    Real blocks (aio-libs/aiohttp, Apache-2.0). Backport f82bc8aad2 of 67fa1f5e64 onto 3.14,
    aiohttp/payload.py: the maintainer wrote ``JSONBytesEncoder, JSONEncoder, _CIMultiDict``.
    Backport eb685564f3 of f95bcaf4e0 onto 3.11, tests/test_client_ws.py: the branch had replaced
    ``Mapping`` by ``Any``, upstream added ``Type``; the maintainer wrote ``from typing import Any, Type``.
    """
    from workers.engine.resolve.strategies import import_merge

    h = _hunk(
        "from .typedefs import JSONEncoder, _CIMultiDict\n",
        "from .typedefs import JSONEncoder\n",
        "from .typedefs import JSONBytesEncoder, JSONEncoder\n",
    )
    res = import_merge(h, _import_ctx("aiohttp/payload.py", "", "", ""))
    assert res is not None and res.lines == (
        "from .typedefs import JSONBytesEncoder, JSONEncoder, _CIMultiDict\n",
    )
    h = _hunk(
        "from typing import Any\n", "from typing import Mapping\n", "from typing import Mapping, Type\n"
    )
    fork = "from typing import Any\n\ndef f(x: Any) -> None: ...\n"
    upstream = (
        "from typing import Mapping, Type\n\ndef f(x: Mapping) -> None: ...\ndef g(t: Type) -> None: ...\n"
    )
    base = "from typing import Mapping\n\ndef f(x: Mapping) -> None: ...\n"
    res = import_merge(h, _import_ctx("tests/test_client_ws.py", fork, upstream, base))
    assert res is not None and res.lines == ("from typing import Any, Type\n",)
    assert res.strategy == model.IMPORT_MERGE and "Type" in res.reason and "Mapping" in res.reason


def test_import_merge_keeps_a_name_the_other_side_still_uses() -> None:
    """A name one side drops while the other side's code uses it: declined, not silently dropped."""
    from workers.engine.resolve.strategies import import_merge

    h = _hunk(
        "from typing import Any\n", "from typing import Mapping\n", "from typing import Mapping, Type\n"
    )
    base = "from typing import Mapping\n\ndef f(x: Mapping) -> None: ...\n"
    # Upstream's new code uses Mapping, which the fork dropped.
    upstream = base.replace("Mapping\n", "Mapping, Type\n") + "def g(m: Mapping, t: Type) -> None: ...\n"
    assert import_merge(h, _import_ctx("t.py", "from typing import Any\n", upstream, base)) is None
    # Upstream drops os, which the fork's own code still calls.
    h = _hunk("import os\nimport re\n", "import os\n", "import sys\n")
    fork = "import os\nimport re\n\nos.getcwd()\n"
    assert import_merge(h, _import_ctx("t.py", fork, "import sys\n", "import os\n")) is None


def test_import_merge_declines_outside_plain_python_import_blocks() -> None:
    """Not Python, a side without imports, anything but one-line imports, or no order both sides follow: declined."""
    from workers.engine.resolve.strategies import import_merge

    ctx = _import_ctx("t.py", "", "", "")
    h = _hunk("from a import b, c\n", "from a import b\n", "from a import b, d\n")
    assert import_merge(h, _import_ctx("t.c", "", "", "")) is None
    assert import_merge(_hunk("", "from a import b\n", "from a import b, d\n"), ctx) is None
    assert (
        import_merge(_hunk("from a import b, c\nx = 1\n", "from a import b\n", "from a import b, d\n"), ctx)
        is None
    )
    assert (
        import_merge(_hunk("from a import (b, c)\n", "from a import b\n", "from a import b, d\n"), ctx)
        is None
    )
    # The fork lists names unsorted: no convention all sides follow.
    assert (
        import_merge(_hunk("from a import c, b\n", "from a import b\n", "from a import b, d\n"), ctx) is None
    )
    res = import_merge(h, ctx)
    assert res is not None and res.lines == ("from a import b, c, d\n",)


def test_pipeline_gives_strategies_the_whole_files() -> None:
    """Through the pipeline the import merge sees the whole files: a name upstream drops goes only if the fork
    no longer uses it once upstream's own changes are in."""
    base = "from typing import Mapping\n\n\ndef f(x: Mapping) -> None:\n    pass\n"
    ours = "from typing import Any, Mapping\n\n\ndef f(x: Mapping) -> None:\n    pass\n"
    theirs = "from typing import Sequence\n\n\ndef f(x: Sequence) -> None:\n    pass\n"
    outcome, _ = resolve_text(Conflict("m.py", base, ours, theirs))
    assert outcome.entry is not None and outcome.entry.strategy == model.IMPORT_MERGE, outcome.waiting
    assert (
        outcome.entry.content
        == ours.replace("Any, Mapping", "Any, Sequence").replace("x: Mapping", "x: Sequence").encode()
    )
    # The fork also uses Mapping in code of its own: upstream's removal of the import would break it.
    ours_uses = ours + "\n\ndef g(m: Mapping) -> None:\n    pass\n"
    outcome, _ = resolve_text(Conflict("m.py", base, ours_uses, theirs))
    assert outcome.entry is None and outcome.waiting is not None


def test_token_merge_declines_a_side_that_pins_a_dependency_lower() -> None:
    """The branch pins black lower while upstream edits the repo URL above it: which pin wins is the maintainer's.

    Real block (sqlalchemy/sqlalchemy, MIT: backport f3cd75c228 of f8a037aa82 onto rel_1_2, .pre-commit-config.yaml):
    the maintainer took upstream's block, newer ``rev`` included; the token merge kept the older pin.
    """
    h = _hunk(
        "-   repo: https://github.com/python/black/\n    rev: 19.3b0\n",
        "-   repo: https://github.com/python/black/\n    rev: 19.10b0\n",
        "-   repo: https://github.com/python/black\n    rev: 19.10b0\n",
    )
    assert token_merge(h, HunkContext(".pre-commit-config.yaml")) is None
    # A pin moved to a newer version beside the other side's edit still merges.
    h = _hunk("a==1.0\nb = 1\n", "a==1.0\nb = 0\n", "a==1.2\nb = 0\n")
    res = token_merge(h, CTX)
    assert res is not None and res.lines == ("a==1.2\n", "b = 1\n")
