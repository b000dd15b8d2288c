"""`ghost session list` as a table an engineer can scan: one row per investigation, a header,
and the state a person would call it (a terminal run whose process died is "interrupted", not
"running").

The table fits the terminal. Columns are kept by priority — ID, STATUS and AGE always, whole
(an id that is cut cannot be copied), then SYMPTOM, REQUESTER, TURNS, COST and STARTED while
they fit — and the symptom wraps at spaces in the room that is left. When fewer than
``SYMPTOM_MIN`` columns would be left for it (a terminal of about 70 columns or less), the
symptom folds onto its own indented line under its row instead of being squeezed into a
sliver. A pipe gets every column.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

from rich import box
from rich.cells import cell_len
from rich.table import Table

from bot.chat.status import shown_status
from bot.terminal.prompt import is_tty
from bot.terminal.style import console_for, wrapped

SYMPTOM_CHARS = 80
#: piped output is not cut to a terminal's width
PIPE_WIDTH = 200
#: below this many columns for the symptom, it folds onto a line of its own
SYMPTOM_MIN = 30
#: the space between two columns (rich: the box's blank divider and one cell of padding)
GAP = 2


def _symptom(inv: Any) -> str:
    """The symptom on one line, shortened at a space (never inside a word) to about
    ``SYMPTOM_CHARS``; `ghost session show SID` has all of it."""
    import textwrap

    text = " ".join(str(inv.symptom or "").split()) or "(no symptom given)"
    text = textwrap.shorten(text, SYMPTOM_CHARS, placeholder=" …", break_on_hyphens=False)
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


def age(created: datetime, now: datetime) -> str:
    """How long ago: ``40s``, ``12m``, ``5h``, ``3d``."""
    if created.tzinfo is None and now.tzinfo is not None:
        now = now.replace(tzinfo=None)
    seconds = max(0, int((now - created).total_seconds()))
    for unit, size, below in (("s", 1, 60), ("m", 60, 3600), ("h", 3600, 48 * 3600)):
        if seconds < below:
            return f"{seconds // size}{unit}"
    return f"{seconds // 86400}d"


@dataclass(frozen=True)
class Column:
    name: str
    value: Callable[[Any], str]
    right: bool = False


def _columns(now: datetime, prices: Mapping[str, Any]) -> dict[str, Column]:
    def turns(inv: Any) -> str:
        count = (inv.state or {}).get("turn_count")
        return "-" if count is None else str(count)

    return {
        "ID": Column("ID", lambda inv: str(inv.session_id)),
        "STATUS": Column("STATUS", lambda inv: shown_status(inv, now)),
        "AGE": Column("AGE", lambda inv: age(inv.created_at, now), right=True),
        "TURNS": Column("TURNS", turns, right=True),
        "COST": Column("COST", lambda inv: cost(inv, prices), right=True),
        "REQUESTER": Column("REQUESTER", lambda inv: str(inv.requested_by or "-")),
        "STARTED (UTC)": Column("STARTED (UTC)",
                                lambda inv: inv.created_at.strftime("%Y-%m-%d %H:%M")),
        "SYMPTOM": Column("SYMPTOM", _symptom),
    }


#: the order columns are given room in; the first three are always shown
PRIORITY = ("ID", "STATUS", "AGE", "SYMPTOM", "REQUESTER", "TURNS", "COST", "STARTED (UTC)")
#: the order they are shown in (the symptom last: it is the one that wraps)
ORDER = ("ID", "STATUS", "AGE", "TURNS", "COST", "REQUESTER", "STARTED (UTC)", "SYMPTOM")


@dataclass(frozen=True)
class Layout:
    columns: tuple[str, ...]  # in display order, SYMPTOM included when it is a column
    folded: bool  # the symptom on a line of its own under each row


def plan(cells: Mapping[str, Sequence[str]], width: int, *,
         priority: Sequence[str] = PRIORITY, order: Sequence[str] = ORDER,
         required: int = 3, flexible: str = "SYMPTOM",
         flexible_min: int = SYMPTOM_MIN) -> Layout:
    """Which columns fit ``width``: the first ``required`` of ``priority`` always, whole; the
    ``flexible`` one (which wraps) next, given at least ``flexible_min`` columns or else
    folded under its row; then the others while they fit, in ``priority`` order."""
    natural = {name: max([cell_len(name), *(cell_len(v) for v in values)])
               for name, values in cells.items()}

    def used(names: Sequence[str]) -> int:
        return sum(natural[n] for n in names) + GAP * (len(names) - 1)

    room_wanted = min(natural[flexible], flexible_min)
    kept = list(priority[:required])
    folded = width - used(kept) - GAP < room_wanted
    if not folded:
        kept.append(flexible)
    for name in priority[required:]:
        if name in kept or name == flexible:
            continue
        fixed = [n for n in (*kept, name) if n != flexible]
        if width - used(fixed) - (0 if folded else GAP + room_wanted) >= 0:
            kept.append(name)
    return Layout(tuple(n for n in order if n in kept), folded)


def sessions_table(rows: Sequence[Any], now: datetime,
                   prices: Mapping[str, Any] | None = None, *,
                   columns: Sequence[str] = ORDER) -> Table:
    spec = _columns(now, prices or {})
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for name in columns:
        wraps = name == "SYMPTOM"
        table.add_column(name, no_wrap=not wraps, overflow="fold",
                         justify="right" if spec[name].right else "left",
                         min_width=min(SYMPTOM_MIN, cell_len(name)) if wraps else None)
    for inv in rows:
        table.add_row(*(spec[name].value(inv) for name in columns))
    return table


def _folded(rows: Sequence[Any], now: datetime, prices: Mapping[str, Any],
            columns: Sequence[str], width: int, out: TextIO) -> list[str]:
    """The narrow form: the kept columns on one line, the symptom wrapped under it."""
    spec = _columns(now, prices)
    cells = {n: [spec[n].value(inv) for inv in rows] for n in columns}
    widths = {n: max([cell_len(n), *(cell_len(v) for v in cells[n])]) for n in columns}

    def line(values: Mapping[str, str]) -> str:
        parts = [values[n].rjust(widths[n]) if spec[n].right else values[n].ljust(widths[n])
                 for n in columns]
        return (" " * GAP).join(parts).rstrip()

    head = line({n: n for n in columns})
    lines = [head, "─" * min(width, cell_len(head))]
    for i, inv in enumerate(rows):
        lines.append(line({n: cells[n][i] for n in columns}))
        lines += wrapped("    " + spec["SYMPTOM"].value(inv), out, indent="", width=width)
    return lines


def print_sessions(rows: Sequence[Any], out: TextIO, now: datetime,
                   prices: Mapping[str, Any] | None = None, *,
                   width: int | None = None) -> None:
    """The table on ``out``: as wide as the terminal (``width`` overrides it), every column
    on a pipe."""
    prices = prices or {}
    tty = is_tty(out)
    console = console_for(out, width=width or (None if tty else PIPE_WIDTH))
    spec = _columns(now, prices)
    cells = {n: [spec[n].value(inv) for inv in rows] for n in ORDER}
    layout = plan(cells, console.width)
    if layout.folded:
        for text in _folded(rows, now, prices, layout.columns, console.width, out):
            out.write(text + "\n")
        out.flush()
        return
    console.print(sessions_table(rows, now, prices, columns=layout.columns))


#: `ghost lab list`: the scenario's name first (what `ghost demo NAME` takes), its title, and
#: the kind of fault it holds (often the name again, so it goes first when room is short)
LAB_COLUMNS = ("SCENARIO", "TITLE", "FAULT")
LAB_ORDER = ("SCENARIO", "FAULT", "TITLE")
#: titles are short sentences: a narrower column than a symptom's still reads well, and keeps
#: the table (with its header) at 60 columns beside the longest scenario name
LAB_TITLE_MIN = 24


def scenarios_table(rows: Sequence[tuple[str, str, str]], out: TextIO, *,
                    width: int | None = None) -> None:
    """(name, fault kind, title) rows as a table with a header, fitted to the terminal like
    the session list: names whole, the title wrapped at spaces, the fault column dropped
    when there is no room for it."""
    tty = is_tty(out)
    console = console_for(out, width=width or (None if tty else PIPE_WIDTH))
    cells = {"SCENARIO": [r[0] for r in rows], "FAULT": [r[1] for r in rows],
             "TITLE": [r[2] for r in rows]}
    layout = plan(cells, console.width, priority=LAB_COLUMNS, order=LAB_ORDER, required=1,
                  flexible="TITLE", flexible_min=LAB_TITLE_MIN)
    columns = layout.columns if not layout.folded else \
        tuple(n for n in layout.columns if n != "TITLE")
    if layout.folded:  # very narrow: the title under its name
        for i, name in enumerate(cells["SCENARIO"]):
            out.write(name + "\n")
            for line in wrapped("    " + cells["TITLE"][i], out, indent="",
                                width=console.width):
                out.write(line + "\n")
        out.flush()
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for name in columns:
        table.add_column(name, no_wrap=name != "TITLE", overflow="fold")
    for i in range(len(rows)):
        table.add_row(*(cells[name][i] for name in columns))
    console.print(table)
