"""The six function declarations against ghost-design §1 (test plan T2–T4) and the hypotheses
argument of issue 6."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.engine import tools
from core.engine.models import DEFAULT_MODEL

# ghost-design §1, transcribed: every parameter and its type, and the required ones.
SPEC: dict[str, tuple[dict[str, str], list[str]]] = {
    "run_shell_cmd": ({"command": "STRING", "reasoning": "STRING"}, ["command", "reasoning"]),
    "capture_traffic": (
        {"target": "STRING", "resource_group": "STRING", "storage_account": "STRING",
         "storage_resource_group": "STRING", "duration_seconds": "INTEGER",
         "investigation_context": "STRING", "storage_auth_mode": "STRING"},
        # issue 27: the account defaults to GHOST_CAPTURE_STORAGE_ACCOUNT
        ["target", "resource_group"]),
    "check_task": ({"task_id": "STRING"}, ["task_id"]),
    "cancel_task": ({"task_id": "STRING", "reason": "STRING"}, ["task_id"]),
    "cleanup_task": ({"task_id": "STRING"}, ["task_id"]),
    "complete_investigation": (
        {"confidence": "STRING", "root_cause_summary": "STRING",
         "confirmed_hypotheses": "ARRAY", "refuted_hypotheses": "ARRAY",
         "unverifiable_hypotheses": "ARRAY", "contradicted_hypotheses": "ARRAY",
         "recommended_actions": "ARRAY"},
        ["confidence", "root_cause_summary"]),
}


def test_six_tools_in_the_spec_order() -> None:
    assert tools.TOOL_NAMES == ("run_shell_cmd", "capture_traffic", "check_task", "cancel_task",
                                "cleanup_task", "complete_investigation")
    assert [d["name"] for d in tools.TOOL_DECLARATIONS] == list(tools.TOOL_NAMES)
    assert [d["name"] for d in tools.declarations()] == list(tools.TOOL_NAMES)


@pytest.mark.parametrize("name", list(SPEC))
def test_parameters_and_required_fields_match_the_spec(name: str) -> None:  # T2
    decl = tools.declaration(name)
    assert set(decl) == {"name", "description", "parameters"}
    assert decl["description"].strip()
    params = decl["parameters"]
    assert params["type"] == "OBJECT"
    props, required = SPEC[name]
    assert params["required"] == required
    assert {k: v["type"] for k, v in params["properties"].items() if k != "hypotheses"} == props
    for prop in params["properties"].values():
        assert prop["description"].strip()


def test_storage_auth_mode_enum() -> None:  # T3
    prop = tools.declaration("capture_traffic")["parameters"]["properties"]["storage_auth_mode"]
    assert prop["enum"] == ["login", "key"]
    assert prop["type"] == "STRING"


def test_complete_investigation_has_contradicted_hypotheses() -> None:  # T4
    props = tools.declaration("complete_investigation")["parameters"]["properties"]
    assert props["contradicted_hypotheses"] == {
        "type": "ARRAY", "items": {"type": "STRING"},
        "description": props["contradicted_hypotheses"]["description"]}
    assert "audit_id" in props["contradicted_hypotheses"]["description"]
    assert props["confidence"]["enum"] == ["high", "medium", "low"]
    for key in ("confirmed_hypotheses", "refuted_hypotheses", "unverifiable_hypotheses",
                "recommended_actions"):
        assert props[key]["items"] == {"type": "STRING"}


@pytest.mark.parametrize("name", list(SPEC))
def test_every_tool_takes_an_optional_hypotheses_array(name: str) -> None:
    params = tools.declaration(name)["parameters"]
    hyp = params["properties"]["hypotheses"]
    assert "hypotheses" not in params["required"]
    assert hyp["type"] == "ARRAY"
    assert "changes state" in hyp["description"]
    item = hyp["items"]
    assert item["type"] == "OBJECT"
    assert set(item["properties"]) == {"id", "description", "state", "evidence_audit_ids"}
    assert item["properties"]["state"]["enum"] == [
        "ACTIVE", "CONFIRMED", "REFUTED", "CONTRADICTED", "UNVERIFIABLE"]
    assert item["properties"]["evidence_audit_ids"]["items"] == {"type": "STRING"}
    assert item["required"] == ["id", "state"]


def _types(schema: Any) -> list[str]:
    found: list[str] = []
    if isinstance(schema, dict):
        if isinstance(schema.get("type"), str):
            found.append(schema["type"])
        for key in ("properties",):
            for sub in schema.get(key, {}).values():
                found += _types(sub)
        if "items" in schema:
            found += _types(schema["items"])
    return found


def test_schema_types_are_gemini_uppercase_and_json_plain() -> None:
    for decl in tools.TOOL_DECLARATIONS:
        assert all(t in {"OBJECT", "STRING", "INTEGER", "ARRAY"}
                   for t in _types(decl["parameters"]))
    assert json.loads(json.dumps(tools.TOOL_DECLARATIONS)) == list(tools.TOOL_DECLARATIONS)


def test_declaration_hands_out_copies_and_names_the_valid_tools() -> None:
    copy = tools.declaration("check_task")
    copy["parameters"]["required"].append("oops")
    assert tools.declaration("check_task")["parameters"]["required"] == ["task_id"]
    with pytest.raises(KeyError, match="run_shell_cmd"):
        tools.declaration("rm_rf")


def test_cat_restriction_is_in_the_shell_tool() -> None:
    desc = tools.declaration("run_shell_cmd")["description"]
    assert "cat" in desc and "report_path" in desc and "audit directory" in desc


def test_default_model_is_a_current_3x_flash_model() -> None:
    assert DEFAULT_MODEL.startswith("gemini-3.") and DEFAULT_MODEL.endswith("-flash")
    assert "2.0" not in DEFAULT_MODEL and "2.5" not in DEFAULT_MODEL
