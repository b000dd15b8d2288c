"""Building blocks for the eval tests: replay turns, a scenario copied with a replay written by
the test, settings isolated in tmp_path."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from bot.settings import Settings
from lab.scenario import shipped_dir

ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GHOST_GEMINI_API_KEY", "GHOST_LAB",
       "GHOST_DATA_DIR", "GHOST_DATABASE_URL", "GHOST_PRICES", "GHOST_MODEL",
       "GOOGLE_GEMINI_BASE_URL", "GHOST_AUDIT_DIR_OVERRIDE", "GHOST_CAPTURE_DIR_OVERRIDE")


def isolate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, keep: tuple[str, ...] = ()
            ) -> None:
    """No key, no data dir, no price table from the developer's environment or .env."""
    monkeypatch.chdir(tmp_path)
    for var in ENV:
        if var not in keep:
            monkeypatch.delenv(var, raising=False)


def settings(tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(**{"data_dir": tmp_path / "ghost-data", **overrides})


def shell(command: str, reasoning: str = "Check.", hypotheses: list[dict[str, Any]] | None = None,
          text: str | None = None) -> dict[str, Any]:
    """One model turn: optional text, then one run_shell_cmd call."""
    args: dict[str, Any] = {"command": command, "reasoning": reasoning}
    if hypotheses is not None:
        args["hypotheses"] = hypotheses
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    return {"parts": [*parts, {"functionCall": {"name": "run_shell_cmd", "args": args}}]}


def complete(summary: str, *, confirmed: Sequence[str], refuted: Sequence[str] = (),
             hypotheses: list[dict[str, Any]] | None = None,
             text: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"confidence": "high", "root_cause_summary": summary,
                            "confirmed_hypotheses": list(confirmed),
                            "refuted_hypotheses": list(refuted)}
    if hypotheses is not None:
        args["hypotheses"] = hypotheses
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    return {"parts": [*parts, {"functionCall": {"name": "complete_investigation",
                                                "args": args}}]}


def hyp(hid: str, state: str, description: str | None = None,
        evidence: list[str] | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"id": hid, "state": state}
    if description:
        item["description"] = description
    if evidence is not None:
        item["evidence_audit_ids"] = evidence
    return item


def scenario_with_replay(tmp_path: Path, shipped: str, turns: list[dict[str, Any]]) -> Path:
    """A copy of a shipped scenario in tmp_path (so not a shipped one) whose replay is
    ``turns``."""
    folder = tmp_path / "scenarios"
    folder.mkdir(exist_ok=True)
    text = (shipped_dir() / f"{shipped}.yaml").read_text(encoding="utf-8")
    text, count = re.subn(r"(?m)^replay: .*$", f"replay: {shipped}.replay.json", text)
    assert count == 1
    path = folder / f"{shipped}.yaml"
    path.write_text(text, encoding="utf-8")
    (folder / f"{shipped}.replay.json").write_text(json.dumps(turns, indent=1),
                                                    encoding="utf-8")
    return path
