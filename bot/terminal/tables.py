"""`ghost session list` as a table an engineer can scan: one row per investigation, a header,
and the state a person would call it (a terminal run whose process died is "interrupted", not
"running")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TextIO

from rich import box
from rich.table import Table

from bot.chat.status import shown_status
from bot.terminal.prompt import is_tty
from bot.terminal.style import console_for

SYMPTOM_CHARS = 60
#: piped output is not cut to a terminal's width
PIPE_WIDTH = 200


def _symptom(inv: Any) -> str:
    text = " ".join(str(inv.symptom or "").split()) or "(no symptom given)"
    if len(text) > SYMPTOM_CHARS:
        text = text[: SYMPTOM_CHARS - 1] + "…"
    return ("[lab] " if inv.lab else "") + text


def cost(inv: Any, prices: Mapping[str, Any]) -> str:
    """The model cost so far: ``$0.0312``; ``n/a`` when a model has no price in GHOST_PRICES;
    ``-`` when no model call reported usage (core/engine/usage.py)."""
    from core.engine.usage import priced, recorded

    calls = recorded(inv.engine_state)
    if not calls:
        return "-"
    _usage, dollars = priced(calls, prices)
    return "n/a" if dollars is None else f"${dollars:.4f}"


def sessions_table(rows: Sequence[Any], now: datetime,
                   prices: Mapping[str, Any] | None = None) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for name, kwargs in (("ID", {"no_wrap": True}), ("STATUS", {"no_wrap": True}),
                         ("STARTED (UTC)", {"no_wrap": True}), ("REQUESTER", {}),
                         ("SYMPTOM", {}), ("TURNS", {"justify": "right"}),
                         ("COST", {"justify": "right", "no_wrap": True})):
        table.add_column(name, **kwargs)
    for inv in rows:
        started = inv.created_at.strftime("%Y-%m-%d %H:%M")
        turns = (inv.state or {}).get("turn_count")
        table.add_row(inv.session_id, shown_status(inv, now), started,
                      inv.requested_by or "-", _symptom(inv), "-" if turns is None else str(turns),
                      cost(inv, prices or {}))
    return table


def print_sessions(rows: Sequence[Any], out: TextIO, now: datetime,
                   prices: Mapping[str, Any] | None = None) -> None:
    console = console_for(out, width=None if is_tty(out) else PIPE_WIDTH)
    console.print(sessions_table(rows, now, prices))
