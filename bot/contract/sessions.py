"""`ghost session list --json --limit N --status S --since WHEN`."""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.contract.codes import Code, ContractError
from bot.contract.output import emit, parse_fields
from bot.contract.views import session_doc

_AGE = re.compile(r"^(\d+)([smhdw])$")
_UNIT = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str | None, now: datetime | None = None) -> datetime | None:
    """An ISO date or time (UTC when no offset is given) or an age such as ``30m``."""
    if text is None:
        return None
    now = now or datetime.now(UTC)
    match = _AGE.match(text.strip())
    if match:
        return now - timedelta(**{_UNIT[match.group(2)]: int(match.group(1))})
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ContractError(Code.INVALID_ARGUMENT, f"--since {text!r} is neither a date nor "
                            "an age.", "Use e.g. --since 2026-11-25, --since "
                            "2026-11-25T09:00:00Z or --since 2h.") from None
    # in UTC: SQLite stores the times as UTC text and compares them as text
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_statuses(text: str | None) -> list[str] | None:
    from storage.investigations import STATUSES

    if text is None:
        return None
    wanted = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in STATUSES]
    if unknown or not wanted:
        raise ContractError(Code.INVALID_ARGUMENT,
                            f"--status {text!r}: unknown state {', '.join(unknown) or '(none)'}.",
                            f"States: {', '.join(STATUSES)}.")
    return wanted


def _prices() -> dict[str, Any]:
    """GHOST_PRICES, or none when it is unset or unreadable (the cost is then null)."""
    from bot.settings import load_settings
    from core.engine.usage import PriceTableError, parse_prices

    try:
        return dict(parse_prices(load_settings().prices))
    except PriceTableError:
        return {}


def list_sessions(args: argparse.Namespace) -> int:
    from bot.bootstrap import build_store_if_any
    from bot.settings import load_settings
    from storage.contract_queries import investigations

    if args.limit < 1:
        raise ContractError(Code.INVALID_ARGUMENT, f"--limit {args.limit} is not at least 1.")
    fields = parse_fields(getattr(args, "fields", None))
    statuses = parse_statuses(args.status)
    since = parse_since(args.since)
    store = build_store_if_any(load_settings())  # none yet on a fresh machine: an empty list
    rows = [] if store is None else \
        investigations(store, statuses=statuses, since=since, limit=args.limit)
    now, prices = datetime.now(UTC), _prices()
    if args.json:
        verbose = bool(fields) or bool(getattr(args, "verbose", False))
        emit({"count": len(rows), "sessions": [
            session_doc(r, verbose=verbose, now=now, prices=prices) for r in rows]},
             fields=fields, items_key="sessions")
        return 0
    if not rows:
        print("No investigations match.")
        return 0
    from bot.terminal.tables import print_sessions

    print_sessions(rows, sys.stdout, now, prices)
    return 0
