"""Everything the scorer knows about a truth category, in one place.

A category (``truth.category``) is named by its words (``nsg_deny`` → "nsg deny"; a custom
``x-dns-ttl-stale`` → "dns ttl stale"; the words themselves come from :mod:`lab.categories`,
which validation shares), and each built-in one has a **fault signal**: what a record's own
output says when it shows that fault — the ``Deny`` of IP flow verify or of a rule row, the next
hop ``None``, ``VM deallocated``, a peering ``Disconnected``, a probe refused, a private endpoint
connection ``Pending``, a metric that counts failures, a capture finding. A record shows the
fault only when its output says so about the faulty thing, not because it mentions the thing (an
activity-log listing names a rule it never evaluates). A custom ``x-…`` category has no entry
here and falls back to the generic rule: a truth marker in the output of a record that
evaluates state.

To add a category: an entry in :data:`SIGNALS` (and a ``special`` check where the fault is an
absence or a figure, such as a missing DNS link or a metric's failed count); nothing else in the
scorer changes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lab.categories import category_words
from lab.eval import metric_points

if TYPE_CHECKING:
    from lab.scenario import Truth

HEALTHY = "healthy"


def is_healthy(category: str) -> bool:
    """Nothing is wrong: the investigator must say so and confirm nothing."""
    return category == HEALTHY


def words(category: str) -> list[str]:
    """``nsg_deny`` → [nsg, deny]; ``x-dns-ttl-stale`` → [dns, ttl, stale]."""
    return category_words(category)


def names_category(text: str, category: str) -> bool:
    """The category's words in order, joined by space, ``-`` or ``_`` ("an NSG-deny rule")."""
    parts = [re.escape(w) for w in words(category)]
    return bool(parts) and re.search(r"[\s_-]*".join(parts), text, re.IGNORECASE) is not None


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "y", "e", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def refers_to_category(text: str, category: str) -> bool:
    """At least half of the category's words (of three letters or more) appear as word stems
    ("denies" for deny, "black-holes" for blackhole): a hypothesis about that kind of fault."""
    significant = [w.lower() for w in words(category) if len(w) >= 3]
    if not significant:
        return False
    squashed = re.sub(r"[^a-z0-9]+", "", text.lower())
    found = sum(1 for w in significant
                if re.search(r"(?<![a-z0-9])" + re.escape(_stem(w)), text.lower())
                or (len(w) >= 6 and w in squashed))
    return found >= math.ceil(len(significant) / 2)


# ------------------------------------------------------------------ what shows the fault
@dataclass(frozen=True)
class Signal:
    """What an output unit says when it shows the fault; ``marker``: the unit (or the
    record's command) must also name the faulty thing; ``alone``: what shows the fault
    whatever the unit names (a verdict of the default deny rule, a name that does not resolve:
    outputs that never name the resource at fault)."""

    pattern: re.Pattern[str]
    marker: bool = True
    alone: re.Pattern[str] | None = None


