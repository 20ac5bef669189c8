"""benchmarks/profile_status.py's accounting: git children by command, Python stages exclusive."""

from __future__ import annotations

import subprocess
import threading
import time

from benchmarks import profile_status


def test_git_commands_are_labelled_by_subcommand_and_costly_options() -> None:
    label = profile_status._git_label
    assert label(
        ["/usr/bin/git", "-C", "/r", "-c", "core.quotePath=false", "log", "--raw", "--first-parent", "x"]
    ) == ("git log --raw --first-parent")
    assert label(["git", "merge-base", "a", "b"]) == "git merge-base"
    assert label(["sh", "-c", "true"]) == "sh"


def test_every_child_is_counted_once_and_nested_stages_are_subtracted() -> None:
    """Two git processes run side by side are each counted under their command; a stage's CPU
    excludes the stage nested in it."""
    recorder = profile_status._Recorder()
    original = subprocess.Popen._try_wait  # type: ignore[attr-defined]
    profile_status._install(recorder)
    try:
        threads = [
            threading.Thread(
                target=subprocess.run,
                args=(["git", "hash-object", "--stdin"],),
                kwargs={"input": b"x", "capture_output": True},
            )
            for _ in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        subprocess.Popen._try_wait = original  # type: ignore[attr-defined]
    assert recorder.git_count == {"git hash-object --stdin": 2}

    def spin(seconds: float) -> None:
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    inner = recorder.wrap("inner", lambda: spin(0.05))
    outer = recorder.wrap("outer", lambda: (spin(0.02), inner()))
    outer()
    assert recorder.stages["inner"] >= 0.05
    assert 0.02 <= recorder.stages["outer"] < 0.045
