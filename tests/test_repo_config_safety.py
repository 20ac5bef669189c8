"""A repository's config cannot reach the worker's disk, run commands through git, or read
another installation's caches."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from core.config import ConfigError, load_repo_config
from tests.gitrepo import GitRepo
from workers.adapters.gitcache import GitCache
from workers.engine.git import GitError, Repository
from workers.engine.pair import Location, _branches

MakeRepo = Callable[[str], GitRepo]

REFUSED = [
    "/srv/git/other-customer.git",
    "file:///srv/git/other-customer.git",
    "../other.git",
    "-oProxyCommand=touch /tmp/pwned",
    "--upload-pack=touch /tmp/pwned",
    "ssh://git@github.com/acme/private",
    "git@github.com:acme/private.git",
    "ext::sh -c touch% /tmp/pwned",
    "https://user:token@github.com/acme/private",
    "https://github.com/acme",
    "https://github.com/../../etc/passwd",
    "http://github.com/acme/triton",
]


@pytest.mark.parametrize("url", REFUSED)
def test_repository_config_refuses_non_https_urls(url: str) -> None:
    """upstream.url from a repository may only be https://HOST/OWNER/REPO; the error names the line
    and says that mirrors and local paths are the operator's (FORKSYNC_GIT_URL_MAP)."""
    text = f"fork: {{branch: main}}\nupstream:\n  url: {url!r}\n"
    with pytest.raises(ConfigError) as err:
        load_repo_config(text)
    assert err.value.line == 3 and err.value.key == "upstream.url"
    assert "FORKSYNC_GIT_URL_MAP" in err.value.one_line()


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/triton-lang/triton",
        "https://ghe.example.com:8443/org/repo.git",
        "https://gitlab.example.com/group/sub/repo",
    ],
)
def test_https_upstream_urls_are_accepted(url: str) -> None:
    assert load_repo_config(f"upstream: {{url: {url}}}\n").upstream.url == url


@pytest.mark.parametrize("branch", ["--upload-pack=touch x", "-x", "main..x", "a b", "refs/heads/main"])
def test_branch_names_that_read_as_options_are_refused(branch: str) -> None:
    for section in ("upstream", "fork"):
        with pytest.raises(ConfigError) as err:
            load_repo_config(f"{section}:\n  branch: {branch!r}\n")
        assert err.value.key == f"{section}.branch"


def _trap(tmp_path: Path) -> tuple[str, Path]:
    marker = tmp_path / "PWNED"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    script.chmod(0o755)
    return f"--upload-pack={script}", marker


def test_an_option_shaped_url_is_inert_in_fetch(make_repo: MakeRepo, tmp_path: Path) -> None:
    """A URL such as --upload-pack=CMD reaches git after ``--``: git reads it as a repository name
    (and fails), never as an option that runs CMD."""
    source = make_repo("source")
    source.commit("x", {"a": "1\n"})
    url, marker = _trap(tmp_path)
    caches = GitCache(tmp_path / "git")
    with caches.open("k") as cache, pytest.raises(GitError):
        caches.fetch(cache, url, [str(source.path)])
    assert not marker.exists(), "the URL was parsed as a git option"


def test_an_option_shaped_url_is_inert_in_ls_remote(make_repo: MakeRepo, tmp_path: Path) -> None:
    url, marker = _trap(tmp_path)
    assert _branches(Location(given=url, role="upstream", url=url, path=None, objects=None)) == []
    assert not marker.exists()


def test_an_option_shaped_rev_is_inert_in_rev_parse(make_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_repo("r")
    repo.commit("x", {"a": "1\n"})
    assert Repository(repo.path).rev_parse("--git-dir") is None


def test_installations_never_share_a_cache(tmp_path: Path) -> None:
    """Two installations naming the same upstream get two caches, neither inside the other's root."""
    one = GitCache.for_installation(tmp_path / "git", 1)
    two = GitCache.for_installation(tmp_path / "git", 2)
    with (
        one.open("upstream:https://github.com/acme/private") as a,
        two.open("upstream:https://github.com/acme/private") as b,
    ):
        assert a.path != b.path
        assert one.root not in b.path.parents and two.root not in a.path.parents
