"""Deny and modify at each approval of each shipped scenario (issue 29): `ghost demo` ends with
exit 0 and an RCA every time, and nothing the model or the RCA says rests on a command that did
not run as narrated.

For every scenario the replay is first played with every request approved, which lists the
approvals it asks for; then once per approval with that one denied, and once with it modified
where Modify means something (a capture's duration, a probe's script). A denied or edited step
must never be cited as evidence, the main line's reading of an edited probe must not be played,
every audit id the RCA cites is in its command table, and a lab run never speaks of charges.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from core.safety.approval import ApprovalRequest, Decision
from lab.scenario import load_scenario, shipped_scenarios
from tests.lab.driving import ENGINEER, Run, drive

SCENARIOS = shipped_scenarios()
IDS = [p.stem for p in SCENARIOS]
PLACEHOLDER = re.compile(r"\{\{[a-z]+:(?:\d+|last)\}\}")
MOVED = re.compile(r"\b[Hh]\d{1,3}\s*(?:CONFIRMED|REFUTED)\b[^\n]*")


def edited(command: str) -> str | None:
    """What an engineer would change: a capture's duration, one more line of a probe."""
    if "packet-capture create" in command:
        return re.sub(r"--time-limit \d+", "--time-limit 30", command)
    if "run-command invoke" in command:
        return command + ' "hostname"'
    return None


def _evidence(run: Run) -> set[str]:
    """Every audit id offered as evidence: the hypotheses' evidence lists, the ids on a
    line that moves a hypothesis, and the RCA's resolving audit ids."""
    cited: set[str] = set()
    for turn in run.model_turns():
        for part in turn.get("parts") or []:
            call = part.get("functionCall")
            for h in ((call or {}).get("args") or {}).get("hypotheses") or []:
                cited.update(str(i) for i in h.get("evidence_audit_ids") or [])
            for line in MOVED.findall(str(part.get("text") or "")):
                cited.update(re.findall(rf"{run.session_id}_\d{{3,}}", line))
    log = run.investigation.state.get("hypothesis_log") or []
    cited.update(str(h["resolving_audit_id"]) for h in log if h.get("resolving_audit_id"))
    return cited


def _reading_texts(scenario: Path, request: ApprovalRequest) -> list[str]:
    """The main line's text of the turn that reads a probe's result (placeholders cut)."""
    turns = json.loads((load_scenario(scenario).replay_path() or scenario).read_text())
    out = []
    for i, turn in enumerate(turns[1:], 1):
        asked = [p["functionCall"]["args"].get("command", "") for p in turns[i - 1]["parts"]
                 if "functionCall" in p]
        script = request.command.split("--scripts", 1)[-1].strip()
        if any(script and script in str(c) for c in asked) and turn.get("expects"):
            text = "".join(p.get("text", "") for p in turn["parts"])
            out.append(PLACEHOLDER.split(text)[0][:60])
    return out


def _check(run: Run, scenario: Path, request: ApprovalRequest, kind: str) -> None:
    inv = run.investigation
    where = f"{scenario.stem}: {kind} {request.command[:70]}"
    assert run.code == 0, f"{where}\n{run.out[-2000:]}"
    assert inv.status == "completed" and inv.rca_markdown, where
    records = run.store.audit_records(run.session_id)
    commands = [r for r in records if r.get("kind") == "command"]
    not_as_asked = {str(r["audit_id"]) for r in commands
                    if r.get("status") == "denied" or r.get("action") == "user_modified"}
    if kind == "deny":
        assert any(r.get("status") == "denied" for r in commands), where
    cited = _evidence(run)
    assert not cited & not_as_asked, f"{where}: cites {sorted(cited & not_as_asked)}"
    texts = run.model_text()
    for r in commands:
        if r.get("status") == "denied":
            assert str(r["audit_id"]) not in texts, f"{where}: a denied step is quoted"
    if kind == "modify" and "run-command" in request.command:
        for reading in _reading_texts(scenario, request):
            assert reading not in texts, f"{where}: the scripted reading was played"
    rca = inv.rca_markdown
    table = rca.split("## Command Evidence", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(rf"^\| ({run.session_id}_\d{{3,}}) \|", table, re.M))
    assert set(re.findall(rf"{run.session_id}_\d{{3,}}", rca)) <= rows, where
    assert "charges" not in run.out and "charges" not in rca, where


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_deny_and_modify_at_each_approval(scenario: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GHOST_LAB", "GHOST_DATA_DIR",
                "GHOST_DATABASE_URL"):
        monkeypatch.delenv(var, raising=False)
    base = drive(scenario, tmp_path / "approved")
    _check(base, scenario, base.asked[0], "approve") if base.asked else None
    assert base.asked, f"{scenario.stem} asks for no approval"
    plans: list[tuple[int, str]] = [(j, "deny") for j in range(len(base.asked))]
    plans += [(j, "modify") for j, r in enumerate(base.asked)
              if r.modifiable and edited(r.command)]

    def play(plan: tuple[int, str]) -> tuple[tuple[int, str], Run]:
        j, kind = plan

        def decide(request: ApprovalRequest, n: int) -> Decision:
            if n != j:
                return Decision.approve(ENGINEER)
            if kind == "deny":
                return Decision.deny(ENGINEER, "not on this system")
            return Decision.modify(ENGINEER, edited(request.command) or request.command)

        return plan, drive(scenario, tmp_path / f"{kind}-{j}", decide)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results: list[Any] = list(pool.map(play, plans))
    for (j, kind), run in results:
        _check(run, scenario, base.asked[j], kind)
