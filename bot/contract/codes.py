"""Stable error codes and the one exit-code table of every `ghost` command.

A consumer branches on ``code`` (never on the message, which is for people) and on the exit
status. The table is documented in docs/agent-contract.md; a test keeps the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum

from core.errors import GhostError


class Exit(IntEnum):
    """What the exit status means, whatever the command."""

    OK = 0
    #: the command worked, and a person must look (waiting for a human, refused, already decided)
    ATTENTION = 1
    #: the arguments or the ids given are wrong: fix the call, do not retry it as it is
    USAGE = 2
    #: evidence does not verify (a tampered audit chain)
    INTEGRITY = 3
    #: the wait (``--timeout``) ran out; the investigation itself goes on
    TIMEOUT = 6
    #: something Ghost depends on failed: the database, the schema, Gemini, Azure
    DATABASE = 10
    SCHEMA = 11
    GEMINI = 12
    AZURE = 13
    #: a bug: the traceback is in the log, never on stdout
    INTERNAL = 20


class Code(StrEnum):
    SESSION_NOT_FOUND = "SESSION_NOT_FOUND"
    APPROVAL_NOT_FOUND = "APPROVAL_NOT_FOUND"
    AUDIT_NOT_FOUND = "AUDIT_NOT_FOUND"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    APPROVAL_NOT_PENDING = "APPROVAL_NOT_PENDING"
    NOT_ALLOWED = "NOT_ALLOWED"
    NOT_WAITING = "NOT_WAITING"
    NO_WORKER = "NO_WORKER"
    FAILED = "FAILED"
    INTEGRITY_FAILED = "INTEGRITY_FAILED"
    TIMEOUT = "TIMEOUT"
    DATABASE_UNREACHABLE = "DATABASE_UNREACHABLE"
    SCHEMA_BEHIND = "SCHEMA_BEHIND"
    SCHEMA_AHEAD = "SCHEMA_AHEAD"
    GEMINI_UNAVAILABLE = "GEMINI_UNAVAILABLE"
    AZURE_AUTH_FAILED = "AZURE_AUTH_FAILED"
    INTERNAL = "INTERNAL"


#: code -> (exit status, recoverable by retrying later or by another action)
TABLE: dict[Code, tuple[Exit, bool]] = {
    Code.SESSION_NOT_FOUND: (Exit.USAGE, False),
    Code.APPROVAL_NOT_FOUND: (Exit.USAGE, False),
    Code.AUDIT_NOT_FOUND: (Exit.USAGE, False),
    Code.INVALID_ARGUMENT: (Exit.USAGE, False),
    Code.APPROVAL_NOT_PENDING: (Exit.ATTENTION, False),
    Code.NOT_ALLOWED: (Exit.ATTENTION, True),
    Code.NOT_WAITING: (Exit.ATTENTION, False),
    Code.NO_WORKER: (Exit.USAGE, True),
    Code.FAILED: (Exit.ATTENTION, True),
    Code.INTEGRITY_FAILED: (Exit.INTEGRITY, False),
    Code.TIMEOUT: (Exit.TIMEOUT, True),
    Code.DATABASE_UNREACHABLE: (Exit.DATABASE, True),
    Code.SCHEMA_BEHIND: (Exit.SCHEMA, True),
    Code.SCHEMA_AHEAD: (Exit.SCHEMA, True),
    Code.GEMINI_UNAVAILABLE: (Exit.GEMINI, True),
    Code.AZURE_AUTH_FAILED: (Exit.AZURE, True),
    Code.INTERNAL: (Exit.INTERNAL, False),
}


class ContractError(GhostError):
    """An error raised by a contract command with its code and what to do about it."""

    def __init__(self, code: Code, message: str, recovery_action: str | None = None) -> None:
        super().__init__(message, recovery_action)
        self.code = code
        self.exit_code = int(TABLE[code][0])


@dataclass(frozen=True)
class ErrorInfo:
    code: Code
    message: str
    recoverable: bool
    recovery_action: str | None

    @property
    def exit_code(self) -> int:
        return int(TABLE[self.code][0])

    def as_dict(self) -> dict[str, object]:
        return {"code": str(self.code), "message": self.message,
                "recoverable": self.recoverable, "recovery_action": self.recovery_action}


#: exception class names (anywhere in the MRO) -> code; names, so that no SDK is imported here
_BY_NAME: dict[str, Code] = {
    "UnknownInvestigation": Code.SESSION_NOT_FOUND,
    "DatabaseUnreachable": Code.DATABASE_UNREACHABLE,
    "OperationalError": Code.DATABASE_UNREACHABLE,
    "DatabaseNotMigrated": Code.SCHEMA_BEHIND,
    "DatabaseTooNew": Code.SCHEMA_AHEAD,
    "BrainUnavailable": Code.GEMINI_UNAVAILABLE,
    "BrainError": Code.GEMINI_UNAVAILABLE,
    "ClientAuthenticationError": Code.AZURE_AUTH_FAILED,
    "CredentialUnavailableError": Code.AZURE_AUTH_FAILED,
    "AuditIntegrityError": Code.INTEGRITY_FAILED,
    "NotWaiting": Code.NOT_WAITING,
}


def classify(exc: BaseException) -> ErrorInfo:
    """The contract's view of any exception (INTERNAL for anything unforeseen)."""
    if isinstance(exc, ContractError):
        return ErrorInfo(exc.code, exc.message, TABLE[exc.code][1], exc.hint)
    code = next((_BY_NAME[c.__name__] for c in type(exc).__mro__ if c.__name__ in _BY_NAME),
                None)
    if isinstance(exc, GhostError):
        if code is None:
            code = Code.INVALID_ARGUMENT if exc.exit_code == 2 else Code.FAILED
        return ErrorInfo(code, exc.message, TABLE[code][1], exc.hint)
    if code is Code.DATABASE_UNREACHABLE:
        line = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        return ErrorInfo(code, f"The database failed: {line[0] if line else type(exc).__name__}.",
                         True, "Check GHOST_DATABASE_URL and that the server is running.")
    if code is not None:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return ErrorInfo(code, first, TABLE[code][1], None)
    return ErrorInfo(Code.INTERNAL, f"Unexpected {type(exc).__name__} inside Ghost.", False,
                     "Report it with the log entry named in this message.")
