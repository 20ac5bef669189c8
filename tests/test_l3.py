"""L3 sign-off through the loopback GitHub: request, refusal, owner sign-off, push reset, workload metrics."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from core.config import load_repo_config
from core.github.records import CheckOutput, CheckRunInfo
from core.render.l3 import parse_state
from core.tasknames import RUN_L3, queue_for
from tests.gitrepo import GitRepo
from tests.loopback_github import LoopbackGitHub
from workers.testing.l3 import request_l3, reset_l3_on_push, signoff_l3
from workers.testing.l3_run import run_l3_workload

REPO = "acme/fork"
HEAD, NEXT = "a" * 40, "b" * 40
CONFIG = load_repo_config(
    "l3:\n  workloads:\n"
    "    - {name: llama-train, owners: [alice, '@Bob'], run: [" + sys.executable + ", train.py]}\n"
    "    - {name: ads-infer, owners: [carol], reset_on_push: false}\n"
)
CHECK = "forksync / L3: llama-train"


def checks(gh: LoopbackGitHub, sha: str, name: str = CHECK) -> list[dict[str, Any]]:
    return [r for r in gh.state.check_runs[REPO].values() if r["head_sha"] == sha and r["name"] == name]


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Mapping[str, Any]]] = []

    def __call__(self, name: str, kwargs: Mapping[str, Any]) -> None:
        self.sent.append((name, kwargs))


def test_l3_request_creates_one_check_awaiting_owners_and_queues_the_run(
    loopback_github: LoopbackGitHub,
) -> None:
    """/l3 makes `forksync / L3: W` in progress naming the owners, queues the command on l2, never twice."""
    port = loopback_github.adapter(loopback_github.installation)
    queue = Recorder()
    reply = request_l3(
        port, REPO, HEAD, "LLAMA-train", CONFIG, requested_by="dave", enqueue=queue, installation_id=7
    )
    assert reply.ok and "awaiting sign-off from @alice, @Bob" in reply.text
    [run] = checks(loopback_github, HEAD)
    assert run["status"] == "in_progress" and run["conclusion"] is None
    assert run["output"]["title"] == "Awaiting sign-off from @alice, @Bob"
    assert (
        "`/signoff llama-train`" in run["output"]["summary"]
        and "Requested by @dave" in run["output"]["summary"]
    )
    assert queue.sent == [
        (
            RUN_L3,
            {
                "repo": REPO,
                "head_sha": HEAD,
                "workload": "llama-train",
                "check_run_id": run["id"],
                "installation_id": 7,
            },
        )
    ]
    assert queue_for(RUN_L3) == "l2"
    again = request_l3(port, REPO, HEAD, "llama-train", CONFIG, enqueue=queue)
    assert again.ok and "already awaiting" in again.text
    assert len(checks(loopback_github, HEAD)) == 1 and len(queue.sent) == 1


def test_signoff_by_non_owner_is_refused_and_changes_nothing(loopback_github: LoopbackGitHub) -> None:
    """Anyone but an owner is refused with the owners named; the check stays awaiting sign-off."""
    port = loopback_github.adapter(loopback_github.installation)
    request_l3(port, REPO, HEAD, "llama-train", CONFIG)
    reply = signoff_l3(port, REPO, HEAD, "llama-train", "mallory", CONFIG)
    assert not reply.ok
    assert reply.text.startswith(
        "@mallory cannot sign off **llama-train**: only its owners can (@alice, @Bob)"
    )
    [run] = checks(loopback_github, HEAD)
    assert run["status"] == "in_progress" and run["conclusion"] is None


def test_owner_signoff_completes_the_check_naming_who_signed(loopback_github: LoopbackGitHub) -> None:
    """An owner (any case, with or without @) completes it: success, signer named, state rebuildable."""
    port = loopback_github.adapter(loopback_github.installation)
    request_l3(port, REPO, HEAD, "llama-train", CONFIG)
    reply = signoff_l3(port, REPO, HEAD, "llama-train", "@bob", CONFIG)
    assert reply.ok and reply.text == f"@bob signed off L3 **llama-train** on {HEAD[:12]}."
    [run] = checks(loopback_github, HEAD)
    assert (run["status"], run["conclusion"]) == ("completed", "success")
    assert run["output"]["title"] == "Signed off by @bob"
    state = parse_state(run["output"]["text"])
    assert state is not None and state.signed_by == "bob"
    second = signoff_l3(port, REPO, HEAD, "llama-train", "alice", CONFIG)
    assert "already signed off by @bob" in second.text and len(checks(loopback_github, HEAD)) == 1


def test_unknown_workload_is_answered_with_the_known_ones(loopback_github: LoopbackGitHub) -> None:
    """A typo gets a reply listing the configured workloads, and no check run."""
    port = loopback_github.adapter(loopback_github.installation)
    for reply in (
        request_l3(port, REPO, HEAD, "lama", CONFIG),
        signoff_l3(port, REPO, HEAD, "lama", "alice", CONFIG),
    ):
        assert (
            not reply.ok
            and "no L3 workload named `lama`" in reply.text
            and "`llama-train`, `ads-infer`" in reply.text
        )
    assert loopback_github.state.check_runs[REPO] == {}


def test_push_resets_signoff_unless_the_workload_keeps_it(loopback_github: LoopbackGitHub) -> None:
    """After a push, llama-train awaits sign-off again on the new head; ads-infer (reset_on_push: false) keeps it."""
    port = loopback_github.adapter(loopback_github.installation)
    queue = Recorder()
    for name, owner in (("llama-train", "alice"), ("ads-infer", "carol")):
        request_l3(port, REPO, HEAD, name, CONFIG)
        signoff_l3(port, REPO, HEAD, name, owner, CONFIG)
    replies = reset_l3_on_push(port, REPO, HEAD, NEXT, CONFIG, enqueue=queue)
    assert [r.text.split(":")[0] for r in replies] == ["L3 **llama-train**", "L3 **ads-infer**"]
    [reset] = checks(loopback_github, NEXT)
    assert (
        reset["status"] == "in_progress" and reset["output"]["title"] == "Awaiting sign-off from @alice, @Bob"
    )
    assert f"A new push reset the sign-off given on {HEAD[:12]}" in reset["output"]["summary"]
    assert [name for name, _ in queue.sent] == [RUN_L3]  # the workload runs again on the new code
    [kept] = checks(loopback_github, NEXT, "forksync / L3: ads-infer")
    assert kept["conclusion"] == "success" and kept["output"]["title"] == "Signed off by @carol"
    assert "kept on push" in kept["output"]["summary"]
    # The old head's checks are history: untouched.
    assert checks(loopback_github, HEAD)[0]["conclusion"] == "success"
    assert reset_l3_on_push(port, REPO, HEAD, NEXT, CONFIG) == []  # a redelivered push changes nothing


TRAIN = 'import json\nprint("step 100 loss 1.93")\nprint(json.dumps({"metrics": {"tokens_per_s": 5120.5, "loss": 1.93}}))\n'


def test_workload_run_attaches_metrics_and_never_overwrites_a_signoff(
    loopback_github: LoopbackGitHub, make_repo: Callable[[str], GitRepo]
) -> None:
    """The l2 job runs the command in a clean checkout, attaches metrics; a sign-off during the run survives."""
    fork = make_repo("fork")
    head = fork.commit("add training script", {"train.py": TRAIN})
    adapter = loopback_github.adapter(loopback_github.installation)

    class SignsDuringRun:
        """The adapter, with an owner signing off right after the job marks the check running."""

        def __init__(self) -> None:
            self.updates = 0

        def create_check_run(self, repo: str, **kw: Any) -> CheckRunInfo:
            return adapter.create_check_run(repo, **kw)  # type: ignore[no-any-return]

        def list_check_runs(self, repo: str, ref: str, *, name: str | None = None) -> list[CheckRunInfo]:
            return adapter.list_check_runs(repo, ref, name=name)  # type: ignore[no-any-return]

        def update_check_run(
            self, repo: str, check_run_id: int, *, output: CheckOutput | None = None, **kw: Any
        ) -> CheckRunInfo:
            info = adapter.update_check_run(repo, check_run_id, output=output, **kw)
            self.updates += 1
            if self.updates == 1:
                signoff_l3(adapter, REPO, head, "llama-train", "alice", CONFIG)
            return info  # type: ignore[no-any-return]

    port = SignsDuringRun()
    request_l3(adapter, REPO, head, "llama-train", CONFIG, enqueue=Recorder())
    reply = run_l3_workload(port, REPO, head, "llama-train", CONFIG, Path(fork.path))
    assert reply.ok and "tokens_per_s=5120.5" in reply.text
    [run] = checks(loopback_github, head)
    assert (run["status"], run["conclusion"]) == ("completed", "success")
    assert "| tokens_per_s | 5120.5 |" in run["output"]["text"]
    state = parse_state(run["output"]["text"])
    assert state is not None and state.signed_by == "alice" and state.run == "passed"
    assert state.metrics == {"loss": 1.93, "tokens_per_s": 5120.5}
    assert not (Path(fork.path) / "__pycache__").exists() and fork.git("status", "--porcelain") == ""
