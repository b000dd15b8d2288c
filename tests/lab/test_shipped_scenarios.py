"""The shipped scenarios (lab/scenarios) and their replays: valid, covering every category, and
reaching the scenario's truth through the gate when played end to end by `ghost demo`.

A replay does not re-plan, so these tests hold it to what the lab really answers: every command
it runs is answered by the lab runner with exit 0, and its conclusion names the truth's
resources and keywords and none of the red herrings.
"""

from __future__ import annotations

import io
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from core.engine.tools import COMPLETE_INVESTIGATION, HYPOTHESIS_STATES, TOOL_NAMES, declaration
from lab.scenario import Scenario, load_scenario, shipped_scenarios

CATEGORIES = (
    "nsg_deny", "nic_nsg_deny", "udr_blackhole", "udr_wrong_next_hop", "nva_down", "nva_loss",
    "nva_reset", "peering_disconnected", "peering_forwarding_blocked",
    "private_dns_link_missing", "custom_dns_broken", "vm_stopped", "service_down",
    "mtu_blackhole", "asymmetric_routing", "extension_missing", "healthy",
)
TASK_REF = re.compile(r"\{\{task:(\d+)\}\}")
SCENARIOS = shipped_scenarios()
IDS = [p.stem for p in SCENARIOS]


def _calls(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p["functionCall"] for t in turns for p in t["parts"] if "functionCall" in p]


def _replay(path: Path) -> tuple[Scenario, list[dict[str, Any]]]:
    scenario = load_scenario(path)
    replay = scenario.replay_path()
    assert replay is not None, f"{path.name} has no replay"
    turns = json.loads(replay.read_text(encoding="utf-8"))
    assert isinstance(turns, list) and turns, f"{replay.name}: not a list of turns"
    return scenario, turns


def _summary(turns: list[dict[str, Any]]) -> dict[str, Any]:
    last = _calls(turns)[-1]
    assert last["name"] == COMPLETE_INVESTIGATION
    return dict(last["args"])


def _names(text: str, word: str) -> bool:
    return word.lower() in text.lower()


def _names_resource(text: str, resource: str) -> bool:
    """``nsg-data/deny-web-to-redis`` is named when the text names both the NSG and the rule."""
    return all(_names(text, part) for part in resource.split("/"))


