"""Format-aware truncation of command output before it reaches the model.

This is a safety boundary (ghost-architecture §5, note on layer 3), not a limitation to page
around: the head is kept, the note says what was cut, and the advice is always to ask a narrower
question (`--query` JMESPath, filters) rather than for more of the same. JSON stays parseable
when it can: an array keeps its first N elements inside a wrapping object that says so. Callers
redact first, then truncate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal

CHARS_PER_TOKEN: Final = 4
#: Above this size JSON is not parsed for structure-preserving truncation (cost bound).
_JSON_PARSE_LIMIT: Final = 8 * 1024 * 1024
_ADVICE: Final = ("Narrow the query at the source instead of asking for more: use az --query "
                  "'<JMESPath>' (e.g. \"[?provisioningState!='Succeeded'].{name:name}\") "
                  "with -o tsv, a resource filter, or a smaller time range.")

OutputFormat = Literal["text", "json_array", "json_object", "json_text"]


@dataclass(frozen=True)
class TruncationResult:
    text: str
    truncation_applied: bool
    original_lines: int
    original_bytes: int
    kept_lines: int
    kept_bytes: int
    original_estimated_tokens: int
    format: OutputFormat
    #: for JSON arrays: elements kept / total; None otherwise
    kept_items: int | None = None
    total_items: int | None = None


def estimate_tokens(text: str) -> int:
    """~4 characters per token, rounded up."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def _count_lines(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _result(text: str, original: str, applied: bool, fmt: OutputFormat,
            kept_items: int | None = None, total_items: int | None = None) -> TruncationResult:
    return TruncationResult(
        text=text, truncation_applied=applied, original_lines=_count_lines(original),
        original_bytes=len(original.encode("utf-8", "surrogatepass")),
        kept_lines=_count_lines(text), kept_bytes=len(text.encode("utf-8", "surrogatepass")),
        original_estimated_tokens=estimate_tokens(original), format=fmt,
        kept_items=kept_items, total_items=total_items)


def _fits(text: str, max_lines: int, max_chars: int) -> bool:
    return len(text) <= max_chars and _count_lines(text) <= max_lines


def truncate(text: str, *, max_lines: int = 200, max_tokens: int = 4000) -> TruncationResult:
    """Keep the head of `text` within max_lines and ~max_tokens, saying what was cut."""
    if max_lines < 1 or max_tokens < 1:
        raise ValueError("max_lines and max_tokens must be positive")
    max_chars = max_tokens * CHARS_PER_TOKEN
    if _fits(text, max_lines, max_chars):
        return _result(text, text, False, "text")
    stripped = text.strip()
    if stripped[:1] in ("[", "{") and len(text) <= _JSON_PARSE_LIMIT:
        try:
            value = json.loads(stripped)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, list):
            done = _truncate_array(value, text, max_lines, max_chars)
            if done is not None:
                return done
        elif isinstance(value, dict):
            done = _truncate_object(value, text, max_lines, max_chars)
            if done is not None:
                return done
    return _truncate_text(text, max_lines, max_chars)


def _note(original: str, shown: str) -> str:
    return (f"output truncated by Ghost: showing {shown} of {_count_lines(original)} lines / "
            f"{len(original.encode('utf-8', 'surrogatepass'))} bytes. {_ADVICE}")


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _truncate_array(items: list[Any], original: str, max_lines: int,
                    max_chars: int) -> TruncationResult | None:
    total = len(items)

    def render(count: int) -> str:
        return _dump({
            "ghost_truncated": {
                "note": f"JSON array truncated: first {count} of {total} elements shown "
                        f"(original {len(original.encode('utf-8', 'surrogatepass'))} bytes).",
                "advice": _ADVICE, "shown_items": count, "total_items": total},
            "items": items[:count]})

    low, high = 0, total
    if not _fits(render(0), max_lines, max_chars):
        return None
    while low < high:  # largest count that fits
        mid = (low + high + 1) // 2
        if _fits(render(mid), max_lines, max_chars):
            low = mid
        else:
            high = mid - 1
    if low == 0:
        return None  # not even one element fits: text truncation shows more
    return _result(render(low), original, True, "json_array", low, total)


def _truncate_object(obj: dict[str, Any], original: str, max_lines: int,
                     max_chars: int) -> TruncationResult | None:
    def marker(omitted: list[str]) -> dict[str, Any]:
        return {"note": "JSON object truncated: some top-level keys omitted.", "advice": _ADVICE,
                "omitted_keys": [k[:40] for k in omitted[:20]], "omitted_count": len(omitted)}

    # Reserve room for the marker at its largest (20 names of up to 40 characters).
    reserve_chars, reserve_lines = len(_dump(marker(["k" * 40] * 20))) + 40, 30
    kept: dict[str, Any] = {}
    omitted: list[str] = []
    used_chars, used_lines = 0, 2
    for key, value in obj.items():
        piece = _dump({key: value})
        chars, lines = len(piece), _count_lines(piece) - 2
        if (used_chars + chars + reserve_chars <= max_chars
                and used_lines + lines + reserve_lines <= max_lines):
            kept[key] = value
            used_chars += chars
            used_lines += lines
        else:
            omitted.append(key)
    if not kept:
        return None
    rendered = _dump({"ghost_truncated": marker(omitted), **kept})
    if not _fits(rendered, max_lines, max_chars):
        return None
    return _result(rendered, original, True, "json_object", len(kept), len(obj))


def _truncate_text(text: str, max_lines: int, max_chars: int) -> TruncationResult:
    reserve = 600
    budget = max(max_chars - reserve, max_chars // 2)
    lines = text.splitlines(keepends=True)
    kept: list[str] = []
    used = 0
    for line in lines[: max(max_lines - 2, 1)]:
        if used + len(line) > budget:
            if not kept:
                kept.append(line[:budget] + "\n")
            break
        kept.append(line)
        used += len(line)
    head = "".join(kept)
    if not head.endswith("\n"):
        head += "\n"
    shown = f"the first {len(kept)}"
    if len(kept) == 1 and len(lines[0]) > budget:
        shown = f"the first {budget} characters of line 1, 1"
    fmt: OutputFormat = "json_text" if text.lstrip()[:1] in ("[", "{") else "text"
    return _result(head + f"[{_note(text, shown)}]\n", text, True, fmt)
