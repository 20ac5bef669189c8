"""Conflict resolution with deterministic rails: the pipeline, memory, the agent protocol, ``resolve_pick``.

Pure engine (no Flask, PyGithub or Celery). See docs/conflicts.md.
"""

from workers.engine.resolve.model import FileEntry, HunkResolution, RailFailure, ResolveOutcome, Waiting
from workers.engine.resolve.pick import resolve_pick

__all__ = ["FileEntry", "HunkResolution", "RailFailure", "ResolveOutcome", "Waiting", "resolve_pick"]
