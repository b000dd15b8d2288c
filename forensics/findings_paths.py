"""Findings about one path: the same problem on many connections is one finding.

Sixty connections black-holed between the same two hosts on the same server port are one
problem, so the top of the summary lists distinct problems: each finding here groups its
connections by (sender, receiver, server port), says how many there were, names a few and
takes its evidence frames from several of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from .diagnosis_loss import connection_resent
from .diagnosis_model import Connection, Diagnosis
from .wording import listing, plural

Finding = dict[str, Any]
T = TypeVar("T")
EXAMPLES = 2
MAX_GROUPS = 3  # paths per kind of finding; the semantic JSON keeps every connection
EVIDENCE = 10


def group(items: Iterable[T], key: Callable[[T], tuple[Any, ...]]) -> list[list[T]]:
    """Items with the same key together: the largest groups first (then in order of first
    appearance), at most MAX_GROUPS of them, so many paths cannot flood the summary."""
    out: dict[tuple[Any, ...], list[T]] = {}
    for it in items:
        out.setdefault(key(it), []).append(it)
    return sorted(out.values(), key=lambda g: -len(g))[:MAX_GROUPS]


def spread(frame_lists: list[list[int]], limit: int = EVIDENCE) -> list[int]:
    """Evidence frames taken in turn from several connections, not all from the first."""
    out: list[int] = []
    depth = max((len(f) for f in frame_lists), default=0)
    for i in range(depth):
        for frames in frame_lists:
            if i < len(frames) and len(out) < limit:
                out.append(frames[i])
    return out


def examples(labels: list[str]) -> str:
    """'a, b and 58 more' for the connections of one group."""
    return listing(labels, EXAMPLES)


def times(counts: list[int]) -> str:
    lo, hi = min(counts), max(counts)
    return plural(hi, "time") if lo == hi else f"{lo} to {hi} times"


def amount(values: list[int]) -> str:
    """'1,460' or '1,200 to 1,460'."""
    lo, hi = min(values), max(values)
    return f"{lo:,}" if lo == hi else f"{lo:,} to {hi:,}"


def sizes(values: list[int]) -> str:
    """'1460-byte' or '1200- to 1460-byte', before a noun."""
    lo, hi = min(values), max(values)
    return f"{lo}-byte" if lo == hi else f"{lo}- to {hi}-byte"


def on_path(diag: Diagnosis, a: str, b: str, port: int, n: int) -> str:
    """'60 connections', or '56 of the 60 connections' when the path had more than these."""
    total = diag.path_count(a, b, port)
    return plural(n, "connection") if total <= n else f"{n} of the {total} connections"


def _fold(retx: int, total: int, what: str) -> str:
    """The sentence that takes these connections' retransmissions out of the loss figures."""
    if not retx:
        return ""
    if retx == total:
        return (f" All {plural(retx, 'retransmitted data segment')} of the capture are "
                f"{what}'s, so they are not reported again as packet loss.")
    return (f" {retx} of the capture's {plural(total, 'retransmitted data segment')} are "
            f"{what}'s (counted here, not as packet loss).")


