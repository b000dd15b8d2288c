"""An engineer's edit of a packet capture before it is created (Modify on its approval).

The approver sees the capture as its ``az network watcher packet-capture create`` equivalent
and may edit what an engineer would want to change: the target (``--vm``, and
``--resource-group`` with it), the duration (``--time-limit``), the filter (``--filters``, the
JSON list az takes) and the size limits (``--capture-size``, ``--capture-limit``). The edit is
read back from the edited command and held to the same rules as the model's request
(``core.orchestrator.validation``); the capture's name, location and storage are Ghost's and
stay as they were. The gate classifies the edited command again before anyone approves it.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from core.orchestrator.model import MAX_CAPTURE_SECONDS
from core.orchestrator.validation import RequestError, _filters, split_targets

CREATE_WORDS = ("az", "network", "watcher", "packet-capture", "create")
#: option -> what it sets; ``-g`` is az's short form of ``--resource-group``
EDITABLE = {"--vm": "target", "--resource-group": "resource_group", "-g": "resource_group",
            "--time-limit": "duration_seconds", "--filters": "filters",
            "--capture-size": "bytes_per_packet", "--capture-limit": "total_bytes"}
FIXED = ("--name", "--location", "--storage-account", "--storage-path")
HINT = ("To change the capture, Modify its --vm (and --resource-group), --time-limit, "
        "--filters or --capture-size/--capture-limit; Ghost re-checks the edit.")


@dataclass(frozen=True)
class CaptureEdit:
    """The capture's parameters as the edited command gives them, and what changed."""

    target: str
    resource_group: str
    duration_seconds: int
    filters: list[dict[str, str]] = field(default_factory=list)
    bytes_per_packet: int = 0
    total_bytes: int = 1073741824
    changes: tuple[str, ...] = ()

    @property
    def retargeted(self) -> bool:
        return any(c.startswith(("target ", "resource group ")) for c in self.changes)


def _options(command: str) -> dict[str, str]:
    """``--opt value`` / ``--opt=value`` pairs after the create words; raises ValueError."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise ValueError(f"the edited command does not parse ({exc})") from exc
    if tuple(words[: len(CREATE_WORDS)]) != CREATE_WORDS:
        raise ValueError("the edit must stay an `az network watcher packet-capture create`")
    options: dict[str, str] = {}
    rest = words[len(CREATE_WORDS):]
    i = 0
    while i < len(rest):
        word = rest[i]
        if not word.startswith("-"):
            raise ValueError(f"unexpected word {word!r}")
        name, eq, value = word.partition("=")
        if not eq:
            if i + 1 >= len(rest) or rest[i + 1].startswith("--"):
                raise ValueError(f"{name} needs a value")
            value = rest[i + 1]
            i += 1
        key = "--resource-group" if name == "-g" else name
        if key in options:
            raise ValueError(f"{name} is given twice")
        if key not in EDITABLE and key not in FIXED:
            raise ValueError(f"{name} is not an option Ghost can set on a capture")
        options[key] = value
        i += 1
    return options


def _int(value: str, name: str, low: int, high: int | None = None) -> int:
    try:
        number = int(value)
    except ValueError as exc:
        raise ValueError(f"{name} {value!r} is not a whole number") from exc
    if number < low or (high is not None and number > high):
        bound = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise ValueError(f"{name} {number} is out of range ({bound})")
    return number


def read_edit(original: str, edited: str) -> CaptureEdit:
    """The capture the edited command asks for; raises ValueError with what is wrong."""
    before, after = _options(original), _options(edited)
    for name in FIXED:
        if before.get(name) != after.get(name):
            raise ValueError(f"{name} is Ghost's own (the capture's name, location and "
                             "storage) and cannot change; edit --vm, --time-limit or --filters")
    target = after.get("--vm", "")
    try:
        split_targets(target)
        if " to " in target:
            raise RequestError("invalid_parameter", "one VM per capture")
    except RequestError as exc:
        raise ValueError(f"--vm {target!r}: {exc.message}") from exc
    group = after.get("--resource-group", "")
    if not group or len(group) > 90 or not all(c.isalnum() or c in "._()-" for c in group):
        raise ValueError(f"--resource-group {group!r} is not a resource group name")
    duration = _int(after.get("--time-limit", ""), "--time-limit", 1, MAX_CAPTURE_SECONDS)
    raw_filters: Any = []
    if after.get("--filters"):
        try:
            raw_filters = json.loads(after["--filters"])
        except ValueError as exc:
            raise ValueError(f"--filters is not JSON ({exc})") from exc
    try:
        filters = _filters(raw_filters)
    except RequestError as exc:
        raise ValueError(f"--filters: {exc.message}") from exc
    size = _int(after.get("--capture-size", "0"), "--capture-size", 0)
    limit = _int(after.get("--capture-limit", "1073741824"), "--capture-limit", 1)
    labels = {"--vm": "target", "--resource-group": "resource group",
              "--time-limit": "duration", "--filters": "filter",
              "--capture-size": "bytes per packet", "--capture-limit": "total bytes"}
    changes = tuple(f"{label} {before.get(name) or 'none'} → {after.get(name) or 'none'}"
                    for name, label in labels.items() if before.get(name) != after.get(name))
    return CaptureEdit(target, group, duration, filters, size, limit, changes)


def apply_edit(task: dict[str, Any], edit: CaptureEdit) -> None:
    """Write the edit into the task record (the caller saves it with the step's outcome)."""
    params = dict(task["parameters"])
    params.update(duration_seconds=edit.duration_seconds, filters=edit.filters,
                  bytes_per_packet=edit.bytes_per_packet, total_bytes=edit.total_bytes,
                  resource_group=edit.resource_group)
    task["parameters"] = params
    if edit.retargeted:
        task.update(target=edit.target, resource_group=edit.resource_group)
    if edit.changes:
        task["edited"] = list(edit.changes)
        task["warnings"] = [*task.get("warnings", []),
                            "An engineer edited this capture before approving it: "
                            + "; ".join(edit.changes) + "."]