def _cs(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _ci(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_DENY = Signal(_cs(r"\bDeny\b|UserRule_|DefaultRule_Deny|NetworkSecurityRule"))
_DOWN = Signal(_ci(r"\bdeallocated\b|\bstopped\b|not running|VmNotRunning|"
                   r"requires the VM to be running"))
#: a denied flow in a VNet flow log: the analyser's findings (their ids in its report, their
#: titles on the terminal: "… denied …", "Nothing comes back from …"), or a raw tuple in state D
_FLOW_DENIED = r"flow_denied|flow_one_way|Nothing comes back from|,[IO],D,"
#: a figure of 20 ms or more (one Azure region answers in a few ms)
_SLOW_MS = r"(?:[2-9]\d|[1-9]\d{2,})(?:\.\d+)?"
SIGNALS_V2: dict[str, Signal] = {
    # a rule (or the flow log) denies the probe's flow; the probe's source is a marker
    "lb_probe_blocked": Signal(_cs(r"\bDeny\b|UserRule_|DefaultRule_Deny|(?i:\bdenied\b)|"
                                   + _FLOW_DENIED)),
    # the probe's port answers with a reset or not at all (metrics: special)
    "lb_probe_port_down": Signal(_ci(r"refused|\bRST\b|no listener|nothing listens|"
                                     r"flow_allowed_no_reply|lets flows in and never answers")),
    # a verdict denies the clients (IP flow verify, the flow log), by a rule or by the default
    # DenyAllInBound, which verdicts name without naming the backends' NSG; a rule listing
    # shows DenyAllInBound in every NSG and evaluates nothing
    "lb_inbound_blocked": Signal(
        _cs(r"(?is:\bruleName\b.*\bDeny\b|\bDeny\b.*\bruleName\b)|UserRule_|"
            r"DefaultRule_Deny|" + _FLOW_DENIED),
        alone=_ci(r"ruleName\W+(?:defaultSecurityRules/)?DenyAllInBound\b|"
                  r"DefaultRule_DenyAllInBound\b")),
    # the name does not resolve (NXDOMAIN), or the zone group is empty (special: the public
    # address answered, an empty zone-group list)
    "private_endpoint_dns": Signal(
        _ci(r"NXDOMAIN|server can't find|DnsResolution|Name or service not known|"
            r"Could not resolve host"),
        alone=_ci(r"NXDOMAIN|server can't find|\bDnsResolution\b|Name or service not known|"
                  r"Could not resolve host")),
    # privateLinkServiceConnectionState.status other than Approved
    "private_endpoint_not_approved": Signal(_cs(r"\b(?:Pending|Rejected|Disconnected)\b")),
    # a firewall Deny, its default action, the proxy's 470, or a flow log's denied/one-way flow
    "firewall_rule_deny": Signal(
        _ci(r"\bDeny\b|\bdenied\b|default (?:action|deny)|No rule matched|\b470\b|"
            + _FLOW_DENIED),
        alone=_ci(r"No rule matched\. Proceeding with default action")),
    # words of the exhaustion (metrics' Failed count: special)
    "snat_exhaustion": Signal(_ci(r"SNAT (?:port )?exhaust\w*|snat_exhaustion|"
                                  r"out of SNAT ports")),
    # a figure of added time: slow handshakes, a connection check's or ping's average
    "latency": Signal(_ci(r"slow TCP handshakes|\"avgLatencyInMs\": " + _SLOW_MS + r"\b|"
                          r"rtt min/avg/max/mdev = [\d.]+/" + _SLOW_MS + r"/|"
                          r"\btime=" + _SLOW_MS + r" ms"), marker=False),
}
SIGNALS: dict[str, Signal] = {
    "nsg_deny": _DENY,
    "nic_nsg_deny": _DENY,
    "udr_blackhole": Signal(_cs(r"\bNone\b")),
    "udr_wrong_next_hop": Signal(_cs(r"VirtualAppliance|nextHopIpAddress|UserDefinedRoute")),
    "nva_down": _DOWN,
    "vm_stopped": _DOWN,
    "peering_disconnected": Signal(_cs(r"\bDisconnected\b|\bInitiated\b")),
    "peering_forwarding_blocked": Signal(_ci(r"allowForwardedTraffic\W{0,4}\s*false\b")),
    "custom_dns_broken": Signal(_ci(r"dns_unanswered|no servers could be reached|"
                                    r"connection timed out|DnsResolution|port unreachable|"
                                    r"unanswered|SERVFAIL")),
    "service_down": Signal(_ci(r"connection refused|tcp_connection_refused|refused|"
                               r"\bRST\b|no listener")),
    "mtu_blackhole": Signal(_ci(r"black[ -]?hole|mtu_blackhole|frag(?:mentation)?[ -]needed|"
                                r"message too long|never acknowledged|100% packet loss")),
    "nva_loss": Signal(_ci(r"\b[1-9]\d*(?:\.\d+)?% packet loss|retransmitted|retransmission|"
                           r"never received|two[-_ ]ended|lost in transit|"
                           r"(?s:\"connectionStatus\": \"Reachable\".*\"probesFailed\": [1-9])"),
                       marker=False),
    "nva_reset": Signal(_ci(r"injected|in the other side's name|do not look like its packets|"
                            r"reset by (?:both ends|a middlebox|peer)|connection reset|"
                            r"\b[1-9]\d* resets?\b|RST packets [1-9]"), marker=False),
    "asymmetric_routing": Signal(_ci(r"asymmetric|VirtualAppliance|nextHopIpAddress|"
                                     r"never saw")),
    "extension_missing": Signal(_ci(r"ExtensionMissing|ExtensionNotInstalled|not installed|"
                                    r"\"extensions\":\s*(?:null|\[\])|extension\w*\W+missing|"
                                    r"missing\W+\w*\s*extension")),
    **SIGNALS_V2,
}
#: records that list what changed or what exists, and evaluate nothing: they never show a fault
INVENTORY = _ci(r"^az\s+(?:monitor\s+activity-log|resource\s+(?:list|show)|group\s+(?:list|show)"
                r"|account\s+(?:show|list))\b")


def markers(truth: Truth) -> list[str]:
    """What names the faulty thing: the truth resources (and each part), the keywords."""
    found = [*truth.resources, *(p for r in truth.resources for p in r.split("/")),
             *truth.keywords]
    return [m for m in dict.fromkeys(m.strip() for m in found) if m]


def identities(truth: Truth) -> list[str]:
    """The markers that identify the faulty thing (resources, their parts, keywords that are
    names or figures such as ``to-shared`` or ``10.0.1.5``); plain words such as
    ``deallocated`` or ``reset`` describe the fault instead."""
    return [m for m in markers(truth)
            if m in truth.resources or any(m in r.split("/") for r in truth.resources)
            or not m.replace(" ", "").isalpha()]


def _units(output: str) -> Iterator[str]:
    """The parts of an output that speak of one thing: each JSON object (its own scalar
    values, with their keys) and each string in a list; for text, each line."""
    try:
        data: Any = json.loads(output)
    except ValueError:
        yield from _text_units(output)
        return

    def walk(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            yield "\n".join(f"{json.dumps(str(k))}: {json.dumps(v)}" for k, v in node.items()
                            if not isinstance(v, dict | list) or not v)
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)
        elif isinstance(node, str):
            yield node

    yield from walk(data)


def _text_units(output: str) -> Iterator[str]:
    """Lines; for az's table output (a header, a line of dashes, rows), each row as
    ``Column: value`` pairs, so a value stands beside its column's name."""
    lines = output.splitlines()
    for n in range(1, len(lines)):
        if re.fullmatch(r"-+(?:\s+-+)*\s*", lines[n]) and lines[n - 1].strip():
            spans = [m.span() for m in re.finditer(r"-+", lines[n])]
            header = [lines[n - 1][a:b + 2].strip() for a, b in spans]
            for row in lines[n + 1:]:
                if not row.strip():
                    break
                cells = [row[a:b + 2].strip() for a, b in spans]
                yield "\n".join(f"{h}: {c}" for h, c in zip(header, cells, strict=True))
    yield from (line for line in lines if line.strip())


def _named(text: str, marker: str) -> bool:
    tail = r"(?![0-9])(?!-[A-Za-z0-9])" if marker[-1:].isalpha() else r"(?![A-Za-z0-9])"
    return re.search(r"(?<![A-Za-z0-9])" + re.escape(marker) + tail, text,
                     re.IGNORECASE) is not None


def _without(text: str, found: Iterable[str]) -> str:
    for marker in sorted(found, key=len, reverse=True):
        text = re.sub(re.escape(marker), " ", text, flags=re.IGNORECASE)
    return text


def shows_fault(truth: Truth, command: str, output: str) -> bool:
    """Whether this record's own output says the fault is there (see the module docstring)."""
    if INVENTORY.search(command.strip()):
        return False
    if is_healthy(truth.category):
        return True  # any completed diagnostic shows health
    marks = markers(truth)
    ids = identities(truth)
    special = _SPECIAL.get(truth.category)
    if special is not None and special(truth, command, output):
        return True
    signal = SIGNALS.get(truth.category)
    if signal is None:  # a category the table does not know: a truth marker in the output
        return any(_named(output, m) for m in marks)
    in_command = [m for m in ids if _named(command, m)]
    for unit in _units(output):
        if signal.alone is not None and signal.alone.search(unit):
            return True
        named = [m for m in ids if _named(unit, m)]
        if signal.marker and ids and not (named or in_command):
            continue
        # the signal must be said beside the name, not be part of it (deny-web-to-redis)
        if signal.pattern.search(_without(unit, named) if signal.marker else unit):
            return True
    return False


def _dns_link_missing(truth: Truth, command: str, output: str) -> bool:
    """The missing link is an absence: a zone's link list that lacks the client's VNet, or a
    lookup that answers with the public address (a truth keyword that is an IPv4 address)."""
    vnets = [r for r in truth.resources if r.startswith("vnet")]
    if re.search(r"private-dns\s+link\s+vnet\s+list", command) and vnets:
        return not any(_named(output, v) for v in vnets)
    addresses = [k for k in truth.keywords if re.fullmatch(r"\d{1,3}(?:\.\d{1,3}){3}", k)]
    return any(_named(output, a) for a in addresses)


def _named_in_command(truth: Truth, command: str) -> bool:
    return any(_named(command, m) for m in identities(truth))


def _endpoint_dns(truth: Truth, command: str, output: str) -> bool:
    """A private endpoint's DNS fault is often an absence: its zone-group list is empty, or a
    lookup answers with the public address (a truth keyword that is an IPv4 address)."""
    if re.search(r"private-endpoint\s+dns-zone-group\s+list", command) and \
            _named_in_command(truth, command):
        try:
            return bool(json.loads(output) == [])
        except ValueError:
            return False
    return _dns_link_missing(truth, command, output)


def _probe_port_down(truth: Truth, command: str, output: str) -> bool:
    """Health Probe Status 0 of the load balancer the command names."""
    return _named_in_command(truth, command) and metric_points.backend_down(output)


def _snat_failed(truth: Truth, command: str, output: str) -> bool:
    """SNAT connections Failed above 0 on the NAT gateway the command names."""
    return _named_in_command(truth, command) and metric_points.failed_snat(output)


_SPECIAL: dict[str, Any] = {"private_dns_link_missing": _dns_link_missing,
                            "private_endpoint_dns": _endpoint_dns,
                            "lb_probe_port_down": _probe_port_down,
                            "snat_exhaustion": _snat_failed}


def describe_signal(category: str, truth: Truth) -> str:
    """For a reason: what a record must say to show this fault."""
    signal = SIGNALS.get(category)
    marks = ", ".join(markers(truth)) or "the faulty resource"
    if is_healthy(category):
        return "a completed diagnostic"
    if signal is None and category not in _SPECIAL:
        return f"output naming {marks}"
    return f"output where {marks} is shown with the fault itself, not just named"


def signal_names(categories: Sequence[str]) -> list[str]:
    """The categories with a fault signal of their own (for docs and tests)."""
    return [c for c in categories if c in SIGNALS or c in _SPECIAL]
