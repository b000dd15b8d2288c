"""Typed errors that carry what an on-call engineer needs to act.

Every error a user can see derives from :class:`GhostError`: a one-line ``message`` saying what
went wrong and a ``hint`` saying what to do next. Front ends print ``str(error)``; they never show
a traceback for a ``GhostError``.
"""

from __future__ import annotations


class GhostError(Exception):
    """Base of every error Ghost shows to a person."""

    exit_code: int = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} {self.hint}" if self.hint else self.message


class UnknownInvestigation(GhostError):
    """A session id that is not in the store."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"No investigation '{session_id}' in this database.",
            "List investigations with `ghost session list`, or check GHOST_DATABASE_URL.",
        )
        self.session_id = session_id


class ConcurrentUpdate(GhostError):
    """A compare-and-set lost a race: someone else changed the row first."""


class AuditIntegrityError(GhostError):
    """The audit chain of an investigation does not verify."""

    exit_code = 3
