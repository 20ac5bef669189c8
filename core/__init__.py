"""The neutral core that both halves import: repository config, process settings, errors, the
task-name contract, the comment-command parser, the renderers of bot-written text and the one
GitHub interface (``core.github``), and the shared SQL store (``core.store``).

Imports go one way: ``core`` imports neither ``bot`` (the Flask process) nor ``workers``; the
engine (``workers.engine``, ``workers.testing``) imports ``core`` and none of Flask, PyGithub or
Celery (``tests/test_import_rules.py`` checks all of this).
"""
