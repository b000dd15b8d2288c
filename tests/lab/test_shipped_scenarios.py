"""The shipped scenarios (lab/scenarios) and their replays: valid, covering every category, and
reaching the scenario's truth through the gate when played end to end by `ghost demo`.

A replay does not re-plan, so these tests hold it to what the lab really answers: every command
it runs is answered by the lab runner with exit 0, and its conclusion names the truth's
resources and keywords and none of the red herrings. Its resolutions cite evidence
(``{{audit:N}}``), and the RCA of a demo run shows, for the confirmed hypothesis, a record whose
output shows the fault (what issue 15's eval scores).
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
from lab.categories import CATEGORIES_V1, CATEGORIES_V2
from lab.scenario import Scenario, load_scenario, shipped_scenarios

# format 1's seventeen and format 2's eight built-in categories, one shipped scenario each
CATEGORIES = CATEGORIES_V1 + CATEGORIES_V2
TASK_REF = re.compile(r"\{\{task:(\d+)\}\}")
PATH_REF = re.compile(r"\{\{(?:report|summary):(\d+)\}\}")
AUDIT_REF = re.compile(r"\{\{audit:(\d+|last)\}\}")
ANY_REF = re.compile(r"\{\{(?:task|audit|report|summary):(?:\d+|last)\}\}|\{\{data_dir\}\}")
#: the runs' own files (cat {{summary:0}}) are checked end to end; {{data_dir}} alone (where
#: flow-log blobs are downloaded) is filled with a folder here
RUN_REF = re.compile(r"\{\{(?:task|audit|report|summary):(?:\d+|last)\}\}")
RESOLVED = ("CONFIRMED", "REFUTED")
#: a hypothesis moved in the model's prose ("H1 CONFIRMED (…)"), as the engine reads it
STATE_LINE = re.compile(r"\b[Hh](\d{1,3})\s*(?:is\s+|:\s*|-\s*)?(CONFIRMED|REFUTED)\b")
#: the forensic finding that shows each capture-decided fault (forensics/findings_*.py ids)
FAULT_FINDINGS = {"mtu_blackhole": "mtu_blackhole", "service_down": "tcp_connection_refused",
                  "custom_dns_broken": "dns_port_unreachable", "nva_reset": "tcp_injected_reset",
                  "nva_loss": "two_ended_comparison"}
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
def _every_turn(turns: list[dict[str, Any]], where: str = "") -> list[tuple[str, Any]]:
    """Every turn of the replay, its branches included, with where it is ([8].on_denied[1])."""
    found: list[tuple[str, Any]] = []
    for i, turn in enumerate(turns):
        found.append((f"{where}[{i}]", turn))
        for key in ("on_denied", "on_changed"):
            if key in turn:
                found += _every_turn(turn[key], f"{where}[{i}].{key}")
    return found


def _lines(turns: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Every path a replay can play: the main line and each branch with what leads to it."""
    paths: list[list[dict[str, Any]]] = [list(turns)]
    for i, turn in enumerate(turns):
        for key in ("on_denied", "on_changed"):
            for tail in (_lines(turn[key]) if key in turn else []):
                paths.append([*turns[:i], *tail])
    return paths


