"""A few lines of what a command printed, right under its ``[Shell]`` line.

The engineer should see what came back without exporting the audit log; the whole output is one
command away (``ghost audit show AUDIT_ID``). The text is redacted again here: what the screen
shows must never hold a secret, whatever the caller passed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: how many lines of output are shown under a command
PREVIEW_LINES = 5
#: longer lines are cut here (the full line is in the audit record)
LINE_CHARS = 160


def output_preview(result: Mapping[str, Any], *, lines: int = PREVIEW_LINES) -> list[str]:
    """The preview lines (indented, ready to print); empty when the command printed nothing."""
    from core.safety.redact import redact

    text = str(result.get("output") or "")
    stderr = str(result.get("stderr") or "")
    if stderr.strip():
        text = (text.rstrip("\n") + "\n" if text.strip() else "") + stderr
    # tabs (`-o tsv`) as the terminal would show them, so a cut line is cut where it shows
    rows = [row.expandtabs(8).rstrip() for row in redact(text).splitlines()]
    while rows and not rows[-1]:
        rows.pop()
    if not rows:
        return []
    shown = [f"    │ {_cut(row)}" for row in rows[:lines]]
    more = len(rows) - lines
    meta = result.get("output_metadata") or {}
    truncated = bool(meta.get("truncation_applied")) if isinstance(meta, Mapping) else False
    audit_id = result.get("audit_id")
    if more > 0 or truncated:
        what = f"{more} more line{'s' if more != 1 else ''}" if more > 0 else "more output"
        see = f": ghost audit show {audit_id}" if audit_id else ""
        shown.append(f"    … {what}{see}")
    return shown


def _cut(row: str) -> str:
    return row if len(row) <= LINE_CHARS else row[: LINE_CHARS - 1] + "…"
