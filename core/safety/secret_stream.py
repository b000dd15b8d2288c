"""tcpdump payloads read as the byte stream they show, and secrets removed wherever they recur.

- `-X`/`-x` hex dumps print 16 bytes a line, so a bearer token or a password is cut across
  lines (and the ASCII column shows spaces as dots). Each packet's bytes are rebuilt from the
  hex column, redacted as text, and every byte of a secret found there (or learned elsewhere
  in the output) is masked in both columns: hex digits become `**`, characters `*`.
- `-A` prints the payload itself; Redis's RESP protocol puts the password alone on the line
  after its length (`AUTH` / `$17` / `password`): the arguments of AUTH, HELLO ... AUTH and
  CONFIG SET requirepass|masterauth are removed.
- Echo: a value any pass judged secret is removed wherever else it occurs in the same output
  (the decoder line names it, the payload repeats it).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Final

from core.safety.secret_pairs import ECHO_MIN, learn, mark

_HEX_LINE_RE: Final = re.compile(
    r"^(?P<lead>\t0x(?P<off>[0-9a-f]{4,8}):  )(?P<hex>(?:[0-9a-f]{2,4} ?){1,8})"
    r"(?P<gap> *)(?P<ascii>.{0,16})$")
_RESP_LEN_RE: Final = re.compile(r"^\$[0-9]{1,4}\r?$")
_RESP_SECRET_VERBS: Final = frozenset({"auth", "auth2"})
_MAX_ECHO: Final = 256
_PAYLOAD_HEADER: Final = "00:00:00.000000 IP payload.0 > payload.0: bytes\n"


def _hex_packets(lines: list[str]) -> list[list[int]]:
    """Runs of consecutive hex-dump lines (indexes into `lines`), one run per packet."""
    packets: list[list[int]] = []
    current: list[int] = []
    for index, line in enumerate(lines):
        if line.startswith("\t0x") and _HEX_LINE_RE.match(line):
            current.append(index)
        elif current:
            packets.append(current)
            current = []
    if current:
        packets.append(current)
    return packets


def _packet_bytes(lines: list[str], rows: list[int]) -> tuple[bytes, list[tuple[int, int, int]]]:
    """The packet's bytes and, per byte, (row, column of its hex digits, ASCII column)."""
    data = bytearray()
    where: list[tuple[int, int, int]] = []
    for row in rows:
        found = _HEX_LINE_RE.match(lines[row])
        if found is None:
            continue
        column = found.start("hex")
        ascii_at = found.start("ascii") if found.group("ascii") else -1
        position = 0
        for group in found.group("hex").split(" "):
            for pair in range(0, len(group), 2):
                data.append(int(group[pair:pair + 2], 16))
                where.append((row, column + pair, ascii_at + position if ascii_at >= 0 else -1))
                position += 1
            column += len(group) + 1
    return bytes(data), where


def _payload_offset(data: bytes) -> int:
    """Where the TCP/UDP payload starts in a packet tcpdump dumped (IPv4/IPv6, Ethernet or not)."""
    for link in (0, 14):
        if len(data) <= link:
            break
        version = data[link] >> 4
        if version == 4:
            ip_len, proto = (data[link] & 0x0F) * 4, data[link + 9] if len(data) > link + 9 else 0
        elif version == 6:
            ip_len, proto = 40, data[link + 6] if len(data) > link + 6 else 0
        else:
            continue
        start = link + ip_len
        if proto == 6 and len(data) > start + 12:
            return min(len(data), start + (data[start + 12] >> 4) * 4)
        if proto == 17:
            return min(len(data), start + 8)
        return min(len(data), start)
    return 0


def _mask(lines: list[str], where: list[tuple[int, int, int]], start: int, end: int) -> None:
    for row, hex_at, ascii_at in where[start:end]:
        line = lines[row]
        tail = line[ascii_at + 1:] if ascii_at >= 0 else ""
        line = line[:hex_at] + "**" + line[hex_at + 2:]
        if 0 <= ascii_at < len(line):
            line = line[:ascii_at] + "*" + tail
        lines[row] = line


_MARK_RE: Final = re.compile(r"\[REDACTED:[a-z0-9_]{1,40}\]")


