"""Packet builders (Ethernet, IPv4/IPv6, TCP, UDP, ICMP, DNS) for the lab's captures and tests.

Built with ``struct`` so that what a capture holds is known by construction: the lab writes the
scenario's traffic with them, and the forensics tests write their synthetic captures with the
same functions (one copy). Checksums are left zero unless asked for (``checksummed``), as a
capture with checksum offload shows them; the forensics engine does not verify them.
"""

from __future__ import annotations

import struct

#: A fixed Ethernet header (locally administered MACs); the EtherType is appended.
ETH_HDR = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02"

TCP_FIN, TCP_SYN, TCP_RST, TCP_PSH, TCP_ACK = 0x01, 0x02, 0x04, 0x08, 0x10
PROTO_ICMP, PROTO_TCP, PROTO_UDP = 1, 6, 17


def ip4(text: str) -> bytes:
    """Dotted quad → 4 bytes."""
    return bytes(int(x) for x in text.split("."))


def tcp_segment(sport: int, dport: int, seq: int, ack: int, flags: int, window: int,
                payload: bytes = b"", options: bytes = b"") -> bytes:
    """A TCP header (options padded to 4 bytes with NOPs) and its payload, checksum zero."""
    if len(options) % 4:
        options += b"\x01" * (4 - len(options) % 4)
    doff = (20 + len(options)) // 4
    return struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                       doff << 4, flags, window, 0, 0) + options + payload


def udp_datagram(sport: int, dport: int, payload: bytes) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def icmp_message(icmp_type: int, code: int, rest: bytes = b"\x00\x00\x00\x00",
                 payload: bytes = b"") -> bytes:
    """An ICMP message with its checksum (``rest`` = the 4 type-specific header bytes)."""
    body = struct.pack("!BBH", icmp_type, code, 0) + rest + payload
    return body[:2] + struct.pack("!H", internet_checksum(body)) + body[4:]


def ipv4_packet(src: bytes, dst: bytes, proto: int, l4: bytes, ident: int = 0, ttl: int = 64,
                total_len: int | None = None) -> bytes:
    """An IPv4 header (DF set) and ``l4``; ``total_len`` may lie (for truncation tests)."""
    tl = 20 + len(l4) if total_len is None else total_len
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, tl, ident & 0xFFFF, 0x4000, ttl, proto, 0,
                       src, dst) + l4


def ipv6_packet(src: bytes, dst: bytes, proto: int, l4: bytes, hlim: int = 64) -> bytes:
    return struct.pack("!IHBB16s16s", 0x60000000, len(l4), proto, hlim, src, dst) + l4


def ethernet(ip: bytes, v6: bool = False, vlan: int | None = None) -> bytes:
    et = b"\x86\xdd" if v6 else b"\x08\x00"
    if vlan is not None:
        return ETH_HDR + b"\x81\x00" + struct.pack("!H", vlan) + et + ip
    return ETH_HDR + et + ip


def internet_checksum(data: bytes) -> int:
    """RFC 1071 one's-complement sum."""
    if len(data) % 2:
        data += b"\x00"
    total = int(sum(struct.unpack(f"!{len(data) // 2}H", data)))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def checksummed(packet: bytes) -> bytes:
    """An IPv4 packet (from :func:`ipv4_packet`) with its IP and TCP/UDP checksums filled in,
    so that tools which verify them (Wireshark with validation on) see a clean capture."""
    ihl = (packet[0] & 0x0F) * 4
    header = packet[:10] + b"\x00\x00" + packet[12:ihl]
    header = header[:10] + struct.pack("!H", internet_checksum(header)) + header[12:]
    proto, l4 = packet[9], packet[ihl:]
    offset = {PROTO_TCP: 16, PROTO_UDP: 6}.get(proto)
    if offset is None or len(l4) < offset + 2:
        return header + l4
    pseudo = packet[12:20] + struct.pack("!BBH", 0, proto, len(l4))
    zeroed = l4[:offset] + b"\x00\x00" + l4[offset + 2:]
    value = internet_checksum(pseudo + zeroed) or (0xFFFF if proto == PROTO_UDP else 0)
    return header + zeroed[:offset] + struct.pack("!H", value) + zeroed[offset + 2:]


def mss_option(mss: int) -> bytes:
    """The TCP MSS option (kind 2)."""
    return struct.pack("!BBH", 2, 4, mss)


def with_ttl(packet: bytes, ttl: int) -> bytes:
    """The IPv4 ``packet`` as a router that decremented it shows it: another TTL, the header
    checksum recomputed when it was filled in (the payload's checksums do not cover the TTL)."""
    if packet[8] == ttl:
        return packet
    ihl = (packet[0] & 0x0F) * 4
    header = packet[:8] + bytes((ttl,)) + packet[9:10] + b"\x00\x00" + packet[12:ihl]
    if packet[10:12] != b"\x00\x00":
        header = header[:10] + struct.pack("!H", internet_checksum(header)) + header[12:]
    return header + packet[ihl:]


DNS_A, DNS_CNAME, DNS_AAAA = 1, 5, 28
DNS_RCODES = {"NOERROR": 0, "FORMERR": 1, "SERVFAIL": 2, "NXDOMAIN": 3, "REFUSED": 5}


def dns_name(name: str) -> bytes:
    """A domain name in DNS wire form (length-prefixed labels, no compression)."""
    labels = [part.encode("ascii") for part in name.rstrip(".").split(".") if part]
    return b"".join(bytes((len(label),)) + label for label in labels) + b"\x00"


def dns_query(txid: int, name: str, qtype: int = DNS_A) -> bytes:
    """A recursive query (RD set) for one name, as a stub resolver sends it."""
    return (struct.pack("!HHHHHH", txid & 0xFFFF, 0x0100, 1, 0, 0, 0)
            + dns_name(name) + struct.pack("!HH", qtype, 1))


def dns_response(txid: int, name: str, qtype: int, rcode: str,
                 answers: list[tuple[str, int, bytes]], ttl: int = 300) -> bytes:
    """The answer to :func:`dns_query`: QR, RD and RA set, the question echoed, then each
    ``(owner name, type, rdata)`` record (the owner compressed when it is the question's)."""
    flags = 0x8180 | DNS_RCODES[rcode]
    out = [struct.pack("!HHHHHH", txid & 0xFFFF, flags, 1, len(answers), 0, 0),
           dns_name(name), struct.pack("!HH", qtype, 1)]
    for owner, rtype, rdata in answers:
        same = owner.rstrip(".").lower() == name.rstrip(".").lower()
        out.append(b"\xc0\x0c" if same else dns_name(owner))
        out.append(struct.pack("!HHIH", rtype, 1, ttl, len(rdata)) + rdata)
    return b"".join(out)


def with_addresses(packet: bytes, src: bytes, sport: int | None, dst: bytes,
                   dport: int | None) -> bytes:
    """The IPv4 ``packet`` after a NAT rewrote its addresses (and TCP/UDP ports): what the far
    side of a load balancer or an SNAT sees. Checksums are recomputed when they were set."""
    ihl = (packet[0] & 0x0F) * 4
    out = bytearray(packet)
    out[12:16], out[16:20] = src, dst
    if packet[9] in (PROTO_TCP, PROTO_UDP) and len(packet) >= ihl + 4:
        if sport is not None:
            out[ihl:ihl + 2] = struct.pack("!H", sport)
        if dport is not None:
            out[ihl + 2:ihl + 4] = struct.pack("!H", dport)
    return checksummed(bytes(out)) if packet[10:12] != b"\x00\x00" else bytes(out)
