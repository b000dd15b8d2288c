"""`ghost classify` and `ghost redact`: the safety gate's verdicts and redaction, from a shell.

The stream forms are for corpus runners and scripts, so they keep a strict contract: one JSON
line out for every non-blank line in, in order, whatever the line holds (malformed JSON, a
missing key, a number instead of a string, invalid UTF-8). A line that cannot be read is
answered with an error record that is never SAFE, and the run goes on; no traceback. Blank
lines are skipped, as JSON Lines readers do. Output lines are ASCII JSON (non-ASCII escaped).
The plain `ghost redact` filter reads and writes raw bytes, so it returns innocent input byte
for byte, CRLF and invalid UTF-8 included.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.safety.verdict import RULES

_INVALID = RULES["T3.invalid_input"]


def _data_dir() -> Path | None:
    """The configured data directory; None (file reads stay RISKY) if settings do not load."""
    from bot.settings import load_settings

    try:
        return load_settings().data_dir
    except Exception as exc:  # noqa: BLE001 - any settings problem: classify without data dir
        print(f"ghost: settings did not load ({exc}); classifying as if no data directory "
              "were configured, so cat and ghost-forensics stay RISKY.", file=sys.stderr)
        return None


def _verdict_json(command: str, data_dir: Path | None) -> dict[str, Any]:
    from core.safety.classify import classify

    v = classify(command, data_dir=data_dir)
    return {"command": command, "classification": v.classification, "tier": v.tier,
            "rule": v.rule, "reason": v.reason}


def _invalid(command: Any, error: str) -> dict[str, Any]:
    return {"command": command, "classification": _INVALID.classification,
            "tier": _INVALID.tier, "rule": _INVALID.rule_id,
            "reason": f"Not classified: {error}. Nothing that cannot be read is ever SAFE.",
            "error": error}


def _lines() -> Iterator[tuple[int, str]]:
    """(line number, text) for every non-blank stdin line, split on LF only, decoded leniently."""
    for number, raw in enumerate(sys.stdin.buffer, start=1):  # answered as each line comes
        text = raw.removesuffix(b"\n").decode("utf-8", errors="replace")
        if text.strip():
            yield number, text.removesuffix("\r")


def _emit(record: dict[str, Any]) -> None:
    """One ASCII JSON line: non-ASCII is escaped, so U+2028, NEL or a lone surrogate in a
    command can neither break the line for a reader that splits on them nor fail to encode."""
    sys.stdout.buffer.write(json.dumps(record, ensure_ascii=True).encode("ascii") + b"\n")
    sys.stdout.buffer.flush()  # a caller that writes a line and waits for its answer gets it


def classify_command(args: argparse.Namespace) -> int:
    if args.cmdline == "-":
        return _classify_stream(as_json=args.json)
    from core.safety.classify import classify

    data_dir = _data_dir()
    if args.json:
        _emit(_verdict_json(args.cmdline, data_dir))
        return 0
    v = classify(args.cmdline, data_dir=data_dir)
    print(f"{v.classification}  (tier {v.tier}, rule {v.rule})")
    print(f"  {v.reason}")
    what = {"SAFE": "Runs without asking.",
            "RISKY": "Runs only after an engineer approves it.",
            "FORBIDDEN": "Never runs, whoever approves."}[v.classification]
    print(f"  {what}  Classifier {v.classifier_version}.")
    return 0


def _classify_stream(*, as_json: bool) -> int:
    data_dir = _data_dir()
    try:
        for number, line in _lines():
            command: Any = line
            if as_json:
                try:
                    doc = json.loads(line)
                except ValueError:
                    _emit(_invalid(None, f"line {number} is not JSON; expected "
                                         '{"command": "..."}'))
                    continue
                command = doc.get("command") if isinstance(doc, dict) else None
                if not isinstance(command, str):
                    _emit(_invalid(command if isinstance(command, (int, float, bool)) else None,
                                   f'line {number} has no string "command"'))
                    continue
            try:
                _emit(_verdict_json(command, data_dir))
            except Exception as exc:  # noqa: BLE001 - one bad line must not end the stream
                _emit(_invalid(command, f"line {number}: {type(exc).__name__}"))
        sys.stdout.buffer.flush()
    except BrokenPipeError:  # the reader went away (| head): nothing left to say
        return 0
    return 0


def redact_command(args: argparse.Namespace) -> int:
    from core.safety.redact import redact

    try:
        if not args.jsonl:
            text = sys.stdin.buffer.read().decode("utf-8", errors="surrogateescape")
            sys.stdout.buffer.write(redact(text).encode("utf-8", errors="surrogateescape"))
            sys.stdout.buffer.flush()
            return 0
        for number, line in _lines():
            try:
                doc = json.loads(line)
            except ValueError:
                doc = None
            text = doc.get("text") if isinstance(doc, dict) else None
            if not isinstance(text, str):
                _emit({"text": None, "error": f'line {number}: expected {{"text": "..."}}'})
                continue
            _emit({"text": redact(text)})
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        return 0
    return 0
