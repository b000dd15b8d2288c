"""DNS over UDP and TCP: queries, answers, rcodes, retries and slow or missing answers.

Only the header and the first question are decoded: that is enough to pair queries
with answers (client, server, ports, transaction id) and to name what was asked.
"""

from __future__ import annotations

import ipaddress
from typing import Any

RCODE_NAMES = {
    0: "NOERROR",
    1: "FORMERR",
    2: "SERVFAIL",
    3: "NXDOMAIN",
    4: "NOTIMP",
    5: "REFUSED",
    6: "YXDOMAIN",
    7: "YXRRSET",
    8: "NXRRSET",
    9: "NOTAUTH",
    10: "NOTZONE",
}
QTYPE_NAMES = {1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT", 28: "AAAA",
               33: "SRV", 65: "HTTPS", 255: "ANY"}
MAX_PENDING = 100_000
MAX_EXAMPLES = 20
EDGE_NS = 1_000_000_000  # a query this young when the capture ended is not "unanswered"


def read_name(buf: bytes, start: int, p: int, end: int) -> tuple[str, int]:
    """Decode a (possibly compressed) name at ``p``; returns it and the offset after it."""
    labels: list[str] = []
    after = -1
    hops = 0
    total = 0
    while p < end:
        ln = buf[p]
        if ln == 0:
            p += 1
            break
        if ln & 0xC0 == 0xC0:
            if p + 1 >= end:
                raise ValueError("truncated compression pointer")
            if after < 0:
                after = p + 2
            p = start + (((ln & 0x3F) << 8) | buf[p + 1])
            hops += 1
            if hops > 32:
                raise ValueError("compression loop")
            continue
        if ln & 0xC0:
            raise ValueError("bad label")
        label = buf[p + 1 : p + 1 + ln]
        if len(label) < ln:
            raise ValueError("truncated label")
        labels.append(label.decode("ascii", "replace"))
        total += ln + 1
        if total > 255:
            raise ValueError("name too long")
        p += 1 + ln
    else:
        raise ValueError("name runs off the packet")
    return (".".join(labels) or "."), (after if after >= 0 else p)


