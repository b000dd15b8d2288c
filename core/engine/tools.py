"""The six function declarations of ghost-design §1, as plain dicts in Gemini's schema form.

Core imports no SDK, so the declarations are the JSON the Gemini API takes (``type`` values in
UPPERCASE); the adapter in ``bot/`` turns them into SDK objects. Names, parameters, enums and
required fields are exactly the spec's. The one addition (decided in issue 6) is an optional
``hypotheses`` argument on every tool: it is how the model reports its hypotheses and their
states, so the loop can count denials per hypothesis and the RCA can print the Hypotheses Log
without parsing prose. ``TOOL_DECLARATIONS`` is what every request sends; :func:`declaration`
and :func:`declarations` hand out deep copies for callers that want to modify one.
"""

from __future__ import annotations

import copy
from typing import Any, Final

RUN_SHELL_CMD: Final = "run_shell_cmd"
CAPTURE_TRAFFIC: Final = "capture_traffic"
CHECK_TASK: Final = "check_task"
CANCEL_TASK: Final = "cancel_task"
CLEANUP_TASK: Final = "cleanup_task"
COMPLETE_INVESTIGATION: Final = "complete_investigation"

HYPOTHESES_ARG: Final = "hypotheses"
HYPOTHESIS_STATES: Final = ("ACTIVE", "CONFIRMED", "REFUTED", "CONTRADICTED", "UNVERIFIABLE")
CONFIDENCE_LEVELS: Final = ("high", "medium", "low")
STORAGE_AUTH_MODES: Final = ("login", "key")

Schema = dict[str, Any]


def _string(description: str, **extra: Any) -> Schema:
    return {"type": "STRING", "description": description, **extra}


def _string_list(description: str) -> Schema:
    return {"type": "ARRAY", "items": {"type": "STRING"}, "description": description}


HYPOTHESES_SCHEMA: Final[Schema] = {
    "type": "ARRAY",
    "description": (
        "The hypotheses you are working on and their current state; send it whenever a "
        "hypothesis is created or changes state. List every hypothesis formed so far (the "
        "whole list, not only the one that changed), with the same ids for the whole "
        "investigation."
    ),
    "items": {
        "type": "OBJECT",
        "properties": {
            "id": _string('Short stable id, e.g. "h1", "h2". Never reuse an id.'),
            "description": _string(
                "The specific, falsifiable failure mode, in one sentence (required when the "
                "hypothesis is first reported)."
            ),
            "state": _string(
                "ACTIVE while being tested; CONFIRMED or REFUTED by evidence; CONTRADICTED "
                "when results conflict and a higher-fidelity source is pending; UNVERIFIABLE "
                "when denials make it untestable.",
                enum=list(HYPOTHESIS_STATES),
            ),
            "evidence_audit_ids": _string_list(
                "audit_id values of the tool results that support the current state."
            ),
        },
        "required": ["id", "state"],
    },
}


def _decl(name: str, description: str, properties: dict[str, Schema],
          required: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "OBJECT",
            "properties": {**properties, HYPOTHESES_ARG: HYPOTHESES_SCHEMA},
            "required": required,
        },
    }


_RUN_SHELL_CMD = _decl(
    RUN_SHELL_CMD,
    "Execute a single diagnostic or Azure read-only command through the Safe-Exec Shell. "
    "The Shell will classify the command (SAFE/RISKY/FORBIDDEN) and apply HITL gating if "
    "needed. SAFE commands are auto-approved. RISKY commands require explicit user approval. "
    "FORBIDDEN commands are unconditionally blocked — do not retry them. "
    "Use this for: ping, dig, traceroute, ss, netstat, curl (GET only), "
    "az <service> <resource> list/show/get, cat <file_path>. "
    "RESTRICTION — cat: only permitted for paths under the audit directory (named in your "
    "instructions) or paths returned in result.report_path from a completed orchestrator task. "
    "Do not cat arbitrary system paths, home directories, or config files.",
    {
        "command": _string(
            "The complete shell command to execute. Must be a single command (no && or ; "
            "chaining). Do not use sudo. Do not redirect to system paths."
        ),
        "reasoning": _string(
            "One sentence explaining why this command is needed for the investigation. "
            "This is shown to the user during HITL review and written to the audit trail."
        ),
    },
    ["command", "reasoning"],
)

