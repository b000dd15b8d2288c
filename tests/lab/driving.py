"""Drive a whole lab investigation with a scripted engineer: the approver decides each RISKY
request by a function of (request, its number), as a person at the terminal would — approve,
deny with a reason, or modify (edit the command) — and everything else is ``ghost demo``'s."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.settings import Settings
from core.safety.approval import ApprovalRequest, Decision

Decide = Callable[[ApprovalRequest, int], Decision]
ENGINEER = "oncall-ana"


@dataclass
class ScriptedEngineer:
    """Decides every request at once (a person at the keyboard) by ``decide``."""

    decide: Decide
    user: str = "requester"
    decides_immediately: bool = True
    asked: list[ApprovalRequest] = field(default_factory=list)

    def request(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        return self.decide(request, len(self.asked) - 1)


@dataclass
class Run:
    code: int
    out: str
    store: Any
    session_id: str
    asked: list[ApprovalRequest]

    @property
    def investigation(self) -> Any:
        return self.store.get_investigation(self.session_id)

    def model_turns(self) -> list[dict[str, Any]]:
        return [t["content"] for t in self.store.turns(self.session_id) if t["role"] == "model"]

    def model_text(self) -> str:
        return "\n".join(str(p.get("text") or "") for t in self.model_turns()
                         for p in t.get("parts") or [])


def approve_all(request: ApprovalRequest, n: int) -> Decision:
    return Decision.approve(ENGINEER)


def drive(scenario: str | Path, data_dir: Path, decide: Decide = approve_all) -> Run:
    """``ghost demo SCENARIO`` with ``decide`` at every approval; never raises for the run."""
    from bot.bootstrap import build_engine, build_store
    from bot.commands.demo import AutoPrompter
    from bot.commands.investigate import _begin, _drive, _hold
    from bot.eval.runner import _MIGRATING
    from bot.lab_wiring import lab_brain, open_lab

    settings = Settings(data_dir=data_dir)
    out = io.StringIO()
    lab = open_lab(str(scenario), settings)
    settings.lab = lab.key
    brain = lab_brain(lab, settings)
    prompter = AutoPrompter(out)
    engineer = ScriptedEngineer(decide)
    store = build_store(settings)
    with _MIGRATING:  # alembic is not thread-safe: create each run's database alone
        store.db.ensure_ready()
    engine, _ = build_engine(settings, store, prompter=prompter, out=out, brain=brain,
                             approver=engineer, lab_notice=False)
    inv = store.create_investigation(
        symptom=lab.scenario.symptom, model=str(brain.model), audit_dir=str(settings.audit_dir),
        requested_by="requester", platform="terminal", status="queued", lab=lab.key)
    lease = _hold(store, inv.session_id, settings)
    try:
        _begin(engine, store, inv.session_id, lab.scenario.symptom, prompter, out)
        code = _drive(engine, store, inv.session_id, prompter, out)
    finally:
        lease.release()
    return Run(code, out.getvalue(), store, inv.session_id, engineer.asked)
