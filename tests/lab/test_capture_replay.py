"""ReplayBrain: the replay's turns in order, whatever Ghost sent, with {{task:N}} filled in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.engine.brain import BrainError
from lab.replay import ReplayBrain, ReplayError, capture_task_ids
from lab.scenario import load_scenario

from .wiring_fixtures import REPLAY, scenario_data, write_scenario


def model(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "model", "parts": parts}


def response(name: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": [{"functionResponse": {"name": name, "response": body}}]}


def brain(tmp_path: Path, replay: list[dict[str, Any]] = REPLAY) -> ReplayBrain:
    return ReplayBrain(load_scenario(write_scenario(tmp_path, scenario_data(), replay)))


def generate(b: ReplayBrain, history: list[dict[str, Any]]) -> Any:
    return b.generate(system_prompt="ignored", tools=[], history=history)


def test_turns_are_served_in_order_counted_from_the_model_turns_in_the_history(
        tmp_path: Path) -> None:
    b = brain(tmp_path)
    assert b.model == "replay:wiring-test"
    first = generate(b, [{"role": "user", "parts": [{"text": "symptom"}]}])
    assert first.text.startswith("Hypotheses") and first.function_calls[0].name == \
        "run_shell_cmd"
    history = [{"role": "user", "parts": [{"text": "symptom"}]}, first.content,
               response("run_shell_cmd", {"status": "denied"})]
    second = generate(b, history)  # a denial does not change what comes next
    assert second.function_calls[0].name == "capture_traffic"
    assert second.content["role"] == "model"


def test_task_references_become_this_investigations_capture_task_ids(tmp_path: Path) -> None:
    b = brain(tmp_path)
    history = [
        {"role": "user", "parts": [{"text": "symptom"}]},
        model(REPLAY[0]["parts"]), response("run_shell_cmd", {"status": "completed"}),
        model(REPLAY[1]["parts"]),
        response("capture_traffic", {"status": "task_pending", "task_id": "ghost_app-1_X"}),
    ]
    reply = generate(b, history)
    assert reply.function_calls[0].args == {"task_id": "ghost_app-1_X"}
    assert json.dumps(REPLAY).count("ghost_app-1_X") == 0, "the replay file is not changed"


def test_a_reference_to_a_capture_that_was_never_created_is_a_clear_error(
        tmp_path: Path) -> None:
    b = brain(tmp_path)
    history = [{"role": "user", "parts": [{"text": "s"}]}, model([{"text": "a"}]),
               model([{"text": "b"}])]
    with pytest.raises(BrainError) as err:
        generate(b, history)
    assert "capture task 0" in str(err.value) and err.value.transient is False


def test_running_out_of_turns_is_not_retried(tmp_path: Path) -> None:
    b = brain(tmp_path, [{"parts": [{"text": "only one"}]}])
    with pytest.raises(BrainError) as err:
        generate(b, [model([{"text": "only one"}])])
    assert err.value.transient is False and "no turn 2" in str(err.value)


def test_capture_task_ids_are_read_in_creation_order_once_each() -> None:
    history = [response("capture_traffic", {"task_id": "a"}),
               response("check_task", {"task_id": "a"}),
               response("capture_traffic", {"status": "error"}),
               response("capture_traffic", {"task_id": "b"}),
               response("capture_traffic", {"task_id": "a"})]
    assert capture_task_ids(history) == ["a", "b"]


def test_a_broken_replay_file_is_one_line_naming_it(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, scenario_data(), [{"parts": []}])
    with pytest.raises(ReplayError) as err:
        brain_of(path)
    assert "wiring-test.replay.json" in str(err.value) and "\n" not in str(err.value)


def brain_of(path: Path) -> ReplayBrain:
    return ReplayBrain(load_scenario(path))


# ------------------------------------------------------------------ lab extensions
def shell(audit_id: str | None, status: str = "completed") -> dict[str, Any]:
    """A run_shell_cmd result as the brain receives it (rebuilt from its audit record)."""
    return response("run_shell_cmd", {"status": status, "audit_id": audit_id, "output": ""})


def turn_with(text: str, args: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """A one-turn replay answering the next model call with ``text`` and a run_shell_cmd."""
    return [{"parts": [{"text": text}, {"functionCall": {"name": "run_shell_cmd", "args": args or {
        "command": "az vm list -o table", "reasoning": "next"}}}]}]


def answer(tmp_path: Path, turn: list[dict[str, Any]], history: list[dict[str, Any]]) -> Any:
    """The replay's turn for this history (the history holds no model turn: turn 0)."""
    return generate(brain(tmp_path, turn), history)