def _sequences(turns: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The main line and every branch, each on its own (a branch starts fresh)."""
    found = [turns]
    for turn in turns:
        for key in ("on_denied", "on_changed"):
            if key in turn:
                found += _sequences(turn[key])
    return found


@pytest.mark.parametrize("path", SCENARIOS, ids=IDS)
def test_replay_calls_real_tools_with_their_required_args(path: Path) -> None:
    from lab.replay import load_replay

    scenario, turns = _replay(path)
    load_replay(scenario.replay_path() or path)  # the loader checks expects and branches
    for where, turn in _every_turn(turns):
        assert set(turn) <= {"parts", "expects", "on_denied", "on_changed"} and turn["parts"], \
            where
        for part in turn["parts"]:
            assert set(part) <= {"text", "functionCall"}, f"turn {where}: {part}"
    for line in _lines(turns):
        calls = _calls(line)
        for call in calls:
            assert call["name"] in TOOL_NAMES
            required = declaration(call["name"])["parameters"]["required"]
            missing = [r for r in required if not call["args"].get(r)]
            assert not missing, f"{call['name']} lacks {missing}"
        assert calls[-1]["name"] == COMPLETE_INVESTIGATION
        assert [c["name"] for c in calls].count(COMPLETE_INVESTIGATION) == 1


def _risky(call: dict[str, Any]) -> str | None:
    """What in a call needs an engineer: a capture, or a probe inside a VM."""
    if call["name"] == "capture_traffic":
        return "capture"
    command = str(call["args"].get("command") or "")
    return "probe" if call["name"] == "run_shell_cmd" and "run-command invoke" in command \
        else None


@pytest.mark.parametrize("path", SCENARIOS, ids=IDS)
def test_every_scenario_asks_an_engineer_at_least_once(path: Path) -> None:
    """The second-engineer approval is the heart of the product: every shipped replay has a
    RISKY step (a capture or an in-VM probe) on its main line."""
    _, turns = _replay(path)
    assert any(_risky(c) for c in _calls(turns)), f"{path.stem}: no RISKY step"


@pytest.mark.parametrize("path", SCENARIOS, ids=IDS)
def test_every_capture_and_probe_step_has_a_pivot_when_denied(path: Path) -> None:
    """The turn after a capture or a probe says what it depends on, and an engineer's denial
    takes a branch that pivots as the playbook says (lab.replay_format)."""
    _, turns = _replay(path)
    for line in _sequences(turns):
        for i, turn in enumerate(line[:-1]):
            kinds = {_risky(c) for c in _calls([turn])} - {None}
            if not kinds:
                continue
            nxt = line[i + 1]
            if "capture" in kinds and "db-vm-01" in json.dumps(turn):
                continue  # extension-missing: this capture cannot start (no approval asked)
            assert nxt.get("expects"), f"{path.stem}: the turn after {kinds} expects nothing"
            assert nxt.get("on_denied") or _calls([nxt])[-1]["name"] == COMPLETE_INVESTIGATION \
                or any(t.get("on_denied") for t in line[i + 1:]), \
                f"{path.stem}: no on_denied branch after {kinds}"


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
        for ref in PATH_REF.findall(json.dumps(call["args"])):
            assert int(ref) in checked, f"capture task {ref}'s report read before check_task"
    assert checked == set(range(captures)), "every capture is polled with check_task"


@pytest.mark.parametrize("path", SCENARIOS, ids=IDS)
def test_every_resolution_cites_the_commands_that_decided_it(path: Path) -> None:
    """A hypothesis moved to CONFIRMED or REFUTED carries ``evidence_audit_ids`` naming
    run_shell_cmd results that exist by then, and the prose line that moves it (which the
    engine reads first) cites the same records."""
    _, turns = _replay(path)
    answered = 0  # run_shell_cmd results in the history when a turn is generated
    states: dict[str, str] = {}
    for i, turn in enumerate(turns):
        calls = [p["functionCall"] for p in turn["parts"] if "functionCall" in p]
        before = dict(states)
        moved: dict[str, list[str]] = {}
        for call in calls:
            for h in call["args"].get("hypotheses") or []:
                if h["state"] in RESOLVED and states.get(h["id"]) != h["state"]:
                    moved[h["id"]] = list(h.get("evidence_audit_ids") or [])
                states[h["id"]] = h["state"]
        for hid, cited in moved.items():
            assert cited, f"turn {i}: {hid} {states[hid]} cites no evidence"
            for ref in cited:
                n = AUDIT_REF.fullmatch(ref)
                assert n, f"turn {i}: {hid} cites {ref!r}, not a {{{{audit:N}}}} reference"
                assert n.group(1) == "last" and answered or int(n.group(1)) < answered, \
                    f"turn {i}: {hid} cites {ref} but only {answered} commands have answered"
        text = "".join(p.get("text", "") for p in turn["parts"])
        for line in text.splitlines():
            for number, state in STATE_LINE.findall(line):
                hid = f"h{number}"
                if before.get(hid) != state:
                    assert hid in moved and states[hid] == state, \
                        f"turn {i}: the text moves {hid} to {state}, the hypotheses argument not"
                    assert sorted(AUDIT_REF.findall(line)) == sorted(
                        m.group(1) for r in moved[hid] if (m := AUDIT_REF.fullmatch(r))
                    ), f"turn {i}: the line moving {hid} cites other records: {line!r}"
        answered += sum(1 for c in calls if c["name"] == "run_shell_cmd")
    assert any(s in RESOLVED for s in states.values())


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
def test_every_replay_command_is_answered_by_the_lab(path: Path, tmp_path: Path) -> None:
    from lab.executor import runs_for_real
    from lab.runner import LabRunner

    scenario, turns = _replay(path)
    runner = LabRunner(scenario)
    for command in _commands(turns):
        if RUN_REF.search(command):
            continue  # names a file of this run (cat {{summary:0}}): checked end to end
        argv = shlex.split(command.replace("{{data_dir}}", str(tmp_path)))
        if runs_for_real(argv):
            continue  # ghost-forensics and cat run for real, not in the lab: end to end
        answer = runner.run(argv)
        assert answer.exit_code == 0, f"{command}\n-> {answer.exit_code}: {answer.stderr}"
        assert "not modelled by the lab" not in answer.stderr


@pytest.mark.parametrize("path", SCENARIOS, ids=IDS)
def test_every_replay_command_passes_the_gate(path: Path) -> None:
    from core.safety.classify import classify

    _, turns = _replay(path)
    forbidden = []
    data_dir = Path("/srv/ghost-data")
    for command in _commands(turns):
        if RUN_REF.search(command):
            continue  # its verdict depends on this run's data directory: checked end to end
        verdict = classify(command.replace("{{data_dir}}", str(data_dir)), data_dir=data_dir)
        if verdict.classification == "FORBIDDEN":
            forbidden.append((command, verdict.rule))
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
        pattern = re.compile(".+".join(re.escape(p) for p in ANY_REF.split(command)))
        assert any(command in c or c in command or pattern.fullmatch(c) for c in ran), \
            f"not audited: {command}"
    _assert_cited_evidence(scenario, rca, records, settings.data_dir)
    expected_action = {"SAFE": {"auto_approved"}, "RISKY": {"user_approved"},
                       "FORBIDDEN": {"blocked"}}
    for r in commands:
        assert r.get("action") in expected_action[str(r.get("classification"))], \
            f"{r.get('command')}: {r.get('classification')} / {r.get('action')}"

    if any(c["name"] == "capture_traffic" for c in _calls(turns)):
        analyses = [r for r in commands if "forensics" in str(r.get("command"))]
        assert analyses and all(r.get("exit_code") == 0 for r in analyses), \
            "the capture was not analysed by the forensics engine"
        assert "through the Safe-Exec Shell" in rca, \
            "the RCA quotes the forensic report's executive summary"
        # the cleanup deleted the raw pcap, and the report says so instead of listing its path
        assert "deleted by the cleanup" in rca
    assert any(r.get("classification") == "RISKY" for r in commands), \
        "the demo asked for an engineer's approval"
    # the main line played to its end: no honest end, no branch
    texts = [p.get("text", "") for t in store.turns(inv.session_id) if t["role"] == "model"
             for p in t["content"].get("parts") or []]
    assert not any("cannot follow" in t for t in texts)
    _assert_bookkeeping(rca, inv.session_id)
    assert "charges" not in out.getvalue() and "charges" not in rca


def _assert_bookkeeping(rca: str, session_id: str) -> None:
    """Every audit id the RCA cites anywhere is a row of its command table."""
    table = rca.split("## Command Evidence", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| (" + re.escape(session_id) + r"_\d{3,}) \|", table, re.M))
    cited = set(re.findall(re.escape(session_id) + r"_\d{3,}", rca))
    assert cited <= rows, f"cited but not in the command table: {sorted(cited - rows)}"


def _hypothesis_rows(rca: str) -> dict[str, list[str]]:
    """The RCA's Hypotheses Log: id -> [id, description, state, denials, resolving audit id]."""
    section = rca.split("## Hypotheses Log", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("| h")]
    return {row[0]: row for row in rows}


def _assert_cited_evidence(scenario: Scenario, rca: str, records: list[dict[str, Any]],
                           data_dir: Path) -> None:
    """Every resolution in the RCA cites a record of this session, and what the confirmed
    hypothesis cites shows the fault: a truth keyword or resource in its output, or for a
    capture-decided fault the title of the forensic finding that names it."""
    audit = {str(r["audit_id"]): r for r in records if r.get("kind") == "command"}
    rows = _hypothesis_rows(rca)
    resolved = {hid: row for hid, row in rows.items() if row[2] in RESOLVED}
    assert resolved, "the RCA resolves hypotheses"
    for hid, row in resolved.items():
        cited = row[4]
        assert cited in audit, f"{hid} {row[2]} cites {cited!r}, not a record of this session"
    words = [*scenario.truth.keywords,
             *(part for r in scenario.truth.resources for part in r.split("/"))]
    finding = FAULT_FINDINGS.get(scenario.truth.category)
    titles = [f.get("title", "") for p in (data_dir / "lab" / "captures").glob("*_semantic.json")
              for f in json.loads(p.read_text(encoding="utf-8")).get("findings") or []
              if f.get("id") == finding]
    for hid, row in resolved.items():
        if row[2] != "CONFIRMED":
            continue
        output = str(audit[row[4]].get("output") or "")
        assert any(_names(output, w) for w in words), \
            f"{hid} cites {row[4]} ({audit[row[4]].get('command')}), whose output does not " \
            "show the fault"
        if finding:
            assert titles and any(t in output for t in titles), \
                f"{hid} cites {row[4]}, which does not show the {finding} finding"
    if scenario.truth.category != "healthy":
        assert any(row[2] == "CONFIRMED" for row in resolved.values())


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
