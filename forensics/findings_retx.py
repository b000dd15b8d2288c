"""Findings about re-sent data, each look-alike in its own words: loss, retransmissions the
receiver did not need, and copies made in the network. Only loss carries a severity."""

from __future__ import annotations

from typing import Any

from . import tcp_analysis as T
from .diagnosis_model import Diagnosis
from .facts import COPY, DSACK, RESENT_OOO, SEEN, SPURIOUS, kind_frames
from .findings_paths import spread
from .wording import duration_ns, listing, percent, plural

Finding = dict[str, Any]
EXPLAINED = {"mtu_blackhole": "the MTU black hole above", "stalled": "the stall above"}


def explained_note(loss: dict[str, Any]) -> str:
    by = loss.get("explained_by") or {}
    parts = [f"{plural(v['retransmitted'], 'retransmission')} on "
             f"{plural(v['connections'], 'connection')} explained by {EXPLAINED[k]}"
             for k, v in by.items() if v["retransmitted"]]
    return f" Not counted here: {listing(parts)}." if parts else ""


def _vantage_note(diag: Diagnosis, dirs: list[dict[str, Any]]) -> str:
    """Which side the capture was taken on, for the directions that lost data: one sentence
    per capture host, for the data it sent and for the data it received."""
    hosts: dict[str, dict[str, int]] = {}
    for d in dirs:
        if d["captured_at"] == "sender":
            hosts.setdefault(d["from"], {})["sent"] = d["out_of_order_resent"]
        elif d["captured_at"] == "receiver":
            hosts.setdefault(d["to"], {})["received"] = 1
    notes = []
    for host, roles in list(hosts.items())[:2]:
        ev = diag.vantage.evidence.get(host, "")
        how = " and ".join(x for x, sign in (("its TTL", "TTL"), ("the handshake timing",
                                                                    "round trip")) if sign in ev)
        ooo = roles.get("sent", 0)
        sent = ("every range it sent twice counts as retransmitted"
                + (f" ({ooo} marked out-of-order by tshark)" if ooo else "")
                + ", so the loss counted here is an upper bound on what the path dropped")
        received = ("a retransmission lost again on the way is not seen here, so the sender "
                    "re-sent at least that many")
        role, what = (("the sender", sent) if "received" not in roles else
                      ("the receiver", received) if "sent" not in roles else
                      ("the sender of one direction and the receiver of the other",
                       f"for what it sent, {sent}; for what it received, {received}"))
        notes.append(f"Captured at {host}, {role}" + (f" (recognised by {how})" if how else "")
                     + f": {what}.")
    return (" " + " ".join(notes)) if notes else ""


def _frames(diag: Diagnosis, kinds: tuple[int, ...], at_receiver: tuple[int, ...] = ()
            ) -> list[list[int]]:
    """Frames of the re-sent segments of ``kinds`` (and ``at_receiver`` where the capture
    was taken at the receiver), per connection direction."""
    out = []
    for c in diag.connections:
        rs = c.facts.rs if c.facts else None
        if rs is None:
            continue
        for d in (0, 1):
            side = diag.vantage.side(c.ends[d], c.ends[1 - d])
            mine = kinds + (at_receiver if side == "receiver" else ())
            frames = [x for k in mine for x in kind_frames(rs, d, k)]
            if side == "sender":
                frames += [x for k in mine for x in kind_frames(rs, d, RESENT_OOO + k)]
            if frames:
                out.append(sorted(frames))
    return out


def retransmission_findings(diag: Diagnosis, frames: dict[int, list[int]], doc: dict[str, Any],
                            f: Any, out: list[Finding]) -> None:
    _loss_finding(diag, frames, doc, f, out)
    _unneeded_finding(diag, f, out)
    _copies_finding(diag, f, out)