_CAPTURE_TRAFFIC = _decl(
    CAPTURE_TRAFFIC,
    "Start an Azure Network Watcher packet capture on a VM or between two VMs. "
    "Returns immediately with a task_id — the capture runs asynchronously. "
    "Use check_task to poll for completion. Requires resource_group (the VM's). The capture "
    "is written to Ghost's configured capture storage account unless you name another with "
    "storage_account (and storage_resource_group); with no account configured and none given, "
    "the capture is refused and the response says what to set. "
    "Capture is HITL-gated (RISKY az create command). "
    'For dual-end captures use "source_vm_name to dest_vm_name" as target.',
    {
        "target": _string(
            'VM name, full Azure resource ID, or "source_vm to dest_vm" for dual-end '
            "comparison capture. Full resource IDs are unambiguous and required when multiple "
            "VMs share a name across resource groups: "
            "/subscriptions/{sub}/resourceGroups/{rg}/providers/"
            "Microsoft.Compute/virtualMachines/{vm-name}. "
            "Short names are resolved within the given resource_group."
        ),
        "resource_group": _string("Azure resource group containing the target VM(s)."),
        "storage_account": _string(
            "Azure storage account name for storing the capture blob. Omit it to use Ghost's "
            "configured capture account (GHOST_CAPTURE_STORAGE_ACCOUNT), which is almost always "
            "right; name another only when the engineer asks for it."
        ),
        "storage_resource_group": _string(
            "Resource group of storage_account when it is not in the VM's resource group. "
            "Omit it with the configured account."
        ),
        "duration_seconds": {
            "type": "INTEGER",
            "description": "Capture duration in seconds. Default 60. Max 300.",
        },
        "investigation_context": _string(
            "One sentence describing what network behaviour is being captured. "
            "Written to the audit trail and used in HITL approval reasoning."
        ),
        "storage_auth_mode": _string(
            'Authentication mode for Azure Storage operations. Default: "login" '
            '(Entra ID / RBAC). Use "key" when the environment uses storage access keys rather '
            "than Entra ID. Maps directly to the Orchestrator's storage_auth_mode parameter, "
            "which is passed to every storage operation.",
            enum=list(STORAGE_AUTH_MODES),
        ),
    },
    ["target", "resource_group"],
)

_CHECK_TASK = _decl(
    CHECK_TASK,
    "Poll the status of an Azure packet capture task created by capture_traffic. "
    "The Orchestrator burst-polls Azure internally (up to 45 seconds). "
    'Continue calling this tool until status is "task_completed", "task_failed", '
    '"task_cancelled", or "task_timed_out". Do not poll more than once per 10 seconds.',
    {"task_id": _string("The task_id returned by capture_traffic.")},
    ["task_id"],
)

_CANCEL_TASK = _decl(
    CANCEL_TASK,
    "Abort an in-progress Azure packet capture. The Orchestrator will attempt to delete "
    "provisioned Azure resources. If resources were created, a HITL prompt will appear for "
    "each deletion (RISKY az delete commands). "
    "Idempotent if the task is already in a terminal state.",
    {
        "task_id": _string("The task_id to cancel."),
        "reason": _string("Brief reason for cancellation (written to audit trail)."),
    },
    ["task_id"],
)

_CLEANUP_TASK = _decl(
    CLEANUP_TASK,
    "Delete Azure resources (packet capture record, storage blob, local .pcap file) created "
    "by a completed or failed task. Each deletion is a RISKY command and will trigger a HITL "
    "prompt. Call after the forensic report has been read. "
    "Idempotent — safe to call if cleanup was already attempted.",
    {"task_id": _string("The task_id whose resources should be cleaned up.")},
    ["task_id"],
)

_COMPLETE_INVESTIGATION = _decl(
    COMPLETE_INVESTIGATION,
    "Signal that the investigation is complete and request RCA report generation. "
    "Call this when: (a) the root cause has been identified with sufficient confidence, "
    "(b) all hypotheses are exhausted, or (c) denial_threshold_reached = true for all active "
    "hypotheses. Ghost will generate the RCA report ghost_rca_{sid}.md and end the "
    "investigation.",
    {
        "confidence": _string(
            '"high" — root cause confirmed with command evidence. '
            '"medium" — probable cause with partial evidence. '
            '"low" — all hypotheses unverifiable due to access denials.',
            enum=list(CONFIDENCE_LEVELS),
        ),
        "root_cause_summary": _string("One to three sentences summarising the finding."),
        "confirmed_hypotheses": _string_list("List of hypothesis IDs confirmed by evidence."),
        "refuted_hypotheses": _string_list("List of hypothesis IDs disproved by evidence."),
        "unverifiable_hypotheses": _string_list(
            "List of hypothesis IDs blocked by repeated HITL denials."
        ),
        "contradicted_hypotheses": _string_list(
            "List of hypothesis IDs where tool results produced contradictory evidence. "
            "Document the specific audit_ids of the conflicting results and the higher-fidelity "
            "source used for resolution in root_cause_summary."
        ),
        "recommended_actions": _string_list("Concrete next steps for the operator."),
    },
    ["confidence", "root_cause_summary"],
)

_DECLARATIONS: Final = (
    _RUN_SHELL_CMD,
    _CAPTURE_TRAFFIC,
    _CHECK_TASK,
    _CANCEL_TASK,
    _CLEANUP_TASK,
    _COMPLETE_INVESTIGATION,
)

# What every request sends as its tools (the loop passes it to ``Brain.generate``). Read it,
# never change it: use declaration()/declarations() for a copy to modify.
TOOL_DECLARATIONS: Final[tuple[dict[str, Any], ...]] = _DECLARATIONS
TOOL_NAMES: Final[tuple[str, ...]] = tuple(d["name"] for d in _DECLARATIONS)
_BY_NAME: Final = {d["name"]: d for d in _DECLARATIONS}


def declaration(name: str) -> dict[str, Any]:
    """A deep copy of one declaration; ``KeyError`` names the six valid tools."""
    try:
        return copy.deepcopy(_BY_NAME[name])
    except KeyError:
        raise KeyError(f"unknown tool {name!r}; the tools are {', '.join(TOOL_NAMES)}") from None


def declarations() -> list[dict[str, Any]]:
    """Deep copies of all six, in the spec's order: what every request sends as its tools."""
    return [copy.deepcopy(d) for d in _DECLARATIONS]
