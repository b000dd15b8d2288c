"""The single pass over a capture: decode each record at struct level and feed the analyses.

Everything per packet happens in ``Analyzer.run`` with local-variable caching: this
loop decides the engine's speed. Rare work (DNS, ICMP, TLS, HTTP, unusual link types)
is delegated to small functions in their own modules.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from . import tcp_analysis as T
from .app import AppStats
from .dns import DnsStats
from .facts import WATCH, facts_of, finish, note_event, note_flags, peer_segment, resent, watch
from .flows import (
    F_DIAG,
    F_EVIDENCE,
    F_SEEN0,
    F_TA,
    S_ACK,
    S_DATA,
    S_FIN,
    S_RST,
    S_SYN,
    S_SYNACK,
    new_flow,
    note_events,
)
from .fragments import Reassembler, window_scale
from .icmp import IcmpStats
from .linklayer import fallback_l3_offset, known_l3
from .reader import CaptureInfo, Record
from .split import FAST_LINKTYPES, share_of
from .tunnels import geneve_inner, gre_inner, inner_by_ethertype, vxlan_inner

EVIDENCE_PER_FLOW = 10
EVIDENCE_PER_FLAG = 25
DNS_PORTS = frozenset((53, 5353, 5355))

_U16 = struct.Struct("!H").unpack_from
_U32 = struct.Struct("!I").unpack_from
_TCPHDR = struct.Struct("!HHIIBBH").unpack_from  # sport dport seq ack off flags win
_UDPHDR = struct.Struct("!HHH").unpack_from
# IPv4 header in one call: version/IHL, total length, ID, flags/fragment offset, protocol,
# addresses
_IPV4HDR = struct.Struct("!BxHHHxB2x8s").unpack_from
# the EtherType and that IPv4 header, for an Ethernet frame: one call for the common packet
_ETH_IPV4HDR = struct.Struct("!12xHBxHHHxB2x8s").unpack_from
_IPV6_EXT = frozenset((0, 43, 60, 51))

# Conversation list layout: [dir0 state, dir1 state, first rtt ns, last SYN ns, flow record]
C_RTT = 2
C_MRU_SYN = 3
C_FLOW = 4


class Analyzer:
    """Holds every counter of one capture; ``run`` fills them from a record iterator."""

    def __init__(self, info: CaptureInfo) -> None:
        self.info = info
        self.packets = 0
        self.bytes = 0
        self.first_ts = 0
        self.last_ts = 0
        self.truncated_packets = 0
        self.oversized_packets = 0  # IP datagrams above 1500 bytes: TSO/GRO at the capture point
        self.ip_len_zero = 0
        self.non_ip_packets = 0
        self.undecodable_packets = 0
        self.ipv4_packets = 0
        self.ipv6_packets = 0
        self.fragments = 0
        self.max_ip_len = 0
        self.tcp_resets = 0
        self.reset_frames: list[int] = []
        self.flag_counts: dict[int, int] = {}
        self.flag_frames: dict[int, list[int]] = {}
        self.frame_flags: dict[int, int] = {}
        # (addrs, ports) -> (conversation, direction, own state, peer state, flow record)
        self.tcp_convs: dict[
            tuple[bytes, int], tuple[list[Any], int, list[int], list[int], list[Any]]
        ] = {}
        self.flows: list[list[Any]] = []
        self.other_flows: dict[tuple[int, bytes, int], tuple[list[Any], int]] = {}
        self.dns = DnsStats()
        self.icmp = IcmpStats()
        self.app = AppStats()
        self.ts_backwards = 0
        self.reasm = Reassembler()
        # flows whose receiver's ACKs are being read for D-SACKs (facts.watch), until run() ends
        self.watched: list[list[Any]] = []
        # parallel analysis (parallel.py): this analyzer handles share ``share`` of ``shares``
        self.share = 0
        self.shares = 1
        # when the reader drops other shares' packets (share_reader.py) it puts each record's
        # frame number where the link type goes, and the link type (one per pcap) is this
        self.frames_given_linktype = 0

    # ------------------------------------------------------------------ helpers
    def _new_tcp_conv(self, key: tuple[bytes, int], addrs: bytes, alen: int, sport: int,
                      dport: int, ts: int, frame: int
                      ) -> tuple[list[Any], int, list[int], list[int], list[Any]]:
        flow = new_flow(6, addrs, sport, dport, ts, frame)
        self.flows.append(flow)
        # [dir 0, dir 1, handshake RTT, SYN time, flow, 1 + direction of the SYN-ACK (0: none)]
        dir0 = T.new_direction()
        dir1 = T.new_direction()
        conv: list[Any] = [dir0, dir1, 0, 0, flow, 0]
        hit = (conv, 0, dir0, dir1, flow)
        self.tcp_convs[key] = hit
        rkey = (addrs[alen:] + addrs[:alen], (dport << 16) | sport)
        self.tcp_convs[rkey] = (conv, 1, dir1, dir0, flow)
        return hit

    def _other_flow(self, proto: int, addrs: bytes, alen: int, sport: int, dport: int,
                    ts: int, frame: int) -> tuple[list[Any], int]:
        key = (proto, addrs, (sport << 16) | dport)
        hit = self.other_flows.get(key)
        if hit is None:
            flow = new_flow(proto, addrs, sport, dport, ts, frame)
            self.flows.append(flow)
            hit = (flow, 0)
            self.other_flows[key] = hit
            self.other_flows[(proto, addrs[alen:] + addrs[:alen], (dport << 16) | sport)] = (
                flow,
                1,
            )
        return hit

    def _note_flags(self, ta: int, frame: int, flow: list[Any], d: int, seglen: int, th: int,
                    seq: int, ts: int, ipid: int, fwd: list[int], rev: list[int], rtt: int
                    ) -> None:
        self.frame_flags[frame] = ta
        facts = facts_of(flow, F_DIAG)
        if note_flags(facts, ta, d, seglen, th, seq, ts, frame) and resent(
                facts, flow, d, ta, seq, seglen, ipid, ts, frame, fwd[1], fwd[2], rtt,
                fwd[10], rev[9]) \
                and watch(facts, flow, d):
            self.watched.append(flow)
        bits = ta
        if bits & (T.FAST_RETRANSMISSION | T.SPURIOUS_RETRANSMISSION):
            bits |= T.RETRANSMISSION
        counts = flow[F_TA]
        if counts is None:
            counts = flow[F_TA] = {}
        for bit, name in T.FLAG_NAMES:
            if bits & bit:
                self.flag_counts[bit] = self.flag_counts.get(bit, 0) + 1
                frames = self.flag_frames.setdefault(bit, [])
                if len(frames) < EVIDENCE_PER_FLAG:
                    frames.append(frame)
                counts[name] = counts.get(name, 0) + 1
        ev = flow[F_EVIDENCE]
        if ev is None:
            ev = flow[F_EVIDENCE] = []
        if len(ev) < EVIDENCE_PER_FLOW:
            ev.append(frame)

    def _new_event(self, flow: list[Any], d: int, ev: int, seen: int, th: int, ack: int,
                   buf: bytes, l3: int, l4: int, hlen: int, end: int, alen: int, ipid: int,
                   frame: int, ts: int) -> None:
        """A segment with a history event not seen before in its direction (rare), or from the
        receiver of re-sent data while its ACKs are read for D-SACKs (facts.watch)."""
        facts = flow[F_DIAG]
        rs = None if facts is None else facts.rs
        if rs is not None and rs.watching[d]:
            masked = rs.masked[d]
            peer_segment(facts, flow, d, th, ack, buf, l4 + 20, min(l4 + hlen, end))
            ev &= ~(seen | masked)
            if not ev:
                return
        note_events(flow, d, ev)
        if rs is not None and rs.watching[d]:  # still read: keep its bits taken away
            rs.masked[d] |= flow[F_SEEN0 + d] & WATCH
            flow[F_SEEN0 + d] &= ~WATCH
        # TTL and IP ID read here only (l3 < 0: a reassembled datagram)
        if l3 < 0:
            ttl = ipid = -1
        elif alen == 4:
            ttl = buf[l3 + 8]
        else:
            ttl = buf[l3 + 7]
        note_event(flow, F_DIAG, d, bool(ev & S_RST), ttl, ipid,
                   flow[6] if d else flow[4], frame, ts)
        if ev & S_SYNACK and not flow[18]:
            flow[18] = ts
        if ev & S_RST:
            evl = flow[20]
            if evl is None:
                evl = flow[20] = []
            if len(evl) < EVIDENCE_PER_FLOW:
                evl.append(frame)

    # ------------------------------------------------------------------ main loop
    def run(self, records: Iterator[Record]) -> None:  # noqa: C901 - the hot loop, kept flat
        """Consume every record; per-packet state only, nothing kept per packet.

        List indexes are literals (flows.F_*, tcp_analysis state, C_*): global lookups
        cost measurable time at a million packets.
        """
        tcp_convs = self.tcp_convs
        analyze = T.analyze
        tcphdr = _TCPHDR
        u16 = _U16
        u32 = _U32
        udphdr = _UDPHDR
        ipv4hdr = _IPV4HDR
        eth_ipv4hdr = _ETH_IPV4HDR
        dns = self.dns
        icmp = self.icmp
        app = self.app
        other_flow = self._other_flow
        frame = self.packets
        nbytes = 0
        truncated = 0
        oversized = 0
        first_ts = self.first_ts
        last_ts = self.last_ts
        v4 = v6 = 0
        resets = 0
        me, nsh = self.share, self.shares
        fast_lt = FAST_LINKTYPES
        owner = share_of
        given_lt = self.frames_given_linktype
        sharing = nsh > 1
        split_here = sharing and not given_lt  # else the reader dropped others' packets
        dns_ports = DNS_PORTS
        for buf, off, caplen, wirelen, ts, linktype in records:
            end = off + caplen
            if given_lt:  # the reader counted the capture's totals (share_reader.py)
                frame = linktype
                linktype = given_lt
            else:
                frame += 1
                nbytes += wirelen
                if caplen < wirelen:
                    truncated += 1
                if ts < last_ts:
                    self.ts_backwards += 1
                else:
                    last_ts = ts
                if frame == 1:
                    first_ts = ts
            # ---------------- link layer
            pre = False  # True: the IPv4 header was read with the link header
            if linktype == 1:
                if caplen >= 34:
                    et, vihl, iplen, ipid, fragw, proto, addrs = eth_ipv4hdr(buf, off)
                    pre = et == 0x0800
                else:
                    et = u16(buf, off + 12)[0] if caplen >= 14 else 0
                l3 = off + 14
                if et != 0x0800:
                    while et in (0x8100, 0x88A8, 0x9100) and l3 + 4 <= end:
                        et = u16(buf, l3 + 2)[0]
                        l3 += 4
            elif linktype == 113:
                et = u16(buf, off + 14)[0] if caplen >= 16 else 0
                l3 = off + 16
            elif linktype == 276:
                et = u16(buf, off)[0] if caplen >= 20 else 0
                l3 = off + 20
            elif linktype in (101, 12, 14, 228, 229):
                l3 = off
                ver = buf[off] >> 4 if caplen else 0
                et = 0x0800 if ver == 4 else 0x86DD if ver == 6 else 0
            elif linktype in (0, 108):
                l3 = off + 4
                if caplen < 4:
                    et = 0
                else:
                    fam = buf[off] | buf[off + 3]
                    et = 0x0800 if fam == 2 else 0x86DD if fam in (10, 24, 28, 30) else 0
            else:
                if me:  # parallel: exotic link types are all share 0's (see parallel.py)
                    continue
                l3, et = known_l3(linktype, buf, off, end)  # PPP, C-HDLC, 802.11, radiotap
                if l3 == -2:
                    l3 = fallback_l3_offset(linktype, buf[off:end])
                    if l3 < 0:
                        self.undecodable_packets += 1
                        continue
                    ver = buf[off + l3] >> 4
                    l3 += off
                    et = 0x0800 if ver == 4 else 0x86DD if ver == 6 else 0
                elif l3 < 0:
                    self.non_ip_packets += 1
                    continue
            if split_here and linktype in fast_lt and owner(buf, l3, end, et, nsh) != me:
                continue  # parallel, and the reader could not split (pcapng): split.py
            # ---------------- network layer (again for each tunnel layer: see tunnels.py)
            while True:
                wire_end = l3 - off  # bytes of link header, for wire-length arithmetic
                if et == 0x0800:
                    if pre:
                        pre = False
                    else:
                        if l3 + 20 > end:
                            self.undecodable_packets += 1
                            break
                        vihl, iplen, ipid, fragw, proto, addrs = ipv4hdr(buf, l3)
                    v4 += 1
                    ihl = (vihl & 0x0F) * 4
                    avail = wirelen - wire_end
                    if iplen == 0:
                        self.ip_len_zero += 1
                        iplen = avail
                    elif iplen > avail:
                        iplen = avail
                    if iplen > 1500:
                        oversized += 1
                        if iplen > self.max_ip_len:
                            self.max_ip_len = iplen
                    alen = 4
                    l4 = l3 + ihl
                    l4len = iplen - ihl
                    if ihl < 20:
                        self.undecodable_packets += 1
                        break
                    if fragw & 0x3FFF:  # a fragment: analysed once reassembled, as tshark
                        self.fragments += 1
                        got = self.reasm.add((addrs, proto, ipid),
                                             (fragw & 0x1FFF) << 3, fragw & 0x2000, buf, l4,
                                             min(end, l3 + iplen), l4len)
                        if got is None:
                            other_flow(proto, addrs, 4, 0, 0, ts, frame)
                            break
                        buf, end, l4len = got
                        l4 = 0
                        l3 = -1  # the header is not in the reassembled buffer
                elif et == 0x86DD:
                    if l3 + 40 > end:
                        self.undecodable_packets += 1
                        break
                    v6 += 1
                    plen = u16(buf, l3 + 4)[0]
                    avail = wirelen - wire_end - 40
                    if plen == 0 or plen > avail:
                        plen = avail
                    if plen + 40 > 1500:
                        oversized += 1
                        if plen + 40 > self.max_ip_len:
                            self.max_ip_len = plen + 40
                    proto = buf[l3 + 6]
                    addrs = buf[l3 + 8 : l3 + 40]
                    alen = 16
                    ipid = -1
                    l4 = l3 + 40
                    l4len = plen
                    frag = 0  # 1: a fragment of a datagram not complete yet
                    while proto in _IPV6_EXT or proto == 44:
                        if l4 + 8 > end:
                            break
                        if proto == 44:  # analysed once reassembled, as tshark
                            fo = u16(buf, l4 + 2)[0]
                            if fo & 0xFFF9:
                                self.fragments += 1
                            proto = buf[l4]
                            got = self.reasm.add((addrs, proto, u32(buf, l4 + 4)[0]), fo & 0xFFF8,
                                                 fo & 1, buf, l4 + 8, min(end, l4 + l4len),
                                                 l4len - 8)
                            if got is None:
                                frag = 1
                                break
                            buf, end, l4len = got
                            l4 = 0
                            l3 = -1  # the header is not in the reassembled buffer
                            continue
                        if proto == 51:
                            hl = (buf[l4 + 1] + 2) * 4
                        else:
                            hl = (buf[l4 + 1] + 1) * 8
                        proto = buf[l4]
                        l4 += hl
                        l4len -= hl
                    if frag:
                        other_flow(proto, addrs, 16, 0, 0, ts, frame)
                        break
                else:
                    l3, et = inner_by_ethertype(buf, l3, end, et)  # MPLS, PPPoE
                    if l3 >= 0:
                        continue
                    self.non_ip_packets += 1
                    break
                # ---------------- transport layer
                if proto == 6:
                    if l4 + 20 > end:
                        self.undecodable_packets += 1
                        break
                    sport, dport, seq, ack, doff, th, win = tcphdr(buf, l4)
                    hlen = (doff >> 4) * 4
                    seglen = l4len - hlen
                    if th & 0x04:
                        resets += 1
                        if len(self.reset_frames) < EVIDENCE_PER_FLAG:
                            self.reset_frames.append(frame)
                    if hlen < 20 or seglen < 0:
                        self.undecodable_packets += 1
                        break
                    key = (addrs, (sport << 16) | dport)
                    hit = tcp_convs.get(key)
                    if hit is None:
                        hit = self._new_tcp_conv(key, addrs, alen, sport, dport, ts, frame)
                    conv, d, fwd, rev, flow = hit
                    if th & 0x12 == 0x02:
                        if fwd[0] and seq != fwd[10]:
                            # A new SYN with another ISN on the same ports: a new conversation.
                            conv, d, fwd, rev, flow = self._new_tcp_conv(
                                key, addrs, alen, sport, dport, ts, frame
                            )
                        conv[3] = ts
                    # the out-of-order horizon as it stood before this segment: tshark sets the
                    # iRTT after analysing the segment that completes it
                    rtt = conv[2]
                    if th & 0x02:
                        ws = -1
                        if hlen > 20 and l4 + hlen <= end:
                            ws = window_scale(buf, l4 + 20, l4 + hlen)
                        if ws >= 0:
                            if fwd[7] != -2:  # -2: the peer's SYN had no scaling, so none applies
                                # + 16: applies, but see below for segments without ACK
                                fwd[7] = ws + 16
                        elif fwd[7] == -1 and l4 + hlen <= end:
                            fwd[7] = -2
                            rev[7] = -2
                        # (options cut off by the snap length: the shift stays unknown, as tshark)
                        if th & 0x10 and conv[3]:
                            conv[5] = d + 1
                        if th & 0x10 and fwd[7] > 0 and rev[7] >= 0:
                            # Both shifts known by the SYN-ACK: tshark scales its window already.
                            win <<= fwd[7] & 15
                    else:
                        sc = fwd[7]
                        if sc > 0:
                            if sc < 16:
                                win <<= sc
                            else:
                                # Until this side sends a segment with ACK (and without SYN),
                                # tshark 4.0 checks the peer's window_full against the unscaled
                                # window of a segment without ACK (measured); 32 + shift marks it.
                                sc &= 15
                                fwd[7] = sc if th & 0x10 else sc + 32
                                win <<= sc
                        if th & 0x10 and conv[3] and not (conv[2] and flow[19]):
                            if not conv[2]:
                                # tshark's iRTT (the out-of-order horizon): the last SYN to the
                                # first segment with ACK and without SYN, from either side, whether
                                # or not a SYN-ACK was seen.
                                # a negative one (timestamps going backwards) has no limit
                                conv[2] = ts - conv[3] if ts >= conv[3] else 1 << 62
                            if not flow[19] and conv[5] and conv[5] != d + 1:
                                # handshake RTT for the report: SYN, SYN-ACK, then the ACK of it
                                flow[19] = ts
                                flow[17] = conv[3]
                    ta = analyze(fwd, rev, seq, ack, seglen, th, win, ts, rtt or 3_000_000)
                    if ta and l4 + hlen <= end:
                        # tshark shows no analysis for a segment whose TCP options were cut off by
                        # the snap length, although the segment still updates the state
                        self._note_flags(ta, frame, flow, d, seglen, th, seq, ts, ipid, fwd,
                                         rev, conv[2])
                    # flow bookkeeping
                    if d:
                        flow[6] += 1
                        flow[7] += wirelen
                        flow[9] += seglen
                        seen = flow[14]
                    else:
                        flow[4] += 1
                        flow[5] += wirelen
                        flow[8] += seglen
                        seen = flow[13]
                    flow[11] = ts
                    flow[21] = frame
                    if th & 0x07:
                        ev = (
                            (S_SYNACK if th & 0x10 else S_SYN) if th & 0x02 else 0
                        ) | (S_FIN if th & 0x01 else 0) | (S_RST if th & 0x04 else 0)
                        if seglen:
                            ev |= S_DATA
                    else:
                        ev = S_DATA if seglen else S_ACK if th == 0x10 else 0
                    if ev & ~seen:
                        self._new_event(flow, d, ev, seen, th, ack, buf, l3, l4, hlen, end,
                                        alen, ipid, frame, ts)
                    if seglen:
                        flow[22 + d] += 1  # flows.F_DSEG0 + d
                        flow[31 + d] = ipid  # flows.F_LASTID0 + d
                        if seglen > flow[33 + d]:  # flows.F_MAXLEN0 + d
                            flow[33 + d] = seglen
                            flow[35 + d] = seq  # flows.F_MAXSEQ0 + d
                        p = l4 + hlen
                        if p < end:
                            c0 = buf[p]
                            if c0 == 0x15 or c0 == 0x48:
                                app.tcp_payload(buf, p, end, frame, addrs, sport, dport, c0)
                            elif sport in dns_ports or dport in dns_ports:
                                dns.tcp_payload(buf, p, end, ts, frame, addrs, alen, sport, dport)
                elif proto == 17:
                    if l4 + 8 > end:
                        self.undecodable_packets += 1
                        break
                    sport, dport, _ulen = udphdr(buf, l4)
                    flow, d = other_flow(17, addrs, alen, sport, dport, ts, frame)
                    if d:
                        flow[6] += 1
                        flow[7] += wirelen
                        flow[9] += l4len - 8
                    else:
                        flow[4] += 1
                        flow[5] += wirelen
                        flow[8] += l4len - 8
                    flow[11] = ts
                    flow[21] = frame
                    if sport in dns_ports or dport in dns_ports:
                        dns.message(buf, l4 + 8, end, ts, frame, addrs, alen, sport, dport)
                    elif dport == 4789 or sport == 4789 or dport == 6081 or sport == 6081:
                        if dport == 4789 or sport == 4789:
                            l3, et = vxlan_inner(buf, l4 + 8, end)
                        else:
                            l3, et = geneve_inner(buf, l4 + 8, end)
                        if l3 >= 0:
                            v4, v6 = (v4 - 1, v6) if alen == 4 else (v4, v6 - 1)  # count once
                            continue
                else:
                    if proto == 1 or proto == 58:
                        if l4 + 4 <= end:
                            icmp.packet(buf, l4, end, proto, frame, addrs, alen)
                        else:
                            self.undecodable_packets += 1
                    flow, d = other_flow(proto, addrs, alen, 0, 0, ts, frame)
                    if d:
                        flow[6] += 1
                        flow[7] += wirelen
                    else:
                        flow[4] += 1
                        flow[5] += wirelen
                    flow[11] = ts
                    flow[21] = frame
                    if proto == 4 or proto == 41:  # IP in IP, IPv6 in IPv4 (6in4)
                        l3, et = l4, (0x0800 if proto == 4 else 0x86DD)
                        if l3 < end:
                            v4, v6 = (v4 - 1, v6) if alen == 4 else (v4, v6 - 1)
                            continue
                    elif proto == 47:
                        l3, et = gre_inner(buf, l4, end)
                        if l3 >= 0:
                            v4, v6 = (v4 - 1, v6) if alen == 4 else (v4, v6 - 1)
                            continue
                break
        for flow in self.watched:
            finish(flow[F_DIAG], flow)
        self.watched = []
        self.packets = frame
        self.bytes += nbytes
        self.truncated_packets += truncated
        self.oversized_packets += oversized
        self.first_ts = first_ts
        self.last_ts = last_ts
        self.ipv4_packets += v4
        self.ipv6_packets += v6
        self.tcp_resets += resets