def mtu_findings(diag: Diagnosis, f: Any, out: list[Finding]) -> None:
    total = diag.loss["retransmitted"]
    for g in group(diag.mtu_blackholes,
                   lambda m: (m["view"], m["sender"], m["receiver"], m["server_port"])):
        m, n = g[0], len(g)
        count = on_path(diag, m["sender"], m["receiver"], m["server_port"], n)
        on = (f"{count} to port {m['server_port']} "
              f"(e.g. {examples([x['flow'] for x in g])})" if n > 1 else m["flow"])
        passed = max(x["passed_average_bytes"] for x in g)
        path = f"{m['sender']} -> {m['receiver']}"
        many = f" on {count}" if n > 1 else ""
        frames = spread([x["frames"] for x in g])
        if m["view"] == "receiver":
            missing = [x["missing_bytes"] for x in g]
            out.append(f(
                "mtu_blackhole", "high",
                f"Suspected MTU black hole on {path}{many}: {amount(missing)} bytes sent "
                + ("never arrived" if n == 1 else "per connection never arrived"),
                f"On {on} the sender's later packets show "
                + (f"{missing[0]:,} bytes" if n == 1 else
                   f"{sum(missing):,} bytes in all")
                + " that never reached this capture point and no "
                f"full-size segment arrived, while {m['receiver']}'s own segments (about "
                f"{passed} bytes) were acknowledged; no ICMP fragmentation-needed was seen.",
                frames, "Capture at the sender too (--compare): if only full-size segments "
                "are lost, allow ICMP type 3 code 4 (ICMPv6 type 2) through NSGs/firewalls or "
                "clamp the MSS / lower the MTU on the tunnel or VPN.", 9.5))
            continue
        retx = sum(x["data_retransmitted"] for x in g)
        before = max(x.get("passed_before_bytes", 0) for x in g)
        smaller = (f"{m['receiver']}'s own segments (about {passed} bytes) got through"
                   if passed else f"the {before:,} bytes {m['sender']} sent before it, in "
                   "smaller segments, were acknowledged")
        out.append(f(
            "mtu_blackhole", "critical",
            f"MTU black hole on {path}: {sizes([x['segment_bytes'] for x in g])} segments "
            f"never get through{many}",
            f"On {on} the {sizes([x['segment_bytes'] for x in g])} segment was sent "
            f"{times([x['retransmissions'] + 1 for x in g])} and never acknowledged, while "
            f"{smaller}; no ICMP fragmentation-needed was seen. The transfer stalls there: "
            "the stall is the black hole's effect." + _fold(retx, total, "the black hole"),
            frames,
            "A link on the path has a smaller MTU and its ICMP 'fragmentation needed' is "
            "blocked: allow ICMP type 3 code 4 (and ICMPv6 type 2) through NSGs/firewalls, or "
            "clamp the MSS / lower the MTU on the tunnel or VPN.", 9.0 + min(n, 9) / 100))


def _stall_sender(c: Connection) -> tuple[str, str]:
    orig = c.detail["stalled_direction"] == "orig"
    return (c.flow["src"], c.flow["dst"]) if orig else (c.flow["dst"], c.flow["src"])


def stalled_findings(diag: Diagnosis, f: Any, out: list[Finding]) -> None:
    total = diag.loss["retransmitted"]
    stalled = [c for c in diag.by_outcome("stalled") if not c.detail.get("mtu_blackhole")]
    for g in group(stalled, lambda c: (*_stall_sender(c), c.flow["dport"])):
        c, n = g[0], len(g)
        sender, receiver = _stall_sender(c)
        silent = sum(1 for x in g if x.detail.get("peer_silent"))
        retx = sum(connection_resent(x, diag.vantage) for x in g)
        count = on_path(diag, sender, receiver, c.flow["dport"], n)
        on = (f"{count} to port {c.flow['dport']} "
              f"(e.g. {examples([x.label for x in g])})" if n > 1 else c.label)
        frames = [x.facts.retx_frames[0 if x.detail["stalled_direction"] == "orig" else 1]
                  for x in g if x.facts]
        out.append(f(
            "tcp_stalled", "high",
            f"Transfer from {sender} to {receiver} stalled"
            + (f" on {count}" if n > 1 else f" on {c.label}"),
            f"On {on} a segment of {amount([x.detail['segment_bytes'] for x in g])} bytes "
            f"was retransmitted {times([x.detail['retransmissions'] for x in g])} and never "
            "acknowledged"
            + ((" (nothing at all came back)" if n == 1 else
                f" (nothing at all came back on {silent} of them)") if silent else "")
            + ": the path or the receiver stopped taking data."
            + (" No segment that large had got through before it: if smaller packets still "
               "pass, suspect an MTU black hole." if all(
                   x.detail.get("first_of_its_size") and x.detail["segment_bytes"] >= 1000
                   for x in g) else "")
            + _fold(retx, total, "the stall"), spread(frames),
            "Check the receiver's health and every filter on the path from the stall onwards; "
            "a capture at the receiver (--compare) shows where it is lost.", 5.0))


