"""How ``messages.jsonl`` and ``upstream.jsonl`` were made (kept for provenance; not run by tests).

``messages.jsonl``: real commit messages of release branches, verbatim (``git log -1
--format=%B``), one per backport form ``benchmarks/bench_backport_forms.py`` was measured on
(and a few that only mention a backport), with the number of parents (merges are read for the
forms their tooling writes there); ``upstream.jsonl``: the commits of each project's main
branch those messages name (by ``#N``, ``gh-N``, a backport branch's numbers, a sha (a sha
names a side commit as the mirror has it), or, listed in ``NAMED_OTHERWISE``, their words or
Gerrit Change-Id), with their real sha, subject and Change-Id (where they have one).

Run: ``python tests/data/backport-forms/vendor.py MIRRORS_DIR [PROJECT ...]`` (the ``fetch``
tool's ``/work/.mirror``: one ``owner+name/repo`` bare clone per project; with PROJECTs, only
their rows are made again and the others kept).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
# project -> (main branch, the fork-side commits vendored, each with why)
PROJECTS: dict[str, tuple[str, dict[str, str]]] = {
    "ipython/ipython": (
        "main",
        {
            "91ad38145c": "MeeseeksDev: Backport PR #N on branch 8.x (<subject>) (#M), body Backport PR #N: ...",
            "4e9a57805c": "body: Backport PR <pull link> on branch 8.x",
            "a968bd3c50": "Backport of the 8.x part of <pull link>: a partial port, carries nothing",
            "0f52b53723": "Backport PR #N: <subject> (the file moved upstream: no patch-id match)",
            "288ca3349": "merge: from Carreau/auto-backport-of-pr-12823-on-7.x, body Backport PR #N on branch 7.x (...)",
            "5f1cd280cc": "Manually backport #N: <subject>",
            "6e65c1af69": 'Revert "Backport PR #N on branch 7.x (...)": a revert, no pick',
        },
    ),
    "scikit-image/scikit-image": (
        "main",
        {
            "3f9f861ed": "Backport PR #N on branch v0.19.x (<subject>) (#M)",
            "5fa4ed4d7": "backport gh-N: <subject> (#M)",
            "ce2e60d00": "Backport PR #N: <subject> (#M)",
            "7277314a6c": "<subject> (Backport of #N)",
        },
    ),
    "numpy/numpy": (
        "main",
        {
            "da9f9c3bba": "body: Backport of #N",
            "526a2f45e4": "body: Backport of #a, #b, and #c.",
            "ca9aa54707": "merge: body DOC: Backport gh-a and  gh-b",
            "567729acc7": "merge: from charris/backport-N, body is the subject only",
            "fc324e360f": "Partial backport of #N.: carries nothing",
            "f59a423b34": "<subject> (backport of #N)",
        },
    ),
    "kubernetes/kops": (
        "master",
        {
            "331f630d32": "merge: Automated cherry pick of #a: <subject>\\n#b: <subject>",
            "f6c69bbad9": "merge: three picks, one subject cut with …",
            "29de6aeb43": "merge: Automated cherry pick of #N: Pin ... (a subject that says Pin)",
            "7b7ffa37f5": "merge: Cherry-pick #N: <subject>, branch release-1.34-cherry-pick-N",
            "494a76ca81": "merge: five picks joined on one line",
            "4da3ec985b": "merge: Manual cherry pick of #N: <subject>",
            "efe96d890b": "merge: Partial backport of #N on branch backport-N: carries nothing",
            "438b972b0c": "prose: The cherry-pick of #N carried ...: carries nothing",
        },
    ),
    "linux-rdma/rdma-core": (
        "master",
        {
            "950e2da59": "[ Upstream commit <sha> ] (Linux-stable style)",
            "f49c9358f": "[ Upstream commit <sha> ], a second one",
        },
    ),
    "aio-libs/aiohttp": (
        "master",
        {
            "35785a7c1e": "patchback: [PR #N/<short sha> backport][3.15] <subject> (#M), body This is a backport of PR #N",
            "6bb46cf6a1": "patchback title, body Manual backport of #N (squash commit <sha>)",
        },
    ),
    "pytest-dev/pytest": (
        "main",
        {
            "c2af01e560": "merge: from patchback/backports/9.0.x/<sha>/pr-N, body [PR #N/<short sha> backport][9.0.x] ...",
            "2b35bfa112": "no merge (a merge's copy), its subject the merge's, body [PR #N/<short sha> backport][8.3.x] ...",
        },
    ),
    "opensearch-project/job-scheduler": (
        "main",
        {
            "43fa5a60b2": "[Backport 2.19] <upstream subject without its (#N)> (#M)",
            "b8cc244598": "[Backport 2.x] <upstream subject without its (#N)> (#M)",
        },
    ),
    "sqlalchemy/sqlalchemy": (
        "main",
        {
            "9ae9b434ef": "Gerrit: only a Change-Id, upstream's commit has the same one",
            "9528b5977d": "Gerrit: retitled, cherry picked from a sha main does not hold, Change-Id upstream's",
        },
    ),
}
# Upstream commits a message names by neither number nor sha (its words, its Change-Id).
NAMED_OTHERWISE: dict[str, list[str]] = {
    "opensearch-project/job-scheduler": ["878e158539", "8eecad00d2"],
    "sqlalchemy/sqlalchemy": ["1c3efa4bc7", "54a4ac0eb9"],
}
_NUMBERS = re.compile(r"(?i)(?:#|gh-|/pull/)(\d+)\b|backport-(?:of-pr-)?((?:\d+-?)+)|cherry-pick-(\d+)")
_SHAS = re.compile(r"\b[0-9a-f]{40}\b")
_PR = re.compile(r"\(#(\d+)\)\s*$|^Merge pull request #(\d+)\b")


def git(mirror: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(mirror), *args], capture_output=True, text=True, check=True
    ).stdout


def main(mirrors: Path, only: list[str]) -> None:
    """Vendor every project, or only those named (the other projects' rows are kept as they are)."""
    kept = [
        [
            r
            for r in map(json.loads, (HERE / name).read_text().splitlines())
            if only and r["project"] not in only
        ]
        for name in ("messages.jsonl", "upstream.jsonl")
    ]
    messages, upstream = kept
    for project, (branch, picks) in PROJECTS.items():
        if only and project not in only:
            continue
        mirror = mirrors / project.replace("/", "+") / "repo"
        # main's history (first-parent line and what its merges brought in), newest first
        line = [
            x.split("\x1f", 1)
            for x in git(mirror, "log", "--topo-order", "--format=%H\x1f%s", branch).splitlines()
        ]
        by_pr: dict[int, tuple[str, str]] = {}
        for sha, subject in reversed(line):  # oldest first: a re-land keeps its newest
            m = _PR.search(subject)
            if m:
                by_pr[int(m.group(1) or m.group(2))] = (sha, subject)
        wanted: dict[str, str] = {}
        for short, why in picks.items():
            sha = git(mirror, "rev-parse", short).strip()
            message = git(mirror, "log", "-1", "--format=%B", sha).rstrip("\n")
            parents = len(git(mirror, "log", "-1", "--format=%P", sha).split())
            messages.append(
                {"project": project, "sha": sha, "parents": parents, "why": why, "message": message}
            )
            for m in _NUMBERS.finditer(message):
                for n in re.findall(r"\d+", "".join(g or "" for g in m.groups())):
                    if int(n) in by_pr:
                        wanted.setdefault(*by_pr[int(n)])
            for named in _SHAS.findall(message):
                try:
                    subject = git(mirror, "log", "-1", "--format=%s", named).strip()
                except subprocess.CalledProcessError:
                    continue  # a sha the mirror does not hold names nothing here
                wanted.setdefault(named, subject)
        for short in NAMED_OTHERWISE.get(project, []):
            sha = git(mirror, "rev-parse", short).strip()
            wanted.setdefault(sha, git(mirror, "log", "-1", "--format=%s", sha).strip())
        order = {sha: i for i, (sha, _) in enumerate(reversed(line))}
        for sha, subject in sorted(wanted.items(), key=lambda kv: order.get(kv[0], -1)):
            row = {"project": project, "sha": sha, "subject": subject}
            ids = git(mirror, "log", "-1", "--format=%(trailers:key=Change-Id,valueonly)", sha).split()
            if ids:  # Gerrit's: a cherry-pick keeps it
                row["change_id"] = ids[0]
            upstream.append(row)
    (HERE / "messages.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in messages))
    (HERE / "upstream.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in upstream))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
