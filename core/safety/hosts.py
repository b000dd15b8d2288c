"""Recognise addresses however they are spelled.

Resolvers and HTTP clients accept IPv4 in inet_aton forms (2852039166, 0xa9fea9fe, 0251.0376...,
169.254.43518) and IPv6 forms that embed IPv4 (::ffff:a9fe:a9fe, 64:ff9b::, 2002::/16). The gate
normalises every candidate to an `ipaddress` object before comparing, never the text.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from typing import Final
from urllib.parse import unquote

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

IMDS_V4: Final = ipaddress.IPv4Address("169.254.169.254")
IMDS_V6: Final = ipaddress.IPv6Address("fd00:ec2::254")
WIRESERVER_V4: Final = ipaddress.IPv4Address("168.63.129.16")
_LINK_LOCAL_V4: Final = ipaddress.IPv4Network("169.254.0.0/16")
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")
_COMPAT: Final = ipaddress.IPv6Network("::/96")
_TRANSLATED: Final = ipaddress.IPv6Network("::ffff:0:0:0/96")

#: Host names that are, or commonly alias, a metadata service.
METADATA_NAMES: Final = frozenset({
    "metadata.google.internal", "metadata.goog", "metadata.azure.internal",
    "metadata.azure.com", "instance-data.ec2.internal",
})
#: Spellings of the IMDS address inside DNS names (nip.io / sslip.io style services).
_IMDS_SUBSTRINGS: Final = ("169.254.169.254", "169-254-169-254", "a9fea9fe", "a9fe:a9fe")
LOOPBACK_NAMES: Final = frozenset({"localhost", "localhost.localdomain", "ip6-localhost",
                                   "ip6-loopback", "localhost4", "localhost6",
                                   "localhost4.localdomain4", "localhost6.localdomain6",
                                   "ip6-localnet", "loopback"})

_SPLIT_RE = re.compile(r"[/@=,?#\[\]\s;&|'\"()<>{}\\]+")
_V4_PART_RE = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")
_DIGIT_RE = re.compile(r"[0-9]")


def parse_ipv4_loose(text: str) -> ipaddress.IPv4Address | None:
    """Parse like inet_aton: 1-4 parts, each decimal, 0-octal or 0x-hex."""
    text = text.strip().lower().rstrip(".")
    if not text or len(text) > 64:
        return None
    parts = text.split(".")
    if len(parts) > 4:
        return None
    values: list[int] = []
    for part in parts:
        if not _V4_PART_RE.match(part):
            return None
        try:
            if part.startswith("0x"):
                values.append(int(part[2:] or "0", 16))
            elif len(part) > 1 and part.startswith("0"):
                values.append(int(part, 8))
            else:
                values.append(int(part, 10))
        except ValueError:
            return None
    head, last = values[:-1], values[-1]
    if any(v > 255 for v in head) or last >= 1 << (8 * (4 - len(head))):
        return None
    number = 0
    for value in head:
        number = (number << 8) | value
    number = (number << (8 * (4 - len(head)))) | last
    return ipaddress.IPv4Address(number)


def parse_ip_loose(text: str) -> IPAddress | None:
    """Parse an IPv4 (loose) or IPv6 literal (brackets and zone ids allowed)."""
    text = text.strip().strip("[]")
    if "%" in text:
        text = text.split("%", 1)[0]
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text)
        except ValueError:
            return None
    return parse_ipv4_loose(text)


def embedded_ipv4(addr: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4)."""
    if isinstance(addr, ipaddress.IPv4Address):
        return addr
    if addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    if addr.sixtofour is not None:
        return addr.sixtofour
    if addr in _NAT64 or addr in _TRANSLATED or (addr in _COMPAT and int(addr) > 1):
        return ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    return None


def candidate_hosts(word: str) -> set[str]:
    """Every substring of a word that might be used as a host by some program."""
    decoded = unquote(word).lower()
    found: set[str] = set()
    for text in {word.lower(), decoded}:
        for piece in _SPLIT_RE.split(text):
            if not piece:
                continue
            pieces = [piece]
            if piece.startswith("-"):
                # an option with its value attached: -x2852039166, --proxy169.254.169.254
                bare = piece.lstrip("-")
                pieces += [p for p in (bare, bare[1:]) if p]
            for item in pieces:
                found.add(item)
                if ":" in item:
                    found.update(p for p in item.split(":") if p)
                    # scheme://host:port and v6 with a :port suffix
                    head = item.rsplit(":", 1)[0]
                    if head:
                        found.add(head)
    return found


def is_metadata_address(addr: IPAddress) -> bool:
    v4 = embedded_ipv4(addr)
    return addr == IMDS_V6 or v4 == IMDS_V4


def is_wireserver_address(addr: IPAddress) -> bool:
    return embedded_ipv4(addr) == WIRESERVER_V4


def is_local_address(addr: IPAddress) -> bool:
    """Loopback, link-local or unspecified: services on the bot's own host."""
    v4 = embedded_ipv4(addr)
    if v4 is not None:
        return v4.is_loopback or v4.is_unspecified or v4 in _LINK_LOCAL_V4
    return addr.is_loopback or addr.is_unspecified or addr.is_link_local


def word_addresses(word: str) -> list[IPAddress]:
    """All addresses that a word spells somewhere inside it."""
    out: list[IPAddress] = []
    for cand in candidate_hosts(word):
        addr = parse_ip_loose(cand)
        if addr is not None:
            out.append(addr)
    return out


@lru_cache(maxsize=8192)
def word_hits_metadata(word: str) -> bool:
    """Does the word spell the metadata service (any address form or a known alias)?

    Cached: a hostile 1 MB command repeats the same words, and Tier 0 checks every one.
    """
    if not _DIGIT_RE.search(word):
        # every address spelling has a digit; only the names remain to check
        low = word.lower()
        return any(name in low for name in METADATA_NAMES)
    if any(is_metadata_address(a) for a in word_addresses(word)):
        return True
    cands = candidate_hosts(word)
    if any(c.rstrip(".") in METADATA_NAMES for c in cands):
        return True
    return any(s in c for c in cands for s in _IMDS_SUBSTRINGS)


@lru_cache(maxsize=8192)
def word_hits_wireserver(word: str) -> bool:
    if not _DIGIT_RE.search(word):
        return False
    if any(is_wireserver_address(a) for a in word_addresses(word)):
        return True
    return any(s in c for c in candidate_hosts(word)
               for s in ("168.63.129.16", "168-63-129-16", "a83f8110", "a83f:8110"))


#: Wildcard DNS services that resolve names like 127.0.0.1.nip.io to the embedded address.
_WILDCARD_DNS: Final = ("nip.io", "sslip.io", "xip.io", "traefik.me", "localtest.me", "lvh.me",
                        "vcap.me", "lacolhost.com", "localhost.run", "1u.ms", "rbndr.us",
                        "localho.st", "localhost.direct", "local.gd", "lcl.host", "fuf.me")


def word_hits_local(word: str) -> bool:
    if any(is_local_address(a) for a in word_addresses(word)):
        return True
    for cand in candidate_hosts(word):
        name = cand.rstrip(".")
        if (name in LOOPBACK_NAMES or name.endswith((".localhost", ".localdomain"))
                or name.startswith(("localhost", "ip6-local"))):
            return True
        if any(name == d or name.endswith("." + d) for d in _WILDCARD_DNS):
            return True
        labels = name.split(".")
        if len(labels) > 4:
            head = parse_ipv4_loose(".".join(labels[:4]))
            if head is not None and is_local_address(head):
                return True
    return False
