"""The one error handler of the command line: a line an engineer can act on, never a trace."""

from __future__ import annotations

import sys
from collections.abc import Callable

from core.errors import GhostError


def run_reporting_errors(run: Callable[[], int]) -> int:
    """Run a command; turn known failures into one line on stderr and a non-zero exit."""
    from pydantic import ValidationError
    from sqlalchemy.exc import DBAPIError, OperationalError

    try:
        return run()
    except GhostError as exc:
        print(f"ghost: {exc}", file=sys.stderr)
        return exc.exit_code
    except ValidationError as exc:  # a setting from the environment or .env (bot/settings.py)
        for error in exc.errors():
            where = ".".join(str(part) for part in error.get("loc", ())) or exc.title
            print(f"ghost: setting {where} is invalid: "
                  f"{str(error.get('msg', '')).removeprefix('Value error, ')}",
                  file=sys.stderr)
        return 2
    except OperationalError as exc:
        line = str(getattr(exc, "orig", exc)).strip().splitlines()
        print(
            f"ghost: the database failed: {line[0] if line else exc.__class__.__name__}. "
            "Check GHOST_DATABASE_URL and that the server is running.",
            file=sys.stderr,
        )
        return 2
    except DBAPIError as exc:
        line = str(getattr(exc, "orig", exc)).strip().splitlines()
        print(f"ghost: the database refused the operation: {line[0] if line else exc}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ghost: interrupted.", file=sys.stderr)
        return 130
    except OSError as exc:
        print(f"ghost: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "),
              file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a bug: one line here, the traceback in the log
        from bot.contract.codes import Exit
        from bot.contract.runner import log_traceback

        print(f"ghost: unexpected {type(exc).__name__} inside Ghost; the details are in "
              f"{log_traceback(exc)}. Please report it.", file=sys.stderr)
        return int(Exit.INTERNAL)
