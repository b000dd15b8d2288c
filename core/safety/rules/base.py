"""Shared helpers for the per-program rules."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.safety.verdict import Verdict, make_verdict


@dataclass(frozen=True)
class Context:
    """What the rules may know besides the argv: where files may be read from."""

    data_dir: Path | None = None
    cwd: Path | None = None


def allowed(argv: tuple[str, ...], what: str) -> Verdict:
    return make_verdict("T1.allowed", f"{argv[0]}: {what}; every option is on the allowlist.",
                        argv)


def risky(rule: str, argv: tuple[str, ...], reason: str) -> Verdict:
    return make_verdict(rule, reason, argv)
