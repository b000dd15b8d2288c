"""Aggregate VNet flow-log tuples into flows, in one pass, with memory bounded by the estate.

A *flow* here is what a rule matches: source, destination, destination port and protocol. The
source port is the client's ephemeral port, so every connection is its own 5-tuple; a flow
counts its connections (B records) and its distinct denied 5-tuples rather than keeping one
row each, which would grow with the input. Inbound flows from Internet addresses are pooled
per destination (source ``*``): scanners alone bring thousands of new addresses an hour.
Memory therefore grows with the number of flows and the minutes they span, never with the
records read.

Per tuple (``ms,src,dst,sport,dport,proto,I|O,state,encryption,pkts out,bytes out,pkts in,
bytes in``): the deciding rule (an allowed flow is logged under every NSG it crossed, so its
counts are taken once per record), the state (B and D carry no counts; C and E carry the
counts since the previous tuple), and the minute, as flags: allowed, denied, one way (packets
out, none back) at the sender's or the receiver's NIC, answered.

The common tuple (13 fields, a known state, a readable time within a day of its record, no
pair asked about) takes the inlined fast loop in ``_group``; anything else takes ``_slow``,
which checks everything and then applies the same update (``_apply``). The two are kept equal
by a test that runs every case through both.
"""

from __future__ import annotations

from sys import intern
from typing import Any

from .flowlogs_model import (
    ALLOWED,
    ANSWERED,
    CF,
    CM,
    CR,
    DENIED,
    DROP_ENCRYPTION,
    ENC,
    ENC_DROP,
    MACS,
    MAX_FLOWS,
    MAX_SOURCES,
    MIN,
    NB,
    NC,
    ND,
    NE,
    NX,
    ONEWAY_I,
    ONEWAY_O,
    OWEV,
    PD,
    POOLED,
    PORT_SET_MAX,
    PUBLIC_FIRST_OCTET,
    RULES,
    SRCS,
    VI,
    VO,
    Filter,
    Key,
    MinuteSet,
    NearMiss,
    add_mac,
    add_port,
    counts_of,
    is_internal,
    merge_flow,
    new_flow,
    record_minute,
    shift_flow,
)
from .flowlogs_read import Blob
from .wording import plural

_DAY_MS = 1440 * 60000
_YEARS_2000_2100 = (946684800000, 4102444800000)


class NsgFlowLogError(Exception):
    """A record of an NSG flow log (version 1 or 2), not a VNet flow log."""