def test_audit_references_count_every_run_shell_cmd_result_blocked_and_denied_included(
        tmp_path: Path) -> None:
    history = [{"role": "user", "parts": [{"text": "symptom"}]},
               shell("s_002"),
               shell("s_003", status="error"),          # FORBIDDEN: blocked, still audited
               response("capture_traffic", {"task_id": "cap", "audit_id": "s_004"}),
               shell("s_006", status="denied"),         # an engineer said no
               {"role": "user", "parts": [{"functionResponse": {      # stored, not rebuilt
                   "name": "run_shell_cmd", "response": {"_audit_ref": "s_009"}}}]}]
    reply = answer(tmp_path, turn_with("{{audit:0}} {{audit:1}} {{audit:2}} {{audit:last}}", {
        "command": "az vm list", "reasoning": "after {{audit:3}}",
        "hypotheses": [{"id": "h1", "state": "CONFIRMED",
                        "evidence_audit_ids": ["{{audit:0}}", "{{audit:last}}"]}]}), history)
    assert reply.text == "s_002 s_003 s_006 s_009"
    args = reply.function_calls[0].args
    assert args["reasoning"] == "after s_009"
    assert args["hypotheses"][0]["evidence_audit_ids"] == ["s_002", "s_009"]


@pytest.mark.parametrize(("ref", "history", "says"), [
    ("{{audit:2}}", [shell("s_002"), shell("s_003")], "run_shell_cmd result 2"),
    ("{{audit:last}}", [response("capture_traffic", {"task_id": "c"})], "no run_shell_cmd"),
    ("{{audit:0}}", [shell(None, status="error")], "never recorded"),
    ("{{summary:0}}", [], "capture task 0"),
    ("{{report:0}}", [response("capture_traffic", {"task_id": "c"}),
                      response("check_task", {"task_id": "c", "result": None})],
     "not analysed"),
])
def test_a_reference_to_what_does_not_exist_yet_is_a_clear_error(
        tmp_path: Path, ref: str, history: list[dict[str, Any]], says: str) -> None:
    with pytest.raises(BrainError) as err:
        answer(tmp_path, turn_with(f"read {ref}"), history)
    message = str(err.value)
    assert err.value.transient is False and says in message and ref in message
    assert "wiring-test.replay.json, turn 1" in message and "\n" not in message


def test_report_and_summary_are_the_latest_paths_of_that_capture_shell_quoted(
        tmp_path: Path) -> None:
    import shlex

    def done(task_id: str, folder: str) -> dict[str, Any]:
        return response("check_task", {"task_id": task_id, "status": "completed", "result": {
            "report_path": f"{folder}/{task_id}_forensic_report.md",
            "executive_summary_path": f"{folder}/{task_id}_executive_summary.md"}})

    pair = {"task_id": "web", "tasks": [{"task_id": "web"}, {"task_id": "api"}]}
    history = [response("capture_traffic", pair),
               done("web", "/old"), done("api", "/data dir/lab"), done("web", "/data/lab")]
    reply = answer(tmp_path, turn_with("{{report:0}}", {
        "command": "cat {{summary:1}}", "reasoning": "read {{summary:0}}"}), history)
    assert reply.text == "/data/lab/web_forensic_report.md"
    args = reply.function_calls[0].args
    assert args["reasoning"] == "read /data/lab/web_executive_summary.md"
    assert shlex.split(args["command"]) == ["cat", "/data dir/lab/api_executive_summary.md"]


