"""Process logging: plain lines for a terminal, JSON lines for a log pipeline.

``GHOST_LOG_FORMAT=json`` (the container image sets it) writes one JSON object per line to
stderr with ``ts``, ``level``, ``logger``, ``message``, ``session_id`` (``null`` outside an
investigation), ``process`` and, for errors, ``exc`` (the traceback as one string). The session
id comes from :func:`session_context`, which the worker enters around each investigation, so
every line a step logs — engine, gate, chat — carries it without passing it around.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, TextIO

_SESSION: ContextVar[str | None] = ContextVar("ghost_session_id", default=None)
#: the record attributes every LogRecord has; anything else was passed with ``extra=``
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "session_id", "session_tag", "taskName"}


@contextmanager
def session_context(session_id: str | None) -> Iterator[None]:
    """Tag every log line of this thread (and its context) with ``session_id``."""
    token = _SESSION.set(session_id)
    try:
        yield
    finally:
        _SESSION.reset(token)


def current_session() -> str | None:
    return _SESSION.get()


class SessionFilter(logging.Filter):
    """Puts ``session_id`` on each record (an explicit ``extra={"session_id": …}`` wins)."""

    def filter(self, record: logging.LogRecord) -> bool:
        session_id = getattr(record, "session_id", None) or _SESSION.get()
        record.session_id = session_id
        record.session_tag = session_id or "-"
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line; never raises on an odd ``extra`` value."""

    def __init__(self) -> None:
        super().__init__()
        self.process_name = f"{socket.gethostname()}:{os.getpid()}"

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "session_id": getattr(record, "session_id", None) or _SESSION.get(),
            "process": self.process_name,
            "thread": record.threadName,
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in doc:
                doc[key] = value
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            doc["exc"] = record.exc_text
        return json.dumps(doc, default=str, ensure_ascii=False)


def configure(fmt: str | None = None, *, level: int = logging.INFO,
              stream: TextIO | None = None) -> logging.Handler:
    """Install the one stderr handler on the root logger (replacing earlier ones).

    ``fmt``: ``json`` or ``text``; default ``GHOST_LOG_FORMAT`` (``text`` when unset).
    """
    chosen = (fmt or os.environ.get("GHOST_LOG_FORMAT") or "text").strip().lower()
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(SessionFilter())
    if chosen == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(
            "%(asctime)s %(levelname)s %(name)s [%(session_tag)s]: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    if chosen not in ("json", "text"):
        logging.getLogger("ghost").warning(
            "GHOST_LOG_FORMAT=%s is not known; use json or text (text is used)", chosen)
    return handler