class DnsStats:
    """Accumulates DNS facts across the capture."""

    def __init__(self) -> None:
        self.queries = 0
        self.responses = 0
        self.rcodes: dict[int, int] = {}
        self.malformed = 0
        self.pending: dict[tuple[bytes, int, int, int], tuple[int, int, str, str]] = {}
        self.asked: dict[tuple[bytes, str, str], int] = {}
        self.retries = 0
        self.retry_examples: list[dict[str, Any]] = []
        self.latencies: list[tuple[float, str, str, int, int]] = []
        self.failures: list[dict[str, Any]] = []
        self.qtypes: dict[str, int] = {}
        # open exchanges, one per (client, server, name, type) until answered: [first query
        # frame, first query ts, queries sent, rcode of the answer (-1: none), answer ts, frame]
        self.exchanges: dict[tuple[bytes, bytes, str, str], list[int]] = {}
        self.answered: list[tuple[tuple[bytes, bytes, str, str], list[int]]] = []
        # exchanges asked over TCP: an answer split over segments is not read, so none of them
        # is called unanswered
        self.over_tcp: set[tuple[bytes, bytes, str, str]] = set()
        self._tcp = False

    def tcp_payload(self, buf: bytes, p: int, end: int, ts: int, frame: int, addrs: bytes,
                    alen: int, sport: int, dport: int) -> None:
        """DNS over TCP: walk whole length-prefixed messages present in this segment."""
        while p + 2 + 12 <= end:
            ln = (buf[p] << 8) | buf[p + 1]
            if ln < 12:
                return
            self._tcp = True
            self.message(buf, p + 2, min(end, p + 2 + ln), ts, frame, addrs, alen, sport, dport)
            self._tcp = False
            p += 2 + ln

    def message(self, buf: bytes, p: int, end: int, ts: int, frame: int, addrs: bytes,
                alen: int, sport: int, dport: int) -> None:
        """One DNS message starting at ``p``."""
        if p + 12 > end:
            self.malformed += 1
            return
        txid = (buf[p] << 8) | buf[p + 1]
        flags = (buf[p + 2] << 8) | buf[p + 3]
        qdcount = (buf[p + 4] << 8) | buf[p + 5]
        qname, qtype = "", ""
        if qdcount:
            try:
                qname, q = read_name(buf, p, p + 12, end)
                if q + 4 <= end:
                    qt = (buf[q] << 8) | buf[q + 1]
                    qtype = QTYPE_NAMES.get(qt, str(qt))
            except (ValueError, IndexError):
                self.malformed += 1
        src, dst = addrs[:alen], addrs[alen:]
        if flags & 0x8000:
            self.responses += 1
            rcode = flags & 0x000F
            self.rcodes[rcode] = self.rcodes.get(rcode, 0) + 1
            q_hit = self.pending.pop((dst + src, dport, sport, txid), None)
            if q_hit is not None:
                qts, qframe, qn, qt2 = q_hit
                self.latencies.append(((ts - qts) / 1e6, qn or qname, qt2 or qtype, qframe, frame))
                self.asked.pop((dst, qn, qt2), None)
                ekey = (dst, src, qn or qname, qt2 or qtype)
                ex = self.exchanges.pop(ekey, None)
                if ex is not None:
                    ex[3], ex[4], ex[5] = rcode, ts, frame
                    if len(self.answered) < MAX_PENDING:
                        self.answered.append((ekey, ex))
            if rcode and len(self.failures) < 200:
                self.failures.append({
                    "frame": frame, "name": qname, "qtype": qtype,
                    "rcode": RCODE_NAMES.get(rcode, str(rcode)),
                    "server": _ip(src), "client": _ip(dst),
                })
        else:
            self.queries += 1
            if qtype:
                self.qtypes[qtype] = self.qtypes.get(qtype, 0) + 1
            if len(self.pending) < MAX_PENDING:
                self.pending[(addrs, sport, dport, txid)] = (ts, frame, qname, qtype)
            ekey = (src, dst, qname, qtype)
            ex = self.exchanges.get(ekey)
            if ex is not None:
                ex[2] += 1
            elif len(self.exchanges) < MAX_PENDING:
                self.exchanges[ekey] = [frame, ts, 1, -1, 0, 0]
            if self._tcp and len(self.over_tcp) < MAX_PENDING:
                self.over_tcp.add(ekey)
            akey = (src, qname, qtype)
            if akey in self.asked:
                self.retries += 1
                if len(self.retry_examples) < MAX_EXAMPLES:
                    self.retry_examples.append(
                        {"frame": frame, "first_frame": self.asked[akey], "name": qname,
                         "qtype": qtype, "client": _ip(src)}
                    )
            elif len(self.asked) < MAX_PENDING:
                self.asked[akey] = frame

    def exchange_summary(self, end_ts: int = 0,
                         refused: dict[tuple[str, str], dict[str, Any]] | None = None
                         ) -> dict[str, Any]:
        """Outcome of each exchange (a client asking a server one name): what retries hide.

        An exchange first asked less than EDGE_NS before ``end_ts`` (the capture's end) and
        not answered yet is counted apart: its answer may simply not have come in time. One
        never answered by DNS but by an ICMP unreachable about the client's datagrams to the
        server's port 53 (``refused``, from icmp.py) was answered after all: by the server's
        own kernel (``refused_by_host``: nothing listens there) or by a router on the way
        (``rejected_on_the_way``).
        """
        refused = refused or {}
        out: dict[str, Any] = {"total": len(self.exchanges), "answered": 0, "unanswered": 0,
                               "at_capture_end": 0, "refused_by_host": 0,
                               "rejected_on_the_way": 0,
                               "retried_then_answered": 0, "by_rcode": {},
                               "unanswered_by_server": {}, "unanswered_examples": [],
                               "refused_by_host_servers": {}, "rejected_servers": {},
                               "refused_examples": []}
        everything = self.answered + list(self.exchanges.items())
        out["total"] = len(everything)
        names: set[str] = set()
        lost: set[str] = set()
        denied: set[str] = set()
        for (client, server, name, qtype), (fr, qts, n, rcode, _ats, _af) in sorted(
                everything, key=lambda kv: kv[1][0]):
            if rcode < 0:
                if (client, server, name, qtype) in self.over_tcp:
                    out["total"] -= 1
                    continue
                names.add(name)
                srv, cli = _ip(server), _ip(client)
                hit = refused.get((cli, srv))
                if hit is not None:
                    kind = "refused_by_host" if hit["by_host"] else "rejected_on_the_way"
                    out[kind] += 1
                    denied.add(name)
                    row = out["refused_by_host_servers" if hit["by_host"] else
                              "rejected_servers"].setdefault(
                        srv, {"queries": 0, "icmp_messages": 0, "icmp_frames": [], "from": [],
                              "meanings": []})
                    row["queries"] += n
                    if len(out["refused_examples"]) < MAX_EXAMPLES:
                        out["refused_examples"].append({
                            "frame": fr, "name": name, "qtype": qtype, "client": cli,
                            "server": srv, "queries": n})
                    continue
                if end_ts and end_ts - qts < EDGE_NS:
                    out["at_capture_end"] += 1
                    continue
                out["unanswered"] += 1
                lost.add(name)
                out["unanswered_by_server"][srv] = out["unanswered_by_server"].get(srv, 0) + n
                if len(out["unanswered_examples"]) < MAX_EXAMPLES:
                    out["unanswered_examples"].append({
                        "frame": fr, "name": name, "qtype": qtype, "client": cli,
                        "server": srv, "queries": n})
                continue
            names.add(name)
            out["answered"] += 1
            if n > 1:
                out["retried_then_answered"] += 1
            rc = RCODE_NAMES.get(rcode, str(rcode))
            out["by_rcode"][rc] = out["by_rcode"].get(rc, 0) + 1
        for (_cli, srv), hit in refused.items():
            row = out["refused_by_host_servers" if hit["by_host"] else "rejected_servers"].get(srv)
            if row is not None:
                row["icmp_messages"] += hit["messages"]
                row["icmp_frames"] = (row["icmp_frames"] + hit["frames"])[:MAX_EXAMPLES]
                row["from"] = sorted(set(row["from"]) | set(hit["from"]))
                row["meanings"] = sorted(set(row["meanings"]) | set(hit["meanings"]))
        out["names"] = len(names)  # distinct names asked (an exchange is one client, one
        out["unanswered_names"] = len(lost)  # server and one name and type until answered)
        out["refused_names"] = len(denied)
        return out

    def summary(self, end_ts: int = 0,
                refused: dict[tuple[str, str], dict[str, Any]] | None = None
                ) -> dict[str, Any]:
        """The semantic-JSON section (``end_ts``: when the capture ended, for its edge;
        ``refused``: see exchange_summary)."""
        unanswered = [
            {"frame": fr, "name": qn, "qtype": qt, "client": _ip(k[0][: len(k[0]) // 2]),
             "server": _ip(k[0][len(k[0]) // 2:])}
            for k, (_ts, fr, qn, qt) in self.pending.items()
        ]
        unanswered.sort(key=lambda u: str(u["frame"]).zfill(12))
        exchanges = self.exchange_summary(end_ts, refused)
        slow = sorted(self.latencies, key=lambda x: -x[0])[:10]
        lat = sorted(x[0] for x in self.latencies)
        return {
            "queries": self.queries,
            "responses": self.responses,
            "rcodes": {RCODE_NAMES.get(k, str(k)): v for k, v in sorted(self.rcodes.items())},
            "rcode_numbers": {str(k): v for k, v in sorted(self.rcodes.items())},
            "query_types": dict(sorted(self.qtypes.items())),
            # query packets of the exchanges that never got an answer (retries included)
            "unanswered_queries": sum(u for u in exchanges["unanswered_by_server"].values()),
            "unanswered_pending": len(unanswered),
            "exchanges": exchanges,
            "unanswered": unanswered[:MAX_EXAMPLES],
            "retries": self.retries,
            "retry_examples": self.retry_examples,
            "median_answer_ms": round(lat[len(lat) // 2], 3) if lat else None,
            "slowest_answers": [
                {"ms": round(ms, 3), "name": n, "qtype": t, "query_frame": qf, "answer_frame": af}
                for ms, n, t, qf, af in slow
            ],
            "failures": self.failures[:MAX_EXAMPLES],
            "malformed": self.malformed,
        }


def _ip(raw: bytes) -> str:
    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        return raw.hex()