def test_data_dir_is_ghosts_data_directory_resolved_and_shell_quoted(tmp_path: Path) -> None:
    import shlex

    data = tmp_path / "data dir"
    data.mkdir()
    turn = turn_with("blobs go to {{data_dir}}", {
        "command": "az storage blob download --account-name sa -c c -n b --auth-mode login "
                   "--file {{data_dir}}/fl-h13.json", "reasoning": "fetch the hour"})
    b = ReplayBrain(load_scenario(write_scenario(tmp_path, scenario_data(), turn)),
                    data_dir=tmp_path / "x" / ".." / "data dir")
    reply = generate(b, [])
    assert reply.text == f"blobs go to {shlex.quote(str(data))}"
    argv = shlex.split(reply.function_calls[0].args["command"])
    assert argv[-1] == f"{data}/fl-h13.json"


def test_data_dir_without_a_data_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BrainError) as err:
        answer(tmp_path, turn_with("write to {{data_dir}}"), [])
    assert "{{data_dir}}" in str(err.value) and err.value.transient is False


def test_a_replay_without_the_extensions_is_served_as_written(tmp_path: Path) -> None:
    turn = turn_with("{{ audit:0 }} {{audit:x}} {{task}} {{other:1}}")
    assert answer(tmp_path, turn, []).text == "{{ audit:0 }} {{audit:x}} {{task}} {{other:1}}"


# ------------------------------------------------------------------ end to end, and resumed
EVIDENCE_REPLAY: list[dict[str, Any]] = [
    {"parts": [{"functionCall": {"name": "run_shell_cmd", "args": {
        "command": "az network watcher test-ip-flow -g rg-data --vm db-1 --direction Inbound "
                   "--protocol TCP --local 10.20.2.4:6380 --remote 10.20.1.4:50000",
        "reasoning": "Which rule decides app-1 -> db-1:6380.",
        "hypotheses": [{"id": "h1", "description": "nsg-db denies 6380", "state": "ACTIVE"},
                       {"id": "h2", "description": "db-1 is down", "state": "ACTIVE"}]}}}]},
    {"parts": [{"functionCall": {"name": "run_shell_cmd", "args": {
        "command": "cat /etc/shadow", "reasoning": "Blocked by the gate (FORBIDDEN).",
        "hypotheses": [{"id": "h1", "state": "CONFIRMED",
                        "evidence_audit_ids": ["{{audit:0}}"]}]}}}]},
    {"parts": [{"functionCall": {"name": "run_shell_cmd", "args": {
        "command": "az vm restart -g rg-data -n db-1", "reasoning": "The engineer denies it."}}}]},
    {"parts": [{"functionCall": {"name": "capture_traffic", "args": {
        "target": "app-1", "resource_group": "rg-app", "storage_account": "ghostlab",
        "duration_seconds": 20, "investigation_context": "SYNs from app-1 to db-1:6380"}}}]},
    {"parts": [{"functionCall": {"name": "check_task", "args": {"task_id": "{{task:0}}"}}}]},
    {"parts": [{"functionCall": {"name": "check_task", "args": {"task_id": "{{task:0}}"}}}]},
    {"parts": [{"text": "Reading {{summary:0}}."}, {"functionCall": {
        "name": "run_shell_cmd", "args": {"command": "cat {{summary:0}}",
                                          "reasoning": "Read the forensic findings."}}}]},
    {"parts": [{"text": "blocked {{audit:1}}, denied {{audit:2}}, summary {{audit:last}}"},
               {"functionCall": {"name": "complete_investigation", "args": {
                   "confidence": "high", "root_cause_summary": "Rule deny-app-6380 on nsg-db.",
                   "confirmed_hypotheses": ["h1"], "refuted_hypotheses": ["h2"],
                   "recommended_actions": ["Remove rule deny-app-6380 from nsg-db"],
                   "hypotheses": [{"id": "h2", "state": "REFUTED",
                                   "evidence_audit_ids": ["{{audit:3}}"]}]}}}]},
]

