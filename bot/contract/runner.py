"""Running a command under ``--json``: every failure becomes one error document on stdout.

``{"error": {"code", "message", "recoverable", "recovery_action"}}`` inside the envelope, with
the exit status of the code's row in the table. A traceback never reaches stdout or stderr: an
unforeseen exception is written to the log (the configured handlers, else
``DATA_DIR/logs/ghost-cli.log``) under an id that the error message names.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import tempfile
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from bot.contract.codes import Code, ErrorInfo, classify
from bot.contract.flags import JSON_FLAGS, wants_json
from bot.contract.output import emit

log = logging.getLogger("ghost.cli")
__all__ = ["JSON_FLAGS", "log_traceback", "parse_or_error", "print_error", "run_json",
           "wants_json"]
def print_error(info: ErrorInfo, *, session_id: str | None = None,
                out: TextIO | None = None) -> int:
    emit({"error": info.as_dict()}, session_id=session_id, out=out)
    return info.exit_code


def _log_dir() -> Path:
    try:
        from bot.settings import load_settings

        return load_settings().data_dir / "logs"
    except Exception:  # noqa: BLE001 - the settings may be what is broken
        return Path(os.environ.get("GHOST_DATA_DIR") or tempfile.gettempdir()) / "logs"


def log_traceback(exc: BaseException) -> str:
    """Write the traceback to the log; where it went, for the error message."""
    ref = uuid.uuid4().hex[:8]
    if logging.getLogger().handlers:
        log.error("unexpected error %s", ref, exc_info=exc)
        return f"the log, entry {ref}"
    path = _log_dir() / "ghost-cli.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"--- {ref} ---\n")
            fh.write("".join(traceback.format_exception(exc)))
        return f"{path}, entry {ref}"
    except OSError:
        return f"nowhere (could not write {path}), entry {ref}"


def run_json(run: Callable[[], int], *, session_id: str | None = None) -> int:
    """Run a handler in ``--json`` mode: its exit status, or the error document's."""
    try:
        return run()
    except KeyboardInterrupt:
        return print_error(ErrorInfo(Code.TIMEOUT, "Interrupted before the command finished.",
                                     True, "Run the command again."), session_id=session_id)
    except Exception as exc:  # noqa: BLE001 - the contract: never a traceback on stdout
        info = classify(exc)
        if info.code is Code.INTERNAL:
            where = log_traceback(exc)
            info = ErrorInfo(info.code, f"{info.message} Details: {where}.", False,
                             info.recovery_action)
        return print_error(info, session_id=getattr(exc, "session_id", None) or session_id)


def parse_or_error(parse: Callable[[], object]) -> tuple[object | None, int | None]:
    """Parse argv for a ``--json`` call: argparse's complaint becomes INVALID_ARGUMENT (exit 2)
    on stdout instead of usage text; ``--help`` still prints help."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parse(), None
    except SystemExit as stop:
        if not stop.code:
            return None, 0
        lines = [ln for ln in err.getvalue().strip().splitlines() if ln.strip()]
        message = lines[-1] if lines else "invalid arguments"
        message = message.split(": error: ", 1)[-1]
        usage = next((ln for ln in lines if ln.startswith("usage:")), None)
        info = ErrorInfo(Code.INVALID_ARGUMENT, f"Invalid arguments: {message}.", False,
                         f"See `{usage[7:].split(' [')[0] if usage else 'ghost'} --help`.")
        return None, print_error(info, out=sys.stdout)
