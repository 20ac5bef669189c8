"""The repository config: typed defaults, and errors that quote the line at fault."""

from __future__ import annotations

import pytest

from core.config import ConfigError, RepoConfig, load_repo_config

EXAMPLE = """\
upstream: {url: https://github.com/triton-lang/triton, branch: main}
fork: {branch: main}
bundle: {max_commits: 30, max_lines: 5000}
risk:
  diverged_zones: ["lib/Dialect/TritonGPU/Transforms/WarpSpecialization/**"]
  risky_paths: ["cmake/llvm-hash.txt"]
  max_lines: 2000
  symbol_stoplist: [init]
ledger:
  trailer: "(cherry picked from commit {sha})"
l1:
  suites:
    - name: unit
      run: [pytest, -q, python/test/unit, "--junitxml={junit}"]
      timeout: 1800
      gpu: true
      min_tests: 2000
      owners: [some-team]
  required_checks: ["Build / linux"]
l3:
  workloads:
    - {name: ads-ranking, owners: [alice, bob]}
"""


def test_empty_file_gives_defaults() -> None:
    """An empty config is valid and equals the defaults."""
    assert load_repo_config("") == RepoConfig()


def test_example_config_parses_into_typed_records() -> None:
    """The documented example parses with every key where the issues say."""
    cfg = load_repo_config(EXAMPLE)
    assert cfg.upstream.url == "https://github.com/triton-lang/triton"
    assert cfg.risk.risky_paths == ("cmake/llvm-hash.txt",)
    assert cfg.l1.suites[0].run[-1] == "--junitxml={junit}"
    assert cfg.l1.suites[0].gpu is True and cfg.l1.suites[0].min_tests == 2000
    assert cfg.workload("ADS-ranking") is not None
    assert cfg.l1.required_checks == ("Build / linux",)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("bundle:\n  max_commits: lots\n", 2, "bundle.max_commits: expected an integer"),
        ("bundle:\n  max_comits: 3\n", 2, "bundle.max_comits: unknown key"),
        ("risk:\n  max_lines: -1\n", 2, "must be at least 1"),
        ("l1:\n  suites:\n    - name: u\n      run: pytest -q\n", 4, "expected a list of arguments"),
        ("ledger:\n  trailer: picked\n", 2, "must contain {sha}"),
        ("fork: [1, 2\n", 2, "not valid YAML"),
        ("l3:\n  workloads:\n    - name: w\n", 3, "needs at least one owner"),
        (
            "l2:\n  benchmarks:\n    - name: b\n      run: [x]\n      metrics:\n        - {name: t, direction: up}\n",
            6,
            "must be higher or lower",
        ),
    ],
)
def test_errors_name_line_and_key(text: str, line: int, fragment: str) -> None:
    """Each malformed config raises ConfigError quoting the file, the line and the key, on one line."""
    with pytest.raises(ConfigError) as info:
        load_repo_config(text, "forksync.yml")
    message = str(info.value)
    assert message.startswith(f"forksync.yml:{line}:"), message
    assert fragment in message
    assert "\n" not in message


def test_l1_triage_keys_have_defaults_and_reject_unknown_classes() -> None:
    """l1.fail_on defaults to new failures only; an unknown triage class is an error on its line."""
    cfg = load_repo_config("l1:\n  flaky_reruns: 0\n  fail_on: [new, broken_trunk]\n")
    assert cfg.l1.fail_on == ("new", "broken_trunk") and cfg.l1.flaky_reruns == 0
    assert RepoConfig().l1.fail_on == ("new",) and RepoConfig().l1.flaky_reruns == 1
    with pytest.raises(ConfigError) as info:
        load_repo_config("l1:\n  fail_on:\n    - flakey\n", "forksync.yml")
    assert str(info.value).startswith("forksync.yml:3: l1.fail_on[0]: unknown triage class 'flakey'")


def test_bundle_committer_is_name_and_email() -> None:
    """bundle.committer defaults to the bot and must read 'Name <email>' (line-accurate error)."""
    from core.config import DEFAULT_COMMITTER

    assert load_repo_config("").bundle.committer == DEFAULT_COMMITTER
    assert load_repo_config('bundle: {committer: "Fork Bot <bot@fork.example>"}').bundle.committer == (
        "Fork Bot <bot@fork.example>"
    )
    with pytest.raises(ConfigError, match=r"forksync.yml:3: bundle.committer: expected 'Name <email>'"):
        load_repo_config("bundle:\n  max_commits: 5\n  committer: fork-bot\n")


def test_values_read_exactly_as_yaml_safe_load_reads_them() -> None:
    """The line-tracking reader gives the same values as yaml.safe_load (ints, floats, bools, null,
    quoted and unquoted strings, lists, nested maps, anchors) and keeps each key's line."""
    import yaml

    from core.config import _Doc

    text = (
        "a: 1\nb: 2.5\nc: true\nd: null\ne: '007'\nf: \"x: y\"\ng: [1, two, 3.0, false]\n"
        "h:\n  i: &anchor {j: k}\n  l: *anchor\n  m: 0x1f\n  n: ~\n  o: yes\n"
    )
    doc = _Doc(text, "forksync.yml")
    assert doc.data == yaml.safe_load(text)
    assert doc.lines[("h", "l")] == 10 and doc.lines[("g",)] == 7


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        ("bundle:\n  max_commits: 5\n  max_commits: 50\n", 3, "bundle.max_commits"),
        ("bundle: {max_lines: 1}\nrisk: {}\nbundle: {max_lines: 2}\n", 3, "bundle"),
        ("l1:\n  suites:\n    - {name: u, run: [x], timeout: 60, timeout: 1}\n", 3, "l1.suites[0].timeout"),
    ],
)
def test_duplicate_keys_are_refused_on_the_second_ones_line(text: str, line: int, key: str) -> None:
    """A key given twice in one mapping is an error at the second one (YAML would keep the last silently)."""
    with pytest.raises(ConfigError) as info:
        load_repo_config(text, "forksync.yml")
    message = str(info.value)
    assert message.startswith(f"forksync.yml:{line}: {key}: duplicate key (first given on line "), message
    assert "\n" not in message


def test_every_key_and_default_comes_from_the_records() -> None:
    """The loader knows exactly the records' fields, and an empty file gives each field's default
    (walked over the whole schema: keys and defaults are declared once, in the dataclasses)."""
    import dataclasses

    def walk(record: object, path: str) -> None:
        for f in dataclasses.fields(record):  # type: ignore[arg-type]
            value = getattr(record, f.name)
            if f.default is not dataclasses.MISSING:
                assert value == f.default, f"{path}{f.name}"
            if dataclasses.is_dataclass(value):
                walk(value, f"{path}{f.name}.")

    walk(load_repo_config(""), "")
    with pytest.raises(ConfigError) as info:
        load_repo_config("resolve:\n  agent:\n    modle: x\n", "forksync.yml")
    known = [f.name for f in dataclasses.fields(type(RepoConfig().resolve.agent))]
    assert f"known keys here: {', '.join(known)}" in str(info.value)


def test_record_checks_see_the_whole_record() -> None:
    """resolve.agent: a command and a url together are refused on the url's line."""
    with pytest.raises(ConfigError, match=r"forksync.yml:4: resolve.agent.url: give either command or url"):
        load_repo_config(
            "resolve:\n  agent:\n    command: [agent]\n    url: https://x.example/v1\n", "forksync.yml"
        )