def _loss_finding(diag: Diagnosis, frames: dict[int, list[int]], doc: dict[str, Any], f: Any,
                  out: list[Finding]) -> None:
    """Loss not explained by another diagnosis; its figures (title, directions, worst flow)
    all count the same thing: data segments re-sent because they were lost, over data
    segments sent."""
    loss = diag.loss.get("unexplained", diag.loss)
    lost, segs = loss["lost"], loss["data_segments"]
    if lost <= 0:
        return
    rate = lost / segs if segs else 1.0
    sev = "high" if rate > 0.05 else "medium" if rate > 0.01 else "low"
    lossy = [d for d in loss["by_direction"] if d["lost"]]
    dirs = [f"{d['from']} -> {d['to']}: {d['lost']} of {d['data_segments']} "
            f"({percent(d['lost'], d['data_segments'])})" for d in lossy]
    flows = [x for x in loss["by_flow"] if x["lost"]]
    hs = diag.handshake_retries
    hs_note = ""
    if hs["syn"] or hs["syn_ack"]:
        hs_note = (f" Handshake retries (SYN {hs['syn']}, SYN-ACK {hs['syn_ack']}) belong to "
                   "connection attempts and are not counted here.")
    others = " on other connections" if diag.loss.get("explained_by") else ""
    not_loss = []
    if loss["copies"]:
        not_loss.append(f"{plural(loss['copies'], 'copy', 'copies')} made in the network")
    if loss["unneeded"]:
        not_loss.append(f"{plural(loss['unneeded'], 'retransmission')} the receiver did not "
                        "need")
    ta = doc["tcp_analysis"]
    ev = spread([x["frames"] for x in flows]) or frames.get(T.RETRANSMISSION, [])
    out.append(f(
        "tcp_retransmissions", sev,
        f"{plural(lost, 'data segment')} lost and retransmitted{others} "
        f"({percent(lost, segs)} of {plural(segs, 'data segment')})",
        ("On the only connection" if loss["connections"] == 1 else
         f"On {loss['connections_with_retransmissions']} of the "
         f"{plural(loss['connections'], 'connection')}")
        + (" not explained above" if others else "") + ". By direction: "
        + listing(dirs, 3)
        + (f"; worst flow {flows[0]['flow']} ({flows[0]['lost']} of "
           f"{flows[0]['data_segments']})" if len(flows) > 1 else "") + "."
        + _vantage_note(diag, lossy)
        + (f" Not loss, and not counted: {listing(not_loss)} (below)." if not_loss else "")
        + f" In the whole capture tshark marks "
        f"{plural(ta['fast_retransmission'], 'fast retransmission')} and "
        f"{plural(ta['duplicate_ack'], 'duplicate ACK')}."
        + explained_note(diag.loss) + hs_note, ev,
        "Packet loss on the path: check VM/NIC drops, throttling at the VM size's bandwidth "
        "limit, and capture both ends (--compare) to see where loss happens.", rate * 100))


def _unneeded_finding(diag: Diagnosis, f: Any, out: list[Finding]) -> None:
    loss = diag.loss.get("unexplained", diag.loss)
    n = loss["unneeded"]
    if not n:
        return
    parts = []
    if loss["dsack"]:
        parts.append(f"{loss['dsack']} reported back by the receiver as duplicates (D-SACK)")
    if loss["spurious"]:
        parts.append(f"{loss['spurious']} re-sent after the receiver had already acknowledged "
                     "the data")
    if loss["received_before"]:
        parts.append(f"{loss['received_before']} re-sent after this capture, taken at the "
                     "receiver, had seen the data arrive with nothing missing before it")
    whose = listing(sorted({d["from"] for d in loss["by_direction"] if d["unneeded"]}), 3)
    nothing_lost = "" if loss["lost"] else " No data segment was lost on these connections."
    out.append(f(
        "tcp_unneeded_retransmissions", "info",
        f"{plural(n, 'retransmission')} the receiver did not need: it already had the data",
        f"{whose} re-sent data the receiver already held: {listing(parts)}. The sender's "
        "retransmission timer or tail-loss probe fired before the receiver's ACK came back "
        "(ACKs delayed on the way back or by a busy receiver, or a probe after the last "
        "segment of a burst): this is not packet loss." + nothing_lost,
        spread(_frames(diag, (DSACK, SPURIOUS), (SEEN,))),
        "No action for loss. If these come in bursts, look at what delays the ACKs on the way "
        "back (queues on the return path, a busy receiving host).", 0.0))


def _copies_finding(diag: Diagnosis, f: Any, out: list[Finding]) -> None:
    loss = diag.loss
    n = loss["copies"]
    if not n:
        return
    dirs = [f"{d['copies']} of the {d['data_segments']} from {d['from']} to {d['to']}"
            for d in loss["by_direction"] if d["copies"]]
    gap = _largest_copy_gap(diag)
    out.append(f(
        "network_duplicates", "low",
        f"{plural(n, 'data segment')} arrived twice: copies made on the way, not "
        "retransmissions",
        f"{listing(dirs, 3)}: each copy repeats the segment just before it, same IPv4 ID and "
        f"same sequence range{gap}, sooner than any sender could re-send it. A device on "
        "the path sends packets twice (a mirror or bridging loop, a misconfigured NVA or "
        "load-balancer pair), or the capture itself saw each packet twice (capturing on "
        "'any' over a bridge or bond). The sender re-sent nothing: this is not loss.",
        spread(_frames(diag, (COPY,))),
        "Capture on each hop (or --compare with the sender's capture) to find where the "
        "copies appear, and fix the device that duplicates.", min(n, 99) / 10))


def _largest_copy_gap(diag: Diagnosis) -> str:
    gap = max((c.facts.rs.copy_gap for c in diag.connections if c.facts and c.facts.rs),
              default=0)
    return f" (at most {duration_ns(gap)} after it)" if gap else ""