def injected_findings(diag: Diagnosis, f: Any, out: list[Finding]) -> None:
    for g in group(diag.injected_resets,
                   lambda r: (r["claims_to_be_from"], r["other_end"], r["server_port"])):
        r, n = g[0], len(g)
        claimed = r["claims_to_be_from"]
        title = (f"A reset on {r['flow']} claims to come from {claimed} but does not look like "
                 "its packets" if n == 1 else
                 f"{n} resets between {claimed} and {r['other_end']} (port {r['server_port']}) "
                 f"claim to come from {claimed} but do not look like its packets")
        why = (f"Frame {r['frame']}: {r['why']}." if n == 1 else
               f"On {examples([x['flow'] for x in g])}; e.g. frame {r['frame']}: {r['why']}.")
        out.append(f(
            "tcp_injected_reset", "high", title,
            why + " A firewall, IPS or load balancer in between probably sent "
            f"{'it' if n == 1 else 'them'} in that host's name.", [x["frame"] for x in g],
            "Look for a device on the path that resets connections (firewall/IPS policy, idle "
            f"timeout); capture at {claimed} too (--compare) to confirm it never sent "
            f"{'this RST' if n == 1 else 'these RSTs'}.", 9.0))


def handshake_findings(diag: Diagnosis, f: Any, out: list[Finding]) -> None:
    """SYN-ACKs that never complete a handshake, explained by what the SYN side did: SYNs
    sent again say the SYN-ACK never reached the client (the return path: asymmetric routing
    through a stateful firewall); none sent again say it did, or the client gave up (a flood
    or scan of many new source ports is diagnosis_patterns.floods', not this)."""
    half = diag.by_outcome("half_open")
    for g in group(half, lambda c: (c.flow["src"], c.flow["dst"], c.flow["dport"])):
        c, n = g[0], len(g)
        client, server, port = c.flow["src"], c.flow["dst"], c.flow["dport"]
        syn = sum(x.facts.syn_retx[x.o] for x in g if x.facts)
        synack = sum(x.facts.synack_retx[1 - x.o] for x in g if x.facts)
        retried = (f"; {client} sent its SYN again ({plural(syn, 'SYN retry')}), so the "
                   f"SYN-ACK never reached it" if syn else
                   f"; {client} never sent its SYN again, as a client whose SYN-ACK is lost does "
                   "after a second")
        if syn:
            why = (f"The return path from {server} to {client} loses the SYN-ACK: asymmetric "
                   "routing through a stateful firewall, or a filter or route on the way back.")
            step = (f"Compare the effective routes of {server}'s and {client}'s subnets (UDR "
                    f"next hops): both directions must cross the same firewall; capture at "
                    f"{client} (--compare) to see whether the SYN-ACK arrives.")
        else:
            why = (f"So the SYN-ACK probably reached {client} and was dropped or ignored there "
                   "(a host firewall, a half-open scanner), or the client gave up at once; a "
                   "SYN-ACK lost on the way back would have brought the SYN again.")
            step = (f"Capture at {client} (--compare): if the SYN-ACKs arrive, look at its "
                    "host firewall and the application that connects; if they do not, compare "
                    "the effective routes of both subnets (the return path).")
        out.append(f(
            "tcp_handshake_incomplete", "critical" if n >= 3 else "high",
            f"{plural(n, 'TCP connection')} from {client} to {server}:{port} never completed "
            "the handshake: SYN-ACK sent, no ACK came back",
            f"{server} answered each SYN with a SYN-ACK"
            + (f" ({plural(synack, 'SYN-ACK retry')})" if synack else "") + retried
            + f" (e.g. {examples([x.label for x in g])}). " + why,
            spread([[x.flow["first_frame"]] + list(x.flow.get("evidence_frames", []))[:2]
                    for x in g]), step, n / 2))
    one_way = diag.by_outcome("synack_only")
    for g in group(one_way, lambda c: (c.flow["src"], c.flow["dst"], c.flow["dport"])):
        c, n = g[0], len(g)
        client, server, port = c.flow["src"], c.flow["dst"], c.flow["dport"]
        out.append(f(
            "tcp_return_path_only", "high",
            f"Only the return half of {plural(n, 'connection')} from {client} to "
            f"{server}:{port} crosses this capture point",
            f"{server} sent SYN-ACKs to {client} (e.g. {examples([x.label for x in g])}), but "
            f"neither the SYN nor any other packet from {client} was seen here: the two "
            "directions of these connections take different paths (asymmetric routing).",
            spread([[x.flow["first_frame"]] for x in g]),
            "Compare the effective routes (UDR next hops) of both subnets: a stateful firewall "
            "that sees only one direction drops the connection; route both directions through "
            "the same appliance.", n / 2))
