"""Which RISKY commands ``ghost eval``'s automatic approver approves (``--approve-policy``).

``reads`` (the default) approves what only reads: a packet capture's own steps (create, status,
download, delete of the capture, its blob and its local pcap: the capture leaves nothing
behind), ``az vm run-command invoke`` of read-only probes (what the gate calls
``T2.az_vm_probe``), and az reads that return no secret. Anything else changes the estate and is
denied with the reason ``eval: changes are not allowed``, which the model sees as a denial.
``all`` approves every RISKY command; ``none`` denies them all.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

POLICIES = ("reads", "all", "none")
DENY_CHANGES = "eval: changes are not allowed"
DENY_ALL = "eval: approvals are off (--approve-policy none)"

#: az words a capture's lifecycle uses (core/orchestrator shows its SDK calls as these)
_CAPTURE_AZ = (("network", "watcher", "packet-capture"),
               ("storage", "blob", "download"), ("storage", "blob", "delete"),
               ("storage", "container", "exists"), ("storage", "container", "create"))
_READ_VERB = re.compile(r"^(?:list|show|get|exists|test|check)(?:-[a-z-]+)?$")
_SECRETS = re.compile(r"key|secret|connection-string|credential|token|password|sas",
                      re.IGNORECASE)
#: the gate's rule for the narrow, approvable form of run-command (docs/safety.md)
PROBE_RULE = "T2.az_vm_probe"


@dataclass(frozen=True)
class PolicyDecision:
    approve: bool
    reason: str | None = None  # the denial reason the model is told


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _az_path(words: list[str]) -> list[str]:
    """The command words of an az command (up to its first option)."""
    path: list[str] = []
    for word in words[1:]:
        if word.startswith("-"):
            break
        path.append(word)
    return path


def is_capture_step(command: str, capture_dir: Path | None) -> bool:
    """A step of a packet capture (its create, status, download or cleanup)."""
    words = _words(command)
    if words[:1] == ["az"]:
        path = tuple(_az_path(words))
        return any(path[: len(prefix)] == prefix for prefix in _CAPTURE_AZ)
    if words[:1] == ["rm"] and len(words) == 2 and capture_dir is not None:
        target = Path(words[1]).resolve()
        return target.suffix == ".pcap" and target.is_relative_to(capture_dir.resolve())
    return False


def is_probe_run_command(command: str) -> bool:
    """``az vm run-command invoke`` of read-only probes: what the gate itself calls an in-VM
    probe (``T2.az_vm_probe``: every script line one read-only probe, ``uptime`` and
    ``free -m`` included), never any other script."""
    from core.safety.classify import classify

    words = _words(command)
    if words[:1] != ["az"] or _az_path(words)[:3] != ["vm", "run-command", "invoke"]:
        return False
    return classify(command).rule == PROBE_RULE


def is_az_read(command: str) -> bool:
    """An az read (list/show/get/test…) that returns no secret."""
    words = _words(command)
    if words[:1] != ["az"]:
        return False
    path = _az_path(words)
    if not path or path[0] == "rest" or _SECRETS.search(" ".join(path)):
        return False
    return _READ_VERB.match(path[-1]) is not None


def decide(command: str, policy: str, *, capture_dir: Path | None = None) -> PolicyDecision:
    """The automatic approver's answer to one RISKY command."""
    if policy == "all":
        return PolicyDecision(True)
    if policy == "none":
        return PolicyDecision(False, DENY_ALL)
    if policy != "reads":
        raise ValueError(f"unknown approve policy {policy!r} (one of {', '.join(POLICIES)})")
    if (is_capture_step(command, capture_dir) or is_probe_run_command(command)
            or is_az_read(command)):
        return PolicyDecision(True)
    return PolicyDecision(False, DENY_CHANGES)