def _removed_spans(original: str, redacted: str) -> list[tuple[int, int]]:
    """Where in `original` the marks of `redacted` stand (the text between marks is kept).

    A secret longer than the echo limit (a 1.5 kB JWT cut over 100 dump lines) is not learned,
    so its span is found here, by laying the kept text back on the original, in order.
    """
    spans: list[tuple[int, int]] = []
    pieces = _MARK_RE.split(redacted)
    if len(pieces) < 2 or not original.startswith(pieces[0]):
        return spans
    at = len(pieces[0])
    for piece in pieces[1:]:
        if not piece:
            continue  # two marks in a row, or a mark at the end: resolved by the next piece
        found = original.find(piece, at + 1)
        if found == -1:
            return spans
        spans.append((at, found))
        at = found + len(piece)
    if not pieces[-1] and at < len(original):
        spans.append((at, len(original)))
    return spans


def redact_hex_dumps(text: str, counts: Counter[str], learned: dict[str, str],
                     inner: Callable[[str], tuple[str, int]]) -> str:
    """Mask secrets in `tcpdump -X/-x` packets, found in the bytes the dump shows."""
    if "\t0x0000:" not in text:
        return text
    lines = text.split("\n")
    changed = False
    for rows in _hex_packets(lines):
        data, where = _packet_bytes(lines, rows)
        stream = data[_payload_offset(data):].decode("latin-1")
        # learns the secrets in the payload (a header, a RESP argument ...); the header line
        # tells the decoder rules that this is tcpdump output
        redacted, found = inner(_PAYLOAD_HEADER + stream)
        if found and redacted.startswith(_PAYLOAD_HEADER):
            offset = len(data) - len(stream)
            for start, end in _removed_spans(stream, redacted[len(_PAYLOAD_HEADER):]):
                _mask(lines, where, offset + start, offset + end)
                changed = True
        for value in sorted(learned, key=len, reverse=True)[:_MAX_ECHO]:
            needle = value.encode("latin-1", errors="ignore")
            if len(needle) < ECHO_MIN:
                continue
            start = data.find(needle)
            while start != -1:
                _mask(lines, where, start, start + len(needle))
                counts[learned[value]] += 1
                changed = True
                start = data.find(needle, start + len(needle))
    return "\n".join(lines) if changed else text


def redact_resp(text: str, counts: Counter[str]) -> str:
    """Redis RESP as tcpdump -A prints it: the arguments after AUTH, alone on their lines."""
    if "$" not in text or "auth" not in text.lower():
        return text
    lines = text.split("\n")
    changed = False
    for index, line in enumerate(lines):
        verb = line.strip().lower()
        if verb not in _RESP_SECRET_VERBS and verb != "hello":
            continue
        if index == 0 or not _RESP_LEN_RE.match(lines[index - 1].strip()):
            continue
        args: list[int] = []
        probe = index + 1
        while probe + 1 < len(lines) and _RESP_LEN_RE.match(lines[probe].strip()) and len(
                args) < 6:
            args.append(probe + 1)
            probe += 2
        if verb == "hello":
            words = [lines[i].strip().lower() for i in args]
            if "auth" not in words:
                continue
            at = words.index("auth")
            args = args[at + 1:at + 3]
        secret_rows = args[-1:] if verb == "hello" or len(args) <= 2 else args[:1]
        for row in secret_rows:
            value = lines[row].rstrip("\r")
            if not value or "[REDACTED:" in value:
                continue
            learn(value, "decoder_secret")
            counts["decoder_secret"] += 1
            ending = lines[row][len(value):]
            lines[row] = mark("decoder_secret") + ending
            changed = True
    return "\n".join(lines) if changed else text


def redact_echoes(text: str, counts: Counter[str], learned: dict[str, str]) -> str:
    """Remove every other occurrence of a value already judged secret."""
    values = [v for v in list(learned)[:_MAX_ECHO] if len(v) >= ECHO_MIN and v in text]
    if not values:
        return text
    values.sort(key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(v) for v in values[:_MAX_ECHO]))

    def replace(match: re.Match[str]) -> str:
        kind = learned.get(match.group(0), "secret_value")
        counts[kind] += 1
        return mark(kind)
    return pattern.sub(replace, text)
