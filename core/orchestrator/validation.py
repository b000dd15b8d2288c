"""Request validation for capture_traffic: missing and malformed parameters, before any task.

Values end up in command lines that humans approve, so they are held to strict patterns here:
a target or filter that could disguise what an approver reads is refused, not quoted.
"""

from __future__ import annotations

import re
from typing import Any, Final

from core.orchestrator.model import MAX_CAPTURE_SECONDS

#: a VM/AKS name, or its full resource id (the tool tells the model ids are unambiguous)
_TARGET_RE: Final = re.compile(
    r"^(?:[A-Za-z0-9][A-Za-z0-9._()-]{0,79}"
    r"|/subscriptions/[A-Za-z0-9-]{1,64}/resourceGroups/[A-Za-z0-9._()-]{1,90}"
    r"/providers/[A-Za-z0-9.]{1,80}(?:/[A-Za-z0-9._()-]{1,80}){2,6})$")
_ACCOUNT_RE: Final = re.compile(r"^[a-z0-9]{3,24}$")
_RG_RE: Final = re.compile(r"^[A-Za-z0-9._()-]{1,90}$")
_FILTER_KEYS: Final = frozenset({"protocol", "localIPAddress", "remoteIPAddress", "localPort",
                                 "remotePort"})
_FILTER_VALUE_RE: Final = re.compile(r"^[A-Za-z0-9.:;,/-]{1,200}$")
PAIR_SEPARATOR: Final = " to "


class RequestError(Exception):
    """A request the orchestrator refuses: ``code`` for the Brain, ``message`` for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def split_targets(target: object) -> list[str]:
    """One target, or two for a dual-end capture (``"vm-a to vm-b"``)."""
    if not isinstance(target, str) or not target.strip():
        raise RequestError("missing_parameter", "target is required for capture_traffic")
    parts = [p.strip() for p in target.split(PAIR_SEPARATOR)]
    if len(parts) > 2 or not all(parts):
        raise RequestError("invalid_parameter", f"target {target!r}: give one target or "
                           "two joined by ' to ' (\"web-vm-01 to redis-vm\")")
    for part in parts:
        if not _TARGET_RE.match(part):
            raise RequestError("invalid_parameter", f"target {part!r} is not a VM name or "
                               "resource id (letters, digits, / . _ ( ) - only)")
    if len(parts) == 2 and parts[0] == parts[1]:
        raise RequestError("invalid_parameter", "a dual-end capture needs two different "
                           "targets")
    return parts


#: what a capture without a storage account is refused with, when none is configured either
NO_STORAGE_ACCOUNT = (
    "storage_account is required: no capture storage account is configured. Nothing was "
    "started. Pass storage_account (and storage_resource_group when the account is not in the "
    "VM's resource group), or have an operator set GHOST_CAPTURE_STORAGE_ACCOUNT to the capture "
    "account's resource id (the Azure deployment sets it; see docs/deploy.md).")


def capture_parameters(raw: object, *, default_account: str | None = None,
                       default_resource_group: str | None = None) -> dict[str, Any]:
    """The validated parameters (a new dict); raises :class:`RequestError`.

    A capture without ``storage_account`` goes to the configured account (``default_account``
    in ``default_resource_group``); one naming the configured account without a resource group
    gets the configured group; any other account defaults to the VM's resource group."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise RequestError("invalid_parameter", "parameters must be an object")
    for name in ("duration_seconds", "resource_group"):
        if raw.get(name) in (None, ""):
            raise RequestError("missing_parameter", f"{name} is required")
    params = dict(raw)
    if params.get("storage_account") in (None, ""):
        if not default_account:
            raise RequestError("missing_parameter", NO_STORAGE_ACCOUNT)
        params["storage_account"] = default_account
        params["storage_resource_group"] = default_resource_group
    elif params["storage_account"] == default_account and \
            params.get("storage_resource_group") in (None, ""):
        params["storage_resource_group"] = default_resource_group
    if params.get("storage_resource_group") in (None, ""):
        params.pop("storage_resource_group", None)
    duration = params["duration_seconds"]
    if isinstance(duration, bool) or not isinstance(duration, int) or duration < 1:
        raise RequestError("invalid_parameter", f"duration_seconds must be an integer from 1 "
                           f"to {MAX_CAPTURE_SECONDS}, got {duration!r}")
    if duration > MAX_CAPTURE_SECONDS:
        raise RequestError("invalid_parameter", f"duration_seconds {duration} is over the "
                           f"capture limit of {MAX_CAPTURE_SECONDS} s; nothing was started. Ask "
                           f"for at most {MAX_CAPTURE_SECONDS} s (run a second capture if the "
                           "problem needs a longer window).")
    if not isinstance(params["storage_account"], str) or \
            not _ACCOUNT_RE.match(params["storage_account"]):
        raise RequestError("invalid_parameter", "storage_account must be 3-24 lowercase "
                           "letters and digits (an Azure storage account name)")
    for name in ("resource_group", "storage_resource_group"):
        value = params.get(name)
        if value is not None and (not isinstance(value, str) or not _RG_RE.match(value)):
            raise RequestError("invalid_parameter", f"{name} {value!r} is not a resource "
                               "group name")
    for name in ("bytes_per_packet", "total_bytes"):
        value = params.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 0):
            raise RequestError("invalid_parameter", f"{name} must be a non-negative integer")
    mode = params.get("storage_auth_mode")
    if mode is not None and mode not in ("login", "key"):
        raise RequestError("invalid_parameter", f"storage_auth_mode must be 'login' or 'key', "
                           f"not {mode!r}")
    params["filters"] = _filters(params.get("filters"))
    return params


def _filters(raw: object) -> list[dict[str, str]]:
    if raw in (None, []):
        return []
    if not isinstance(raw, list) or len(raw) > 10:
        raise RequestError("invalid_parameter", "filters must be a list of at most 10 objects")
    out = []
    for item in raw:
        if not isinstance(item, dict) or not item or not set(item) <= _FILTER_KEYS:
            raise RequestError("invalid_parameter", f"filter {item!r}: allowed keys are "
                               f"{', '.join(sorted(_FILTER_KEYS))}")
        for key, value in item.items():
            if not isinstance(value, str | int) or not _FILTER_VALUE_RE.match(str(value)):
                raise RequestError("invalid_parameter", f"filter {key}={value!r} is not an "
                                   "address, port, range or protocol")
        out.append({k: str(v) for k, v in item.items()})
    return out
