"""Replays that follow what ran (docs/lab.md): a turn's ``expects``, its ``on_denied`` and
``on_changed`` branches, and the honest end when a denied or edited step has no branch — played
through ``ghost demo`` with the terminal approver reading the engineer's answers from a pipe.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from bot.bootstrap import build_store
from bot.commands.demo import run
from bot.settings import Settings
from lab.replay import load_replay
from lab.replay_format import ReplayError
from tests.eval.helpers import complete, hyp, isolate, scenario_with_replay, shell

IP_FLOW = ("az network watcher test-ip-flow -g rg-prod-data --vm redis-vm-01 --direction "
           "Inbound --protocol TCP --local 10.1.2.4:6379 --remote 10.1.1.4:49152")
PROBE = ("az vm run-command invoke -g rg-prod-data -n redis-vm-01 --command-id RunShellScript "
         "--scripts \"ss -ltn\"")
VIEW = ('az vm get-instance-view -g rg-prod-data -n redis-vm-01 --query '
        '"instanceView.statuses[].displayStatus" -o tsv')
H1 = "An NSG rule on nsg-data denies TCP 6379 from web-vm-01 to redis-vm-01."
H2 = "Redis on redis-vm-01 no longer listens on 6379."
TRUTH = ("NSG rule deny-web-to-redis on nsg-data denies TCP 6379 to redis-vm-01 "
         "({{audit:0}}).")
LISTENS = "Redis listens on 0.0.0.0:6379 ({{audit:1}})."


def _script(*, branch: bool, output_has: str = "6379") -> list[dict[str, Any]]:
    """IP flow verify confirms h1, then a RISKY probe tests h2; the turn after the probe
    reads its output (and, with ``branch``, pivots when it is denied)."""
    reads_probe: dict[str, Any] = {
        **shell(VIEW, text=f"{LISTENS}\nH2 REFUTED ({{{{audit:1}}}}).",
                hypotheses=[hyp("h2", "REFUTED", evidence=["{{audit:1}}"])]),
        "expects": [{"audit": 1, "output_has": [output_has]}]}
    if branch:
        reads_probe["on_denied"] = [
            shell(VIEW, text="The probe was denied; the instance view shows the VM's state "
                  "instead."),
            complete(TRUTH, confirmed=["h1"], text="H2 UNVERIFIABLE: the probe was denied.",
                     hypotheses=[hyp("h2", "UNVERIFIABLE")]),
        ]
    return [
        shell(IP_FLOW, hypotheses=[hyp("h1", "ACTIVE", H1), hyp("h2", "ACTIVE", H2)]),
        shell(PROBE, text="H1 CONFIRMED ({{audit:0}}).",
              hypotheses=[hyp("h1", "CONFIRMED", evidence=["{{audit:0}}"])]),
        reads_probe,
        complete(TRUTH, confirmed=["h1"], refuted=["h2"], text="Done."),
    ]


def _demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, turns: list[dict[str, Any]],
          answers: str) -> tuple[int, str, Any, Any]:
    isolate(monkeypatch, tmp_path)
    path = scenario_with_replay(tmp_path, "nsg-deny-redis", turns)
    settings = Settings(data_dir=tmp_path / "ghost-data")
    out = io.StringIO()
    code = run(settings, scenario=str(path), yes=False, stdin=io.StringIO(answers), stdout=out)
    store = build_store(settings)
    inv = store.list_investigations(limit=1)[0]
    return code, out.getvalue(), inv, store


def _model_text(store: Any, session_id: str) -> str:
    return "\n".join(p.get("text", "") for t in store.turns(session_id)
                     if t.get("role") == "model" for p in t["content"].get("parts") or [])


def _hypothesis_states(rca: str) -> dict[str, str]:
    section = rca.split("## Hypotheses Log", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("| h")]
    return {row[0]: row[2] for row in rows}


def test_an_approved_probe_plays_the_main_line(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, inv, store = _demo(tmp_path, monkeypatch, _script(branch=True), "a\n")
    assert code == 0, out[-2000:]
    assert inv.status == "completed"
    assert "Redis listens on 0.0.0.0:6379" in _model_text(store, inv.session_id)
    assert _hypothesis_states(inv.rca_markdown) == {"h1": "CONFIRMED", "h2": "REFUTED"}


def test_a_denied_probe_takes_the_on_denied_branch(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, inv, store = _demo(tmp_path, monkeypatch, _script(branch=True),
                                  "d\nnot on prod\n")
    assert code == 0, out[-2000:]
    text = _model_text(store, inv.session_id)
    assert "The probe was denied" in text
    assert "Redis listens" not in text  # the main line's reading of the probe never plays
    assert _hypothesis_states(inv.rca_markdown) == {"h1": "CONFIRMED", "h2": "UNVERIFIABLE"}


def test_a_denied_probe_without_a_branch_ends_honestly(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, inv, store = _demo(tmp_path, monkeypatch, _script(branch=False),
                                  "d\nnot on prod\n")
    assert code == 0, out[-2000:]
    assert inv.status == "completed" and inv.rca_markdown
    text = _model_text(store, inv.session_id)
    assert "Redis listens" not in text
    assert "cannot follow the engineer's decision: the engineer denied `az vm run-command" \
        in text and "(reason: not on prod)" in text
    assert "GEMINI_API_KEY" in text  # with a key, Gemini would re-plan
    rca = inv.rca_markdown
    # what was established stays; what was left open is unverifiable
    assert _hypothesis_states(rca) == {"h1": "CONFIRMED", "h2": "UNVERIFIABLE"}
    assert "Established before that: h1" in rca and "Left open, so unverifiable: h2" in rca
    assert "_Confidence: medium_" in rca


def test_an_edited_probe_is_a_change_not_the_scripted_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edited = PROBE.replace('"ss -ltn"', '"ss -ltnp"')
    code, out, inv, store = _demo(tmp_path, monkeypatch, _script(branch=True),
                                  f"m\n{edited}\n")
    assert code == 0, out[-2000:]
    text = _model_text(store, inv.session_id)
    assert "Redis listens" not in text and "The probe was denied" not in text
    assert "the engineer edited `az vm run-command" in text and "ss -ltnp" in text
    assert _hypothesis_states(inv.rca_markdown)["h2"] == "UNVERIFIABLE"


def test_other_output_than_the_turn_reads_takes_on_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    turns = _script(branch=True, output_has="5432")  # ss -ltn shows 6379, not 5432
    turns[2]["on_changed"] = [complete(TRUTH, confirmed=["h1"], text="Redis answers "
                                       "otherwise than scripted.")]
    code, out, inv, store = _demo(tmp_path, monkeypatch, turns, "a\n")
    assert code == 0, out[-2000:]
    text = _model_text(store, inv.session_id)
    assert "Redis answers otherwise than scripted." in text and "Redis listens" not in text


def test_a_file_without_the_fields_plays_as_before(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    turns = _script(branch=False)
    del turns[2]["expects"]
    code, out, inv, store = _demo(tmp_path, monkeypatch, turns, "d\n\n")
    assert code == 0, out[-2000:]
    assert "Redis listens" in _model_text(store, inv.session_id)  # turn k, whatever happened


def test_a_denied_capture_ends_honestly_and_a_placeholder_never_crashes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    capture = {"parts": [{"functionCall": {"name": "capture_traffic", "args": {
        "target": "redis-vm-01", "resource_group": "rg-prod-data",
        "storage_account": "stghostlabcaptures", "duration_seconds": 30,
        "investigation_context": "Capture on redis-vm-01."}}}]}
    turns = [
        shell(IP_FLOW, hypotheses=[hyp("h1", "ACTIVE", H1)]),
        capture,
        {"expects": [{"task": 0}],
         "parts": [{"functionCall": {"name": "check_task", "args": {"task_id": "{{task:0}}"}}}]},
        shell("cat {{summary:0}}"),  # no expects: the placeholder itself cannot be filled
        complete(TRUTH, confirmed=["h1"]),
    ]
    turns[2]["on_denied"] = [turns[3], turns[4]]
    code, out, inv, store = _demo(tmp_path, monkeypatch, turns, "d\nno captures today\n")
    assert code == 0, out[-2000:]
    text = _model_text(store, inv.session_id)
    assert "cannot follow what ran: reads the executive_summary_path of capture task 0" in text
    assert inv.status == "completed" and _hypothesis_states(inv.rca_markdown) == {
        "h1": "UNVERIFIABLE"}


@pytest.mark.parametrize("turn, message", [
    ({"parts": [{"text": "x"}], "expect": []}, "unknown key 'expect'"),
    ({"parts": [{"text": "x"}], "expects": [{"audit": -1}]}, "expects[0].audit is a 0-based"),
    ({"parts": [{"text": "x"}], "expects": [{"audit": 1, "task": 0}]}, "names one earlier"),
    ({"parts": [{"text": "x"}], "expects": [{"task": 0, "output_has": ["x"]}]},
     "unknown key 'output_has' for a task dependency"),
    ({"parts": [{"text": "x"}], "on_denied": [{"parts": [{"text": "y"}]}]},
     "says what it depends on (expects)"),
    ({"parts": [{"text": "x"}], "expects": [{"audit": 0}],
      "on_denied": [{"parts": [{"text": "y"}]}]},
     "[1].on_denied[0]: a branch ends with complete_investigation"),
])
def test_the_loader_names_what_is_wrong_and_where(tmp_path: Path, turn: dict[str, Any],
                                                  message: str) -> None:
    path = tmp_path / "x.replay.json"
    path.write_text(json.dumps([{"parts": [{"text": "a"}]}, turn]), encoding="utf-8")
    with pytest.raises(ReplayError) as caught:
        load_replay(path)
    assert message in str(caught.value), str(caught.value)
    assert str(path) in str(caught.value)