_REGENERATE = """
import json, sys
from bot.bootstrap import build_store
from bot.settings import Settings
from core.engine.history import rebuild
from lab.replay import ReplayBrain
from lab.scenario import load_scenario
from pathlib import Path

data_dir, scenario, session = sys.argv[1:4]
store = build_store(Settings(data_dir=Path(data_dir)))
turns, records = store.turns(session), store.audit_records(session)
brain = ReplayBrain(load_scenario(Path(scenario)))
out = [brain.generate(system_prompt="", tools=[], history=rebuild(turns[:i], records)).content
       for i, t in enumerate(turns) if t["role"] == "model"]
print(json.dumps(out))
"""


def test_a_demo_cites_its_own_records_and_another_process_fills_in_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocked and denied commands count; the summary is read where this run wrote it; a
    fresh brain in another process, given the history rebuilt from the store, answers every
    turn exactly as the first did (the brain keeps no state of its own)."""
    import io
    import subprocess
    import sys

    from bot.bootstrap import build_store
    from bot.commands.demo import run
    from bot.settings import Settings

    monkeypatch.chdir(tmp_path)
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GHOST_LAB", "GHOST_DATA_DIR",
                "GHOST_DATABASE_URL"):
        monkeypatch.delenv(var, raising=False)
    path = write_scenario(tmp_path / "scn", scenario_data(), EVIDENCE_REPLAY)
    settings = Settings(data_dir=tmp_path / "data")
    out = io.StringIO()
    answers = io.StringIO("d\nnot now\n" + "a\n" * 6)  # deny the restart, approve the capture
    code = run(settings, scenario=str(path), yes=False, stdin=answers, stdout=out)
    assert code == 0, out.getvalue()[-3000:]
    store = build_store(settings)
    inv = store.list_investigations(limit=1)[0]
    records = store.audit_records(inv.session_id)
    by_command = {str(r.get("command")): r for r in records if r.get("kind") == "command"}
    flow = next(r for c, r in by_command.items() if "test-ip-flow" in c)
    blocked, denied = by_command["cat /etc/shadow"], by_command["az vm restart -g rg-data -n db-1"]
    assert (blocked["action"], denied["action"]) == ("blocked", "user_denied")
    [summary] = [r for r in records if r.get("kind") == "command"  # the RCA reads it again
                 and r.get("reasoning") == "Read the forensic findings."]
    assert summary["exit_code"] == 0 and summary["command"].endswith("_executive_summary.md")
    assert str(tmp_path / "data") in summary["command"] and "Executive Summary" in summary["output"]

    stored = [t["content"] for t in store.turns(inv.session_id) if t["role"] == "model"]
    final = stored[-1]["parts"][0]["text"]
    assert final == (f"blocked {blocked['audit_id']}, denied {denied['audit_id']}, "
                     f"summary {summary['audit_id']}")
    rows = {cells[0]: cells for cells in (
        [c.strip() for c in line.strip("| ").split("|")]
        for line in (inv.rca_markdown or "").splitlines() if line.startswith("| h"))}
    assert (rows["h1"][2], rows["h1"][4]) == ("CONFIRMED", flow["audit_id"])
    assert (rows["h2"][2], rows["h2"][4]) == ("REFUTED", summary["audit_id"])

    # another process, knowing only what the store holds, answers every turn the same way
    done = subprocess.run(
        [sys.executable, "-c", _REGENERATE, str(tmp_path / "data"), str(path), inv.session_id],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == stored
