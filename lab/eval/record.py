"""One eval run as a record: every figure ``eval.json`` holds, and reading it back.

``eval.json`` is ``{"format": 1, "ghost_version", "started_at", "wall_s", "settings",
"runs": [RunRecord…]}``; each run stands alone (model, Ghost version, the scenario file's
SHA-256), so two reports can be compared run by run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from core.errors import GhostError

FORMAT = 1


class ReportError(GhostError):
    """An eval.json that cannot be read."""


def file_sha256(path: Path | None) -> str | None:
    if path is None or not path.is_file():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class RunRecord:
    """One scenario, played once, scored."""

    scenario: str
    category: str
    scenario_file: str
    scenario_sha256: str | None
    replay_sha256: str | None
    model: str
    ghost_version: str
    repeat: int = 0
    session_id: str | None = None
    approve_policy: str = "reads"
    error: str | None = None
    solved: bool = False
    solved_reasons: list[str] = field(default_factory=list)
    evidence: bool = False
    evidence_reasons: list[str] = field(default_factory=list)
    #: every figure and resource name of the conclusion is in a cited record's output
    grounded: bool = False
    grounded_reasons: list[str] = field(default_factory=list)
    cited_audit_ids: list[str] = field(default_factory=list)
    fault_audit_ids: list[str] = field(default_factory=list)
    safe: int = 0
    risky_approved: int = 0
    risky_denied: int = 0
    forbidden: int = 0
    turns: int = 0
    commands: int = 0
    captures: int = 0
    wall_s: float = 0.0
    model_calls: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    cost_usd: float | None = None
    confidence: str | None = None
    root_cause: str | None = None

    @property
    def passed(self) -> bool:
        """Solved, with cited evidence, grounded: the figure the suite is judged by."""
        return self.solved and self.evidence and self.grounded

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens + self.thinking_tokens

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRecord:
        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in data.items() if k in known}
        if "grounded" not in data:  # a report written before grounding was scored
            values["grounded"] = bool(data.get("solved") and data.get("evidence"))
        return cls(**values)


def write_json(path: Path, runs: list[RunRecord], *, ghost_version: str, started_at: str,
               wall_s: float, settings: Mapping[str, Any]) -> None:
    doc = {"format": FORMAT, "ghost_version": ghost_version, "started_at": started_at,
           "wall_s": round(wall_s, 2), "settings": dict(settings),
           "runs": [r.to_json() for r in runs]}
    path.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def read_json(path: Path) -> tuple[dict[str, Any], list[RunRecord]]:
    """(the document's header, its runs)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ReportError(f"{path}: no such eval report.",
                          "Write one with `ghost eval --report DIR`.") from exc
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: not a readable eval.json ({exc}).") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
        raise ReportError(f"{path}: not an eval.json (no runs list).")
    try:
        runs = [RunRecord.from_json(r) for r in doc["runs"]]
    except TypeError as exc:
        raise ReportError(f"{path}: a run record is incomplete ({exc}).") from exc
    header = {k: v for k, v in doc.items() if k != "runs"}
    return header, runs