# ------------------------------------------------------------------ scenarios
@pytest.mark.parametrize("path", SCENARIOS, ids=IDS)
def test_scenario_loads_and_is_named_after_its_file(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.name == path.stem
    assert scenario.truth.category in CATEGORIES
    assert scenario.traffic, "a capture must have something to see"
    assert scenario.truth.red_herrings, "every shipped scenario has a red herring"
    assert scenario.replay_path() is not None


def test_every_category_has_a_scenario_and_the_demo_default_exists() -> None:
    covered = {load_scenario(p).truth.category for p in SCENARIOS}
    assert sorted(set(CATEGORIES) - covered) == []
    assert "nsg-deny-redis" in IDS


# ------------------------------------------------------------------ replays: shape
@pytest.mark.parametrize("path", SCENARIOS, ids=IDS)
def test_replay_calls_real_tools_with_their_required_args(path: Path) -> None:
    _, turns = _replay(path)
    for i, turn in enumerate(turns):
        assert set(turn) == {"parts"} and turn["parts"], f"turn {i}"
        for part in turn["parts"]:
            assert set(part) <= {"text", "functionCall"}, f"turn {i}: {part}"
    calls = _calls(turns)
    for call in calls:
        assert call["name"] in TOOL_NAMES
        required = declaration(call["name"])["parameters"]["required"]
        missing = [r for r in required if not call["args"].get(r)]
        assert not missing, f"{call['name']} lacks {missing}"
    assert calls[-1]["name"] == COMPLETE_INVESTIGATION
    assert [c["name"] for c in calls].count(COMPLETE_INVESTIGATION) == 1


@pytest.mark.parametrize("path", SCENARIOS, ids=IDS)
def test_replay_task_references_follow_their_captures(path: Path) -> None:
    _, turns = _replay(path)
    captures = 0
    checked: set[int] = set()
    for call in _calls(turns):
        if call["name"] == "capture_traffic":
            # a dual-end capture ("vm-a to vm-b") creates two tasks: the source's, then the
            # destination's
            captures += 2 if " to " in str(call["args"]["target"]) else 1
        for ref in TASK_REF.findall(json.dumps(call["args"])):
            assert int(ref) < captures, f"{{{{task:{ref}}}}} before its capture_traffic"
            if call["name"] == "check_task":
                checked.add(int(ref))
    assert checked == set(range(captures)), "every capture is polled with check_task"


@pytest.mark.parametrize("path", SCENARIOS, ids=IDS)
def test_replay_hypotheses_are_consistent(path: Path) -> None:
    _, turns = _replay(path)
    states: dict[str, str] = {}
    for call in _calls(turns):
        for h in call["args"].get("hypotheses") or []:
            assert h["state"] in HYPOTHESIS_STATES
            assert h["id"] in states or h.get("description"), f"{h['id']} without description"
            states[h["id"]] = h["state"]
    assert states, "the replay reports its hypotheses"
    summary = _summary(turns)
    assert sorted(summary.get("confirmed_hypotheses") or []) == sorted(
        k for k, s in states.items() if s == "CONFIRMED")
    assert sorted(summary.get("refuted_hypotheses") or []) == sorted(
        k for k, s in states.items() if s == "REFUTED")
    assert "ACTIVE" not in states.values(), "every hypothesis is resolved before the end"


@pytest.mark.parametrize("path", SCENARIOS, ids=IDS)
def test_replay_conclusion_matches_truth(path: Path) -> None:
    scenario, turns = _replay(path)
    summary = str(_summary(turns)["root_cause_summary"])
    for resource in scenario.truth.resources:
        assert _names_resource(summary, resource), f"the conclusion does not name {resource!r}"
    for word in scenario.truth.keywords:
        assert _names(summary, word), f"the conclusion does not name {word!r}"
    for herring in scenario.truth.red_herrings:
        assert not _names(summary, herring), f"the conclusion names red herring {herring!r}"
    text = " ".join(p.get("text", "") for t in turns for p in t["parts"])
    assert any(_names(text, h) for h in scenario.truth.red_herrings), \
        "the reasoning mentions (and refutes) a red herring"


def test_at_least_five_replays_use_a_packet_capture() -> None:
    with_capture = [p.stem for p in SCENARIOS
                    if any(c["name"] == "capture_traffic" for c in _calls(_replay(p)[1]))]
    assert len(with_capture) >= 5, with_capture


# ------------------------------------------------------------------ replays vs the lab
def _commands(turns: list[dict[str, Any]]) -> list[str]:
    return [str(c["args"]["command"]) for c in _calls(turns) if c["name"] == "run_shell_cmd"]


@pytest.mark.parametrize("path", SCENARIOS, ids=IDS)
def test_every_replay_command_is_answered_by_the_lab(path: Path) -> None:
    from lab.runner import LabRunner

    scenario, turns = _replay(path)
    runner = LabRunner(scenario)
    for command in _commands(turns):
        answer = runner.run(shlex.split(command))
        assert answer.exit_code == 0, f"{command}\n-> {answer.exit_code}: {answer.stderr}"
        assert "not modelled by the lab" not in answer.stderr


@pytest.mark.parametrize("path", SCENARIOS, ids=IDS)
def test_every_replay_command_passes_the_gate(path: Path) -> None:
    from core.safety.classify import classify

    _, turns = _replay(path)
    forbidden = []
    for command in _commands(turns):
        verdict = classify(command)
        if verdict.classification == "FORBIDDEN":
            forbidden.append((command, verdict.rule))
    if forbidden and all(rule == "T0.az_remote_exec" for _, rule in forbidden):
        pytest.xfail("the gate refuses az vm run-command invoke (T0.az_remote_exec) while "
                     "issue 12 expects it RISKY; the lead decides: " + forbidden[0][0])
    assert not forbidden


# ------------------------------------------------------------------ end to end
@pytest.mark.parametrize("path", SCENARIOS, ids=IDS)
def test_demo_plays_the_replay_to_the_truth(path: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`ghost demo NAME --yes`: exit 0, RCA on the truth, every command gated and audited,
    captures analysed by the forensics engine."""
    from bot.bootstrap import build_store
    from bot.commands.demo import run
    from bot.settings import Settings

    monkeypatch.chdir(tmp_path)
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GHOST_LAB", "GHOST_DATA_DIR",
                "GHOST_DATABASE_URL"):
        monkeypatch.delenv(var, raising=False)
    scenario, turns = _replay(path)
    settings = Settings(data_dir=tmp_path / "ghost-data")
    out = io.StringIO()
    code = run(settings, scenario=scenario.name, yes=True, stdin=io.StringIO(), stdout=out)
    assert code == 0, out.getvalue()[-3000:]

    store = build_store(settings)
    inv = store.list_investigations(limit=1)[0]
    assert inv.status == "completed", out.getvalue()[-3000:]
    rca = inv.rca_markdown or ""
    for resource in scenario.truth.resources:
        assert _names_resource(rca, resource), f"the RCA does not name {resource!r}"
    for word in scenario.truth.keywords:
        assert _names(rca, word), f"the RCA does not name {word!r}"

    records = store.audit_records(inv.session_id)
    commands = [r for r in records if r.get("kind") == "command"]
    ran = {str(r.get("command")) for r in commands}
    for command in _commands(turns):
        assert any(command in c or c in command for c in ran), f"not audited: {command}"
    expected_action = {"SAFE": {"auto_approved"}, "RISKY": {"user_approved"},
                       "FORBIDDEN": {"blocked"}}
    for r in commands:
        assert r.get("action") in expected_action[str(r.get("classification"))], \
            f"{r.get('command')}: {r.get('classification')} / {r.get('action')}"

    if any(c["name"] == "capture_traffic" for c in _calls(turns)):
        analyses = [r for r in commands if "forensics" in str(r.get("command"))]
        if scenario.truth.category == "extension_missing":
            assert not analyses  # the capture cannot start without the extension
        else:
            assert analyses and all(r.get("exit_code") == 0 for r in analyses), \
                "the capture was not analysed by the forensics engine"
            assert any(r.get("classification") == "RISKY" for r in commands), \
                "creating the capture asked for an engineer's approval"
            quoted = "through the Safe-Exec Shell" in rca
            dual = any(" to " in str(c["args"].get("target")) for c in _calls(turns)
                       if c["name"] == "capture_traffic")
            if dual and not quoted:
                pytest.xfail("the RCA cannot read a dual-end report: the orchestrator records "
                             "{capture}_forensic_report.md, ghost-forensics --compare writes "
                             "{a}_vs_{b}_forensic_report.md")
            assert quoted, "the RCA quotes the forensic report's executive summary"


def test_a_dual_end_capture_gives_the_replay_both_task_ids() -> None:
    """The format counts every capture task, so the destination of a pair is {{task:N+1}}."""
    from lab.replay import capture_task_ids

    pair = {"status": "task_pending", "task_id": "cap_web", "tasks": [
        {"task_id": "cap_web"}, {"task_id": "cap_api"}]}
    history = [{"role": "user", "parts": [{"functionResponse": {
        "name": "capture_traffic", "response": pair}}]},
        {"role": "user", "parts": [{"functionResponse": {
            "name": "capture_traffic", "response": {"task_id": "cap_nva"}}}]}]
    assert capture_task_ids(history) == ["cap_web", "cap_api", "cap_nva"]
