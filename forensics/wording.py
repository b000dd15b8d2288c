"""How numbers read in findings and reports: units a person reads at 3 a.m., real plurals.

"1 h 39 min", not "5958961.323 ms"; "1 flow", "2 queries"; never a raw ``None``.
"""

from __future__ import annotations

from typing import Any

IRREGULAR = {"query": "queries", "address": "addresses", "retry": "retries", "is": "are",
             "was": "were", "this": "these", "its": "their", "host": "hosts"}

ZEEK_STATES = {
    "S0": "SYN sent, no answer", "S1": "established, not closed", "SF": "closed normally",
    "REJ": "refused (SYN answered by RST)", "S2": "established, only the originator closed",
    "S3": "established, only the responder closed", "RSTO": "originator reset it",
    "RSTR": "responder reset it", "RSTOS0": "originator sent SYN then RST, no SYN-ACK seen",
    "RSTRH": "responder sent SYN-ACK then RST, no SYN seen", "SH": "originator sent SYN then "
    "FIN, no SYN-ACK", "SHR": "responder sent SYN-ACK then FIN, no SYN seen",
    "OTH": "no SYN seen (started before the capture, or only its other direction passes "
    "here)",
}
HISTORY_LEGEND = ("history letters: S SYN, H SYN-ACK, A ACK, D data, F FIN, R RST; upper case "
                  "from the originator, lower case from the responder")


def plural(n: int | float, word: str, many: str | None = None) -> str:
    """``plural(1, "flow")`` -> "1 flow"; ``plural(7, "query")`` -> "7 queries"."""
    if n == 1:
        return f"{n} {word}"
    if many is None:
        head, _, last = word.rpartition(" ")
        last = IRREGULAR.get(last, last + "s")
        many = f"{head} {last}" if head else last
    return f"{n:,} {many}" if isinstance(n, int) else f"{n} {many}"


def duration_ns(ns: int | float | None) -> str:
    """A duration in the largest units that keep it readable."""
    if ns is None:
        return "unknown"
    neg = ns < 0
    s = abs(ns) / 1e9
    if s < 1e-3:
        out = f"{s * 1e6:.0f} µs"
    elif s < 1:
        ms = s * 1e3
        out = f"{ms:.1f} ms" if ms < 10 else f"{ms:.0f} ms"
    elif s < 60:
        out = f"{s:.1f} s" if s < 10 else f"{s:.0f} s"
    elif s < 3600:
        m, sec = divmod(int(round(s)), 60)
        out = f"{m} min {sec} s" if sec else f"{m} min"
    elif s < 86400:
        h, m = divmod(int(round(s / 60)), 60)
        out = f"{h} h {m} min" if m else f"{h} h"
    else:
        d, h = divmod(int(round(s / 3600)), 24)
        out = f"{d} d {h} h" if h else f"{d} d"
    return "-" + out if neg else out


def duration_ms(ms: float | None) -> str:
    return "unknown" if ms is None else duration_ns(ms * 1e6)


def span_ms(lo: float, hi: float) -> str:
    """A range of durations, or one value when both ends read the same."""
    a, b = duration_ms(lo), duration_ms(hi)
    return a if a == b else f"{a} to {b}"


def percent(part: int, whole: int) -> str:
    if not whole:
        return "n/a"
    p = 100 * part / whole
    return f"{p:.1f} %" if p < 10 else f"{p:.0f} %"


def listing(items: list[str], limit: int = 5) -> str:
    """"a, b and c"; beyond ``limit`` items, "a, b, c and 4 more"."""
    if not items:
        return "none"
    if len(items) > limit:
        return ", ".join(items[:limit]) + f" and {len(items) - limit} more"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def value(x: Any, unit: str = "") -> str:
    """A figure for a table cell: '-' instead of None."""
    if x is None or x == "":
        return "-"
    return f"{x} {unit}".strip()


def state_legend(states: list[str]) -> str:
    """One line explaining the Zeek states that appear, for the first place they are shown."""
    known = [f"{s} = {ZEEK_STATES[s]}" for s in states if s in ZEEK_STATES]
    return "Zeek connection states: " + "; ".join(known) + "." if known else ""
