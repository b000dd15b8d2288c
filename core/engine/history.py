"""Conversation history: what is stored per turn, and the history rebuilt for each model call.

Model turns are stored verbatim. A function response of ``run_shell_cmd`` is stored as a
reference to its audit record plus the loop's ``_meta``; the response the model sees is rebuilt
from the audit row (redacted, truncated), so command output lives in one place only (the
Zero-Cache rule). Orchestrator responses hold task metadata, not command output, and are stored
as they were returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.safety.responses import response_from_record

AUDIT_REF = "_audit_ref"


def user_text(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def stored_response(name: str, call_id: str | None, result: Mapping[str, Any],
                    meta: Mapping[str, Any]) -> dict[str, Any]:
    """The function-response part as stored: an audit reference when the result has one."""
    if name == "run_shell_cmd" and result.get("audit_id"):
        body: dict[str, Any] = {AUDIT_REF: result["audit_id"]}
    else:
        body = {k: v for k, v in result.items() if k != "_meta"}
    if meta:
        body["_meta"] = dict(meta)
    part: dict[str, Any] = {"name": name, "response": body}
    if call_id:
        part["id"] = call_id
    return {"functionResponse": part}


def _rebuild_part(part: Mapping[str, Any],
                  audit: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    fr = part.get("functionResponse")
    if not isinstance(fr, Mapping):
        return dict(part)
    body = dict(fr.get("response") or {})
    ref = body.pop(AUDIT_REF, None)
    if ref is not None:
        record = audit.get(str(ref))
        rebuilt = response_from_record(record) if record else {
            "status": "error", "error": "audit_record_missing", "audit_id": ref,
            "output": "", "stderr": "The audit record of this command is missing."}
        said = ((record or {}).get("details") or {}).get("meaning")
        if said:  # what the answer meant (DNS NXDOMAIN, HTTP 503…), beside the exit code
            rebuilt["meaning"] = said
        meta = body.get("_meta")
        body = rebuilt | ({"_meta": meta} if meta else {})
    return {"functionResponse": {**fr, "response": body}}


def rebuild(turns: Sequence[Mapping[str, Any]],
            audit_records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The history to send: stored turns with every audit reference expanded."""
    audit = {str(r["audit_id"]): r for r in audit_records if r.get("kind") == "command"}
    history: list[dict[str, Any]] = []
    for turn in turns:
        content = turn["content"]
        parts = [_rebuild_part(p, audit) for p in content.get("parts") or []]
        history.append({**content, "parts": parts})
    return history
