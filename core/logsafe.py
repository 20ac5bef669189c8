"""Log lines that outside text cannot forge: CR, LF, NUL and other control characters in the
arguments of a log call (payload values, comment text, git output) are escaped.

``install()`` wraps the logging record factory once per process (the web app and the Celery
app call it), so every logger is covered, whoever configured the handlers.
"""

from __future__ import annotations

import logging
import re
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` with every control character (tab aside) as a visible escape such as ``\\x0a``."""
    return _CONTROL.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text
    )


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return one_line(value)
    if isinstance(value, bytes):
        return one_line(value.decode("utf-8", "replace"))
    return value


_installed = False


def install() -> None:
    """Escape control characters in every log record's arguments (idempotent)."""
    global _installed
    if _installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if isinstance(record.args, tuple):
            record.args = tuple(_clean(a) for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: _clean(v) for k, v in record.args.items()}
        return record

    logging.setLogRecordFactory(factory)
    _installed = True
