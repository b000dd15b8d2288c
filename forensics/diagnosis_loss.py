"""Retransmissions attributed: copies made in the network, retransmissions the receiver did not
need, and loss, per direction (host to host) and per flow, over data segments.

What a re-sent segment was is decided in facts.py as the capture is read; here the capture
point (vantage.py) decides what counts as re-sent: at the sender of a direction every range
it sent twice, tshark's out-of-order ones included (it sent them, so they were re-sent);
anywhere else only tshark's retransmissions, since a segment that arrives out of order may
simply have been overtaken. One definition throughout: data segments (TCP payload), so
handshake retries are never loss.
"""

from __future__ import annotations

from typing import Any

from .diagnosis_model import Connection, Diagnosis
from .facts import COPY, DSACK, LOSS, RESENT_OOO, SEEN, SPURIOUS, FlowFacts, kind_frames
from .flows import F_DSEG0
from .vantage import Vantage

# the figures kept per direction and per flow, in this order
FIGURES = ("data_segments", "retransmitted", "lost", "copies", "unneeded", "dsack", "spurious",
           "received_before", "out_of_order_resent")


def resends(f: FlowFacts, d: int, side: str) -> list[int]:
    """FIGURES[1:] of direction ``d`` captured at ``side`` (vantage.Vantage.side): re-sent
    data segments, then what they were. Only at the sender do tshark's out-of-order ones
    count; only at the receiver does a range re-sent where nothing was ever missing count
    as received before (at the receiver, it had it)."""
    if f.rs is None:
        return [0] * (len(FIGURES) - 1)
    k = f.rs.kinds[d]
    n = RESENT_OOO
    ooo = k[n:n + n] if side == "sender" else [0] * n
    kinds = [k[i] + ooo[i] for i in range(n)]
    had = kinds[SEEN] if side == "receiver" else 0
    return [sum(kinds), kinds[LOSS] + kinds[SEEN] - had, kinds[COPY],
            kinds[SPURIOUS] + kinds[DSACK] + had, kinds[DSACK], kinds[SPURIOUS], had, sum(ooo)]


def loss_frames(f: FlowFacts, d: int, side: str) -> list[int]:
    """Frames of segments re-sent because they were lost (the retransmissions of tshark's
    marking first), else of any re-sent segment."""
    if f.rs is None:
        return list(f.retx_frames[d])
    kinds = (LOSS,) if side == "receiver" else (LOSS, SEEN)
    frames = [x for k in kinds for x in kind_frames(f.rs, d, k)]
    if side == "sender":
        frames += [x for k in kinds for x in kind_frames(f.rs, d, RESENT_OOO + k)]
    return sorted(frames) or list(f.retx_frames[d])


def connection_resent(c: Connection, vantage: Vantage) -> int:
    """Data segments this connection re-sent in both directions, as this capture counts them."""
    f = c.facts
    if f is None:
        return 0
    return sum(resends(f, d, vantage.side(c.ends[d], c.ends[1 - d]))[0] for d in (0, 1))


def _loss(tcp: list[list[Any]], conns: list[Connection], vantage: Vantage,
          skip: dict[int, str] | None = None) -> dict[str, Any]:
    """Re-sent data segments and what they were, over data segments, per direction (host to
    host) and per flow; connections whose id is in ``skip`` are left out."""
    dirs: dict[tuple[str, str], list[int]] = {}
    flows = []
    total = [0] * len(FIGURES)
    counted = hit = flagged = 0
    for rec, c in zip(tcp, conns, strict=True):
        if skip and id(c) in skip:
            continue
        counted += 1
        f = c.facts
        touched = False
        if f is not None:
            flagged += f.data_retx[0] + f.data_retx[1]
        for d in (0, 1):
            seg = rec[F_DSEG0 + d]
            if not seg:
                continue
            src, dst = c.ends[d], c.ends[1 - d]
            row = dirs.get((src, dst))
            if row is None:
                row = dirs[(src, dst)] = [0] * len(FIGURES)
            side = vantage.side(src, dst)
            figs = [seg] + (resends(f, d, side) if f is not None else [0] * (len(FIGURES) - 1))
            for i, v in enumerate(figs):
                row[i] += v
                total[i] += v
            if f is None or not figs[1]:
                continue
            touched = True
            sp, dp = (rec[2], rec[3]) if d == 0 else (rec[3], rec[2])
            flows.append({"flow": f"{src}:{sp} -> {dst}:{dp}",
                          **dict(zip(FIGURES, figs, strict=True)),
                          "rate": round(figs[1] / seg, 4), "loss_rate": round(figs[2] / seg, 4),
                          "frames": loss_frames(f, d, side)[:10]})
        hit += touched
    flows.sort(key=lambda x: (-x["lost"], -x["retransmitted"], x["flow"]))
    out: dict[str, Any] = {"connections": counted, "connections_with_retransmissions": hit,
                           **dict(zip(FIGURES, total, strict=True))}
    out["flagged_by_tshark"] = flagged  # data segments tshark marks as retransmissions
    segs = total[0]
    out["rate"] = round(total[1] / segs, 4) if segs else 0.0
    out["loss_rate"] = round(total[2] / segs, 4) if segs else 0.0
    out["by_direction"] = [
        {"from": s, "to": d, **dict(zip(FIGURES, v, strict=True)),
         "captured_at": vantage.side(s, d),
         "rate": round(v[1] / v[0], 4), "loss_rate": round(v[2] / v[0], 4)}
        for (s, d), v in sorted(dirs.items(), key=lambda kv: (-kv[1][2], -kv[1][1])) if v[0]
    ][:20]
    out["by_flow"] = flows[:20]
    return out


def explanation(c: Connection) -> str | None:
    """The diagnosis that accounts for a connection's retransmissions, if one does."""
    if c.detail.get("mtu_blackhole"):
        return "mtu_blackhole"
    return "stalled" if c.outcome == "stalled" else None


def explained_loss(diag: Diagnosis, tcp: list[list[Any]]) -> None:
    """Split the loss figures: retransmissions that a diagnosis (MTU black hole, stall)
    explains, and the rest, which alone may be reported as loss."""
    skip = {id(c): k for c in diag.connections if (k := explanation(c)) is not None}
    by: dict[str, dict[str, int]] = {}
    for rec, c in zip(tcp, diag.connections, strict=True):
        kind = skip.get(id(c))
        if kind is None:
            continue
        row = by.setdefault(kind, {"connections": 0, "data_segments": 0, "retransmitted": 0,
                                   "capture_gaps": 0})
        ta = c.flow.get("tcp_analysis") or {}
        row["connections"] += 1
        row["data_segments"] += rec[F_DSEG0] + rec[F_DSEG0 + 1]
        row["retransmitted"] += connection_resent(c, diag.vantage)
        row["capture_gaps"] += ta.get("lost_segment", 0) + ta.get("ack_lost_segment", 0)
    diag.loss = _loss(tcp, diag.connections, diag.vantage)
    diag.loss["explained_by"] = by
    diag.loss["unexplained"] = _loss(tcp, diag.connections, diag.vantage, skip) if skip else {
        k: v for k, v in diag.loss.items() if k != "explained_by"}