class Aggregator:
    """Everything the findings need, from every record of every blob, in one pass."""

    def __init__(self, filt: Filter | None = None) -> None:
        self.filt = filt or Filter()
        self.force_slow = False  # tests: every tuple through the checked path
        self.flows: dict[Key, list[Any]] = {}
        self.blobs: list[Blob] = []
        self.coverage: dict[str, MinuteSet] = {}        # mac -> minutes with a record
        self.nic_ips: dict[str, set[str]] = {}          # mac -> its addresses
        self.flow_logs: dict[str, dict[str, Any]] = {}  # flowLogResourceID -> guid, targets
        self.seen_records: set[tuple[str, str]] = set()
        self.near = NearMiss()
        self.counts = {"records": 0, "empty_records": 0, "duplicate_records": 0, "tuples": 0,
                       "tuples_matched": 0, "malformed_tuples": 0, "unknown_states": 0,
                       "pooled_tuples": 0, "overflow_tuples": 0}

    # ---- records -------------------------------------------------------------------------

    def add_blob(self, blob: Blob, records: Any) -> None:
        """Read every record of one blob (``records`` is :func:`iter_records`' iterator)."""
        bi = len(self.blobs)
        self.blobs.append(blob)
        for rec in records:
            blob.records += 1
            self.add_record(rec, bi, blob)

    def add_record(self, rec: dict[str, Any], bi: int, blob: Blob) -> None:
        counts = self.counts
        t = rec.get("time")
        mac = rec.get("macAddress")
        mac = mac.replace("-", "").replace(":", "").upper() if isinstance(mac, str) and mac \
            else "unknown"
        version = rec.get("flowLogVersion")
        if version != 4:
            if "properties" in rec and "flowRecords" not in rec:
                raise NsgFlowLogError()
            if isinstance(version, int) and version > 4:
                note(blob, f"flowLogVersion {version} is newer than 4: read as version 4 "
                     "(fields after the 13th of a tuple are ignored)")
            elif version is None:
                note(blob, "records without flowLogVersion: read as version 4")
            else:
                note(blob, f"flowLogVersion {version!r} is not 4: read as version 4")
        if isinstance(t, str):
            key = (mac, t)
            if key in self.seen_records:
                counts["duplicate_records"] += 1
                return
            self.seen_records.add(key)
            if blob.first_time is None or t < blob.first_time:
                blob.first_time = t
            if blob.last_time is None or t > blob.last_time:
                blob.last_time = t
        counts["records"] += 1
        blob.macs.add(mac)
        path_mac = blob.path_mac
        if path_mac and mac != path_mac and mac != "unknown":
            note(blob, f"records of NIC {mac} in the blob of NIC {path_mac} (by its path): "
                 "each record is read as its own NIC's")
        fid = rec.get("flowLogResourceID")
        if isinstance(fid, str):
            fl = self.flow_logs.get(fid)
            if fl is None:
                fl = self.flow_logs[fid] = {"guid": rec.get("flowLogGUID"), "targets": set()}
            target = rec.get("targetResourceID")
            if isinstance(target, str) and len(fl["targets"]) < 100:
                fl["targets"].add(target)
        rmin = record_minute(t)
        if rmin is None:
            note(blob, "records without a readable time: their tuples are checked against "
                 "the years 2000-2100 only")
        cov = self.coverage.get(mac)
        if cov is None:
            cov = self.coverage[mac] = MinuteSet()
        flows = rec.get("flowRecords")
        flows = flows.get("flows") if isinstance(flows, dict) else None
        if flows is None:
            flows = []
        elif not isinstance(flows, list):
            note(blob, "a record whose flowRecords.flows is not a list was skipped")
            flows = []
        ctx = (bi, t, mac, rmin)
        before = counts["tuples"]
        seen: set[str] | None = set() if len(flows) > 1 else None
        for entry in flows:
            if not isinstance(entry, dict):
                continue
            acl = entry.get("aclID")
            acl = acl if isinstance(acl, str) and acl else "unspecified"
            groups = entry.get("flowGroups")
            if not isinstance(groups, list):
                continue
            for g in groups:
                if not isinstance(g, dict):
                    continue
                tuples = g.get("flowTuples")
                if not isinstance(tuples, list) or not tuples:
                    continue
                rule = g.get("rule")
                rule = rule if isinstance(rule, str) and rule else "unspecified"
                self._group(acl, rule, tuples, ctx, seen, blob)
        n = counts["tuples"] - before
        blob.tuples += n
        if rmin is not None:
            cov.mark(rmin, 1 if n else 3)  # flag 2: the record held no tuple (an empty minute)
        if not n:
            counts["empty_records"] += 1

    # ---- tuples ------------------------------------------------------------------------------

    def _bounds(self, ctx: tuple[Any, ...]) -> tuple[int, int]:
        """Times a tuple of this record may have: within a day of the record's time (else
        the years 2000-2100), and within --since/--until."""
        rmin = ctx[3]
        lo, hi = ((rmin * 60000 - _DAY_MS, rmin * 60000 + _DAY_MS + 60000) if rmin is not None
                  else _YEARS_2000_2100)
        if self.filt.since_ms is not None:
            lo = max(lo, self.filt.since_ms)
        if self.filt.until_ms is not None:
            hi = min(hi, self.filt.until_ms)
        return lo, hi

    def _group(self, acl: str, rule: str, tuples: list[Any], ctx: tuple[Any, ...],
               seen: set[str] | None, blob: Blob) -> None:
        """One rule's tuples in one record: the fast loop (an inlined ``_apply``)."""
        self.counts["tuples"] += len(tuples)
        if self.filt.pair or self.force_slow:
            self._learn_ip(ctx[2], tuples[0])
            for tup in tuples:
                self._slow(tup, acl, rule, ctx, seen, blob)
            return
        self._learn_ip(ctx[2], tuples[0])
        lo, hi = self._bounds(ctx)
        flows = self.flows
        kA, kD = (acl, rule, "A"), (acl, rule, "D")
        rule_of = {"B": kA, "C": kA, "E": kA, "D": kD}
        mac = ctx[2]
        slow = self._slow
        n_slow = pooled_n = 0
        for tup in tuples:
            try:
                f = tup.split(",")
                ts = int(f[0])
            except (AttributeError, ValueError):
                slow(tup, acl, rule, ctx, seen, blob)
                n_slow += 1
                continue
            if len(f) != 13 or not lo <= ts < hi:
                slow(tup, acl, rule, ctx, seen, blob)
                n_slow += 1
                continue
            st = f[7]
            rk = rule_of.get(st)
            enc = f[8]
            d = f[6]
            if rk is None or (enc != "NX" and enc in DROP_ENCRYPTION) or (d != "O" and d != "I"):
                slow(tup, acl, rule, ctx, seen, blob)
                n_slow += 1
                continue
            src = f[1]
            if d == "I" and (src.partition(".")[0] in PUBLIC_FIRST_OCTET
                             or not is_internal(src)):
                pooled = True
                pooled_n += 1
                key = (POOLED, f[2], f[4], f[5])
            else:
                pooled = False
                key = (src, f[2], f[4], f[5])
            p = flows.get(key)
            if p is None:
                p = self._new(key)
            # -- from here on as _apply --
            rs = p[RULES].get(rk)
            if rs is None:
                p[RULES][rk] = [1, ts, ctx, tup, ts, ctx, tup]
            else:
                rs[0] += 1
                if ts < rs[1]:
                    rs[1] = ts
                    rs[2] = ctx
                    rs[3] = tup
                if ts >= rs[4]:
                    rs[4] = ts
                    rs[5] = ctx
                    rs[6] = tup
            if seen is not None:  # the same tuple under a second NSG: counted once
                if tup in seen:
                    continue
                seen.add(tup)
            if st == "B":
                p[NB] += 1
                flag = ALLOWED
            elif st == "D":
                p[ND] += 1
                flag = DENIED
                ports = p[PD]
                if ports is None:
                    p[PD] = {f[3]}
                elif type(ports) is set:
                    if len(ports) < PORT_SET_MAX:
                        ports.add(f[3])
                    else:
                        add_port(p, f[3])
                else:
                    try:
                        i = int(f[3])
                        ports[(i >> 3) & 8191] |= 1 << (i & 7)
                    except ValueError:
                        pass
            else:
                if st == "E":
                    p[NE] += 1
                else:
                    p[NC] += 1
                flag = ALLOWED
                try:
                    ps, bs, pr, br = int(f[9]), int(f[10]), int(f[11]), int(f[12])
                except ValueError:
                    ps, bs, pr, br = counts_of(f[9:13])
                at = VO if d == "O" else VI
                v = p[at]
                if v is None:
                    v = p[at] = [0, 0, 0, 0, 0, 0, 0]
                v[0] += ps
                v[1] += bs
                v[2] += pr
                v[3] += br
                if pr:
                    v[5] += 1
                    flag = ALLOWED | ANSWERED
                elif ps:
                    v[4] += 1
                    v[6] += ps
                    flag = ALLOWED | (ONEWAY_O if d == "O" else ONEWAY_I)
                    ow = p[OWEV]
                    if ow is None or ts < ow[0]:
                        p[OWEV] = (ts, ctx, tup)
            if enc != "NX":
                e = p[ENC]
                if e is None:
                    e = p[ENC] = {}
                e[enc] = e.get(enc, 0) + 1
            m = ts // 60000
            if p[CM] != m or p[CF] & flag != flag:
                if p[CM] != m:
                    p[CM] = m
                    p[CF] = flag
                else:
                    p[CF] |= flag
                ms = p[MIN]
                off = m - ms.origin
                if 0 <= off < len(ms.flags):
                    ms.flags[off] |= flag
                else:
                    ms.mark(m, flag)
            if p[CR] is not ctx:
                p[CR] = ctx
                if p[MACS] != mac:
                    add_mac(p, mac)
            if pooled:
                s = p[SRCS]
                if len(s) < MAX_SOURCES:
                    s[src] = None
        counts = self.counts
        counts["tuples_matched"] += len(tuples) - n_slow
        counts["pooled_tuples"] += pooled_n

    def _slow(self, tup: Any, acl: str, rule: str, ctx: tuple[Any, ...],
              seen: set[str] | None, blob: Blob) -> None:
        """One tuple, every check made: type, field count, filters, time, state."""
        counts = self.counts
        if type(tup) is not str:
            counts["malformed_tuples"] += 1
            note(blob, "flow tuples that are not strings were skipped")
            return
        f = tup.split(",")
        if len(f) != 13:
            if len(f) < 13:
                counts["malformed_tuples"] += 1
                note(blob, f"tuples with {plural(len(f), 'field')} (13 expected) were "
                     "skipped")
                return
            note(blob, f"tuples with {len(f)} fields (13 expected): the fields after the "
                 "13th were ignored")
            f = f[:13]
        src, dst, sport, dport, proto, d, st, enc = f[1:9]
        if self.filt.pair and not self._pair_match(src, dst, sport, dport):
            return
        try:
            ts = int(f[0])
        except ValueError:
            counts["malformed_tuples"] += 1
            note(blob, "tuples with an unreadable time stamp were skipped")
            return
        if ts < 100_000_000_000:  # seconds, as in Microsoft's older examples
            ts *= 1000
        rmin = ctx[3]
        sane = (abs(ts - rmin * 60000) <= _DAY_MS + 60000 if rmin is not None
                else _YEARS_2000_2100[0] <= ts < _YEARS_2000_2100[1])
        if not sane:
            counts["malformed_tuples"] += 1
            note(blob, "tuples whose time stamp is over a day away from their record's time "
                 "were skipped")
            return
        filt = self.filt
        if (filt.since_ms is not None and ts < filt.since_ms) or \
                (filt.until_ms is not None and ts >= filt.until_ms):
            if filt.pair:
                self.near.outside_window += 1
            return
        if d not in ("I", "O"):
            counts["malformed_tuples"] += 1
            note(blob, f"tuples with an unknown direction {d[:8]!r} were skipped")
            return
        counts["tuples_matched"] += 1
        pooled = d == "I" and filt.src is None and not is_internal(src)
        key = (POOLED if pooled else src, dst, dport, proto)
        p = self.flows.get(key)
        if p is None:
            p = self._new(key)
        counts["pooled_tuples"] += pooled
        if st == "D":
            rk, flag = (acl, rule, "D"), DENIED
        elif enc in DROP_ENCRYPTION:
            rk, flag = (acl, rule, "X"), ENC_DROP
        elif st in ("B", "C", "E"):
            rk, flag = (acl, rule, "A"), ALLOWED
        else:
            counts["unknown_states"] += 1
            note(blob, f"tuples with an unknown flow state {st[:8]!r} were counted but not "
                 "judged")
            p[NX] += 1
            return
        self._apply(p, f, tup, ts, st, d, enc, rk, flag, ctx, seen, pooled)

    def _apply(self, p: list[Any], f: list[str], tup: str, ts: int, st: str, d: str,
               enc: str, rk: tuple[str, str, str], flag: int, ctx: tuple[Any, ...],
               seen: set[str] | None, pooled: bool) -> None:
        """The update of ``_group``'s fast loop, for a tuple that passed ``_slow``'s checks."""
        rs = p[RULES].get(rk)
        if rs is None:
            p[RULES][rk] = [1, ts, ctx, tup, ts, ctx, tup]
        else:
            rs[0] += 1
            if ts < rs[1]:
                rs[1:4] = [ts, ctx, tup]
            if ts >= rs[4]:
                rs[4:7] = [ts, ctx, tup]
        if seen is not None:
            if tup in seen:
                return
            seen.add(tup)
        if st == "B":
            p[NB] += 1
        elif st == "D":
            p[ND] += 1
            add_port(p, f[3])
        elif st in ("C", "E"):
            p[NE if st == "E" else NC] += 1
            ps, bs, pr, br = counts_of(f[9:13])
            at = VO if d == "O" else VI
            v = p[at]
            if v is None:
                v = p[at] = [0, 0, 0, 0, 0, 0, 0]
            v[0] += ps
            v[1] += bs
            v[2] += pr
            v[3] += br
            if pr:
                v[5] += 1
                flag |= ANSWERED
            elif ps:
                v[4] += 1
                v[6] += ps
                flag |= ONEWAY_O if d == "O" else ONEWAY_I
                if p[OWEV] is None or ts < p[OWEV][0]:
                    p[OWEV] = (ts, ctx, tup)
        if enc != "NX":
            e = p[ENC] if p[ENC] is not None else {}
            e[enc] = e.get(enc, 0) + 1
            p[ENC] = e
        m = ts // 60000
        if p[CM] != m:
            p[CM] = m
            p[CF] = flag
            p[MIN].mark(m, flag)
        elif p[CF] & flag != flag:
            p[CF] |= flag
            p[MIN].mark(m, flag)
        if p[CR] is not ctx:
            p[CR] = ctx
            add_mac(p, ctx[2])
        if pooled and len(p[SRCS]) < MAX_SOURCES:
            p[SRCS][f[1]] = None

    def _new(self, key: Key) -> list[Any]:
        """A flow for a key seen for the first time (or the overflow flow past MAX_FLOWS)."""
        if len(self.flows) >= MAX_FLOWS:
            self.counts["overflow_tuples"] += 1
            key = (POOLED, POOLED, key[2], key[3])
            p = self.flows.get(key)
            if p is not None:
                return p
        key = (intern(key[0]), intern(key[1]), intern(key[2]), intern(key[3]))
        p = self.flows[key] = new_flow()
        if key[0] == POOLED:
            p[SRCS] = {}
        return p

    def _learn_ip(self, mac: str, tup: Any) -> None:
        """The NIC's own address, from a tuple it logged: the source of what it sends (O),
        the destination of what it receives (I). One tuple a group is enough."""
        if type(tup) is not str:
            return
        f = tup.split(",", 7)
        if len(f) < 8 or f[6] not in ("I", "O"):
            return
        ips = self.nic_ips.get(mac)
        if ips is None:
            ips = self.nic_ips[mac] = set()
        if len(ips) < 16:
            ips.add(f[1] if f[6] == "O" else f[2])

    def _pair_match(self, src: str, dst: str, sport: str, dport: str) -> bool:
        filt = self.filt
        sm = filt.src is None or filt.src(src)
        dm = filt.dst is None or filt.dst(dst)
        pm = filt.port is None or filt.port == dport
        if sm and dm and pm:
            return True
        near = self.near
        if filt.src is not None and sm:
            near.src_seen += 1
        if filt.dst is not None and dm:
            near.dst_seen += 1
        if sm and dm and not pm:
            op = near.other_ports
            if dport in op or len(op) < 50:
                op[dport] = op.get(dport, 0) + 1
        if (filt.src or filt.dst) and (filt.src is None or filt.src(dst)) and \
                (filt.dst is None or filt.dst(src)) and \
                (filt.port is None or filt.port == sport):
            near.reverse += 1
        return False

    def time_span(self) -> tuple[int | None, int | None]:
        """The first and last tuple time (ms) among the flows (over their rules)."""
        firsts = [rs[1] for p in self.flows.values() for rs in p[RULES].values()]
        lasts = [rs[4] for p in self.flows.values() for rs in p[RULES].values()]
        return (min(firsts), max(lasts)) if firsts else (None, None)

    # ---- merging (parallel runs) -----------------------------------------------------------

    def merge(self, o: Aggregator) -> None:
        """Fold in the aggregate of the blobs that come after this one's (in name order)."""
        shift = len(self.blobs)
        self.blobs += o.blobs
        for k, v in o.counts.items():
            self.counts[k] += v
        for mac, cov in o.coverage.items():
            mine = self.coverage.get(mac)
            if mine is None:
                self.coverage[mac] = cov
            else:
                mine.merge(cov)
        for mac, ips in o.nic_ips.items():
            self.nic_ips.setdefault(mac, set()).update(ips)
        for fid, fl in o.flow_logs.items():
            mine_fl = self.flow_logs.setdefault(fid, {"guid": fl["guid"], "targets": set()})
            mine_fl["targets"] |= fl["targets"]
        self.seen_records |= o.seen_records
        self.near.merge(o.near)
        for key, q in o.flows.items():
            shift_flow(q, shift)
            p = self.flows.get(key)
            if p is None:
                self.flows[key] = q
            else:
                merge_flow(p, q)


def note(blob: Blob, text: str) -> None:
    """A warning about a blob, once."""
    if text not in blob.warnings:
        blob.warnings.append(text)
