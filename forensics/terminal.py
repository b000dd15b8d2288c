"""What ``ghost-forensics CAPTURE`` prints for a person at a terminal: the top findings.

Colour only on a terminal and without ``NO_COLOR`` (https://no-color.org); piped or
redirected, the same text without control codes.
"""

from __future__ import annotations

import os
from typing import Any, TextIO

TOP = 5
_COLOURS = {"critical": "1;31", "high": "31", "medium": "33", "low": "36", "info": "2"}


def _colour(stream: TextIO) -> bool:
    return stream.isatty() and not os.environ.get("NO_COLOR")


def top_findings(doc: dict[str, Any], paths: list[str], stream: TextIO,
                 where: str = "") -> None:
    """The capture in one line, its first findings with their next step, the files written
    (and where, when ``where`` says it in words, e.g. "the current directory")."""
    colour = _colour(stream)
    cap = doc["capture"]
    findings = doc["findings"]
    shown = findings[:TOP]
    head = (f"{os.path.basename(cap['file'])}: {cap['packets']:,} packets, "
            f"{len(findings)} finding{'s' if len(findings) != 1 else ''}")
    print(f"\x1b[1m{head}\x1b[0m" if colour else head, file=stream)
    for f in shown:
        sev = f["severity"].upper()
        if colour:
            sev = f"\x1b[{_COLOURS.get(f['severity'], '0')}m{sev:<8}\x1b[0m"
        else:
            sev = f"{sev:<8}"
        print(f"{f['rank']:>2}. {sev} {f['title']}", file=stream)
        if f.get("next_step"):
            print(f"             next: {f['next_step']}", file=stream)
    if len(findings) > len(shown):
        print(f"    … {len(findings) - len(shown)} more in the report", file=stream)
    if where:
        print(f"Written to {where}:", file=stream)
    labels = ("semantic JSON", "forensic report", "executive summary")
    for label, path in zip(labels, paths, strict=True):
        print(f"{label + ':':<19}{path}", file=stream)
